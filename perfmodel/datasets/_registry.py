"""The registry of upstream files (``datasets/registry.csv``) and how a file is resolved, fetched and verified.

A file is named by its *key* ``<owner>/<repo>/<path in repo>`` (the layout of a local mirror and of
``PERFMODEL_DATA``). Resolution order:

1. ``PERFMODEL_DATA`` set → ``$PERFMODEL_DATA/<key>`` (no network, ever);
2. otherwise the user cache (``$PERFMODEL_CACHE`` or pooch's OS cache ``perfmodel``) → ``<cache>/<key>``,
   downloaded with pooch from the pinned commit when missing.

The sha256 is checked on **every** load, whatever the source.
"""
from __future__ import annotations

import csv
import difflib
import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from perfmodel._errors import DataIntegrityError, DataNotAvailableError, NotADataFileError, UnknownNameError

__all__ = ["RegistryEntry", "registry_entries", "entry", "resolve", "read_bytes", "data_source", "data_root", "source_key", "cache_dir",
           "url_of", "DownloadError", "CONNECT_TIMEOUT_S"]

ENV_DATA = "PERFMODEL_DATA"
ENV_CACHE = "PERFMODEL_CACHE"

REPOS = {
    "CM": "cake-lab/CM-DARE",
    "TDL": "cake-lab/transient-deep-learning",
    "NS": "sitar-lab/NeuSight",
    "ST": "skypilot-org/spot-traces",
    "VD": "microsoft/vidur",
    "TT": "pytorch/torchtitan",
}

#: Folder of each repository that a short key (``CM:...``) is relative to.
_SHORT_ROOT = {"CM": "data", "TDL": "data", "NS": "scripts/asplos", "ST": "", "VD": "data", "TT": ""}


@dataclass(frozen=True)
class RegistryEntry:
    """One upstream file: where it lives upstream, its hash and licence."""

    path: str
    repo: str
    commit: str
    sha256: str
    size_bytes: int | None
    licence: str
    kind: str
    note: str

    @property
    def key(self) -> str:
        return f"{self.repo}/{self.path}"

    @property
    def url(self) -> str:
        """Raw download URL at the pinned commit; the path is percent-encoded (NeuSight's file names hold spaces)."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{quote(self.path, safe='/')}"


@lru_cache(maxsize=1)
def registry_entries() -> dict[str, RegistryEntry]:
    """All registry entries by key (read from the packaged ``registry.csv`` on first use)."""
    text = (resources.files("perfmodel._data") / "registry.csv").read_text(encoding="utf-8")
    out: dict[str, RegistryEntry] = {}
    for row in csv.DictReader(text.splitlines()):
        size = int(row["size_bytes"]) if row["size_bytes"] else None
        e = RegistryEntry(row["path"], row["repo"], row["commit"], row["sha256"], size, row["licence"], row["kind"], row["note"])
        out[e.key] = e
    return out


def _key(name: str) -> str:
    """Accept ``CM:processed_data/...`` / ``TDL:...`` / ``NS:label/...`` (the short form the dataset specs use) or a full key.

    ``CM:`` and ``TDL:`` are relative to the cake-lab repositories' ``data/``, ``NS:`` to NeuSight's ``scripts/asplos/``,
    ``ST:`` to the root of skypilot-org/spot-traces.
    """
    if ":" in name and name.split(":", 1)[0] in REPOS:
        prefix, rest = name.split(":", 1)
        return "/".join(p for p in (REPOS[prefix], _SHORT_ROOT[prefix], rest.strip("/")) if p)
    return name.strip("/")


def entry(name: str) -> RegistryEntry:
    """The registry entry of an upstream file.

    Parameters
    ----------
    name : str
        ``"CM:processed_data/checkpoint/ckpt.csv"``, ``"TDL:lifetime/lifetime.csv"``,
        ``"NS:label/Tesla_T4/bert_large-inf-512-8.json"`` or a full key
        ``"cake-lab/CM-DARE/data/processed_data/checkpoint/ckpt.csv"``.
    """
    key = _key(name)
    reg = registry_entries()
    if key not in reg:
        close = difflib.get_close_matches(key, list(reg), n=5, cutoff=0.6)
        hint = f" Closest registered files: {', '.join(close)}." if close else ""
        raise UnknownNameError(
            f"{name!r} is not an upstream file in perfmodel's registry ({len(reg)} files).{hint} "
            "List them with perfmodel.datasets.registry()."
        )
    return reg[key]


def cache_dir() -> Path:
    """Directory where downloaded upstream files are cached (``$PERFMODEL_CACHE`` or the OS cache)."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    import pooch

    return Path(pooch.os_cache("perfmodel"))


def _project_root() -> Path | None:
    """The folder holding ``pyproject.toml`` above the package in a source checkout (None when installed)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def data_root() -> Path | None:
    """The local mirror ``PERFMODEL_DATA`` points at, resolved to an absolute folder (None when unset).

    A relative value is taken relative to the current directory when it exists there, else relative to the project
    root of a source checkout (the README exports ``PERFMODEL_DATA=../shared/datasets`` from the repository root;
    a notebook kernel runs in ``notebooks/``, where that path does not resolve).

    Raises
    ------
    DataNotAvailableError
        The folder does not exist (the message lists the places tried).
    """
    local = os.environ.get(ENV_DATA)
    if not local:
        return None
    p = Path(local).expanduser()
    tried = [p] if p.is_absolute() else [Path.cwd() / p]
    root = _project_root()
    if not p.is_absolute() and root is not None:
        tried.append(root / p)
    for cand in tried:
        if cand.is_dir():
            return cand.resolve()
    places = " or ".join(str(t) for t in dict.fromkeys(tried))
    raise DataNotAvailableError(
        f"PERFMODEL_DATA={local!r} does not name an existing folder (tried {places}). Point it at the data mirror laid out "
        "as <owner>/<repo>/<path in repo>, preferably by an absolute path (e.g. export PERFMODEL_DATA=$PWD/../shared/datasets "
        "from the repository root), or unset it to download the files into the cache."
    )


def data_source() -> str:
    """Human-readable description of where upstream files are read from now."""
    local = os.environ.get(ENV_DATA)
    if local:
        return f"local mirror PERFMODEL_DATA={local}" + (f" ({data_root()})" if not Path(local).expanduser().is_absolute() else "")
    return f"cache {cache_dir()} (downloads from the pinned commits when missing)"


def source_key() -> tuple[str, str]:
    """Identity of the current data source (mirror folder or cache folder): the key of the per-process frame cache."""
    root = data_root()
    return ("mirror", str(root)) if root is not None else ("cache", str(cache_dir()))


def url_of(name: str) -> str:
    """Download URL of an upstream file at its pinned commit."""
    return entry(name).url


def _refuse_non_data(e: RegistryEntry) -> None:
    if e.kind == "html-page":
        raise NotADataFileError(
            f"{e.key} is not data: upstream it is {e.note}. There is nothing to load; "
            "use the measurements perfmodel lists with perfmodel.datasets.list_datasets()."
        )
    if e.kind == "empty":
        raise NotADataFileError(f"{e.key} is not data: it is {e.note}. There is nothing to load.")


#: Open recorders of the files read (path -> (size, mtime_ns)), filled by read_bytes for perfmodel.datasets._cache.
_READ_RECORDERS: list[dict] = []

#: Seconds to wait for a connection to the download server (a network that drops packets fails fast), and for data.
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0


class DownloadError(DataNotAvailableError):
    """A file is not cached and its download failed (network down, proxy, HTTP error).

    Attributes ``key`` (the file), ``group`` (its upstream dataset folder, ``<owner>/<repo>/data/<area>/<dataset>``:
    the files of one dataset fail together), ``url``, ``cause`` (one line: what the network said), ``network``
    (False when the server answered with the wrong content: pooch's hash check of the download failed).
    """

    def __init__(self, message: str, *, key: str, url: str, cause: str, network: bool = True):
        super().__init__(message)
        self.key, self.url, self.cause, self.network = key, url, cause, network
        self.group = "/".join(key.split("/")[:-1][:5])


def _downloader():
    """pooch's HTTP downloader with a short connect timeout (pooch's default waits 30 s per file)."""
    import pooch

    return pooch.HTTPDownloader(progressbar=False, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))


def _one_line(exc: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message`` shortened to ``limit`` characters (requests' errors span kilobytes)."""
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _remove_empty_dirs(created: list[Path]) -> None:
    """Remove the folders a failed download created (deepest first) when they are still empty."""
    for d in created:
        try:
            d.rmdir()
        except OSError:  # not empty (another file arrived) or already gone
            pass


def resolve(name: str) -> Path:
    """Local path of an upstream file, downloading it into the cache if needed (no hash check; see :func:`read_bytes`)."""
    e = entry(name)
    _refuse_non_data(e)
    root = data_root()
    if root is not None:
        p = root / e.key
        if not p.is_file():
            raise DataNotAvailableError(
                f"{e.key} is not in the local mirror: {p} does not exist. PERFMODEL_DATA={os.environ.get(ENV_DATA)!r} must point at a "
                "folder laid out as <owner>/<repo>/<path in repo> (e.g. the project's ../shared/datasets). Fix the variable, or unset "
                f"it to download the file from {e.url} into the cache."
            )
        return p
    target = cache_dir() / e.key
    if target.is_file():
        return target
    created = [d for d in (target.parent, *target.parent.parents) if not d.exists()]  # deepest first
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel("WARNING")  # pooch announces every download on stderr; a failure is reported below instead
    try:
        fetched = pooch.retrieve(
            url=e.url,
            known_hash=f"sha256:{e.sha256}",
            fname=Path(e.path).name,
            path=target.parent,
            progressbar=False,
            downloader=_downloader(),
        )
    except Exception as exc:  # network down, proxy, HTTP error, hash mismatch of the download
        _remove_empty_dirs(created)
        cause = _one_line(exc)
        raise DownloadError(
            f"Could not get {e.key}: it is not cached at {target} and the download from {e.url} failed ({cause}). Either "
            "connect to the internet once so perfmodel can fill its cache, or set PERFMODEL_DATA to a local copy of the data laid "
            "out as <owner>/<repo>/<path> (e.g. PERFMODEL_DATA=../shared/datasets).",
            key=e.key, url=e.url, cause=cause, network=not isinstance(exc, ValueError),
        ) from exc
    finally:
        logger.setLevel(level)
    return Path(fetched)


def read_bytes(name: str) -> bytes:
    """Bytes of an upstream file after checking its sha256 against the registry.

    Raises
    ------
    DataIntegrityError
        The file's sha256 differs from the registry's (truncated, edited, or another version).
    DataNotAvailableError
        Not in ``PERFMODEL_DATA`` / not cached and cannot be downloaded.
    NotADataFileError
        The registry marks the upstream file as not data (HTML page, empty file).
    """
    e = entry(name)
    path = resolve(name)
    st = path.stat()
    data = path.read_bytes()
    for rec in _READ_RECORDERS:  # the per-process frame cache (perfmodel.datasets._cache) remembers what it read
        rec[str(path)] = (st.st_size, st.st_mtime_ns)
    actual = hashlib.sha256(data).hexdigest()
    if actual != e.sha256:
        if data_root() is not None:  # a mirror is never downloaded into: the user restores the file
            fix = (f"restore the mirror file from the upstream repository at the pinned commit ({e.url}); perfmodel never downloads "
                   "into a PERFMODEL_DATA mirror. Or unset PERFMODEL_DATA to use the download cache instead.")
        else:
            fix = "delete it (it will be downloaded again) or restore it from the upstream repository at the pinned commit."
        raise DataIntegrityError(
            f"{path} failed its integrity check: sha256 {actual} (size {len(data)} bytes) but the registry expects "
            f"{e.sha256} (size {e.size_bytes} bytes) for {e.key} at commit {e.commit[:7]}. The file is truncated, edited or "
            f"another version: {fix}"
        )
    return data


def read_csv(name: str, **kwargs):
    """Read an upstream CSV (hash-verified) into a DataFrame through :func:`perfmodel.datasets._io.parse_csv`.

    ``kwargs`` are those of ``parse_csv`` (``required_columns``, ``numeric_columns``, and :func:`pandas.read_csv` options).
    """
    from perfmodel.datasets._io import parse_csv

    data = read_bytes(name)
    return parse_csv(data, source=entry(name).key, **kwargs)


def keys_under(prefix: str) -> list[str]:
    """Registered keys (data files only) under a folder, e.g. ``keys_under("CM:processed_data/startup_time")``."""
    p = _key(prefix).rstrip("/") + "/"
    return sorted(k for k, e in registry_entries().items() if k.startswith(p) and e.kind not in ("html-page", "empty"))

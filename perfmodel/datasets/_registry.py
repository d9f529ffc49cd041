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

from perfmodel._errors import DataIntegrityError, DataNotAvailableError, NotADataFileError, UnknownNameError

__all__ = ["RegistryEntry", "registry_entries", "entry", "resolve", "read_bytes", "data_source", "cache_dir", "url_of"]

ENV_DATA = "PERFMODEL_DATA"
ENV_CACHE = "PERFMODEL_CACHE"

REPOS = {
    "CM": "cake-lab/CM-DARE",
    "TDL": "cake-lab/transient-deep-learning",
}


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
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"


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
    """Accept ``CM:processed_data/...`` / ``TDL:...`` (the catalog's short form) or a full key."""
    if ":" in name and name.split(":", 1)[0] in REPOS:
        prefix, rest = name.split(":", 1)
        return f"{REPOS[prefix]}/data/{rest.lstrip('/')}"
    return name.strip("/")


def entry(name: str) -> RegistryEntry:
    """The registry entry of an upstream file.

    Parameters
    ----------
    name : str
        ``"CM:processed_data/checkpoint/ckpt.csv"``, ``"TDL:lifetime/lifetime.csv"`` or a full key
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


def data_source() -> str:
    """Human-readable description of where upstream files are read from now."""
    local = os.environ.get(ENV_DATA)
    if local:
        return f"local mirror PERFMODEL_DATA={local}"
    return f"cache {cache_dir()} (downloads from the pinned commits when missing)"


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


def resolve(name: str) -> Path:
    """Local path of an upstream file, downloading it into the cache if needed (no hash check; see :func:`read_bytes`)."""
    e = entry(name)
    _refuse_non_data(e)
    local = os.environ.get(ENV_DATA)
    if local:
        p = Path(local).expanduser() / e.key
        if not p.is_file():
            raise DataNotAvailableError(
                f"{e.key} is not in the local mirror: {p} does not exist. PERFMODEL_DATA={local!r} must point at a folder laid "
                "out as <owner>/<repo>/<path in repo> (e.g. the project's ../shared/datasets). Fix the variable, or unset it to "
                f"download the file from {e.url} into the cache."
            )
        return p
    target = cache_dir() / e.key
    if target.is_file():
        return target
    try:
        import pooch

        fetched = pooch.retrieve(
            url=e.url,
            known_hash=f"sha256:{e.sha256}",
            fname=Path(e.path).name,
            path=target.parent,
            progressbar=False,
        )
    except Exception as exc:  # network down, proxy, HTTP error, hash mismatch of the download
        raise DataNotAvailableError(
            f"Could not get {e.key}: it is not cached at {target} and the download from {e.url} failed "
            f"({type(exc).__name__}: {exc}). Either connect to the internet once so perfmodel can fill its cache, or set "
            "PERFMODEL_DATA to a local copy of the data laid out as <owner>/<repo>/<path> (e.g. PERFMODEL_DATA=../shared/datasets)."
        ) from exc
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
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != e.sha256:
        raise DataIntegrityError(
            f"{path} failed its integrity check: sha256 {actual} (size {len(data)} bytes) but the registry expects "
            f"{e.sha256} (size {e.size_bytes} bytes) for {e.key} at commit {e.commit[:7]}. The file is truncated, edited or "
            "another version: delete it (it will be downloaded again) or restore it from the upstream repository at the pinned commit."
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

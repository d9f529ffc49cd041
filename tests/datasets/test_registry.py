"""Registry, resolution, download and integrity checks (DESIGN.md convention 4)."""
from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import pytest

from perfmodel import datasets
from perfmodel._errors import DataIntegrityError, DataNotAvailableError, NotADataFileError, UnknownNameError
from perfmodel.datasets import _registry

CKPT = "CM:processed_data/checkpoint/ckpt.csv"
CKPT_KEY = "cake-lab/CM-DARE/data/processed_data/checkpoint/ckpt.csv"


REPOS = {"cake-lab/CM-DARE", "cake-lab/transient-deep-learning", "sitar-lab/NeuSight", "skypilot-org/spot-traces",
         "microsoft/vidur", "pytorch/torchtitan"}


def _mirror_problems(sums: dict[str, str], reg) -> list[str]:
    """What is wrong between a mirror's SHA256SUMS (key -> sha256) and the registry: a registered file missing from the
    mirror or differing from it, or a mirrored file of a registered repository that is not registered. Folders of
    repositories perfmodel does not register are allowed (a mirror may hold more than perfmodel uses)."""
    data = reg[reg["kind"].isin(["csv", "json", "text", "image", "sqlite"])]
    registered = dict(zip(data["key"], data["sha256"]))
    repos = set(reg["repo"])
    out = [f"registered file missing from the mirror: {k}" for k in sorted(registered) if k not in sums]
    out += [f"registered file differs from the mirror (sha256 {sums[k][:12]}..., registered {v[:12]}...): {k}"
            for k, v in sorted(registered.items()) if k in sums and sums[k] != v]
    out += [f"mirrored file of a registered repository is not registered: {k}"
            for k in sorted(sums) if "/".join(k.split("/")[:2]) in repos and k not in registered]
    return out


def _sums(mirror) -> dict[str, str]:
    return {k.strip(): v for v, k in (line.split(None, 1) for line in (mirror / "SHA256SUMS").read_text().splitlines())}


def test_registry_matches_the_mirror_sha256sums(mirror):
    """Every registered data file is in the mirror with the registered sha256, and every mirrored file of a registered
    repository is registered. The spot traces (no licence stated upstream) are registered as fetched, never
    redistributed."""
    reg = datasets.registry()
    assert set(reg["repo"]) == REPOS
    assert _mirror_problems(_sums(mirror), reg) == []
    assert set(reg["commit"]) == {"263b7f14951c0645cacdfeadbef8546d4a742632", "87c6717e4026801623cf0327e78ad57f51cb1461",
                                  "6945927d9afcca2b9daf021f8395e53edc5b4eef", "221da1ab9bdfe7966da296265d7694d52dc0c5a6",
                                  "7d47513363ec447a741ac5e47241580b47724fbf", "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a",
                                  "041336434916bdc0f88c1f89fda176fd3c2092e4"}
    assert reg.groupby("repo")["licence"].unique().map(list).to_dict() == {
        "cake-lab/CM-DARE": ["Apache-2.0"], "cake-lab/transient-deep-learning": ["Apache-2.0"], "sitar-lab/NeuSight": ["MIT"],
        "skypilot-org/spot-traces": ["none stated upstream (fetched; never redistributed)"], "microsoft/vidur": ["MIT"],
        "pytorch/torchtitan": ["BSD-3-Clause"]}
    assert reg.loc[reg["key"] == CKPT_KEY, "url"].item() == (
        "https://raw.githubusercontent.com/cake-lab/CM-DARE/263b7f14951c0645cacdfeadbef8546d4a742632/data/processed_data/checkpoint/ckpt.csv"
    )


def test_mirror_check_allows_extra_folders_and_names_missing_or_differing_files(mirror):
    reg = datasets.registry()
    sums = _sums(mirror)
    assert _mirror_problems({**sums, "someone/else/data.csv": "0" * 64}, reg) == []
    gone = {k: v for k, v in sums.items() if k != CKPT_KEY}
    assert _mirror_problems(gone, reg) == [f"registered file missing from the mirror: {CKPT_KEY}"]
    assert _mirror_problems({**sums, CKPT_KEY: "f" * 64}, reg) == [
        f"registered file differs from the mirror (sha256 ffffffffffff..., registered {sums[CKPT_KEY][:12]}...): {CKPT_KEY}"]
    stray = "cake-lab/CM-DARE/data/new.csv"
    assert _mirror_problems({**sums, stray: "0" * 64}, reg) == [f"mirrored file of a registered repository is not registered: {stray}"]


def test_verify_all_ok():
    res = datasets.verify()
    assert len(res) == 350 + 409 + 35 + 30 + 5
    assert res.groupby(res["key"].str.split("/").str[:2].str.join("/")).size().to_dict() == {
        "cake-lab/CM-DARE": 187, "cake-lab/transient-deep-learning": 163, "sitar-lab/NeuSight": 409, "skypilot-org/spot-traces": 35,
        "microsoft/vidur": 30, "pytorch/torchtitan": 5}
    assert set(res["status"]) == {"ok"}


def test_short_and_full_keys_resolve_to_the_same_file():
    assert _registry.entry(CKPT) == _registry.entry(CKPT_KEY)
    assert _registry.resolve(CKPT).name == "ckpt.csv"


def test_unknown_file_lists_close_matches():
    with pytest.raises(UnknownNameError, match=r"'CM:processed_data/checkpoint/ckpt2.csv' is not an upstream file in perfmodel's registry.*Closest registered files: .*ckpt.csv"):
        _registry.entry("CM:processed_data/checkpoint/ckpt2.csv")


def test_html_page_saved_as_csv_is_refused():
    with pytest.raises(NotADataFileError, match=r"bar_chunks_fraction/chunk_summary.csv is not data: upstream it is a saved GitHub HTML page"):
        datasets.read_csv("CM:processed_data/bar_chunks_fraction/chunk_summary.csv")


def test_empty_upstream_file_is_refused():
    with pytest.raises(NotADataFileError, match=r"timeline-972.json is not data: it is 0 bytes upstream"):
        datasets.read_bytes("CM:raw_data/checkpoint_overhead/1k80-1ps/1566230266/timeline-972.json")


def _copy_mirror_file(src_mirror: Path, dst_mirror: Path, key: str) -> Path:
    dst = dst_mirror / key
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src_mirror / key, dst)
    return dst


def test_truncated_file_names_file_and_both_hashes(mirror, tmp_path, monkeypatch):
    dst = _copy_mirror_file(mirror, tmp_path, CKPT_KEY)
    data = dst.read_bytes()[:-50]
    dst.write_bytes(data)
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    expected = _registry.entry(CKPT).sha256
    actual = hashlib.sha256(data).hexdigest()
    with pytest.raises(DataIntegrityError, match=rf"ckpt.csv failed its integrity check: sha256 {actual} .* the registry expects {expected}"):
        datasets.load_checkpoint_summary()


def test_missing_file_in_local_mirror_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataNotAvailableError, match=r"is not in the local mirror: .* PERFMODEL_DATA=.* must point at a folder laid out as <owner>/<repo>/<path in repo>"):
        datasets.load_checkpoint_summary()


def test_offline_without_data_says_how_to_get_it(tmp_path, monkeypatch):
    """No PERFMODEL_DATA, empty cache, and the download fails (a closed loopback port stands in for 'offline')."""
    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    monkeypatch.setenv("PERFMODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_registry.RegistryEntry, "url", property(lambda e: f"http://127.0.0.1:9/{e.repo}/{e.commit}/{e.path}"))
    with pytest.raises(DataNotAvailableError, match=r"Could not get .*ckpt.csv: it is not cached at .* and the download from .* failed .*"
                       r"connect to the internet once .* or set PERFMODEL_DATA to a local copy"):
        datasets.load_checkpoint_summary()


@pytest.fixture
def loopback_server(mirror):
    """An HTTP server on 127.0.0.1 serving the mirror like the upstream raw host (bounded: shut down after the test)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_download_into_cache_then_reuse(loopback_server, tmp_path, monkeypatch):
    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("PERFMODEL_CACHE", str(cache))
    monkeypatch.setattr(_registry.RegistryEntry, "url", property(lambda e: f"{loopback_server}/{e.repo}/{e.path}"))
    df = datasets.load_checkpoint_summary()
    assert len(df) == 16
    cached = cache / CKPT_KEY
    assert cached.is_file()
    # second load uses the cache (server no longer needed) and still checks the hash
    monkeypatch.setattr(_registry.RegistryEntry, "url", property(lambda e: "http://127.0.0.1:9/unreachable"))
    assert len(datasets.load_checkpoint_summary()) == 16
    cached.write_bytes(cached.read_bytes() + b"\r\n1,2,3")
    with pytest.raises(DataIntegrityError, match=r"failed its integrity check"):
        datasets.load_checkpoint_summary()


def test_download_with_wrong_content_is_rejected(loopback_server, tmp_path, monkeypatch):
    """A download whose bytes do not hash as registered is refused (pooch checks known_hash)."""
    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    monkeypatch.setenv("PERFMODEL_CACHE", str(tmp_path / "cache"))
    # serve another file under the requested name
    monkeypatch.setattr(_registry.RegistryEntry, "url", property(lambda e: f"{loopback_server}/{e.repo}/data/processed_data/checkpoint/aggregated.csv"))
    with pytest.raises(DataNotAvailableError, match=r"download from .* failed \(ValueError: .*hash"):
        datasets.load_checkpoint_summary()
    assert not (tmp_path / "cache" / CKPT_KEY).exists()

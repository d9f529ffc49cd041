"""The data layer fails in one clear line and never waits on a dead network: a missing or relative PERFMODEL_DATA, a
mirror file that fails its hash, ``data verify`` offline, empty cache folders; and derived frames are cached per
process without ever serving stale or shared data."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel import datasets
from perfmodel._errors import DataIntegrityError, DataNotAvailableError
from perfmodel.cli import main
from perfmodel.datasets import _registry

ROOT = Path(__file__).resolve().parents[2]
CKPT_KEY = "cake-lab/CM-DARE/data/processed_data/checkpoint/ckpt.csv"


# ------------------------------------------------------------------------------------------ PERFMODEL_DATA folder
def test_missing_mirror_folder_is_one_error_naming_it(tmp_path, monkeypatch):
    gone = tmp_path / "no-such-mirror"
    monkeypatch.setenv("PERFMODEL_DATA", str(gone))
    with pytest.raises(DataNotAvailableError, match=rf"^PERFMODEL_DATA='{gone}' does not name an existing folder \(tried {gone}\)\. "
                                                    r"Point it at the data mirror"):
        datasets.load_cluster_runs()


def test_data_verify_with_a_missing_mirror_folder_prints_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path / "no-such-mirror"))
    assert main(["data", "verify"]) == 1
    cap = capsys.readouterr()
    lines = [ln for ln in (cap.out + cap.err).splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert "does not name an existing folder" in lines[0] and "no-such-mirror" in lines[0]


def test_relative_mirror_resolves_from_the_project_root_when_not_from_the_cwd(mirror, monkeypatch):
    """The README's PERFMODEL_DATA=../shared/datasets, exported at the repository root, used by a kernel in notebooks/."""
    rel = os.path.relpath(mirror, ROOT)
    monkeypatch.chdir(ROOT / "notebooks")
    assert not (Path.cwd() / rel).is_dir()  # the case that failed: the path does not resolve from notebooks/
    monkeypatch.setenv("PERFMODEL_DATA", rel)
    assert datasets.data_root() == mirror.resolve()
    assert len(datasets.load_checkpoint_summary()) == 16


def test_relative_mirror_prefers_the_cwd(mirror, tmp_path, monkeypatch):
    local = tmp_path / "mine"
    (local / CKPT_KEY).parent.mkdir(parents=True)
    shutil.copyfile(mirror / CKPT_KEY, local / CKPT_KEY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERFMODEL_DATA", "mine")
    assert datasets.data_root() == local.resolve()
    assert str(datasets.resolve(CKPT_KEY)) == str(local.resolve() / CKPT_KEY)


def test_relative_mirror_found_nowhere_lists_the_places_tried(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERFMODEL_DATA", "../nowhere/datasets")
    with pytest.raises(DataNotAvailableError, match=rf"PERFMODEL_DATA='../nowhere/datasets' does not name an existing folder \(tried "
                                                    rf"{tmp_path}/../nowhere/datasets or {ROOT}/../nowhere/datasets\)"):
        datasets.load_checkpoint_summary()


def test_relative_mirror_in_a_subprocess_started_in_notebooks(mirror):
    """A fresh process (as a notebook kernel is), started in notebooks/ with the README's relative export."""
    env = {**os.environ, "PERFMODEL_DATA": os.path.relpath(mirror, ROOT)}
    code = "import perfmodel.datasets as d; print(len(d.load_checkpoint_summary()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "16"


# ------------------------------------------------------------------------------------------ integrity in mirror mode
def test_integrity_error_in_mirror_mode_says_restore_not_download(mirror, tmp_path, monkeypatch):
    dst = tmp_path / CKPT_KEY
    dst.parent.mkdir(parents=True)
    dst.write_bytes((mirror / CKPT_KEY).read_bytes()[:-20])
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataIntegrityError, match=r"failed its integrity check.*restore the mirror file from the upstream repository "
                                                 r"at the pinned commit \(https://raw.githubusercontent.com/cake-lab/CM-DARE/") as info:
        datasets.load_checkpoint_summary()
    assert "downloaded again" not in str(info.value)


# ------------------------------------------------------------------------------------------ offline / dropped packets
class _DeadNetwork:
    """A downloader that fails like a network that drops packets (without waiting), counting its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, url, output_file, pooch, check_only=False):
        self.calls.append(url)
        raise ConnectionError(f"HTTPSConnectionPool(host='raw.githubusercontent.com', port=443): Max retries exceeded with url: {url}\n"
                              + "Caused by ConnectTimeoutError(...) " * 40)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    monkeypatch.setenv("PERFMODEL_CACHE", str(tmp_path / "cache"))
    dead = _DeadNetwork()
    monkeypatch.setattr(_registry, "_downloader", lambda: dead)
    return dead


def test_downloads_use_a_short_connect_timeout():
    connect, read = _registry._downloader().kwargs["timeout"]
    assert connect <= 10 and read >= connect  # pooch's default is 30 s for both


def test_data_verify_offline_stops_after_the_first_network_failure(offline, capsys):
    res = datasets.verify()
    assert len(offline.calls) == 1  # not 350 attempts of 30 s each
    assert (res["status"] == "missing").sum() == 1 and (res["status"] == "not-checked").sum() == len(res) - 1
    assert res.loc[res["status"] == "not-checked", "detail"].str.match(r"not checked: the download of .* failed \(ConnectionError").all()
    assert main(["data", "verify"]) == 1
    cap = capsys.readouterr()
    assert cap.err.count("\n") <= 3, cap.err
    assert f"{len(res) - 1} files not checked" in cap.err and "set PERFMODEL_DATA" in cap.err


def test_offline_error_is_short_and_leaves_no_empty_cache_folders(offline, tmp_path):
    with pytest.raises(DataNotAvailableError, match=r"Could not get .*ckpt.csv: it is not cached at .* failed \(ConnectionError: ") as info:
        datasets.load_checkpoint_summary()
    assert len(str(info.value)) < 800, len(str(info.value))  # was 1.5 KB, mostly the network library's retry trace
    assert info.value.group == "cake-lab/CM-DARE/data/processed_data/checkpoint"
    with pytest.raises(DataNotAvailableError) as info:
        datasets.load_cluster_runs()
    assert info.value.group == "cake-lab/CM-DARE/data/processed_data/speed_and_cluster_size"  # the dataset, not the run's folder
    cache = tmp_path / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_dir()], sorted(cache.rglob("*"))


# ------------------------------------------------------------------------------------------ per-process frame cache
def test_loaders_read_each_file_once_per_process(monkeypatch):
    datasets.clear_cache()
    reads = []
    real = _registry.read_bytes
    monkeypatch.setattr(_registry, "read_bytes", lambda name: reads.append(name) or real(name))
    a = datasets.load_cluster_runs()
    n_files = len(reads)
    assert n_files == 96
    b = datasets.load_cluster_runs()
    assert len(reads) == n_files  # second call: no file read or hash-checked again
    assert a.equals(b)


def test_cached_frames_are_copies(monkeypatch):
    a = datasets.load_cluster_runs()
    expected = float(a["speed_steps_per_s"].iloc[0])
    a.loc[0, "speed_steps_per_s"] = -1.0
    a.drop(columns=["step"], inplace=True)
    b = datasets.load_cluster_runs()
    assert float(b["speed_steps_per_s"].iloc[0]) == expected and "step" in b


def test_cache_is_keyed_on_the_data_source(mirror, tmp_path, monkeypatch):
    assert len(datasets.load_checkpoint_summary()) == 16
    # another mirror holding a different (truncated) file: the change of PERFMODEL_DATA is honoured
    dst = tmp_path / CKPT_KEY
    dst.parent.mkdir(parents=True)
    dst.write_bytes((mirror / CKPT_KEY).read_bytes()[:-20])
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    with pytest.raises(DataIntegrityError, match="failed its integrity check"):
        datasets.load_checkpoint_summary()


def test_a_file_edited_in_place_is_read_again(mirror, tmp_path, monkeypatch):
    dst = tmp_path / CKPT_KEY
    dst.parent.mkdir(parents=True)
    shutil.copyfile(mirror / CKPT_KEY, dst)
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    assert len(datasets.load_checkpoint_summary()) == 16
    dst.write_bytes(dst.read_bytes() + b"\n1,2,3")
    with pytest.raises(DataIntegrityError, match="failed its integrity check"):
        datasets.load_checkpoint_summary()


def test_heavy_dependencies_are_not_imported_with_the_data_layer_or_the_planner():
    code = ("import sys, perfmodel.datasets, perfmodel.planning; "
            "print(sorted(m for m in ('scipy.stats', 'statsmodels', 'sklearn', 'lifelines', 'matplotlib', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_data_verify_keeps_going_when_the_server_answers_with_wrong_content(tmp_path, monkeypatch):
    """A download that arrives but fails its hash is not a network failure: the other files are still checked."""
    monkeypatch.delenv("PERFMODEL_DATA", raising=False)
    monkeypatch.setenv("PERFMODEL_CACHE", str(tmp_path / "cache"))
    calls = []

    def wrong_content(url, output_file, pooch, check_only=False):
        calls.append(url)
        Path(output_file).write_bytes(b"a,b\n1,2\n")

    monkeypatch.setattr(_registry, "_downloader", lambda: wrong_content)
    res = datasets.verify(kinds=("csv",))
    assert len(calls) == len(res) > 100 and set(res["status"]) == {"missing"}
    assert res["detail"].str.contains(r"failed \(ValueError: .*hash", regex=True).all()

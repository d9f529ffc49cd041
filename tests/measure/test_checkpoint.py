"""The checkpoint timer writes only files it creates: a private temporary folder by default, an explicit path only
when new (or with overwrite), never through a symbolic link, one clear error for a folder or a missing/read-only one."""
from __future__ import annotations

import os
import tempfile

import pytest
from torch import nn

import perfmodel.measure as M
import perfmodel.measure.timing as T


def tiny():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 10))


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The system temporary folder, redirected to an empty folder of this test."""
    t = tmp_path / "systmp"
    t.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(t))
    return t


def test_default_is_a_private_folder_removed_afterwards(private_tmp, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    planted = private_tmp / "perfmodel-checkpoint.pt"  # the old fixed default: a link there must not be followed
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    planted.symlink_to(victim)
    d = M.measure_checkpoint_time(tiny(), repeats=2)
    assert len(d) == 2 and (d["checkpoint_mb"] > 0).all() and list(d.columns) == M.CHECKPOINT_COLUMNS
    assert victim.read_text() == "precious" and os.listdir(private_tmp) == ["perfmodel-checkpoint.pt"]
    assert sorted(os.listdir(tmp_path)) == ["systmp", "victim.txt"]  # nothing written in the current folder


def test_existing_file_is_refused_unless_overwrite(tmp_path):
    f = tmp_path / "my_weights.pt"
    f.write_bytes(b"my weights")
    with pytest.raises(FileExistsError, match=r"File exists \(.*pass overwrite=True / --overwrite.*my_weights\.pt"):
        M.measure_checkpoint_time(tiny(), f)
    assert f.read_bytes() == b"my weights"
    d = M.measure_checkpoint_time(tiny(), f, repeats=2, overwrite=True)
    assert len(d) == 2 and not f.exists()  # replaced, then removed like any checkpoint the timer writes


def test_new_explicit_path_is_written_and_removed(tmp_path):
    f = tmp_path / "new.pt"
    d = M.measure_checkpoint_time(tiny(), f, repeats=3)
    assert d["repetition"].tolist() == [0, 1, 2] and not f.exists() and os.listdir(tmp_path) == []


def test_symlink_is_never_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "ck.pt"
    link.symlink_to(victim)
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match=r"symbolic link"):
            M.measure_checkpoint_time(tiny(), link, overwrite=overwrite)
    dangling = tmp_path / "dangling.pt"
    dangling.symlink_to(tmp_path / "nowhere.pt")
    with pytest.raises(FileExistsError, match=r"symbolic link"):
        M.measure_checkpoint_time(tiny(), dangling)
    assert victim.read_text() == "precious" and link.is_symlink() and not (tmp_path / "nowhere.pt").exists()


def test_link_planted_after_the_check_is_not_followed(tmp_path, monkeypatch):
    """The open itself refuses links (O_EXCL for a new file, O_NOFOLLOW with overwrite), not only the check before."""
    monkeypatch.setattr(T, "check_checkpoint_path", lambda path, overwrite=False: os.fspath(path))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "ck.pt"
    link.symlink_to(victim)
    with pytest.raises(FileExistsError):
        M.measure_checkpoint_time(tiny(), link)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        M.measure_checkpoint_time(tiny(), link, overwrite=True)
    assert victim.read_text() == "precious" and link.is_symlink()


def test_folder_missing_folder_and_read_only_folder(tmp_path, open_dir, unprivileged):
    with pytest.raises(IsADirectoryError, match=r"Is a directory \(expected the path of a checkpoint file.*checkpoint\.pt"):
        M.measure_checkpoint_time(tiny(), tmp_path)
    with pytest.raises(FileNotFoundError, match=r"No such folder for the checkpoint file"):
        M.measure_checkpoint_time(tiny(), tmp_path / "missing" / "c.pt")
    with unprivileged():
        ro = open_dir / "ro"
        ro.mkdir(mode=0o555)
        with pytest.raises(PermissionError, match=r"the checkpoint's folder is not writable"):
            M.measure_checkpoint_time(tiny(), ro / "c.pt")
    assert os.listdir(ro) == []


def test_campaign_checkpoint_path_must_be_new(tmp_path, monkeypatch):
    """The campaign refuses an existing checkpoint_path before measuring anything."""
    f = tmp_path / "c.pt"
    f.write_bytes(b"keep")
    calls = []
    monkeypatch.setattr("perfmodel.measure.campaign.measure_step_time", lambda *a, **k: calls.append(a))
    with pytest.raises(FileExistsError, match="File exists"):
        M.measure_campaign(["resnet-15"], out=tmp_path / "s.csv", checkpoint_out=tmp_path / "ck.csv", checkpoint_path=f, steps=1,
                           progress=False)
    assert calls == [] and f.read_bytes() == b"keep" and not (tmp_path / "s.csv").exists()

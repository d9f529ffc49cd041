"""`perfmodel measure`: one-line errors (no traceback) and the step summary with its warnings."""
from __future__ import annotations

import os

import pytest
import torch

import perfmodel.measure as M
from perfmodel.cli import main

STEP = ["measure", "step", "resnet-15", "--batch-size", "2", "--steps", "3", "--warmup", "0"]


def _one_line_error(capsys, start: str) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith(start), err
    return err


def test_cuda_without_cuda(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(STEP + ["--device", "cuda"]) == 1
    err = _one_line_error(capsys, "perfmodel: device 'cuda' is not available: ")
    assert "Use device 'cpu' (--device cpu)" in err
    assert main(STEP + ["--device", "gpu"]) == 1
    _one_line_error(capsys, "perfmodel: device must be a torch device such as 'cpu', 'cuda' or 'cuda:1'; got 'gpu'")


def test_input_shape_malformed_or_wrong_rank(capsys, tmp_path):
    assert main(STEP + ["--input-shape", "3,32"]) == 1
    _one_line_error(capsys, "perfmodel: input_shape (3, 32) does not fit the zoo CNN 'resnet-15': expected (3, height, width)")
    assert main(STEP + ["--input-shape", "3,x,32"]) == 2
    _one_line_error(capsys, "perfmodel measure step: --input-shape must be comma-separated integers")
    assert main(STEP + ["--input-shape", "3,0,32"]) == 1
    _one_line_error(capsys, "perfmodel: input_shape must be one sample's shape as positive integers")
    assert main(["measure", "campaign", "Res15", "--input-shape", "3,32", "--out", str(tmp_path / "c.csv")]) == 1
    _one_line_error(capsys, "perfmodel: input_shape (3, 32) does not fit the zoo CNN 'resnet-15'")
    assert not (tmp_path / "c.csv").exists()
    assert main(["measure", "cluster", "resnet-15", "--input-shape", "32,32", "--world-sizes", "1"]) == 1
    _one_line_error(capsys, "perfmodel: input_shape (32, 32) does not fit the zoo CNN 'resnet-15'")


def test_checkpoint_path_errors(capsys, tmp_path):
    ck = ["measure", "checkpoint", "resnet-15", "--repeats", "1"]
    assert main(ck + ["--path", str(tmp_path)]) == 1
    _one_line_error(capsys, "perfmodel: [Errno 21] Is a directory (expected the path of a checkpoint file")
    f = tmp_path / "my_weights.pt"
    f.write_bytes(b"mine")
    assert main(ck + ["--path", str(f)]) == 1
    _one_line_error(capsys, "perfmodel: [Errno 17] File exists (")
    assert f.read_bytes() == b"mine"
    assert main(ck + ["--path", str(tmp_path / "nope" / "c.pt")]) == 1
    _one_line_error(capsys, "perfmodel: [Errno 2] No such folder for the checkpoint file")
    assert main(ck + ["--path", str(f), "--overwrite", "--out", str(tmp_path / "ck.csv")]) == 0
    assert len(M.read_rows(tmp_path / "ck.csv")) == 1 and not f.exists()


def test_read_only_folder_for_out_and_path(capsys, open_dir, unprivileged):
    with unprivileged():
        ro = open_dir / "ro"
        ro.mkdir(mode=0o555)
        assert main(STEP + ["--out", str(ro / "s.csv")]) == 1
        _one_line_error(capsys, f"perfmodel: [Errno 13] Permission denied (the folder is not writable")
        assert main(["measure", "checkpoint", "resnet-15", "--path", str(ro / "c.pt")]) == 1
        _one_line_error(capsys, "perfmodel: [Errno 13] Permission denied (the checkpoint's folder is not writable")
        f = open_dir / "ro.csv"
        f.write_text("x\n")
        os.chmod(f, 0o444)
        assert main(STEP + ["--out", str(f)]) == 1
        _one_line_error(capsys, "perfmodel: [Errno 13] Permission denied")
    assert os.listdir(ro) == []


def test_out_of_other_columns_is_refused_before_measuring(capsys, tmp_path, monkeypatch):
    f = tmp_path / "o.csv"
    f.write_text("a,b\n1,2\n")
    monkeypatch.setattr(M, "measure_step_time", lambda *a, **k: pytest.fail("measured before checking --out"))
    assert main(STEP + ["--out", str(f)]) == 1
    _one_line_error(capsys, "perfmodel: ")


def test_step_shows_progress_and_ends_with_a_summary(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert main(STEP + ["--out", str(tmp_path / "s.csv")]) == 0
    out, err = capsys.readouterr()
    assert "resnet-15 b=2: 100%" in err and "3/3" in err  # the progress bar, on stderr
    assert "rows appended to" in out
    assert "perfmodel measure step: resnet-15 batch 2: median " in out and "timed steps; spread: IQR " in out and "outlier" in out
    assert "the machine is busy" not in err  # (a spread warning may appear: this machine is shared)
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 0.0, 0.0))
    assert main(STEP + ["--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "100%" not in err and "perfmodel: warning: the machine is busy: 1-minute load average 64.00" in err

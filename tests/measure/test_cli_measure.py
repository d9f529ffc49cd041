"""`perfmodel measure`: one-line errors (no traceback) and the step summary with its warnings."""
from __future__ import annotations

import os
import sys

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


@pytest.mark.parametrize("argv, start", [
    (["measure", "cluster", "resnet-15", "--world-sizes", "a,b"],
     "perfmodel measure cluster: --world-sizes must be comma-separated whole numbers like 1,2,4; got 'a,b'."),
    (["measure", "cluster", "resnet-15", "--world-sizes", "0"], "perfmodel measure cluster: --world-sizes must be positive"),
    (["measure", "campaign", "resnet-15", "--batch-sizes", "x"],
     "perfmodel measure campaign: --batch-sizes must be comma-separated whole numbers like 1,2,4; got 'x'."),
    (["measure", "campaign", "resnet-15", "--thread-counts", "1,two"], "perfmodel measure campaign: --thread-counts must be"),
])
def test_malformed_number_lists_are_one_line_errors(capsys, tmp_path, argv, start):
    assert main([*argv, "--out", str(tmp_path / "o.csv")]) == 2
    _one_line_error(capsys, start)
    assert not (tmp_path / "o.csv").exists()


def test_noise_data_that_is_junk_or_not_tensors_is_a_one_line_error(capsys, tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00\x01 this is not a torch file" * 10)
    assert main(["measure", "noise", "resnet-15", "--data", str(junk)]) == 2
    err = _one_line_error(capsys, f"perfmodel measure noise: cannot read --data '{junk}' (")
    assert "expected a file written by torch.save({'x': inputs, 'y': targets})" in err
    as_list = tmp_path / "list.pt"
    torch.save([1, 2, 3], as_list)
    assert main(["measure", "noise", "resnet-15", "--data", str(as_list)]) == 2
    err = _one_line_error(capsys, f"perfmodel measure noise: --data '{as_list}' does not hold training data (data must be "
                                  "(inputs, targets) tensors or a dict")
    assert "got list" in err
    short = tmp_path / "short.pt"
    torch.save({"x": torch.zeros(1, 3, 32, 32), "y": torch.zeros(1, dtype=torch.long)}, short)
    assert main(["measure", "noise", "resnet-15", "--data", str(short)]) == 2
    _one_line_error(capsys, "perfmodel measure noise: --data")


def test_noise_shows_progress_on_a_terminal_only(capsys, tmp_path, monkeypatch):
    import perfmodel.cli.measure as cli_measure  # where `perfmodel measure` looks _show_progress up

    f = tmp_path / "d.pt"
    g = torch.Generator().manual_seed(0)
    torch.save({"x": torch.randn(8, 3, 32, 32, generator=g), "y": torch.randint(0, 10, (8,), generator=g)}, f)
    argv = ["measure", "noise", "resnet-15", "--data", str(f), "--batch-small", "2", "--batch-big", "4", "--draws", "3"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "resnet-15 noise: 100%" in err and "6/6" in err and "B_simple = " in out and "100%" not in out
    assert main([*argv, "--quiet"]) == 0
    assert "100%" not in capsys.readouterr().err
    monkeypatch.setattr(cli_measure, "_show_progress", lambda quiet: not quiet and False)  # not a terminal: no bar
    assert main(argv) == 0
    assert "100%" not in capsys.readouterr().err


def test_cluster_shows_progress_over_world_sizes(capsys, monkeypatch):
    import pandas as pd

    from perfmodel.measure import ddp

    def fake_spawn(fn, args, nprocs, out_file):
        pd.DataFrame({"n_workers": [nprocs], "step_time_s": [0.1]}).to_pickle(out_file)

    monkeypatch.setattr(ddp, "spawn_ranks", fake_spawn)
    df = ddp.measure_cluster_speed("resnet-15", world_sizes=(1, 2), progress=True)
    assert df["n_workers"].tolist() == [1, 2]
    assert "resnet-15 ddp: 100%" in capsys.readouterr().err
    ddp.measure_cluster_speed("resnet-15", world_sizes=(1,))
    assert "100%" not in capsys.readouterr().err


def test_rank0_result_is_whole_or_absent(tmp_path, monkeypatch):
    """_save_result leaves no temporary file when it fails, and names the fix for a folder at its path."""
    import pandas as pd

    from perfmodel.measure import ddp

    frame = pd.DataFrame({"a": [1]})
    target = tmp_path / "rank0.pkl"
    target.mkdir()
    with pytest.raises(IsADirectoryError, match=r"Is a directory \(expected the path of rank 0's result file"):
        ddp._save_result(frame, str(target))
    target.rmdir()

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_pickle", full)
    with pytest.raises(OSError, match="No space left"):
        ddp._save_result(frame, str(target))
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    ddp._save_result(frame, str(target))
    assert pd.read_pickle(target)["a"].tolist() == [1] and os.listdir(tmp_path) == ["rank0.pkl"]

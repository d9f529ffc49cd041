"""`python -m perfmodel.measure.bundle` never writes into the source tree unless told to, and records no empty run."""
from __future__ import annotations

import pytest

from perfmodel.measure import bundle


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.glob("*") if p.is_file()} if folder.is_dir() else {}


def test_without_a_folder_it_refuses_and_leaves_the_tracked_files_alone(capsys):
    before = _snapshot(bundle.SOURCE_FOLDER)
    with pytest.raises(SystemExit) as ei:
        bundle.main([])
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert "error: --folder DIR is required: the measurements and a provenance entry are appended there" in err
    assert f"--folder {bundle.SOURCE_FOLDER} to rebuild the bundled data" in err
    assert _snapshot(bundle.SOURCE_FOLDER) == before


def test_a_run_that_measures_nothing_writes_no_provenance(tmp_path, monkeypatch, capsys):
    from perfmodel.measure import campaign

    monkeypatch.setattr(campaign, "measure_campaign", lambda *a, **k: {"measured": 0, "skipped": 4, "seconds": 0.0})
    assert bundle.main(["--folder", str(tmp_path / "m"), "--models", "resnet-15"]) == 0
    assert not (tmp_path / "m" / "README.md").exists()
    assert "nothing measured: 4 combinations already in" in capsys.readouterr().out
    monkeypatch.setattr(campaign, "measure_campaign", lambda *a, **k: {"measured": 2, "skipped": 0, "seconds": 1.0})
    assert bundle.main(["--folder", str(tmp_path / "m"), "--models", "resnet-15"]) == 0
    text = (tmp_path / "m" / "README.md").read_text()
    assert "2 combinations measured" in text and f"bundle --folder {tmp_path / 'm'} --budget-s" in text

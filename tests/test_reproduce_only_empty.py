"""``perfmodel reproduce --only ''`` selects nothing: a usage error (exit 2, one line naming the ids and --list) that
leaves an existing report untouched, never an empty report with exit 0."""
from __future__ import annotations

import pytest

from perfmodel.cli import main
from perfmodel.reproduce import reproduce, select_items


@pytest.mark.parametrize("only", [[""], [" "], [","], [" , ,"], ["", ""]])
def test_an_empty_selection_is_a_usage_error_and_keeps_the_report(tmp_path, capsys, only):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.md").write_text("previous report\n")
    (out / "numbers.json").write_text("[1]\n")
    argv = ["reproduce", *[a for o in only for a in ("--only", o)], "--out", str(out), "--no-figures", "--quiet"]
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    assert lines[0].startswith("perfmodel reproduce: --only names no item")
    assert "perfmodel reproduce --list" in lines[0] and "checkpoint_time_per_cnn" in lines[0]
    assert (out / "report.md").read_text() == "previous report\n" and (out / "numbers.json").read_text() == "[1]\n"
    assert sorted(p.name for p in out.iterdir()) == ["numbers.json", "report.md"]


def test_an_empty_selection_does_not_create_the_output_folder(tmp_path, capsys):
    assert main(["reproduce", "--only", "", "--out", str(tmp_path / "new"), "--quiet"]) == 2
    assert not (tmp_path / "new").exists()


def test_the_library_refuses_an_empty_selection(tmp_path):
    for only in ("", [], [""], ",", [" , "]):
        with pytest.raises(ValueError, match=r"names no item.*perfmodel reproduce --list"):
            select_items(only)
        with pytest.raises(ValueError, match="names no item"):
            reproduce(tmp_path / "r", only=only, figures=False, progress=False)
    assert not (tmp_path / "r").exists()
    assert len(select_items(None)) == len(select_items()) > 0  # None still means every item


def test_an_empty_part_next_to_an_id_is_ignored(tmp_path):
    assert [i.id for i in select_items(["", "checkpoint_interval,"])] == ["checkpoint_interval"]

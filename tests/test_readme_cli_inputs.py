"""The README's shell lines use only files a newcomer has: a file under ``examples/`` that ships with the repository,
or one an earlier line writes (``--out FILE``, ``make_batch.py FILE``); the shipped example inputs are read by the
readers the commands use."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Options whose value is a file the command reads.
_INPUTS = ("--prices", "--with", "--data")


def _cli_lines() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("## Predict, plan, measure"):]
    m = re.search(r"```bash\n(.*?)```", block, re.DOTALL)
    assert m, "the README's 'Predict, plan, measure' section has no bash block"
    return [shlex.split(line.split("#")[0]) for line in m.group(1).splitlines() if line.strip()]


def test_every_file_a_readme_command_reads_ships_or_is_written_before():
    written: set[str] = set()
    lines = _cli_lines()
    assert len(lines) > 10
    for words in lines:
        for i, w in enumerate(words):
            if w in _INPUTS:
                f = words[i + 1]
                assert f in written or (ROOT / f).is_file(), (
                    f"the README's line {' '.join(words)!r} reads {f}, which neither ships nor is written by an earlier line")
            if w.startswith("examples/") and w.endswith((".json", ".csv", ".py")):
                assert (ROOT / w).is_file(), f"{w} (in the README's line {' '.join(words)!r}) does not ship"
        if "--out" in words:
            written.add(words[words.index("--out") + 1])
        if words[:2] == ["python", "examples/make_batch.py"]:
            written.add(words[2])


def test_the_example_price_tables_are_read_by_the_planners():
    from perfmodel.planning import read_prices
    from perfmodel.planning.cloud import read_gpu_prices

    p = read_prices(ROOT / "examples" / "prices.csv")
    assert set(p["server"]) == {"worker", "parameter_server"} and (p["on_demand_usd_per_h"] > 0).all()
    g = read_gpu_prices(ROOT / "examples" / "gpu_prices.csv")
    assert {"A100", "H100", "L4"} <= set(g["gpu"]) and g["source_url"].notna().all()


def test_make_batch_writes_what_measure_noise_reads_and_never_overwrites(tmp_path):
    import runpy
    import sys

    import pytest
    import torch

    out = tmp_path / "b.pt"
    argv = sys.argv
    try:
        sys.argv = ["make_batch.py", str(out)]
        runpy.run_path(str(ROOT / "examples" / "make_batch.py"), run_name="__main__")
        b = torch.load(out)
        assert b["x"].shape == (512, 3, 32, 32) and b["y"].shape == (512,) and int(b["y"].max()) <= 9
        with pytest.raises(SystemExit, match="exists; perfmodel never overwrites"):
            runpy.run_path(str(ROOT / "examples" / "make_batch.py"), run_name="__main__")
    finally:
        sys.argv = argv

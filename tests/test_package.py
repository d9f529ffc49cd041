"""Package-level contracts: nothing read at import, heavy imports lazy, CLI commands."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perfmodel.cli import main

PROBE = r"""
import sys, json
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith((".csv", ".json", ".db", ".png")):
        opened.append(args[0])
sys.addaudithook(hook)
import perfmodel, perfmodel.datasets
print(json.dumps({"opened": opened, "torch": "torch" in sys.modules, "xgboost": "xgboost" in sys.modules,
                  "all": sorted(perfmodel.__all__)}))
"""


def test_import_reads_nothing_and_is_lazy(tmp_path):
    env = {**os.environ, "PERFMODEL_DATA": str(tmp_path / "nowhere"), "PERFMODEL_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    assert res["opened"] == []
    assert not res["torch"] and not res["xgboost"]
    assert not (tmp_path / "cache").exists()
    assert "datasets" in res["all"] and "load_dataset" in res["all"]


def test_public_surface_resolves():
    import perfmodel

    for name in perfmodel.__all__:
        if name not in ("zoo", "features"):  # these import torch, covered by their own tests
            assert getattr(perfmodel, name) is not None
    with pytest.raises(AttributeError, match=r"module 'perfmodel' has no attribute 'nope'"):
        perfmodel.nope  # noqa: B018


def test_cli_data_verify_and_summary(capsys):
    assert main(["data", "verify"]) == 0
    out = capsys.readouterr().out
    assert "all 829 registered data files present with the registered sha256" in out
    assert main(["data", "summary"]) == 0
    out = capsys.readouterr().out
    assert "speed_samples" in out and "cluster_runs" in out and "upstream" in out


def test_cli_verify_fails_on_a_bad_file(mirror, tmp_path, monkeypatch, capsys):
    import shutil

    shutil.copytree(mirror / "cake-lab", tmp_path / "cake-lab")
    f = tmp_path / "cake-lab/CM-DARE/data/processed_data/checkpoint/ckpt.csv"
    f.chmod(0o644)
    f.write_bytes(f.read_bytes()[:100])
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    assert main(["data", "verify"]) == 1
    err = capsys.readouterr().err
    assert "FAILED cake-lab/CM-DARE/data/processed_data/checkpoint/ckpt.csv" in err and "failed its integrity check" in err


def test_cli_reports_missing_data_cleanly(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERFMODEL_DATA", str(tmp_path))
    assert main(["data", "summary"]) == 1
    assert "perfmodel: " in capsys.readouterr().err


def test_cli_usage_error():
    with pytest.raises(SystemExit) as e:
        main(["data", "frobnicate"])
    assert e.value.code == 2


def test_no_work_item_markers_in_the_project():
    """Code, docstrings, notebooks and user-visible text speak about the project, not about the tracker's work items."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pat = re.compile(r"\bissues?[ -]?#?\d+\b", re.I)
    hits = []
    for folder in ("perfmodel", "tests", "notebooks", "benchmarks", "datasets"):
        for f in sorted((root / folder).rglob("*")):
            if f.suffix not in (".py", ".ipynb", ".md", ".csv", ".toml") or ".ipynb_checkpoints" in f.parts:
                continue
            for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if pat.search(line) and "bissues?" not in line:
                    hits.append(f"{f.relative_to(root)}:{i}: {line.strip()[:100]}")
    for f in ("README.md", "pyproject.toml"):
        for i, line in enumerate((root / f).read_text(encoding="utf-8").splitlines(), 1):
            if pat.search(line):
                hits.append(f"{f}:{i}: {line.strip()[:100]}")
    assert not hits, "work-item markers:\n" + "\n".join(hits)

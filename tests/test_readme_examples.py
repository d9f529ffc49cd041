"""The README's quick tour runs as written: its Python block is extracted and executed (the data from
``PERFMODEL_DATA``, models built from configs on the meta device), each line's value kept as a notebook shows it, and
its answers are what the comments say."""
from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]


def _quick_tour() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = text[text.index("## Quick tour"):]
    m = re.search(r"```python\n(.*?)```", tour, re.DOTALL)
    assert m, "the README's quick tour has no python block"
    return m.group(1)


def _run_keeping_values(code: str) -> tuple[dict, list]:
    """Execute ``code``; every top-level expression statement's value is appended to the returned list."""
    tree = ast.parse(code)
    body = []
    for node in tree.body:
        if isinstance(node, ast.Expr):
            call = ast.Call(ast.Attribute(ast.Name("_values", ast.Load()), "append", ast.Load()), [node.value], [])
            node = ast.copy_location(ast.Expr(call), node)
        body.append(node)
    tree.body = body
    ns: dict = {"_values": []}
    exec(compile(ast.fix_missing_locations(tree), "README.md quick tour", "exec"), ns)  # noqa: S102 - our own README
    return ns, ns["_values"]


def test_the_quick_tour_runs_as_written_and_answers_what_its_comments_say():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the extrapolation and memory warnings are the answers' own, tested elsewhere
        ns, values = _run_keeping_values(_quick_tour())
    assert isinstance(ns["speed"], pd.DataFrame) and len(ns["speed"]) == 520  # "520 single-worker samples"
    assert values[2] == "shake-shake-big"  # ds.canonical_model("Shake Large")
    gpt2, llama = values[3], values[4]
    assert list(gpt2["gpu"]) == ["H100", "A100-PCIe-80GB"] and (gpt2["step_time_s"] > 0).all()
    assert {"forward_s", "backward_s", "optimizer_s", "lower_s", "upper_s"} <= set(gpt2.columns)  # "time, interval, split"
    assert {"step_time_s", "forward_s", "memory_per_gpu_bytes"} <= set(llama.columns)  # "step, its split, memory per GPU"
    cmdare, cloud = values[5], values[6]
    assert cmdare.attrs["world"] == "cmdare" and cloud.attrs["world"] == "cloud"  # which world answers
    assert len(cloud) and (cloud["gpu"] == "H100").all() and (cloud["steps"] > 0).all()


def _first_prediction() -> tuple[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- predict-example -->(.*?)<!-- /predict-example -->", text, re.DOTALL)
    assert block, "the README has no first prediction between <!-- predict-example --> markers"
    code = re.search(r"```python\n(.*?)```", block.group(1), re.DOTALL)
    printed = re.search(r"```text\n(.*?)\n```", block.group(1), re.DOTALL)
    assert code and printed, "the first prediction needs its python block and its printed output (a text block)"
    return code.group(1), printed.group(1)


_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def _last_digit(token: str) -> float:
    """The value of one unit in the last digit written (``896.8`` → 0.1, ``60,960`` → 1)."""
    return 10.0 ** -len(token.split(".")[1]) if "." in token else 1.0


def test_the_first_prediction_prints_what_the_readme_shows():
    """The example runs as written and prints the README's output: the same words, and every number the same to
    within one unit of its last written digit (the 4-digit rounding of a value that another CPU's floating-point
    kernels move in its fifth digit)."""
    code, shown = _first_prediction()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ns, values = _run_keeping_values(code)
    printed = repr(values[-1])
    assert _NUMBER.sub("#", printed) == _NUMBER.sub("#", shown), (
        "the first prediction prints other words than the README shows; update the README's output:\n" + printed)
    for got, want in zip(_NUMBER.findall(printed), _NUMBER.findall(shown), strict=True):
        g, w = float(got.replace(",", "")), float(want.replace(",", ""))
        assert abs(g - w) <= 1.01 * _last_digit(want), f"README shows {want}, the example prints {got}:\n{printed}"
    result = values[-1]
    assert result.step_time_s == ns["pm"].predict_step_time(
        ns["run"], "H100", n_gpus=8, strategy="fsdp", activation_checkpointing="selective")["step_time_s"].iloc[0]

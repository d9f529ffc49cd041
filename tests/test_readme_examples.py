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
    big = values[5]  # "Llama 3 70B on 64 H100: Transformer Engine FP8, Megatron 4D"
    assert big.parallelism.framework == "megatron" and big.cluster.n_gpus == 64 and big.workload.precision == "fp8"
    assert big.step_time_s > 0 and big.fits and "Megatron-Core execution" in big.basis and "Transformer Engine" in big.basis
    assert "5 model chunks" in big.basis and big.comm_exposed_s["cp"] > 0
    cmdare, cloud = values[6], values[7]
    assert cmdare.attrs["world"] == "cmdare" and cloud.attrs["world"] == "cloud"  # which world answers
    assert len(cloud) and (cloud["gpu"] == "H100").all() and (cloud["steps"] > 0).all()
    rented = values[8]  # "the rental and its fastest layout": plan_cloud(strategies="search")
    assert rented["fits"].all() and (rented["n_gpus"] == 64).all() and rented["spot"].eq(False).all()
    assert rented["strategy"].str.match(r"dp\d*-.*\((megatron|pytorch), \d+ micro-batches").all()
    # "each instance type on its own network": the p5.48xlarge's EFA rails, the a3-highgpu-8g's TCPX
    assert {"p5.48xlarge", "a3-highgpu-8g"} <= set(rented["instance_type"])
    for inst, net in (("p5.48xlarge", "3200 Gb/s network as 8 rails (GPUDirect RDMA"),
                      ("a3-highgpu-8g", "800 Gb/s network as 8 rails (no GPUDirect RDMA")):
        assert rented.loc[rented["instance_type"] == inst, "extrapolated"].str.contains(net, regex=False).all()


def _example(name: str) -> tuple[str, str]:
    """The README's example ``name``: its python block and its printed output (the text block after it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(rf"<!-- {name}-example -->(.*?)<!-- /{name}-example -->", text, re.DOTALL)
    assert block, f"the README has no example between <!-- {name}-example --> markers"
    code = re.search(r"```python\n(.*?)```", block.group(1), re.DOTALL)
    printed = re.search(r"```text\n(.*?)\n```", block.group(1), re.DOTALL)
    assert code and printed, f"the {name} example needs its python block and its printed output (a text block)"
    return code.group(1), printed.group(1)


_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def _last_digit(token: str) -> float:
    """The value of one unit in the last digit written (``896.8`` → 0.1, ``60,960`` → 1)."""
    return 10.0 ** -len(token.split(".")[1]) if "." in token else 1.0


def _run_example(name: str, monkeypatch) -> tuple[dict, object]:
    """Run the README's example ``name`` as written, from the repository root (its paths are relative to it); check
    that it prints the README's output: the same words, and every number the same to within one unit of its last
    written digit (the rounding of a value that another CPU's floating-point kernels move in its last bits)."""
    code, shown = _example(name)
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ns, values = _run_keeping_values(code)
    printed = repr(values[-1])
    assert _NUMBER.sub("#", printed).rstrip() == _NUMBER.sub("#", shown).rstrip(), (
        f"the {name} example prints other words than the README shows; update the README's output:\n" + printed)
    for got, want in zip(_NUMBER.findall(printed), _NUMBER.findall(shown), strict=True):
        g, w = float(got.replace(",", "")), float(want.replace(",", ""))
        assert abs(g - w) <= 1.01 * _last_digit(want), f"README shows {want}, the {name} example prints {got}:\n{printed}"
    return ns, values[-1]


def test_the_first_prediction_prints_what_the_readme_shows(monkeypatch):
    """The first prediction runs as written, prints the README's output, and equals predict_step_time to the bit."""
    ns, result = _run_example("predict", monkeypatch)
    assert result.step_time_s == ns["pm"].predict_step_time(
        ns["run"], "H100", n_gpus=8, strategy="fsdp", activation_checkpointing="selective")["step_time_s"].iloc[0]


def test_the_plan_example_prints_what_the_readme_shows(monkeypatch):
    """The plan runs as written from the shipped example config and price table, prints the README's choice, and
    that choice is the cheapest feasible row within the deadline; the CLI line the README gives answers the same."""
    ns, best = _run_example("plan", monkeypatch)
    plan = ns["plan"]
    ok = plan["feasible"] & (plan["time_h"] <= 2)
    assert best["cost_usd"] == plan.loc[ok, "cost_usd"].min()
    import contextlib
    import io

    from perfmodel.cli import main

    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        main(["plan-cloud", "examples/gpt2.json", "--deadline-h", "2", "--gpus", "A100,H100,L4"])
    assert f"{int(best['n_gpus'])}x{best['gpu']} {best['strategy']} at batch {int(best['batch_size'])}" in out.getvalue()


def test_the_paper_example_prints_what_the_readme_shows(monkeypatch):
    """The paper example runs as written and prints the README's rows: each published value beside the recomputed one,
    with its status; a number that differs has its reason."""
    ns, shown = _run_example("paper", monkeypatch)
    n = ns["n"]
    assert (n.loc[shown.index, "reason"].notna() | (n.loc[shown.index, "status"] == "EXACT")).all()

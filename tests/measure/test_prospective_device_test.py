"""benchmarks/prospective_device_test.py: predictions registered (never overwritten), then scored against measurements
in the harness's schema — here synthetic ones whose errors are known, since no GPU is measured by a test."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.measure.llm import GEMM_COLUMNS, LLM_STEP_COLUMNS

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "prospective_device_test.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("prospective_device_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def registered(script, tmp_path_factory):
    out = tmp_path_factory.mktemp("reg") / "predictions.csv"
    assert script.main(["predict", "--out", str(out), "--gpu", "H100"]) == 0
    return out


def test_every_run_and_gemm_of_the_plan_is_registered_with_the_rule_of_thumb_beside_it(script, registered, capsys):
    p = pd.read_csv(registered)
    steps, gemms = p[p["kind"] == "llm_step"], p[p["kind"] == "gemm"]
    assert steps["run"].tolist() == [r[0] for r in script.PLAN] and len(gemms) == len(script.GEMMS)
    assert (p["gpu"] == "H100").all() and p["perfmodel_commit"].notna().all()
    assert (steps["lower_s"] < steps["predicted_s"]).all() and (steps["predicted_s"] < steps["upper_s"]).all()
    assert (steps["rule_of_thumb_s"] > 0).all() and (steps["predicted_memory_gib"] < 79).all()  # every run fits 80 GB
    assert set(steps["precision"]) == {"bf16", "tf32", "fp32"} and set(steps["optimizer"]) == {"none", "adam-fused"}
    # a registration is never overwritten
    before = registered.read_bytes()
    assert script.main(["predict", "--out", str(registered), "--gpu", "H100"]) == 2
    assert registered.read_bytes() == before and "never overwritten" in capsys.readouterr().err


def test_the_score_reports_each_error_the_rule_of_thumb_and_the_clock_the_gemms_sustained(script, registered, tmp_path, capsys):
    p = pd.read_csv(registered)
    steps = p[p["kind"] == "llm_step"]
    rows = []
    for r in steps.itertuples(index=False):  # measured 25 % slower than predicted, memory 10 % lower
        for i, t in enumerate((3.0, 1.25, 1.25, 1.25)):
            rows.append(dict(model=r.run, step=i, warmup=i == 0, step_time_s=r.predicted_s * t, precision=r.precision,
                             peak_reserved_gib=r.predicted_memory_gib / 1.1, sm_clock_mhz=1700.0, power_w=690.0,
                             device_name="NVIDIA H100 80GB HBM3"))
    pd.DataFrame(rows).reindex(columns=LLM_STEP_COLUMNS).to_csv(tmp_path / "llm_steps.csv", index=False)
    g = p[p["kind"] == "gemm"]
    small = (g[["m", "n", "k"]].min(axis=1) < script.CLOCK_MIN_DIM).to_numpy()
    assert small.any() and (~small & (g["precision"] == "bf16").to_numpy()).any()
    slow = np.where(small, 2.0, 1.2)  # the shard shapes slower still: scored, never used to find the clock
    pd.DataFrame(dict(m=g["m"].astype(int), n=g["n"].astype(int), k=g["k"].astype(int), precision=g["precision"],
                      ms=g["predicted_s"] * 1e3 * slow, sm_clock_mhz=1650.0, power_w=699.0, power_limit_w=700.0)
                 ).reindex(columns=GEMM_COLUMNS).to_csv(tmp_path / "gemms.csv", index=False)
    assert script.main(["score", "--predictions", str(registered), "--measured-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    s = pd.read_csv(tmp_path / "scores.csv")
    st, gm = s[s["kind"] == "llm_step"], s[s["kind"] == "gemm"]
    assert len(st) == len(steps) and len(gm) == len(g)
    np.testing.assert_allclose(st["error_pct"], -20.0, atol=1e-9)  # the median of the timed steps, warm-up left out
    np.testing.assert_allclose(st["memory_error_pct"], 10.0, atol=1e-9)
    np.testing.assert_allclose(gm["error_pct"], 100 * (1 / slow - 1), atol=1e-9)
    assert np.isfinite(st["rule_of_thumb_error_pct"]).all() and np.isfinite(st["error_at_measured_clock_pct"]).all()
    # the clock found from the GEMMs alone makes the (uniformly) slower steps less wrong
    assert (st["error_at_measured_clock_pct"].abs() < st["error_pct"].abs()).all()
    assert "rule of thumb" in text and "sustained clock 0.8" in text and "1650 MHz" in text
    # a second score never overwrites the first
    assert script.main(["score", "--predictions", str(registered), "--measured-dir", str(tmp_path)]) == 0
    assert len(list(tmp_path.glob("scores*.csv"))) == 2


def test_a_gpu_without_registered_predictions_is_refused(script, registered, tmp_path, capsys):
    pd.DataFrame([dict(model="x", step=0, warmup=False, step_time_s=1.0, device_name="NVIDIA A100-SXM4-80GB",
                       peak_reserved_gib=1.0)]).reindex(columns=LLM_STEP_COLUMNS).to_csv(tmp_path / "llm_steps.csv", index=False)
    assert script.main(["score", "--predictions", str(registered), "--measured-dir", str(tmp_path)]) == 2
    assert "no row of A100-SXM4-80GB" in capsys.readouterr().err


def test_measure_writes_every_run_and_logs_a_failing_one_without_losing_the_others(script, tmp_path, monkeypatch):
    tiny = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64}
    monkeypatch.setattr(script, "PLAN", [("tiny-fp32", tiny, 16, 1, "fp32", "sdpa", "none"),
                                         ("tiny-tf32", tiny, 16, 1, "tf32", "sdpa", "adam-fused"),  # no TF32 on a CPU
                                         ("tiny-bf16", tiny, 16, 2, "bf16", "eager", "adam-fused")])
    monkeypatch.setattr(script, "GEMMS", [("fp32", 16, 16, 16), ("bf16", 8, 8, 8)])
    assert script.main(["measure", "--out-dir", str(tmp_path), "--device", "cpu", "--steps", "2", "--warmup", "1",
                        "--gemm-seconds", "0.05", "--no-ops"]) == 0
    steps = pd.read_csv(tmp_path / "llm_steps.csv")
    assert list(steps.columns) == LLM_STEP_COLUMNS and steps.groupby("model").size().to_dict() == {"tiny-bf16": 3, "tiny-fp32": 3}
    assert pd.read_csv(tmp_path / "gemms.csv")["precision"].tolist() == ["fp32", "bf16"]
    fails = pd.read_csv(tmp_path / "failures.csv")
    assert fails["run"].tolist() == ["tiny-tf32"] and "tf32" in fails["error"].iloc[0]
    assert (tmp_path / "environment.txt").read_text().startswith("perfmodel ")


def test_the_committed_registration_covers_the_plan_and_names_a_clean_commit(script):
    reg = sorted((SCRIPT.parent / "prospective").glob("predictions-*.csv"))
    assert reg, "no registered predictions under benchmarks/prospective/"
    p = pd.read_csv(reg[-1])
    assert sorted(set(p.loc[p["kind"] == "llm_step", "run"])) == sorted(r[0] for r in script.PLAN), (
        "the plan changed after its registration: register the new plan in a new file (predict --out ...)")
    gemms = p[p["kind"] == "gemm"]
    assert len(gemms) == len(script.GEMMS) * p["gpu"].nunique()
    assert set(gemms["run"]) == {f"gemm-{q}-{m}x{n}x{k}" for q, m, n, k in script.GEMMS}, (
        "the GEMMs changed after their registration: register the new plan in a new file (predict --out ...)")
    commit = p["perfmodel_commit"].unique()
    assert len(commit) == 1 and len(commit[0]) == 40 and all(c in "0123456789abcdef" for c in commit[0])

"""plan_cloud: today's GPU prices, the search over GPU x count x batch x strategy x spot, its errors and its choices."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError
from perfmodel.datasets.reference import GPU_PRICE_COLUMNS, load_gpu_prices
from perfmodel.models.parallel import StrategyError
from perfmodel.planning import PlanInfeasibleError, cheapest_within_deadline, fastest_within_budget, plan_cloud

CFG = dict(model_type="gpt2", n_layer=4, n_embd=256, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0)
# a user's own table for the tests (not quotes): one 8-GPU and one 1-GPU instance type, with spot prices
PRICES = pd.DataFrame(dict(provider=["aws", "gcp"], region=["us-east-1", "us-central1"], instance_type=["big", "small"],
                           gpu=["A100", "L4"], gpus_per_instance=[8, 1], on_demand_usd_per_h=[32.0, 0.8],
                           spot_usd_per_h=[12.0, 0.3], price_date=["test", "test"]))
KW = dict(prices=PRICES, input_shape=(128,), steps=20000, n_gpus=(1, 2), batch_sizes=(8, 16), strategies=("dp", "fsdp"))


@pytest.fixture(scope="module")
def frame():
    return plan_cloud(CFG, **KW)


def test_gpu_price_table_is_sourced_and_listed():
    p = load_gpu_prices()
    assert tuple(p.columns) == GPU_PRICE_COLUMNS and len(p) >= 2
    assert p["source_url"].str.startswith("https://").all() and p["price_date"].str.len().gt(0).all()
    assert set(p["gpu"]) <= set(ds.CATALOG_GPU_IDS)
    row = p.set_index(["provider", "region", "instance_type"]).loc[("aws", "us-east-1", "p5.48xlarge")]
    assert (row["gpu"], row["gpus_per_instance"], row["on_demand_usd_per_h"]) == ("H100", 8, 55.04)
    assert "gpu_prices" in set(ds.list_datasets(with_shape=False)["name"])


def test_plan_rows_columns_and_costs(frame):
    assert {"time_h", "cost_usd", "memory_per_gpu_bytes", "fits", "expected_revocations", "feasible", "pareto", "extrapolated"} <= set(frame.columns)
    # one GPU: one "single" row per batch, GPU, price row and spot/on-demand; two GPUs: dp and fsdp
    assert len(frame) == 2 * 2 * 2 * (1 + 2)
    assert set(frame.loc[frame["n_gpus"] == 1, "strategy"]) == {"single"}
    # whole instances are paid: 2 A100 rent one 8-GPU instance; 2 L4 two 1-GPU instances
    a = frame[(frame["gpu"] == "A100") & (frame["n_gpus"] == 2) & ~frame["spot"]].iloc[0]
    assert a["n_instances"] == 1 and a["usd_per_h"] == 32.0
    l4 = frame[(frame["gpu"] == "L4") & (frame["n_gpus"] == 2) & frame["spot"]].iloc[0]
    assert l4["n_instances"] == 2 and l4["usd_per_h"] == pytest.approx(0.6)
    # the run is billed, the wait for spot capacity is not
    np.testing.assert_allclose(frame["cost_usd"], frame["usd_per_h"] * (frame["time_h"] - frame["capacity_wait_h"]))
    # spot rows pay revocations and checkpoints; on-demand rows do not
    sp, od = frame[frame["spot"]], frame[~frame["spot"]]
    assert (sp["restart_overhead_h"] > 0).all() and (sp["time_h"] > sp["compute_time_h"]).all()
    assert (od["restart_overhead_h"] == 0).all() and (od["expected_revocations"] == 0).all()
    assert sp["extrapolated"].str.contains("spot lifetimes of").all()
    assert frame["extrapolated"].str.contains("precision bf16").all()


def test_noise_scale_plans_time_to_the_same_target():
    f = plan_cloud(CFG, **{**KW, "b_simple": 16.0, "reference_batch": 8})
    steps = f.drop_duplicates("batch_size").set_index("batch_size")["steps"]
    assert steps[8] == 20000 and steps[16] == pytest.approx(20000 * (1 + 16 / 16) / (1 + 16 / 8))


def test_a_gpu_without_a_price_says_which_rows_exist():
    with pytest.raises(ValueError, match=r"No price for GPU H100: the price table has aws us-east-1 big \(8xA100\); gcp us-central1 "
                                         r"small \(1xL4\)\. Pass prices= \(Python\) or --prices FILE"):
        plan_cloud(CFG, **{**KW, "gpus": ["H100"]})


def test_shipped_table_has_no_t4_price():
    with pytest.raises(ValueError, match=r"No price for GPU T4: the price table has aws us-east-1 p4d.24xlarge \(8xA100\)"):
        plan_cloud(CFG, gpus=["T4"], input_shape=(128,), steps=10)


def test_unknown_interconnect():
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'warp-drive'. Expected one of: nvlink, pcie3"):
        plan_cloud(CFG, **{**KW, "interconnect": "warp-drive"})


def test_a_strategy_that_does_not_divide_the_model():
    # 8 heads do not split over 3 GPUs: nothing is left, predict_step_time's reason is raised
    with pytest.raises(StrategyError, match=r"strategy='tp' over 3 GPUs does not divide gpt2: attention heads = 8"):
        plan_cloud(CFG, **{**KW, "n_gpus": (3,), "strategies": ("tp",), "batch_sizes": (6,)})


def test_strategies_that_do_not_divide_are_skipped_and_listed():
    f = plan_cloud(CFG, **{**KW, "n_gpus": (3,), "strategies": ("tp", "pp"), "batch_sizes": (6,)})
    assert set(f["strategy"]) == {"pp"}
    skipped = pd.DataFrame(f.attrs["skipped"])
    assert (skipped["strategy"] == "tp").all() and skipped["reason"].str.contains("attention heads = 8").all()


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"steps must be a positive number of training steps"):
        plan_cloud(CFG, prices=PRICES, input_shape=(128,))
    with pytest.raises(ValueError, match=r"b_simple and reference_batch go together"):
        plan_cloud(CFG, **{**KW, "b_simple": 10.0})
    with pytest.raises(ValueError, match=r"prices lacks the columns \['gpus_per_instance'"):
        plan_cloud(CFG, **{**KW, "prices": PRICES.drop(columns="gpus_per_instance")})


def test_spot_only_needs_a_spot_price():
    no_spot = PRICES.assign(spot_usd_per_h=np.nan)
    with pytest.raises(ValueError, match=r"No candidate is left: no spot price for aws us-east-1 big"):
        plan_cloud(CFG, **{**KW, "prices": no_spot, "spot": True})


def test_choices_say_why(frame):
    deadline = float(frame["time_h"].median())
    c = cheapest_within_deadline(frame, deadline)
    ok = frame[(frame["time_h"] <= deadline) & frame["fits"]]
    assert c["cost_usd"] == ok["cost_usd"].min()
    assert c["why"].startswith(f"cheapest of the {len(ok)} candidates that fit in GPU memory and finish within {deadline:g} h: ")
    assert "next: " in c["why"]
    budget = float(frame["cost_usd"].median())
    fb = fastest_within_budget(frame, budget)
    assert fb["time_h"] == frame[(frame["cost_usd"] <= budget) & frame["fits"]]["time_h"].min()
    assert fb["why"].startswith("fastest of the ")
    with pytest.raises(PlanInfeasibleError, match=r"No candidate that fits in GPU memory would finish within 1e-09 h\. The closest: "):
        cheapest_within_deadline(frame, 1e-9)


def test_memory_that_does_not_fit_is_never_feasible(frame):
    f = frame.copy()
    f.loc[f["gpu"] == "L4", "fits"] = False  # as if L4 were too small
    c = fastest_within_budget(f, 1e9)
    assert c["gpu"] == "A100" or c["fits"]


@settings(max_examples=8, deadline=None)
@given(a=st.floats(1e-4, 1.0), b=st.floats(1e-4, 1.0))
def test_feasible_set_monotone_in_deadline(a, b):
    lo, hi = sorted((a, b))
    f_lo = plan_cloud(CFG, **KW, deadline_h=lo)
    f_hi = plan_cloud(CFG, **KW, deadline_h=hi)
    key = ["gpu", "n_gpus", "strategy", "batch_size", "spot", "instance_type"]
    lo_set = set(map(tuple, f_lo.loc[f_lo["feasible"], key].to_numpy()))
    hi_set = set(map(tuple, f_hi.loc[f_hi["feasible"], key].to_numpy()))
    assert lo_set <= hi_set


@settings(max_examples=8, deadline=None)
@given(a=st.floats(1e-4, 5.0), b=st.floats(1e-4, 5.0))
def test_feasible_set_monotone_in_budget(a, b):
    lo, hi = sorted((a, b))
    f_lo = plan_cloud(CFG, **KW, budget_usd=lo)
    f_hi = plan_cloud(CFG, **KW, budget_usd=hi)
    key = ["gpu", "n_gpus", "strategy", "batch_size", "spot", "instance_type"]
    assert set(map(tuple, f_lo.loc[f_lo["feasible"], key].to_numpy())) <= set(map(tuple, f_hi.loc[f_hi["feasible"], key].to_numpy()))


def test_memory_monotone_in_batch(frame):
    for _, g in frame.groupby(["gpu", "n_gpus", "strategy", "spot", "instance_type"]):
        mem = g.sort_values("batch_size")["memory_per_gpu_bytes"].to_numpy()
        assert (np.diff(mem) >= 0).all()


def test_cli_plan_cloud_with_a_user_price_file(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "128", "--n-gpus", "1,2", "--batch-sizes", "8,16",
            "--strategies", "dp,fsdp", "--steps", "20000", "--prices", str(tmp_path / "prices.csv")]
    assert main([*argv, "--deadline-h", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Pareto front of 24 candidates (20000 steps):") and "cheapest within the deadline:" in out
    assert "why: cheapest of the " in out
    assert main([*argv, "--gpus", "H100"]) == 1
    assert "perfmodel: No price for GPU H100: the price table has aws us-east-1 big (8xA100)" in capsys.readouterr().err
    assert main(["plan-cloud", str(tmp_path / "missing.json")]) == 2
    assert "perfmodel plan-cloud: model" in capsys.readouterr().err


def test_spot_rows_say_how_often_the_traces_held_that_many_instances():
    """p_hold_instances is the traces' share of time holding at least the rented instance count (spot rows only)."""
    import math

    from perfmodel.planning import cloud

    a = ds.spot_availability()
    p1, note1 = cloud._p_hold("aws", 1)
    assert p1 == pytest.approx(a[(a["cloud"] == "aws") & (a["n"] == 1)]["p_at_least_n"].mean())
    assert "trace(s) of" in note1
    p16, _ = cloud._p_hold("aws", 16)
    assert p16 == pytest.approx(a[(a["cloud"] == "aws") & (a["n"] == 16)]["p_at_least_n"].mean()) and p16 < p1
    p_none, note = cloud._p_hold("aws", 17)
    assert math.isnan(p_none) and "holding them is not estimated" in note

"""plan_cloud: mixes of GPU types (Srifty) and the wait for spot capacity."""
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("transformers")

from perfmodel.datasets import spot_availability
from perfmodel.planning import cheapest_within_deadline, plan_cloud
from perfmodel.planning.cloud import _p_hold

CFG = dict(model_type="gpt2", n_layer=2, n_embd=128, n_head=4, vocab_size=500, n_positions=64, bos_token_id=0, eos_token_id=0)
# a user's own table for the tests (not quotes)
PRICES = pd.DataFrame(dict(provider=["aws", "aws", "gcp"], region=["us-east-1", "us-east-1", "us-central1"],
                           instance_type=["h1", "l1", "l1g"], gpu=["H100", "L4", "L4"], gpus_per_instance=[1, 1, 1],
                           on_demand_usd_per_h=[10.0, 1.0, 0.9], spot_usd_per_h=[4.0, 0.4, 0.35], price_date="test"))
KW = dict(prices=PRICES, input_shape=(64,), steps=5000, n_gpus=(1, 2), batch_sizes=(8, 16), strategies=("dp",), precision="fp32")


@pytest.fixture(scope="module")
def frame():
    return plan_cloud(CFG, gpus=["H100", "L4"], mixes=[{"H100": 1, "L4": 3}], **KW)


def test_mixed_rows_rent_both_types_in_one_place(frame):
    mixed = frame[frame["strategy"] == "dp-mixed"]
    # one place (aws us-east-1) rents both; gcp has no H100; 2 batches x spot/on-demand
    assert len(mixed) == 2 * 2 and set(mixed["gpu"]) == {"1xH100+3xL4"} and set(mixed["region"]) == {"us-east-1"}
    od = mixed[~mixed["spot"]].iloc[0]
    assert od["n_gpus"] == 4 and od["n_instances"] == 4 and od["instance_type"] == "1xh1+3xl1"
    assert od["usd_per_h"] == pytest.approx(10.0 + 3 * 1.0)
    assert mixed[mixed["spot"]]["usd_per_h"].iloc[0] == pytest.approx(4.0 + 3 * 0.4)
    assert mixed["extrapolated"].str.contains("mixed GPU types: batch split speed").all()


def test_mixed_rows_carry_the_mixed_step_time(frame):
    from perfmodel.step.hetero import predict_mixed_step_time

    row = frame[(frame["strategy"] == "dp-mixed") & (frame["batch_size"] == 16)].iloc[0]
    want = predict_mixed_step_time(CFG, {"H100": 1, "L4": 3}, batch_size=16, input_shape=(64,), precision="fp32", optimizer="adam")
    assert row["step_time_s"] == pytest.approx(float(want["step_time_s"].iloc[0]))
    assert row["interconnect"] == "ethernet-100g" and "link between instances assumed ethernet-100g" in row["extrapolated"]


def test_a_mix_no_region_rents_is_skipped_with_its_reason():
    f = plan_cloud(CFG, gpus=["L4"], mixes=["1xH100+1xL4"], **{**KW, "prices": PRICES[PRICES["provider"] == "gcp"]
                                                                 .pipe(lambda p: pd.concat([p, PRICES.iloc[[0]].assign(provider="azure")]))})
    assert (f["strategy"] != "dp-mixed").all()
    assert any("no provider and region of the price table rents every GPU of 1xH100+1xL4" in s["reason"] for s in f.attrs["skipped"])


def test_spot_rows_wait_for_capacity_and_the_wait_is_not_billed(frame):
    sp = frame[frame["spot"]]
    run_h = sp["compute_time_h"] + sp["restart_overhead_h"]
    known = np.isfinite(sp["p_hold_instances"])
    assert known.any()
    np.testing.assert_allclose(sp.loc[known, "capacity_wait_h"], run_h[known] * (1 / sp.loc[known, "p_hold_instances"] - 1))
    np.testing.assert_allclose(sp["cost_usd"], sp["usd_per_h"] * run_h)
    assert (frame.loc[~frame["spot"], "capacity_wait_h"] == 0).all()
    # p_hold of a mix: product over its pools (1 H100 instance, 3 L4 instances)
    m = sp[sp["strategy"] == "dp-mixed"].iloc[0]
    p1, p3 = _p_hold("aws", 1)[0], _p_hold("aws", 3)[0]
    if math.isfinite(p1) and math.isfinite(p3):
        assert m["p_hold_instances"] == pytest.approx(p1 * p3)
    else:
        assert math.isnan(m["p_hold_instances"]) and m["capacity_wait_h"] == 0


def test_p_hold_is_the_traces_share_of_time():
    a = spot_availability()
    a = a[(a["n"] == 1) & (a["cloud"] == "aws")]
    assert _p_hold("aws", 1)[0] == pytest.approx(a["p_at_least_n"].mean())


def test_without_the_wait_time_is_the_run(frame):
    f = plan_cloud(CFG, gpus=["H100", "L4"], mixes=[{"H100": 1, "L4": 3}], wait_for_capacity=False, **KW)
    assert (f["capacity_wait_h"] == 0).all()
    np.testing.assert_allclose(f["time_h"], f["compute_time_h"] + f["restart_overhead_h"])
    with pytest.raises(TypeError, match="wait_for_capacity must be True or False"):
        plan_cloud(CFG, wait_for_capacity="yes", **KW)
    with pytest.raises(ValueError, match="mix_balance must be one of"):
        plan_cloud(CFG, mixes=["1xH100+1xL4"], mix_balance="fair", **KW)


def test_why_names_the_wait_for_capacity(frame):
    sp = frame[frame["spot"] & frame["fits"] & (frame["capacity_wait_h"] > 0)]
    pick = cheapest_within_deadline(sp, float(sp["time_h"].max()) + 1)
    assert "waits" in pick["why"] and "for capacity (counted in its time, not billed)" in pick["why"]


def test_cli_plans_mixes_and_can_leave_the_wait_out(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    (tmp_path / "config.json").write_text(json.dumps(CFG))
    PRICES.to_csv(tmp_path / "prices.csv", index=False)
    argv = ["plan-cloud", str(tmp_path / "config.json"), "--input-shape", "64", "--gpus", "H100,L4", "--n-gpus", "1,2",
            "--batch-sizes", "8", "--strategies", "dp", "--steps", "5000", "--prices", str(tmp_path / "prices.csv"),
            "--precision", "fp32", "--mixes", "1xH100+3xL4"]
    assert main([*argv, "--budget-usd", "100"]) == 0
    out = capsys.readouterr().out
    # 1 and 2 GPUs of two types in 3 price rows x spot/on-demand, plus the mix in one place x spot/on-demand
    assert out.startswith("Pareto front of 14 candidates (5000 steps):") and "capacity_wait_h" in out
    assert main([*argv, "--no-capacity-wait", "--budget-usd", "100"]) == 0
    out = capsys.readouterr().out
    assert "waits" not in out.split("why:")[1]
    assert main([*argv[:-1], "1xH100"]) == 1
    assert "a mix needs at least two" in capsys.readouterr().err

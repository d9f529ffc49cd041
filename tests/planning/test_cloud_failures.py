"""Hardware failures in plan_cloud: a synchronous job stops when any of its GPUs fails (the Llama 3 405B run's published
rate by default); on demand it restarts from scratch or checkpoints every Young/Daly interval, whichever costs less,
and spot rows add the failures to their revocations."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from perfmodel.planning import cheapest_within_deadline, plan_cloud
from perfmodel.planning.cloud import HARDWARE_FAILURES_PER_GPU_H
from perfmodel.planning.plan import vm_startup_s
from perfmodel.planning.revocation import young_daly_interval

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096, tie_word_embeddings=False)
PRICES = pd.DataFrame(dict(provider=["aws"], region=["us-east-1"], instance_type=["p5.48xlarge"], gpu=["H100"],
                           gpus_per_instance=[8], on_demand_usd_per_h=[55.04], spot_usd_per_h=[20.0],
                           price_date=["test"]))
KW = dict(prices=PRICES, gpus=["H100"], n_gpus=(16,), strategies=("fsdp",), input_shape=(128,), batch_sizes=(16,),
          checkpoint_s=30.0, wait_for_capacity=False)


def _plan(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plan_cloud(LLAMA, **{**KW, **kw}).set_index("spot")


def test_the_default_rate_is_the_llama3_runs():
    # 419 unexpected interruptions in a 54-day snapshot on 16,384 H100: one every ~3 hours there
    assert HARDWARE_FAILURES_PER_GPU_H == pytest.approx(1.973e-5, rel=1e-3)
    assert 1 / (HARDWARE_FAILURES_PER_GPU_H * 16_384) == pytest.approx(54 * 24 / 419)


def test_a_short_on_demand_run_restarts_from_scratch_a_long_one_checkpoints():
    short = _plan(steps=1000, spot=False).loc[False]
    lam = HARDWARE_FAILURES_PER_GPU_H * 16 / 3600
    t = short["compute_time_h"] * 3600
    r = vm_startup_s("H100", False)
    assert math.isnan(short["checkpoint_s"]) and short["expected_failures"] == pytest.approx(lam * t)
    assert short["restart_overhead_h"] * 3600 == pytest.approx((1 / lam + r) * math.expm1(lam * t) - t, rel=1e-9)
    # a run long enough (here a rate 1,000x the default) checkpoints every Young/Daly interval of the job's MTBF
    rate = 1000 * HARDWARE_FAILURES_PER_GPU_H
    long = _plan(steps=5_000_000, spot=False, failures_per_gpu_h=rate).loc[False]
    lam, t = rate * 16 / 3600, long["compute_time_h"] * 3600
    tau = young_daly_interval(30.0, 1 / lam)
    assert long["checkpoint_s"] == 30.0 and long["checkpoint_interval_s"] == pytest.approx(tau)
    want = lam * t * (r + 30.0 + tau / 2) + t / tau * 30.0
    assert long["restart_overhead_h"] * 3600 == pytest.approx(want, rel=1e-9)
    assert want < (1 / lam + r) * math.expm1(lam * t) - t  # the cheaper policy
    assert "hardware failures: 0.0197 per GPU-hour" in long["extrapolated"] and "the rate given" in long["extrapolated"]
    assert long["cost_usd"] == pytest.approx(long["usd_per_h"] * long["time_h"])
    plan = _plan(steps=5_000_000, spot=False, failures_per_gpu_h=rate).reset_index()
    why = cheapest_within_deadline(plan, float(plan["time_h"].max()) + 1)["why"]
    assert re.search(r"; on demand: [\d.e+-]+ expected hardware failures cost [\d.e+-]+ min \(checkpoint every [\d.]+ min\)", why)


def test_no_failures_no_overhead_on_demand_and_less_on_spot():
    with_f = _plan(steps=200_000)
    without = _plan(steps=200_000, failures_per_gpu_h=0)
    assert without.loc[False, "restart_overhead_h"] == 0 and without.loc[False, "expected_failures"] == 0
    assert np.isnan(without.loc[False, "checkpoint_interval_s"])
    # spot: the job's MTBF shortens, the interval with it, and the failures add restarts to the revocations
    assert with_f.loc[True, "expected_failures"] > 0 and without.loc[True, "expected_failures"] == 0
    assert with_f.loc[True, "checkpoint_interval_s"] < without.loc[True, "checkpoint_interval_s"]
    assert with_f.loc[True, "restart_overhead_h"] > without.loc[True, "restart_overhead_h"]
    assert with_f.loc[True, "expected_revocations"] == without.loc[True, "expected_revocations"]


@pytest.mark.parametrize("bad", [-1e-5, float("nan"), float("inf"), "often", True])
def test_a_bad_failure_rate_is_refused(bad):
    with pytest.raises(ValueError, match=r"failures_per_gpu_h must be a number of hardware failures per GPU-hour, 0 or "
                                         r"more .* got"):
        _plan(steps=10, failures_per_gpu_h=bad)


def test_failure_overhead_is_what_plan_cloud_charges():
    from perfmodel.planning.cloud import failure_overhead

    row = _plan(steps=1000, spot=False).loc[False]
    got = failure_overhead(row["compute_time_h"], 16, checkpoint_s=30.0, startup_s=vm_startup_s("H100", False))
    assert got["overhead_h"] == pytest.approx(row["restart_overhead_h"], rel=1e-12) and not got["checkpointed"]
    assert got["failures"] == pytest.approx(row["expected_failures"], rel=1e-12) and 99.9 < got["effective_pct"] <= 100
    # a month on 16,384 GPUs checkpoints, and loses a few percent
    big = failure_overhead(30 * 24, 16_384, checkpoint_s=30.0, startup_s=60.0)
    assert big["checkpointed"] and 80 < big["effective_pct"] < 100
    with pytest.raises(ValueError, match=r"failure_overhead: checkpoint_s must be a finite number, 0 or more; got -1"):
        failure_overhead(1.0, 8, checkpoint_s=-1, startup_s=60.0)
    with pytest.raises(ValueError, match=r"n_gpus must be a positive whole number"):
        failure_overhead(1.0, 0, checkpoint_s=1.0, startup_s=60.0)

"""Data parallel over a mix of GPU types: the batch split, the slowest GPU and the all-reduce."""
import numpy as np
import pytest

pytest.importorskip("transformers")

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.step.hetero import _split_by_speed, mix_label, parse_mix, predict_mixed_step_time
from perfmodel.step.collectives import Interconnect, resolve_interconnect
from perfmodel.step.parallel import exposed_bucket_allreduce

CFG = dict(model_type="gpt2", n_layer=2, n_embd=128, n_head=4, vocab_size=500, n_positions=64, bos_token_id=0, eos_token_id=0)
KW = dict(input_shape=(64,), precision="fp32", optimizer="adam")


def test_parse_mix_forms_and_errors():
    assert parse_mix({"A100": 4, "L4": 2}) == {"A100": 4, "L4": 2}
    assert parse_mix("2xH100+6xnvidia-l4") == {"H100": 2, "L4": 6}
    assert parse_mix([("V100", 1), ("T4", 3)]) == {"V100": 1, "T4": 3}
    assert mix_label({"H100": 2, "L4": 6}) == "2xH100+6xL4"
    with pytest.raises(ValueError, match="at least two"):
        parse_mix({"A100": 4})
    with pytest.raises(ValueError, match="named twice"):
        parse_mix([("A100", 1), ("a100", 2)])
    with pytest.raises(ValueError, match="positive int"):
        parse_mix({"A100": 0, "L4": 1})
    with pytest.raises(ValueError, match="does not read as '<count>x<gpu>'"):
        parse_mix("A100+L4")
    with pytest.raises(UnknownNameError):
        parse_mix({"A100": 1, "Z9000": 1})


def test_split_by_speed_hands_out_every_sample_and_balances():
    counts = {"fast": 2, "slow": 3}
    line = {"fast": (0.01, 0.001), "slow": (0.01, 0.004)}
    for B in (5, 6, 17, 64, 101):
        b = _split_by_speed(B, counts, line)
        assert sum(map(sum, b.values())) == B and min(min(v) for v in b.values()) >= 1
        assert len(b["fast"]) == 2 and len(b["slow"]) == 3
        # moving a sample off a slowest GPU (one with more than one sample) onto any other GPU never finishes earlier
        t = lambda g, x: line[g][0] + line[g][1] * x  # noqa: E731
        worst = max(t(g, x) for g, v in b.items() for x in v)
        movable = [(g, i) for g, v in b.items() for i, x in enumerate(v) if t(g, x) == worst and x > 1]
        for g0, i0 in movable:
            others = [t(g, x + 1) for g, v in b.items() for i, x in enumerate(v) if (g, i) != (g0, i0)]
            assert min(others) >= worst - 1e-12
    assert _split_by_speed(64, counts, line)["fast"][0] > _split_by_speed(64, counts, line)["slow"][-1]


def test_equal_split_is_the_slowest_single_gpu_step_plus_exposed_allreduce():
    r = predict_mixed_step_time(CFG, {"H100": 2, "T4": 2}, batch_size=16, balance="equal", **KW).iloc[0]
    single = pm.predict_step_time(CFG, ["H100", "T4"], batch_size=4, **KW).set_index("gpu")
    # this tiny model is launch-bound: the H100 and the T4 take about as long, so the slowest is read from the single-GPU rows
    slow = single["step_time_s"].idxmax()
    assert r["local_batches"] == "H100:4,T4:4" and r["slowest_gpu"] == slow
    assert r["compute_s"] == pytest.approx(single.loc[slow, "step_time_s"])
    params = sum(p.numel() for p in pm.step.parallel.model_and_layout(CFG, (64,))[0].parameters())
    exposed, total = exposed_bucket_allreduce(single.loc[slow, "backward_s"], params * 4, 4, resolve_interconnect("ethernet-100g"))
    assert r["comm_s"] == pytest.approx(exposed) and r["comm_total_s"] == pytest.approx(total)
    # the all-reduce hidden under the slowest GPU's backward pass slows it by the published share
    assert r["overlap_slowdown_s"] == pytest.approx(0.189 * min(total - exposed, single.loc[slow, "backward_s"]))
    assert r["step_time_s"] == pytest.approx(r["compute_s"] + r["comm_s"] + r["overlap_slowdown_s"])
    assert 0 < r["idle_fraction"] < 1


def test_speed_split_is_never_slower_and_gives_the_fast_gpu_more():
    eq = predict_mixed_step_time(CFG, {"H100": 2, "T4": 2}, batch_size=64, balance="equal", **KW).iloc[0]
    sp = predict_mixed_step_time(CFG, {"H100": 2, "T4": 2}, batch_size=64, balance="speed", **KW).iloc[0]
    local = dict(p.split(":") for p in sp["local_batches"].split(","))
    assert int(local["H100"]) > int(local["T4"])
    assert sp["compute_s"] < eq["compute_s"] and sp["idle_fraction"] < eq["idle_fraction"]


def test_a_fast_link_hides_the_allreduce():
    fast = Interconnect("ideal", bandwidth_gb_per_s=1e9, latency_s=0.0)
    r = predict_mixed_step_time(CFG, "1xA100+1xL4", batch_size=8, interconnect=fast, **KW).iloc[0]
    assert r["comm_s"] == pytest.approx(0.0, abs=1e-9) and r["step_time_s"] == pytest.approx(r["compute_s"])


def test_bad_batches_and_balance():
    with pytest.raises(ValueError, match="smaller than the 4 GPUs"):
        predict_mixed_step_time(CFG, {"A100": 2, "L4": 2}, batch_size=3, **KW)
    with pytest.raises(ValueError, match="does not split over 4 GPUs"):
        predict_mixed_step_time(CFG, {"A100": 2, "L4": 2}, batch_size=6, balance="equal", **KW)
    with pytest.raises(ValueError, match="balance must be one of"):
        predict_mixed_step_time(CFG, {"A100": 2, "L4": 2}, batch_size=8, balance="fair", **KW)
    with pytest.raises(UnknownNameError, match="interconnect"):
        predict_mixed_step_time(CFG, {"A100": 2, "L4": 2}, batch_size=8, interconnect="warp-drive", **KW)
    assert np.isfinite(predict_mixed_step_time(CFG, {"A100": 2, "L4": 2}, batch_size=8, **KW)["step_time_s"]).all()

"""The clock a part sustains under GEMM load (perfmodel.step.kernels.sustained_clock / at_sustained_clock): the
factor on a spec's compute rates found from measured GEMMs, checked on a synthetic part and on FBGEMM's published
GEMMs of a 500 W H100."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from perfmodel.datasets import gpu_spec, load_published_gemms
from perfmodel.step.kernels import CLOCKED_RATES, at_sustained_clock, gemm_work, kernel_seconds, sustained_clock

SHAPES = pd.DataFrame({"m": [8192, 65536, 4096], "n": [8192, 8192, 14336], "k": [8192, 7168, 4096]})


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def test_a_clock_scales_the_compute_rates_and_keeps_the_memory():
    h = gpu_spec("H100")
    s = at_sustained_clock("H100", 0.8)
    for c in CLOCKED_RATES:
        a, b = float(getattr(h, c)), float(getattr(s, c))
        assert (math.isnan(a) and math.isnan(b)) or b == pytest.approx(0.8 * a)
    assert s.memory_bandwidth_gb_per_s == h.memory_bandwidth_gb_per_s and s.memory_gib == h.memory_gib
    assert s.gpu == "H100@0.8clk"
    for bad in (0, -1, 2.5, "0.8", True, float("nan")):
        with pytest.raises(ValueError, match=r"factor must be a share of the datasheet clock in \(0, 2\]"):
            at_sustained_clock("H100", bad)


def test_the_factor_of_a_part_the_model_itself_timed_is_found_back():
    """GEMM times the model predicts for an H100 at 0.8 of its clock give back 0.8."""
    times = _quiet(kernel_seconds, gemm_work(SHAPES), at_sustained_clock("H100", 0.8), "bf16")
    measured = SHAPES.assign(ms=times * 1e3)
    assert _quiet(sustained_clock, "H100", measured) == pytest.approx(0.8, rel=1e-9)
    # tflops instead of ms: the same
    by_rate = SHAPES.assign(tflops=2.0 * SHAPES.m * SHAPES.n * SHAPES.k / times / 1e12)
    assert _quiet(sustained_clock, "H100", by_rate) == pytest.approx(0.8, rel=1e-9)


def test_fbgemms_500w_h100_gemms_give_its_clock_and_its_fp8_gemms_check_it():
    """Fitted on the three BF16 GEMMs (no bias left); the three FP8 GEMMs, not fitted, within 10 % on average."""
    g = load_published_gemms()
    assert set(g["precision"]) == {"bf16", "fp8"} and (g["gpu"] == "H100 500W").all() and g["source"].str.contains("FBGEMM").all()
    f = _quiet(sustained_clock, "H100", g)
    assert 0.6 < f < 0.95  # a 500 W part below the clock of the 700 W SXM5's datasheet
    spec = at_sustained_clock("H100", f)
    for prec in ("bf16", "fp8"):
        rows = g[g["precision"] == prec]
        pred = _quiet(kernel_seconds, gemm_work(rows), spec, prec)
        err = np.log(pred / (rows["ms"].to_numpy(float) / 1e3))
        if prec == "bf16":  # no bias left but the step of the dominance rule (sustained_clock's docstring)
            assert abs(err.mean()) < 0.005
        else:
            assert np.abs(np.expm1(err)).mean() < 0.10


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match=r"gemms must be a DataFrame with one row per GEMM and columns m, n, k"):
        sustained_clock("H100", pd.DataFrame({"m": [1]}))
    with pytest.raises(ValueError, match=r"needs the measured time of each GEMM: a column ms"):
        _quiet(sustained_clock, "H100", SHAPES)
    with pytest.raises(ValueError, match=r"every measured time .* must be a positive number"):
        _quiet(sustained_clock, "H100", SHAPES.assign(ms=[1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match=r"has no row of precision 'bf16'"):
        sustained_clock("H100", SHAPES.assign(ms=1.0, precision="fp8"))
    with pytest.raises(ValueError, match=r"precision must be 'bf16', 'fp16', 'tf32' or 'fp32'"):
        sustained_clock("H100", SHAPES.assign(ms=1.0), precision="fp8")
    with pytest.raises(ValueError, match=r"faster than the GEMM model predicts for H100 at 2 times its datasheet clock"):
        _quiet(sustained_clock, "H100", SHAPES.assign(ms=1e-6))
    with pytest.raises(ValueError, match=r"m, n and k must be positive numbers"):
        gemm_work(SHAPES.assign(m=[0, 1, 2]))


LLAMA_SMALL = dict(model_type="llama", hidden_size=2048, intermediate_size=5632, num_hidden_layers=2,
                   num_attention_heads=16, num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)


def test_the_published_sustained_shares_are_the_measured_ratios():
    from perfmodel.step.kernels import SUSTAINED_CLOCK_SHARE, SUSTAINED_PRECISIONS, training_clock

    # the median GPU's power-saturated over its boost-burst matmul TFLOPS, all 8 GPUs of the node busy
    # (stas00/ml-engineering): H200, B200
    assert SUSTAINED_CLOCK_SHARE["H200"] == pytest.approx(755.5 / 852.1) and SUSTAINED_CLOCK_SHARE["B200"] == pytest.approx(1437.5 / 1746.7)
    # a step on the measured node's 8 GPUs runs at its slowest GPU's share, as the source says a synchronous run does
    assert training_clock("H200", "bf16", n_gpus=8) == pytest.approx(745 / 852.1, rel=1e-12)
    assert training_clock("B200", "bf16", n_gpus=8) == pytest.approx(1421 / 1746.7, rel=1e-12)
    assert SUSTAINED_CLOCK_SHARE["H100"] == SUSTAINED_CLOCK_SHARE["H800"] == SUSTAINED_CLOCK_SHARE["H200"]  # one die, 700 W
    assert set(SUSTAINED_PRECISIONS) == {"bf16", "fp16", "fp8"}
    assert training_clock("H100", "bf16") == SUSTAINED_CLOCK_SHARE["H100"]
    assert training_clock("H100", "fp32") == training_clock("H100", "tf32") == 1.0  # never measured sustained
    assert training_clock("A100", "bf16") == training_clock("H100-NVL", "bf16") == 1.0  # nothing published
    assert training_clock("H100", "bf16", 0.9) == 0.9 and training_clock(at_sustained_clock("H100", 0.8), "bf16") == 1.0


def test_a_clock_measured_on_one_chip_is_the_median_chips_and_a_step_waits_on_the_slowest():
    from perfmodel.step.kernels import (
        SUSTAINED_CLOCK_SHARE,
        chip_spread,
        expected_slowest,
        slowest_chip_clock,
        training_clock,
    )

    # one chip: its own clock; n chips: the expected slowest, lower the more there are
    assert slowest_chip_clock(0.83, "H100", 1) == 0.83
    got = [slowest_chip_clock(0.83, "H100", n) for n in (8, 128, 512)]
    assert got == pytest.approx([0.83 * (1 - chip_spread("H100") * expected_slowest(n)) for n in (8, 128, 512)], rel=1e-12)
    assert 0.83 > got[0] > got[1] > got[2] > 0.83 * 0.96
    # the published median share goes through the same rule (training_clock's default)
    for g, n in (("H100", 8), ("H200", 64), ("B200", 1024)):
        assert training_clock(g, "bf16", n_gpus=n) == slowest_chip_clock(SUSTAINED_CLOCK_SHARE[g], g, n)
    # no published spread: every chip at the clock given
    assert slowest_chip_clock(0.9, "A100", 256) == 0.9
    for bad in (0, -0.5, 2.5, True, "0.8"):
        with pytest.raises(ValueError, match="clock must be a share"):
            slowest_chip_clock(bad, "H100", 8)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="n_gpus must be a positive"):
            slowest_chip_clock(0.8, "H100", bad)


def test_a_training_step_runs_at_the_sustained_share_by_default_and_at_the_clock_asked():
    import perfmodel as pm

    w = pm.Workload(LLAMA_SMALL, input_shape=(1024,), batch_size=4, precision="bf16", optimizer="adam-fused")
    default = _quiet(pm.predict, w, pm.Cluster("H100"))
    datasheet = _quiet(pm.predict, w, pm.Cluster("H100", clock=1.0))
    explicit = _quiet(pm.predict, w, pm.Cluster(at_sustained_clock("H100", 755.5 / 852.1), clock=1.0))
    assert default.step_time_s == pytest.approx(explicit.step_time_s, rel=1e-12)
    # slower than at the datasheet clock, by no more than the clock itself (the memory-bound kernels keep their time)
    assert 1 < default.step_time_s / datasheet.step_time_s < 852.1 / 755.5 + 1e-9
    assert "of its datasheet clock" in default.basis and "of its datasheet clock" not in datasheet.basis
    row = _quiet(pm.predict_step_time, LLAMA_SMALL, ["H100", "A100"], input_shape=(1024,), batch_size=4,
                 precision="bf16", optimizer="adam-fused")
    assert list(row["gpu"]) == ["H100", "A100"]  # named as given
    assert "kernels.training_clock" in row["basis"].iloc[0] and "kernels.training_clock" not in row["basis"].iloc[1]
    # FP32 steps keep the datasheet clock
    w32 = pm.Workload(LLAMA_SMALL, input_shape=(256,), batch_size=2, precision="fp32", optimizer="adam")
    assert _quiet(pm.predict, w32, pm.Cluster("H100")).step_time_s == _quiet(pm.predict, w32, pm.Cluster("H100", clock=1.0)).step_time_s


@pytest.mark.parametrize("clock", [0, -0.5, 2.5, True, "fast", float("nan")])
def test_a_clock_out_of_range_is_refused_with_what_is_expected(clock):
    import perfmodel as pm

    with pytest.raises(ValueError, match=r"Cluster clock must be a share of the GPU's datasheet clock in \(0, 2\]"):
        pm.Cluster("H100", clock=clock)


def test_every_face_of_the_step_runs_the_gpu_at_the_same_clock():
    import perfmodel as pm
    from perfmodel.step.parallel import predict_parallel_step_time

    kw = dict(input_shape=(512,), batch_size=4, precision="bf16", optimizer="adam-fused", n_gpus=2, strategy="dp")
    a = _quiet(pm.predict_step_time, LLAMA_SMALL, "H100", **kw)
    b = _quiet(predict_parallel_step_time, LLAMA_SMALL, "H100", **kw)
    assert a["step_time_s"].iloc[0] == b["step_time_s"].iloc[0] and list(b["gpu"]) == ["H100"]
    assert "kernels.training_clock" in b["basis"].iloc[0]


def test_a_synchronous_step_waits_on_the_slowest_of_its_chips():
    import math

    import perfmodel as pm
    from perfmodel.step.kernels import SUSTAINED_CLOCK_SHARE, chip_spread, expected_slowest, training_clock

    # the expected minimum of n standard normal draws, exact for 2 and 3: 1/sqrt(pi), 3/(2 sqrt(pi))
    assert expected_slowest(1) == 0.0
    assert expected_slowest(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert expected_slowest(3) == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-9)
    z = [expected_slowest(n) for n in (8, 64, 1024, 16384)]
    assert z == sorted(z) and 1.4 < z[0] < 1.45 and 3.9 < z[-1] < 4.0
    with pytest.raises(ValueError, match="n must be a positive number of GPUs; got 0"):
        expected_slowest(0)
    # one sigma of the chips: the measured node's slowest GPU 1.42 sigma below its median
    assert chip_spread("H100") == pytest.approx((1 - 745 / 755.5) / expected_slowest(8))
    shares = [training_clock("H100", "bf16", n_gpus=n) for n in (1, 8, 64, 1024, 16384)]
    assert shares[0] == SUSTAINED_CLOCK_SHARE["H100"] and shares == sorted(shares, reverse=True)
    assert shares[-1] == pytest.approx(SUSTAINED_CLOCK_SHARE["H100"] * (1 - chip_spread("H100") * z[-1]))
    assert training_clock("H100", "bf16", 0.9, n_gpus=1024) == 0.9  # a clock the user gives is the clock
    assert training_clock("H100", "tf32", n_gpus=1024) == 1.0 and training_clock("A100", "bf16", n_gpus=1024) == 1.0
    # a bigger run of the same step per GPU is slower per GPU by its slowest chip, and basis says why
    w = pm.Workload(LLAMA_SMALL, input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam-fused")
    one = _quiet(pm.predict, w, pm.Cluster("H100", n_gpus=8), pm.Parallelism("fsdp"))
    assert "the share the slowest of its 8 chips is expected to sustain" in one.basis
    solo = _quiet(pm.predict, pm.Workload(LLAMA_SMALL, input_shape=(1024,), batch_size=1, precision="bf16",
                                          optimizer="adam-fused"), pm.Cluster("H100"))
    assert "the share its median chip sustains" in solo.basis


def test_a_part_whose_gemm_model_beats_its_fastest_published_matmul_runs_at_the_clock_that_reaches_it():
    import perfmodel as pm
    from perfmodel.datasets import load_mamf_matmuls
    from perfmodel.step.kernels import burst_clock_share, gemm_seconds, mamf_check, training_clock

    table = load_mamf_matmuls()
    assert {"accelerator", "gpu", "precision", "m", "n", "k", "tflops", "source"} <= set(table.columns)
    assert (table["tflops"] > 0).all() and set(table["precision"]) == {"bf16", "fp8"}
    # the source's own numbers: MI300X 668.4 TFLOPS BF16 at 10240 x 15360 x 8192, H100 SXM 794.5 at 2048 x 2048 x 13312
    mi = table[(table["gpu"] == "MI300X") & (table["precision"] == "bf16")].iloc[0]
    assert (mi["tflops"], mi["m"], mi["n"], mi["k"]) == (668.4, 10240, 15360, 8192)
    check = mamf_check()
    assert set(check["gpu"]) >= {"MI300X", "MI325X", "MI355X", "H100", "B200", "A100"}
    fast = check["predicted_over_measured"] > 1
    # at the datasheet clock the model is faster than the best shape's measurement on exactly the AMD Instinct parts
    assert set(check.loc[fast, "gpu"]) == {"MI300X", "MI325X", "MI355X"}
    for g in ("MI300X", "MI325X", "MI355X"):
        share = burst_clock_share(g)
        assert 0.5 < share < 0.9 and training_clock(g, "bf16") == share == training_clock(g, "fp8")
        row = check[(check["gpu"] == g) & (check["precision"] == "bf16")].iloc[0]
        # at that share the model reaches the measured best shape, not beyond
        assert row["predicted_tflops_training_clock"] == pytest.approx(row["measured_tflops"], rel=0.01)
        assert training_clock(g, "fp32") == 1.0  # the FP32 vector and matrix rates were not measured
    # the NVIDIA parts' best shapes beat the model (a search's best beats a typical shape): no cap, no clock from it
    for g in ("A100", "A100-PCIe-80GB", "B300", "GB200"):
        assert burst_clock_share(g) == 1.0 and training_clock(g, "bf16") == 1.0
    assert burst_clock_share("L4") == 1.0  # not measured
    # by hand: the share puts the GEMM model at the measured time of MI300X's best shape
    gemm = pd.DataFrame({"m": [10240], "n": [15360], "k": [8192]})
    t = gemm_seconds(gemm, at_sustained_clock("MI300X", burst_clock_share("MI300X")))[0]
    assert 2 * 10240 * 15360 * 8192 / t / 1e12 == pytest.approx(668.4, rel=0.01)
    # a step on the MI300X runs at that clock and says why in its basis; a clock asked for wins
    w = pm.Workload(LLAMA_SMALL, input_shape=(1024,), batch_size=4, precision="bf16", optimizer="adam-fused")
    capped = _quiet(pm.predict, w, pm.Cluster("MI300X"))
    datasheet = _quiet(pm.predict, w, pm.Cluster("MI300X", clock=1.0))
    assert capped.step_time_s > datasheet.step_time_s
    assert "burst_clock_share" in capped.basis and "burst_clock_share" not in datasheet.basis
    with pytest.raises(Exception, match="Unknown GPU"):
        burst_clock_share("MI999")

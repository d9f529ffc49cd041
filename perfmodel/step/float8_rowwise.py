"""torchao's row-wise float8 recipe beyond its GEMMs, calibrated on torchao's published microbenchmark.

A compiled training step with torchao's ``Float8Linear`` and row-wise scaling does more per linear than its three FP8
GEMMs and the casts of :func:`perfmodel.step.trace.fp8_work` (each activation operand read once and written in FP8
with its transpose, each weight cast per micro-batch): the weight-gradient GEMM reduces over the tokens, so the input
and the output gradient are scaled a second time along the other axis (a strided maximum and a cast of their own);
the backward GEMMs ran, at the time of torchtitan's published row-wise runs, as cuBLAS's tensor-wise kernel followed
by a kernel of its own that applies the row and column scales to the output (torchao pull requests #1325 and #2184);
and the compiler fuses less around all of it. torchao publishes what that costs (:func:`perfmodel.datasets.
load_float8_rowwise_linears`): the speedup over bfloat16 of ``LayerNorm -> Linear -> Sigmoid``, forward and
backward under ``torch.compile``, on an H100 at 216 forward shapes ``M x K x N`` (1024 to 32768 each) — from 0.38 at
small shapes to 1.73 at large ones, where perfmodel's GEMMs (the backward ones with split accumulation,
:data:`perfmodel.step.op_latency.FP8_SPLIT_ACCUMULATION_SLOWDOWN`) and casts alone predict far too fast a float8 step
(``uncalibrated_speedup_mape_pct`` of the fitted file).

**Calibration** (:func:`fit`, no training run used): perfmodel predicts each shape's subgraph in BF16 and with the
row-wise recipe without this calibration (:func:`calibration_frame`) on the H100 the table ran on — the 500 W Grand Teton
part at its sustained clock, the one of :func:`calibration_candidates` whose GEMM model reproduces the bfloat16 linear
times the table's author published a month before it (:func:`calibration_part`; the catalog 700 W H100 predicts them
about 16 % fast at its sustained clock, 25 % at its datasheet clock); the time the measured speedup
leaves over that prediction, ``t_bf16 / speedup − t_fp8``, is fitted per shape as ``a·M·K + b·M·N + c·K·N + d``
(non-negative least squares on the error relative to the measured float8 time): a cost per element of the input, of
the output gradient and of the weight, and a fixed cost per linear. The per-element costs are turned into bytes at the
bandwidth perfmodel's elementwise model gives a large kernel on that H100 (:data:`FITTED_PATH` keeps them), and every
compiled row-wise step gets, per FP8 linear, a memory-bound kernel in its backward pass moving
``a·M·K + b·M·N + c·K·N`` bytes (:func:`overhead_rows`; two work rows, the part on the operand a tensor-parallel rank
gathers and the rest) — on any GPU at its own bandwidth, at the shapes the GPU runs (under tensor parallelism its
share of the linear, but the operand it holds whole: :func:`keep_gathered_whole`). The
fixed cost (tens of microseconds: the launches of the extra kernels, which a training step's long kernels hide) is
reported, not applied.

:func:`scores` gives the calibrated model's error on the table; torchtitan's row-wise runs
(``perfmodel.papers.external.torchtitan_runs``) are the held-out test. :func:`rebuild` refits
(``python -m perfmodel.step.float8_rowwise``, a few minutes); ``benchmarks/bench_rowwise_calibration.py`` says
whether the shipped file is still the one the code fits (any change to the GEMM, cast or elementwise models moves it).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.step.trace import (ROWWISE_FITTED_PATH as FITTED_PATH, ROWWISE_GATHERED_OP as GATHERED_OP,
                                  ROWWISE_SHARED_OP as SHARED_OP, _ROWWISE_FORMAT, _cast_rows, keep_gathered_whole,
                                  rowwise_calibration as overheads, rowwise_overhead_rows as overhead_rows,
                                  rowwise_uncalibrated as uncalibrated)

__all__ = ["FITTED_PATH", "SHARED_OP", "GATHERED_OP", "overheads", "overhead_rows", "keep_gathered_whole", "uncalibrated",
           "CALIBRATION_PART_TOLERANCE", "calibration_candidates", "linear_time_bias", "calibration_part",
           "calibration_frame", "fit", "scores", "rebuild"]

#: how far (the mean of ``log(predicted / measured)``, either way) the GEMM model of the part named as the
#: microbenchmark's may miss the published bfloat16 linear times (:func:`calibration_part`)
CALIBRATION_PART_TOLERANCE = 0.05


def calibration_candidates() -> dict:
    """The H100s torchao's microbenchmark may have run on, each at the clock it would have run one GEMM at: the catalog
    H100 (SXM5 80GB, 700 W) at its datasheet clock (a burst) and at the share it sustains under GEMM load
    (:data:`perfmodel.step.kernels.SUSTAINED_CLOCK_SHARE`), and the 500 W Grand Teton H100 (96 GB HBM2e) at the share
    FBGEMM's published GEMMs give it (:func:`perfmodel.step.kernels.grand_teton_h100_clock`). Name → spec."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec
    from perfmodel.step.kernels import SUSTAINED_CLOCK_SHARE, at_sustained_clock, grand_teton_h100_clock

    gt = torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit")
    return {"H100 at its datasheet clock": gpu_spec("H100"),
            "H100 at its sustained clock": at_sustained_clock("H100", SUSTAINED_CLOCK_SHARE["H100"]),
            f"{gt.gpu} at its sustained clock": at_sustained_clock(gt, grand_teton_h100_clock())}


def linear_time_bias(spec, linears: pd.DataFrame | None = None) -> float:
    """The mean of ``log(predicted / measured)`` of the GEMM model on ``spec`` over published bfloat16 linear layers'
    forward and backward times (default :func:`perfmodel.datasets.load_torchao_bf16_linears`): per row the three GEMMs
    of an ``m x k`` input through a ``k x n`` weight (the forward, the input gradient, the weight gradient)."""
    from perfmodel.datasets import load_torchao_bf16_linears
    from perfmodel.step.kernels import gemm_seconds

    d = load_torchao_bf16_linears() if linears is None else linears
    need = {"m", "k", "n", "ref_time_ms"}
    if not isinstance(d, pd.DataFrame) or not need <= set(d.columns) or not len(d):
        raise ValueError(f"linear_time_bias needs rows with columns {sorted(need)}; got {type(d).__name__} with "
                         f"columns {sorted(getattr(d, 'columns', []))}.")
    m, k, n = (d[c].to_numpy(float) for c in ("m", "k", "n"))
    gemms = pd.DataFrame({"m": np.concatenate([m, m, k]), "n": np.concatenate([n, k, n]),
                          "k": np.concatenate([k, n, m])})
    t = gemm_seconds(gemms, spec).reshape(3, len(d)).sum(axis=0)
    measured = d["ref_time_ms"].to_numpy(float) / 1e3
    if not (np.isfinite(measured).all() and (measured > 0).all()):
        raise ValueError("linear_time_bias: every ref_time_ms must be a positive number of milliseconds.")
    return float(np.mean(np.log(t / measured)))


def calibration_part():
    """The H100 torchao's row-wise microbenchmark ran on, as perfmodel predicts for it: of
    :func:`calibration_candidates`, the one whose GEMM model best reproduces the bfloat16 linear times its author
    published from the same kind of benchmark a month before the table (:func:`linear_time_bias`: the author of
    the table says so on https://github.com/pytorch/torchtitan/issues/1207, 2025-06-18, "the handy fp8 rowwise speedup
    table I just added"; his benchmarks of the same weeks ran on Grand Teton H100s,
    https://github.com/pytorch/torchtitan/pull/1299).

    Raises
    ------
    ValueError
        When even the best candidate misses those times by more than :data:`CALIBRATION_PART_TOLERANCE`.
    """
    parts = calibration_candidates()
    bias = {name: linear_time_bias(spec) for name, spec in parts.items()}
    best = min(bias, key=lambda name: abs(bias[name]))
    if abs(bias[best]) > CALIBRATION_PART_TOLERANCE:
        misses = ", ".join(f"{k} {v:+.3f}" for k, v in bias.items())
        raise ValueError(f"calibration_part: no candidate H100 reproduces the published bfloat16 linear times within "
                         f"{CALIBRATION_PART_TOLERANCE:.0%} (mean log error {misses}); expected one within it. Check "
                         "perfmodel.datasets.load_torchao_bf16_linears, or pass the part to calibration_frame and fit.")
    return parts[best]


def _subgraph(k: int, n: int):
    import torch

    class LayerNormLinearSigmoid(torch.nn.Module):
        """torchao's microbenchmark subgraph: LayerNorm -> Linear (no bias) -> Sigmoid."""

        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(k)
            self.linear = torch.nn.Linear(k, n, bias=False)

        def forward(self, x):
            return torch.sigmoid(self.linear(self.norm(x)))

    return LayerNormLinearSigmoid()


def calibration_frame(data: pd.DataFrame | None = None, gpu=None, recipe: str = "rowwise") -> pd.DataFrame:
    """Per shape of ``data`` (default :func:`perfmodel.datasets.load_float8_rowwise_linears`): perfmodel's one-GPU step
    of the benchmark subgraph (batch ``M`` of ``K`` features, no optimizer, ``compile=True``) on ``gpu`` (a catalog
    name or a spec; default :func:`calibration_part`) in BF16 (``t_bf16``) and with torchao's ``recipe`` (row-wise by
    default) without the row-wise calibration (``t_fp8``), with the operand elements ``mk``, ``mn``, ``kn`` and the
    measured ``speedup``. About a second per shape."""
    import warnings

    import perfmodel as pm
    from perfmodel.datasets import load_float8_rowwise_linears

    d = load_float8_rowwise_linears() if data is None else data
    gpu = calibration_part() if gpu is None else gpu
    out = []
    with uncalibrated(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in d.itertuples(index=False):
            m, k, n = int(r.m), int(r.k), int(r.n)
            t = {}
            for prec, fp8_recipe in (("bf16", None), ("fp8", recipe)):
                w = pm.Workload(_subgraph(k, n), input_shape=(k,), batch_size=m, precision=prec, optimizer=None,
                                compile=True, fp8_recipe=fp8_recipe)
                t[prec] = pm.predict(w, pm.Cluster(gpu)).step_time_s
            out.append(dict(m=m, k=k, n=n, speedup=float(r.speedup), t_bf16=t["bf16"], t_fp8=t["fp8"],
                            mk=float(m) * k, mn=float(m) * n, kn=float(k) * n))
    return pd.DataFrame(out)


def _bandwidth(gpu: str) -> float:
    """Bytes per second perfmodel's elementwise model moves in a large memory-bound kernel on ``gpu`` (1 GiB)."""
    from perfmodel.step.kernels import kernel_seconds

    one = pd.DataFrame({"dim_n": [4096.0], "phase": ["backward"]})
    row = _cast_rows(one, np.array([float(2**30)]), SHARED_OP, "backward")
    return float(2**30 / np.asarray(kernel_seconds(row, gpu, "fp8"), float)[0])


def fit(frame: pd.DataFrame, gpu=None) -> dict:
    """The calibration from :func:`calibration_frame`'s rows (module docstring): per-element seconds by non-negative
    least squares on the error relative to the measured float8 time, as bytes per element at ``gpu``'s large-kernel
    elementwise bandwidth, and the fixed seconds per linear. ``gpu``: the part the frame was predicted on (default
    :func:`calibration_part`, as :func:`calibration_frame`'s)."""
    from scipy.optimize import nnls

    need = {"speedup", "t_bf16", "t_fp8", "mk", "mn", "kn"}
    if not isinstance(frame, pd.DataFrame) or not need <= set(frame.columns) or len(frame) < 4:
        raise ValueError(f"fit needs calibration_frame's rows (columns {sorted(need)}, at least 4); got "
                         f"{type(frame).__name__} with columns {sorted(getattr(frame, 'columns', []))}.")
    t_meas = frame["t_bf16"].to_numpy(float) / frame["speedup"].to_numpy(float)
    excess = t_meas - frame["t_fp8"].to_numpy(float)
    x = np.column_stack([frame["mk"], frame["mn"], frame["kn"], np.ones(len(frame))]).astype(float)
    coef, _ = nnls(x / t_meas[:, None], excess / t_meas)
    gpu = calibration_part() if gpu is None else gpu
    bw = _bandwidth(gpu)
    return {"bytes_per_element": {"input": float(coef[0] * bw), "grad_output": float(coef[1] * bw),
                                  "weight": float(coef[2] * bw)},
            "seconds_per_element": {"input": float(coef[0]), "grad_output": float(coef[1]), "weight": float(coef[2])},
            "fixed_s": float(coef[3]), "bandwidth_bytes_per_s": bw, "gpu": getattr(gpu, "gpu", gpu),
            "n_shapes": int(len(frame))}


def scores(frame: pd.DataFrame, calibration: dict | None = None) -> pd.DataFrame:
    """Per shape of a :func:`calibration_frame`: the measured speedup, perfmodel's without the calibration
    (``uncalibrated_speedup``) and with it (``calibrated_speedup``: the fitted per-element seconds added, the fixed
    cost not), and the latter's ``error_pct``."""
    c = overheads() if calibration is None else calibration
    s = c["seconds_per_element"]
    extra = s["input"] * frame["mk"] + s["grad_output"] * frame["mn"] + s["weight"] * frame["kn"]
    out = frame[["m", "k", "n", "speedup"]].copy()
    out["uncalibrated_speedup"] = frame["t_bf16"] / frame["t_fp8"]
    out["calibrated_speedup"] = frame["t_bf16"] / (frame["t_fp8"] + extra)
    out["error_pct"] = 100 * (out["calibrated_speedup"] / out["speedup"] - 1)
    return out


def rebuild(path: Path | str = FITTED_PATH) -> dict:
    """Refit on the whole table and write the calibration (JSON) to ``path``."""
    part = calibration_part()
    frame = calibration_frame(gpu=part)
    c = fit(frame, gpu=part)
    s = scores(frame, c)
    big = s["m"] >= 8192
    c.update(format=_ROWWISE_FORMAT,
             fitted_on=("torchao's float8 README, row-wise scaling table (pytorch/ao@6243040, docs/static/"
                        "fp8-rowwise-perf.png; perfmodel.datasets.load_float8_rowwise_linears): the speedup over "
                        "bfloat16 of LayerNorm -> Linear -> Sigmoid, forward + backward, torch.compile, H100, 216 "
                        f"shapes; perfmodel's uncalibrated predictions on {c['gpu']}, the H100 the table's author's "
                        "bfloat16 linear times show (calibration_part, perfmodel.datasets.load_torchao_bf16_linears)"),
             uncalibrated_speedup_mape_pct=float(100 * (s["uncalibrated_speedup"] / s["speedup"] - 1).abs().mean()),
             speedup_mape_pct=float(s["error_pct"].abs().mean()),
             speedup_mape_m_ge_8192_pct=float(s.loc[big, "error_pct"].abs().mean()),
             speedup_worst_pct=float(s["error_pct"].abs().max()))
    Path(path).write_text(json.dumps(c, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    overheads.cache_clear()
    return c


if __name__ == "__main__":  # pragma: no cover
    from perfmodel.step import float8_rowwise as _module  # the module the step imports, not this __main__ copy

    print(json.dumps(_module.rebuild(), indent=1, sort_keys=True))

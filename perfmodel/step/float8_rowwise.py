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
small shapes to 1.73 at large ones, where perfmodel's GEMMs and casts alone predict 0.7 to 1.9.

**Calibration** (:func:`fit`, no training run used): perfmodel predicts each shape's subgraph in BF16 and with the
row-wise recipe without this calibration (:func:`calibration_frame`, the catalog H100); the time the measured speedup
leaves over that prediction, ``t_bf16 / speedup − t_fp8``, is fitted per shape as ``a·M·K + b·M·N + c·K·N + d``
(non-negative least squares on the error relative to the measured float8 time): a cost per element of the input, of
the output gradient and of the weight, and a fixed cost per linear. The per-element costs are turned into bytes at the
bandwidth perfmodel's elementwise model gives a large kernel on that H100 (:data:`FITTED_PATH` keeps them), and every
compiled row-wise step gets, per FP8 linear, one memory-bound kernel in its backward pass moving
``a·M·K + b·M·N + c·K·N`` bytes (:func:`overhead_rows`) — on any GPU at its own bandwidth, at the shapes the GPU runs
(under tensor parallelism its share of the linear, but the operand it holds whole: :func:`keep_gathered_whole`). The
fixed cost (tens of microseconds: the launches of the extra kernels, which a training step's long kernels hide) is
reported, not applied.

:func:`scores` gives the calibrated model's error on the table; torchtitan's row-wise runs
(``perfmodel.papers.external.torchtitan_runs``) are the held-out test. :func:`rebuild` refits
(``python -m perfmodel.step.float8_rowwise``, a few minutes).
"""
from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["FITTED_PATH", "SHARED_OP", "GATHERED_OP", "overheads", "overhead_rows", "keep_gathered_whole", "uncalibrated", "calibration_frame", "fit", "scores", "rebuild"]

#: the shipped calibration
FITTED_PATH = Path(__file__).resolve().parent / "fitted" / "float8_rowwise.json"
#: the GPU the microbenchmark ran on (the catalog part it is predicted on)
CALIBRATION_GPU = "H100"
_FORMAT = 1
_APPLY = True


@functools.lru_cache(maxsize=1)
def overheads() -> dict:
    """The shipped calibration: ``bytes_per_element`` (``input``, ``grad_output``, ``weight``), ``fixed_s`` (not
    applied), ``fitted_on``, ``n_shapes`` and the fit's errors."""
    d = json.loads(FITTED_PATH.read_text(encoding="utf-8"))
    if d.get("format") != _FORMAT:
        raise ValueError(f"{FITTED_PATH} has format {d.get('format')!r}; this perfmodel reads format {_FORMAT}. Rebuild it "
                         "with `python -m perfmodel.step.float8_rowwise`.")
    return d


@contextlib.contextmanager
def uncalibrated():
    """Within the block, compiled row-wise steps get no calibrated kernel (what :func:`calibration_frame` fits on).
    Work already traced and memoised keeps what it had: trace new modules inside."""
    global _APPLY
    before, _APPLY = _APPLY, False
    try:
        yield
    finally:
        _APPLY = before


def _operand_elements(w: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input ``M·K``, output gradient ``M·N``, weight ``K·N``) elements of each forward GEMM row (work rows: ``dim_m``
    the rows, ``dim_n`` the reduction, ``dim_k`` the outputs)."""
    b, m, k, n = (w[c].to_numpy(float) for c in ("dim_b", "dim_m", "dim_n", "dim_k"))
    return b * m * k, b * m * n, k * n


#: op of the calibrated kernel's part that a tensor-parallel rank runs on its share of the linear
SHARED_OP = "float8_rowwise_cast"
#: op of the part on the operand a tensor-parallel rank holds whole: torchtitan runs row-wise float8 with regular
#: tensor parallelism, the activations gathered in BF16 (``parallelize_llama``: "for rowwise recipes, we use regular TP
#: and all-gather happens in high precision"), so a column-parallel linear casts the whole gathered input and a
#: row-parallel one the whole output gradient; :func:`perfmodel.step.parallel.rank_work` keeps this part whole
GATHERED_OP = "float8_rowwise_gathered"


def _row_parallel(fwd: pd.DataFrame) -> np.ndarray:
    """Which forward GEMMs are a row-parallel linear under Megatron-style tensor parallelism: an attention's output
    projection (by name, as :mod:`perfmodel.step.memory` finds it) or a linear whose input is not the hidden state (its
    reduction dimension is not the commonest one: an MLP's down projection)."""
    from perfmodel.step.memory import _OUT_PROJECTION

    k = fwd["dim_n"].to_numpy(float)
    hidden = float(pd.Series(k).mode().iloc[0])
    mods = fwd["module"].astype(str).to_numpy() if "module" in fwd.columns else np.full(len(fwd), "")
    return np.array([bool(_OUT_PROJECTION.search(m)) for m in mods], dtype=bool) | (k != hidden)


def overhead_rows(w: pd.DataFrame) -> pd.DataFrame:
    """Work rows of ``w`` (a compiled step with its FP8 linears marked) plus, per FP8 linear (each forward FP8 GEMM
    whose rows are the tokens), the calibrated memory-bound kernel in the backward pass (module docstring) as two rows:
    :data:`GATHERED_OP` the bytes of the operand a tensor-parallel rank holds whole (a column-parallel linear's input, a
    row-parallel one's output gradient), :data:`SHARED_OP` the rest. Unchanged inside :func:`uncalibrated`."""
    from perfmodel.step.trace import _cast_rows

    if not _APPLY:
        return w
    fwd = w[w["fp8"].to_numpy(bool) & (w["phase"].astype(str) == "forward").to_numpy()]
    if not len(fwd):
        return w
    tokens = float(fwd["dim_m"].mode().iloc[0])
    fwd = fwd[fwd["dim_m"].to_numpy(float) == tokens]
    per = overheads()["bytes_per_element"]
    mk, mn, kn = _operand_elements(fwd)
    row = _row_parallel(fwd)
    x, g, wt = per["input"] * mk, per["grad_output"] * mn, per["weight"] * kn
    gathered = np.where(row, g, x)
    shared = np.where(row, x, g) + wt
    parts = []
    for op, nbytes in ((GATHERED_OP, gathered), (SHARED_OP, shared)):
        keep = nbytes > 0
        if keep.any():
            parts.append(_cast_rows(fwd[keep], nbytes[keep], op, "backward")[w.columns])
    return pd.concat([w, *parts], ignore_index=True) if parts else w


def keep_gathered_whole(work: pd.DataFrame, tp: int) -> pd.DataFrame:
    """A tensor-parallel rank's work rows after the split divided every row of a split module by ``tp``: the
    :data:`GATHERED_OP` rows back to their whole size (the operand the rank holds whole)."""
    if tp <= 1 or "op" not in work.columns:
        return work
    at = (work["op"].astype(str) == GATHERED_OP).to_numpy()
    if not at.any():
        return work
    w = work.copy()
    for c in ("flops", "bytes", "tiles", "dim_m"):
        w.loc[at, c] = w.loc[at, c] * tp
    return w


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


def calibration_frame(data: pd.DataFrame | None = None, gpu: str = CALIBRATION_GPU) -> pd.DataFrame:
    """Per shape of ``data`` (default :func:`perfmodel.datasets.load_float8_rowwise_linears`): perfmodel's one-GPU step
    of the benchmark subgraph (batch ``M`` of ``K`` features, no optimizer, ``compile=True``) on ``gpu`` in BF16
    (``t_bf16``) and with torchao's row-wise recipe without the calibration (``t_fp8``), with the operand elements
    ``mk``, ``mn``, ``kn`` and the measured ``speedup``. About a second per shape."""
    import warnings

    import perfmodel as pm
    from perfmodel.datasets import load_float8_rowwise_linears

    d = load_float8_rowwise_linears() if data is None else data
    out = []
    with uncalibrated(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in d.itertuples(index=False):
            m, k, n = int(r.m), int(r.k), int(r.n)
            t = {}
            for prec, recipe in (("bf16", None), ("fp8", "rowwise")):
                w = pm.Workload(_subgraph(k, n), input_shape=(k,), batch_size=m, precision=prec, optimizer=None,
                                compile=True, fp8_recipe=recipe)
                t[prec] = pm.predict(w, pm.Cluster(gpu)).step_time_s
            out.append(dict(m=m, k=k, n=n, speedup=float(r.speedup), t_bf16=t["bf16"], t_fp8=t["fp8"],
                            mk=float(m) * k, mn=float(m) * n, kn=float(k) * n))
    return pd.DataFrame(out)


def _bandwidth(gpu: str) -> float:
    """Bytes per second perfmodel's elementwise model moves in a large memory-bound kernel on ``gpu`` (1 GiB)."""
    from perfmodel.step.kernels import kernel_seconds
    from perfmodel.step.trace import _cast_rows

    one = pd.DataFrame({"dim_n": [4096.0], "phase": ["backward"]})
    row = _cast_rows(one, np.array([float(2**30)]), "float8_rowwise_cast", "backward")
    return float(2**30 / np.asarray(kernel_seconds(row, gpu, "fp8"), float)[0])


def fit(frame: pd.DataFrame, gpu: str = CALIBRATION_GPU) -> dict:
    """The calibration from :func:`calibration_frame`'s rows (module docstring): per-element seconds by non-negative
    least squares on the error relative to the measured float8 time, as bytes per element at ``gpu``'s large-kernel
    elementwise bandwidth, and the fixed seconds per linear."""
    from scipy.optimize import nnls

    need = {"speedup", "t_bf16", "t_fp8", "mk", "mn", "kn"}
    if not isinstance(frame, pd.DataFrame) or not need <= set(frame.columns) or len(frame) < 4:
        raise ValueError(f"fit needs calibration_frame's rows (columns {sorted(need)}, at least 4); got "
                         f"{type(frame).__name__} with columns {sorted(getattr(frame, 'columns', []))}.")
    t_meas = frame["t_bf16"].to_numpy(float) / frame["speedup"].to_numpy(float)
    excess = t_meas - frame["t_fp8"].to_numpy(float)
    x = np.column_stack([frame["mk"], frame["mn"], frame["kn"], np.ones(len(frame))]).astype(float)
    coef, _ = nnls(x / t_meas[:, None], excess / t_meas)
    bw = _bandwidth(gpu)
    return {"bytes_per_element": {"input": float(coef[0] * bw), "grad_output": float(coef[1] * bw),
                                  "weight": float(coef[2] * bw)},
            "seconds_per_element": {"input": float(coef[0]), "grad_output": float(coef[1]), "weight": float(coef[2])},
            "fixed_s": float(coef[3]), "bandwidth_bytes_per_s": bw, "gpu": gpu, "n_shapes": int(len(frame))}


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
    frame = calibration_frame()
    c = fit(frame)
    s = scores(frame, c)
    big = s["m"] >= 8192
    c.update(format=_FORMAT,
             fitted_on=("torchao's float8 README, row-wise scaling table (pytorch/ao@6243040, docs/static/"
                        "fp8-rowwise-perf.png; perfmodel.datasets.load_float8_rowwise_linears): the speedup over "
                        "bfloat16 of LayerNorm -> Linear -> Sigmoid, forward + backward, torch.compile, H100, 216 "
                        "shapes; perfmodel's uncalibrated predictions on the catalog H100"),
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

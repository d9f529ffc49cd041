"""One step: the kernels of a traced workload summed on one GPU (they run back to back on one stream), and the
forward pass that activation checkpointing recomputes, added to the rows of a step on one GPU or many
(:func:`add_recompute`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.step.kernels import (_extrapolation_notes, _warn_extrapolation, conformal_interval, gpu_specs, kernel_seconds,
                                    learned_on, source_phrase)
from perfmodel.step.strategy import PIPELINE_SCHEDULES, context_parallel_shape, parse_strategy
from perfmodel.step.trace import context_parallel_work, model_and_layout, model_input, op_layer, recompute_mask, step_ops, step_work

__all__ = ["add_recompute", "single_gpu_rows"]


#: what ``basis`` says each checkpointing mode recomputes (:func:`perfmodel._workload.checkpointing_mode`).
RECOMPUTE_BASIS = {
    "full": "the forward pass recomputed in the backward pass",
    "selective": "selective: the forward operators (or layers) it does not keep recomputed in the backward pass",
    "attention": ("Megatron's selective recomputation: each layer's core attention (query-key product, softmax, "
                  "attention dropout, product with the values) recomputed in the backward pass"),
}


def add_recompute(frame: pd.DataFrame, *, alpha: float = 0.2, fraction=1.0, detail: bool = False,
                  mode: str | None = None) -> pd.DataFrame:
    """:func:`predict_step_time` rows with activation checkpointing: the forward pass run once more during the backward
    pass.

    * one GPU, ``"dp"``, ``"fsdp"``, ``"tp"``: ``forward_s`` (already the forward pass of every micro-batch of one
      GPU) is added to ``backward_s``, ``step_time_s`` and ``compute_s``;
    * ``"pp"``: every stage's 1F1B slot grows by its forward pass; with ``forward_s`` the ``m`` forward passes of the
      slowest stage ``f``, the step grows by ``(m + p − 1)·f`` and the bubble by ``(p − 1)·f`` (equal stages).

    ``fraction`` (a number or one per row): the share of the forward pass recomputed — 1 for full checkpointing, the
    recomputed operators' share of the forward kernel time for selective checkpointing (:func:`checkpointing_mode`).

    ``detail=True`` adds ``recompute_s``: the seconds the step grew by. ``mode`` (:func:`checkpointing_mode`) names
    what is recomputed in ``basis`` (None: from ``fraction``, full or selective).

    The interval grows with the compute (``lower_s`` by ``e^{−q}`` times the recompute, ``upper_s`` by ``e^{q}``).
    Not credited: a longer backward pass hides more of DDP's all-reduce, FSDP gathers the parameters again and tensor
    parallelism repeats its forward all-reduces for the recompute; the predicted step is therefore an upper bound for
    those effects.
    """
    if not isinstance(frame, pd.DataFrame) or not {"forward_s", "backward_s", "step_time_s"} <= set(frame.columns):
        raise ValueError("add_recompute needs the frame of perfmodel.predict_step_time (columns forward_s, backward_s, "
                         "step_time_s).")
    if set(frame.get("optimizer", pd.Series(dtype=object))) & {"inference"}:
        raise ValueError("add_recompute: an inference row has no backward pass to recompute in; predict a training step.")
    out = frame.copy()
    fwd = out["forward_s"].to_numpy(float) * np.broadcast_to(np.asarray(fraction, float), (len(out),))
    extra = fwd.copy()
    if "strategy" in out.columns:
        # pipeline degree: all the GPUs for "pp", the pp factor of a combination ("dp2-pp2")
        p = np.array([k if s == "pp" else parse_strategy(s, int(k))["pp"] for s, k in zip(out["strategy"], out["n_gpus"])], dtype=float)
        pp = (out["strategy"] == "pp").to_numpy() | (p > 1)
        m = out["micro_batches"].to_numpy(float)
        # interleaved 1F1B: the fill and drain are v times shorter (perfmodel.step.parallel.pipeline_time), v the
        # model chunks per rank of the row (virtual_stages), 2 for a frame that names only the schedule
        v = (out["virtual_stages"].fillna(1).to_numpy(float) if "virtual_stages" in out.columns else
             out["pipeline_schedule"].map(PIPELINE_SCHEDULES).fillna(1).to_numpy(float)
             if "pipeline_schedule" in out.columns else np.ones(len(out)))
        extra = np.where(pp, (m + (p - 1) / v) * fwd / m, fwd)
        out["bubble_s"] = out["bubble_s"].to_numpy(float) + np.where(pp, (p - 1) / v * fwd / m, 0.0)
        out["compute_s"] = out["compute_s"].to_numpy(float) + fwd  # pp: step − comm − bubble grows by m·f = forward_s
    q, _ = conformal_interval(alpha)
    out["backward_s"] = out["backward_s"].to_numpy(float) + fwd
    out["step_time_s"] = out["step_time_s"].to_numpy(float) + extra
    out["lower_s"] = out["lower_s"].to_numpy(float) + extra * np.exp(-q)
    out["upper_s"] = out["upper_s"].to_numpy(float) + extra * np.exp(q)
    what = RECOMPUTE_BASIS.get(mode) or RECOMPUTE_BASIS["full" if np.all(np.asarray(fraction) == 1.0) else "selective"]
    out["basis"] = out["basis"].astype(str) + f"; activation checkpointing: {what}"
    if detail:
        out["recompute_s"] = extra
    return out


def _recompute_fraction(w, clusters, mode, *, frame) -> np.ndarray:
    """Per row of ``frame`` (one per cluster): the share of one GPU's forward kernel time that checkpointing ``mode``
    (``"selective"``, ``"attention"`` or ``"layer:N"``) recomputes (:func:`recompute_mask`), on that row's GPU at its per-GPU
    micro-batch (a context-parallel rank's shard of the sequence)."""
    net, shape, in_dtype, vocab, name, lay = model_and_layout(w.model, w.input_shape, w.input_dtype)
    high = int(w.input_high) if w.input_high is not None else vocab
    prec, compile = w.precision, w.stack
    specs = gpu_specs([c.gpu for c in clusters], prec)
    out = []
    for spec, r in zip(specs, frame.itertuples(index=False)):
        n = int(getattr(r, "n_gpus", 1))
        m = int(getattr(r, "micro_batches", 1))
        deg = parse_strategy(getattr(r, "strategy", "dp"), n) if n > 1 else dict(dp=1, cp=1, name="dp")
        b = max(int(r.batch_size) // deg["dp"] // m, 1)
        rank_shape = context_parallel_shape(shape, in_dtype, deg["cp"], deg["name"])
        work = step_work(net, rank_shape, in_dtype, high, batch_size=b, prec=prec, optimizer=None, inference=False,
                          compile=compile, recipe=w.fp8_recipe)
        if deg["cp"] > 1:
            work = context_parallel_work(work, deg["cp"], lay)
        t = kernel_seconds(work, spec, prec)
        layer = op_layer(work, lay.n_layers)
        fwd = work["phase"].astype(str).to_numpy() == "forward"
        total = float(t[fwd].sum())
        out.append(float(t[recompute_mask(mode, work, layer, lay.n_layers)].sum()) / total if total > 0 else 0.0)
    return np.array(out)


def single_gpu_rows(w, clusters, *, alpha: float) -> pd.DataFrame:
    """The step of the workload ``w`` on the GPU of each cluster of ``clusters`` (one GPU each; ``w`` checked by
    :func:`perfmodel.step.step_time.step_rows`): the kernels of the traced step
    (:func:`perfmodel.step.trace.step_work`) run back to back on one stream, each predicted by
    :func:`perfmodel.step.kernels.kernel_seconds`; one row per cluster (see ``predict_step_time``)."""
    prec, optimizer, inference, batch_size, compile = w.precision, w.optimizer, w.inference, w.batch_size, w.stack
    specs = gpu_specs([c.gpu for c in clusters], prec)
    net, shape, in_dtype, vocab, name = model_input(w.model, w.input_shape, w.input_dtype)
    high = int(w.input_high) if w.input_high is not None else vocab
    ops = step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)
    work = step_work(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference,
                      compile=compile, recipe=w.fp8_recipe)
    if work.empty:
        raise ValueError(f"{name} launches no kernel in a training step (no operator moves data): nothing to predict.")
    q, interval = conformal_interval(alpha)
    rows, far = [], []
    for s in specs:
        t, source = kernel_seconds(work, s, prec, with_source=True)
        source = source_phrase(source)
        by_phase = pd.Series(t).groupby(work["phase"].to_numpy()).sum()
        total = float(t.sum())
        far += _extrapolation_notes(s, prec)
        rows.append(dict(model=name, gpu=s.gpu, batch_size=int(batch_size), precision=prec,
                         optimizer="inference" if inference else (optimizer or "none"),
                         step_time_s=total, lower_s=total * np.exp(-q), upper_s=total * np.exp(q),
                         forward_s=float(by_phase.get("forward", 0.0)), backward_s=float(by_phase.get("backward", 0.0)),
                         optimizer_s=float(by_phase.get("optimizer", 0.0)), n_kernels=len(work),
                         flops=float(ops["flops"].sum()),
                         basis=f"sum of {len(work)} operators, each roofline x efficiency {learned_on(prec)}{source}; "
                               f"interval: {interval}"))
    _warn_extrapolation(far, prec)
    return pd.DataFrame(rows)

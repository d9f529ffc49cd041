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
from perfmodel.step.trace import context_parallel_work, experts_note, model_and_layout, model_input, op_layer, recompute_mask, step_ops, step_work

__all__ = ["add_recompute", "recompute_comm", "single_gpu_rows"]


#: what ``basis`` says each checkpointing mode recomputes (:func:`perfmodel._workload.checkpointing_mode`).
RECOMPUTE_BASIS = {
    "full": "the forward pass recomputed in the backward pass",
    "selective": "selective: the forward operators (or layers) it does not keep recomputed in the backward pass",
    "attention": ("Megatron's selective recomputation: each layer's core attention (query-key product, softmax, "
                  "attention dropout, product with the values) recomputed in the backward pass"),
}


def add_recompute(frame: pd.DataFrame, *, alpha: float = 0.2, fraction=1.0, detail: bool = False,
                  mode: str | None = None, comm_rerun=None) -> pd.DataFrame:
    """:func:`predict_step_time` rows with activation checkpointing: the forward pass run once more during the backward
    pass.

    * one GPU, ``"dp"``, ``"fsdp"``, ``"tp"``: ``forward_s`` (already the forward pass of every micro-batch of one
      GPU) is added to ``backward_s``, ``step_time_s`` and ``compute_s`` — less ``forward_copy_out_s`` where the frame
      has it (FSDP2's all-gather copy-outs: a recomputed layer reads the parameters gathered for its backward pass),
      and with ``mode="selective"`` less ``forward_tp_reduce_s`` (asynchronous TP's reductions: torchtitan's policy
      keeps the reduce-scatters' outputs, ``_save_list`` in torchtitan/models/llama3/parallelize_llama.py at 820504e);
    * ``"pp"``: every stage's 1F1B slot grows by its forward pass; with ``forward_s`` the ``m`` forward passes of the
      slowest stage ``f``, the step grows by ``(m + p − 1)·f`` and the bubble by ``(p − 1)·f`` (equal stages).

    ``fraction`` (a number or one per row): the share of the forward pass recomputed — 1 for full checkpointing, the
    recomputed operators' share of the forward kernel time for selective checkpointing (:func:`checkpointing_mode`).

    ``detail=True`` adds ``recompute_s``: the seconds the step grew by. ``mode`` (:func:`checkpointing_mode`) names
    what is recomputed in ``basis`` (None: from ``fraction``, full or selective).

    ``comm_rerun`` (None, a number or a dict ``{"tp": ..., "cp": ...}`` of numbers or one per row; seconds, every
    micro-batch's like ``forward_s``): the exposed communication the recomputed forward operators run again — the
    tensor-parallel collectives of the recomputed layers and context parallelism's K/V exchanges
    (:func:`recompute_comm`). It joins the recompute on the critical path (a pipeline's slot grows by it as by the
    forward pass), ``comm_s`` and ``comm_total_s`` (and each group's share with ``detail``), not ``compute_s`` nor
    ``backward_s``; the interval does not widen with it.

    The interval grows with the compute (``lower_s`` by ``e^{−q}`` times the recompute, ``upper_s`` by ``e^{q}``).
    Not credited: a longer backward pass hides more of DDP's all-reduce (the predicted step is an upper bound for
    that). FSDP does not gather again for the recompute: a layer is recomputed inside its own backward pass, after its
    parameters were gathered for it.
    """
    if not isinstance(frame, pd.DataFrame) or not {"forward_s", "backward_s", "step_time_s"} <= set(frame.columns):
        raise ValueError("add_recompute needs the frame of perfmodel.predict_step_time (columns forward_s, backward_s, "
                         "step_time_s).")
    if set(frame.get("optimizer", pd.Series(dtype=object))) & {"inference"}:
        raise ValueError("add_recompute: an inference row has no backward pass to recompute in; predict a training step.")
    out = frame.copy()
    # FSDP2's copy-outs are part of the forward pass, not of what checkpointing recomputes; nor, under torchtitan's
    # selective policy, asynchronous TP's reductions (it keeps the reduce-scatters' outputs)
    kept_cols = ["forward_copy_out_s"] + (["forward_tp_reduce_s"] if mode == "selective" else [])
    kept = sum((out[c].fillna(0.0).to_numpy(float) for c in kept_cols if c in out.columns), 0.0)
    fwd = (out["forward_s"].to_numpy(float) - kept) * np.broadcast_to(np.asarray(fraction, float), (len(out),))
    rerun = {g: np.broadcast_to(np.asarray(v, float), (len(out),)).astype(float)
             for g, v in (comm_rerun if isinstance(comm_rerun, dict) else {"tp": comm_rerun or 0.0}).items()}
    comm = sum(rerun.values()) if rerun else np.zeros(len(out))
    if not np.all(np.isfinite(comm)) or np.any(comm < 0):
        raise ValueError(f"add_recompute: comm_rerun must be finite seconds >= 0; got {comm_rerun!r}.")
    extra = fwd + comm
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
        extra = np.where(pp, (m + (p - 1) / v) * (fwd + comm) / m, fwd + comm)
        out["bubble_s"] = out["bubble_s"].to_numpy(float) + np.where(pp, (p - 1) / v * (fwd + comm) / m, 0.0)
        out["compute_s"] = out["compute_s"].to_numpy(float) + fwd  # pp: step − comm − bubble grows by m·f = forward_s
    if "comm_s" in out.columns:
        out["comm_s"] = out["comm_s"].to_numpy(float) + comm
        out["comm_total_s"] = out["comm_total_s"].to_numpy(float) + comm
        for col in ("comm_by_group_s", "comm_total_by_group_s"):
            if col in out.columns:
                out[col] = [{g: x + float(rerun[g][i]) if g in rerun else x for g, x in d.items()}
                            for i, d in enumerate(out[col])]
    # the compute part of what the step grew by: the interval is on the compute only
    grown = np.where(extra > 0, fwd / np.where(fwd + comm > 0, fwd + comm, 1.0), 0.0) * extra
    q, _ = conformal_interval(alpha)
    out["backward_s"] = out["backward_s"].to_numpy(float) + fwd
    out["step_time_s"] = out["step_time_s"].to_numpy(float) + extra
    out["lower_s"] = out["lower_s"].to_numpy(float) + grown * np.exp(-q) + (extra - grown)
    out["upper_s"] = out["upper_s"].to_numpy(float) + grown * np.exp(q) + (extra - grown)
    what = RECOMPUTE_BASIS.get(mode) or RECOMPUTE_BASIS["full" if np.all(np.asarray(fraction) == 1.0) else "selective"]
    again = [g for g in ("tp", "cp", "ep") if g in rerun and np.any(rerun[g] > 0)]
    if again:
        what += (", with the " + " and ".join({"tp": "tensor-parallel collectives", "cp": "context-parallel K/V exchanges",
                                               "ep": "expert-parallel all-to-alls"}[g]
                                              for g in again) + " of what it recomputes run again")
    out["basis"] = out["basis"].astype(str) + f"; activation checkpointing: {what}"
    if detail:
        out["recompute_s"] = extra
    return out


def recompute_comm(frame: pd.DataFrame, mode: str, n_layers: int | None = None) -> dict:
    """The exposed communication that checkpointing ``mode`` (:func:`perfmodel._workload.checkpointing_mode`) runs
    again, per row of a parallel step frame without checkpointing (seconds, every micro-batch's; ``{"tp": ...,
    "cp": ...}``), from its ``comm_tp_forward_s`` / ``comm_cp_forward_s`` (the forward pass's per-layer collectives on
    the critical path; 0 for a frame without them):

    * ``"full"``: every layer's forward pass again, its tensor-parallel collectives and context parallelism's K/V
      all-gathers with it;
    * ``"layer:N"``: those of the checkpointed layers (:func:`perfmodel.step.trace.checkpointed_layers` of the
      model's ``n_layers``, which only this mode reads);
    * ``"selective"`` (torchtitan's per-operator policy): its save list keeps the reduce-scatters' outputs (and the
      fused attention's, inside which context parallelism exchanges K/V), so with sequence parallelism only the
      all-gathers run again — half of each collective's time (an all-reduce is a reduce-scatter and an all-gather of
      the same bytes); without it the all-reduces' outputs are not kept and all run again;
    * ``"attention"`` (Megatron's selective recomputation): the core attention only, no tensor-parallel collective;
      with context parallelism its K/V exchange runs again.

    Expert parallelism's all-to-alls (``comm_ep_forward_s``) run again with the layers ``"full"`` and ``"layer:N"``
    recompute; the selective policies are taken to run no MoE dispatch again (Megatron's recomputes the core attention
    only; torchtitan's per-operator policy is assumed to keep the all-to-alls' outputs as it keeps the
    reduce-scatters').
    """
    from perfmodel.step.trace import checkpointed_layers

    n = len(frame)
    tp = frame["comm_tp_forward_s"].to_numpy(float) if "comm_tp_forward_s" in frame.columns else np.zeros(n)
    cp = frame["comm_cp_forward_s"].to_numpy(float) if "comm_cp_forward_s" in frame.columns else np.zeros(n)
    ep = frame["comm_ep_forward_s"].to_numpy(float) if "comm_ep_forward_s" in frame.columns else np.zeros(n)
    sp = (frame["sequence_parallel"].fillna(False).astype(bool).to_numpy() if "sequence_parallel" in frame.columns
          else np.zeros(n, bool))
    share_ep = np.ones(n) if mode == "full" else np.zeros(n)
    if mode == "full":
        share_tp, share_cp = np.ones(n), np.ones(n)
    elif isinstance(mode, str) and mode.startswith("layer:"):
        if n_layers is None:
            raise ValueError(f"recompute_comm: mode {mode!r} checkpoints every N-th layer and needs the model's layer "
                             "count; pass n_layers=.")
        k = float(checkpointed_layers(mode, max(int(n_layers), 1)).mean())
        share_tp, share_cp, share_ep = np.full(n, k), np.full(n, k), np.full(n, k)
    elif mode == "selective":
        share_tp, share_cp = np.where(sp, 0.5, 1.0), np.zeros(n)
    elif mode == "attention":
        share_tp, share_cp = np.zeros(n), np.ones(n)
    else:
        raise ValueError(f"recompute_comm: unknown checkpointing mode {mode!r}; expected 'full', 'selective', "
                         "'attention' or 'layer:N'.")
    return {"tp": share_tp * tp, "cp": share_cp * cp, "ep": share_ep * ep}


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
                          compile=(compile, w.compile_scope), recipe=w.fp8_recipe)
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
                      compile=(compile, w.compile_scope), recipe=w.fp8_recipe)
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
                         basis=f"sum of {len(work)} operators, each roofline x efficiency {learned_on(prec)}{source}"
                               f"{experts_note(work)}; interval: {interval}"))
    _warn_extrapolation(far, prec)
    return pd.DataFrame(rows)

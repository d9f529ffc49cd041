"""The layouts of a large run searched in one call: FSDP (with tensor and pipeline parallelism, as torchtitan runs it)
and Megatron-Core's data x context x tensor x pipeline layouts with interleaved chunks, each checked for memory first
and the ones that fit predicted (:func:`search_layouts`).

A layout is a :class:`perfmodel.Parallelism`; :func:`layout_candidates` lists the ones worth trying on a
:class:`perfmodel.Cluster` for a :class:`perfmodel.Workload` — tensor parallel inside a node only (Narayanan et al.,
SC 2021, takeaway 1) and dividing the attention and key/value heads, pipeline stages that divide the layers, context
parallel for long sequences, Megatron's micro-batch of one sample and as many interleaved chunks as divide a stage —
and :func:`search_layouts` predicts each with :func:`perfmodel.predict`, recomputing no more than it must to fit and
sharding the gradients (ZeRO-2, :attr:`perfmodel.Parallelism.shard_gradients`) only where whole ones do not fit.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

__all__ = ["layout_candidates", "search_layouts", "LAYOUT_COLUMNS"]

#: columns of :func:`search_layouts`.
LAYOUT_COLUMNS = ["framework", "strategy", "micro_batches", "pipeline_schedule", "virtual_stages", "pipeline_layers",
                  "activation_checkpointing", "shard_gradients",
                  "async_tp", "expert_tensor_parallel", "moe_dispatcher", "step_time_s", "lower_s", "upper_s", "tokens_per_s", "mfu", "comm_s", "bubble_s",
                  "memory_per_gpu_bytes", "capacity_bytes", "fits", "usd_per_gpu_h", "cost_per_step_usd", "parallelism"]

#: interleaved chunks Megatron's recipes run, the largest that divides a stage's layers is taken
_VIRTUAL = (5, 4, 3, 2)


def _chunks_fit(n_layers: int, p: int, k: int, extra: int) -> bool:
    """Whether ``n_layers`` plus ``extra`` layer slots (2: the embedding and the loss counted as a layer each,
    ``--account-for-embedding/loss-in-pipeline-split``) divide into ``p·k`` chunks, each with a transformer layer of
    its own beside them."""
    return (n_layers + extra) % (p * k) == 0 and (n_layers + extra) // (p * k) > extra // 2


def _one_f_one_b(n_layers: int, p: int) -> tuple:
    """(None, :attr:`perfmodel.Parallelism.pipeline_layers`) of Megatron's 1F1B over ``p`` ranks: the layers split
    evenly, or with the embedding and the loss counted as a layer each where only that divides, else as evenly as
    they go (as ``basis`` says)."""
    if n_layers % p and _chunks_fit(n_layers, p, 1, 2):
        return None, {"embedding": True, "loss": True}
    return None, None


def _megatron_pipeline(n_layers: int, p: int) -> tuple:
    """(model chunks per rank or None, :attr:`perfmodel.Parallelism.pipeline_layers`) of a Megatron-Core pipeline of
    ``p`` ranks that Megatron runs: the most chunks of :data:`_VIRTUAL` the layers divide into; else the most that the
    layers plus the embedding and the loss, each counted as a layer (``--account-for-embedding/loss-in-pipeline-split``,
    Megatron-Bridge's balancing), divide into; else 1F1B (:func:`_one_f_one_b`)."""
    if p <= 1:
        return None, None
    for extra, split in ((0, None), (2, {"embedding": True, "loss": True})):
        k = next((k for k in _VIRTUAL if _chunks_fit(n_layers, p, k, extra)), None)
        if k:
            return k, split
    return _one_f_one_b(n_layers, p)


def _megatron_pipelines(n_layers: int, p: int, chunks=None) -> list:
    """The ``(model chunks per rank or None, pipeline_layers)`` pairs :func:`layout_candidates` tries for a
    Megatron-Core pipeline of ``p`` ranks: :func:`_megatron_pipeline`'s one, or, with ``chunks`` (chunk counts asked,
    1 for the plain 1F1B schedule, which always runs: :func:`_one_f_one_b`), each of them Megatron runs — the layers
    dividing into ``p·k`` chunks, or the layers plus the embedding and the loss counted as a layer each
    (:func:`_chunks_fit`)."""
    if p <= 1:
        return [(None, None)]
    if chunks is None:
        return [_megatron_pipeline(n_layers, p)]
    out = []
    for k in chunks:
        pair = _one_f_one_b(n_layers, p) if k == 1 else next(
            ((k, split) for extra, split in ((0, None), (2, {"embedding": True, "loss": True}))
             if _chunks_fit(n_layers, p, k, extra)), None)
        if pair is not None and pair not in out:
            out.append(pair)
    return out


def _positive_ints(values, what: str, example: str) -> list | None:
    """``values`` (one number, or any sequence or set of them) as a list of distinct positive whole numbers in the
    order given (a set's sorted), None for the default, or a ValueError naming ``what``."""
    if values is None:
        return None
    vals = [values] if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") else list(values)
    if not vals or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in vals):
        raise ValueError(f"{what} must list positive whole numbers, e.g. {example}; got {values!r}.")
    vals = [int(v) for v in vals]
    return sorted(set(vals)) if isinstance(values, (set, frozenset)) else list(dict.fromkeys(vals))


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def layout_candidates(workload, cluster, *, frameworks=("pytorch", "megatron"), tensor_parallel=None,
                      pipeline_parallel=None, context_parallel=None, activation_checkpointing=(False, "selective", "full"),
                      shard_gradients=(None, True), expert_parallel=None, expert_load_imbalance: float = 1.0,
                      overlap_moe_dispatch: bool = False, expert_tensor_parallel=None,
                      moe_dispatcher: str | None = "alltoall", virtual_stages=None, micro_batch_size=None) -> list:
    """The :class:`perfmodel.Parallelism` layouts worth trying for ``workload`` on ``cluster``.

    Parameters
    ----------
    workload : Workload
        A token model (``input_shape=(seq_len,)``) with a global ``batch_size``.
    cluster : Cluster
        GPUs, per node, links.
    frameworks : sequence of {"pytorch", "megatron"}
        ``"pytorch"``: FSDP over the data-parallel ranks, with tensor and pipeline parallelism (torchtitan's 1D, 2D, 3D;
        as many micro-batches as stages). ``"megatron"``: data x context x tensor x pipeline on Transformer Engine's
        modules (unless the workload names a kernel family: Megatron-Core's default) with the distributed
        optimizer, sequence parallelism, TP communication overlapped with its GEMMs where ``tp > 1``, micro-batches of
        one sample and the interleaved schedule with the most chunks of (5, 4, 3, 2) that divide a stage's layers —
        or, where none does, that divide them with the embedding and the loss counted as a layer each (Megatron's
        ``--account-for-embedding/loss-in-pipeline-split``, ``pipeline_layers``), as Megatron needs the layers to
        divide (:func:`_megatron_pipeline`).
    tensor_parallel, pipeline_parallel, context_parallel, expert_parallel : sequence of int, optional
        Degrees to try; default tensor parallel the divisors of ``gpus_per_node`` that divide the heads and key/value
        heads, pipeline 1, 2, 4, 8, 16 (at most a stage per layer), context parallel 1
        and, for sequences of 8192 tokens or more, 2; expert parallel (a mixture of experts only) 1, the widest that
        stays in a node and the widest there is, each dividing the experts and the ranks it is carved from — the
        ``tp·dp·cp`` ranks with each expert whole, the ``dp·cp`` ones with the experts split over the tensor-parallel
        ranks (an ``ep`` that divides neither is skipped; with tensor parallelism, whole experts and no data-parallel
        ranks, only ``ep = tp``).
    activation_checkpointing : sequence
        Policies to try, least recomputation first (:func:`search_layouts` keeps the first that fits). ``"selective"``
        is each framework's own: torchtitan's per-operator policy on PyTorch layouts, Megatron's core-attention
        recomputation on Megatron ones (:func:`perfmodel._workload.checkpointing_mode`).
    shard_gradients : sequence of {None, True}
        How to hold the gradients, tried in this order at each policy (:func:`search_layouts` keeps the first that
        fits): None the execution's own (whole gradients, reduced once per step, under Megatron's distributed optimizer
        and FSDP with a pipeline; each micro-batch's reduce-scattered into the shard under flat FSDP), True ZeRO-2
        (:attr:`perfmodel.Parallelism.shard_gradients`: a reduce-scatter per micro-batch for the memory of the whole
        gradients). True is listed only where it differs from the execution's own and the layout can run it (a
        sharded optimizer and data-parallel ranks to shard over).
    expert_load_imbalance : float, default 1.0
        The busiest expert-parallel rank's routed tokens over the mean, given to every layout with ``ep``
        (:attr:`perfmodel.Parallelism.expert_load_imbalance`).
    overlap_moe_dispatch : bool, default False
        Megatron-Core's EP overlap for every Megatron layout with ``ep``
        (:attr:`perfmodel.Parallelism.overlap_moe_dispatch`; PyTorch's layouts have none).
    moe_dispatcher : {"alltoall", "deepep", None}, default "alltoall"
        How every Megatron layout with ``ep`` and whole experts dispatches its tokens
        (:attr:`perfmodel.Parallelism.moe_dispatcher`; PyTorch's layouts and split experts: all-to-alls); None tries
        each (:func:`search_layouts` records where the cluster cannot run DeepEP).
    expert_tensor_parallel : {None, 1, "tp"}, optional
        A mixture of experts' layouts with tensor parallelism: each routed expert whole on its rank (1), split over the
        tensor-parallel ranks (``"tp"``, Megatron layouts only: :attr:`perfmodel.Parallelism.expert_tensor_parallel`),
        or None (default) both, where the layout allows.
    virtual_stages : sequence of int, optional
        Model chunks per pipeline rank to try on Megatron layouts with a pipeline, each as a layout of its own (1: the
        plain 1F1B schedule; e.g. ``(1, 2, 4, 5, 8)``); a count is tried where Megatron runs it (the layers, or the
        layers with the embedding and the loss counted as a layer each, divide into ``pp·k`` chunks). Default: the one
        described under ``frameworks``.
    micro_batch_size : sequence of int, optional
        Samples per micro-batch to try on Megatron layouts (``--micro-batch-size``), each dividing the batch of a
        data-parallel rank; default ``(1,)``. PyTorch layouts keep torchtitan's micro-batches (as many as stages).

    Returns
    -------
    list of Parallelism
        Every layout whose degrees multiply to the GPUs and split the batch; the model checks (heads, layers, sequence)
        are :func:`perfmodel.predict`'s.
    """
    from perfmodel._run import Cluster
    from perfmodel._workload import Workload
    from perfmodel.step.strategy import check_framework
    from perfmodel.step.trace import model_and_layout

    if not isinstance(workload, Workload) or not isinstance(cluster, Cluster):
        raise TypeError("layout_candidates(workload, cluster): pass a pm.Workload and a pm.Cluster; got "
                        f"{type(workload).__name__} and {type(cluster).__name__}.")
    fws = [check_framework(f) for f in (frameworks if isinstance(frameworks, (list, tuple)) else (frameworks,))]
    kw = workload.values()
    _, shape, _, _, name, lay = model_and_layout(workload.model, kw.get("input_shape"), kw.get("input_dtype"))
    if len(tuple(shape)) != 1 or not lay.n_layers:
        raise ValueError(f"layout_candidates searches the layouts of a transformer language model (input_shape=(seq_len,) "
                         f"and repeated layers); {name} has input {tuple(shape)} and {lay.n_layers} repeated layers. Use "
                         "pm.explore_strategies for other models.")
    n, g, B, s = int(cluster.n_gpus), int(cluster.gpus_per_node), int(kw.get("batch_size", 1)), int(shape[0])
    heads = [h for h in (lay.heads, lay.kv_heads) if h]
    tps = tensor_parallel or [t for t in _divisors(g) if all(h % t == 0 for h in heads)]
    pps = pipeline_parallel or [p for p in (1, 2, 4, 8, 16) if p <= lay.n_layers]
    cps = context_parallel or ([1, 2] if s >= 8192 else [1])
    acs = list(activation_checkpointing) if isinstance(activation_checkpointing, (list, tuple)) else [activation_checkpointing]
    sgs = list(shard_gradients) if isinstance(shard_gradients, (list, tuple)) else [shard_gradients]
    if not sgs or any(v not in (None, True) or isinstance(v, (int, float)) and not isinstance(v, bool) for v in sgs):
        raise ValueError(f"shard_gradients must list None (the execution's own gradients) and/or True (ZeRO-2), in the "
                         f"order to try; got {shard_gradients!r}.")
    if moe_dispatcher not in ("alltoall", "deepep", None):
        raise ValueError(f"moe_dispatcher must be 'alltoall', 'deepep' or None (each); got {moe_dispatcher!r}.")
    chunks = _positive_ints(virtual_stages, "virtual_stages", "(1, 2, 4, 5, 8)")
    mbss = _positive_ints(micro_batch_size, "micro_batch_size", "(1, 2)") or [1]
    if expert_tensor_parallel not in (None, 1, "tp") or isinstance(expert_tensor_parallel, bool):
        raise ValueError(f"expert_tensor_parallel must be None (both), 1 (each expert whole on its rank) or 'tp' (split "
                         f"over the tensor-parallel ranks); got {expert_tensor_parallel!r}.")
    out = []
    for fw in fws:
        for t in tps:
            for p in pps:
                for c in cps:
                    if n % (t * p * c):
                        continue
                    d = n // (t * p * c)
                    if B % d:
                        continue
                    for etp in _expert_splits(expert_tensor_parallel, fw, lay.experts, t):
                        # split experts: ep over the dp·cp ranks, tp apart (within a node: e·tp <= g)
                        for e in _expert_degrees(expert_parallel, lay.experts, t * d * c // etp, g // etp):
                            if etp == 1 and lay.experts and t > 1 and d * c == 1 and e != t:
                                continue  # experts whole on their ranks, held alike by tp ranks with no dp to reduce them
                            for pipe in (_megatron_pipelines(lay.n_layers, p, chunks) if fw == "megatron"
                                         else [(None, None)]):
                                for mbs in (mbss if fw == "megatron" else [1]):
                                    out += _layouts(fw, lay, B, d, c, t, p, e, acs, sgs, expert_load_imbalance,
                                                    overlap_moe_dispatch, etp, moe_dispatcher, pipe, mbs)
    return out


def _expert_splits(asked, fw: str, experts, t: int) -> list:
    """The expert tensor parallelism :func:`layout_candidates` tries: 1 (each expert whole) and, for Megatron, ``t``
    (split over the tensor-parallel ranks), of a mixture of experts with ``t > 1`` tensor-parallel ranks; ``asked``
    (1 or ``"tp"``) keeps one of them. 1 for everything else."""
    if not experts or t <= 1:
        return [1]
    both = [1, t] if fw == "megatron" else [1]
    return both if asked is None else [1] if asked == 1 else [e for e in both if e > 1]


def _expert_degrees(asked, experts: int | None, ranks: int, g: int) -> list:
    """The expert-parallel degrees :func:`layout_candidates` tries on ``ranks`` ranks (``tp·dp·cp``, or ``dp·cp`` with
    the experts split over the tensor-parallel ranks): ``asked`` (those that divide the experts and the ranks), else 1
    and, for a mixture of experts, the widest degree that divides both and stays within a node (``g``: the GPUs of a
    node, over ``tp`` where the ep ranks are ``tp`` apart), and the widest that divides both."""
    if not experts:
        return [1]
    fits = [e for e in _divisors(math.gcd(int(experts), int(ranks)))]
    if asked:
        return [e for e in asked if e in fits]
    return sorted({1, max(e for e in fits if e <= g), max(fits)})


def _layouts(fw: str, lay, B: int, d: int, c: int, t: int, p: int, e: int, acs: list, sgs: list,
             imbalance: float = 1.0, overlap: bool = False, etp: int = 1, dispatcher: str | None = "alltoall",
             pipe: tuple = (None, None), mbs: int = 1) -> list:
    """:func:`layout_candidates`' layouts of one framework and one set of degrees (a Megatron layout's with the
    pipeline's chunks and split ``pipe``, :func:`_megatron_pipelines`, and micro-batches of ``mbs`` samples): one per
    activation-checkpointing policy and gradient layout; none where the batch does not split over the pipeline's
    micro-batches."""
    from perfmodel._run import Parallelism

    if fw == "pytorch":
        strat = "-".join([f"fsdp{d}"] + [f"{k}{v}" for k, v in (("cp", c), ("ep", e), ("tp", t), ("pp", p)) if v > 1])
        m = p if p > 1 else None
        if m and (B // d) % m:
            return []
        sched, v, split, async_tp = "1f1b", None, None, False
    else:
        strat = f"dp{d}-cp{c}" + (f"-ep{e}" if e > 1 else "") + f"-tp{t}-pp{p}"
        if (B // d) % mbs:
            return []
        m = B // d // mbs
        v, split = pipe
        sched = "interleaved-1f1b" if v else "1f1b"
        async_tp = t > 1
        if p > 1 and m < p:
            return []
    # ZeRO-2 where the layout's own gradients are whole and there are data-parallel ranks to shard over
    zero2 = d * c > 1 and (fw == "megatron" or p > 1)
    # DeepEP for Megatron's layouts with ep and whole experts (None: each dispatcher in turn)
    dispatchers = ((["alltoall", "deepep"] if dispatcher is None else [dispatcher])
                   if e > 1 and etp == 1 and fw == "megatron" else ["alltoall"])
    return [Parallelism(strat, micro_batches=m, pipeline_schedule=sched, virtual_stages=v, pipeline_layers=split,
                        activation_checkpointing=ac, framework=fw, async_tp=async_tp, shard_gradients=sg,
                        expert_load_imbalance=imbalance if e > 1 else 1.0,
                        overlap_moe_dispatch=bool(overlap and e > 1 and fw == "megatron"),
                        expert_tensor_parallel=etp if lay.experts and t > 1 else None, moe_dispatcher=disp)
            for disp in dispatchers for ac in acs for sg in sgs if not (sg and not zero2)]


def search_layouts(workload, cluster, *, candidates=None, usd_per_gpu_h: float | None = None, progress: bool = False,
                   **candidate_options) -> pd.DataFrame:
    """Every layout of :func:`layout_candidates` (or ``candidates``) checked for memory, and the ones that fit
    predicted: for each layout (framework, degrees, schedule) the first activation-checkpointing policy and gradient
    layout that fits — the least recomputation, whole gradients before sharded ones at each policy — is predicted with
    :func:`perfmodel.predict`; a layout that fits with none is listed with its smallest memory and no time.

    Parameters
    ----------
    workload, cluster
        The run (:class:`perfmodel.Workload`, :class:`perfmodel.Cluster`).
    candidates : sequence of Parallelism, optional
        The layouts to try; default :func:`layout_candidates` with ``candidate_options``.
    usd_per_gpu_h : float, optional
        Price of one GPU-hour: gives ``cost_per_step_usd``.
    progress : bool
        A tqdm bar on stderr.

    Returns
    -------
    DataFrame
        :data:`LAYOUT_COLUMNS`, one row per layout, the fitting ones first, fastest first; ``activation_checkpointing``
        the policy kept as :attr:`perfmodel.Parallelism.checkpointing` says it (``"False"``, ``"selective"``,
        ``"attention"`` for Megatron's selective recomputation, ``"full"``, ``"layer:N"``); ``shard_gradients`` whether
        the kept layout reduce-scatters each micro-batch's gradients into the shard (ZeRO-2; FSDP without a pipeline
        always does); ``expert_tensor_parallel`` the tensor-parallel ranks each routed expert of a mixture of experts
        is split over (1: whole; 1 for a dense model); ``moe_dispatcher`` its dispatcher
        (:attr:`perfmodel.Parallelism.moe_dispatcher`); ``pipeline_layers`` the
        split of the layers as ``--pipeline-layers`` spells it (``""``: as evenly as they go); ``parallelism`` is the
        :class:`perfmodel.Parallelism` to pass to :func:`perfmodel.predict`; ``mfu`` is
        :attr:`perfmodel.Prediction.mfu` (an FP8 step's against the BF16 peak). ``attrs["refused"]``: records of the
        layouts the model refuses (heads, layers, sequence) with the reason.
    """
    from perfmodel.step.memory import memory_frame
    from perfmodel.step.prediction import predict_with_memory, resolve_run
    from perfmodel.step.strategy import StrategyError, format_pipeline_layers

    if usd_per_gpu_h is not None and not (isinstance(usd_per_gpu_h, (int, float)) and usd_per_gpu_h > 0):
        raise ValueError(f"usd_per_gpu_h must be a positive price per GPU-hour; got {usd_per_gpu_h!r}.")
    from perfmodel.step.trace import model_and_layout

    cands = list(candidates) if candidates is not None else layout_candidates(workload, cluster, **candidate_options)
    if not cands:
        raise ValueError("search_layouts: no layout to try (the degrees do not divide the GPUs or the batch). Pass "
                         "other tensor_parallel / pipeline_parallel / context_parallel degrees or another batch.")
    groups: dict = {}
    for p in cands:
        key = (p.framework, str(p.strategy), p.micro_batches, p.pipeline_schedule, p.virtual_stages,
               repr(p.pipeline_layers), p.async_tp, p.expert_tensor_parallel, p.moe_dispatcher)
        groups.setdefault(key, []).append(p)
    it = groups.items()
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, total=len(groups), desc="layouts", unit="layout")
    rows, refused = [], []
    for key, options in it:
        best = None
        for p in options:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    w_, c_, p_ = resolve_run(workload, cluster, p)  # the step's defaults, as pm.predict takes them
                    m = memory_frame(w_, (c_,), p_).iloc[0]
            except (StrategyError, ValueError) as exc:
                refused.append(dict(framework=p.framework, strategy=str(p.strategy), moe_dispatcher=p.moe_dispatcher,
                                    reason=str(exc)))
                best = None
                break
            if best is None or m["fits"] or m["total_bytes"] < best[1]["total_bytes"]:
                best = (p, m)  # the first policy that fits, else the smallest memory
            if m["fits"]:
                break
        if best is None:
            continue
        p, m = best
        ex = p.execution(int(cluster.n_gpus))
        experts = model_and_layout(w_.model, w_.input_shape, w_.input_dtype)[-1].experts  # the checked run's model
        total, cap, fits = float(m["total_bytes"]), float(m["capacity_bytes"]), bool(m["fits"])
        row = dict(framework=p.framework, strategy=str(p.strategy), micro_batches=p.micro_batches or 1,
                   pipeline_schedule=p.pipeline_schedule, virtual_stages=p.virtual_stages or 1,
                   pipeline_layers=format_pipeline_layers(p.pipeline_layers),
                   activation_checkpointing=str(p.checkpointing or False),
                   shard_gradients=bool(ex["shard_gradients"]), async_tp=bool(p.async_tp),
                   expert_tensor_parallel=int(ex["expert_tensor_parallel"]) if experts else 1,
                   moe_dispatcher=p.moe_dispatcher,
                   step_time_s=np.nan, lower_s=np.nan, upper_s=np.nan, tokens_per_s=np.nan, mfu=np.nan, comm_s=np.nan,
                   bubble_s=np.nan, memory_per_gpu_bytes=total, capacity_bytes=cap, fits=fits,
                   usd_per_gpu_h=np.nan if usd_per_gpu_h is None else float(usd_per_gpu_h), cost_per_step_usd=np.nan,
                   parallelism=p)
        if fits:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = predict_with_memory(workload, cluster, p, m)
            except (StrategyError, ValueError) as exc:  # a layout the step refuses on these links (e.g. DeepEP's)
                refused.append(dict(framework=p.framework, strategy=str(p.strategy), moe_dispatcher=p.moe_dispatcher,
                                    reason=str(exc)))
                continue
            row.update(step_time_s=r.step_time_s, lower_s=r.lower_s, upper_s=r.upper_s,
                       tokens_per_s=np.nan if r.tokens_per_s is None else r.tokens_per_s, mfu=r.mfu,
                       comm_s=r.breakdown["comm_exposed"], bubble_s=r.breakdown["bubble"])
            if usd_per_gpu_h is not None:
                row["cost_per_step_usd"] = r.step_time_s * int(cluster.n_gpus) * float(usd_per_gpu_h) / 3600
        rows.append(row)
    if not rows:
        reasons = "; ".join(f"{r['strategy']} ({r['framework']}): {r['reason']}" for r in refused[:6])
        raise ValueError(f"search_layouts: the model refuses every layout tried. {reasons}")
    frame = pd.DataFrame(rows, columns=LAYOUT_COLUMNS)
    frame = frame.sort_values(["fits", "step_time_s", "memory_per_gpu_bytes"], ascending=[False, True, True],
                              kind="stable", ignore_index=True)
    frame.attrs["refused"] = refused
    return frame

"""Parallel strategies of one model on ``n`` GPUs of one type, in the spirit of TensorOpt: the Pareto set of
(step time, memory per GPU, cost per step) over strategies, micro-batch counts and activation checkpointing.

:func:`explore_strategies` predicts every combination with :func:`perfmodel.predict_step_time` (the per-operator
model, α–β collectives, DDP bucket overlap, Megatron all-reduces, the 1F1B bubble; activation checkpointing adds the
recomputed forward pass) and :func:`perfmodel.predict_memory` (parameters, gradients, optimizer states, saved
activations per GPU). A combination the strategy cannot run (tensor parallel over heads that do not split, more
pipeline stages than layers, micro-batches that do not divide the batch) is skipped, its reason kept in
``frame.attrs["skipped"]``. :func:`pareto_mask` marks the rows no other fitting row beats in every objective;
:func:`plot_strategies` draws them.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from perfmodel._workload import accepts_workload

__all__ = ["explore_strategies", "pareto_mask", "plot_strategies", "STRATEGY_COLUMNS", "SKIPPED_COLUMNS"]

#: columns of :func:`explore_strategies`.
STRATEGY_COLUMNS = ["model", "gpu", "n_gpus", "batch_size", "strategy", "micro_batches", "activation_checkpointing", "precision",
                    "optimizer", "interconnect", "step_time_s", "lower_s", "upper_s", "compute_s", "comm_s", "bubble_s",
                    "memory_per_gpu_bytes", "capacity_bytes", "fits", "usd_per_gpu_h", "cost_per_step_usd", "pareto"]
#: columns of ``explore_strategies(...).attrs["skipped"]``.
SKIPPED_COLUMNS = ["strategy", "micro_batches", "activation_checkpointing", "reason"]


def pareto_mask(values) -> np.ndarray:
    """Boolean mask of the rows of ``values`` (``n × k``, lower is better in every column) that no other row
    dominates: row ``j`` dominates row ``i`` when it is at least as good in every column and strictly better in one.
    Equal rows do not dominate each other (ties are all kept). A row with a NaN is left out (False) and dominates
    nothing.

    Raises
    ------
    ValueError
        ``values`` is not two-dimensional.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"pareto_mask needs a 2-D array (rows x objectives, lower is better); got shape {v.shape}.")
    ok = ~np.isnan(v).any(axis=1)
    w = v[ok]
    # le[j, i]: row j at least as good as row i everywhere; lt[j, i]: strictly better somewhere
    le = (w[:, None, :] <= w[None, :, :]).all(axis=2)
    lt = (w[:, None, :] < w[None, :, :]).any(axis=2)
    dominated = (le & lt).any(axis=0)
    out = np.zeros(len(v), dtype=bool)
    out[np.flatnonzero(ok)] = ~dominated
    return out


def _positive_ints(name, values) -> list[int]:
    vals = [values] if isinstance(values, (int, np.integer)) and not isinstance(values, bool) else list(values)
    if not vals or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in vals):
        raise ValueError(f"{name} must be a non-empty sequence of positive ints; got {values!r}. E.g. {name}=(1, 2, 4, 8).")
    return list(dict.fromkeys(int(v) for v in vals))


def _policy(a):
    """A checkpointing policy as the frame keeps it: ``False``, ``True`` (full) or the mode string of
    :func:`perfmodel._workload.checkpointing_mode` (``"selective"``, ``"attention"``, ``"layer:N"``)."""
    from perfmodel._workload import checkpointing_mode

    if isinstance(a, str):
        try:
            mode = checkpointing_mode(a)
        except ValueError:
            raise ValueError(f"activation_checkpointing must be True, False, a policy ('full', 'selective', 'attention', "
                             f"'layer:N') or a sequence of them; got {a!r}.") from None
        return True if mode == "full" else mode if mode else False
    return bool(a)


def _expert_parallel_strategies(model, input_shape, strats: list, n: int, gpus_per_node: int) -> list:
    """For a mixture of experts (its config names routed experts), each strategy of ``strats`` with a data-parallel
    factor spelled again with every expert-parallel degree :func:`perfmodel.planning.layouts._expert_degrees` tries
    on its ``tp·dp·cp`` ranks; ``[]`` for a dense model, or one perfmodel cannot lay out."""
    from perfmodel.planning.layouts import _expert_degrees
    from perfmodel.step.strategy import StrategyError, check_strategy_name, parse_strategy
    from perfmodel.step.trace import model_and_layout

    try:
        experts = model_and_layout(model, input_shape, None)[5].experts
    except (ValueError, TypeError):  # explore_strategies' own checks say what is wrong with the model
        return []
    out = []
    for strat in strats if experts else []:
        try:
            deg = parse_strategy(strat, n)
        except StrategyError:
            continue
        ranks = deg["tp"] * deg["dp"] * deg["cp"]
        if ranks < 2:
            continue
        for e in _expert_degrees(None, experts, ranks, gpus_per_node):
            if e > 1 and (deg["dp"] * deg["cp"] > 1 or e == deg["tp"]):
                out.append(check_strategy_name({("fsdp" if deg["fsdp"] else "dp"): deg["dp"], "cp": deg["cp"], "ep": e,
                                                "tp": deg["tp"], "pp": deg["pp"]}))
    return list(dict.fromkeys(out))


def _check_args(n_gpus, strategies, micro_batches, activation_checkpointing, usd_per_gpu_h):
    from perfmodel.step.strategy import STRATEGIES, check_strategy_name, strategy_combinations

    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    if strategies is None:
        strategies = [*STRATEGIES, *strategy_combinations(int(n_gpus))]
    strats = [strategies] if isinstance(strategies, (str, dict)) else list(strategies)
    if not strats:
        raise ValueError("strategies must name at least one of 'dp', 'fsdp', 'tp', 'pp'; got an empty sequence.")
    strats = list(dict.fromkeys(check_strategy_name(s) for s in strats))
    mbs = _positive_ints("micro_batches", micro_batches)
    acs = ([activation_checkpointing] if isinstance(activation_checkpointing, (bool, np.bool_, str))
           else list(activation_checkpointing))
    if not acs or any(not isinstance(a, (bool, np.bool_, str)) for a in acs):
        raise ValueError(f"activation_checkpointing must be True, False, a policy ('full', 'selective', 'attention', "
                         f"'layer:N') or a sequence of them; got {activation_checkpointing!r}.")
    acs = list(dict.fromkeys(_policy(a) for a in acs))
    if usd_per_gpu_h is not None and (isinstance(usd_per_gpu_h, bool) or not isinstance(usd_per_gpu_h, (int, float, np.number))
                                      or not math.isfinite(usd_per_gpu_h) or usd_per_gpu_h <= 0):
        raise ValueError(f"usd_per_gpu_h must be a positive price in USD per GPU-hour, or None (no cost column); got "
                         f"{usd_per_gpu_h!r}.")
    return int(n_gpus), strats, mbs, acs


def _sharing_rank_work(fn):
    """``fn`` with each parallel layout's rank work built once per call
    (:func:`perfmodel.step.parallel.shared_rank_work`): every checkpointing policy of a strategy and micro-batch count
    is predicted from the same rank work."""
    import functools

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        from perfmodel.step.parallel import shared_rank_work

        with shared_rank_work():
            return fn(*args, **kwargs)

    return inner


@accepts_workload("batch_size", "input_shape", "precision", "optimizer", "stack")
@_sharing_rank_work
def explore_strategies(model, gpu, n_gpus: int, *, batch_size: int, input_shape=None, strategies=None,
                       micro_batches=(1, 2, 4, 8), activation_checkpointing=(False, True), precision: str = "fp32",
                       optimizer: str | None = "adam", usd_per_gpu_h: float | None = None, interconnect=None,
                       framework: str = "pytorch", gpus_per_node: int = 8, stack: str | None = None,
                       pipeline_schedule: str = "1f1b", virtual_stages: int | None = None) -> pd.DataFrame:
    """Step time, memory per GPU and cost of every parallel strategy of ``model`` on ``n_gpus`` GPUs, and their
    Pareto set.

    Parameters
    ----------
    model : str, torch.nn.Module, dict, transformers.PretrainedConfig or Workload
        As for :func:`perfmodel.predict_step_time`.
        A :class:`perfmodel.Workload` gives the step's fields once (a keyword that is also given must agree).
    gpu : str or GPUSpec
        One GPU type (catalog id or spec).
    n_gpus : int
        GPUs training together. With one GPU every strategy is plain single-GPU training: only ``"dp"`` rows are
        predicted, the other strategies are skipped with that reason.
    batch_size : int
        Global batch (samples per step over all GPUs).
    input_shape : tuple of int, optional
        One sample without the batch dimension (required for modules and Hugging Face configs).
    strategies : sequence of str or dict, optional
        Strategies to try: ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` (over all the GPUs) and combinations
        ``"dp2-tp2"``, ``"tp2-pp2"``, ``{"dp": 2, "pp": 2}`` ... (:func:`perfmodel.step.parallel.parse_strategy`); a
        combination whose degrees do not multiply to ``n_gpus`` is skipped with that reason. Default (None): the four
        single strategies and every combination ``dp × tp × pp = n_gpus``
        (:func:`perfmodel.step.parallel.strategy_combinations`), and for a mixture of experts each of them with a
        data-parallel factor again with expert parallelism (``"dp8-ep8"``: the widest ``ep`` within a node and the
        widest, each dividing the experts and the data-parallel ranks, as :func:`perfmodel.planning.layout_candidates`
        tries them). The ``strategy`` column names each as
        :func:`~perfmodel.step.parallel.parse_strategy` does on ``n_gpus`` (``"tp2"`` on 2 GPUs is ``"tp"``).
    micro_batches : sequence of int
        Micro-batch counts to try (the pipeline's ``m``; gradient accumulation for the others).
    activation_checkpointing : bool, str or sequence of them
        Policies to try: ``False`` (none), ``True`` (full: less memory, one more forward pass) and the selective ones of
        :func:`perfmodel.predict_step_time` (``"selective"``, ``"attention"``, ``"layer:N"``; ``"full"`` is ``True``).
    precision, optimizer
        As for :func:`perfmodel.predict_step_time` (``optimizer`` also sets the optimizer state in memory).
    usd_per_gpu_h : float, optional
        Price of one GPU-hour (USD); gives ``cost_per_step_usd = step_time_s × n_gpus × usd_per_gpu_h / 3600`` and makes
        cost a Pareto objective. None: ``usd_per_gpu_h`` and ``cost_per_step_usd`` are NaN.
    interconnect : str, Interconnect or dict, optional
        Link between the GPUs (:func:`perfmodel.step.parallel.resolve_interconnect`), one for all the process groups;
        or a dict ``{"tp": ..., "pp": ..., "dp": ...}`` giving each group its own, or a link per level
        ``{"intra": ..., "inter": ...}`` with nodes of ``gpus_per_node`` (:func:`perfmodel.step.parallel.resolve_links`);
        default the GPU's own.
    framework : {"pytorch", "megatron"}
        How every strategy runs (:func:`perfmodel.step.strategy.resolve_execution`): PyTorch DDP / FSDP, or
        Megatron-Core (the distributed optimizer, sequence parallelism with TP, data x context x tensor x pipeline;
        ``"fsdp"`` is then skipped with the reason). For every layout of a large transformer run with the least
        recomputation that fits, :func:`perfmodel.planning.search_layouts`.
    gpus_per_node, stack, pipeline_schedule, virtual_stages
        As for :func:`perfmodel.predict_step_time`, for every strategy (a strategy without a pipeline ignores the
        schedule; one whose stages cannot hold ``virtual_stages`` chunks is skipped with the reason).

    Returns
    -------
    DataFrame
        One row per feasible combination, :data:`STRATEGY_COLUMNS`: ``step_time_s`` (with its interval
        ``lower_s`` / ``upper_s``), ``compute_s``, ``comm_s`` (exposed communication), ``bubble_s`` (pipeline idle),
        ``memory_per_gpu_bytes`` (:func:`perfmodel.predict_memory`'s ``total_bytes``), ``capacity_bytes``, ``fits``,
        ``cost_per_step_usd`` and ``pareto``: the row fits on the GPU and no other fitting row is at least as good in
        step time, memory per GPU and cost (when priced) and strictly better in one (:func:`pareto_mask`; ties are
        all kept; rows that do not fit are never on it). Sorted by step time. ``attrs["skipped"]``: one record (dict with
        the keys :data:`SKIPPED_COLUMNS`) per combination skipped, with the reason the strategy gave;
        ``pd.DataFrame(frame.attrs["skipped"])`` makes it a frame.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Unknown GPU, strategy, precision or interconnect.
    ValueError
        Bad ``n_gpus``, ``micro_batches``, ``activation_checkpointing``, ``usd_per_gpu_h`` or a batch / optimizer
        :func:`perfmodel.predict_step_time` refuses; every combination skipped (the message lists their reasons).
    """
    from perfmodel.step.trace import check_step_args
    from perfmodel.step.kernels import gpu_specs
    from perfmodel.step.one_gpu import add_recompute, recompute_comm
    from perfmodel.step.step_time import _step_time_only as predict_step_time  # memory is predicted apart here
    from perfmodel.step.strategy import StrategyError, parse_strategy, resolve_links
    from perfmodel.planning.memory import predict_memory

    n, strats, mbs, acs = _check_args(n_gpus, strategies, micro_batches, activation_checkpointing, usd_per_gpu_h)
    if strategies is None:
        strats += _expert_parallel_strategies(model, input_shape, strats, n, gpus_per_node)
    prec = check_step_args(0.2, optimizer, False, precision, batch_size)
    if not (isinstance(gpu, str) or not hasattr(gpu, "__iter__")):
        raise TypeError(f"explore_strategies compares strategies on one GPU type; got {type(gpu).__name__}. Call it once per "
                        "GPU type (e.g. gpu='A100').")
    spec = gpu_specs(gpu, prec)[0]
    resolve_links(interconnect, spec)  # UnknownNameError before any prediction
    from perfmodel.step.strategy import check_framework

    run = dict(framework=check_framework(framework), gpus_per_node=gpus_per_node, stack=stack)
    rows, skipped, done = [], [], set()
    for strat in strats:
        if n == 1 and strat != "dp":
            skipped += [(strat, m, a, "one GPU: every strategy is single-GPU training (kept as 'dp')") for m in mbs for a in acs]
            continue
        try:
            strat = parse_strategy(strat, n)["name"]  # "tp2" on 2 GPUs is "tp"
        except StrategyError as exc:
            skipped += [(strat, m, a, str(exc)) for m in mbs for a in acs]
            continue
        if strat in done:
            continue
        done.add(strat)
        for m in mbs:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the extrapolation warning of each call, given once below
                    plain = predict_step_time(model, spec, input_shape=input_shape, batch_size=batch_size, precision=prec,
                                              optimizer=optimizer, n_gpus=n, strategy=strat, micro_batches=m,
                                              interconnect=interconnect, **run, **_schedule(strat, n, pipeline_schedule,
                                                                                            virtual_stages))
            except StrategyError as exc:
                skipped += [(strat, m, a, str(exc)) for a in acs]
                continue
            for a in acs:
                try:
                    if isinstance(a, str) or (a and run["framework"] != "pytorch"):
                        # a selective policy (the share of the forward pass it recomputes), or full recomputation as
                        # Megatron runs it
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            t = predict_step_time(model, spec, input_shape=input_shape, batch_size=batch_size,
                                                  precision=prec, optimizer=optimizer, n_gpus=n, strategy=strat,
                                                  micro_batches=m, interconnect=interconnect, activation_checkpointing=a,
                                                  **run, **_schedule(strat, n, pipeline_schedule, virtual_stages))
                    else:
                        # full checkpointing: the forward pass again, the collectives of its layers with it
                        t = add_recompute(plain, mode="full", comm_rerun=recompute_comm(plain, "full")) if a else plain
                except (StrategyError, ValueError) as exc:
                    skipped.append((strat, m, a, str(exc)))
                    continue
                try:
                    mem = predict_memory(model, spec, batch_size=batch_size, n_gpus=n, strategy=strat, precision=prec,
                                         optimizer=optimizer, activation_checkpointing=a, input_shape=input_shape,
                                         micro_batches=m, **run,
                                         **_schedule(strat, n, pipeline_schedule, virtual_stages)).iloc[0]
                except StrategyError as exc:
                    skipped.append((strat, m, a, str(exc)))
                    continue
                r = t.iloc[0]
                step = float(r["step_time_s"])
                rows.append(dict(model=r["model"], gpu=r["gpu"], n_gpus=n, batch_size=int(batch_size), strategy=strat,
                                 micro_batches=m, activation_checkpointing=a, precision=prec, optimizer=optimizer or "none",
                                 interconnect=r.get("interconnect", "none"), step_time_s=step, lower_s=float(r["lower_s"]),
                                 upper_s=float(r["upper_s"]), compute_s=float(r.get("compute_s", step)),
                                 comm_s=float(r.get("comm_s", 0.0)), bubble_s=float(r.get("bubble_s", 0.0)),
                                 memory_per_gpu_bytes=float(mem["total_bytes"]), capacity_bytes=float(mem["capacity_bytes"]),
                                 fits=bool(mem["fits"]),
                                 usd_per_gpu_h=float("nan") if usd_per_gpu_h is None else float(usd_per_gpu_h),
                                 cost_per_step_usd=float("nan") if usd_per_gpu_h is None else step * n * float(usd_per_gpu_h) / 3600))
    skipped_frame = pd.DataFrame(skipped, columns=SKIPPED_COLUMNS)
    if not rows:
        reasons = "; ".join(f"{s} (micro_batches={m}): {why}" for s, m, why in
                            skipped_frame.drop_duplicates(["strategy", "micro_batches"])[["strategy", "micro_batches", "reason"]].itertuples(index=False))
        raise ValueError(f"explore_strategies: no combination of {strats} x micro_batches {mbs} runs on {n} GPUs at batch "
                         f"{batch_size}. {reasons}")
    frame = pd.DataFrame(rows)
    objectives = ["step_time_s", "memory_per_gpu_bytes"] + ([] if usd_per_gpu_h is None else ["cost_per_step_usd"])
    fits = frame["fits"].to_numpy(bool)
    pareto = np.zeros(len(frame), dtype=bool)
    pareto[fits] = pareto_mask(frame.loc[fits, objectives].to_numpy(float))
    frame["pareto"] = pareto
    frame = frame.sort_values(["step_time_s", "memory_per_gpu_bytes"], kind="stable", ignore_index=True)[STRATEGY_COLUMNS]
    # plain records, not a frame: pandas compares attrs when it concatenates or prints a frame, and a frame in them fails
    frame.attrs["skipped"] = skipped_frame.to_dict("records")
    return frame


def _schedule(strategy: str, n: int, pipeline_schedule: str, virtual_stages) -> dict:
    """The pipeline keywords of one strategy: the schedule asked for where the strategy has a pipeline, none
    otherwise (a strategy without one runs no schedule)."""
    from perfmodel.step.strategy import parse_strategy

    if parse_strategy(strategy, n).get("pp", 1) > 1:
        return dict(pipeline_schedule=pipeline_schedule, virtual_stages=virtual_stages)
    return {}


def _configuration(strategy, policy) -> str:
    """The legend label of a strategy and its checkpointing policy (``False``, ``True`` or a selective mode)."""
    if isinstance(policy, str) and policy not in ("True", "False"):
        return f"{strategy} + {policy} checkpointing"
    on = policy == "True" if isinstance(policy, str) else bool(policy)
    return f"{strategy} + checkpointing" if on else str(strategy)


def plot_strategies(frame: pd.DataFrame, ax=None):
    """Memory per GPU (GiB, log scale) against step time (ms) of each explored combination (colour: strategy, with or without
    activation checkpointing), the Pareto set circled and the GPU's memory as a dashed line.

    Parameters
    ----------
    frame : DataFrame
        :func:`explore_strategies`'s frame.
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure one column wide (:func:`perfmodel.plotting.figure_size`).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError, ValueError
        ``frame`` is not a DataFrame or lacks :func:`explore_strategies`'s columns; ``ax`` is not an Axes.
    """
    from perfmodel import plotting as pl

    need = ["strategy", "activation_checkpointing", "step_time_s", "memory_per_gpu_bytes", "capacity_bytes", "pareto"]
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"plot_strategies: frame must be the DataFrame of explore_strategies; got {type(frame).__name__}.")
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise ValueError(f"plot_strategies: frame has no column {missing}; expected the frame of explore_strategies "
                         f"(columns {need}).")
    if ax is None:
        _, ax, _ = pl.subplots(None, figsize=pl.figure_size("column"))
    d = frame.assign(step_time_ms=frame["step_time_s"] * 1e3, memory_per_gpu_gib=frame["memory_per_gpu_bytes"] / 2**30,
                     configuration=[_configuration(s, a)
                                    for s, a in zip(frame["strategy"], frame["activation_checkpointing"])])
    markers = {c: ("^" if c.endswith("checkpointing") else "o") for c in d["configuration"]}
    pl.plot_scatter(d, x="step_time_ms", y="memory_per_gpu_gib", hue="configuration", ax=ax, alpha=0.8, markers=markers,
                    legend=False, s=18)
    front = d[d["pareto"].to_numpy(bool)]
    ax.scatter(front["step_time_ms"], front["memory_per_gpu_gib"], s=70, facecolors="none", edgecolors="black", lw=0.8,
               label="Pareto set")
    caps = pd.unique(d["capacity_bytes"]) / 2**30
    for i, c in enumerate(caps):
        ax.axhline(c, color="0.4", ls="--", lw=0.8, label="GPU memory" if i == 0 else None)
    ax.set(xlabel="Predicted step time (ms)", ylabel="Memory per GPU (GiB)", yscale="log")
    pl.legend_outside(ax)
    return ax

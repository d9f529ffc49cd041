"""A run said in three objects — what is trained (:class:`perfmodel.Workload`), on what (:class:`perfmodel.Cluster`)
and how (:class:`perfmodel.Parallelism`) — and what the step model answers for it, in one result
(:class:`Prediction`).

:func:`predict` hands the objects to the layers (:func:`resolve_run` fills the workload's unset fields with
:func:`perfmodel.predict_step_time`'s defaults): ``pm.predict(w, c, p).step_time_s`` is, to the bit,
``pm.predict_step_time(w, c.gpu, n_gpus=c.n_gpus, ...)``'s ``step_time_s`` (both run
:func:`perfmodel.step.step_time.step_frame`), and the memory is :func:`perfmodel.predict_memory`'s
(:func:`perfmodel.step.memory.memory_frame`).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from perfmodel._run import Cluster, Parallelism
from perfmodel._workload import MEGATRON_STACK, Workload, checkpointing_mode

__all__ = ["predict", "Prediction", "Cluster", "Parallelism", "Workload"]

#: the parts of the memory per GPU, bytes (:func:`perfmodel.predict_memory`'s columns).
MEMORY_PARTS = ("params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes")


@dataclasses.dataclass(frozen=True, repr=False)
class Prediction:
    """One run's predicted training step: its time with an interval, where the time goes, the memory per GPU, and
    what the numbers rest on.

    Attributes
    ----------
    workload, cluster, parallelism
        The run, as given to :func:`predict`.
    step_time_s, lower_s, upper_s : float
        The step and its ``1 − alpha`` interval (on the compute; the communication is added as predicted).
    alpha : float
    breakdown : dict
        Seconds of one step of the busiest GPU: ``compute`` (``forward``, ``backward`` — the recomputed forward pass
        included —, ``recompute``, ``optimizer``), ``comm_exposed`` and ``comm_total`` (all communication, hidden or
        not), ``bubble`` (pipeline idle time), ``overlap_slowdown`` (what the compute loses to the communication
        hidden under it: :data:`perfmodel.step.collectives.OVERLAP_SLOWDOWN` of the compute that runs beside a
        collective). ``compute + comm_exposed + bubble + overlap_slowdown`` is the step.
    comm_exposed_s, comm_total_s : dict
        Each process group's share (``"tp"``, ``"cp"``, ``"pp"``, ``"dp"``; FSDP's gathers and reduce-scatters are
        ``"dp"``), seconds.
    memory : dict or None
        Bytes per GPU: ``params_bytes``, ``grads_bytes``, ``optimizer_bytes``, ``activations_bytes``, ``total_bytes``
        and ``capacity_bytes``; None for an inference pass.
    fits : bool or None
        ``total_bytes <= capacity_bytes``.
    flops : float
        FLOPs one GPU runs in a step (the recomputed forward pass not counted).
    samples_per_s, tokens_per_s : float
        Throughput of the whole run (``tokens_per_s`` is None for inputs that are not token ids).
    mfu : float
        ``flops / (step_time_s · peak)``: the share of the GPU's dense peak at the step's precision the step uses;
        an FP8 step's against the BF16 peak (:func:`perfmodel.datasets.mfu_peak_tflops`), as torchtitan and
        Megatron-LM report FP8 runs and as the rule of thumb's 40 % is counted.
    basis : str
        What the prediction rests on (the kernels' model, the links, the interval).
    provenance : dict
        perfmodel's version, what the kernel efficiencies were learned on, and how far the GPU lies outside the
        GPUs they were learned on at this precision (``extrapolation``; empty: inside).
    """

    workload: Workload
    cluster: Cluster
    parallelism: Parallelism
    step_time_s: float
    lower_s: float
    upper_s: float
    alpha: float
    breakdown: dict
    comm_exposed_s: dict
    comm_total_s: dict
    memory: dict | None
    fits: bool | None
    flops: float
    samples_per_s: float
    tokens_per_s: float | None
    mfu: float
    basis: str
    provenance: dict
    _row: dict = dataclasses.field(default_factory=dict, compare=False)

    def to_frame(self) -> pd.DataFrame:
        """One row: :func:`perfmodel.predict_step_time`'s columns (``basis`` last), each group's exposed and total
        communication (``comm_tp_s``, ``comm_tp_total_s``, …), ``recompute_s``, the memory parts, throughput and
        ``mfu``."""
        row = {k: v for k, v in self._row.items() if k != "basis"}
        row["recompute_s"] = self.breakdown["recompute"]
        for g in self.comm_exposed_s:
            row[f"comm_{g}_s"] = self.comm_exposed_s[g]
            row[f"comm_{g}_total_s"] = self.comm_total_s[g]
        for k in (*MEMORY_PARTS, "capacity_bytes") if self.memory else ():
            row[k] = self.memory[k]
        row.update(samples_per_s=self.samples_per_s, tokens_per_s=self.tokens_per_s, mfu=self.mfu, basis=self.basis)
        return pd.DataFrame([row])

    def segments(self) -> list[tuple[str, float]]:
        """The step cut into parts that add up to it, in the order they are drawn: the compute (by pass when the
        passes add up to it; a pipeline's compute is its slowest stage's schedule, drawn whole), each group's exposed
        communication, the bubble. Parts of zero seconds are left out."""
        b = self.breakdown
        passes = b["forward"] + b["backward"] + b["optimizer"]
        if np.isclose(passes, b["compute"], rtol=1e-9, atol=0):
            parts = [("forward", b["forward"]), ("backward", b["backward"] - b["recompute"]),
                     ("recompute", b["recompute"]), ("optimizer", b["optimizer"])]
        else:
            parts = [("compute", b["compute"])]
        parts += [(f"{g} comm (exposed)", s) for g, s in self.comm_exposed_s.items()]
        parts += [("pipeline bubble", b["bubble"]), ("overlap slowdown", b["overlap_slowdown"])]
        return [(k, float(v)) for k, v in parts if v > 0]

    def plot(self, ax=None, *, label: str | None = None, y: float = 0.0):
        """The step as one horizontal bar of its :meth:`segments`, the interval as an error bar, into ``ax`` (a new
        figure when None); returns ``ax``. Call it once per prediction with another ``y`` to put runs side by side
        (each bar is labelled on the y axis with ``label``, default the model, GPUs and strategy)."""
        from perfmodel.plotting import _axes, legend_outside

        ax = _axes("Prediction.plot", ax)
        colors = {name: f"C{i}" for i, name in enumerate(
            ["forward", "backward", "recompute", "optimizer", "compute", *(f"{g} comm (exposed)" for g in self.comm_exposed_s),
             "pipeline bubble", "overlap slowdown"])}
        shown = {c.get_label() for c in ax.containers}  # a part already in the legend is not listed twice
        left = 0.0
        for name, sec in self.segments():
            ax.barh(y, sec, left=left, color=colors[name], height=0.6, label=None if name in shown else name)
            left += sec
        ax.errorbar(self.step_time_s, y, xerr=[[self.step_time_s - self.lower_s], [self.upper_s - self.step_time_s]],
                    fmt="none", ecolor="black", capsize=4)
        labels = ax.__dict__.setdefault("_perfmodel_step_labels", {})  # the bars drawn into ax so far, by y
        labels[y] = label or self._title()
        ax.set_yticks(list(labels), list(labels.values()))
        ax.set_xlabel("seconds per step")
        legend_outside(ax)
        return ax

    def _title(self) -> str:
        c, p = self.cluster, self.parallelism
        where = f"{c.n_gpus} x {self._row['gpu']}" if c.n_gpus > 1 else str(self._row["gpu"])
        how = f" ({self._row.get('strategy', p.strategy)})" if c.n_gpus > 1 else ""
        return f"{self._row['model']} on {where}{how}"

    def __repr__(self) -> str:
        b = self.breakdown
        lines = [f"Prediction: {self._title()}, batch {self._row['batch_size']}, {self._row['precision']}",
                 f"  step time       {_s(self.step_time_s)}  [{_s(self.lower_s)}, {_s(self.upper_s)}] "
                 f"({(1 - self.alpha) * 100:.0f} % interval)"]
        rate = f"{self.samples_per_s:,.0f} samples/s" if self.samples_per_s >= 100 else f"{self.samples_per_s:.4g} samples/s"
        if self.tokens_per_s is not None:
            rate += f", {self.tokens_per_s:,.0f} tokens/s"
        from perfmodel.datasets import mfu_precision

        prec = str(self._row["precision"])
        at = mfu_precision(prec)  # an FP8 step's MFU is counted against the BF16 peak
        of = f" of the {at.upper()} peak" if at != prec else ""
        lines.append(f"  throughput      {rate}, MFU {self.mfu * 100:.3g} %{of}")
        lines.append(f"  compute         {_s(b['compute'])}  (forward {_s(b['forward'])}, backward {_s(b['backward'])}"
                     + (f" incl. recompute {_s(b['recompute'])}" if b["recompute"] else "")
                     + f", optimizer {_s(b['optimizer'])})")
        if self.cluster.n_gpus > 1 or b["comm_total"]:
            groups = ", ".join(f"{g} {_s(self.comm_exposed_s[g])} of {_s(self.comm_total_s[g])}"
                               for g in self.comm_exposed_s if self.comm_total_s[g] or self.comm_exposed_s[g])
            lines.append(f"  communication   {_s(b['comm_exposed'])} exposed of {_s(b['comm_total'])}"
                         + (f" ({groups})" if groups else ""))
        if b["overlap_slowdown"]:
            lines.append(f"  overlap         {_s(b['overlap_slowdown'])} of compute slowed by the communication hidden under it")
        if b["bubble"]:
            lines.append(f"  bubble          {_s(b['bubble'])}")
        if self.memory:
            m = self.memory
            parts = ", ".join(f"{k.replace('_bytes', '')} {_b(m[k])}" for k in MEMORY_PARTS)
            lines.append(f"  memory per GPU  {_b(m['total_bytes'])} of {_b(m['capacity_bytes'])} "
                         f"({parts}): {'fits' if self.fits else 'DOES NOT FIT'}")
        import textwrap

        if self.provenance.get("extrapolation"):
            lines.append(textwrap.fill("; ".join(self.provenance["extrapolation"]), width=118, break_on_hyphens=False,
                                       initial_indent="  extrapolates    ", subsequent_indent=" " * 18))

        lines.append(textwrap.fill(self.basis, width=118, initial_indent="  basis: ", subsequent_indent=" " * 9,
                                   break_on_hyphens=False))
        return "\n".join(lines)


def _s(x: float) -> str:
    return f"{x * 1e3:.4g} ms" if abs(x) < 1 else f"{x:.4g} s"


def _b(x: float) -> str:
    return f"{x / 2**30:.3g} GiB" if x >= 2**30 else f"{x / 2**20:.3g} MiB"


def _as_objects(workload, cluster, parallelism) -> tuple[Workload, Cluster, Parallelism]:
    w = workload if isinstance(workload, Workload) else Workload(workload)
    if isinstance(cluster, Cluster):
        c = cluster
    elif isinstance(cluster, Parallelism) or isinstance(cluster, Workload):
        raise TypeError(f"predict(workload, cluster, parallelism): the second argument is a Cluster (or a GPU name); "
                        f"got a {type(cluster).__name__}.")
    else:
        c = Cluster(cluster)
    if parallelism is None:
        p = Parallelism()
    elif isinstance(parallelism, Parallelism):
        p = parallelism
    elif isinstance(parallelism, (str, dict)):
        p = Parallelism(parallelism)
    else:
        raise TypeError(f"predict: parallelism is a Parallelism, a strategy name such as 'fsdp' or 'fsdp2-tp4', or None "
                        f"(data parallel); got {type(parallelism).__name__} {parallelism!r}.")
    return w, c, p


def _checkpointing(w: Workload, p: Parallelism):
    """The checkpointing of the run: said in the Workload or in the Parallelism; in both, the same."""
    if not w.is_set("activation_checkpointing"):
        return p.activation_checkpointing
    if p.activation_checkpointing is not False and checkpointing_mode(w.activation_checkpointing) != p.checkpointing:
        raise ValueError(f"the Workload says activation_checkpointing={w.activation_checkpointing!r} and the Parallelism "
                         f"{p.activation_checkpointing!r}; say it once (in the Parallelism).")
    return w.activation_checkpointing


#: what :func:`predict` takes for the fields a :class:`~perfmodel.Workload` leaves unset:
#: :func:`perfmodel.predict_step_time`'s defaults (one sample, FP32, SGD with momentum, eager kernels).
STEP_DEFAULTS = dict(input_shape=None, batch_size=1, input_dtype=None, input_high=None, precision="fp32",
                     optimizer="sgd-momentum", inference=False, compile=False, stack=None)


def resolve_run(workload, cluster, parallelism=None, defaults=None) -> tuple[Workload, Cluster, Parallelism]:
    """The three objects as the step model's layers read them: the workload with every field set (``defaults`` for
    the ones left unset, :data:`STEP_DEFAULTS` by default) and the checkpointing said once, in the parallelism."""
    w, c, p = _as_objects(workload, cluster, parallelism)
    ac = _checkpointing(w, p)
    if w.is_set("activation_checkpointing"):
        w = dataclasses.replace(w, activation_checkpointing=Workload.UNSET)
    defaults = dict(STEP_DEFAULTS if defaults is None else defaults)
    if p.framework == "megatron" and not w.is_set("stack") and not (w.is_set("compile") and w.compile):
        defaults["stack"] = MEGATRON_STACK
    return w.filled(**defaults), c, dataclasses.replace(p, activation_checkpointing=ac)


def predict(workload, cluster, parallelism=None, *, alpha: float = 0.2) -> Prediction:
    """Predict one training step of a run said in three objects.

    Parameters
    ----------
    workload : Workload
        What is trained: model, input shape, batch (global), precision, optimizer, kernel stack (a model alone is
        ``Workload(model)``: one sample per step, FP32, SGD with momentum — :func:`perfmodel.predict_step_time`'s
        defaults hold for every field left unset).
    cluster : Cluster or str
        On what: the GPU, how many, per node, the links (a GPU name is ``Cluster(name)``: one GPU).
    parallelism : Parallelism, str or None
        How: strategy and degrees, micro-batches, pipeline schedule, checkpointing, overlap (a strategy name is
        ``Parallelism(name)``; None is data parallel).
    alpha : float in (0, 1)
        Miss rate of the interval.

    Returns
    -------
    Prediction
        Prints its numbers first and ``basis`` last; ``.to_frame()`` gives one row, ``.plot(ax)`` the breakdown.

    Example
    -------
    >>> w = pm.Workload(cfg, input_shape=(4096,), batch_size=32, precision="bf16", optimizer="adam-fused")
    >>> pm.predict(w, pm.Cluster("H100", n_gpus=8), pm.Parallelism("fsdp", activation_checkpointing="selective"))
    """
    return predict_with_memory(workload, cluster, parallelism, alpha=alpha)


def predict_with_memory(workload, cluster, parallelism=None, memory_row=None, *, alpha: float = 0.2) -> Prediction:
    """:func:`predict`, given the run's :func:`perfmodel.predict_memory` row when the caller has it already (a layout
    search checks every layout's memory before it predicts the ones that fit); None computes it."""
    import warnings

    from perfmodel import __version__
    from perfmodel.datasets import mfu_peak_tflops
    from perfmodel.step.kernels import learned_on
    from perfmodel.step.step_time import OutOfMemoryWarning, memory_rows, step_frame

    given = _as_objects(workload, cluster, parallelism)
    w, c, p = resolve_run(*given)
    frame = step_frame(w, (c,), p, alpha=alpha, by_group=True)
    row = frame.iloc[0].to_dict()
    mem = None
    if not w.inference:
        m = memory_row if memory_row is not None else memory_rows(w, (c,), p)[0]
        mem = {k: float(m[k]) for k in (*MEMORY_PARTS, "total_bytes", "capacity_bytes")}
        row.update(memory_per_gpu_bytes=mem["total_bytes"], fits=bool(m["fits"]))
        if not m["fits"]:
            warnings.warn(f"the step does not fit in GPU memory on {row['gpu']} ({mem['total_bytes'] / 2**30:.1f} GiB of "
                          f"{mem['capacity_bytes'] / 2**30:.1f}): its time is that of a run that would stop with "
                          "out-of-memory.", OutOfMemoryWarning, stacklevel=3)  # the caller of predict
    groups = _group_seconds(row)
    for k in ("comm_by_group_s", "comm_total_by_group_s", "recompute_s"):
        row.pop(k, None)
    step = float(row["step_time_s"])
    samples = float(row["batch_size"]) / step
    seq = _sequence_length(w)
    peak = mfu_peak_tflops(c.spec, row["precision"]) * 1e12
    breakdown = dict(forward=float(row["forward_s"]), backward=float(row["backward_s"]),
                     recompute=groups["recompute"], optimizer=float(row["optimizer_s"]),
                     compute=float(row.get("compute_s", step)), comm_exposed=float(row.get("comm_s", 0.0)),
                     comm_total=float(row.get("comm_total_s", 0.0)), bubble=float(row.get("bubble_s", 0.0)),
                     overlap_slowdown=float(row.get("overlap_slowdown_s", 0.0)))
    return Prediction(workload=given[0], cluster=given[1], parallelism=given[2], step_time_s=step, lower_s=float(row["lower_s"]),
                      upper_s=float(row["upper_s"]), alpha=float(alpha), breakdown=breakdown,
                      comm_exposed_s=groups["exposed"], comm_total_s=groups["total"], memory=mem,
                      fits=None if mem is None else bool(row["fits"]), flops=float(row["flops"]), samples_per_s=samples,
                      tokens_per_s=None if seq is None else samples * seq, mfu=float(row["flops"]) / (step * peak),
                      basis=str(row["basis"]),
                      provenance=dict(perfmodel=__version__, kernels=learned_on(row["precision"]),
                                      extrapolation=_how_far(c.spec, row["precision"])),
                      _row=row)


def _how_far(spec, prec: str) -> list[str]:
    """How far the GPU lies outside what the kernel efficiencies were learned on, at this precision (its FP32 rate and
    bandwidth against the FP32 training GPUs; at half precision, its GEMM peak against the GPUs the half-precision
    GEMM model was fitted on): the phrases of the extrapolation warning, empty inside."""
    from perfmodel.step.kernels import _extrapolation_notes

    return [note.split(": ", 1)[1] for note in _extrapolation_notes(spec, prec)]


def _group_seconds(row: dict) -> dict:
    from perfmodel.step.parallel import COMM_GROUPS

    zero = {g: 0.0 for g in COMM_GROUPS}
    exposed = row.get("comm_by_group_s")
    total = row.get("comm_total_by_group_s")
    recompute = row.get("recompute_s")
    return dict(exposed=dict(exposed) if isinstance(exposed, dict) else zero,
                total=dict(total) if isinstance(total, dict) else dict(zero),
                recompute=0.0 if recompute is None or pd.isna(recompute) else float(recompute))


def _sequence_length(w: Workload) -> int | None:
    """Tokens per sample for a token model (the product of the input shape), else None."""
    from perfmodel.step.trace import model_input

    net, shape, in_dtype, _, _ = model_input(w.model, w.input_shape, w.input_dtype)
    import torch

    if in_dtype in (torch.long, torch.int, torch.int64):
        return int(np.prod(shape))
    return None


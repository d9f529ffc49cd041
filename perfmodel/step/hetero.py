"""Data-parallel training on a mix of GPU types (heterogeneous instances), from the single-GPU operator model.

A cloud user who cannot get eight H100s may rent four H100s and four L4s, or the cheapest mix of instance types that
meets a deadline (Srifty, Luo et al., "Swift and Thrifty Distributed Training on the Cloud", MLSys 2022, picks such
heterogeneous VM sets on EC2). :func:`predict_mixed_step_time` predicts one synchronous data-parallel step on such a
mix:

* **each GPU** runs the per-operator model (:func:`perfmodel.predict_step_time`, one GPU) at its local batch;
* **local batches**: ``balance="equal"`` gives every GPU ``batch / n`` (PyTorch DDP as it comes: the fast GPUs wait for
  the slow ones every step); ``balance="speed"`` (default) splits the global batch in proportion to speed, as
  heterogeneity-aware trainers do: samples are handed out one at a time to the GPU that would finish first, using
  each GPU type's step time interpolated linearly in the batch between two predicted batches, and the chosen split is
  then predicted exactly. The gradients are assumed to be averaged with weights proportional to the local batches
  (same all-reduce, so no extra communication);
* **the step** ends when the slowest GPU has finished its backward pass and the last gradient bucket is all-reduced:
  ``max_g t_g(b_g)`` plus the exposed part of DDP's bucketed ring all-reduce over all ``n`` GPUs
  (:func:`perfmodel.step.parallel.exposed_bucket_allreduce`) on the link between the instances (default
  ``"ethernet-100g"``: GPUs of different types sit in different instances), overlapped with the slowest GPU's backward
  pass.

Not modelled: a ring slowed by its slowest NIC beyond the link given, stragglers within a type, and the statistical
effect of unequal local batches (none when the gradients are weighted by local batch).
"""
from __future__ import annotations

import heapq
import math

import numpy as np
import pandas as pd

__all__ = ["predict_mixed_step_time", "parse_mix", "mix_label", "MIXED_COLUMNS", "MIXED_DEFAULT_LINK", "BALANCES"]

#: Link between GPUs of different types when ``interconnect`` is not given: they sit in different instances.
MIXED_DEFAULT_LINK = "ethernet-100g"

#: How the global batch is split over the GPUs.
BALANCES = ("speed", "equal")

#: Columns of :func:`predict_mixed_step_time`.
MIXED_COLUMNS = ["model", "mix", "n_gpus", "batch_size", "balance", "local_batches", "slowest_gpu", "step_time_s",
                 "compute_s", "comm_s", "comm_total_s", "overlap_slowdown_s", "idle_fraction", "interconnect", "precision", "optimizer", "basis"]


def parse_mix(mix) -> dict:
    """``{catalog GPU id: count}`` of a mix given as a dict, a sequence of ``(gpu, count)`` pairs or a string
    ``"4xA100+4xL4"``; at least two GPU types, each count a positive int.

    Raises
    ------
    ValueError
        A count that is not a positive int, a GPU named twice, fewer than two GPU types, or a string that does not
        read as ``<count>x<gpu>+<count>x<gpu>``.
    perfmodel.datasets.UnknownNameError
        An unknown GPU.
    """
    from perfmodel.datasets import canonical_gpu

    if isinstance(mix, str):
        pairs = []
        for part in mix.split("+"):
            count, sep, gpu = part.strip().partition("x")
            if not sep or not count.strip().isdigit() or not gpu.strip():
                raise ValueError(f"mix {mix!r}: {part!r} does not read as '<count>x<gpu>'. Write e.g. '4xA100+4xL4' or pass "
                                 "a dict {'A100': 4, 'L4': 4}.")
            pairs.append((gpu.strip(), int(count)))
    elif isinstance(mix, dict):
        pairs = list(mix.items())
    else:
        try:
            pairs = [tuple(p) for p in mix]
        except TypeError:
            raise TypeError(f"mix must be a dict {{gpu: count}}, a sequence of (gpu, count) pairs or a string like "
                            f"'4xA100+4xL4'; got {type(mix).__name__}.") from None
        if any(len(p) != 2 for p in pairs):
            raise ValueError(f"mix: every entry must be a (gpu, count) pair; got {mix!r}.")
    out: dict = {}
    for gpu, count in pairs:
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"mix: the count of {gpu!r} must be a positive int; got {count!r}.")
        g = canonical_gpu(str(gpu))
        if g in out:
            raise ValueError(f"mix: {g} is named twice ({mix!r}); give each GPU type once with its total count.")
        out[g] = int(count)
    if len(out) < 2:
        raise ValueError(f"mix {mix!r} has {len(out)} GPU type(s); a mix needs at least two. For one type use "
                         "perfmodel.predict_step_time(..., n_gpus=, strategy='dp').")
    return out


def mix_label(mix: dict) -> str:
    """``"4xA100+4xL4"`` for ``{"A100": 4, "L4": 4}`` (in the order given)."""
    return "+".join(f"{c}x{g}" for g, c in mix.items())


def _split_by_speed(B: int, counts: dict, line: dict) -> dict:
    """Local batch of every GPU: one sample each, then the others one at a time to the GPU that would finish first under ``line[g] = (a, s)``
    (step ≈ a + s·b); returns ``{gpu: sorted list of the local batches of its GPUs}``."""
    heap = []
    batches = {}
    for g, c in counts.items():
        batches[g] = [1] * c  # every GPU of the ring takes part: at least one sample each
        a, s = line[g]
        for i in range(c):
            heap.append((a + 2 * s, g, i))
    heapq.heapify(heap)
    for _ in range(B - sum(counts.values())):
        _, g, i = heapq.heappop(heap)
        batches[g][i] += 1
        a, s = line[g]
        heapq.heappush(heap, (a + s * (batches[g][i] + 1), g, i))
    return {g: sorted(v) for g, v in batches.items()}


def predict_mixed_step_time(model, mix, *, batch_size: int, input_shape=None, input_dtype=None, precision: str = "fp32",
                            optimizer: str | None = "sgd-momentum", balance: str = "speed", interconnect=None,
                            overlap_grad_reduce: bool = True) -> pd.DataFrame:
    """Predicted step time of synchronous data-parallel training on a mix of GPU types (see the module docstring).

    Parameters
    ----------
    model : str, torch.nn.Module, dict or transformers.PretrainedConfig
        As for :func:`perfmodel.predict_step_time`.
    mix : dict, sequence of (gpu, count) or str
        The GPUs: ``{"A100": 4, "L4": 4}``, ``[("H100", 2), ("L4", 6)]`` or ``"2xH100+6xL4"`` (:func:`parse_mix`).
    batch_size : int
        Global batch (samples per step over all GPUs); at least one sample per GPU.
    input_shape, input_dtype, precision, optimizer
        As for :func:`perfmodel.predict_step_time`.
    balance : {"speed", "equal"}
        Split the batch in proportion to speed (default) or equally (``batch_size`` must then be a multiple of the
        GPU count).
    interconnect : str or Interconnect, optional
        Link of the ring between the GPUs; default :data:`MIXED_DEFAULT_LINK`.
    overlap_grad_reduce : bool
        All-reduce gradient buckets during the slowest GPU's backward pass (DDP) or after it.

    Returns
    -------
    DataFrame
        One row, :data:`MIXED_COLUMNS`: ``local_batches`` (``"A100:6,L4:2"``: the largest local batch of each type),
        ``slowest_gpu``, ``step_time_s`` = ``compute_s`` (the slowest GPU's step) + ``comm_s`` (exposed
        all-reduce) + ``overlap_slowdown_s`` (what the all-reduce hidden under the slowest GPU's backward pass costs
        it, :data:`perfmodel.step.collectives.OVERLAP_SLOWDOWN`), ``comm_total_s``, ``idle_fraction`` (the share of the step the fastest GPU waits for the slowest before the all-reduce ends).

    Raises
    ------
    ValueError
        A bad mix, a batch smaller than the GPU count, ``balance="equal"`` with a batch that does not split, an
        unknown ``balance``.
    perfmodel.datasets.UnknownNameError
        Unknown GPU, precision or interconnect.
    """
    from perfmodel.step import step_time as ost
    from perfmodel.step.collectives import overlap_slowdown
    from perfmodel.step.parallel import GRAD_REDUCE_BYTES, exposed_bucket_allreduce
    from perfmodel.step.trace import model_and_layout
    from perfmodel.step.collectives import resolve_interconnect

    counts = parse_mix(mix)
    if balance not in BALANCES:
        raise ValueError(f"balance must be one of {BALANCES}; got {balance!r}.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise ValueError(f"batch_size must be a positive int (the global batch); got {batch_size!r}.")
    B, n = int(batch_size), sum(counts.values())
    if B < n:
        raise ValueError(f"batch_size {B} is smaller than the {n} GPUs of {mix_label(counts)}: every GPU needs at least one "
                         f"sample. Use batch_size >= {n}.")
    if balance == "equal" and B % n:
        raise ValueError(f"balance='equal' gives every GPU batch_size / n_gpus samples, but {B} does not split over {n} GPUs. "
                         f"Use a multiple of {n} (e.g. {n * (B // n)} or {n * (B // n + 1)}) or balance='speed'.")
    link = resolve_interconnect(interconnect if interconnect is not None else MIXED_DEFAULT_LINK, next(iter(counts)))
    kw = dict(input_shape=input_shape, input_dtype=input_dtype, precision=precision, optimizer=optimizer)
    gpus = list(counts)
    cache: dict = {}

    def single(b: int) -> pd.DataFrame:  # one GPU of every type at local batch b
        if b not in cache:
            cache[b] = ost.predict_step_time(model, gpus, batch_size=int(b), **kw).set_index("gpu")
        return cache[b]

    if balance == "equal":
        batches = {g: [B // n] * c for g, c in counts.items()}
    else:
        lo = max(1, B // (2 * n))
        hi = max(lo + 1, math.ceil(2 * B / n))
        t_lo, t_hi = single(lo)["step_time_s"], single(hi)["step_time_s"]
        line = {}
        for g in gpus:
            s = max(float(t_hi[g] - t_lo[g]) / (hi - lo), 1e-12)
            line[g] = (max(float(t_lo[g]) - s * lo, 0.0), s)
        batches = _split_by_speed(B, counts, line)
    # exact prediction of every (type, local batch) of the split
    per = []
    for g, bs in batches.items():
        for b in sorted(set(bs)):
            r = single(b).loc[g]
            per.append(dict(gpu=g, batch=b, step=float(r["step_time_s"]), backward=float(r["backward_s"]), n=bs.count(b)))
    per = pd.DataFrame(per)
    slow = per.loc[per["step"].idxmax()]
    fast = float(per["step"].min())
    net, shape, in_dtype, vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    size = GRAD_REDUCE_BYTES  # FP32 gradients at every precision (mixed precision: DDP under autocast reduces FP32)
    exposed, total = exposed_bucket_allreduce(float(slow["backward"]), float(lay.params * size), n, link,
                                              overlap=overlap_grad_reduce)
    # the all-reduce hidden under the slowest GPU's backward pass slows it (as in every layout: OVERLAP_SLOWDOWN)
    slowed = overlap_slowdown(total - exposed, float(slow["backward"]))
    step = float(slow["step"]) + exposed + slowed
    local = ",".join(f"{g}:{max(bs)}" for g, bs in batches.items())
    basis = (f"synchronous data parallel over {mix_label(counts)} ({balance} split of {B} samples: {local}); each GPU's step "
             f"from the per-operator model at its local batch; DDP's bucketed ring all-reduce of {lay.params * size / 2**20:.0f} MiB "
             f"over {n} GPUs on {link.name} ({link.bandwidth_gb_per_s:g} GB/s x {link.efficiency:g}), overlapped with the "
             f"slowest GPU's backward pass" + ("" if overlap_grad_reduce else " (not overlapped)")
             + ", which it slows by the published overlap share (OVERLAP_SLOWDOWN)")
    return pd.DataFrame([dict(model=name, mix=mix_label(counts), n_gpus=n, batch_size=B, balance=balance, local_batches=local,
                              slowest_gpu=str(slow["gpu"]), step_time_s=step, compute_s=float(slow["step"]), comm_s=exposed,
                              comm_total_s=total, overlap_slowdown_s=slowed, idle_fraction=(float(slow["step"]) - fast) / step if step > 0 else 0.0,
                              interconnect=link.name, precision=str(precision).lower(), optimizer=optimizer or "none",
                              basis=basis)])[MIXED_COLUMNS]

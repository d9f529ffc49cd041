"""One training step on several GPUs: data, fully sharded, tensor, pipeline and context parallel, from the single-GPU operator model.

The compute of each GPU is the per-operator model of :mod:`perfmodel.step.step_time` applied to the operators that
GPU runs; the communication is an α–β cost on the link between the GPUs:

* **collectives** (ring algorithm, ``n`` GPUs, message of ``S`` bytes, link bandwidth ``B`` per direction with NCCL's
  efficiency ``e``, latency ``α`` per step): all-reduce ``2(n−1)/n · S/(eB) + 2(n−1)α``; all-gather and
  reduce-scatter (``S`` the gathered size) ``(n−1)/n · S/(eB) + (n−1)α``; a point-to-point send ``S/(eB) + α``.
  An all-reduce whose group spans nodes runs as NCCL's tree instead where NCCL's tuning model finds it faster,
  ``2·S/(0.92·c·eB) + 2((ppn−1)·α_intra + ⌊log2 N⌋·α_inter)`` for ``ppn`` ranks on each of ``N`` nodes (``c``
  NCCL's correction of its tree's bandwidth on medium messages)
  (:func:`perfmodel.step.collectives.allreduce_time`): DDP's buckets over many nodes.
* **dp** (PyTorch DDP): each GPU runs the step at ``batch / n``; gradients are all-reduced in buckets (first 1 MiB,
  then 25 MiB, DDP's defaults) in the order the backward pass produces them (from the last layer to the first); bucket
  ``i`` is ready when the backward pass has produced its share of the gradient bytes, and the buckets go through the
  link one after another: only what is still on the link when the backward pass ends is exposed (the last bucket, when
  the backward pass is long enough). ``overlap_grad_reduce=False`` all-reduces everything after the backward pass
  (Megatron-LM's default).
* **fsdp** (ZeRO-3): each GPU holds ``1/n`` of the parameters, gathers them per layer in the forward and again in the
  backward pass and reduce-scatters the gradients; gathers are prefetched under the previous layer's compute, so a
  pass costs ``max(compute, communication)`` plus the first layer's gather; each gather lands through a copy-out
  kernel on the compute stream (:func:`_fsdp_copy_outs`); the optimizer updates ``1/n`` of the parameters.
  Parameters are gathered at the training precision (BF16 at FP8); in FP8 under ``torch.compile`` the FP8 linears'
  weights are gathered in FP8 (:func:`perfmodel.step.trace.fp8_linear_weights`), as torchtitan's
  ``enable_fsdp_float8_all_gather`` does and as the compiled FP8 casts assume (weights cast on their shard), and
  Megatron-Core's distributed optimizer gathers them in FP8 with ``Parallelism(fp8_param_gather=True)``
  (:func:`perfmodel.step.strategy.resolve_fp8_param_gather`); the memory counts them so.
* **tp** (Megatron-LM): every GPU sees the whole batch; the matmuls, attention and activation of each attention and
  MLP block are split ``n`` ways (attention heads, MLP columns), as are the vocabulary projection, the loss and the
  embedding (vocabulary-parallel); layer norms, residual adds and the dropouts on the hidden state are replicated. Two
  all-reduces of the activations (``tokens × hidden``) per transformer layer in the forward pass and two in the
  backward pass, plus one for the embedding and one for the vocabulary projection. Under torchao's tensorwise Float8
  (PyTorch's TP, as torchtitan runs it) each layer's all-gathers move FP8, one byte per element, its reduce-scatters
  the training precision; so do they under Transformer Engine's FP8 recipes with Megatron's sequence parallelism, at
  the recipe's bytes with its scales (:data:`TE_TP_GATHER_BYTES`, :func:`_tp_gather_bytes`).
* **pp** (1F1B): contiguous stages of transformer layers (the embedding on the first stage, the head and loss on the
  last), ``m`` micro-batches of ``batch / m``; with ``t_s`` the forward + backward time of stage ``s`` per
  micro-batch, the step takes ``Σ_s t_s + (m−1)·max_s t_s`` (``(m+p−1)·t`` for equal stages: a bubble of
  ``(p−1)/(m+p−1)``), plus one send of the activations forward and one of their gradients backward per stage
  boundary and micro-batch; tied input/output embeddings are all-reduced between the first and the last stage.

* **combinations** (Megatron-LM's "3D parallelism", ``n_gpus = dp × tp × pp``, spelled ``"dp2-tp2-pp2"``,
  ``"tp4-pp2"``, ``"dp-tp2"`` or ``{"dp": 2, "tp": 2}``; :func:`parse_strategy`): the global batch splits over the
  ``dp`` replicas (``batch % dp == 0``), each replica's batch into ``m`` micro-batches. Each GPU runs its stage's
  operators at the micro-batch with the tensor-parallel split above over ``tp`` ranks, and its stage's share of the
  ``4·L+2`` activation all-reduces (``tokens × hidden``, over the ``tp`` group; the embedding's on the first stage,
  the vocabulary projection's on the last) inside each micro-batch's slot of the 1F1B schedule. Assumed: a send between
  stages carries ``1/tp`` of the activations per tensor-parallel rank (Megatron's scatter-gather), then an all-gather
  over the ``tp`` group rebuilds them; the ``dp`` all-reduce of each GPU's gradients (its stage's parameters, the
  split ones ``/ tp``) runs in DDP's buckets under the **last** micro-batch's backward pass of the stage (with
  ``overlap_grad_reduce=False`` after it), and the step ends when the slowest stage has reduced and applied its
  optimizer step (the other stages' earlier finish is not credited). ``fsdp`` combines with ``tp`` (torchtitan's
  2D parallelism, ``"fsdp32-tp8"``): each tensor-parallel rank's share of the parameters is sharded over the ``dp``
  group, gathered per layer and reduce-scattered as for ``fsdp``, with the tensor-parallel all-reduces of every layer
  on the critical path. ``fsdp`` combines with ``pp`` (torchtitan's 3D, ``"fsdp8-tp8-pp8"``): as torchtitan runs it,
  without resharding between micro-batches — each pipeline rank gathers its stage's shard once per step, under its
  first micro-batch's forward pass (layer by layer: ``max(0, gather − forward) + gather / layers`` exposed, the
  slowest rank's), and reduce-scatters the gradients once, under its last micro-batch's backward pass.
* **cp** (context parallelism, torchtitan's ring attention with the all-gather rotation, Megatron's ring of K/V
  exchanges moving the same bytes; with ``fsdp`` — ``"fsdp4-cp2"``, ``"fsdp1-cp8"`` — or with ``dp``,
  ``"dp2-cp2-tp8-pp8"``, whose gradients are then reduced over the ``dp·cp`` ranks): each of the ``cp`` ranks of a replica holds ``s / cp`` tokens of every sequence
  (``s`` a multiple of ``2·cp``, two load-balanced chunks per rank); every operator runs on the rank's tokens except
  the fused attention, whose queries attend to the whole sequence (:func:`context_parallel_work`: ``cp`` times the
  traced shard's FLOPs, ``1/cp`` of the sequence's causal work). Per layer and pass, K and V of the whole sequence
  (this tensor-parallel rank's heads) are all-gathered over the ``cp`` group under the first of the ``cp`` attention
  chunks, and dK, dV reduce-scattered after the backward one. FSDP shards the parameters over the ``dp × cp`` ranks.
  PyTorch's ring attention (``framework="pytorch"``) also runs, beside each attention kernel, the memory-bound
  kernels of its FP32 merges and gradient accumulations (:func:`perfmodel.step.trace.ring_attention_work`).
* **Megatron-Core's execution** (``framework="megatron"``, :func:`perfmodel.step.strategy.resolve_execution`): the
  distributed optimizer — the optimizer updates ``1/(dp·cp)`` of the rank's parameters, its FP32 gradients are
  reduce-scattered in Megatron's buckets (:data:`MEGATRON_BUCKET_ELEMENTS`) under the last micro-batch's backward pass
  and the updated parameters all-gathered before the next forward pass, the first bucket exposed and the rest under
  the forward pass (:func:`exposed_bucket_gather`; both exposed with ``overlap_grad_reduce=False``); a pipeline stage
  does so for its own parameters. ``distributed_optimizer=False``: DDP-style all-reduce in Megatron's buckets.
* **sharded gradients** (ZeRO-2, ``Parallelism(shard_gradients=True)``: Megatron-Core's ``optim_grads`` sharding
  under its distributed optimizer, FSDP with a pipeline synchronising every micro-batch): each micro-batch's
  gradients are reduce-scattered (in Megatron's buckets, FSDP's per layer) into the rank's ``1/(dp·cp)`` shard, not
  accumulated whole and reduced once per step: ``m`` reduce-scatters a step, the last one's tail exposed as the single
  one is, the others under the next micro-batch's passes; a pipeline stage whose reduce-scatter outlasts its
  micro-batch's work runs at the reduce-scatter's pace (its next backward waits for the gradient buckets), and a
  flat layout exposes what outlasts the next micro-batch's passes. FSDP without a pipeline always runs so.
* **Megatron's backward overlap** (``framework="megatron"`` without ``async_tp``; ``overlap_tp_backward=False`` turns
  it off, :data:`perfmodel.step.strategy.TP_BACKWARD_OVERLAP` cites the code): each column-parallel linear issues its
  backward collectives under its own GEMMs — the input gradient's reduce-scatter (all-reduce without sequence
  parallelism) under the weight-gradient GEMM, and with sequence parallelism its input shard all-gathered again under
  the input-gradient GEMM; the row-parallel linear's output gradient is gathered before its GEMMs, exposed
  (:func:`_overlapped_tp_backward`). PyTorch's TP runs them in order.
* **sequence parallelism** (Megatron's with ``tp > 1``, torchtitan's with ``fsdp`` and ``tp``): the norms, dropouts
  and residual adds on the hidden state run on ``s / tp`` tokens; the all-gather and reduce-scatter that replace each
  all-reduce move its bytes (as modelled); between pipeline stages the sequence shard is sent, with no all-gather.
* **asynchronous tp** (``async_tp=True``, torchtitan's micro-pipelined all-gather-matmul and matmul-reduce-scatter;
  Megatron's ``--tp-comm-overlap``): each block (attention, MLP) of a layer has an all-gather before its
  column-parallel linears and a reduce-scatter after its row-parallel one; each is cut into ``tp`` chunks that overlap
  the chunks of the matmul it is fused with, so ``max(c / tp, c − (tp−1)/tp · matmul)`` of a collective ``c`` is
  exposed (:func:`_fused_exposed`): in the forward pass the all-gather under the column-parallel GEMMs and the
  reduce-scatter under the row-parallel one; in the backward pass the all-gather of the output gradient under the
  row-parallel input-gradient GEMM, and the reduce-scatter of the input gradient under the column-parallel one only
  where one GEMM produces it (PyTorch's pass fuses a reduce-scatter whose input is a matmul's output, not a sum of
  several: separate Q, K, V or gate and up projections leave it whole). Megatron's ``--tp-comm-overlap`` with
  sequence parallelism runs Transformer Engine's userbuffers instead in the backward pass: the column-parallel
  linear's input gathered again under its input-gradient GEMM and its input gradient reduce-scattered under its
  weight-gradient GEMM, each whole (:func:`_async_tp_layer`). torch's fused kernels run two kernels of their own on
  the compute stream, exposed: the rank's shard copied into symmetric memory before each fused all-gather, and the
  sum of the ``tp`` partials after each fused reduce-scatter (:func:`_micro_pipeline_kernels`). An input-gradient GEMM is timed as its forward GEMM (the same
  FLOPs and rows). The hidden part still moves its bytes: every layout counts the group's whole communication in
  ``comm_total`` (vanilla TP's, and Megatron's re-gathers), and the compute beside the hidden part is slowed as under any hidden collective
  (:data:`perfmodel.step.collectives.OVERLAP_SLOWDOWN`); so is the compute under context parallelism's hidden K/V
  exchange.
* **pipeline schedules**: ``"1f1b"`` and ``"interleaved-1f1b"`` (``virtual_stages`` model chunks per rank, default
  two, torchtitan's default for its looped schedules; :func:`pipeline_time`): the fill and drain shrink ``v``-fold, the sends grow ``v``-fold.
  One ``interconnect`` serves all the groups unless a dict ``{"tp": ..., "pp": ..., "dp": ...}`` gives each its
  own (:func:`resolve_links`; e.g. NVLink for ``tp`` inside a node, InfiniBand for ``pp`` and ``dp`` across nodes).
  A single strategy spelled with its degree (``"dp4"`` on 4 GPUs) is the single strategy, to the bit.

NVLink's and InfiniBand's ``e`` and ``α`` are fitted on Vidur's measured NCCL curves
(:mod:`perfmodel.step.collectives`); PCIe and Ethernet keep the assumed :data:`NCCL_EFFICIENCY`.

What it does not model: congestion between collectives of different groups (or of several groups sharing one
link), NCCL protocol switches on small messages (measured below ~256 KiB: a floor of 10–60 µs whatever ``n``),
NVSwitch in-network reduction (NVLS) and SHARP (NCCL's maintainers put NVLS's all-reduce on 8 H100 at about 480
GB/s of bus bandwidth against the ring's 370, about 1.3 times, reached only above 256 MB messages:
github.com/NVIDIA/nccl-tests/issues/212, github.com/NVIDIA/nccl/issues/1442; a user's nccl-tests show no gain on 2-4
GPUs, github.com/NVIDIA/nccl/issues/1455; Vidur's 8-GPU H100 all-reduces of 32-64 MiB take 0.84 of the fitted
ring's time, the 4-GPU ones 0.93, so at the bucket and activation sizes training sends no gain is added, and an
all-reduce of gigabytes on 5-8 Hopper GPUs may run up to 1.3 times faster than predicted), the slow-down of matmuls cut
into chunks by asynchronous tensor parallelism (timed as ``tp`` chunks of ``tokens / tp`` rows, the GEMM model gives
them their whole GEMM's rate within 2 % on Llama 3.1 8B at TP 8, so the decomposition is not charged), and the lower efficiency of ring attention's partial
kernels under context parallelism.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools

import numpy as np
import pandas as pd

# what a layout is made of, re-exported here as the parallel layer's vocabulary
from perfmodel.step.collectives import (INTERCONNECTS, NCCL_EFFICIENCY, OVERLAP_SLOWDOWN, Interconnect, allgather_time, allreduce_time,
                                          alltoall_time, deepep_rdma_share, deepep_time, overlap_slowdown, p2p_time, routed_spread,
                                          reduce_scatter_time, resolve_interconnect)
from perfmodel.step.strategy import (LINK_GROUPS, check_micro_batches, LINK_LEVELS, PIPELINE_SCHEDULES, STRATEGIES, StrategyError, check_async_tp,
                                       check_sequence_length, check_sequence_parallel, check_strategy_name, check_tensor_parallel, context_parallel_shape,
                                       check_expert_grid, crosses_nodes, default_network, parse_strategy, ranks_per_node,
                                       check_pipeline_split, pipeline_chunks, pipeline_virtual_stages, resolve_fp8_param_gather, resolve_links,
                                       strategy_combinations)
from perfmodel.step.trace import (GROUPED_GEMM_OP, TE_WEIGHT_CAST_OPS, FP8_BLOCK_BYTES_PER_ELEMENT, MXFP8_BYTES_PER_ELEMENT, expert_param_names, NVFP4_BYTES_PER_ELEMENT, _SPLIT_MODULE, ModelLayout, _below_layer, _layer_prefix, context_parallel_work, model_and_layout,
                                  model_layout, op_layer, rank_share)

__all__ = [
    "Interconnect", "INTERCONNECTS", "LINK_LEVELS", "crosses_nodes", "NCCL_EFFICIENCY", "STRATEGIES", "LINK_GROUPS", "DDP_BUCKET_BYTES", "DDP_FIRST_BUCKET_BYTES", "StrategyError",
    "resolve_interconnect", "resolve_links", "check_strategy_name", "parse_strategy", "strategy_combinations", "allreduce_time", "allgather_time", "reduce_scatter_time", "p2p_time",
    "bucket_sizes", "ONCE_PER_STEP_OPS", "exposed_bucket_allreduce", "pipeline_time", "predict_parallel_step_time", "parallel_rows", "rank_work", "ModelLayout", "model_layout",
    "PIPELINE_SCHEDULES", "pipeline_virtual_stages", "check_async_tp", "context_parallel_shape", "context_parallel_work",
]

#: PyTorch DDP's gradient bucket cap (``bucket_cap_mb=25``) and its first, smaller bucket (1 MiB), bytes.
DDP_BUCKET_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 2**20


def bucket_sizes(grad_bytes: float, *, bucket_bytes: float = DDP_BUCKET_BYTES, first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES) -> np.ndarray:
    """Sizes (bytes) of DDP's gradient buckets in the order they are all-reduced: a first bucket of
    ``first_bucket_bytes``, then ``bucket_bytes`` each, the rest in the last one."""
    if grad_bytes <= 0:
        return np.zeros(0)
    sizes = [min(first_bucket_bytes, grad_bytes)]
    left = grad_bytes - sizes[0]
    while left > 0:
        sizes.append(min(bucket_bytes, left))
        left -= sizes[-1]
    return np.asarray(sizes, dtype=float)


#: Megatron-Core's gradient bucket (``DistributedDataParallelConfig.bucket_size`` left unset: 40 M elements, or
#: 1 M per data-parallel rank when that is more), elements; no smaller first bucket.
MEGATRON_BUCKET_ELEMENTS = 40_000_000


def megatron_bucket_bytes(elem_bytes: float, dp_ranks: int) -> float:
    """Bytes of one of Megatron-Core's buckets: :data:`MEGATRON_BUCKET_ELEMENTS` (at least 1 M per rank of the
    ``dp·cp`` group) elements of ``elem_bytes``."""
    return float(max(MEGATRON_BUCKET_ELEMENTS, 1_000_000 * int(dp_ranks)) * elem_bytes)


def exposed_bucket_collective(window_s: float, nbytes: float, n: int, link: Interconnect, *, collective=None,
                              overlap: bool = True, bucket_bytes: float = DDP_BUCKET_BYTES,
                              first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES) -> tuple[float, float]:
    """(exposed, total) seconds of a bucketed collective (``collective(bytes, n, link)``, default the all-reduce) of
    ``nbytes`` produced at a constant rate over a pass of ``window_s``: bucket ``i`` goes on the link when the pass has
    produced its cumulative share, after the bucket before it; exposed is what is left when the pass ends.
    ``overlap=False``: one collective of ``nbytes`` after the pass."""
    collective = allreduce_time if collective is None else collective
    if n == 1 or nbytes <= 0:
        return 0.0, 0.0
    if not overlap:
        t = collective(nbytes, n, link)
        return t, t
    sizes = bucket_sizes(nbytes, bucket_bytes=bucket_bytes, first_bucket_bytes=first_bucket_bytes)
    ready = window_s * np.cumsum(sizes) / nbytes
    end = total = 0.0
    for r, size in zip(ready, sizes):
        c = collective(float(size), n, link)
        end = max(end, float(r)) + c
        total += c
    return min(max(end - window_s, 0.0), total), total  # never more than on the link (end - window rounds past it)


def exposed_bucket_gather(forward_s: float, nbytes: float, n: int, link: Interconnect, *, overlap: bool = True,
                          bucket_bytes: float = DDP_BUCKET_BYTES) -> tuple[float, float]:
    """(exposed, total) seconds of the distributed optimizer's parameter all-gather (``nbytes`` gathered) before a
    forward pass of ``forward_s``: with ``overlap`` (Megatron's ``--overlap-param-gather``) the buckets are gathered
    in the order the forward pass uses them, the first before it starts and each later one while the previous
    buckets' layers run: the first bucket plus what the rest does not hide, ``ag_1 + max(0, Σ_{i>1} ag_i − forward)``;
    without, all of them before the forward pass."""
    if n == 1 or nbytes <= 0:
        return 0.0, 0.0
    sizes = bucket_sizes(nbytes, bucket_bytes=bucket_bytes, first_bucket_bytes=bucket_bytes)
    times = np.array([allgather_time(float(b), n, link) for b in sizes])
    total = float(times.sum())
    if not overlap:
        return total, total
    return float(times[0] + max(times[1:].sum() - forward_s, 0.0)), total


def exposed_bucket_allreduce(backward_s: float, grad_bytes: float, n: int, link: Interconnect, *, overlap: bool = True,
                             bucket_bytes: float = DDP_BUCKET_BYTES, first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES) -> tuple[float, float]:
    """(exposed, total) seconds of DDP's gradient all-reduce after a backward pass of ``backward_s``.

    Bucket ``i`` is ready when the backward pass has produced its cumulative share of ``grad_bytes`` (gradients
    produced at a constant rate); buckets go through the link one after another. Exposed is what is left after the
    backward pass ends: at least the last bucket's all-reduce, at most all of them. ``overlap=False``: all of them,
    as one all-reduce of ``grad_bytes`` after the backward pass.
    """
    return exposed_bucket_collective(backward_s, grad_bytes, n, link, overlap=overlap, bucket_bytes=bucket_bytes,
                                     first_bucket_bytes=first_bucket_bytes)


def pipeline_time(stage_s, micro_batches: int, *, p2p_s: float = 0.0, virtual_stages: int = 1) -> tuple[float, float]:
    """(step, bubble) seconds of a 1F1B pipeline: ``Σ t_s + (m−1)·max t_s`` with ``t_s`` the forward + backward time of
    pipeline rank ``s`` for one micro-batch, plus ``2·p2p_s`` per stage boundary on the first micro-batch's path and
    per micro-batch at the slowest rank. The bubble is the idle time of the slowest rank while the pipeline fills and
    drains, ``Σ t_s − max t_s`` (``(p−1)/(m+p−1)`` of the step for equal stages without communication); the sends are
    communication, not bubble, so step = ``m·max t_s`` + bubble + sends.

    ``virtual_stages`` ``v > 1``: the interleaved 1F1B schedule (Narayanan et al., SC 2021), each rank running ``v``
    model chunks of ``1/v`` of its layers: the fill and drain shrink ``v``-fold, ``Σ t_s / v + (m − 1/v)·max t_s``
    (a bubble of ``(p−1)/(v·m)`` of the busy time for equal stages), at ``v`` times the stage boundaries:
    ``2·p2p_s`` on each of the ``v·p − 1`` boundaries of the first micro-batch's path."""
    t = np.asarray(stage_s, dtype=float)
    if t.ndim != 1 or len(t) == 0 or (t < 0).any():
        raise ValueError(f"stage_s must be a non-empty sequence of non-negative seconds; got {stage_s!r}.")
    if isinstance(micro_batches, bool) or not isinstance(micro_batches, (int, np.integer)) or micro_batches < 1:
        raise ValueError(f"micro_batches must be a positive int; got {micro_batches!r}.")
    if isinstance(virtual_stages, bool) or not isinstance(virtual_stages, (int, np.integer)) or virtual_stages < 1:
        raise ValueError(f"virtual_stages must be a positive int (model chunks per pipeline rank); got {virtual_stages!r}.")
    p, m, v = len(t), int(micro_batches), int(virtual_stages)
    hop = 2 * p2p_s if p > 1 else 0.0
    if v == 1:
        step = float(t.sum() + (m - 1) * t.max() + (p - 1) * hop + (m - 1) * hop)
        busy = float(m * t.max())
        return step, max(step - busy - (m - 1) * hop - (p - 1) * hop, 0.0) if p > 1 else 0.0
    sends = (v * p - 1) * hop + (m - 1) * hop
    step = float(t.sum() / v + (m - 1 / v) * t.max() + sends)
    return step, max(step - float(m * t.max()) - sends, 0.0) if p > 1 else 0.0


# -- the model's layout: transformer layers, what tensor parallelism splits ------------------------------------------


def _divide_rows(work: pd.DataFrame, mask: np.ndarray, n: int, tokens: int) -> pd.DataFrame:
    """Work rows with the rows under ``mask`` split ``n`` ways: FLOPs, bytes and tiles / n, and one dimension / n
    (the batch of a batched matmul, else the largest matmul dimension other than the token count; the rows of other
    kernels)."""
    w = work.copy()
    if not mask.any() or n == 1:
        return w
    col = {c: w[c].to_numpy(float, copy=True) for c in ("flops", "bytes", "tiles", "dim_m", "dim_n", "dim_k", "dim_b")}
    for c in ("flops", "bytes", "tiles"):
        col[c][mask] = col[c][mask] / n
    mm = mask & (w["op_class"].isin(["matmul", "conv"])).to_numpy()
    batched = mm & (col["dim_b"] > 1)
    col["dim_b"][batched] = col["dim_b"][batched] / n
    plain = np.flatnonzero(mm & ~batched)
    if len(plain):
        dims = np.stack([col["dim_m"][plain], col["dim_n"][plain], col["dim_k"][plain]], axis=1)
        dims_no_tok = np.where(np.isclose(dims, tokens), -1.0, dims)
        which = np.argmax(dims_no_tok, axis=1)
        for c, name in enumerate(("dim_m", "dim_n", "dim_k")):
            rows = plain[which == c]
            col[name][rows] = np.maximum(col[name][rows] / n, 1.0)
    other = mask & ~mm
    col["dim_m"][other] = np.maximum(col["dim_m"][other] / n, 1.0)
    for c, a in col.items():
        w[c] = a
    return w


def _scale_rows(work: pd.DataFrame, mask: np.ndarray, f: float) -> pd.DataFrame:
    """Work rows with FLOPs, bytes, tiles and rows of the rows under ``mask`` times ``f`` (an optimizer over a share
    of the parameters)."""
    w = work.copy()
    if mask.any() and f != 1:
        for c in ("flops", "bytes", "tiles", "dim_m"):
            a = w[c].to_numpy(float, copy=True)
            a[mask] = np.maximum(a[mask] * f, 1.0 if c == "dim_m" else 0.0)
            w[c] = a
    return w


def _tp_split_mask(work: pd.DataFrame, layer: np.ndarray, lay: ModelLayout) -> np.ndarray:
    """Rows Megatron's tensor parallelism splits: inside a layer, every kernel of an attention or MLP submodule but
    those on the hidden state (the bias, dropout of a row-parallel output); outside the layers, every kernel with a
    vocabulary-sized dimension (embedding, output projection, loss)."""
    mods = work["module"].astype(str).to_numpy()
    prefix, _ = _layer_prefix(pd.unique(work["module"].astype(str)))
    inside = (layer >= 0) & (layer < lay.n_layers)
    rel = _below_layer(mods, prefix)
    codes, paths = pd.factorize(np.asarray(rel, dtype=object))  # each distinct path below the layer tested once
    in_split = inside & np.array([bool(_SPLIT_MODULE.search("." + r)) if r else False for r in paths], dtype=bool)[codes]
    is_mm = work["op_class"].isin(["matmul", "conv", "softmax"]).to_numpy()
    hidden_state = (~is_mm) & (work["dim_k"].to_numpy(float) == float(lay.hidden or -1))
    mask = in_split & (is_mm | ~hidden_state)
    if lay.vocab:
        dims = work[["dim_m", "dim_n", "dim_k"]].to_numpy(float)
        mask |= (~inside) & (work["phase"] != "optimizer").to_numpy() & (dims == float(lay.vocab)).any(axis=1)
    return mask


def _param_stage(lay: ModelLayout, name: str, of_layer: np.ndarray, p: int) -> int:
    """The pipeline stage that holds parameter ``name``: its layer's (``of_layer``), the first before the layers, the
    last after them."""
    li = lay.param_layer[name]
    return 0 if li < 0 else (p - 1 if li >= lay.n_layers else int(of_layer[li]))


def _stages(lay: ModelLayout, p: int, net, v: int = 1, pipeline_layers=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The contiguous split of the layers into ``p`` stages: (stage of each layer, layers per stage, parameters
    per stage, tensor-parallel-split parameters per stage). The embedding goes to the first stage, the head to the
    last, and a tied embedding is counted on both (Megatron keeps a copy on the last stage). With ``v`` virtual stages
    (interleaved 1F1B) the layers split into ``v·p`` contiguous chunks and chunk ``c`` runs on rank ``c mod p``; the
    "stage" of a layer is its rank. The chunks' sizes: :func:`perfmodel.step.strategy.pipeline_chunks`."""
    bounds = pipeline_chunks(lay.n_layers, p, v, pipeline_layers)
    of_layer = np.concatenate([np.full(len(b), c % p) for c, b in enumerate(bounds)])
    bounds = [np.flatnonzero(of_layer == s) for s in range(p)]
    stage_params = np.zeros(p)
    stage_split = np.zeros(p)
    shapes = None
    for k, v in lay.param_numel.items():
        s = _param_stage(lay, k, of_layer, p)
        stage_params[s] += v
        stage_split[s] += v if lay.param_split[k] else 0
        if lay.tied and lay.vocab and s == 0:
            shapes = shapes if shapes is not None else {n: tuple(q.shape) for n, q in net.named_parameters()}
            if lay.vocab in shapes[k]:
                stage_params[p - 1] += v  # Megatron keeps a copy of the tied embedding on the last stage
                stage_split[p - 1] += v if lay.param_split[k] else 0
    return of_layer, np.array([len(b) for b in bounds]), stage_params, stage_split


def _pipeline_fields(lay: ModelLayout, net, p: int, v: int, tpd: int, pipeline_layers, layer: np.ndarray,
                     fp8_names) -> dict:
    """:class:`RankWork`'s pipeline fields: each work row's stage (the embedding's rows on the first, the head's on
    the last), the layers and the parameters of this tensor-parallel rank per stage, the parameters gathered in FP8
    per stage, and with interleaved chunks the layers of each chunk and whether the split was said."""
    of_layer, stage_layers, stage_params, stage_split = _stages(lay, p, net, v, pipeline_layers)
    out = dict(stage=np.where(layer < 0, 0, np.where(layer >= lay.n_layers, p - 1,
                                                     of_layer[np.clip(layer, 0, lay.n_layers - 1)])),
               stage_layers=stage_layers,
               stage_rank=stage_params if tpd == 1 else stage_split / tpd + (stage_params - stage_split))
    if fp8_names:
        out["stage_fp8_gathered"] = _stage_share(lay, fp8_names, of_layer, p, tpd)
    experts = expert_param_names(lay)
    if experts:  # a mixture of experts: its routed experts' parameters per stage (expert parallelism reduces them apart)
        out["stage_experts"] = _stage_share(lay, experts, of_layer, p, tpd)
    if v > 1:
        out["chunk_layers"] = np.array([len(c) for c in pipeline_chunks(lay.n_layers, p, v, pipeline_layers)])
        out["chunks_said"] = pipeline_layers is not None
    return out


def _stage_share(lay: ModelLayout, names, of_layer: np.ndarray, p: int, tp: int) -> np.ndarray:
    """:func:`perfmodel.step.trace.rank_share` per pipeline stage (:func:`_stages`' assignment of layers; none of ``names`` is a tied
    embedding)."""
    total, split = np.zeros(p), np.zeros(p)
    for k in names:
        s = _param_stage(lay, k, of_layer, p)
        total[s] += lay.param_numel[k]
        split[s] += lay.param_numel[k] if lay.param_split[k] else 0
    return total if tp == 1 else split / tp + (total - split)


def _links_label(links: dict, used: list) -> Interconnect | str:
    """The one link all the used groups share, else ``"tp: ...; dp: ..."``."""
    names = {links[g].name for g in used} if used else {links["dp"].name}
    if len(names) == 1:
        return links[used[0] if used else "dp"]
    return "; ".join(f"{g}: {links[g].name} ({links[g].bandwidth_gb_per_s:g} GB/s x {links[g].efficiency:g})" for g in used)


def _fused_exposed(collective_s: float, tp: int, matmul_s: float) -> float:
    """Exposed seconds of a tensor-parallel collective fused with a matmul (asynchronous TP): both cut in ``tp``
    chunks, each chunk's transfer under another chunk's matmul, so ``tp − 1`` of the matmul's chunks hide the
    transfers; at least one chunk's transfer stays exposed."""
    if tp < 2:
        return collective_s
    return max(collective_s / tp, collective_s - (tp - 1) / tp * matmul_s)


#: the operators of a linear layer's GEMMs (forward and backward)
_LINEAR_GEMM_OPS = ("aten.mm", "aten.addmm", "aten._scaled_mm")

#: the tensor-parallel role of a linear's GEMM rows (:func:`_tp_linear_roles`): none, column-parallel (its input
#: all-gathered), row-parallel (its output reduce-scattered)
TP_NONE, TP_COLUMN, TP_ROW = 0, 1, 2


def _tp_linear_roles(work: pd.DataFrame, lay: ModelLayout, mm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the unsplit ``work``: the tensor-parallel role of the linear whose GEMM it is (``TP_COLUMN`` /
    ``TP_ROW``; ``TP_NONE`` outside the rows ``mm``) and the block of the layer it belongs to (the linear's parent
    module below the layer, e.g. ``"self_attn"``, ``"mlp"``; ``""`` outside). A linear is row-parallel when it is an
    attention's output projection (by name, :data:`perfmodel.step.trace.OUT_PROJECTION`) or its forward GEMM does
    not reduce over the hidden size (an MLP's down projection), column-parallel otherwise; its forward and backward
    rows share the role."""
    from perfmodel.step.trace import OUT_PROJECTION

    role = np.full(len(work), TP_NONE, dtype=np.int8)
    block = np.full(len(work), "", dtype=object)
    if "module" not in work.columns:
        return role, block
    mm = mm & work["op"].astype(str).isin(_LINEAR_GEMM_OPS).to_numpy()  # not attention's own batched matmuls
    mods = work["module"].astype(str).to_numpy()
    rel = _below_layer(mods, _layer_prefix(pd.unique(work["module"].astype(str)))[0])
    fwd = mm & (work["phase"].astype(str) == "forward").to_numpy()
    row_of: dict = {}
    for m, k in zip(mods[fwd], work["dim_n"].to_numpy(float)[fwd]):
        row_of[m] = row_of.get(m, False) or bool(OUT_PROJECTION.search(m)) or k != float(lay.hidden or k)
    for i in np.flatnonzero(mm):
        m = mods[i]
        if m in row_of and "." in rel[i]:  # a linear inside a block of the layer
            role[i] = TP_ROW if row_of[m] else TP_COLUMN
            block[i] = rel[i].rsplit(".", 1)[0]
    return role, block


#: bytes per element of a tensor-parallel all-gather under Transformer Engine's FP8 recipes: its linears quantize
#: what they gather (the column-parallel input in the forward pass and again in the backward pass, the row-parallel
#: output gradient) and all-gather the quantized data with its scales (``gather_along_first_dim`` with a quantizer:
#: ``_all_gather_fp8``, ``_all_gather_mxfp8``, ``_all_gather_nvfp4`` in transformer_engine/pytorch/distributed.py;
#: layernorm_linear.py and base.py ``grad_output_preprocess`` at d0067d0; TE 2.0, 544dd14, gathered FP8 already):
#: E4M3 with one scale per tensor (delayed, current), one E8M0 scale per 32 elements (MXFP8), one FP32 scale per 128
#: (FP8 block scaling, ``_all_gather_fp8_blockwise``), E2M1 with an E4M3 scale
#: per 16 (NVFP4, :data:`perfmodel.step.trace.NVFP4_BYTES_PER_ELEMENT`). Reduce-scatters stay in the training
#: precision.
TE_TP_GATHER_BYTES = {"delayed": 1.0, "current": 1.0, "mxfp8": MXFP8_BYTES_PER_ELEMENT, "nvfp4": NVFP4_BYTES_PER_ELEMENT,
                      "blockwise": FP8_BLOCK_BYTES_PER_ELEMENT}


def _tp_gather_bytes(prec: str, framework: str, stack: str, recipe, tp: int, sequence_parallel: bool = True) -> float:
    """Bytes per element of the layers' tensor-parallel all-gathers (:attr:`RankWork.tp_gather_bytes`): 1 under
    torchao's tensorwise Float8 with PyTorch's TP (torchtitan applies ``Float8ColwiseParallel`` /
    ``Float8RowwiseParallel`` / ``PrepareFloat8ModuleInput`` whenever its tensorwise Float8 meets TP: the activation
    cast before the forward all-gather, the output gradient before the backward one); the recipe's
    (:data:`TE_TP_GATHER_BYTES`) under Transformer Engine's FP8 with Megatron's sequence-parallel TP; 0 (the training
    precision's bytes) otherwise: torchao's rowwise recipe runs regular TP, gathering in BF16."""
    from perfmodel._workload import fp8_recipe_of

    if tp < 2 or prec != "fp8":
        return 0.0
    recipe = fp8_recipe_of(prec, stack, recipe)
    if framework == "megatron":  # without sequence parallelism Megatron all-reduces the activations, in BF16
        return TE_TP_GATHER_BYTES.get(recipe, 0.0) if stack == "te" and sequence_parallel else 0.0
    return 1.0 if framework == "pytorch" and recipe == "tensorwise" else 0.0


def _gathered_casts(work: pd.DataFrame, unsplit: pd.DataFrame, tp_role: np.ndarray, tp: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Compiled tensorwise Float8 under PyTorch's TP: the casts of the operands it gathers (the column-parallel
    linears' input, the row-parallel ones' output gradient) on the shard and their transposed copies whole
    (:func:`perfmodel.step.trace.gathered_fp8_casts`, the linears' roles from :func:`_tp_linear_roles`); the rows and,
    for each, the row of ``work`` it comes from."""
    from perfmodel.step import trace as wl

    mods = unsplit["module"].astype(str).to_numpy() if "module" in unsplit.columns else np.full(len(unsplit), "")
    return wl.gathered_fp8_casts(work, unsplit, set(mods[tp_role == TP_COLUMN]), set(mods[tp_role == TP_ROW]), tp)


def _single_producer_blocks(modules: np.ndarray, role: np.ndarray, block: np.ndarray, forward: np.ndarray,
                            n_layers: int, framework: str) -> dict:
    """Per block of a layer (:func:`_tp_linear_roles`): whether one GEMM produces its input gradient, so that the
    backward reduce-scatter fuses with it under asynchronous TP — one column-parallel linear per layer's block (a fused
    QKV), or Megatron's (``linear_qkv``, ``linear_fc1`` fuse Q, K, V and gate, up into one GEMM)."""
    out = {}
    for b in pd.unique(block[role != TP_NONE]):
        col = forward & (role == TP_COLUMN) & (block == b)
        out[b] = framework == "megatron" or len(pd.unique(modules[col])) <= max(n_layers, 1)
    return out


def _async_tp_layer(r: "RankWork", t: np.ndarray, ag: float, rs: float) -> tuple[float, float, float]:
    """Exposed seconds of one layer's tensor-parallel collectives under asynchronous TP, (forward, backward), and the
    seconds of the inputs gathered again in the backward pass: per block of the layer (:func:`_tp_linear_roles`), the
    all-gather ``ag`` and the reduce-scatter ``rs`` each fused with its matmul (:func:`_fused_exposed`, the module
    docstring); the layer's GEMM times averaged over the layers. No more than vanilla TP's two all-gathers and two
    reduce-scatters per pass. Megatron's ``--tp-comm-overlap`` with sequence parallelism runs Transformer Engine's
    userbuffers methods (``initialize_ub`` in transformer_engine/pytorch/module/base.py at d0067d0): in the backward
    pass the row-parallel output gradient's all-gather pipelined with its input-gradient GEMM (``ring_exchange``), and
    the column-parallel linear's input gathered again under its input-gradient GEMM and its input gradient
    reduce-scattered under its weight-gradient GEMM (``bulk``), each exposed where it outlasts that GEMM."""
    L = max(r.lay.n_layers, 1)
    fwd = r.phase == "forward"
    single = _single_producer_blocks(r.work["module"].astype(str).to_numpy(), r.tp_role, r.tp_block, fwd, L, r.framework)
    userbuffers = r.framework == "megatron" and r.sequence_parallel
    f_ex = b_ex = regather = share = 0.0
    for b, one_producer in single.items():
        n_b, frac = _block_layers(r, b, L)  # the layers that have the block (a mixture of experts' may not all)
        col = fwd & (r.tp_role == TP_COLUMN) & (r.tp_block == b)
        row = fwd & (r.tp_role == TP_ROW) & (r.tp_block == b)
        col_s, row_s = float(t[col].sum()) / n_b, float(t[row].sum()) / n_b
        f_ex += frac * (_fused_exposed(ag, r.tp, col_s) + _fused_exposed(rs, r.tp, row_s))
        if userbuffers:  # each backward GEMM of the column-parallel linear as long as its forward one
            b_ex += frac * (_fused_exposed(ag, r.tp, row_s) + max(ag - col_s, 0.0) + max(rs - col_s, 0.0))
            regather += frac * ag
        else:
            b_ex += frac * (_fused_exposed(ag, r.tp, row_s) + (_fused_exposed(rs, r.tp, col_s) if one_producer else rs))
        share += frac
    if single and userbuffers:  # the layer's blocks (RankWork.tp_blocks), as vanilla TP's count
        regather *= r.tp_blocks / share
    cap = r.tp_blocks * (ag + rs)
    return min(f_ex, cap), min(b_ex, cap + regather), regather


def _overlapped_tp_backward(r: "RankWork", t: np.ndarray, ag: float, rs: float, ar: float,
                            vanilla: float | None = None) -> tuple[float, float]:
    """(exposed seconds, seconds of the input re-gathers) of one layer's tensor-parallel collectives in the backward
    pass when the column-parallel linears issue theirs under their own GEMMs (``RankWork.overlap_tp_backward``:
    Megatron-Core's and Transformer Engine's layers, :data:`perfmodel.step.strategy.TP_BACKWARD_OVERLAP`). Per block
    of the layer (:func:`_tp_linear_roles`), its column-parallel linears' backward GEMMs per layer, half of them the
    input gradient's and half the weight gradient's (the same FLOPs): with sequence parallelism the row-parallel
    linear's output gradient all-gathered before its GEMMs (``ag``, exposed), the column-parallel input gathered again
    under the input-gradient GEMM (``ag``) and the input gradient reduce-scattered under the weight-gradient GEMM
    (``rs``), each exposed only where it outlasts its GEMM; without it, the input gradient's all-reduce (``ar``) under
    the weight-gradient GEMM, the row-parallel linear's backward needing none. Vanilla TP's count (``vanilla`` per
    block, default one all-gather and one reduce-scatter, or one all-reduce) where the layer's linears have no roles."""
    L = max(r.lay.n_layers, 1)
    back = r.phase == "backward"
    blocks = [b for b in pd.unique(r.tp_block[r.tp_role == TP_COLUMN]) if b]
    if not blocks:
        return r.tp_blocks * (vanilla if vanilla is not None else (ag + rs if r.sequence_parallel else ar)), 0.0
    exposed = regather = share = 0.0
    for b in blocks:
        n_b, frac = _block_layers(r, b, L)  # the layers that have the block (a mixture of experts' may not all)
        gemm = float(t[back & (r.tp_role == TP_COLUMN) & (r.tp_block == b)].sum()) / n_b / 2
        if r.sequence_parallel:
            exposed += frac * (ag + max(ag - gemm, 0.0) + max(rs - gemm, 0.0))
            regather += frac * ag
        else:
            exposed += frac * max(ar - gemm, 0.0)
        share += frac
    # the layer's blocks (RankWork.tp_blocks: a dense layer's two, the attention's and the MLP's, however its linears
    # are grouped, as vanilla TP's count does)
    scale = r.tp_blocks / share
    return exposed * scale, regather * scale


def _block_layers(r: "RankWork", block: str, L: int) -> tuple[int, float]:
    """(layers, their share of the ``L`` layers) that have the tensor-parallel block ``block``: every layer of a
    dense model; of a mixture of experts with dense and MoE layers, those whose rows name it."""
    if not getattr(r, "expert_params", 0.0):
        return L, 1.0
    have = np.unique(r.layer[(r.tp_block == block) & (r.tp_role != TP_NONE) & (r.layer >= 0) & (r.layer < L)])
    n = max(len(have), 1)
    return n, n / L


#: the process groups of a layout, in the order a result lists their communication.
COMM_GROUPS = ("tp", "cp", "ep", "pp", "dp")


#: bytes per gradient element in the data-parallel reductions (FP32; see :class:`RankWork`)
GRAD_REDUCE_BYTES = 4


@dataclasses.dataclass(frozen=True, eq=False)
class RankWork:
    """What one GPU of a parallel layout runs, whatever the GPU: the traced operators of its micro-batch after the
    tensor-parallel split, the FSDP shard of the optimizer and the context-parallel attention (``work``), with the
    layout's degrees and the sizes the collectives move. Built once per layout by :func:`rank_work`; each GPU's step
    is then :func:`layout_step` over its kernel times."""

    name: str
    batch_size: int
    n_gpus: int
    micro_batches: int
    strategy: str
    dp: int
    tp: int
    pp: int
    cp: int
    fsdp: bool
    virtual_stages: int
    async_tp: bool
    overlap_grad_reduce: bool
    lay: ModelLayout
    work: pd.DataFrame
    layer: np.ndarray
    phase: np.ndarray
    is_opt: np.ndarray
    elem_bytes: int
    #: bytes of one gradient element as it is reduced: FP32 at every precision (mixed precision keeps FP32 master
    #: weights and gradients: DDP under autocast all-reduces them in FP32, torchtitan's FSDP reduces in FP32 (its
    #: ``mixed_precision_reduce = "float32"``), Megatron reduces its FP32 main gradients); parameters are gathered at
    #: ``elem_bytes``
    grad_bytes: int
    rank_params: float
    act_bytes: float
    kv_bytes: float
    attn: np.ndarray
    used_groups: tuple
    stage: np.ndarray | None = None
    stage_layers: np.ndarray | None = None
    stage_rank: np.ndarray | None = None
    #: transformer layers of each model chunk of an interleaved pipeline, in the order the layers run (chunk ``c`` on
    #: rank ``c mod pp``); None without one
    chunk_layers: np.ndarray | None = None
    #: whether the split of the layers was said (:attr:`perfmodel.Parallelism.pipeline_layers`), not the even default
    chunks_said: bool = False
    #: :func:`perfmodel.step.strategy.resolve_execution`'s: ``"pytorch"`` or ``"megatron"``, Megatron's distributed
    #: optimizer (optimizer state sharded over ``dp·cp``, gradients reduce-scattered, parameters all-gathered), and
    #: sequence parallelism (the tensor-parallel ranks split the hidden-state operators along the sequence)
    framework: str = "pytorch"
    distributed_optimizer: bool = False
    sequence_parallel: bool = False
    #: the column-parallel linears' backward collectives under their GEMMs (Megatron-Core's and Transformer Engine's
    #: layers, :data:`perfmodel.step.strategy.TP_BACKWARD_OVERLAP`; :func:`_overlapped_tp_backward`)
    overlap_tp_backward: bool = False
    #: ZeRO-2 (:attr:`perfmodel.Parallelism.shard_gradients`): every micro-batch's gradients reduce-scattered into the
    #: rank's shard, not accumulated whole and reduced once per step
    shard_gradients: bool = False
    #: parameters gathered in FP8 (:func:`perfmodel.step.strategy.resolve_fp8_param_gather`: FSDP's FP8 all-gather,
    #: Megatron's ``--fp8-param-gather``; :func:`perfmodel.step.trace.fp8_linear_weights`): of this rank, and of each
    #: pipeline stage's rank; 0 / None when every parameter is gathered at ``elem_bytes``
    fp8_gathered: float = 0.0
    stage_fp8_gathered: np.ndarray | None = None
    #: per work row, the tensor-parallel role of its linear and the block of the layer it is in
    #: (:func:`_tp_linear_roles`; all ``TP_NONE`` without tensor parallelism): which matmul each collective of
    #: asynchronous TP is fused with
    tp_role: np.ndarray | None = None
    tp_block: np.ndarray | None = None
    #: bytes per element of the layers' tensor-parallel all-gathers (of a block's input, of a row-parallel output's
    #: gradient): 1 with torchao's tensorwise Float8 under TP (torchtitan's ``Float8ColwiseParallel`` /
    #: ``PrepareFloat8ModuleInput`` cast before the all-gather, ``Float8RowwiseParallel`` casts the output gradient
    #: before the backward one), the recipe's under Transformer Engine's FP8 with sequence parallelism
    #: (:data:`TE_TP_GATHER_BYTES`); 0 means ``elem_bytes``. Reduce-scatters stay at ``elem_bytes``.
    tp_gather_bytes: float = 0.0
    #: :attr:`perfmodel.Parallelism.context_parallel_kv`: the K and V context parallelism exchanges, at their own
    #: heads (``"grouped"``) or every query head's (``"repeated"``); sizes ``kv_bytes``
    context_parallel_kv: str = "grouped"
    #: per work row, whether its kernel runs once per step though it is traced with a micro-batch's work: Transformer
    #: Engine's FP8 weight casts under Megatron-Core (:data:`ONCE_PER_STEP_OPS`), FSDP's copy-outs with a pipeline
    #: (:func:`_once_per_step`); None where every row runs per micro-batch
    per_step: np.ndarray | None = None
    #: expert parallelism (a mixture of experts' ``ep`` factor, carved from the ``tp·dp·cp`` ranks): its degree, the
    #: routed experts' parameters this rank holds (``experts / ep`` of them, each whole; set under tensor parallelism
    #: too) and, per pipeline stage, its stage's; the
    #: bytes each rank sends in one all-to-all (a MoE layer's dispatch or combine of one micro-batch: its tokens times
    #: the experts each goes to, at the hidden size); the MoE layers (of each pipeline stage)
    ep: int = 1
    expert_params: float = 0.0
    #: tensor-parallel blocks per layer (:func:`_layer_tp_blocks`), averaged over the layers: 2, the attention's and the
    #: MLP's, but fewer where a mixture of experts' MoE blocks stay whole beside tensor parallelism; and the blocks of
    #: each pipeline stage's layers (None: ``tp_blocks`` per layer)
    tp_blocks: float = 2.0
    stage_tp_blocks: np.ndarray | None = None
    #: :attr:`perfmodel.Parallelism.expert_load_imbalance`: the busiest expert-parallel rank's routed tokens over the
    #: mean, in ``work`` and ``dispatch_bytes`` already
    expert_load_imbalance: float = 1.0
    #: :attr:`perfmodel.Parallelism.overlap_moe_dispatch`: Megatron-Core's EP overlap (:func:`_ep_paired`)
    overlap_moe_dispatch: bool = False
    stage_experts: np.ndarray | None = None
    dispatch_bytes: float = 0.0
    moe_layers: int = 0
    stage_moe_layers: np.ndarray | None = None
    #: expert tensor parallelism (:attr:`perfmodel.Parallelism.expert_tensor_parallel`): 1, each routed expert whole on
    #: its rank, or ``tp``, each split over the tensor-parallel ranks (``expert_params`` is then the rank's share, and
    #: ``ep`` is carved from the ``dp·cp`` ranks); and the bytes of the tokens a MoE layer's tensor-parallel ranks
    #: gather from each other after the dispatch (each rank's routed tokens, at the hidden size), reduce-scattered back
    #: before the combine
    etp: int = 1
    etp_gather_bytes: float = 0.0
    #: :attr:`perfmodel.Parallelism.moe_dispatcher`, and for DeepEP the routing it spreads: the routed experts, the
    #: experts per token, the group-limited routing (groups, groups per token; 0 without) and, per cluster, the nodes
    #: the ep group spans (:func:`parallel_rows`; 1 on one node or one link)
    moe_dispatcher: str = "alltoall"
    routing: tuple = (0, 0, 0, 0)
    ep_nodes: int = 1

    @property
    def stage_blocks(self) -> np.ndarray:
        """Tensor-parallel blocks of each pipeline stage's layers (:attr:`stage_tp_blocks`)."""
        return self.stage_tp_blocks if self.stage_tp_blocks is not None else self.tp_blocks * self.stage_layers

    @property
    def dp_ranks(self) -> int:
        """Ranks that reduce each gradient: the data-parallel replicas times the context-parallel ranks."""
        return self.dp * self.cp

    def dp_reduced(self, params: float, experts: float = 0.0, links: dict | None = None) -> float:
        """``params`` parameters of which ``experts`` are routed experts' (under expert or tensor parallelism), as the
        ``dp·cp`` group's collectives carry them: an expert's gradients are reduced (its parameters gathered, under
        FSDP) over the ``tp·dp·cp/(ep·etp)`` ranks that hold it (Megatron-Core's expert-data-parallel group: each
        expert whole on its rank, or its tensor-parallel shard with ``etp = tp``), so its bytes count at that ring's
        ``(n'−1)/n'`` over the group's ``(n−1)/n`` (0 where ``ep·etp = tp·dp·cp``: no rank shares an expert), and,
        with ``links`` (:func:`resolve_links`' of the layout), at the ``dp`` link's rate over that group's own
        (``"edp"``: ranks ``etp·ep`` apart, often one per node, on one NIC where the ``dp`` ring has the node's)."""
        if (self.ep <= 1 and self.tp <= 1) or experts <= 0 or self.dp_ranks <= 1:
            return float(params)
        n = self.dp_ranks
        ne = n * self.tp // (self.ep * self.etp)
        share = ((ne - 1) / ne) / ((n - 1) / n)
        if links is not None and "edp" in links and "dp" in links:
            share *= links["dp"].bytes_per_s / links["edp"].bytes_per_s
        return float(params - experts * (1.0 - share))

    def gathered_bytes(self, params: float, fp8_params: float = 0.0) -> float:
        """Bytes an FSDP all-gather of ``params`` parameters moves, ``fp8_params`` of them in FP8 (one byte each)."""
        return float(fp8_params + (params - fp8_params) * self.elem_bytes)

    def bucket_bytes(self, elem_bytes: float) -> tuple[float, float]:
        """(bucket, first bucket) bytes of the data-parallel collectives: DDP's 25 MiB after 1 MiB, or Megatron-Core's
        (:func:`megatron_bucket_bytes`)."""
        if self.framework == "megatron":
            b = megatron_bucket_bytes(elem_bytes, self.dp_ranks)
            return b, b
        return float(DDP_BUCKET_BYTES), float(DDP_FIRST_BUCKET_BYTES)

    @property
    def pipelined(self) -> bool:
        return self.pp > 1 or self.strategy == "pp"

    @functools.cached_property
    def copy_out(self) -> np.ndarray:
        """Per row of ``work``: FSDP2's all-gather copy-out (:func:`_fsdp_copy_outs`), which activation checkpointing
        does not run again (a layer's recomputation reads the parameters already gathered)."""
        return (self.work["op"].astype(str) == FSDP_COPY_OUT_OP).to_numpy()

    @functools.cached_property
    def tp_reduce(self) -> np.ndarray:
        """Per row of ``work``: the reduction that ends one of asynchronous TP's fused matmul-reduce-scatters
        (:func:`_micro_pipeline_kernels`)."""
        return (self.work["op"].astype(str) == ASYNC_TP_REDUCE_OP).to_numpy()


def _multiples(B: int, k: int) -> str:
    """The multiples of ``k`` nearest ``B``, below and above (one when ``B < k``)."""
    lo, hi = k * max(B // k, 1), k * (B // k + 1)
    return f"{lo} or {hi}" if lo != hi else f"{lo}"


def _check_batch_split(B: int, d: int, m: int, n: int, strat: str) -> None:
    """The global batch ``B`` splits over the ``d`` replicas and each replica's batch into ``m`` micro-batches."""
    single = strat in STRATEGIES
    if B % d:
        if single:
            raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split over {n} GPUs. Use a batch_size "
                                f"that is a multiple of n_gpus (e.g. {_multiples(B, n)}).")
        raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split over its {d} data-parallel replicas. "
                            f"Use a batch_size that is a multiple of {d} (e.g. {_multiples(B, d)}).")
    if (B // d) % m:
        if d == 1:
            raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split into micro_batches={m}. Use "
                                "micro_batches that divides batch_size.")
        if single:
            raise StrategyError(f"strategy={strat!r}: the per-GPU batch {B // n} does not split into micro_batches={m}. "
                                "Use micro_batches that divides batch_size / n_gpus.")
        raise StrategyError(f"strategy={strat!r}: the per-replica batch {B // d} (batch_size / dp) does not split into "
                            f"micro_batches={m}. Use micro_batches that divides it.")


def _check_stages(lay: ModelLayout, p: int, v: int, strat: str, n: int, name: str, pipeline_schedule,
                  pipeline_layers=None, said=None) -> None:
    """``p`` pipeline stages of ``v`` model chunks each have a repeated layer to hold; a split of the layers said
    (``pipeline_layers``) needs a pipeline and places the model's layers (:func:`pipeline_chunks`)."""
    if pipeline_layers is not None:
        check_pipeline_split(pipeline_layers, p, said)
        if lay.n_layers >= p:
            pipeline_chunks(lay.n_layers, p, v, pipeline_layers)
            return
    if p > 1 and lay.n_layers < p:
        if strat in STRATEGIES:
            raise StrategyError(f"strategy='pp' over {n} stages needs at least {n} layers; {name} has {lay.n_layers} "
                                f"{'repeated layers' if lay.n_layers else 'repeated layers (none found)'}. Use fewer GPUs "
                                "(n_gpus <= layers) or 'dp' / 'fsdp'.")
        raise StrategyError(f"strategy={strat!r}: {p} pipeline stages need at least {p} layers; {name} has {lay.n_layers} "
                            "repeated layers. Use a pp degree of at most the number of layers.")
    if p > 1 and lay.n_layers < p * v:
        raise StrategyError(f"strategy={strat!r} with pipeline_schedule={pipeline_schedule!r}: {p} ranks x {v} model chunks "
                            f"need at least {p * v} layers; {name} has {lay.n_layers}. {_fewer_chunks_fix(lay.n_layers, p, v)}")


def _fewer_chunks_fix(n_layers: int, p: int, v: int) -> str:
    """What a layout with too few layers for ``p`` ranks x ``v`` chunks can do instead: as many chunks per rank as
    the layers fill, and the first split that counts the embedding and the loss as a layer each (Megatron-Core's
    ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``) which
    :func:`pipeline_chunks` accepts for ``p·v`` chunks."""
    fill = n_layers // p
    out = [f"virtual_stages={fill} (the most chunks per rank its layers fill)" if fill >= 2 else "'1f1b'"]
    for split in ({"embedding": True, "loss": True}, {"embedding": True}, {"loss": True}):
        try:
            pipeline_chunks(n_layers, p, v, split)
        except StrategyError:
            continue
        out.append(f"pipeline_layers={split} (each counted as a layer, as Megatron-Core's "
                   f"--account-for-*-in-pipeline-split does: {n_layers + len(split)} slots over {p * v} chunks)")
        break
    return "Use " + ", or ".join(out) + ", or fewer pipeline stages."


def _master_casts(work: pd.DataFrame, *, megatron: bool = False, fsdp_shards: int | None = None) -> pd.DataFrame:
    """Mixed precision's copies between the half-precision gradients and parameters and the FP32 masters
    (:data:`perfmodel.step.trace.MASTER_GRAD_CAST_OP`, :data:`~perfmodel.step.trace.MASTER_PARAM_COPY_OP`) as a
    framework runs them: Megatron's weight-gradient GEMMs accumulate into its FP32 main gradients (``megatron``: no
    gradient copy); under FSDP2 (``fsdp_shards``: the optimizer's rows already cut to the rank's shard, one of that
    many) the shard is FP32 and the copies are the collectives' copy-ins: the unsharded gradients cast to FP32 into the reduce-scatter's
    input (``foreach_reduce``), the FP32 shard cast to the training precision into each of the two all-gathers' inputs
    (the forward's and the backward's). Unchanged otherwise (AMP: each once per step)."""
    from perfmodel.step import trace as wl

    op = work["op"].astype(str).to_numpy()
    if megatron:
        return work[op != wl.MASTER_GRAD_CAST_OP].reset_index(drop=True)
    if fsdp_shards is not None:
        work = _scale_rows(work, op == wl.MASTER_GRAD_CAST_OP, fsdp_shards)
        return _scale_rows(work, op == wl.MASTER_PARAM_COPY_OP, 2.0)
    return work


def _context_parallel_kv_heads(par, lay):
    """The K and V heads the attention kernel takes under context parallelism: the query heads' count where the model
    repeats them before the kernel (:attr:`perfmodel.Parallelism.context_parallel_kv`), else its own."""
    return lay.heads if par.context_parallel_kv == "repeated" else lay.kv_heads


def _context_parallel_kv_bytes(par, lay, tokens: int, size: int, tpd: int, cpd: int) -> float:
    """Context parallel: K and V of the whole sequence (``tokens`` of the rank's samples, this tensor-parallel rank's
    heads), per layer, at :func:`_context_parallel_kv_heads`. 0 without context parallelism."""
    if cpd <= 1:
        return 0.0
    kv_heads = _context_parallel_kv_heads(par, lay)
    return float(tokens * 2 * (kv_heads or 0) * (lay.hidden or 0) / (lay.heads or 1) * size / tpd)


#: op of FSDP2's all-gather copy-out (:func:`_fsdp_copy_outs`)
FSDP_COPY_OUT_OP = "fsdp_all_gather_copy_out"


def _fsdp_copy_outs(work: pd.DataFrame, arrays: tuple, lay: ModelLayout, tp: int, size: int, fp8_names,
                    pipelined: bool) -> tuple[pd.DataFrame, tuple]:
    """FSDP2's all-gather copy-out: once a unit's all-gather lands, ``foreach_all_gather_copy_out``
    (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py) waits for it on the compute stream and copies the
    gathered buffer into each parameter's unsharded tensor (``split_with_sizes_copy``): a kernel reading and writing
    the unit's parameters as gathered (the tensor-parallel rank's share, the FP8 linears' weights at one byte where
    they are gathered in FP8). Each layer's in the forward pass and, gathered again, in the backward pass but the
    last layer's (torchtitan does not reshard it after the forward) and the root's (embedding, final norm, output
    projection: FSDP2 keeps the root unsharded); with a pipeline (torchtitan: nothing resharded after the forward)
    each once per step, in the forward pass. ``work`` with a row per copy-out, ``arrays`` (each with a value per row
    of ``work``: its layer, optimizer flag, tensor-parallel role and block) extended for them."""
    from perfmodel.step import trace as wl

    n = max(lay.n_layers, 1)
    # bytes gathered per unit: the layers, then the root's embedding (unit n, layer −1) and head (unit n + 1, layer n)
    per = wl.rank_share_by_unit(lay, tp, lambda k: 1 if k in fp8_names else size)
    units = [(i, "forward") for i in range(n)] + [(n, "forward"), (n + 1, "forward")]
    if not pipelined:
        units += [(i, "backward") for i in range(n - 1)]
    nbytes = np.array([2.0 * per[u] for u, _ in units])
    keep = nbytes > 0
    template = pd.DataFrame({"dim_n": float(lay.hidden or 1), "module": ""}, index=range(int(keep.sum())))
    rows = wl._cast_rows(template, nbytes[keep], FSDP_COPY_OUT_OP, np.array([ph for _, ph in units], dtype=object)[keep])
    return _append_rows(work, arrays, rows, np.array([u if u < n else (-1 if u == n else n) for u, _ in units])[keep])


def _append_rows(work: pd.DataFrame, arrays: tuple, rows: pd.DataFrame, layers: np.ndarray) -> tuple[pd.DataFrame, tuple]:
    """``work`` with ``rows`` (kernels the layout adds to the rank's step) after it, and ``arrays`` (a value per row
    of ``work``: its layer, optimizer flag, tensor-parallel role and block) extended for them: ``layers`` their
    layers, none of them the optimizer's nor a tensor-parallel linear."""
    for c in work.columns.difference(rows.columns):
        kind = work[c].dtype.kind
        rows[c] = False if kind == "b" else 0.0 if kind in "fiu" else ""
    layer, is_opt, tp_role, tp_block = arrays
    k = len(rows)
    return (pd.concat([work, rows[work.columns]], ignore_index=True),
            (np.r_[layer, layers], np.r_[is_opt, np.zeros(k, bool)], np.r_[tp_role, np.zeros(k, tp_role.dtype)],
             np.r_[tp_block, np.full(k, "", dtype=object)]))


#: op of the copy PyTorch's functional collectives make around a sequence-parallel collective
#: (:func:`_sequence_parallel_copies`)
SP_CHUNK_CAT_OP = "sequence_parallel_chunk_cat"


def _sequence_parallel_copies(work: pd.DataFrame, arrays: tuple, lay: ModelLayout, tokens: int, size: int,
                              gather_bytes: float, unfused_scatters: int | None = None,
                              head: bool = False) -> tuple[pd.DataFrame, tuple]:
    """PyTorch's sequence parallelism (DTensor, as torchtitan's ``apply_tp`` lays it out: ``SequenceParallel`` norms,
    ``PrepareModuleInput`` gathering each block's input, the row-parallel outputs ``Shard(1)``) shards the activations
    along dim 1 of ``[batch, sequence, hidden]``, while NCCL gathers and scatters along dim 0. PyTorch's functional
    collectives (torch/distributed/_functional_collectives.py) therefore copy: ``all_gather_tensor`` with
    ``gather_dim=1`` rearranges the gathered buffer (``torch.cat(torch.chunk(res, group_size, dim=0), dim=1)``), and
    ``reduce_scatter_tensor`` with ``scatter_dim=1`` puts its input in rank order first (``torch.cat(torch.chunk(x,
    group_size, dim=1))``) — the torch of torchtitan's published runs (2024-2025; since 2026 a view where the batch is
    1); torchtitan's ``apply_tp`` names the cost (folding batch and sequence would avoid it, pytorch/torchtitan#437).
    Each copy is a kernel reading and writing the whole tensor of ``tokens`` rows: per layer in the forward pass two
    all-gathers (the attention's and the MLP's input) and two reduce-scatters (their outputs), in the backward pass
    the same four (a gather's gradient is a reduce-scatter, a scatter's a gather); the embedding's reduce-scatter and
    the output projection's all-gather, with theirs. The gathers at ``gather_bytes`` per element (FP8 under torchao's
    Float8 TP; 0: the training precision's), everything else at ``size``. Megatron keeps the sequence first
    (``[s, b, h]``) and gathers along dim 0: no copy.

    ``unfused_scatters`` (asynchronous TP): torch's micro-pipeline TP fuses a collective with its matmul and the fused
    kernel takes the gather dimension itself; what it leaves to the functional collectives still copies — per layer
    the backward reduce-scatters of an input gradient summed from several projections (``unfused_scatters`` of them,
    :func:`_single_producer_blocks`), the embedding's reduce-scatter with its backward all-gather, and with ``head``
    the output projection's all-gather with its backward reduce-scatter (torch.compile's pass fuses only inside
    what it compiles; torchtitan compiles each layer, and the loss, not the output projection)."""
    from perfmodel.step import trace as wl

    whole = 2.0 * tokens * float(lay.hidden or 0)  # read and written, per byte of an element
    gather, scatter = whole * (gather_bytes or size), whole * size
    n = max(lay.n_layers, 1)
    if unfused_scatters is None:
        kinds = [(i, ph, b) for i in range(n) for ph in ("forward", "backward") for b in (gather, gather, scatter, scatter)]
        kinds += [(n, "forward", whole * size), (n, "backward", whole * size)]  # the output projection's input
    else:
        kinds = [(i, "backward", scatter) for i in range(n) for _ in range(unfused_scatters)]
        kinds += [(n, "forward", whole * size), (n, "backward", whole * size)] if head else []
    kinds += [(-1, "forward", whole * size), (-1, "backward", whole * size)]  # the embedding's output
    template = pd.DataFrame({"dim_n": float(lay.hidden or 1), "module": ""}, index=range(len(kinds)))
    rows = wl._cast_rows(template, np.array([b for _, _, b in kinds]), SP_CHUNK_CAT_OP,
                         np.array([ph for _, ph, _ in kinds], dtype=object))
    return _append_rows(work, arrays, rows, np.array([i for i, _, _ in kinds]))


#: op of the reduction that ends torch's fused matmul-reduce-scatter (asynchronous TP, :func:`_micro_pipeline_kernels`)
ASYNC_TP_REDUCE_OP = "async_tp_partials_sum"
#: op of the copy of a rank's shard into its symmetric-memory buffer that starts torch's fused all-gather-matmul
ASYNC_TP_COPY_IN_OP = "async_tp_shard_copy_in"
#: share of the GPU's memory bandwidth that ATen's reduction reaches summing the ``tp`` partials of a fused
#: matmul-reduce-scatter: 23-43 % of HBM peak on the shapes measured in pytorch/pytorch#191803 (ATen's
#: ``reduce_kernel`` is instruction-bound on a reduction of extent 2-8); the middle of that range. Not fitted.
ASYNC_TP_REDUCE_BANDWIDTH_SHARE = 0.33


def _micro_pipeline_kernels(work: pd.DataFrame, arrays: tuple, lay: ModelLayout, tokens: int, size: int,
                            gather_bytes: float, tp: int, single: dict) -> tuple[pd.DataFrame, tuple]:
    """The kernels torch's micro-pipelined TP (asynchronous TP: ``fused_all_gather_matmul``,
    ``fused_matmul_reduce_scatter`` in torch/distributed/_symmetric_memory/__init__.py, unchanged in this from 2024 to
    2026) runs outside its pipelined transfers, on the compute stream:

    * each fused all-gather first copies the rank's shard into its symmetric-memory buffer, before the barrier and the
      first matmul chunk (``copy_shard(dst=local_p2p_bufs, src=shard)``; its comment: the chance to overlap it with
      the first chunk is given up): a copy of ``tokens / tp`` rows, at the gathered precision (``gather_bytes`` per
      element; 0: ``size``). The copy of the rank's own shard into the gathered output overlaps the last chunk and
      is not counted;
    * each fused reduce-scatter ends with ``torch.sum`` over the ``tp`` partials it received (``stacked_partials``):
      a kernel reading the whole ``tokens`` rows and writing the shard, after the last transfer, its memory traffic
      on the critical path (pytorch/pytorch#191803), timed at :data:`ASYNC_TP_REDUCE_BANDWIDTH_SHARE` of the memory
      bandwidth (:func:`_timed_reductions`).

    Per layer: in the forward pass a gather and a reduce-scatter per block (the column-parallel input's, the
    row-parallel output's); in the backward pass the row-parallel output gradient's gather per block, and the input
    gradient's reduce-scatter where one GEMM produces it (``single``, :func:`_single_producer_blocks`)."""
    from perfmodel.step import trace as wl

    hidden = float(lay.hidden or 0)
    copy_in = 2.0 * tokens / tp * hidden * (gather_bytes or size)  # read and written
    reduce = tokens * hidden * size * (1.0 + 1.0 / tp)  # the tp partials read, the shard written
    kinds = []
    for i in range(max(lay.n_layers, 1)):
        for one_producer in single.values():
            kinds += [(i, "forward", ASYNC_TP_COPY_IN_OP, copy_in), (i, "forward", ASYNC_TP_REDUCE_OP, reduce),
                      (i, "backward", ASYNC_TP_COPY_IN_OP, copy_in)]
            kinds += [(i, "backward", ASYNC_TP_REDUCE_OP, reduce)] if one_producer else []
    if not kinds or not hidden:
        return work, arrays
    template = pd.DataFrame({"dim_n": hidden, "module": ""}, index=range(len(kinds)))
    rows = wl._cast_rows(template, np.array([b for *_, b in kinds]), np.array([k[2] for k in kinds], dtype=object),
                         np.array([k[1] for k in kinds], dtype=object))
    return _append_rows(work, arrays, rows, np.array([k[0] for k in kinds]))


def _timed_reductions(r: "RankWork", t: np.ndarray, spec) -> np.ndarray:
    """``t`` (the kernel times of ``r.work``) with asynchronous TP's reductions (:attr:`RankWork.tp_reduce`) at
    :data:`ASYNC_TP_REDUCE_BANDWIDTH_SHARE` of ``spec``'s memory bandwidth."""
    if not r.tp_reduce.any():
        return t
    t = np.array(t, dtype=float)
    rate = ASYNC_TP_REDUCE_BANDWIDTH_SHARE * float(spec.memory_bandwidth_gb_per_s) * 1e9
    t[r.tp_reduce] = r.work["bytes"].to_numpy(float)[r.tp_reduce] / rate
    return t


def _layout_kernels(work: pd.DataFrame, arrays: tuple, w, par, ex: dict, lay: ModelLayout, deg: dict, *, size: int,
                    tokens: int, fp8_names) -> tuple[pd.DataFrame, tuple]:
    """The kernels a layout adds to the rank's traced step: FSDP2's all-gather copy-outs (:func:`_fsdp_copy_outs`),
    the copies around PyTorch's sequence-parallel collectives (:func:`_sequence_parallel_copies`: PyTorch's TP with
    sequence parallelism; under asynchronous TP those of the collectives it does not fuse: the output projection's
    too where torch.compile leaves it eager, outside its ``"model"`` scope) and asynchronous TP's own
    (:func:`_micro_pipeline_kernels`)."""
    from perfmodel._workload import compile_scope_of
    from perfmodel.step import trace as wl

    tpd = deg["tp"]
    if deg["fsdp"]:
        work, arrays = _fsdp_copy_outs(work, arrays, lay, tpd, size, fp8_names, deg["pp"] > 1)
    if tpd > 1 and ex["sequence_parallel"] and ex["framework"] == "pytorch":
        gather = _tp_gather_bytes(w.precision, ex["framework"], wl.stack_of(w.stack), w.fp8_recipe, tpd)
        if not par.async_tp:
            return _sequence_parallel_copies(work, arrays, lay, tokens, size, gather)
        _, _, role, block = arrays
        single = _single_producer_blocks(work["module"].astype(str).to_numpy(), role, block,
                                         (work["phase"] == "forward").to_numpy(), lay.n_layers, ex["framework"])
        head = compile_scope_of(wl.stack_of(w.stack), w.compile_scope) != "model"
        work, arrays = _sequence_parallel_copies(work, arrays, lay, tokens, size, gather,
                                                 sum(not one for one in single.values()), head)
        work, arrays = _micro_pipeline_kernels(work, arrays, lay, tokens, size, gather, tpd, single)
    return work, arrays


def _once_per_step(work: pd.DataFrame, framework: str, stack: str, m: int, fsdp_pipeline: bool) -> np.ndarray | None:
    """:attr:`RankWork.per_step`: Megatron-Core marks each model chunk's first micro-batch of a step
    (``schedules.forward_step``: ``model.set_is_first_microbatch()``) and its TE linears pass ``is_first_microbatch``
    on (``extensions/transformer_engine.py``): TE casts each FP8 weight, with its transpose, on that micro-batch and
    reuses the cached copies on the others (:data:`ONCE_PER_STEP_OPS`). FSDP with a pipeline gathers each unit once
    per step (:func:`_fsdp_copy_outs`). None elsewhere, or with one micro-batch."""
    op = work["op"].astype(str)
    once = (op.isin(ONCE_PER_STEP_OPS).to_numpy() if framework == "megatron" and stack == "te"
            else np.zeros(len(work), bool))
    if fsdp_pipeline:
        once = once | (op == FSDP_COPY_OUT_OP).to_numpy()
    return once if m > 1 and once.any() else None


def _experts_of(lay: ModelLayout, work: pd.DataFrame) -> int:
    """Routed experts of a mixture of experts: its config's count, else its grouped GEMMs' groups; 0 for a dense
    model."""
    grouped = work.loc[work["op"] == GROUPED_GEMM_OP, "dim_b"]
    return int(lay.experts or (grouped.max() if len(grouped) else 0))


def _check_experts_whole(strat: str, tp: int, name: str, lay: ModelLayout, work: pd.DataFrame, ep: int = 1, *,
                         sequence_parallel: bool = True, dp_ranks: int = 1, etp: int = 1,
                         framework: str = "megatron") -> None:
    """A ``StrategyError`` for expert parallelism (``ep``) of a model without experts, of experts that do not run as
    grouped GEMMs, or over a number of ranks that does not divide its experts; and for tensor parallelism of a
    mixture of experts that perfmodel cannot lay out as Megatron-Core does with expert tensor parallelism 1 (each
    expert whole on its rank, the MoE block on the tokens sequence parallelism leaves the rank): experts that are not
    grouped GEMMs, no sequence parallelism, or experts the tensor-parallel ranks would hold alike with no
    data-parallel group to reduce their gradients; with the experts split over the ``tp`` ranks (``etp = tp``), what
    :func:`perfmodel.step.strategy.check_expert_grid` refuses."""
    experts = _experts_of(lay, work)
    grouped = bool((work["op"] == GROUPED_GEMM_OP).any())
    if ep > 1 and not experts:
        raise StrategyError(f"strategy={strat!r}: ep{ep} spreads a mixture of experts' routed experts over the ranks, "
                            f"and {name} has none (its config names no num_local_experts / num_experts / "
                            "n_routed_experts, and no grouped GEMM runs). Leave ep out.")
    if ep > 1 and not grouped:
        raise StrategyError(f"strategy={strat!r}: perfmodel models expert parallelism of experts that run as grouped "
                            f"GEMMs (aten._grouped_mm, as the installed transformers runs Mixtral, Qwen-MoE, DeepSeek and "
                            f"gpt-oss layers); {name}'s {experts} experts run otherwise. Leave ep out.")
    if ep > 1 and experts % ep:
        raise StrategyError(f"strategy={strat!r}: ep{ep} does not divide {name}'s {experts} routed experts: each "
                            f"expert-parallel rank holds experts / ep of them. Use an ep that divides {experts}.")
    if tp <= 1 or not experts:
        return
    what = f"{name} is a mixture of experts ({experts} routed experts)"
    how = ("experts split over the tensor-parallel ranks (expert tensor parallelism " f"{etp})" if etp > 1
           else "experts kept whole on their ranks (Megatron-Core's expert tensor parallelism 1)")
    if not grouped:
        raise StrategyError(f"strategy={strat!r}: {what}, and perfmodel lays tensor parallelism out beside {how} for "
                            "experts that run as grouped GEMMs; these run otherwise. Lay it out with dp, fsdp, cp and "
                            "pp.")
    if not sequence_parallel:
        raise StrategyError(f"strategy={strat!r}: {what}, and its tensor-parallel ranks run each MoE block on the tokens "
                            "sequence parallelism leaves them (Megatron-Core requires it for a mixture of experts with "
                            "tensor parallelism); this layout runs without it. Pass sequence_parallel=True (on by "
                            "default with framework='megatron' and with fsdp), or leave tp out.")
    if etp > 1:
        check_expert_grid(strat, what, tp, ep, dp_ranks, etp, framework=framework, expert_ffn=lay.expert_ffn,
                          hidden=lay.hidden)
        return
    if dp_ranks <= 1 and ep != tp:
        spread = (f"Spread the experts over them with ep{tp} (e.g. 'ep{tp}-tp{tp}'), or add dp."
                  if experts % tp == 0 else "Add dp.")
        raise StrategyError(f"strategy={strat!r}: {what}; with each expert whole on its rank, its {tp} tensor-parallel "
                            f"ranks would hold the same experts {tp // max(ep, 1)} times over, and perfmodel reduces an "
                            f"expert's gradients beside the data-parallel ones, which this layout has none of. {spread}")


def _moe_rows(work: pd.DataFrame, layer: np.ndarray, lay: ModelLayout) -> np.ndarray:
    """Rows of a mixture of experts' MoE blocks, which tensor parallelism leaves whole (expert tensor parallelism 1):
    in each layer that runs grouped GEMMs, the kernels of the module that holds its ``experts`` (the router, the
    routing, the experts, their permutations and the weighted sum, a shared expert's gate) but those of a shared
    expert, a dense MLP that tensor parallelism splits (:func:`perfmodel.step.trace.is_shared_expert`)."""
    from perfmodel.step import trace as wl

    mods = work["module"].astype(str).to_numpy()
    grouped = (work["op"] == GROUPED_GEMM_OP).to_numpy()
    if not grouped.any():
        return np.zeros(len(work), dtype=bool)
    prefix, _ = _layer_prefix(pd.unique(work["module"].astype(str)))
    rel = np.array(_below_layer(mods, prefix), dtype=object)
    blocks = {r.split(".experts")[0] for r in rel[grouped] if ".experts" in "." + r}
    blocks = {b for b in blocks if b and b != "experts"} or {""}
    moe_layers = np.unique(layer[grouped])
    in_block = np.array([any(r == b or r.startswith(b + ".") for b in blocks) if b_ok else False
                         for r, b_ok in zip(rel, np.isin(layer, moe_layers))], dtype=bool)
    shared = np.array([wl.is_shared_expert(r) for r in rel], dtype=bool)
    return (in_block & ~shared) | grouped


def _divide_tokens(work: pd.DataFrame, mask: np.ndarray, n: int, tokens: int) -> pd.DataFrame:
    """Work rows with the matmul rows under ``mask`` on ``1/n`` of the tokens (a router on the sequence-parallel
    shard): FLOPs, bytes and tiles / n, and the dimension that is the token count (the nearest to it) / n."""
    w = work.copy()
    rows = np.flatnonzero(mask)
    if not len(rows) or n == 1:
        return w
    for c in ("flops", "bytes", "tiles"):
        w.loc[mask, c] = w.loc[mask, c] / n
    dims = w.iloc[rows][["dim_m", "dim_n", "dim_k"]].to_numpy(float)
    col = np.argmin(np.abs(np.log(np.maximum(dims, 1.0) / max(float(tokens), 1.0))), axis=1)
    for c, name in enumerate(("dim_m", "dim_n", "dim_k")):
        sel = rows[col == c]
        if len(sel):
            j = w.columns.get_loc(name)
            w.iloc[sel, j] = np.maximum(w.iloc[sel, j].to_numpy(float) / n, 1.0)
    return w


def _expert_parallel(work: pd.DataFrame, lay: ModelLayout, ep: int, tokens: int, tp: int,
                     imbalance: float = 1.0, etp: int = 1) -> tuple[pd.DataFrame, ModelLayout]:
    """One rank of a mixture of experts' expert-parallel group of ``ep`` ranks, ``tp`` tensor-parallel ranks beside
    it: its grouped GEMMs over ``experts / ep`` experts with the tokens every rank routes to them, each rank routing
    ``1/tp`` of its micro-batch's (:func:`perfmodel.step.trace.expert_parallel_work`; ``tokens`` the rank's tokens per
    micro-batch), and the layout of what it holds (:func:`perfmodel.step.trace.expert_parallel_layout`: ``experts /
    ep`` of the routed experts, each whole). ``imbalance``: the busiest rank's routed tokens over the mean
    (:attr:`perfmodel.Parallelism.expert_load_imbalance`), which sets the pace. ``etp = tp``: each expert split over
    the tensor-parallel ranks, which gather the tokens they route (every rank's grouped GEMMs over all of them, each
    expert's width ``/ tp``), held split. A dense model's as they are."""
    from perfmodel.step import trace as wl

    experts = _experts_of(lay, work)
    if not experts:
        return work, lay
    held = wl.expert_parallel_layout(lay, ep, split_experts=etp > 1)
    if ep <= 1 and tp <= 1:
        return work, held
    grouped = work.loc[(work["op"] == GROUPED_GEMM_OP) & (work["phase"] == "forward"), "dim_m"]
    per_expert = (tokens * lay.experts_per_token / experts if lay.experts_per_token
                  else float(grouped.median()) if len(grouped) else 1.0)
    if etp > 1:
        return wl.expert_parallel_work(work, ep, per_expert, 1, imbalance, split=etp, hidden=lay.hidden), held
    return wl.expert_parallel_work(work, ep, per_expert, tp, imbalance), held


def _expert_fields(work: pd.DataFrame, held: ModelLayout, ep: int, layer: np.ndarray, stages: dict, size: int,
                   tp: int = 1, etp: int = 1) -> dict:
    """:class:`RankWork`'s expert fields (none for a dense model, or without ``ep`` and ``tp``): the routed experts'
    parameters the rank holds (its ``1/etp`` share of each; per pipeline stage too), and under ``ep`` or split
    experts (``etp > 1``) the MoE layers (per stage), the bytes of one all-to-all — the grouped GEMMs' routed tokens
    of one micro-batch (their forward's rows; the rank's own ``1/etp`` of those its tensor-parallel ranks gather) at
    the hidden size, at the training precision — and with ``etp > 1`` those the tensor-parallel ranks gather."""
    from perfmodel.step import trace as wl

    names = wl.expert_param_names(held)
    if (ep <= 1 and tp <= 1) or not names:
        return {}
    out = dict(expert_params=float(sum(held.param_numel[k] for k in names)) / etp, etp=int(etp))
    if ep <= 1 and etp <= 1:
        return out
    grouped = ((work["op"] == GROUPED_GEMM_OP) & (work["phase"] == "forward")).to_numpy()
    moe = np.unique(layer[grouped & (layer >= 0) & (layer < held.n_layers)])
    fwd = work[grouped]
    first = fwd[layer[grouped] == moe[0]].iloc[0] if len(moe) else None
    routed = float(first["dim_m"] * first["dim_b"]) if first is not None else 0.0  # the tokens the rank's experts compute
    gathered = routed * float(held.hidden or 0) * size
    out.update(ep=int(ep), moe_layers=len(moe), dispatch_bytes=gathered / etp if ep > 1 else 0.0,
               etp_gather_bytes=gathered if etp > 1 else 0.0)
    if stages:
        out["stage_moe_layers"] = np.array([len(np.unique(layer[grouped & (stages["stage"] == s)]))
                                            for s in range(len(stages["stage_layers"]))])
    return out


def _layer_tp_blocks(tp_role: np.ndarray, tp_block: np.ndarray, layer: np.ndarray, moe: np.ndarray,
                     n_layers: int) -> np.ndarray:
    """Tensor-parallel blocks of each layer: two (the attention's and the MLP's, as vanilla TP counts every layer),
    but one in a MoE layer whose MoE block tensor parallelism leaves whole (:func:`_moe_rows`) and that has no other
    split block (a shared expert's)."""
    out = np.full(max(n_layers, 1), 2.0)
    split = tp_role != TP_NONE
    for li in np.unique(layer[moe & (layer >= 0) & (layer < n_layers)]):
        if len(pd.unique(tp_block[split & (layer == li)])) <= 1:
            out[li] = 1.0
    return out


def _tp_block_fields(layer_blocks: np.ndarray | None, layer: np.ndarray, stages: dict) -> dict:
    """:class:`RankWork`'s :attr:`RankWork.tp_blocks` (the layers' mean) and, with a pipeline, the blocks of each
    stage's layers (:attr:`RankWork.stage_tp_blocks`); none where every layer has two."""
    if layer_blocks is None:
        return {}
    out = dict(tp_blocks=float(layer_blocks.mean()))
    if stages:
        n = len(layer_blocks)
        inside = (layer >= 0) & (layer < n)
        stage_of = np.zeros(n, dtype=int)
        stage_of[layer[inside]] = stages["stage"][inside]
        out["stage_tp_blocks"] = np.array([layer_blocks[stage_of == s].sum() for s in range(len(stages["stage_layers"]))])
    return out


def _gathered_expert_rows(work: pd.DataFrame, lay: ModelLayout, moe: np.ndarray, ex: dict) -> np.ndarray:
    """Rows of a mixture of experts' ``experts`` modules on the hidden size (permutations, weighting, sums of the
    routed tokens) when the experts are split over the tensor-parallel ranks (``ex``' ``expert_tensor_parallel`` > 1):
    they run on the tokens the ranks gather, not on the rank's sequence shard. None otherwise."""
    from perfmodel.step.trace import in_experts_module

    if int(ex.get("expert_tensor_parallel", 1)) <= 1 or not moe.any() or "module" not in work.columns:
        return np.zeros(len(work), dtype=bool)
    in_experts = in_experts_module(work["module"])
    on_hidden = work["dim_k"].to_numpy(float) == float(lay.hidden or -1)
    return moe & in_experts & on_hidden & ~work["op_class"].isin(["matmul", "conv"]).to_numpy()


def _tensor_parallel_split(work: pd.DataFrame, layer: np.ndarray, is_opt: np.ndarray, lay: ModelLayout, held: ModelLayout,
                           w, ex: dict, deg: dict, tokens: int) -> tuple:
    """One tensor-parallel rank's rows (:func:`rank_work`): the split rows ``/ tpd`` (:func:`_tp_split_mask`), a
    mixture of experts' MoE blocks left whole on the rank's sequence shard (:func:`_moe_rows`), the sequence-parallel
    rows, the casts sized from the unsplit rows, the optimizer over the rank's parameters — or, sharded, over the
    tensor-parallel share its shard is cut from (an expert's over all the ``tp·cp·dp/ep`` ranks that hold it,
    :func:`perfmodel.step.trace.expert_shard_layout`). Returns the rows, ``(layer, is_opt, tp_role, tp_block)`` for
    them, and the tensor-parallel blocks of each layer (:func:`_layer_tp_blocks`; None where every layer has two)."""
    from perfmodel.step import trace as wl

    tpd, sharded = deg["tp"], deg["fsdp"] or ex["distributed_optimizer"]
    # the optimizer's share before a sharded one's 1/(dp·cp)
    opt_share = (rank_share(wl.expert_shard_layout(lay), lay.param_numel, tpd) if sharded and held is not lay
                 else rank_share(held, held.param_numel, tpd)) / lay.params
    moe = _moe_rows(work, layer, lay) if held is not lay and tpd > 1 else np.zeros(len(work), dtype=bool)
    if tpd <= 1:
        tp_role, tp_block = np.zeros(len(work), dtype=np.int8), np.full(len(work), "", dtype=object)
        return _scale_rows(work, is_opt, opt_share), (layer, is_opt, tp_role, tp_block), None
    prec, compile, sp = w.precision, wl.stack_of(w.stack), ex["sequence_parallel"]
    unsplit = work
    split_mask = _tp_split_mask(work, layer, lay) & ~moe
    work = _scale_rows(_divide_rows(work, split_mask, tpd, tokens), is_opt, opt_share)
    # a MoE block left whole runs on the rank's sequence shard: its router here, its experts' grouped GEMMs in
    # _expert_parallel, its other kernels with the sequence-parallel rows below
    work = _divide_tokens(work, moe & (work["op_class"] == "matmul").to_numpy() & (work["op"] != GROUPED_GEMM_OP).to_numpy(),
                          tpd, tokens)
    if sp:  # the norms, dropouts and residual adds on the hidden state run on s / tp tokens
        # (not the casts of whole experts' weights: each rank casts the experts it holds; nor, with the experts split
        # over the tensor-parallel ranks, their kernels on the hidden size: on the tokens those ranks gather)
        sp_mask = (~split_mask & ~is_opt & ~work["op_class"].isin(["matmul", "conv"]).to_numpy()
                   & ~wl.expert_weight_casts(work) & ~_gathered_expert_rows(work, lay, moe, ex))
        work = _divide_rows(work, sp_mask, tpd, tokens)
    resized = wl.te_tp_casts(wl.keep_gathered_whole(work, unsplit, tpd), unsplit, tpd, sp)  # from the unsplit rows
    if moe.any():  # a whole MoE block's casts run on the sequence shard: split above, gathered by no one
        resized.loc[moe] = work.loc[moe]
    work = resized
    tp_role, tp_block = _tp_linear_roles(unsplit, lay, split_mask & (layer >= 0) & (layer < lay.n_layers))
    if compile == "compile" and _tp_gather_bytes(prec, ex["framework"], "compile", w.fp8_recipe, tpd):
        work, keep = _gathered_casts(work, unsplit, tp_role, tpd)  # rows kept and appended: the arrays follow
        tp_role, tp_block, layer, is_opt, moe = tp_role[keep], tp_block[keep], layer[keep], is_opt[keep], moe[keep]
    blocks = _layer_tp_blocks(tp_role, tp_block, layer, moe, lay.n_layers) if moe.any() else None
    return work, (layer, is_opt, tp_role, tp_block), blocks


#: the rank work built inside :func:`shared_rank_work`'s block (None outside one): key -> :class:`RankWork`
_SHARED_RANK_WORK: contextvars.ContextVar = contextvars.ContextVar("perfmodel_shared_rank_work", default=None)


@contextlib.contextmanager
def shared_rank_work():
    """Inside the block, :func:`rank_work` of the same run, layout and GPU count is built once and shared — what a
    plan's layout searches of the same GPU count on several GPUs ask for again and again (the rank's work is the same
    whatever the GPU: :class:`RankWork`, frozen, read only); forgotten when the block ends, so no process keeps every
    layout's work (~0.5-1 MB each for a 70B model)."""
    token = _SHARED_RANK_WORK.set({})
    try:
        yield
    finally:
        _SHARED_RANK_WORK.reset(token)


def rank_work(w, par, n_gpus: int) -> RankWork:
    """The :class:`RankWork` of the workload ``w`` (every field set, the precision checked) laid out by the
    parallelism ``par`` over ``n_gpus`` GPUs: the layout's checks, then the trace of one micro-batch of one rank,
    split as the layout splits it. Inside :func:`shared_rank_work`, built once per run, layout and count."""
    shared = _SHARED_RANK_WORK.get()
    if shared is None:
        return _rank_work(w, par, n_gpus)
    from perfmodel.step.trace import module_fingerprint

    net = model_and_layout(w.model, w.input_shape, w.input_dtype)[0]
    # the module itself (alive for the block: its caller, or the cache of modules built from configs, holds it; a
    # zoo id is built anew each time, by name) and its fingerprint (a module changed in place)
    fields = repr(sorted((k, repr(v)) for k, v in w.values().items() if k != "model"))
    key = (w.model if isinstance(w.model, str) else id(net), module_fingerprint(net), fields, repr(par), int(n_gpus))
    if key not in shared:
        shared[key] = _rank_work(w, par, n_gpus)
    return shared[key]


def _rank_work(w, par, n_gpus: int) -> RankWork:
    """:func:`rank_work`, built."""
    import torch

    from perfmodel.step import trace as wl
    prec, optimizer, compile, pipeline_schedule = w.precision, w.optimizer, w.stack, par.pipeline_schedule
    n, m = int(n_gpus), check_micro_batches(par.micro_batches)
    deg = parse_strategy(par.strategy, n)
    strat, d, tpd, p, fsdp, cpd = deg["name"], deg["dp"], deg["tp"], deg["pp"], deg["fsdp"], deg["cp"]
    v = pipeline_virtual_stages(pipeline_schedule, par.virtual_stages)
    check_async_tp(par.async_tp, tpd, strat, framework=par.framework, stack=wl.stack_of(w.stack))
    ex = par.execution(n)  # resolve_execution of the parallelism's flags over these degrees
    _check_moe_overlap(par, ex["framework"], strat)
    B = int(w.batch_size)
    _check_batch_split(B, d, m, n, strat)
    b_rank = B // d // m
    net, shape, in_dtype, vocab, name, lay = model_and_layout(w.model, w.input_shape, w.input_dtype)
    if tpd > 1 or strat == "tp":
        check_tensor_parallel(lay, tpd, strat, n, name)
    _check_stages(lay, p, v, strat, n, name, pipeline_schedule, par.pipeline_layers, par.strategy)
    high = int(w.input_high) if w.input_high is not None else vocab
    check_sequence_length(net, shape, in_dtype)  # the whole sequence: a cp rank's shard keeps its full-sequence positions
    rank_shape = context_parallel_shape(shape, in_dtype, cpd, strat)
    check_sequence_parallel(rank_shape, in_dtype, tpd, strat, framework=ex["framework"],
                            sequence_parallel=ex["sequence_parallel"])
    work = _master_casts(wl.step_work(net, rank_shape, in_dtype, high, batch_size=b_rank, prec=prec, optimizer=optimizer,
                                      inference=False, compile=(compile, w.compile_scope), recipe=w.fp8_recipe),
                         megatron=ex["framework"] == "megatron")
    if work.empty:
        raise ValueError(f"{name} launches no kernel in a training step (no operator moves data): nothing to predict.")
    etp = ex["expert_tensor_parallel"] if _experts_of(lay, work) and tpd > 1 else 1
    ex = dict(ex, expert_tensor_parallel=etp)
    routing = _check_dispatcher(par, ex["framework"], strat, deg["ep"], etp, lay, name)
    _check_experts_whole(strat, tpd, name, lay, work, deg["ep"], sequence_parallel=ex["sequence_parallel"],
                         dp_ranks=d * cpd, etp=etp, framework=ex["framework"])
    size = torch.empty((), dtype=getattr(torch, wl.PRECISION_DTYPES[prec])).element_size()
    if cpd > 1:
        work = context_parallel_work(work, cpd, lay)
        if ex["framework"] == "pytorch":  # PyTorch's ring attention: its FP32 merges and accumulations
            kv_heads = _context_parallel_kv_heads(par, lay)
            work = wl.ring_attention_work(work, cpd, float(kv_heads or lay.heads or 1) / float(lay.heads or 1),
                                          size, wl.stack_of(compile) == "compile")
    layer = op_layer(work, lay.n_layers)
    is_opt = work["phase"].to_numpy() == "optimizer"
    tokens = b_rank * int(np.prod(rank_shape)) if in_dtype in (torch.long, torch.int, torch.int64) else b_rank
    work, held = _expert_parallel(work, lay, deg["ep"], tokens, tpd, par.expert_load_imbalance, etp)
    rank_P = rank_share(held, held.param_numel, tpd)  # parameters of one tensor-parallel rank (its experts, under ep)
    work, (layer, is_opt, tp_role, tp_block), layer_blocks = _tensor_parallel_split(work, layer, is_opt, lay, held, w, ex,
                                                                                     deg, tokens)
    if fsdp or ex["distributed_optimizer"]:  # the optimizer updates this rank's shard: 1/(dp·cp) of its tensor-parallel share
        work = _master_casts(_scale_rows(work, is_opt, 1 / (d * cpd)), fsdp_shards=d * cpd if fsdp else None)
    fp8_on = resolve_fp8_param_gather(par.fp8_param_gather, ex, fsdp=fsdp, precision=prec, stack=wl.stack_of(compile),
                                      recipe=w.fp8_recipe)
    fp8_names = wl.fp8_linear_weights(net, lay, high, experts=wl.stack_of(compile) == "te") if fp8_on else set()
    if fp8_on:  # torchao casts each weight on the rank's shard before FSDP's FP8 all-gather
        work = _scale_rows(work, (work["op"].astype(str) == wl.FP8_WEIGHT_CAST_OP).to_numpy(), 1 / (d * cpd))
    work, (layer, is_opt, tp_role, tp_block) = _layout_kernels(work, (layer, is_opt, tp_role, tp_block), w, par, ex, lay,
                                                                deg, size=size, tokens=tokens, fp8_names=fp8_names)
    stages = _pipeline_fields(held, net, p, v, tpd, par.pipeline_layers, layer, fp8_names) if p > 1 or strat == "pp" else {}
    used = [g for g, k in (("tp", tpd), ("cp", cpd), ("ep", deg["ep"]), ("pp", p), ("dp", d)) if k > 1] or [{"tp": "tp", "pp": "pp"}.get(strat, "dp")]
    kv_bytes = _context_parallel_kv_bytes(par, lay, b_rank * int(np.prod(shape)), size, tpd, cpd)
    return RankWork(
        name=name, batch_size=B, n_gpus=n, micro_batches=m, strategy=strat, dp=d, tp=tpd, pp=p, cp=cpd, fsdp=bool(fsdp),
        virtual_stages=v, async_tp=bool(par.async_tp), overlap_grad_reduce=par.overlap_grad_reduce, lay=lay, work=work,
        layer=layer, phase=work["phase"].to_numpy(), is_opt=is_opt, elem_bytes=size, grad_bytes=GRAD_REDUCE_BYTES,
        rank_params=rank_P,
        act_bytes=float(tokens * (lay.hidden or 0) * size), kv_bytes=kv_bytes,
        attn=work["op"].astype(str).str.contains("scaled_dot_product").to_numpy() & (work["op_class"] == "matmul").to_numpy(),
        used_groups=tuple(used), framework=ex["framework"], distributed_optimizer=ex["distributed_optimizer"],
        sequence_parallel=ex["sequence_parallel"], overlap_tp_backward=ex["overlap_tp_backward"],
        shard_gradients=ex["shard_gradients"], fp8_gathered=rank_share(held, fp8_names, tpd) if fp8_names else 0.0,
        context_parallel_kv=par.context_parallel_kv,
        per_step=_once_per_step(work, ex["framework"], wl.stack_of(compile), m, fsdp and p > 1),
        tp_role=tp_role, tp_block=tp_block, tp_gather_bytes=_tp_gather_bytes(prec, ex["framework"], wl.stack_of(compile),
                                                                             w.fp8_recipe, tpd, ex["sequence_parallel"]),
        expert_load_imbalance=par.expert_load_imbalance if deg["ep"] > 1 else 1.0,
        overlap_moe_dispatch=bool(par.overlap_moe_dispatch and deg["ep"] > 1),
        moe_dispatcher=par.moe_dispatcher if deg["ep"] > 1 else "alltoall", routing=routing,
        **_tp_block_fields(layer_blocks, layer, stages), **stages,
        **_expert_fields(work, held, deg["ep"], layer, stages, size, tpd, etp))


@dataclasses.dataclass
class _Comm:
    """One GPU's per-layer collective times, shared by the three execution paths."""

    tp_per: float  # one tensor-parallel all-reduce of the activations (the embedding's, the vocabulary projection's)
    tp_layer: float  # one block's all-gather and reduce-scatter: a block's tensor-parallel collectives per pass
    tp_lf: float  # exposed seconds of a layer's tensor-parallel collectives per block (RankWork.tp_blocks), forward
    tp_lb: float  # ... backward
    cp_f: float  # context parallel, exposed per pass over all layers
    cp_b: float
    cp_total: float
    tp_regather: float = 0.0  # per layer: the backward pass's all-gathers of the column-parallel inputs (hidden)
    ep_a2a: float = 0.0  # expert parallel: one all-to-all of a MoE layer's routed tokens (2 per MoE layer per pass)
    etp_moe: float = 0.0  # experts split over tp: a MoE layer's all-gather and reduce-scatter of its routed tokens

    def ep_pass(self, moe_layers) -> float:
        """Seconds of one pass's expert-parallel all-to-alls over ``moe_layers`` MoE layers (a number, or an array
        per pipeline stage): the dispatch of the routed tokens to the ranks holding their experts and the combine of
        the experts' outputs back (the backward pass: their gradients, the same two), and with the experts split over
        the tensor-parallel ranks the all-gather of the dispatched tokens over them and the reduce-scatter of the
        experts' outputs, on the critical path — Megatron-Core's and torchtitan's default token dispatchers overlap
        none of them with compute."""
        return (2.0 * self.ep_a2a + self.etp_moe) * moe_layers

    def ep_exposed(self, moe_layers, f_layer, b_layer, paired=0.0) -> tuple:
        """Exposed seconds of one micro-batch's expert-parallel all-to-alls, (forward pass, backward pass), over
        ``moe_layers`` MoE layers (numbers, or arrays per pipeline stage): all of :meth:`ep_pass` in each, or with
        Megatron-Core's EP overlap (:attr:`perfmodel.Parallelism.overlap_moe_dispatch`) on the ``paired`` share of the
        passes that run beside another micro-batch's opposite pass, what outlasts that pass's compute of a layer
        (``b_layer`` hides a forward layer's dispatch and combine, ``f_layer`` a backward one's)."""
        full = self.ep_pass(moe_layers)
        if not np.any(paired):
            return full, full
        pair = 2.0 * self.ep_a2a + self.etp_moe
        f = moe_layers * np.maximum(pair - b_layer, 0.0)
        b = moe_layers * np.maximum(pair - f_layer, 0.0)
        return paired * f + (1 - paired) * full, paired * b + (1 - paired) * full


def _check_moe_overlap(par, framework: str, strat: str) -> None:
    """A ``StrategyError`` for :attr:`perfmodel.Parallelism.overlap_moe_dispatch` outside Megatron-Core."""
    if par.overlap_moe_dispatch and framework != "megatron":
        raise StrategyError(f"strategy={strat!r}: overlap_moe_dispatch=True is Megatron-Core's EP overlap "
                            "(--overlap-moe-expert-parallel-comm); PyTorch's (torchtitan's) token dispatchers overlap "
                            "nothing. Use framework='megatron', or leave it False.")


def _check_dispatcher(par, framework: str, strat: str, ep: int, etp: int, lay: ModelLayout, name: str) -> tuple:
    """:attr:`perfmodel.Parallelism.moe_dispatcher` checked against the layout: DeepEP needs Megatron-Core, ``ep`` and
    whole experts, and a config that says how many experts a token takes. Returns :attr:`RankWork.routing` for DeepEP
    (experts, experts per token, groups, groups per token), else zeros."""
    if par.moe_dispatcher != "deepep":
        return (0, 0, 0, 0)
    why = (f"dispatches a mixture of experts' tokens; {name} has no routed experts. Leave it out" if not lay.experts else
           "is Megatron-Core's flex dispatcher (--moe-flex-dispatcher-backend deepep); PyTorch's (torchtitan's) is "
           "modelled as an all-to-all. Use framework='megatron'" if framework != "megatron" else
           "dispatches a mixture of experts' tokens over its expert-parallel ranks; this layout has none. Add an ep "
           "factor" if ep <= 1 else
           "is modelled with each expert whole on its rank; these experts are split over the tensor-parallel ranks. "
           "Pass expert_tensor_parallel=1" if etp > 1 else
           f"spreads each token over the experts it takes, which {name}'s config does not say (num_experts_per_tok). "
           "Add it to the config" if not lay.experts_per_token else "")
    if why:
        raise StrategyError(f"strategy={strat!r}: moe_dispatcher='deepep' {why}, or leave moe_dispatcher='alltoall'.")
    return (int(lay.experts), int(lay.experts_per_token), int(lay.expert_groups or 0), int(lay.group_topk or 0))


def _deepep_spread(r: RankWork) -> tuple[float, float]:
    """DeepEP's destinations of one token of ``r`` (:func:`perfmodel.step.collectives.routed_spread`): the nodes of
    the ep group and the ranks it goes to, on average."""
    E, k, G, M = r.routing
    return (routed_spread(E, k, max(int(r.ep_nodes), 1), G or None, M or None),
            routed_spread(E, k, r.ep, G or None, M or None))


def _ep_paired(r: RankWork, stage=None):
    """The share of a rank's micro-batch passes that Megatron-Core's EP overlap
    (:attr:`perfmodel.Parallelism.overlap_moe_dispatch`) runs beside another micro-batch's opposite pass: 0 without
    it. Of the ``m·v`` forward (and as many backward) chunk passes of pipeline rank ``s``, the warm-up forwards (and
    as many cool-down backwards) have no partner — ``p−s−1``, ``2(p−s−1) + (v−1)p`` interleaved — and at least one:
    without a pipeline, a micro-batch's backward cannot run beside its own forward. ``stage``: the pipeline ranks
    (an array), else the flat layout's."""
    if r.ep <= 1 or not r.overlap_moe_dispatch:
        return 0.0
    m, v, p = r.micro_batches, r.virtual_stages, max(r.pp, 1)
    s = np.asarray(stage if stage is not None else p - 1)
    warm = (p - s - 1) if v == 1 else 2 * (p - s - 1) + (v - 1) * p
    n = m * v
    return np.clip((n - np.maximum(warm, 1)) / n, 0.0, 1.0)


def _layer_comm(r: RankWork, t: np.ndarray, lk: dict) -> _Comm:
    phase, lay = r.phase, r.lay
    tp_per = allreduce_time(r.act_bytes, r.tp, lk["tp"])  # 0 without tensor parallelism
    L = max(lay.n_layers, 1)
    # tensor-parallel collectives of the layers, per pass: an all-reduce's worth per block, RankWork.tp_blocks a layer
    # (an all-gather and a reduce-scatter per block, the all-gather in FP8 under torchao's tensorwise Float8); async TP
    # fuses each with its matmul. tp_lf / tp_lb: a layer's exposed seconds per block
    gather = r.tp_gather_bytes or r.elem_bytes
    ag = allgather_time(r.act_bytes * gather / r.elem_bytes, r.tp, lk["tp"])
    rs = reduce_scatter_time(r.act_bytes, r.tp, lk["tp"])
    tp_layer = tp_per if gather == r.elem_bytes else ag + rs
    regather = 0.0
    if r.async_tp and r.tp > 1:
        f_ex, b_ex, regather = _async_tp_layer(r, t, ag, rs)
        tp_lf, tp_lb = f_ex / r.tp_blocks, b_ex / r.tp_blocks
    elif r.overlap_tp_backward and r.tp > 1:
        b_ex, regather = _overlapped_tp_backward(r, t, ag, rs, tp_per, tp_layer)
        tp_lf, tp_lb = tp_layer, b_ex / r.tp_blocks
    else:
        tp_lf = tp_lb = tp_layer
    # context parallel, per layer: all-gather K, V under the first of cp attention chunks in each pass, and
    # reduce-scatter dK, dV after the backward one
    cpd = r.cp
    ag_kv = allgather_time(r.kv_bytes, cpd, lk["cp"])
    a_f = float(t[r.attn & (phase == "forward")].sum()) / L
    a_b = float(t[r.attn & (phase == "backward")].sum()) / L
    cp_f = lay.n_layers * max(ag_kv - a_f / cpd, 0.0) if cpd > 1 else 0.0
    cp_b = lay.n_layers * (max(ag_kv - a_b / cpd, 0.0) + reduce_scatter_time(r.kv_bytes, cpd, lk["cp"])) if cpd > 1 else 0.0
    cp_total = lay.n_layers * (2 * ag_kv + reduce_scatter_time(r.kv_bytes, cpd, lk["cp"])) if cpd > 1 else 0.0
    if r.ep > 1 and r.moe_dispatcher == "deepep":
        nodes, ranks = _deepep_spread(r)
        ep_a2a = deepep_time(r.dispatch_bytes, r.ep, r.routing[1], nodes, ranks, lk.get("ep_nvl", lk["ep"]),
                             lk.get("ep_rdma"), r.ep_nodes)
    else:
        ep_a2a = alltoall_time(r.dispatch_bytes, r.ep, lk["ep"]) if r.ep > 1 else 0.0
    etp_moe = (allgather_time(r.etp_gather_bytes, r.tp, lk["tp"]) + reduce_scatter_time(r.etp_gather_bytes, r.tp, lk["tp"])
               if r.etp > 1 else 0.0)
    return _Comm(tp_per, tp_layer, tp_lf, tp_lb, cp_f, cp_b, cp_total, regather, ep_a2a, etp_moe)


@dataclasses.dataclass
class LayoutStep:
    """One GPU's step on a layout: the step and its parts, seconds. ``comm_exposed`` and ``comm_total`` give each
    process group's share of ``comm_s`` and ``comm_total_s`` (:data:`COMM_GROUPS`; a group the layout lacks is 0)."""

    step: float
    compute: float
    exposed: float
    comm_total: float
    bubble: float
    forward: float
    backward: float
    optimizer: float
    comm_exposed: dict
    comm_total_by_group: dict
    #: seconds the compute loses to the communication hidden under it (:func:`perfmodel.step.collectives.overlap_slowdown`),
    #: included in ``step``
    overlap_slowdown: float = 0.0
    #: exposed seconds of the forward pass's per-layer tensor-parallel collectives on the critical path (every
    #: micro-batch's; a pipeline's slowest stage): what activation checkpointing runs again when it recomputes the
    #: layers (:func:`perfmodel.step.one_gpu.add_recompute`). Not included in ``step``.
    tp_forward: float = 0.0
    #: the same for the context-parallel K/V all-gathers of the forward pass
    cp_forward: float = 0.0
    #: the same for the expert-parallel all-to-alls of the forward pass
    ep_forward: float = 0.0
    #: seconds of ``forward`` that are FSDP2's all-gather copy-outs (:attr:`RankWork.copy_out`): part of the forward
    #: pass, not of what activation checkpointing recomputes
    copy_out_forward: float = 0.0
    #: seconds of ``forward`` that are the reductions ending asynchronous TP's fused matmul-reduce-scatters
    #: (:attr:`RankWork.tp_reduce`): recomputed with their layers, but not by torchtitan's selective policy, which
    #: keeps the reduce-scatters' outputs
    tp_reduce_forward: float = 0.0


def _kept_forward(r: RankWork, t: np.ndarray, m: int, on_path=True) -> dict:
    """:attr:`LayoutStep.copy_out_forward` and :attr:`LayoutStep.tp_reduce_forward` of ``m`` micro-batches, the rows
    ``on_path`` (a pipeline's slowest stage; all of them by default)."""
    fwd = (r.phase == "forward") & on_path
    return dict(copy_out_forward=m * float(t[fwd & r.copy_out].sum()), tp_reduce_forward=m * float(t[fwd & r.tp_reduce].sum()))


def _tp_layers_forward(r: RankWork, c: _Comm, n_layers: float, blocks: float | None = None) -> float:
    """Exposed seconds of the tensor-parallel collectives of ``n_layers`` layers' forward pass, one micro-batch: one
    per block (two per layer, :attr:`RankWork.tp_blocks`), each all of one activation all-reduce (vanilla TP) or what
    the matmul it feeds or follows leaves exposed (asynchronous TP, :func:`_async_tp_layer`); 0 without tensor
    parallelism. ``blocks``: the layers' blocks where they differ from :attr:`RankWork.tp_blocks` per layer (a
    pipeline stage's)."""
    return (r.tp_blocks * n_layers if blocks is None else blocks) * c.tp_lf


def _tp_layers_all(r: RankWork, c: _Comm, n_layers, blocks=None) -> float:
    """Seconds of every tensor-parallel collective of ``n_layers`` layers (a number, or an array per pipeline stage),
    both passes of one micro-batch, hidden (asynchronous TP, Megatron's backward overlap) or not: two per block (four
    per layer, :attr:`RankWork.tp_blocks`), each one activation all-reduce's worth (vanilla TP's exposed time; the
    group's ``comm_total`` in every layout), and the inputs Megatron's column-parallel linears gather again in the
    backward pass. ``blocks``: the layers' blocks where they differ from :attr:`RankWork.tp_blocks` per layer (each
    pipeline stage's)."""
    if blocks is None:
        return n_layers * (2 * r.tp_blocks * c.tp_layer + c.tp_regather)
    return blocks * (2 * c.tp_layer + c.tp_regather / r.tp_blocks)


def _groups(**parts) -> dict:
    return {g: float(parts.get(g, 0.0)) for g in COMM_GROUPS}


def _fsdp_step(r: RankWork, t: np.ndarray, lk: dict, c: _Comm, fwd: float, bwd: float, opt: float) -> LayoutStep:
    """FSDP (with tp and cp inside it), no pipeline: each layer's parameters gathered under the previous layer's
    compute in both passes, the gradients reduce-scattered under the backward pass."""
    m, lay, units = r.micro_batches, r.lay, max(r.lay.n_layers, 1)
    link = lk["dp"]
    params = r.dp_reduced(r.rank_params, r.expert_params, lk)
    ag = allgather_time(r.gathered_bytes(params, r.fp8_gathered), r.dp * r.cp, link)
    rs = reduce_scatter_time(params * r.grad_bytes, r.dp * r.cp, link)
    # with tp: the activation all-reduces of every layer (one per block, RankWork.tp_blocks a layer, and one for the
    # embedding / vocabulary projection, in each pass) sit on the critical path; with ep the MoE layers' all-to-alls
    tp_f = r.tp_blocks * lay.n_layers * c.tp_lf + c.tp_per
    tp_b = r.tp_blocks * lay.n_layers * c.tp_lb + c.tp_per
    ep = c.ep_pass(r.moe_layers)
    ep_f, ep_b = c.ep_exposed(r.moe_layers, fwd / units, bwd / units, _ep_paired(r))
    f_pass = max(fwd, ag) + ag / units + tp_f + c.cp_f + ep_f
    b_pass = max(bwd, ag + rs) + rs / units + tp_b + c.cp_b + ep_b
    compute = m * (fwd + bwd) + opt
    step = m * (f_pass + b_pass) + opt
    tp_all = _tp_layers_all(r, c, lay.n_layers) + 2 * c.tp_per  # both passes, hidden or not
    dp_exposed = m * ((max(fwd, ag) - fwd) + ag / units + (max(bwd, ag + rs) - bwd) + rs / units)
    return LayoutStep(step=step, compute=compute, exposed=step - compute,
                      comm_total=m * (2 * ag + rs + tp_all + c.cp_total + 2 * ep), bubble=0.0,
                      forward=m * fwd, backward=m * bwd, optimizer=opt,
                      comm_exposed=_groups(dp=dp_exposed, tp=m * (tp_f + tp_b), cp=m * (c.cp_f + c.cp_b),
                                           ep=m * (ep_f + ep_b)),
                      comm_total_by_group=_groups(dp=m * (2 * ag + rs), tp=m * tp_all, cp=m * c.cp_total, ep=2 * m * ep),
                      tp_forward=m * _tp_layers_forward(r, c, lay.n_layers), cp_forward=m * c.cp_f, ep_forward=m * ep_f,
                      **_kept_forward(r, t, m))


def _dp_tp_step(r: RankWork, t: np.ndarray, lk: dict, c: _Comm, fwd: float, bwd: float, opt: float) -> LayoutStep:
    """dp × tp (× cp): tp all-reduces (and the cp exchanges) on the critical path of every micro-batch; the gradients
    of the rank's parameters reduced over the ``dp·cp`` ranks in buckets under the last micro-batch's backward pass
    (its tp all-reduces included): all-reduced (DDP), or reduce-scattered and the updated parameters all-gathered
    before the next forward pass (Megatron's distributed optimizer, :func:`exposed_bucket_gather`)."""
    m, lay = r.micro_batches, r.lay
    tp_comm = m * (r.tp_blocks * lay.n_layers * (c.tp_lf + c.tp_lb) + 2 * c.tp_per)
    tp_all = m * (_tp_layers_all(r, c, lay.n_layers) + 2 * c.tp_per)  # every collective, hidden (async TP) or not
    ep = c.ep_pass(r.moe_layers)  # expert parallel: the MoE layers' all-to-alls, in each pass
    units = max(lay.n_layers, 1)
    ep_f, ep_b = c.ep_exposed(r.moe_layers, fwd / units, bwd / units, _ep_paired(r))
    window = bwd + r.tp_blocks * lay.n_layers * c.tp_lb + c.tp_per + c.cp_b + ep_b  # the backward pass as it runs
    params = r.dp_reduced(r.rank_params, r.expert_params, lk)
    reduce_ex, gather_ex, dp_total = _bucketed_dp(r, lk, fwd, window, params, r.fp8_gathered)
    if r.shard_gradients and m > 1:
        # ZeRO-2: each earlier micro-batch's reduce-scatter runs under the next micro-batch's passes; what outlasts
        # them holds that micro-batch's backward (its gradient buckets not yet free)
        rs_mb = _micro_batch_reduce(r, lk, params)
        reduce_ex += (m - 1) * max(rs_mb - (fwd + window), 0.0)
        dp_total += (m - 1) * rs_mb
    dp_exposed = reduce_ex + gather_ex
    cp_comm = m * (c.cp_f + c.cp_b)
    compute = m * (fwd + bwd) + opt
    exposed = tp_comm + dp_exposed + cp_comm + m * (ep_f + ep_b)
    return LayoutStep(step=compute + exposed, compute=compute, exposed=exposed,
                      comm_total=tp_all + dp_total + m * c.cp_total + 2 * m * ep, bubble=0.0,
                      forward=m * fwd, backward=m * bwd, optimizer=opt,
                      comm_exposed=_groups(tp=tp_comm, dp=dp_exposed, cp=cp_comm, ep=m * (ep_f + ep_b)),
                      comm_total_by_group=_groups(tp=tp_all, dp=dp_total, cp=m * c.cp_total, ep=2 * m * ep),
                      tp_forward=m * _tp_layers_forward(r, c, lay.n_layers), cp_forward=m * c.cp_f, ep_forward=m * ep_f,
                      **_kept_forward(r, t, m))


def _bucketed_dp(r: RankWork, lk: dict, forward_s: float, backward_s: float, params: float,
                 fp8_params: float = 0.0) -> tuple[float, float, float]:
    """(exposed gradient reduction, exposed parameter gather, total) of ``params`` parameters' data-parallel
    collectives over the ``dp·cp`` ranks, in buckets: the gradients all-reduced (DDP) or reduce-scattered (Megatron's
    distributed optimizer) under ``backward_s``, and with the distributed optimizer the updated parameters all-gathered
    under the next ``forward_s`` (:func:`exposed_bucket_gather`), ``fp8_params`` of them in FP8."""
    bucket, first = r.bucket_bytes(r.grad_bytes)
    if not r.distributed_optimizer:
        ex, tot = exposed_bucket_collective(backward_s, params * r.grad_bytes, r.dp_ranks, lk["dp"],
                                            overlap=r.overlap_grad_reduce, bucket_bytes=bucket, first_bucket_bytes=first)
        return ex, 0.0, tot
    rs_ex, rs_tot = exposed_bucket_collective(backward_s, params * r.grad_bytes, r.dp_ranks, lk["dp"],
                                              collective=reduce_scatter_time, overlap=r.overlap_grad_reduce,
                                              bucket_bytes=bucket, first_bucket_bytes=first)
    gathered = r.gathered_bytes(params, fp8_params) if fp8_params else params * r.elem_bytes
    elem = gathered / params if (fp8_params and params) else r.elem_bytes  # 40M-element buckets of the mixed sizes
    ag_ex, ag_tot = exposed_bucket_gather(forward_s, gathered, r.dp_ranks, lk["dp"],
                                          overlap=r.overlap_grad_reduce, bucket_bytes=r.bucket_bytes(elem)[0])
    return rs_ex, ag_ex, rs_tot + ag_tot


def _micro_batch_reduce(r: RankWork, lk: dict, params: float) -> float:
    """Seconds on the link of one micro-batch's gradient reduce-scatter of ``params`` parameters over the ``dp·cp``
    ranks under ZeRO-2 (:attr:`RankWork.shard_gradients`): in Megatron's buckets, or FSDP's one per layer (timed as
    one collective of their bytes, as the per-step reduce-scatter is)."""
    if not r.shard_gradients or r.dp_ranks < 2 or params <= 0:
        return 0.0
    nbytes = params * r.grad_bytes
    if r.fsdp:
        return reduce_scatter_time(nbytes, r.dp_ranks, lk["dp"])
    bucket, first = r.bucket_bytes(r.grad_bytes)
    return exposed_bucket_collective(0.0, nbytes, r.dp_ranks, lk["dp"], collective=reduce_scatter_time,
                                     bucket_bytes=bucket, first_bucket_bytes=first)[1]


def _stage_reduced(r: RankWork, s: int, lk: dict) -> float:
    """Parameters of pipeline stage ``s`` as its data-parallel collectives carry them (:meth:`RankWork.dp_reduced`)."""
    experts = float(r.stage_experts[s]) if r.stage_experts is not None else 0.0
    return r.dp_reduced(float(r.stage_rank[s]), experts, lk)


def _pipeline_dp(r: RankWork, t: np.ndarray, lk: dict, c: _Comm) -> tuple[np.ndarray, np.ndarray, float]:
    """Per stage of a pipeline: the data-parallel communication left exposed after its last backward pass and its
    total, and the exposed FSDP gather before the first forward pass (the slowest rank's)."""
    p, d, phase, stage = r.pp, r.dp, r.phase, r.stage
    dp_ex, dp_tot, head = np.zeros(p), np.zeros(p), 0.0
    if not r.fsdp and r.dp_ranks > 1:
        # dp: each stage reduces its gradients under its last micro-batch's backward pass (with the tensor-parallel
        # collectives it leaves exposed, per layer, and the vocabulary projection's), then
        # steps; with Megatron's distributed optimizer it all-gathers its updated parameters under its first
        # micro-batch's forward pass
        heads = np.zeros(p)
        tp_bwd = r.stage_blocks * c.tp_lb + (np.arange(p) == p - 1) * c.tp_per
        for s in range(p):
            f_s = float(t[(stage == s) & (phase == "forward")].sum())
            b_s = float(t[(stage == s) & (phase == "backward")].sum()) + tp_bwd[s]
            fp8_s = 0.0 if r.stage_fp8_gathered is None else float(r.stage_fp8_gathered[s])
            dp_ex[s], heads[s], dp_tot[s] = _bucketed_dp(r, lk, f_s, b_s, _stage_reduced(r, s, lk), fp8_s)
        head = float(heads.max())
    elif r.fsdp and d * r.cp > 1:
        # FSDP with a pipeline (torchtitan: no resharding after the forward pass): each rank gathers its stage's
        # parameters once per step, layer by layer under its first micro-batch's forward pass, and
        # reduce-scatters the gradients once, under its last micro-batch's backward pass
        heads = np.zeros(p)
        for s in range(p):
            fp8_s = 0.0 if r.stage_fp8_gathered is None else float(r.stage_fp8_gathered[s])
            ag_s = allgather_time(r.gathered_bytes(_stage_reduced(r, s, lk), fp8_s), d * r.cp, lk["dp"])
            rs_s = reduce_scatter_time(_stage_reduced(r, s, lk) * r.grad_bytes, d * r.cp, lk["dp"])
            f_s = float(t[(stage == s) & (phase == "forward")].sum())
            b_s = float(t[(stage == s) & (phase == "backward")].sum())
            units_s = max(int(r.stage_layers[s]), 1)
            heads[s] = max(ag_s - f_s, 0.0) + ag_s / units_s
            dp_ex[s] = max(rs_s - b_s, 0.0) + rs_s / units_s
            dp_tot[s] = ag_s + rs_s
        head = float(heads.max())
    return dp_ex, dp_tot, head


def _pipeline_step(r: RankWork, t: np.ndarray, lk: dict, c: _Comm, fwd: float, bwd: float, opt: float) -> LayoutStep:
    """Pipeline, with tp inside each stage and dp (or FSDP) over replicas of the pipeline."""
    p, m, v, lay, tpd, phase, stage = r.pp, r.micro_batches, r.virtual_stages, r.lay, r.tp, r.phase, r.stage
    L = max(lay.n_layers, 1)
    st_fb = np.array([float(t[(stage == s) & ~r.is_opt].sum()) for s in range(p)])
    edges = (np.arange(p) == 0).astype(float) + (np.arange(p) == p - 1)
    # tensor-parallel collectives per micro-batch on each stage: 4 all-reduces' worth per layer (exposed as the
    # layout runs them), the embedding's all-reduce on the first stage, the vocabulary projection's on the last
    st_tp = r.stage_blocks * (c.tp_lf + c.tp_lb) + edges * c.tp_per
    st = st_fb + st_tp if tpd > 1 else st_fb
    if r.cp > 1:  # each stage's layers' context-parallel exchanges, per micro-batch
        st = st + r.stage_layers / L * (c.cp_f + c.cp_b)
    # its MoE layers' all-to-alls (and the gathers of split experts)
    st_ep = 2 * c.ep_pass(r.stage_moe_layers) if r.moe_layers and r.stage_moe_layers is not None else np.zeros(p)
    ep_f = ep_b = st_ep / 2  # exposed in each pass, all of them but under Megatron's EP overlap
    if r.ep > 1 and r.overlap_moe_dispatch:
        layers = np.maximum(r.stage_layers, 1)
        f_st = np.array([float(t[(stage == s) & (phase == "forward")].sum()) for s in range(p)])
        b_st = np.array([float(t[(stage == s) & (phase == "backward")].sum()) for s in range(p)])
        ep_f, ep_b = c.ep_exposed(r.stage_moe_layers, f_st / layers, b_st / layers, _ep_paired(r, np.arange(p)))
    st = st + ep_f + ep_b
    st_opt = opt * r.stage_rank / r.rank_params
    # ZeRO-2: every micro-batch reduce-scatters its stage's gradients; a stage whose reduce-scatter outlasts its
    # micro-batch's work is paced by it (the next backward waits for its gradient buckets); the last micro-batch's is
    # the tail of _pipeline_dp
    rs_mb = np.array([_micro_batch_reduce(r, lk, _stage_reduced(r, s, lk)) for s in range(p)])
    paced = np.maximum(rs_mb - st, 0.0)
    st = st + paced
    # Megatron's scatter-gather: each tp rank sends 1/tp of the activations to the next stage, which all-gathers them
    # (with sequence parallelism the next stage starts from the sequence shard: no gather)
    hop = p2p_time(r.act_bytes / tpd, lk["pp"]) + (0.0 if r.sequence_parallel else allgather_time(r.act_bytes, tpd, lk["tp"]))
    pipe, bubble = pipeline_time(st, m, p2p_s=hop, virtual_stages=v)
    tied_ar = (allreduce_time(lay.vocab * lay.hidden * r.grad_bytes / tpd, 2, lk["pp"])
               if (p > 1 and lay.tied and lay.vocab and lay.hidden) else 0.0)
    dp_ex, dp_tot, head = _pipeline_dp(r, t, lk, c)
    tail = st_opt + dp_ex
    o_rank = float(st_opt.max())
    step = pipe + tied_ar + float(tail.max()) + head
    sb = int(np.argmax(st))

    def on_path(per_stage: np.ndarray) -> float:  # a per-micro-batch cost of each stage, over the schedule
        return float(per_stage.sum() / v + (m - 1 / v) * per_stage[sb])

    # exposed as the layout runs them, and every collective, hidden under a matmul (asynchronous TP) or an attention
    # chunk (context parallelism) or not: the hidden part slows the compute beside it (layout_step)
    tp_only = on_path(st_tp) if tpd > 1 else 0.0
    tp_all = on_path(_tp_layers_all(r, c, r.stage_layers, r.stage_blocks) + edges * c.tp_per) if tpd > 1 else 0.0
    cp_only = on_path(r.stage_layers / L * (c.cp_f + c.cp_b)) if r.cp > 1 else 0.0
    cp_all = on_path(r.stage_layers / L * c.cp_total) if r.cp > 1 else 0.0
    moe_comm = bool(np.any(st_ep))  # the all-to-alls, and the gathers of experts split over tp (with or without ep)
    ep_only = on_path(ep_f + ep_b) if moe_comm else 0.0
    ep_all = on_path(st_ep) if moe_comm else 0.0
    sends = 2 * hop * ((v * p - 1) + (m - 1))
    dp_paced = on_path(paced) if paced.any() else 0.0
    dp_tot = dp_tot + (m - 1) * rs_mb  # the earlier micro-batches' reduce-scatters (ZeRO-2), hidden or not
    dp_exposed = (float(tail.max()) - o_rank) + head + dp_paced
    exposed = sends + tied_ar + tp_only + cp_only + dp_exposed + ep_only
    comm_total = sends + tied_ar + tp_all + cp_all + float(dp_tot.max()) + ep_all
    return LayoutStep(step=step, compute=step - exposed - bubble, exposed=exposed, comm_total=comm_total, bubble=bubble,
                      forward=m * float(t[(stage == sb) & (phase == "forward")].sum()),
                      backward=m * float(t[(stage == sb) & (phase == "backward")].sum()), optimizer=o_rank,
                      comm_exposed=_groups(pp=sends + tied_ar, tp=tp_only, cp=cp_only, dp=dp_exposed, ep=ep_only),
                      comm_total_by_group=_groups(pp=sends + tied_ar, tp=tp_all, cp=cp_all, dp=float(dp_tot.max()),
                                                  ep=ep_all),
                      ep_forward=m * float(np.broadcast_to(ep_f, (p,))[sb]),
                      tp_forward=m * _tp_layers_forward(r, c, float(r.stage_layers[sb]), float(r.stage_blocks[sb]))
                      if tpd > 1 else 0.0,
                      cp_forward=m * float(r.stage_layers[sb]) / L * c.cp_f if r.cp > 1 else 0.0,
                      **_kept_forward(r, t, m, stage == sb))


def layout_step(r: RankWork, t: np.ndarray, links: dict) -> LayoutStep:
    """One GPU's step on the layout ``r``, ``t`` its kernel times (:func:`perfmodel.step.kernels.kernel_seconds`
    of ``r.work``) and ``links`` its link per group (:func:`resolve_links`). A row that runs once per step
    (``r.per_step``) counts a micro-batch's share of its kernel: the step's micro-batches sum to the one kernel."""
    if r.per_step is not None:
        t = np.where(r.per_step, t / r.micro_batches, t)
    fwd = float(t[r.phase == "forward"].sum())
    bwd = float(t[r.phase == "backward"].sum())
    opt = float(t[r.is_opt].sum())
    c = _layer_comm(r, t, links)
    if r.pipelined:
        s = _pipeline_step(r, t, links, c, fwd, bwd, opt)
    else:
        s = (_fsdp_step if r.fsdp else _dp_tp_step)(r, t, links, c, fwd, bwd, opt)
    # the communication hidden under compute slows that compute (SMs and memory bandwidth shared with NCCL's kernels)
    hidden = s.comm_total - sum(s.comm_exposed.values())
    hidden = hidden if hidden > 1e-9 * s.comm_total else 0.0  # all of it exposed: a difference of rounding, not time
    slow = overlap_slowdown(hidden, s.compute)
    return dataclasses.replace(s, step=s.step + slow, overlap_slowdown=slow)


#: the kernels a step runs once though :func:`perfmodel.step.trace.te_fp8_work` traces them with each micro-batch's work,
#: under Megatron-Core (:attr:`RankWork.per_step`): Transformer Engine's FP8 and NVFP4 weight casts, which its weight
#: cache keeps from a chunk's first micro-batch of the step to the last (NVIDIA/Megatron-LM d98e8a6,
#: megatron/core/pipeline_parallel/schedules.py ``forward_step``, megatron/core/extensions/transformer_engine.py
#: ``TELinear.forward``; ``--disable-parameter-transpose-cache`` off by default)
ONCE_PER_STEP_OPS = TE_WEIGHT_CAST_OPS


#: the columns of :func:`predict_parallel_step_time`'s rows that only :func:`perfmodel.predict`'s result shows: each
#: process group's exposed and total communication (dicts keyed by :data:`COMM_GROUPS`).
GROUP_COLUMNS = ("comm_by_group_s", "comm_total_by_group_s")


def predict_parallel_step_time(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high=None,
                               precision: str = "fp32", optimizer: str | None = "sgd-momentum", alpha: float = 0.2,
                               inference: bool = False, n_gpus: int = 2, strategy: str = "dp", micro_batches: int | None = None,
                               interconnect=None, overlap_grad_reduce: bool = True, gpus_per_node: int = 8,
                               compile: bool = False, async_tp: bool = False, pipeline_schedule: str = "1f1b",
                               by_group: bool = False, nics_per_node: int | None = None, framework: str = "pytorch",
                               distributed_optimizer: bool | None = None, sequence_parallel: bool | None = None,
                               virtual_stages: int | None = None) -> pd.DataFrame:
    """:func:`perfmodel.predict_step_time` on ``n_gpus`` GPUs with a parallel ``strategy`` (see the module docstring):
    ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` or a combination ``"dp2-tp2-pp2"`` (:func:`parse_strategy`);
    ``batch_size`` is the global batch; ``interconnect`` one link for all the groups or a dict per group
    (:func:`resolve_links`). ``by_group=True`` adds :data:`GROUP_COLUMNS`. A keyword face over
    :func:`parallel_rows`; prefer :func:`perfmodel.predict_step_time` with ``n_gpus=``, or :func:`perfmodel.predict`."""
    from perfmodel._run import keyword_run

    w, cs, p = keyword_run(model, gpus, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                           input_high=input_high, precision=precision, optimizer=optimizer, inference=inference,
                           n_gpus=n_gpus, strategy=strategy, micro_batches=micro_batches, interconnect=interconnect,
                           overlap_grad_reduce=overlap_grad_reduce, gpus_per_node=gpus_per_node, compile=compile,
                           async_tp=async_tp, pipeline_schedule=pipeline_schedule, nics_per_node=nics_per_node,
                           framework=framework, distributed_optimizer=distributed_optimizer,
                           sequence_parallel=sequence_parallel, virtual_stages=virtual_stages)
    from perfmodel.step.kernels import clocked_clusters, name_clocked_rows

    cs, names, notes = clocked_clusters(w.precision, cs)  # each GPU at the clock a step runs it at, as predict_step_time
    return name_clocked_rows(parallel_rows(w, cs, p, alpha=alpha, by_group=by_group), names, notes)


def parallel_rows(w, clusters, par, *, alpha: float = 0.2, by_group: bool = False) -> pd.DataFrame:
    """The step of the workload ``w`` laid out by ``par`` on each cluster of ``clusters`` (the same GPU count, nodes
    and links; one row per cluster): the layout's rank traced once (:func:`rank_work`), its kernels timed on each GPU
    and its collectives on each cluster's links (:func:`resolve_links`), the step assembled by :func:`layout_step`."""
    from perfmodel.step import kernels as kn
    from perfmodel.step import trace as wl
    prec = wl.check_step_args(alpha, w.optimizer, w.inference, w.precision, w.batch_size)
    check_strategy_name(par.strategy)
    if w.inference:
        raise ValueError("inference=True predicts one forward pass on one GPU; parallel strategies model training steps "
                         "(pass n_gpus=1 for inference).")
    c0 = clusters[0] if clusters else None
    n_gpus = c0.n_gpus if c0 else 1
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    check_micro_batches(par.micro_batches)
    deg = parse_strategy(par.strategy, int(n_gpus))
    pipeline_virtual_stages(par.pipeline_schedule, par.virtual_stages)
    check_async_tp(par.async_tp, deg["tp"], deg["name"], framework=par.framework, stack=wl.stack_of(w.stack))
    par.execution(n_gpus, deg)
    specs = kn.gpu_specs([c.gpu for c in clusters], prec)
    r = rank_work(w, par, n_gpus)
    # the ring of an expert's holders ("edp") beside tp too; the ep ranks etp apart; DeepEP's NIC and NVLink
    moe = dict(deg, moe=True, etp=r.etp, deepep=r.moe_dispatcher == "deepep") if r.expert_params else deg
    links = [resolve_links(c.interconnect, s, degrees=moe, gpus_per_node=c.gpus_per_node, nics_per_node=c.nics_per_node)
             for c, s in zip(clusters, specs)]
    assumed = [default_network(s, moe, c.gpus_per_node, c.nics_per_node) if c.interconnect is None else None
               for c, s in zip(clusters, specs)]
    q, interval = kn.conformal_interval(alpha)
    rows, far = [], []
    for c, spec, lk, net in zip(clusters, specs, links, assumed):
        rc, lk = _on_cluster(r, moe, c, lk, net)
        t, source = kn.kernel_seconds(rc.work, spec, prec, with_source=True)
        s = layout_step(rc, _timed_reductions(rc, t, spec), lk)
        far += kn._extrapolation_notes(spec, prec)
        row = _layout_row(rc, s, spec, lk, prec, w.optimizer, q, interval, by_group)
        row["basis"] += wl.experts_note(rc.work, rc.ep) + (f"; {net.note}" if net is not None else "")
        source = kn.source_phrase(source)
        if source:
            row["basis"] = row["basis"].replace(f"{kn.learned_on(prec)},", f"{kn.learned_on(prec)}{source},", 1)
        rows.append(row)
    kn._warn_extrapolation(far, prec)
    return pd.DataFrame(rows)


def _on_cluster(r: RankWork, degrees: dict, cluster, lk: dict, net=None) -> tuple[RankWork, dict]:
    """``r`` and its links ``lk`` on ``cluster`` (``net``: the default network they were resolved with, if any): under
    DeepEP, the nodes its ep group spans, counted with the node size the links were resolved with, and the ep group's
    link DeepEP's RDMA (its label); a ``StrategyError`` where DeepEP cannot run so — no NVLink in the node, across
    nodes without the links said per level or without InfiniBand, or an ep group its nodes split unevenly. Else as
    they are."""
    if r.moe_dispatcher != "deepep":
        return r, lk
    g = net.gpus_per_node if net is not None else cluster.gpus_per_node
    levels = net.links if net is not None else cluster.interconnect
    nvl = lk.get("ep_nvl", lk["ep"])
    what = f"strategy={r.strategy!r}: moe_dispatcher='deepep'"
    crosses = crosses_nodes(degrees, g)["ep"]
    if crosses and ("ep_rdma" not in lk or not isinstance(levels, dict)):
        raise StrategyError(f"{what} across nodes sends each token over its GPU's NIC and forwards it over NVLink: say "
                            "the links per level, interconnect={'intra': 'nvlink', 'inter': 'infiniband-ndr'}, or "
                            "leave interconnect=None for the GPU's reference network.")
    if not str(nvl.name).startswith("nvlink") or nvl.domain_gpus:
        raise StrategyError(f"{what} forwards the tokens over NVLink inside a node; the node's link here is "
                            f"{nvl.name}. Use moe_dispatcher='alltoall'.")
    if not crosses:
        return (r if r.ep_nodes == 1 else dataclasses.replace(r, ep_nodes=1)), lk
    inter = levels.get("inter")
    name = str(getattr(inter, "name", inter))
    if not name.startswith("infiniband"):
        raise StrategyError(f"{what} runs its RDMA over InfiniBand (the rates it publishes: ConnectX-7 400 Gb/s); the "
                            f"nodes here are joined by {name}. Use moe_dispatcher='alltoall'.")
    on_node = ranks_per_node(degrees, g)["ep"]
    if r.ep % on_node:
        raise StrategyError(f"{what}: its {r.ep} expert-parallel ranks lie {on_node} to a node of {g}, unevenly over "
                            "the nodes, which perfmodel's DeepEP model does not lay out. Use an ep that the node's "
                            "ranks divide, or moe_dispatcher='alltoall'.")
    return dataclasses.replace(r, ep_nodes=r.ep // on_node), dict(lk, ep=lk["ep_rdma"])


def _fp8_gather_basis(r: RankWork) -> str:
    """The FP8 all-gather, for ``basis``: how many of the rank's parameters FSDP gathers in FP8."""
    if not r.fp8_gathered:
        return ""
    share = r.fp8_gathered / r.rank_params if r.rank_params else 0.0
    how = ("kept in FP8 and all-gathered in FP8 by the distributed optimizer, as Megatron's --fp8-param-gather does "
           "(their cast and transpose still counted, once per step: an upper bound)"
           if r.framework == "megatron" else "all-gathered in FP8 as torchtitan's enable_fsdp_float8_all_gather does")
    return f"; the FP8 linears' weights, {share:.0%} of the parameters, {how}, the rest in BF16"


def _runs(counts) -> str:
    """``7, 8 x 14, 7``: a sequence of counts with its runs of equal values folded."""
    import itertools

    runs = [(k, len(list(g))) for k, g in itertools.groupby(int(c) for c in counts)]
    return ", ".join(f"{k}" if n == 1 else f"{k} x {n}" for k, n in runs)


def _dispatch_basis(r: RankWork) -> str:
    """How a MoE layer's tokens are dispatched and combined, for ``basis``: NCCL all-to-alls, or DeepEP's kernels with
    the destinations they send each token to (:func:`_deepep_spread`)."""
    if r.moe_dispatcher != "deepep":
        return "an all-to-all dispatching its routed tokens and one combining the experts' outputs in each pass"
    nodes, ranks = _deepep_spread(r)
    E, k, G, M = r.routing
    routing = f"{k} of {E} experts per token" + (f", from {M} of {G} groups (group-limited routing)" if G else
                                                  ", from all of them")
    if r.ep_nodes <= 1:
        return (f"DeepEP's dispatch and combine (Megatron-Core's flex dispatcher) in each pass, on one node: each token "
                f"sent once to each of the {ranks:.3g} ranks its experts are on, on average ({routing}, evenly drawn)")
    return (f"DeepEP's dispatch and combine (Megatron-Core's flex dispatcher) in each pass, over {r.ep_nodes} nodes: "
            f"each token sent once over RDMA to each of the {nodes:.3g} nodes its experts are on, on average "
            f"({routing}, evenly drawn; its own node counted, as DeepEP's logical rate counts it) at "
            f"{deepep_rdma_share():.3g} of the NIC's line rate (DeepEP's published H800 rates, EP 16-64), and forwarded "
            f"over NVLink to its {ranks:.3g} ranks, the slower of the two (the SMs DeepEP's kernels occupy are not taken "
            "from the compute, its buffers not counted in memory)")


def _expert_reduce_basis(r: RankWork) -> str:
    """Where an expert's gradients are reduced, for ``basis``: over the ``tp·dp·cp/(ep·etp)`` ranks that share it (its
    shard, with split experts), ``ep·etp`` ranks apart, or by none where no two ranks share one."""
    what = "expert shard" if r.etp > 1 else "expert"
    shared = r.dp_ranks * r.tp // (r.ep * r.etp)
    if shared <= 1:
        return f"no two ranks share an {what}, whose gradients are reduced by none"
    return (f"the experts' gradients reduced over the {shared} ranks that share each {what}, {r.ep * r.etp} ranks "
            "apart, on their own ring")


def _execution_basis(r: RankWork) -> str:
    """How the layout runs, for ``basis``: Megatron-Core's execution, sequence parallelism, interleaved chunks, K and
    V repeated for context parallelism."""
    parts = []
    if r.framework == "megatron":
        parts.append("Megatron-Core execution" + (" with the distributed optimizer (optimizer states sharded over "
                                                    f"{r.dp_ranks} ranks, gradients reduce-scattered and parameters "
                                                    "all-gathered in 40M-element buckets"
                                                    + (" under compute)" if r.overlap_grad_reduce else ")")
                                                    if r.distributed_optimizer and r.dp_ranks > 1 else ""))
    if r.shard_gradients and (r.pipelined or not r.fsdp):
        parts.append(f"gradients sharded over {r.dp_ranks} ranks, reduce-scattered after every micro-batch (ZeRO-2)")
    if r.sequence_parallel:
        copies = (r.work["op"] == SP_CHUNK_CAT_OP).any()
        parts.append(f"sequence parallel over the {r.tp} tensor-parallel ranks" + (
            " (the sequence in dim 1: each all-gather and reduce-scatter of PyTorch's functional collectives copies the "
            "whole tensor once" + (", those asynchronous TP does not fuse" if r.async_tp else "") + ")" if copies else ""))
    if r.tp_reduce.any():
        parts.append("asynchronous TP's fused all-gathers copying the rank's shard into symmetric memory first and its "
                     "fused reduce-scatters summing the partials last, on the compute stream (the sums at "
                     f"{ASYNC_TP_REDUCE_BANDWIDTH_SHARE:g} of the memory bandwidth, pytorch/pytorch#191803)")
    if r.overlap_tp_backward and r.tp > 1 and not r.async_tp:
        parts.append("the column-parallel linears' backward collectives under their own GEMMs (" +
                     ("the input gradient's reduce-scatter under the weight-gradient GEMM, the input gathered again "
                      "under the input-gradient GEMM)" if r.sequence_parallel else
                      "the input gradient's all-reduce under the weight-gradient GEMM)"))
    if r.virtual_stages > 1 and r.pipelined:
        parts.append(f"interleaved 1F1B with {r.virtual_stages} model chunks per pipeline rank")
        if r.chunk_layers is not None and len(set(r.chunk_layers.tolist())) > 1:
            parts.append(f"transformer layers per model chunk {_runs(r.chunk_layers)}" + (
                " (Megatron-Core runs chunks its layers do not divide evenly into only as a stated "
                "--pipeline-model-parallel-layout)" if r.framework == "megatron" and not r.chunks_said else ""))
    if r.pipelined and r.stage_layers is not None and len(set(r.stage_layers.tolist())) > 1:
        parts.append(f"transformer layers per pipeline rank {_runs(r.stage_layers)} (the slowest rank sets the pace)")
    if r.cp > 1 and r.context_parallel_kv == "repeated":
        parts.append("K and V exchanged over the context-parallel ranks at every query head (repeated before the "
                     "attention kernel)")
    if r.cp > 1 and r.framework == "pytorch":
        parts.append(f"PyTorch's ring attention over the {r.cp} context-parallel ranks with its FP32 merges and "
                     "gradient accumulations (perfmodel.step.trace.ring_attention_work)")
    stage_ranks = r.dp_ranks * r.tp // r.etp  # the ranks ep is carved from
    if r.ep > 1:
        whose = ("data-parallel ranks" if r.tp == 1 else "tensor-, context- and data-parallel ranks" if r.etp == 1
                 else "context- and data-parallel ranks")
        parts.append(f"expert parallel over {r.ep} of the {stage_ranks} {whose} (each holds {1 / r.ep:.3g} of "
                     f"the routed experts and computes the tokens all {r.ep} route to them, evenly routed; per MoE layer "
                     "and micro-batch " + _dispatch_basis(r) + ", " + ("under Megatron-Core's EP overlap: beside another micro-batch's opposite pass, "
                                         "exposed where they outlast its compute of a layer, the unpaired passes' in "
                                         "full" if r.overlap_moe_dispatch else "exposed (no dispatch overlap)")
                     + ", their bytes at the hidden size and the training precision; " + _expert_reduce_basis(r) + ")")
    if r.ep > 1 and r.expert_load_imbalance != 1.0:
        parts.append(f"the busiest expert-parallel rank receiving {r.expert_load_imbalance:g} times the mean routed "
                     "tokens (its grouped GEMMs, expert kernels and all-to-alls that much larger; every rank waits for it)")
    if r.tp > 1 and r.expert_params and r.etp > 1:
        parts.append(f"each routed expert split over the {r.tp} tensor-parallel ranks as a dense MLP is (Megatron-Core's "
                     f"expert tensor parallelism {r.etp}): the router on the rank's sequence shard, in each MoE layer and "
                     "pass the dispatched tokens all-gathered over the tensor-parallel ranks and the experts' outputs "
                     "reduce-scattered back, exposed (inside the token dispatcher), the experts' kernels on the hidden "
                     f"size over the gathered tokens ({r.tp_blocks:.3g} other tensor-parallel "
                     f"block{'' if r.tp_blocks == 1 else 's'} per layer)")
    elif r.tp > 1 and r.expert_params:
        parts.append(f"each routed expert whole on its rank beside tensor parallelism over {r.tp} (Megatron-Core's "
                     "expert tensor parallelism 1): the MoE blocks (router, experts) on the rank's sequence shard, no "
                     f"tensor-parallel collectives around them ({r.tp_blocks:.3g} tensor-parallel "
                     f"block{'' if r.tp_blocks == 1 else 's'} per layer)")
    return "; " + ", ".join(parts) if parts else ""


def _layout_row(r: RankWork, s: LayoutStep, spec, lk: dict, prec: str, optimizer, q: float, interval: str,
                by_group: bool) -> dict:
    from perfmodel.step import kernels as kn
    work_s = s.step - s.exposed
    label = _links_label(lk, list(r.used_groups))
    if isinstance(label, Interconnect):
        link_name = label.name
        how = f"{label.name}, {label.bandwidth_gb_per_s:g} GB/s per direction x {label.efficiency:g}"
    else:
        link_name = how = label
    row = dict(model=r.name, gpu=spec.gpu, batch_size=r.batch_size, precision=prec, optimizer=optimizer or "none",
               step_time_s=s.step, lower_s=work_s * np.exp(-q) + s.exposed, upper_s=work_s * np.exp(q) + s.exposed,
               forward_s=s.forward, backward_s=s.backward, optimizer_s=s.optimizer, n_kernels=len(r.work),
               flops=float(r.work.loc[~r.is_opt, "flops"].sum()) * r.micro_batches / (r.pp if r.pipelined else 1), n_gpus=r.n_gpus, strategy=r.strategy,
               micro_batches=r.micro_batches, interconnect=link_name, compute_s=s.compute, comm_s=s.exposed,
               comm_total_s=s.comm_total, bubble_s=s.bubble, overlap_slowdown_s=s.overlap_slowdown,
               comm_tp_forward_s=s.tp_forward, comm_cp_forward_s=s.cp_forward, comm_ep_forward_s=s.ep_forward,
               forward_copy_out_s=s.copy_out_forward,
               forward_tp_reduce_s=s.tp_reduce_forward,
               pipeline_schedule=("interleaved-1f1b" if r.virtual_stages > 1 else "1f1b"), async_tp=r.async_tp,
               framework=r.framework, virtual_stages=r.virtual_stages, distributed_optimizer=r.distributed_optimizer,
               sequence_parallel=r.sequence_parallel,
               basis=f"{r.strategy} over {r.n_gpus} GPUs ({how}){_execution_basis(r)}: per-GPU operators, each roofline x efficiency "
                     f"{kn.learned_on(prec)}, plus alpha-beta communication (gradients reduced in FP32{_fp8_gather_basis(r)}), the compute "
                     f"under hidden communication slowed by {OVERLAP_SLOWDOWN:g} of its time (a published mean); "
                     f"interval on the compute only: {interval}")
    if by_group:
        row.update(comm_by_group_s=dict(s.comm_exposed), comm_total_by_group_s=dict(s.comm_total_by_group))
    return row

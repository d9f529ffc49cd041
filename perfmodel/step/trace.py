"""The trace of a workload: what one training step of a model launches, from shapes alone.

The bottom layer of the step-time model (:mod:`perfmodel.step.step_time` lists the layers). A workload is a
model (zoo id, module or Hugging Face config), one sample's input shape, the batch, the precision, the optimizer and
the fusions asked for. This module traces it (:func:`step_ops`: the aten operators of forward, backward and optimizer
step, :func:`perfmodel.features.extract` with ``per_op=True``, memoised per module), describes each kernel by its
operator class and shape (:func:`work_from_ops`), applies the fusions of ``torch.compile`` (:func:`compiled_work`) and
of FP8 training (:func:`fp8_work`), and reads the model's layout: its transformer layers and what tensor parallelism
splits (:func:`model_layout`), which operators activation checkpointing recomputes (:func:`recompute_mask`), what a
context-parallel rank computes (:func:`context_parallel_work`). Nothing here knows a GPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import functools
import re
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pandas as pd

# the step said once, and the checks of its arguments (at the bottom, so that a Workload checks its fields when made),
# re-exported with its trace
from perfmodel._workload import (CHECKPOINTING_MODES, FP8_RECIPES, OPTIMIZERS, PRECISION_DTYPES, Workload, accepts_workload,
                                 check_batch_size, fp8_recipe_of,
                                 check_flag, check_input_shape, check_optimizer, check_precision, check_step_args,
                                 checkpointing_mode, STACKS, stack_of, resolve_stack, compile_scope_of)

__all__ = ["Workload", "accepts_workload", "STACKS", "stack_of", "resolve_stack", "te_ops", "PRECISION_DTYPES", "FP8_CAST_BYTES_PER_ELEMENT", "FP8_CAST_COMPILED_BYTES_PER_ELEMENT", "FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT", "FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT", "FP8_WEIGHT_CAST_OP", "FP8_WEIGHT_TRANSPOSE_OP", "TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT", "TE_CURRENT_CAST_BYTES_PER_ELEMENT", "TE_NVFP4_CAST_BYTES_PER_ELEMENT", "TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT", "TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT", "work_from_ops", "experts_note", "is_routed_expert", "is_shared_expert", "moe_block_param", "expert_shard_layout", "expert_param_names", "expert_parallel_layout", "expert_parallel_work", "expert_weight_casts", "TE_FP8_WEIGHT_CAST_OP", "TE_WEIGHT_CAST_OPS", "GROUPED_GEMM_OP", "model_input", "OPTIMIZERS", "FUSED_ADAM_PASSES", "check_step_args", "check_optimizer", "check_precision", "check_batch_size", "check_flag", "check_input_shape", "ATTN_IMPLEMENTATIONS", "attention_implementation", "attention_kernel", "module_fingerprint", "module_memo", "step_ops", "step_work", "fused_dropout", "compiled_work", "fp8_work", "rowwise_overhead_rows", "rowwise_calibration", "rowwise_uncalibrated", "keep_gathered_whole", "ROWWISE_SHARED_OP", "ROWWISE_GATHERED_OP", "OUT_PROJECTION", "fp8_linear_weights", "rank_share", "te_fp8_work", "te_tp_casts", "MASTER_GRAD_CAST_OP", "MASTER_PARAM_COPY_OP", "TE_CAST_OP", "TE_TRANSPOSE_OP", "TE_SEQUENCE_CAST_OP", "TE_GATHERED_CAST_OP", "TE_AMAX_OP", "TE_SEQUENCE_AMAX_OP", "TE_AMAX_BYTES_PER_ELEMENT", "TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT", "TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT", "TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT", "TE_MXFP8_CAST_BYTES_PER_ELEMENT", "MXFP8_BYTES_PER_ELEMENT", "CHECKPOINTING_MODES", "checkpointing_mode", "checkpointed_layers", "check_checkpointable", "recompute_mask", "selective_recompute_mask", "core_attention_mask", "ModelLayout", "model_and_layout", "model_layout", "op_layer", "context_parallel_work", "RING_ATTENTION_OP", "ring_attention_work", "compile_regions", "loss_rows", "gathered_fp8_casts"]


#: bytes an FP8 linear's input casts move per element of each operand (tensorwise scaling, torchao ``Float8Linear``):
#: the BF16 tensor read for its absolute maximum (2), read again and written as FP8 (2 + 1).
FP8_CAST_BYTES_PER_ELEMENT = 5


#: the same under ``torch.compile``, per element of each **activation** operand: Inductor fuses the absolute-maximum
#: reduction into the kernel that produced the tensor, and the cast reads the BF16 tensor once (2) and writes its FP8
#: copy and the transposed FP8 copy the weight-gradient GEMM reads (1 + 1). Weights: once per micro-batch, not per GEMM
#: (:data:`FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT`).
FP8_CAST_COMPILED_BYTES_PER_ELEMENT = 4


#: bytes torchao's compiled tensorwise ``Float8Linear`` moves per weight element and micro-batch in its forward pass
#: when the weight is not gathered in FP8 (one GPU, data parallel, tensor parallel alone, or FSDP with
#: ``fp8_param_gather=False``): ``matmul_with_hp_or_float8_args`` casts the BF16 weight dynamically, its absolute
#: maximum read (2) and the weight read again and written as FP8 (2 + 1); a weight has no producer for Inductor to fuse
#: the maximum into. Under FSDP's FP8 all-gather the cast runs on the rank's shard before the gather
#: (:func:`perfmodel.step.parallel.rank_work` scales these rows to it).
FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT = 5
#: bytes per FP8 weight element and micro-batch of the backward pass's copy of it: the input-gradient GEMM reads the
#: weight as its second operand, which ``torch._scaled_mm`` needs column-major, and the FP8 weight is row-major there
#: (torchao's ``preprocess_addmm``: ``t().contiguous().t()``), one byte read and one written, gathered in FP8 or not.
FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT = 2
#: op of the compiled tensorwise weight cast (:data:`FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT`)
FP8_WEIGHT_CAST_OP = "float8_weight_cast"
#: op of the backward pass's column-major copy of an FP8 weight (:data:`FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT`)
FP8_WEIGHT_TRANSPOSE_OP = "float8_weight_transpose"


#: bytes Transformer Engine's FP8 weight cast moves per weight element (delayed scaling, ``stack="te"``): the BF16
#: weight read (2), its FP8 copy and the transposed FP8 copy the data-gradient GEMM reads written (1 + 1). The casts of
#: activations and gradients are kernels of their own but where a norm writes FP8 (:func:`_te_activation_casts`).
TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT = 4
#: the kernel that casts one FP8 weight with its transpose under Transformer Engine (:func:`te_fp8_work`), once per
#: micro-batch in the trace (once per step under Megatron-Core's weight cache); NVFP4's is ``te_nvfp4_weight_cast``
TE_FP8_WEIGHT_CAST_OP = "te_fp8_weight_cast"
#: the weight casts of Transformer Engine's low-precision recipes
TE_WEIGHT_CAST_OPS = (TE_FP8_WEIGHT_CAST_OP, "te_nvfp4_weight_cast")


#: bytes Transformer Engine's delayed-scaling cast of a BF16 activation or gradient moves per element (the kernel
#: ``quantize`` runs when a linear's input or output gradient is not already FP8, with its row-wise and column-wise
#: usages: on Hopper the FP8 tensor and its transpose): the BF16 tensor read (2), the FP8 copy and the transposed FP8
#: copy written (1 + 1) — ``input_quantizer(inputmat)`` in ``_Linear.forward`` (transformer_engine/pytorch/module/
#: linear.py) and ``grad_output_preprocess``'s fused cast-transpose (module/base.py) at TE d0067d0.
TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT = 4


#: bytes the transpose of an FP8 tensor moves per element (read 1, write 1): the column-wise copy of a norm's FP8
#: output, which TE's fused norm kernel writes row-wise only (``nvte_transpose`` after the norm in
#: transformer_engine/common/normalization/rmsnorm/rmsnorm_api.cpp and layernorm/ln_api.cpp; under sequence
#: parallelism, of the gathered tensor in the backward pass: ``update_usage(columnwise_usage=True)`` in
#: module/layernorm_linear.py), and of a gathered output gradient.
TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT = 2


#: bytes a delayed-scaling cast moves per element when only the row-wise FP8 copy is written (read 2, write 1): the
#: row-parallel output gradient cast on its sequence shard before TE's FP8 all-gather (which gathers row-wise data
#: only: ``_all_gather_fp8`` in transformer_engine/pytorch/distributed.py).
TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT = 3


#: bytes of one element of an MXFP8 tensor: its E4M3 byte and its share of the E8M0 scale of each block of 32 elements
#: (TE's ``MXFP8BlockScaling``; the OCP Microscaling Formats specification v1.0).
MXFP8_BYTES_PER_ELEMENT = 1 + 1 / 32


#: bytes Transformer Engine's MXFP8 cast moves per element: the BF16 tensor read (2) and its row-wise and column-wise
#: MXFP8 copies written (an E4M3 byte and an E8M0 scale per 32 elements each). MXFP8's norms are not fused with the
#: cast unless ``NVTE_NORM_FWD_USE_CUDNN`` is set (``Impl::UNFUSED`` in transformer_engine/pytorch/csrc/extensions/
#: normalization.cpp): their output is cast by this kernel too.
TE_MXFP8_CAST_BYTES_PER_ELEMENT = 2 + 2 * MXFP8_BYTES_PER_ELEMENT


#: bytes per element of current scaling's absolute-maximum kernel (``nvte_compute_amax``, before the cast: the scale of
#: a tensor is its own maximum): the BF16 tensor read (2).
TE_AMAX_BYTES_PER_ELEMENT = 2


#: bytes of one element of a tensor under Transformer Engine's FP8 block scaling (``Float8BlockScaling``): its E4M3 byte
#: and its share of the FP32 scale of each 1x128 block (activations and gradients; a weight's 128x128 blocks add less).
FP8_BLOCK_BYTES_PER_ELEMENT = 1 + 4 / 128
#: the same of a weight, whose blocks are 128x128
FP8_BLOCK_WEIGHT_BYTES_PER_ELEMENT = 1 + 4 / (128 * 128)


#: bytes Transformer Engine's FP8 block-scaled cast moves per element of an activation or gradient: the BF16 tensor read
#: (2) and its row-wise and column-wise copies written, each quantized from it with its own 1x128 scales in one kernel
#: ("during the quantization both versions are computed from the high precision input", ``Float8BlockScaling`` in
#: transformer_engine/common/recipe/__init__.py at d0067d0). As under MXFP8, the norms' outputs are cast by it too.
TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT = 2 + 2 * FP8_BLOCK_BYTES_PER_ELEMENT


#: the ops of Transformer Engine's activation and gradient casts under delayed scaling, current scaling and MXFP8
#: (:func:`te_fp8_work`), each sized for a tensor-parallel rank by :func:`te_tp_casts`: a cast of a tensor TP splits
#: (``1/tp``), a transpose of a tensor every rank holds whole, a cast of a tensor on the hidden state (the sequence
#: shard under sequence parallelism, whole without it), a cast of a tensor on the hidden state before TE's FP8
#: all-gather (with sequence parallelism cast row-wise on the shard and the gathered tensor transposed whole; whole
#: without), and current scaling's absolute-maximum kernels of a split tensor and of a tensor on the hidden state.
TE_CAST_OP, TE_TRANSPOSE_OP, TE_SEQUENCE_CAST_OP, TE_GATHERED_CAST_OP, TE_AMAX_OP, TE_SEQUENCE_AMAX_OP = (
    "te_fp8_cast", "te_fp8_transpose", "te_fp8_sequence_cast", "te_fp8_gathered_cast", "te_fp8_amax",
    "te_fp8_sequence_amax")


#: bytes Transformer Engine's current per-tensor scaling moves per element of an activation or gradient it casts by
#: kernels of its own: read for its absolute maximum (:data:`TE_AMAX_BYTES_PER_ELEMENT`), then cast with its transpose
#: (:data:`TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT`); a norm's output, whose maximum the norm takes, moves the cast's
#: bytes only.
TE_CURRENT_CAST_BYTES_PER_ELEMENT = TE_AMAX_BYTES_PER_ELEMENT + TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT


#: bytes of one element of an NVFP4 tensor: its 4-bit E2M1 value (0.5) and its share of the E4M3 scale of each block
#: of 16 elements (1/16) (TE's ``NVFP4BlockScaling``; NVIDIA, "Pretraining Large Language Models with NVFP4", 2025).
NVFP4_BYTES_PER_ELEMENT = 0.5 + 1 / 16


#: bytes Transformer Engine's NVFP4 recipe moves per element of each activation operand it casts: the BF16 tensor read
#: for its per-tensor absolute maximum (2: NVFP4's second-level FP32 scale is the tensor's own, as current scaling's),
#: read again (2) and written in NVFP4 row-wise and column-wise (the copy the weight-gradient GEMM reads, the random
#: Hadamard transform applied in the same kernel): 2 x :data:`NVFP4_BYTES_PER_ELEMENT`; the maximum by a kernel of its
#: own, the cast (:data:`TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT`) by another, but where the norm takes the maximum.
TE_NVFP4_CAST_BYTES_PER_ELEMENT = 2 + 2 + 2 * NVFP4_BYTES_PER_ELEMENT

#: bytes the NVFP4 cast kernel itself moves per element: the BF16 tensor read (2), its row-wise and column-wise NVFP4
#: copies written.
TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT = 2 + 2 * NVFP4_BYTES_PER_ELEMENT


#: bytes per element of the activation and gradient cast of each block-scaled Transformer Engine recipe (the row-wise
#: and column-wise copies, each quantized from the BF16 tensor)
_TE_BLOCK_CAST_BYTES = {"mxfp8": TE_MXFP8_CAST_BYTES_PER_ELEMENT, "nvfp4": TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT,
                        "blockwise": TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT}


#: bytes Transformer Engine's NVFP4 weight cast moves per weight element: the BF16 weight read (2) and its 16x16-block
#: FP4 copy and the transposed copy written, each half a byte an element and one E4M3 scale per 256 elements.
TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT = 2 + 2 * (0.5 + 1 / 256)


_FREE = {"view", "factory"}


_SHAPE = re.compile(r"[0-9]+(x[0-9]+)*")


def _dims(text) -> tuple[tuple[int, ...], ...]:
    """The shapes of a ``"8x3x32x32;16x3x3x3"`` text (``()`` for a part that is not a shape)."""
    return _parsed_dims(str(text))


@functools.lru_cache(maxsize=1 << 16)
def _parsed_dims(text: str) -> tuple[tuple[int, ...], ...]:  # a step repeats its shapes layer after layer
    return tuple(tuple(int(v) for v in part.split("x")) if _SHAPE.fullmatch(part) else () for part in text.split(";"))


def work_from_ops(ops: pd.DataFrame) -> pd.DataFrame:
    """Operator-model rows (:data:`perfmodel.step.op_latency.WORK_COLUMNS`) of the per-op rows of
    :func:`perfmodel.features.extract` (``per_op=True``).

    * ``aten.mm`` / ``addmm`` / ``bmm`` → ``matmul`` with their ``b, m, n, k`` (``n`` the reduction dimension);
      other matmul, attention and convolution kernels → ``matmul`` / ``conv`` with the counted FLOPs and the implicit
      GEMM's output rows and columns; a fused attention kernel (FlashAttention through ``scaled_dot_product_attention``)
      is the GEMM chain it runs on chip — rows ``batch × heads × queries``, columns the head dimension, its bytes the
      O(s·d) inputs and outputs it moves (the score matrix never leaves the chip), and with ``attributes`` ``"causal"``
      half the counted FLOPs (the blocks above the diagonal are skipped);
    * layer norms (and their backward) → ``layernorm``; softmax kinds → ``softmax``;
    * every other operator that moves data (elementwise, reductions, embeddings, copies, losses) → ``elementwise`` with
      its counted bytes, as the microbenchmarked FP32 op that moves them: its output elements when it moves 8-12 bytes
      per output element (one or two inputs read, one output written), otherwise ``bytes / 12`` elements (a reduction
      reads far more than it writes; its cost is its traffic);
    * views and allocations (``op_class`` ``view`` / ``factory``) launch no kernel and are dropped.

    Returns the work frame plus ``op`` and ``phase`` of each kept row (and ``module`` when the per-op rows have it).
    """
    need = {"op", "op_class", "phase", "flops", "bytes_read", "bytes_written", "input_shapes", "output_shapes"}
    missing = sorted(need - set(ops.columns))
    if missing:
        raise ValueError(f"work_from_ops needs the per-op rows of perfmodel.features.extract(per_op=True); missing {missing}.")
    d = ops[~ops["op_class"].isin(_FREE)]
    moved = d["bytes_read"].to_numpy(float) + d["bytes_written"].to_numpy(float)
    d = d[(moved > 0) | (d["flops"].to_numpy(float) > 0)]
    rows = []
    has_module = "module" in d.columns
    for r in d.itertuples(index=False):
        mod = (r.module,) if has_module else ()
        nbytes = max(float(r.bytes_read) + float(r.bytes_written), 1.0)
        flops = float(r.flops)
        ins, outs = _dims(r.input_shapes), _dims(r.output_shapes)
        out = outs[0] if outs else ()
        numel = float(np.prod(out)) if out else max(nbytes / 4, 1.0)
        last = float(out[-1]) if out else 1.0
        lines = max(numel / last, 1.0)
        if r.op in ("aten.mm", "aten.addmm", "aten.bmm") and len(ins) >= 2:
            a, b_ = (ins[1], ins[2]) if r.op == "aten.addmm" else (ins[0], ins[1])
            if r.op == "aten.bmm" and len(a) == 3 and len(b_) == 3:
                bb, m, n, k = a[0], a[1], a[2], b_[2]
            elif len(a) == 2 and len(b_) == 2:
                bb, m, n, k = 1, a[0], a[1], b_[1]
            else:
                bb = m = n = k = 0
            if min(bb, m, n, k) > 0:
                rows.append(("matmul", 2.0 * bb * m * n * k, nbytes, bb * np.ceil(m / 128) * np.ceil(k / 128), m, n, k, bb, r.op, r.phase, *mod))
                continue
        if r.op == "aten._grouped_mm" and flops > 0 and len(ins) >= 2:
            grouped = _grouped_gemm(ins[0], ins[1], out, ins[2] if len(ins) > 2 else ())
            if grouped is not None:
                bb, m, n, k = grouped
                rows.append(("matmul", flops, nbytes, bb * np.ceil(m / 128) * np.ceil(k / 128), m, n, k, bb, r.op, r.phase, *mod))
                continue
        if r.op_class == "conv" and flops > 0 and len(out) >= 3:
            # the implicit GEMM the microbenchmarks describe (op_latency.op_work): (batch x output pixels) rows by the
            # output channels, reducing over in-channels x kernel taps; NCHW output (b, c, *spatial)
            gk = float(out[1])
            gm = max(numel / gk, 1.0)
            red = max(flops / (2 * gm * gk), 1.0)
            rows.append(("conv", flops, nbytes, np.ceil(gm / 128) * np.ceil(gk / 128), gm, red, gk, 1.0, r.op, r.phase, *mod))
        elif r.op_class in ("matmul", "conv", "attention") and flops > 0:
            cls = "conv" if r.op_class == "conv" else "matmul"
            if r.op_class == "attention" and "causal" in str(getattr(r, "attributes", "") or ""):
                flops /= 2  # a causal fused kernel skips the score blocks above the diagonal
            red = max(flops / (2 * lines * last), 1.0)
            rows.append((cls, flops, nbytes, np.ceil(lines / 128) * np.ceil(last / 128), lines, red, last, 1.0, r.op, r.phase, *mod))
        elif r.op_class == "norm":
            rows.append(("layernorm", 8 * numel, nbytes, lines, lines, 1.0, last, 1.0, r.op, r.phase, *mod))
        elif r.op_class == "softmax":
            rows.append(("softmax", 5 * numel, nbytes, lines, lines, 1.0, last, 1.0, r.op, r.phase, *mod))
        else:
            # described as the microbenchmarked op that moves the same bytes: an FP32 elementwise op reads one or two
            # tensors and writes one (8-12 bytes per output element); a reduction, a pad, a gather or another dtype
            # moves a different number, and is mapped to the binary op over bytes / 12 elements
            rows.append(("elementwise", *_elementwise_fields(nbytes, numel, last), r.op, r.phase, *mod))
    from perfmodel.step.op_latency import WORK_COLUMNS

    out = pd.DataFrame(rows, columns=[*WORK_COLUMNS, "op", "phase", *(["module"] if has_module else [])])
    if "dataflow" in d.columns and "index" in d.columns:
        # kept for compiled_work, which computes what a fused chain moves from them (one work row per row of d)
        out["index"] = d["index"].to_numpy()
        out["dataflow"] = d["dataflow"].to_numpy()
    return out


#: the operator of a mixture-of-experts layer's experts: one grouped GEMM over all of them (:func:`work_from_ops`
#: times it as equal GEMMs, one per expert)
GROUPED_GEMM_OP = "aten._grouped_mm"


def _grouped_gemm(a, b, out, offs) -> tuple | None:
    """``(groups, m, n, k)`` of a mixture-of-experts grouped GEMM (``aten._grouped_mm``) as ``groups`` equal GEMMs of
    ``m × n`` by ``n × k`` (``n`` the reduction): the tokens routed evenly over the experts, the balance an
    auxiliary loss trains towards (the step's real split, and the slower kernels of a skewed one, are not known before
    the run). None when the shapes are not one of the four forms."""
    g = float(offs[0]) if len(offs) == 1 else float(b[0]) if len(b) == 3 else float(a[0]) if len(a) == 3 else 0.0
    if g < 1:
        return None
    if len(a) == 2 and len(b) == 3:  # the experts' forward (and input gradients): tokens cut into groups
        return g, max(a[0] / g, 1.0), float(a[1]), float(b[2])
    if len(a) == 2 and len(b) == 2 and len(out) == 3:  # the weight gradients: the token (reduction) range cut
        return g, float(a[0]), max(a[1] / g, 1.0), float(b[1])
    if len(a) == 3 and len(b) == 2:  # the columns cut
        return g, float(a[1]), float(a[2]), max(b[1] / g, 1.0)
    if len(a) == 3 and len(b) == 3:
        return g, float(a[1]), float(a[2]), float(b[2])
    return None


def experts_note(work: pd.DataFrame, ep: int = 1) -> str:
    """For ``basis``: how a mixture of experts' grouped GEMMs were timed (:func:`_grouped_gemm`; on one rank of an
    expert-parallel group of ``ep``, :func:`expert_parallel_work`), or ``""`` when the work has none."""
    if "op" not in work.columns:
        return ""
    grouped = work[work["op"] == GROUPED_GEMM_OP]
    if grouped.empty:
        return ""
    experts = int(grouped["dim_b"].max())
    whose = "the routed tokens" if ep <= 1 else f"the tokens the {ep} expert-parallel ranks route to them"
    held = " the rank holds" if ep > 1 else ""
    fp8 = ""
    if "fp8" in grouped.columns and grouped["fp8"].fillna(False).astype(bool).all():
        fp8 = (", at the FP8 rate as Transformer Engine's grouped linears run them (their inputs, output gradients and "
               "weights cast by kernels of their own; the router at the training precision)")
    elif "fp8" in work.columns and work["fp8"].fillna(False).astype(bool).any():
        fp8 = ", at the training precision (torchao's Float8 converts the linears only)"
    return (f"; the experts' grouped GEMMs timed as {experts} GEMM{'s' if experts != 1 else ''}, one per expert{held}, "
            f"over an even share of {whose} (skew among a rank's experts not modelled){fp8}")


def is_routed_expert(name: str) -> bool:
    """Whether the parameter ``name`` is a routed expert's: under a module named ``experts`` (Mixtral's, Qwen-MoE's,
    DeepSeek's and gpt-oss's layers; a ``shared_experts`` module is not one)."""
    return "experts" in name.split(".")[:-1]


def in_experts_module(modules) -> np.ndarray:
    """Per module path of ``modules`` (a Series or sequence of strings), whether it is an ``experts`` module or under
    one (a mixture of experts' routed experts; ``shared_experts`` is not one)."""
    codes, names = pd.factorize(pd.Series(modules).astype(str))  # each distinct path tested once
    under = np.array(["experts" in name.split(".") for name in names], dtype=bool)
    return under[codes] if len(codes) else np.zeros(0, dtype=bool)


def expert_param_names(lay: "ModelLayout") -> set:
    """Names of a mixture of experts' routed experts' parameters (:func:`is_routed_expert`). Empty for a dense
    model."""
    return {k for k in lay.param_numel if "experts." in k and is_routed_expert(k)}  # the substring first: cheap


#: modules of a mixture-of-experts block that route the tokens: the router (``gate``, ``router``) and a shared expert's
#: gate (Qwen-MoE's ``shared_expert_gate``), each a small matrix the tensor-parallel ranks hold whole
_ROUTING_MODULES = ("gate", "router", "shared_expert_gate")


def is_shared_expert(path: str) -> bool:
    """Whether the module or parameter ``path`` is under a shared expert (a module named ``shared_expert`` or
    ``shared_experts``: Qwen-MoE's, DeepSeek's), a dense MLP beside the routed experts."""
    return any(q in ("shared_expert", "shared_experts") for q in path.split("."))


def moe_block_param(name: str) -> bool:
    """Whether the parameter ``name`` belongs to a mixture-of-experts block and stays whole under tensor parallelism
    (expert tensor parallelism 1): a routed expert's (:func:`is_routed_expert`) or a routing module's
    (:data:`_ROUTING_MODULES`, with its bias). A shared expert's parameters (:func:`is_shared_expert`) are a dense
    MLP's, split as tensor parallelism splits one."""
    parts = name.split(".")[:-1]
    return is_routed_expert(name) or bool(parts) and parts[-1] in _ROUTING_MODULES and not is_shared_expert(name)


def expert_parallel_layout(lay: "ModelLayout", ep: int, split_experts: bool = False) -> "ModelLayout":
    """The parameters one rank of an expert-parallel group of ``ep`` ranks holds: each routed expert's parameters
    (:func:`expert_param_names`) ``/ ep`` (the rank holds ``experts / ep`` of them), the rest whole; of a mixture of
    experts, the experts and the router (:func:`moe_block_param`) are not split by tensor parallelism
    (``param_split`` False: each expert whole on its rank, expert tensor parallelism 1) — but with ``split_experts``
    (expert tensor parallelism equal to ``tp``) the routed experts are (``param_split`` True), the router still not.
    A dense model's layout is returned as it is."""
    names = expert_param_names(lay)
    if ep <= 1 and not names:
        return lay
    if ep > 1 and (not names or (lay.experts and lay.experts % ep)):
        from perfmodel.step.strategy import StrategyError

        raise StrategyError(f"expert parallel over {ep} ranks needs a mixture of experts whose routed experts split over "
                            "them: " + (f"{lay.experts} experts do not divide by {ep}; use an ep that divides "
                                        f"{lay.experts}." if names else "the model has no parameters under a module "
                                        "named 'experts'; leave ep out."))
    moe = {k for k in lay.param_numel if moe_block_param(k)} - (names if split_experts else set())
    return dataclasses.replace(lay, param_numel={k: (v / ep if k in names else v) for k, v in lay.param_numel.items()},
                               param_split={k: (True if split_experts and k in names else False if k in moe else v)
                                            for k, v in lay.param_split.items()})


def expert_shard_layout(lay: "ModelLayout") -> "ModelLayout":
    """The layout a sharded optimizer (FSDP, Megatron's distributed optimizer) cuts a rank's shard from, its
    ``param_split`` saying what is divided over the tensor-parallel ranks: a mixture of experts' routed experts (each
    sharded over all the ``tp·cp·dp/ep`` ranks that hold it whole: ``1/(tp·cp·dp)`` of every expert per rank) and
    the split dense parameters, not its router (held alike by the tensor-parallel ranks, sharded over ``dp·cp``). A
    dense model's layout as it is."""
    names = expert_param_names(lay)
    if not names:
        return lay
    moe = {k for k in lay.param_numel if moe_block_param(k)}
    return dataclasses.replace(lay, param_split={k: (True if k in names else False if k in moe else v)
                                                 for k, v in lay.param_split.items()})


def expert_parallel_work(work: pd.DataFrame, ep: int, per_expert_tokens: float, tp: int = 1,
                         imbalance: float = 1.0, split: int = 1, hidden: int | None = None) -> pd.DataFrame:
    """The grouped GEMMs (``aten._grouped_mm``) of one rank of an expert-parallel group of ``ep`` ranks: it holds
    ``experts / ep`` experts and, after the dispatch, computes the tokens every rank of the group routed to them —
    under even routing ``ep`` times its own share per expert. With ``tp`` tensor-parallel ranks (each expert whole on
    its rank, the MoE block on the ``1/tp`` of the tokens sequence parallelism leaves each) a rank routes ``1/tp`` of
    its micro-batch's tokens. Each row becomes ``dim_b / ep`` GEMMs whose token dimension (``dim_m`` of the experts'
    forward and input gradients, the reduction ``dim_n`` of their weight gradients: the one equal to
    ``per_expert_tokens``, the micro-batch's routed tokens per expert) is ``ep / tp`` times as long; the FLOPs are
    ``1/tp`` of the trace's, the bytes follow the operands (the experts' weights ``/ ep``). ``imbalance``: the
    routed tokens the rank receives over the mean (:attr:`perfmodel.Parallelism.expert_load_imbalance`, with ``ep``):
    its grouped GEMMs' token dimension and the other kernels of its ``experts`` module (permutations, activation,
    casts; not its weight casts) that much larger. ``split``: the tensor-parallel ranks each expert is split over
    (expert tensor parallelism equal to ``tp``; ``tp`` is then 1, the tokens of every tensor-parallel rank gathered):
    each grouped GEMM's expert-width dimension (neither the tokens nor ``hidden``) and its FLOPs ``/ split``."""
    if ep <= 1 and tp <= 1 and split <= 1:
        return work
    f = float(imbalance) if ep > 1 else 1.0
    out = work.copy()
    rows = np.flatnonzero((out["op"].astype(str) == GROUPED_GEMM_OP).to_numpy())
    g = ep / tp
    cols = ("dim_b", "dim_m", "dim_n", "dim_k", "flops", "tiles", "bytes")
    new = {c: out[c].to_numpy(float)[rows].copy() for c in cols}  # the grouped GEMMs' fields, read once
    for j in range(len(rows)):
        b, m, n, k = (float(new[c][j]) for c in ("dim_b", "dim_m", "dim_n", "dim_k"))
        if b % ep:
            raise ValueError(f"expert parallel over {ep} ranks: a grouped GEMM of {b:g} experts does not split over them.")
        def off(x: float) -> float:  # how far a dimension is from the rank's routed tokens per expert
            return abs(np.log(max(x, 1.0) / max(per_expert_tokens, 1.0)))

        tok_m = off(m) <= off(n)
        m2, n2 = (max(m * g * f, 1.0), n) if tok_m else (m, max(n * g * f, 1.0))
        k2 = k
        if split > 1:  # the expert's width over the ranks that split it: the dimension that is neither tokens nor hidden
            wide = [c for c in (("dim_n", "dim_k") if tok_m else ("dim_m", "dim_k"))]
            pick = next((c for c in wide if float(new[c][j]) != float(hidden or -1)), wide[-1])
            if pick == "dim_k":
                k2 = max(k / split, 1.0)
            elif pick == "dim_n":
                n2 = max(n2 / split, 1.0)
            else:
                m2 = max(m2 / split, 1.0)
        b2 = b / ep
        before, after = b * (m * n + n * k + m * k), b2 * (m2 * n2 + n2 * k2 + m2 * k2)
        new["dim_b"][j], new["dim_m"][j], new["dim_n"][j], new["dim_k"][j] = b2, m2, n2, k2
        if tp > 1 or f != 1.0 or split > 1:
            new["flops"][j] = float(new["flops"][j]) * f / tp / split
        new["tiles"][j] = b2 * np.ceil(m2 / 128) * np.ceil(k2 / 128)
        new["bytes"][j] = float(new["bytes"][j]) * after / before
    for c in cols:  # written back once per column
        if len(rows):
            out.iloc[rows, out.columns.get_loc(c)] = new[c]
    if ep > 1 or split > 1:  # the experts' FP8 weight casts (te_fp8_work): a rank casts its share of the experts it holds
        held = expert_weight_casts(out)
        for c in ("flops", "bytes", "tiles", "dim_m"):
            out.loc[held, c] = np.maximum(out.loc[held, c].to_numpy(float) / (ep * split), 1.0 if c == "dim_m" else 0.0)
    if f != 1.0 and "module" in out.columns:  # the busiest rank's other expert kernels on its tokens
        busy = (in_experts_module(out["module"])
                & (out["op"].astype(str) != GROUPED_GEMM_OP).to_numpy() & ~expert_weight_casts(out)
                & (out["phase"].astype(str) != "optimizer").to_numpy())
        for c in ("flops", "bytes", "tiles", "dim_m"):
            out.loc[busy, c] = out.loc[busy, c].to_numpy(float) * f
    return out


def expert_weight_casts(work: pd.DataFrame) -> np.ndarray:
    """Rows that cast a mixture of experts' weights to FP8 or FP4 (:func:`_te_grouped_casts`): a weight cast
    (:data:`TE_WEIGHT_CAST_OPS`) of an ``experts`` module."""
    if "module" not in work.columns:
        return np.zeros(len(work), dtype=bool)
    return work["op"].astype(str).isin(TE_WEIGHT_CAST_OPS).to_numpy() & in_experts_module(work["module"])


def _elementwise_fields(nbytes: float, numel: float, last: float) -> tuple:
    """(flops, bytes, tiles, dim_m, dim_n, dim_k, dim_b) of an ``elementwise`` work row moving ``nbytes``: the
    microbenchmarked FP32 op that moves the same bytes — its ``numel`` output elements (``last`` the innermost
    dimension) when it moves 8-12 bytes per output element, otherwise ``nbytes / 12`` elements."""
    n_el = max(numel, 1.0)
    if not 8.0 <= nbytes / n_el <= 12.0:
        n_el = max(nbytes / 12.0, 1.0)
    w_last = min(last, n_el)
    return n_el, nbytes, np.ceil(n_el / 512), n_el / w_last, 1.0, w_last, 1.0


def model_input(model, input_shape, input_dtype):
    """(module, input_shape, input_dtype, input_high, name) for a zoo id, a module or a Hugging Face config."""
    import torch

    from pathlib import Path

    if input_shape is not None:
        input_shape = check_input_shape(input_shape)
    if isinstance(model, Path) or (isinstance(model, str) and model.endswith(".json")):
        from perfmodel.zoo.hf import read_config

        model = read_config(model)
    if isinstance(model, str):
        from perfmodel.zoo import INPUT_SHAPE, load_model

        m = load_model(model)
        if isinstance(m, str):
            return m, tuple(input_shape or INPUT_SHAPE), input_dtype, 2, m
        model = m
    if isinstance(model, torch.nn.Module):
        if input_shape is None:
            raise ValueError(f"input_shape is required for a torch module ({type(model).__name__}): the shape of one sample "
                             "without the batch dimension, e.g. (3, 224, 224) for images or (seq_len,) for tokens.")
        return model, tuple(input_shape), input_dtype, 2, type(model).__name__
    from perfmodel.zoo import hf

    cfg = hf.config_dict(model)  # a dict, or a PretrainedConfig with its attention kernel (to_dict() leaves it out)
    if cfg is not None:
        if input_shape is None:
            raise ValueError("input_shape is required for a Hugging Face config: (seq_len,), e.g. (1024,).")
        name = str(cfg.get("_name_or_path") or cfg.get("model_type") or "hf-model")
        if len(tuple(input_shape)) != 1 and input_dtype in (None, torch.long, torch.int, torch.int64, torch.int32):
            raise ValueError(f"input_shape {tuple(input_shape)} for the Hugging Face config {name!r}: its input is a sequence "
                             f"of token ids, so one sample's shape is one number, the sequence length (e.g. (1024,); "
                             f"--input-shape 1024); the batch is batch_size.")
        net = _built_config(json.dumps(cfg, sort_keys=True, default=str), cfg)
        vocab = int(cfg.get("vocab_size") or 2)
        return net, tuple(input_shape), input_dtype or torch.long, vocab, name
    from perfmodel._errors import ModelConfigError  # a TypeError (and a ValueError): e.g. a config.json holding [] or null

    shown = "null (None)" if model is None else f"{type(model).__name__} {repr(model)[:40]}"
    raise ModelConfigError(f"model must be a zoo id, 'package.module:Class', a torch.nn.Module or a Hugging Face config (a "
                           f"dict with 'model_type', as a config.json holds, or a PretrainedConfig); got {shown}. Pass one "
                           "of these, e.g. {'model_type': 'gpt2', 'n_layer': 12}.")


#: bytes a fused Adam step moves per parameter, in units of the parameter's size: parameter read and written, gradient
#: read, both moments read and written (apex / Transformer Engine / Megatron-LM ``FusedAdam``, torch ``fused=True``).
FUSED_ADAM_PASSES = 7


_BUILT: "OrderedDict[str, object]" = OrderedDict()


_BUILT_MAX = 8


def _built_config(key: str, model):
    """The meta-device module of a Hugging Face config, built once per distinct config (``key``: its sorted JSON; the
    last :data:`_BUILT_MAX` configs are kept).

    The attention kernel is the config's ``attn_implementation`` (:func:`attention_implementation`): ``"sdpa"``
    (transformers' default; the fused, FlashAttention-style kernel) unless the config says ``"eager"``.

    Planners predict the same model at many batches, GPU counts and strategies; building GPT-2-large from its config
    takes a second each time. The module lives on the meta device and perfmodel never changes it."""
    from perfmodel.zoo import hf

    if key in _BUILT:
        _BUILT.move_to_end(key)
    else:
        _BUILT[key] = _build_with_attention(hf, model)
        _FIXED_FINGERPRINTS[_BUILT[key]] = module_fingerprint(_BUILT[key])
        while len(_BUILT) > _BUILT_MAX:
            _BUILT.popitem(last=False)
    return _BUILT[key]


def _build_with_attention(hf, model: dict):
    """``hf.build`` at the config's attention kernel. A config that names none gets transformers' default, SDPA; a
    model transformers has no SDPA path for (SwitchTransformers, some encoder-decoders) falls back to eager attention,
    as transformers itself does when no kernel was asked for, and the module carries the note
    (:func:`attention_note`) that ``basis`` reports. A kernel the config asks for is never replaced."""
    from perfmodel._errors import ModelConfigError

    cfg = {k: v for k, v in model.items() if k not in _ATTN_KEYS}
    asked = any(model.get(k) is not None for k in _ATTN_KEYS)
    impl = attention_implementation(model)
    try:
        net = hf.build(cfg, attn_implementation=impl)
        net._perfmodel_attention = impl
        return net
    except ModelConfigError as exc:
        text = str(exc)
        if asked or "scaled_dot_product_attention" not in text:
            raise
    net = hf.build(cfg, attn_implementation="eager")
    net._perfmodel_attention = "eager"
    kind = type(getattr(net, "model", net)).__name__
    net._perfmodel_attention_note = (f"attention: eager (the config names no attention kernel and transformers has no "
                                     f"SDPA path for {kind}; transformers falls back to eager likewise)")
    return net


def attention_kernel(model) -> str | None:
    """The attention kernel the trace of a Hugging Face config ran: ``"sdpa"`` or ``"eager"`` (asked for, or the
    fallback :func:`attention_note` reports); None for a zoo id or a module (whatever its code calls)."""
    from pathlib import Path

    if not (isinstance(model, (dict, Path)) or type(model).__name__.endswith("Config")
            or (isinstance(model, str) and model.endswith(".json"))):
        return None
    return getattr(model_input(model, (1,), None)[0], "_perfmodel_attention", None)


def attention_note(model) -> str:
    """What ``basis`` says of the attention kernel of ``model``: ``""``, or the note that a Hugging Face config which
    names no kernel was traced with eager attention because transformers has no SDPA path for the model."""
    from pathlib import Path

    if not (isinstance(model, (dict, Path)) or type(model).__name__.endswith("Config")
            or (isinstance(model, str) and model.endswith(".json"))):
        return ""
    net = model_input(model, (1,), None)[0]
    return str(getattr(net, "_perfmodel_attention_note", ""))


#: config keys that name the attention kernel (``_attn_implementation`` is transformers' attribute).
_ATTN_KEYS = ("attn_implementation", "_attn_implementation")


#: attention kernels perfmodel traces: the fused scaled-dot-product kernel (FlashAttention on a GPU) or the eager
#: softmax(QKᵀ)V that materialises the score matrix.
ATTN_IMPLEMENTATIONS = ("sdpa", "eager")


def attention_implementation(cfg: dict) -> str:
    """The attention kernel a Hugging Face config asks for: its ``attn_implementation`` (or ``_attn_implementation``),
    default ``"sdpa"`` — what transformers chooses for every model that supports it, and the fused kernel every
    LLM training stack runs (FlashAttention through ``scaled_dot_product_attention``). ``"flash_attention_2"`` /
    ``"flash_attention_3"`` are the same fused kernel on a GPU and are traced as ``"sdpa"``.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Another value (e.g. ``"flex_attention"``), with the ones perfmodel traces."""
    impl = next((cfg[k] for k in _ATTN_KEYS if cfg.get(k) is not None), "sdpa")
    impl = str(impl).lower()
    if impl.startswith("flash_attention"):
        impl = "sdpa"
    if impl not in ATTN_IMPLEMENTATIONS:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"Unknown attn_implementation {impl!r} in the config. Expected one of: "
                               f"{', '.join(ATTN_IMPLEMENTATIONS)} (or flash_attention_2, traced as sdpa).")
    return impl


def module_fingerprint(net) -> tuple:
    """What identifies a module's structure for the trace memo: its class, its ``repr`` (the submodules and their
    hyper-parameters), every parameter's name, shape, dtype and ``requires_grad``, each submodule's training mode and
    a Hugging Face model's attention implementation. A module changed in place gets a new fingerprint, so a stale
    trace is never reused."""
    if isinstance(net, str):  # a zoo id: its definition is fixed
        return ("zoo", net)
    try:
        fixed = _FIXED_FINGERPRINTS.get(net)
    except TypeError:
        fixed = None
    if fixed is not None:
        return fixed
    try:  # a Hugging Face model's attention implementation, which its repr does not show
        attention = str(getattr(getattr(net, "config", None), "_attn_implementation", None))
    except Exception:  # noqa: BLE001 - a config that cannot say: no part of the fingerprint
        attention = None
    return (type(net).__qualname__, repr(net),
            tuple((n, tuple(p.shape), str(p.dtype), bool(p.requires_grad)) for n, p in net.named_parameters()),
            tuple(m.training for m in net.modules()), attention)  # train / eval mode: dropout saves its mask or not


def built_here(net) -> bool:
    """Whether ``net`` is a module perfmodel built from a config (:func:`_built_config`) and never hands out: no one
    changes it in place, so what is derived from it may be shared across calls."""
    try:
        return _FIXED_FINGERPRINTS.get(net) is not None
    except TypeError:
        return False


#: Fingerprints of the modules perfmodel builds from configs (:func:`_built_config`) and never hands out or changes:
#: computed once (a repr of GPT-2-large and its parameter list cost ~10 ms, and a planner asks hundreds of times).
_FIXED_FINGERPRINTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# what is derived from a module (traces, work rows, layouts, saved tensors): module (held weakly; a zoo id by name)
# -> {(what, fingerprint, arguments): value}
_TRACES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_ZOO_TRACES: dict = {}


def module_memo(net) -> dict:
    """The memo of what perfmodel derives from ``net`` (its per-operator traces, work rows, layout, saved tensors),
    held as long as the module lives; a zoo id's by its name; a fresh, unkept dict for a module that cannot be
    referenced weakly. Keys start with what is stored and :func:`module_fingerprint`."""
    if isinstance(net, str):
        return _ZOO_TRACES.setdefault(net, {})
    try:
        return _TRACES.setdefault(net, {})
    except TypeError:
        return {}


def step_ops(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference) -> pd.DataFrame:
    """Per-op rows of one step of ``net`` (:func:`perfmodel.features.extract`); ``"adam-fused"`` adds one kernel that
    moves :data:`FUSED_ADAM_PASSES` × the parameter bytes; a half-precision step's optimizer moves FP32 bytes, between
    the gradients' copy into the FP32 masters' and the masters' copy back (:data:`MASTER_GRAD_CAST_OP`,
    :data:`MASTER_PARAM_COPY_OP`).

    Memoised (:func:`module_memo`): the same step is traced once per process. ``"adam-fused"``'s kernels are added
    to the trace of the step without an optimizer, not traced, so the two share that trace (a layout search asks for
    both: the memory of selective checkpointing reads the forward pass, the step time the whole step)."""
    key = ("ops", module_fingerprint(net), tuple(shape), str(in_dtype), high, int(batch_size), prec, optimizer, bool(inference))
    memo = module_memo(net)
    if key not in memo:
        if optimizer == "adam-fused":
            ops = step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=None,
                           inference=inference)
            memo[key] = _optimizer_kernels(net, ops, batch_size=batch_size, prec=prec, optimizer=optimizer,
                                           inference=inference)
        else:
            memo[key] = _trace_step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec,
                                        optimizer=optimizer, inference=inference)
    return memo[key].copy()


def step_work(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference, compile: bool | str | tuple = False,
              recipe: str | None = None) -> pd.DataFrame:
    """:func:`work_from_ops` of :func:`step_ops` (index 0…n−1), memoised with the trace; at ``"fp8"`` with the FP8
    linears marked and their casts added by the FP8 ``recipe`` (:func:`fp8_work`, :func:`te_fp8_work`; None: the
    family's default); ``compile`` is the kernel family (:func:`stack_of`: a name of :data:`STACKS` or the
    ``torch.compile`` flag): ``"compile"`` fuses the memory-bound chains (:func:`compiled_work`), ``"te"`` runs
    Transformer Engine's fused modules (:func:`te_ops`), ``"liger"`` Liger Kernel's (``te_ops(family="liger")``) —
    or a ``(family, compile_scope)`` pair, the scope saying what ``torch.compile`` compiles
    (:data:`perfmodel._workload.COMPILE_SCOPES`, None: ``"model"``; the regions of :func:`compile_regions`)."""
    compile, scope = compile if isinstance(compile, tuple) else (compile, None)
    stack = stack_of(compile)
    recipe = fp8_recipe_of(prec, stack, recipe)
    scope = compile_scope_of(stack, scope)
    key = ("work", module_fingerprint(net), tuple(shape), str(in_dtype), high, int(batch_size), prec, optimizer, bool(inference))
    if stack != "eager":
        key = (*key, stack)
    if recipe not in (None, fp8_recipe_of(prec, stack)):  # a recipe other than the family's default
        key = (*key, recipe)
    if scope not in (None, "model"):
        key = (*key, scope)
    memo = module_memo(net)
    if key not in memo:
        if stack in ("te", "liger"):
            ops = fused_dropout(step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer,
                                         inference=inference))
            work = work_from_ops(te_ops(ops, family=stack)).drop(columns=_FLOW_COLUMNS, errors="ignore").reset_index(drop=True)
            if prec == "fp8":  # Liger under torchao's Float8 (eager casts), Transformer Engine under its own recipes
                work = te_fp8_work(work, vocab=high, recipe=recipe) if stack == "te" else fp8_work(work, vocab=high, recipe=recipe)
            memo[key] = work
        elif stack == "compile":
            # fusion first, then FP8's casts as kernels of their own (they are not chained with one another)
            ops = step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)
            region = None
            if scope != "model":  # the rows outside the compiled graphs run eagerly, their dropouts as eager ones do
                n_layers = model_and_layout(net, shape, in_dtype)[5].n_layers  # a module or a zoo id
                ops = fused_dropout(ops, where=compile_regions(ops, n_layers, scope) < 0)
            work = work_from_ops(ops).reset_index(drop=True)
            if scope != "model":
                region = compile_regions(work, n_layers, scope)
            fused = compiled_work(work, region=region).drop(columns=_FLOW_COLUMNS, errors="ignore")
            memo[key] = fp8_work(fused, vocab=high, compiled=True, recipe=recipe) if prec == "fp8" else fused
        else:
            ops = fused_dropout(step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer,
                                         inference=inference))
            work = work_from_ops(ops).drop(columns=_FLOW_COLUMNS, errors="ignore").reset_index(drop=True)
            memo[key] = fp8_work(work, vocab=high, recipe=recipe) if prec == "fp8" else work
    return memo[key].copy()


def fused_dropout(ops: pd.DataFrame, where: np.ndarray | None = None) -> pd.DataFrame:
    """Each dropout of an eager step as the one kernel a GPU runs: PyTorch's CUDA/ROCm ``native_dropout`` reads the
    input and writes the output and a one-byte mask in one kernel.

    Off the GPU (the meta device the step is traced on), dropout is decomposed: ``empty_like`` (an allocation),
    ``bernoulli_`` (writes the mask in the input's dtype), ``div_`` (scales it by 1/(1-p), read and written) and ``mul``
    (reads the input and the mask, writes the output) — three kernels moving six tensors' worth of bytes where the GPU
    moves two and a byte per element. Each such run (the four rows in this order, of one module and phase, of one
    shape) becomes one ``aten.native_dropout`` row (FLOPs of the ``mul``; reads the input, writes the output and the
    mask). The backward pass's product with the saved mask stays as traced (it reads the mask in the input's dtype:
    at most one tensor's bytes too many). ``torch.compile``'s chains fuse the decomposed rows themselves
    (:func:`compiled_work`) and do not use this; ``where`` (one bool per row) limits it to the dropouts of those rows
    (the eager rows of a step compiled in part: :func:`compile_regions`)."""
    if not len(ops):
        return ops
    op = ops["op"].astype(str).to_numpy()
    at = np.flatnonzero(op[1:-2] == "aten.bernoulli_") + 1
    if where is not None:
        at = at[np.asarray(where, dtype=bool)[at]]
    if not len(at):
        return ops
    mod = ops["module"].astype(str).to_numpy()
    phase = ops["phase"].astype(str).to_numpy()
    outs = ops["output_shapes"].astype(str).to_numpy()
    drop, fused = [], []
    for p in at:
        run = range(p - 1, p + 3)
        if (op[p - 1] == "aten.empty_like" and op[p + 1] == "aten.div_" and op[p + 2] == "aten.mul"
                and len({mod[i] for i in run}) == 1 and len({phase[i] for i in run}) == 1
                and len({outs[i] for i in run}) == 1):
            drop += [p, p + 1]
            fused.append(p + 2)
    if not fused:
        return ops
    out = ops.copy()
    f = np.asarray(fused)
    numel = np.array([_numel(x) for x in outs[f]])
    read = out["bytes_read"].to_numpy(float)[f]
    written = out["bytes_written"].to_numpy(float)[f]
    col = out.columns.get_loc
    out.iloc[f, col("op")] = "aten.native_dropout"
    out.iloc[f, col("bytes_read")] = (read / 2).astype(out["bytes_read"].dtype)  # the input only (the mask is made here)
    out.iloc[f, col("bytes_written")] = (written + numel).astype(out["bytes_written"].dtype)  # output + one-byte mask
    out.iloc[f, col("input_shapes")] = outs[f]
    out.iloc[f, col("output_shapes")] = [f"{x};{x}" for x in outs[f]]
    return out.drop(index=out.index[np.asarray(drop)])


#: columns of work_from_ops that only compiled_work reads (the trace row and its dataflow)
_FLOW_COLUMNS = ["index", "dataflow"]


_FUSABLE = ("elementwise", "layernorm", "softmax")

#: Module names (the last part of a module path, case-insensitive) whose memory-bound operators Transformer Engine runs
#: as one fused kernel, by role: RMSNorm / LayerNorm; the MLP's activation (SwiGLU, GeGLU, GELU); the attention block's
#: rotary embedding and head layout (TE's attention takes q, k, v in their projection layout).
_TE_NORM = re.compile(r"(?:^|\.)(?:input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm|"
                      r"norm|ln_\d+|ln_f|ln|layernorm|layer_norm|final_layer_norm|self_attn_layer_norm|attention_norm|"
                      r"ffn_norm)$", re.IGNORECASE)
#: an MLP module and its activation submodule, by their Hugging Face names (the fused MLP activation of :func:`te_ops`
#: and the saved tensors of :func:`perfmodel.step.memory._fused_saved` read them alike)
_MLP_MODULE = re.compile(r"(?:^|\.)(?:mlp|feed_forward|ffn)$", re.IGNORECASE)
_ACT_SUBMODULE = re.compile(r"\.(?:act_fn|act|activation_fn|activation)$", re.IGNORECASE)
_TE_MLP = re.compile(_MLP_MODULE.pattern[:-1] + r"(?:" + _ACT_SUBMODULE.pattern[:-1] + r")?$", re.IGNORECASE)
#: a mixture of experts' shared experts (DeepSeek's ``shared_experts``, Qwen-MoE's ``shared_expert``), which
#: Megatron-Core runs as a Transformer Engine MLP (its fused SwiGLU) — under ``"te"`` only: Liger patches the model's
#: own MLP classes, not every shared expert
_SHARED_MLP_MODULE = re.compile(r"(?:^|\.)shared_experts?$", re.IGNORECASE)
_TE_SHARED_MLP = re.compile(_SHARED_MLP_MODULE.pattern[:-1] + r"(?:" + _ACT_SUBMODULE.pattern[:-1] + r")?$",
                            re.IGNORECASE)
#: the activation submodule of a mixture of experts' routed experts (Hugging Face's grouped ``experts`` module)
_EXPERTS_ACT = re.compile(r"\.experts" + _ACT_SUBMODULE.pattern, re.IGNORECASE)
_TE_ATTN = re.compile(r"(?:^|\.)(?:self_attn|attention|attn|self_attention)$", re.IGNORECASE)
_TE_CE_OPS = ("aten._log_softmax", "aten.nll_loss_forward", "aten.nll_loss_backward", "aten._log_softmax_backward_data")
_TE_FREE = ("view", "factory", "matmul", "conv", "attention")
_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}


def _numel(shapes: str) -> float:
    d = _dims(shapes)
    return float(np.prod(d[0])) if d and d[0] else 0.0


def rank_share(lay: ModelLayout, names, tp: int) -> float:
    """Parameters of ``names`` one tensor-parallel rank holds (the split ones divided by ``tp``): what the parallel
    step's collectives move and what the memory counts."""
    total = sum(lay.param_numel[k] for k in names)
    split = sum(lay.param_numel[k] for k in names if lay.param_split[k])
    return float(total if tp == 1 else split / tp + (total - split))


def rank_share_by_unit(lay: ModelLayout, tp: int, bytes_of) -> np.ndarray:
    """Bytes one tensor-parallel rank holds of each unit FSDP wraps: the repeated layers in order, then the parameters
    before them (the embedding), then those after them (final norm, output projection) — each parameter split as
    :func:`rank_share` splits it, at ``bytes_of(name)`` bytes per element."""
    n = max(lay.n_layers, 1)
    out = np.zeros(n + 2)
    for k, numel in lay.param_numel.items():
        li = lay.param_layer[k]
        unit = li if 0 <= li < lay.n_layers else (n if li < 0 else n + 1)
        out[unit] += (numel / tp if tp > 1 and lay.param_split[k] else numel) * bytes_of(k)
    return out


def _te_fused_bytes(role: str, phase: str, n: float, item: float, group_read: np.ndarray, rope_bytes: float | None,
                    act_item: int) -> tuple[float, float] | None:
    """(read, written) bytes of the TE kernel that fuses one group of :func:`te_ops` (``n`` the elements of the
    group's largest output, ``item`` their size); None where TE runs no kernel for it (an attention block without a
    rotary embedding)."""
    fwd = phase == "forward"
    if role == "experts_folded":  # done inside the experts' fused SwiGLU (:func:`_experts_swiglu`): no kernel
        return None
    if role == "norm":
        return (n * item, n * item) if fwd else (2 * n * item, n * item)
    if role == "mlp_act":
        gated = bool((group_read >= 2 * n * item).any())  # a product of two N-tensors
        if fwd:
            return (2 * n * item, n * item) if gated else (n * item, n * item)
        return (3 * n * item, 2 * n * item) if gated else (2 * n * item, n * item)
    if role == "attention_prep":
        return None if rope_bytes is None else (rope_bytes, rope_bytes)
    # cross_entropy: n is the logits' count (the largest tensor of the loss)
    return (n * act_item, 0.0) if fwd else (n * act_item, n * act_item)


def _materialised_scores(d: pd.DataFrame) -> np.ndarray:
    """Rows of an attention that materialises its scores (Hugging Face's eager attention: two matmuls with the
    scaling, mask, softmax and dropout of the scores between them): in each attention module's own rows of one pass,
    those from its first matmul to its last, where it has two or more. Transformer Engine fuses none of them into
    the block's layout kernel: such a model's attention runs as its code runs it (TE's own ``DotProductAttention`` is
    not called; at FP32 it would run these kernels too, its fused and flash backends taking FP16/BF16 only)."""
    out = np.zeros(len(d), dtype=bool)
    mod = d["module"].astype(str).to_numpy()
    own = np.array([bool(_TE_ATTN.search(m)) for m in mod], dtype=bool)
    if not own.any():
        return out
    mm = d["op_class"].astype(str).to_numpy() == "matmul"
    rows = np.flatnonzero(own)
    keys = pd.Series(mod[rows]) + "|" + d["phase"].astype(str).to_numpy()[rows]  # one attention module, one pass
    for idx in pd.Series(rows).groupby(keys.to_numpy()).groups.values():
        idx = rows[np.asarray(idx)]
        at = idx[mm[idx]]
        if len(at) >= 2:
            out[idx[(idx >= at[0]) & (idx <= at[-1])]] = True
    return out


def _experts_swiglu(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a mixture of experts' gated activation as eager experts run it, and what Megatron-Core's grouped MLP
    does inside that activation's fused kernel (``weighted_bias_swiglu_impl``, megatron/core/transformer/moe/
    experts.py, ``TEGroupedMLP``): ``(fused, folded)`` masks.

    ``fused``: the kernels of the experts' activation submodule and, in the same pass and between the same two GEMMs,
    the products of their module (the activation times the up projection; in the backward pass the two gradients of
    that product) — one fused kernel per pass. ``folded``: eager work the fused kernel does besides, run as no kernel
    of its own: the concatenation of the two halves' gradients between those GEMMs (inside Megatron's fused backward)
    and the routing probabilities' products, which eager experts apply to the second GEMM's hidden-wide output (the
    products of the experts module with the routed tokens' hidden-wide shape, and in the backward pass the
    probabilities' summed gradient) where Megatron-Core weighs the activation inside the same kernel."""
    mod, op = d["module"].astype(str).to_numpy(), d["op"].astype(str).to_numpy()
    phase = d["phase"].astype(str).to_numpy()
    fused, folded = np.zeros(len(d), dtype=bool), np.zeros(len(d), dtype=bool)
    acts = np.flatnonzero(pd.Series(mod).str.contains(_EXPERTS_ACT).to_numpy())
    if not len(acts):
        return fused, folded
    mm = np.flatnonzero(d["op_class"].astype(str).to_numpy() == "matmul")
    shapes = d["output_shapes"].astype(str).to_numpy()
    dims = pd.Series(shapes).str.split(";").str[0].str.split("x")  # each row's first output's dimensions, once
    two_d = (dims.str.len() == 2).to_numpy()
    rows_of_out, width = dims.str[0].fillna("").to_numpy(), dims.str[-1].fillna("").to_numpy()
    for a in acts:
        parent = _ACT_SUBMODULE.sub("", mod[a])
        lo, hi = np.searchsorted(mm, a), np.searchsorted(mm, a, side="right")
        window = np.arange(mm[lo - 1] + 1 if lo else 0, mm[hi] if hi < len(mm) else len(d))
        here = (phase[window] == phase[a]) & (mod[window] == parent)
        fused[window] |= (phase[window] == phase[a]) & (mod[window] == mod[a])
        fused[window] |= here & np.isin(op[window], ("aten.mul", "aten.mul_"))
        folded[window] |= here & (op[window] == "aten.cat")
        routed = shapes[a].split(";")[0].split("x")[0]
        outside = np.ones(len(d), dtype=bool)
        outside[window] = False
        mine = outside & (phase == phase[a]) & (mod == parent)
        routed_rows = two_d & (rows_of_out == routed) & (width != "1")  # the routed tokens, each a row
        folded |= mine & np.isin(op, ("aten.mul", "aten.mul_")) & routed_rows
        folded |= mine & (op == "aten.sum") & np.isin(shapes, (f"{routed}x1", routed))
    return fused, folded


def _matches(names: pd.Series, pattern) -> np.ndarray:
    """Per string of ``names``, whether the compiled regex ``pattern`` is found in it (``Series.str.contains``), each
    distinct string searched once."""
    codes, distinct = pd.factorize(names)
    return (np.array([bool(pattern.search(n)) for n in distinct], dtype=bool)[codes] if len(distinct)
            else np.zeros(len(names), dtype=bool))


def _fused_roles(d: pd.DataFrame, liger: bool) -> np.ndarray:
    """Per row of :func:`te_ops`' rows, the fused module it belongs to (``"norm"``, ``"mlp_act"``,
    ``"attention_prep"``, ``"cross_entropy"``) or ``""``: memory-bound operators of the modules named so, the loss's
    kernels with the logits' FP32 copy of its module; under Liger only the rotation of an attention block."""
    mod, op = d["module"].astype(str), d["op"].astype(str)
    cls = d["op_class"].astype(str).to_numpy()
    mem = ~np.isin(cls, _TE_FREE) & (d["phase"].astype(str).to_numpy() != "optimizer")
    role = np.full(len(d), "", dtype=object)
    role[mem & _matches(mod, _TE_NORM)] = "norm"
    mlp = _matches(mod, _TE_MLP)
    folded = np.zeros(len(d), dtype=bool)
    if not liger:  # Megatron-Core's shared experts (a TE MLP) and routed experts (its grouped MLP's fused SwiGLU)
        swiglu, folded = _experts_swiglu(d)
        mlp |= _matches(mod, _TE_SHARED_MLP) | swiglu
    role[mem & (role == "") & mlp] = "mlp_act"
    role[mem & (role == "") & folded] = "experts_folded"
    attn_mod = mem & (role == "") & _matches(mod, _TE_ATTN) & ~_materialised_scores(d)
    if liger:  # Liger's RoPE kernel replaces the rotation only; the block's other copies stay
        attn_mod &= op.isin(_ROTARY_OPS).to_numpy()
    role[attn_mod] = "attention_prep"
    ce = op.isin(_TE_CE_OPS).to_numpy()
    if ce.any():  # the logits' FP32 copy of the loss module goes with its cross-entropy
        loss_mods = set(mod[ce])
        role[mem & (role == "") & mod.isin(loss_mods).to_numpy() & (cls == "copy")] = "cross_entropy"
        role[ce] = "cross_entropy"
    return role


def _liger_fuses(key: tuple, rows: list, d: pd.DataFrame) -> bool:
    """Whether Liger Kernel has a fused kernel for one group of :func:`te_ops` (``key``: role, module, phase): not for
    an ungated MLP's activation (a gated MLP multiplies in the MLP module itself, ``act(gate(x)) * up(x)``; an
    ungated one's operators all run in its activation submodule) or an attention block without a rotary embedding (its
    ``neg`` of the rotated half)."""
    role = key[0]
    sub = d.loc[rows]
    if role == "mlp_act":
        return bool((sub["module"].astype(str) == key[1]).any())
    if role == "attention_prep":
        return bool((sub["op"].astype(str) == "aten.neg").any())
    return True


def fp8_linear_weights(net, lay: ModelLayout, vocab, *, experts: bool = False) -> set:
    """Names of the parameters whose GEMMs run in FP8 (the rule of :func:`fp8_work`): the weights of the linear
    layers, an ``nn.Linear`` or GPT-2's ``Conv1D``, none of whose dimensions is the vocabulary ``vocab`` it is given.
    Embeddings, norms, biases and the output projection stay at the training precision. These are the weights FSDP's
    FP8 all-gather and Megatron's ``--fp8-param-gather`` keep and gather in FP8
    (:func:`perfmodel.step.strategy.resolve_fp8_param_gather`). ``experts`` (Transformer Engine's FP8,
    :func:`te_fp8_work`): a mixture of experts' routed experts too (their grouped GEMMs in FP8), its router not.
    Memoised per module (:func:`module_memo`; ``lay`` is the module's layout, or its meta copy's: the same names)."""
    key = ("fp8-linears", module_fingerprint(net), vocab, bool(experts))
    memo = module_memo(net)
    if key not in memo:
        memo[key] = frozenset(_fp8_linear_weights(net, lay, vocab, experts=experts))
    return set(memo[key])


def _fp8_linear_weights(net, lay: ModelLayout, vocab, *, experts: bool = False) -> set:
    """:func:`fp8_linear_weights`, computed."""
    import torch

    if experts and expert_param_names(lay):
        routed = expert_param_names(lay)
        router = {k for k in lay.param_numel if moe_block_param(k)} - routed
        return (fp8_linear_weights(net, lay, vocab) - router) | routed

    out = set()
    names = set(lay.param_numel)
    for mod_name, mod in net.named_modules():
        if not (isinstance(mod, torch.nn.Linear) or type(mod).__name__ == "Conv1D"):
            continue
        w = getattr(mod, "weight", None)
        key = f"{mod_name}.weight" if mod_name else "weight"
        if w is None or w.dim() != 2 or key not in names or (vocab and vocab in tuple(w.shape)):
            continue
        out.add(key)
    return out


#: operators of an attention block that are its rotary embedding (``q·cos + rotate_half(q)·sin`` and its gradient):
#: what Liger's fused RoPE kernel replaces; the block's other copies (a contiguous layout) stay.
_ROTARY_OPS = ("aten.mul", "aten.neg", "aten.cat", "aten.add", "aten.slice_backward")


def te_ops(ops: pd.DataFrame, family: str = "te") -> pd.DataFrame:
    """Per-op rows of the step as NVIDIA Transformer Engine (and Megatron-core on it) runs a transformer: the
    memory-bound operators of a module TE fuses become one kernel per module and pass, moving what that kernel reads
    and writes (``N`` the elements of the module's activation, ``s`` their element size):

    * **RMSNorm / LayerNorm** (``te.RMSNorm``, ``te.LayerNorm``, and the norm of ``LayerNormLinear``): forward reads
      ``x`` and writes ``y`` (``2·N·s``); backward reads ``dy`` and ``x``, writes ``dx`` (``3·N·s``) — the per-row
      statistics and the weight are negligible;
    * **the MLP's activation** (``LayerNormMLP``'s fused SwiGLU / GeGLU / GELU): gated, forward reads gate and up and
      writes their product (``3·N·s``), backward reads ``dh``, gate and up and writes both gradients (``5·N·s``);
      ungated, ``2·N·s`` and ``3·N·s``; under ``"te"`` a mixture of experts' shared experts (a TE MLP in
      Megatron-Core) and its routed experts' SwiGLU between their grouped GEMMs, weighted by the routing
      probabilities (Megatron-Core's grouped MLP, ``weighted_bias_swiglu_impl``: :func:`_experts_swiglu`) alike;
    * **the attention block's rotary embedding and head layout** (TE's fused RoPE; its ``DotProductAttention`` takes
      q, k, v in the projections' layout, so no transpose or contiguous copy runs): one kernel per pass reading and
      writing q and k (``2·(|q| + |k|)·s``) where the block rotates (it has the ``neg``/``cat`` of a rotary
      embedding), no kernel otherwise; an attention that materialises its scores (Hugging Face's eager attention)
      keeps the kernels between its two matmuls, as its own code runs them (:func:`_materialised_scores`; pass
      ``attn_implementation="sdpa"`` for TE's fused attention);
    * **cross-entropy** (Megatron's fused cross-entropy, as Liger's): forward reads the logits once, backward reads
      them and writes their gradient (``L`` logits: ``L·s`` and ``2·L·s``) — the FP32 copy of the logits, the
      log-softmax and the NLL kernels of eager PyTorch vanish;
    * **fused attention**: the kernel of ``scaled_dot_product_attention`` becomes TE's (cuDNN's fused attention;
      its forward and backward rates on Hopper as FlashAttention-3's paper publishes them,
      :data:`perfmodel.step.kernels.TE_FUSED_ATTENTION_EFFICIENCY`).

    GEMMs, residual adds, embeddings and the optimizer are unchanged (TE's linears run cuBLAS; pass
    ``optimizer="adam-fused"`` for the fused Adam TE and Megatron use). A stated model of TE's documented fused
    modules (TE ``transformer_engine.pytorch``: ``LayerNormLinear``, ``LayerNormMLP``, ``DotProductAttention``,
    ``RMSNorm``, fused RoPE), applied to the modules a Hugging Face transformer names this way — nothing here was
    measured or fitted.

    ``family="liger"``: the kernels Liger Kernel (linkedin/Liger-Kernel, its Triton kernels as ``transformers``'
    ``use_liger_kernel=True`` patches Llama-, Mistral-, Qwen- and Gemma-style models) puts in place of PyTorch's, the rest
    of the step eager PyTorch: the norms as above (``LigerRMSNorm``, ``LigerLayerNorm``); the activation of a **gated**
    MLP as above (``LigerSwiGLUMLP``, ``LigerGEGLUMLP``; an ungated MLP's GELU keeps its eager kernels); the rotary
    embedding as one kernel per pass reading and writing q and k (``liger_rotary_pos_emb``) — only the operators of
    the rotation (:data:`_ROTARY_OPS`), the block's contiguous copies stay, and a block without a rotary embedding keeps
    all of its kernels; the **fused linear cross-entropy** (``LigerFusedLinearCrossEntropyLoss``): the output
    projection's logits are made chunk by chunk and never kept, the loss and its gradient computed in place in the
    forward pass (each chunk's logits read and written once, at the activations' size), so the FP32 copy, the
    log-softmax, the NLL and the whole backward pass of the loss vanish (the projection's GEMMs stay as traced, in the
    phase the trace gives them; the scaling of the stored gradients by the loss's gradient, a hidden-sized kernel, is
    not counted); attention stays PyTorch's ``scaled_dot_product_attention`` (FlashAttention-2's rate). Fused rows are
    named ``liger.<role>``.
    """
    liger = family == "liger"
    if family not in ("te", "liger"):
        raise ValueError(f"te_ops: family must be 'te' or 'liger'; got {family!r}.")
    if ops.empty or "module" not in ops.columns:
        return ops.copy()
    d = ops.reset_index(drop=True)
    mod = d["module"].astype(str)
    phase = d["phase"].astype(str).to_numpy()
    cls = d["op_class"].astype(str).to_numpy()
    act_item = 2 if d["dtype"].astype(str).isin(["bfloat16", "float16"]).any() else 4  # the step's activations
    role = _fused_roles(d, liger)
    # the MLP's activation and the product of a gated MLP are one kernel: group them under the MLP module
    mlp_mod = mod.str.replace(_ACT_SUBMODULE, "", regex=True)
    keys = [(r, mm if r == "mlp_act" else m, ph) for r, m, mm, ph in zip(role, mod, mlp_mod, phase)]
    groups: dict = {}
    for i, k in enumerate(keys):
        if k[0]:
            groups.setdefault(k, []).append(i)
    if liger:  # no Liger kernel for an ungated MLP's activation or an attention block without rotary embedding
        groups = {k: g for k, g in groups.items() if _liger_fuses(k, g, d)}
    in_group = {i for g in groups.values() for i in g}
    # per attention block: the bytes of its rotated q and k, taken from the forward pass, reused in the backward pass
    rope: dict = {}
    for (r, m, ph), g in groups.items():
        if r == "attention_prep" and ph == "forward":
            sub = d.loc[g]
            if sub["op"].isin(["aten.neg"]).any() and sub["op"].isin(["aten.cat", "aten.add"]).any():
                adds = sub[sub["op"] == "aten.add"]
                rope[m] = float(sum(_numel(s) * _ITEMSIZE.get(str(t), 2) for s, t in zip(adds["output_shapes"], adds["dtype"])))
    # the fused kernels, one per group, each at the position of its group's first operator (its row: that of the
    # group's largest output, with what the fused kernel does)
    codes, shapes = pd.factorize(d["output_shapes"].astype(str))  # each distinct shape parsed once
    numel = np.array([_numel(x) for x in shapes], dtype=float)[codes]
    itemsize = np.array([_ITEMSIZE.get(str(t), 2) for t in d["dtype"]], dtype=float)
    flops = d["flops"].to_numpy()
    bytes_read = d["bytes_read"].to_numpy(float)
    big_at, at, what = [], [], []
    for (r, m, ph), g in groups.items():
        g = np.asarray(g)
        big = int(g[np.argmax(numel[g])])
        if liger and r == "cross_entropy":  # the fused linear cross-entropy: in place, in the forward pass only
            moved = (numel[big] * act_item, numel[big] * act_item) if ph == "forward" else None
        else:
            moved = _te_fused_bytes(r, ph, numel[big], itemsize[g[-1]], bytes_read[g], rope.get(m), act_item)
        if moved is None:
            continue  # no rotary embedding: TE's attention needs no layout kernel; no backward kernel of Liger's loss
        read, written = moved
        big_at.append(big)
        at.append(int(g[0]))
        what.append((f"{family}.{r}", "norm" if r == "norm" else "elementwise", float(flops[g].sum()), float(read),
                     float(written)))
    fused = d.iloc[big_at].copy()
    if len(fused):
        fused["op"], fused["op_class"], fused["flops"], fused["bytes_read"], fused["bytes_written"] = (
            [w[k] for w in what] for k in range(5))
        fused["input_shapes"] = fused["output_shapes"] = [str(x).split(";")[0] for x in fused["output_shapes"]]
        fused["index"] = d["index"].to_numpy()[at] if "index" in d.columns else at
    # every other operator as it is (TE's attention kernel renamed); the operators of a group are fused away
    keep = np.ones(len(d), dtype=bool)
    keep[list(in_group)] = False
    kept = d[keep].copy()
    attn = (cls[keep] == "attention") & (not liger)  # Liger keeps PyTorch's attention kernels
    if attn.any():
        kept.loc[attn, "op"] = "te." + kept.loc[attn, "op"].astype(str).str.replace("aten.", "", regex=False)
    order = np.concatenate([np.flatnonzero(keep), np.array(at, dtype=int)])
    out = pd.concat([kept, fused], ignore_index=True) if len(fused) else kept
    for c in out.columns:  # plain columns, as the rows of a rebuilt step have always been (no categorical phase)
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(object)
    return out.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)


def compiled_work(work: pd.DataFrame, region: np.ndarray | None = None) -> pd.DataFrame:
    """Work rows of the step as ``torch.compile`` (Inductor) runs it: every maximal chain of consecutive memory-bound
    operators (``elementwise``, ``layernorm``, ``softmax`` rows of one phase, between two GEMMs / attention kernels)
    becomes one fused kernel — one launch, one pass over memory. GEMMs, attention and the optimizer's kernels are
    unchanged (Inductor leaves matmuls to cuBLAS and FlashAttention; the optimizer step is not in the compiled graph).

    What the fused kernel moves is computed from the dataflow of the trace (``dataflow`` and ``index`` columns, from
    :func:`work_from_ops` of :func:`perfmodel.features.extract` rows; :mod:`perfmodel.features._dataflow`):

    * it **reads** each tensor produced outside the chain once (a parameter, the batch, a GEMM's output, a tensor the
      forward pass saved), however many of its ops read it; what one of its ops produced stays on chip;
    * it **writes** what is read after the chain in the same phase, the step's results (gradients, updated buffers)
      and, in the backward pass, what the optimizer reads;
    * what a forward chain computes only for the backward pass is **recomputed** there rather than saved, as
      AOTAutograd's min-cut partitioner does for cheap pointwise chains: the forward kernel does not write it, and a
      backward kernel that reads any of it reads what that forward chain read, once. A chain that writes nothing is no
      kernel at all.

    The fused kernel keeps the class and shape of its widest member (the row that moves the most) and the chain's
    summed ``flops``; an ``elementwise`` one is described, as :func:`work_from_ops` describes any, by the bytes it
    moves. A chain that reads what the previous chain of its phase produced joins it when the GEMMs between them do
    not read it (``silu(gate(x)) * up(x)``: one kernel, not two), as Inductor's scheduler fuses along the dataflow
    rather than the program order. Stated approximations: one kernel per chain (Inductor splits a chain whose
    reductions run over different dimensions into a few), small statistics a partitioner would save rather than
    recompute (a norm's mean) are recomputed, and a fill is fused only inside its chain's span. Rows without
    ``dataflow`` (a hand-made work frame) fall back to the widest member's bytes.

    ``region`` (one int per row; None: the whole step is one graph): the graph each row is compiled in, negative for
    a row run eagerly (:func:`compile_regions`). A chain never crosses from one graph to another, and an eager row is
    its own kernel, as traced.
    """
    if work.empty:
        return work.copy()
    cls = work["op_class"].to_numpy()
    phase = work["phase"].astype(str).to_numpy()
    fusable = np.isin(cls, _FUSABLE) & (phase != "optimizer")
    if "op" in work.columns:
        fusable &= work["op"].astype(str).to_numpy() != "fused_adam"
    # chain id: a new chain starts at a non-fusable row, at a phase change, or after a non-fusable row
    start = ~fusable | np.r_[True, ~fusable[:-1]] | np.r_[True, phase[1:] != phase[:-1]]
    if region is not None:
        region = np.asarray(region, dtype=int)
        if len(region) != len(work):
            raise ValueError(f"compiled_work: region has {len(region)} entries for {len(work)} work rows; pass one per row.")
        fusable &= region >= 0
        start = start | ~fusable | np.r_[True, region[1:] != region[:-1]]
    chain = np.cumsum(start)
    out = work.copy()
    out["_chain"] = np.where(fusable, chain, -np.arange(1, len(work) + 1))
    flow = {"dataflow", "index"} <= set(work.columns)
    if flow:
        out["_chain"] = _merge_across_gemms(out, fusable, region)
    keep = out.groupby("_chain", sort=False)["bytes"].idxmax()
    flops = out.groupby("_chain", sort=False)["flops"].sum()
    fused = out.loc[keep.to_numpy()].copy()
    fused["flops"] = flops.loc[fused["_chain"]].to_numpy()
    if flow and fusable.any():
        moved = _chain_bytes(out[fusable], set(out["index"].to_numpy(int).tolist()))
        drop = []
        for r, (c, ph) in enumerate(zip(fused["_chain"].to_numpy(), fused["phase"].astype(str).to_numpy())):
            if c < 0 or c not in moved:
                continue
            nbytes = moved[c]
            label = fused.index[r]
            if nbytes <= 0:
                drop.append(label)
                continue
            if fused.at[label, "op_class"] == "elementwise":
                numel = float(fused.at[label, "dim_m"]) * float(fused.at[label, "dim_k"])
                f = _elementwise_fields(nbytes, numel, float(fused.at[label, "dim_k"]))
                for col, v in zip(("bytes", "tiles", "dim_m", "dim_n", "dim_k", "dim_b"), f[1:]):
                    fused.at[label, col] = v
            else:
                fused.at[label, "bytes"] = nbytes
        fused = fused.drop(index=drop)
    return fused.drop(columns="_chain").sort_index().reset_index(drop=True)


def _merge_across_gemms(out: pd.DataFrame, fusable: np.ndarray, region: np.ndarray | None = None) -> np.ndarray:
    """Chain ids of ``out`` with each chain joined to the previous chain of its phase (and compiled graph, ``region``)
    when it reads what that one produced and no row between them does (:func:`compiled_work`)."""
    ids = out["_chain"].to_numpy().copy()
    idx = out["index"].to_numpy(int)
    flows = out["dataflow"].to_numpy()
    phase = out["phase"].astype(str).to_numpy()

    def producers(rows):
        found = set()
        for r in rows:
            f = flows[r]
            if isinstance(f, tuple) and len(f) == 2:
                found.update(idx[r] - t[1] for t in f[0] if t[1] > 0)
        return found

    members: dict = {}
    for r in np.flatnonzero(fusable):
        members.setdefault(ids[r], []).append(r)
    prev = None
    for c in list(members):
        rows = members[c]
        if (prev is not None and phase[rows[0]] == phase[members[prev][0]]
                and (region is None or region[rows[0]] == region[members[prev][0]])):
            between = range(members[prev][-1] + 1, rows[0])
            made = {idx[r] for r in members[prev]}
            if producers(rows) & made and not producers(between) & made:
                ids[rows] = prev
                members[prev] = members[prev] + rows
                continue
        prev = c
    return ids


def _chain_bytes(rows: pd.DataFrame, kernels: set) -> dict:
    """Bytes each fused chain (``_chain``) moves, from its rows' ``dataflow`` (:func:`compiled_work`): each version
    of a tensor produced outside the chain is read once — its views read by the chain's ops (linked through ``seen``)
    count the bytes they cover together, at most their summed footprints — and what is live after the chain is
    written once. ``kernels``: the trace rows of every work row; a row between a chain's first and last that is not
    one (an allocation, such as the empty tensor a dropout mask is drawn into) is fused into it too."""
    from perfmodel.features._dataflow import FLOW_CAP, union_length

    first = rows.groupby("_chain", sort=False)["index"].min().to_dict()
    last = rows.groupby("_chain", sort=False)["index"].max().to_dict()
    members = rows.groupby("_chain", sort=False)["index"].agg(set).to_dict()  # a joined chain has GEMMs between
    groups: dict = {}  # (chain, row, slot) -> read group
    views: dict = {}  # read group -> {(lo, hi): footprint}
    written: dict = {}
    for c, i, ph, flow in zip(rows["_chain"].to_numpy(), rows["index"].to_numpy(int), rows["phase"].astype(str).to_numpy(),
                              rows["dataflow"].to_numpy()):
        if not isinstance(flow, tuple) or len(flow) != 2:
            continue
        s, e = first[c], last[c]
        ins, outs = flow
        for slot, (nb, produced, seen, seen_slot, lo, hi, again, again_slot, recompute) in enumerate(ins):
            p = i - produced
            if produced > 0 and (p in members[c] or (s <= p and p not in kernels)):
                continue  # produced by an op of the chain (or an allocation fused into it): on chip
            if recompute > 0:  # saved only for this pass by a forward chain: recomputed from what that chain reads, once
                g = groups.get((c, "origin", i - again, again_slot)) if again >= 0 else None
                g = g or (c, "origin", i, slot)
                groups[(c, "origin", i, slot)] = g
                views.setdefault(g, {})[(0, recompute)] = recompute
                continue
            g = groups.get((c, i - seen, seen_slot)) if seen >= 0 else None
            if g is None:
                g = (c, i, slot)
            groups[(c, i, slot)] = g
            views.setdefault(g, {})[(lo, hi)] = nb
        n = written.setdefault(c, 0.0)
        for nb, reach, later in outs:
            if reach > e - i or reach > FLOW_CAP or (later and ph != "forward"):
                n += nb
        written[c] = n
    moved = dict(written)
    for g, spans in views.items():
        moved[g[0]] = moved.get(g[0], 0.0) + min(sum(spans.values()), union_length(spans))
    return moved


def fp8_work(work: pd.DataFrame, *, vocab: int | None = None, compiled: bool = False,
             recipe: str | None = "tensorwise") -> pd.DataFrame:
    """Work rows of a BF16 step with its linear layers in FP8, as torchao's ``Float8Linear`` (tensorwise scaling, the
    recipe torchtitan's Float8 runs use) trains them — a stated extrapolation, no FP8 kernel was measured:

    * every ``aten.mm`` / ``addmm`` of the forward and backward passes (the linears' GEMMs and their two gradient
      GEMMs) runs at the GPU's FP8 tensor-core rate (``fp8`` column True), except a GEMM with a dimension of the
      vocabulary size (the output projection stays in BF16, as torchtitan leaves it);
    * each such GEMM first casts its two operands to FP8: one elementwise kernel per GEMM moving
      :data:`FP8_CAST_BYTES_PER_ELEMENT` bytes per operand element (a work row as :func:`work_from_ops` describes an
      elementwise kernel of those bytes);
    * attention, norms, activations and the optimizer stay in BF16 / FP32.

    ``compiled`` (``torch.compile``, as torchtitan runs Float8): the activation operand of a GEMM whose rows are the
    tokens (the input of a forward GEMM, the output gradient of an input-gradient GEMM; the weight-gradient GEMM
    reuses both) is cast by one kernel of its own moving :data:`FP8_CAST_COMPILED_BYTES_PER_ELEMENT` bytes per
    element; the token count is the commonest row count of the forward FP8 GEMMs. Each FP8 weight is cast in the
    forward pass and copied column-major in the backward pass (:func:`_tensorwise_weight_casts`).

    ``recipe="rowwise"`` (torchao's rowwise scaling: a scale per row of each operand along the GEMM's reduction
    dimension): eager, the same casts (the per-row maximum reads what the per-tensor one reads); compiled, the
    activation casts above and, since torchao gathers rowwise-scaled weights in BF16 (no FP8 all-gather), each weight
    cast per micro-batch with its transpose as Transformer Engine casts it (:func:`te_fp8_work`), and per FP8 linear
    the cost beyond its GEMMs and these casts that torchao's published row-wise microbenchmark calibrates (the second
    scaling of the input and output gradient for the weight gradient, the backward GEMMs' rescaling kernels:
    :func:`rowwise_overhead_rows`). The GEMMs are predicted at the FP8 rate as tensorwise ones
    (the calibration absorbs what the row-wise kernels lose, where the microbenchmark shows it).
    """
    w = work.copy()
    mm = _fp8_gemms(w, vocab)
    w["fp8"] = mm
    sel = w[mm]
    per_el = FP8_CAST_COMPILED_BYTES_PER_ELEMENT if compiled else FP8_CAST_BYTES_PER_ELEMENT
    if len(sel) and compiled:
        sel = _token_rows(sel)
    if len(sel):
        n_el = sel["dim_b"].to_numpy(float) * sel["dim_m"].to_numpy(float) * sel["dim_n"].to_numpy(float)
        if not compiled:
            n_el = n_el + sel["dim_b"].to_numpy(float) * sel["dim_n"].to_numpy(float) * sel["dim_k"].to_numpy(float)
        casts = _cast_rows(sel, per_el * n_el, "float8_cast", sel["phase"].to_numpy())
        w = pd.concat([w, casts[w.columns]], ignore_index=True)
    if recipe == "rowwise" and compiled:
        w = rowwise_overhead_rows(_weight_casts(w))
    elif compiled:
        w = _tensorwise_weight_casts(w)
    return w


def _tensorwise_weight_casts(w: pd.DataFrame) -> pd.DataFrame:
    """``w`` with each FP8 weight's compiled tensorwise cast in the forward pass
    (:data:`FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT`, op :data:`FP8_WEIGHT_CAST_OP`) and its column-major copy for
    the input-gradient GEMM in the backward pass (:data:`FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT`, op
    :data:`FP8_WEIGHT_TRANSPOSE_OP`), once per micro-batch each (:func:`_weight_casts`)."""
    w = _weight_casts(w, FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT, FP8_WEIGHT_CAST_OP)
    return _weight_casts(w, FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT, FP8_WEIGHT_TRANSPOSE_OP, phase="backward")


# ----------------------------------------- torchao's row-wise float8 beyond its GEMMs (perfmodel.step.float8_rowwise)

#: the calibration of :func:`rowwise_overhead_rows`, fitted by :mod:`perfmodel.step.float8_rowwise`
ROWWISE_FITTED_PATH = Path(__file__).resolve().parent / "fitted" / "float8_rowwise.json"
_ROWWISE_FORMAT = 1
_ROWWISE_APPLY = [True]
#: op of the calibrated kernel's part that a tensor-parallel rank runs on its share of the linear
ROWWISE_SHARED_OP = "float8_rowwise_cast"
#: op of the part on the operand a tensor-parallel rank holds whole: torchtitan runs row-wise float8 with regular
#: tensor parallelism, the activations gathered in BF16 (``parallelize_llama``: "for rowwise recipes, we use regular TP
#: and all-gather happens in high precision"), so a column-parallel linear casts the whole gathered input and a
#: row-parallel one the whole output gradient; :func:`perfmodel.step.parallel.rank_work` keeps this part whole
ROWWISE_GATHERED_OP = "float8_rowwise_gathered"
#: the output projection of an attention module (GPT-2's ``attn.c_proj``, Llama's ``self_attn.o_proj``, OPT's
#: ``out_proj``, BERT's ``attention.output.dense``, GPT-NeoX's ``attention.dense``, T5's ``wo``): row-parallel under
#: Megatron-style tensor parallelism.
OUT_PROJECTION = re.compile(r"(^|\.)(attn|attention|self_attn|selfattention|self_attention)\."
                            r"(c_proj|o_proj|out_proj|dense|wo|output\.dense)$", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def rowwise_calibration() -> dict:
    """The shipped calibration of torchao's row-wise recipe (:mod:`perfmodel.step.float8_rowwise`):
    ``bytes_per_element`` (``input``, ``grad_output``, ``weight``), ``fixed_s`` (not applied), ``fitted_on``,
    ``n_shapes`` and the fit's errors."""
    d = json.loads(ROWWISE_FITTED_PATH.read_text(encoding="utf-8"))
    if d.get("format") != _ROWWISE_FORMAT:
        raise ValueError(f"{ROWWISE_FITTED_PATH} has format {d.get('format')!r}; this perfmodel reads format "
                         f"{_ROWWISE_FORMAT}. Rebuild it with `python -m perfmodel.step.float8_rowwise`.")
    return d


@contextlib.contextmanager
def rowwise_uncalibrated():
    """Within the block, compiled row-wise steps get no calibrated kernel (what the calibration is fitted on). Work
    already traced and memoised keeps what it had: trace new modules inside."""
    before, _ROWWISE_APPLY[0] = _ROWWISE_APPLY[0], False
    try:
        yield
    finally:
        _ROWWISE_APPLY[0] = before


def _row_parallel(fwd: pd.DataFrame) -> np.ndarray:
    """Which forward GEMMs are a row-parallel linear under Megatron-style tensor parallelism: an attention's output
    projection (by name, :data:`OUT_PROJECTION`) or a linear whose input is not the hidden state (its reduction
    dimension is not the commonest one: an MLP's down projection)."""
    k = fwd["dim_n"].to_numpy(float)
    hidden = float(pd.Series(k).mode().iloc[0])
    mods = fwd["module"].astype(str).to_numpy() if "module" in fwd.columns else np.full(len(fwd), "")
    return np.array([bool(OUT_PROJECTION.search(m)) for m in mods], dtype=bool) | (k != hidden)


def rowwise_overhead_rows(w: pd.DataFrame) -> pd.DataFrame:
    """Work rows of ``w`` (a compiled step with its FP8 linears marked) plus, per FP8 linear (each forward FP8 GEMM
    whose rows are the tokens, ``M × K`` times ``K × N``), the memory-bound kernel in the backward pass that
    :mod:`perfmodel.step.float8_rowwise` calibrates, moving ``a·M·K + b·M·N + c·K·N`` bytes
    (:func:`rowwise_calibration`), as two rows: :data:`ROWWISE_GATHERED_OP` the bytes of the operand a tensor-parallel
    rank holds whole (a column-parallel linear's input, a row-parallel one's output gradient),
    :data:`ROWWISE_SHARED_OP` the rest. Unchanged inside :func:`rowwise_uncalibrated`."""
    if not _ROWWISE_APPLY[0]:
        return w
    fwd = w[w["fp8"].to_numpy(bool) & (w["phase"].astype(str) == "forward").to_numpy()]
    if not len(fwd):
        return w
    tokens = float(fwd["dim_m"].mode().iloc[0])
    fwd = fwd[fwd["dim_m"].to_numpy(float) == tokens]
    per = rowwise_calibration()["bytes_per_element"]
    # work rows: dim_m the rows, dim_n the reduction, dim_k the outputs
    b, m, k, n = (fwd[c].to_numpy(float) for c in ("dim_b", "dim_m", "dim_n", "dim_k"))
    x, g, wt = per["input"] * b * m * k, per["grad_output"] * b * m * n, per["weight"] * k * n
    row = _row_parallel(fwd)
    parts = []
    for op, nbytes in ((ROWWISE_GATHERED_OP, np.where(row, g, x)), (ROWWISE_SHARED_OP, np.where(row, x, g) + wt)):
        keep = nbytes > 0
        if keep.any():
            parts.append(_cast_rows(fwd[keep], nbytes[keep], op, "backward")[w.columns])
    return pd.concat([w, *parts], ignore_index=True) if parts else w


def keep_gathered_whole(work: pd.DataFrame, unsplit: pd.DataFrame, tp: int) -> pd.DataFrame:
    """A tensor-parallel rank's work rows (``work``, after the layout's split) with the row-wise calibrated kernels
    sized from the rank's whole step before the split (``unsplit``, the same rows in the same order): the
    :data:`ROWWISE_GATHERED_OP` rows whole (the operand the rank holds whole), the :data:`ROWWISE_SHARED_OP` rows its
    ``1/tp`` share — whatever the split did to them (their rows' shape says nothing of the linear's)."""
    if tp <= 1 or "op" not in work.columns:
        return work
    return resized_from_unsplit(work, unsplit, {ROWWISE_GATHERED_OP: 1.0, ROWWISE_SHARED_OP: 1.0 / tp})


def resized_from_unsplit(work: pd.DataFrame, unsplit: pd.DataFrame, factors: dict) -> pd.DataFrame:
    """``work`` (a tensor-parallel rank's rows after the layout's split; ``unsplit`` the same rows in the same order
    before it) with each row whose op ``factors`` names sized as its unsplit row times the op's factor: its
    ``flops``, ``bytes``, ``tiles`` and ``dim_m`` (at least one row). The kernels whose size the split cannot read
    from their rows' shapes: :func:`keep_gathered_whole`, :func:`te_tp_casts`."""
    factor = work["op"].astype(str).map(factors).to_numpy(float)  # NaN: a row it leaves as it is
    rows = ~np.isnan(factor)
    if not rows.any():
        return work
    w = work.copy()
    for c in ("flops", "bytes", "tiles", "dim_m"):
        whole = unsplit[c].to_numpy(float)[rows] * factor[rows]
        w.loc[rows, c] = np.maximum(whole, 1.0 if c == "dim_m" else 0.0)
    return w


def gathered_fp8_casts(work: pd.DataFrame, unsplit: pd.DataFrame, column: set, row: set,
                       tp: int) -> tuple[pd.DataFrame, np.ndarray]:
    """A tensor-parallel rank's work rows (``work``, after the layout's split; ``unsplit`` the same rows before it)
    with the compiled tensorwise Float8 casts of the operands PyTorch's Float8 tensor parallelism gathers, as torchao
    runs them under torchtitan (``PrepareFloat8ModuleInput`` / ``Float8ColwiseParallel`` / ``Float8RowwiseParallel``),
    and for each output row the input row it comes from.

    A block's input is cast on the rank's sequence shard (2 bytes read and 1 written per element of the shard) and
    all-gathered in FP8, once for the linears that share it (the key and value projections read the query
    projection's input, the up projection the gate's: their casts are dropped); the weight-gradient GEMM reads the
    gathered input transposed — torchao's ``preprocess_addmm`` makes a column-major copy (``t().contiguous()``) of the
    whole gathered tensor, 1 byte read and 1 written per element — a backward kernel of its own
    (``"float8_transpose"``, appended; not re-run by activation checkpointing). The output gradient of a row-parallel
    linear is cast on its shard, all-gathered and copied transposed in the backward pass: ``3/tp + 2`` bytes per
    element of the whole operand. The split cast of :func:`fp8_work` moved ``4/tp`` (cast and transposed copy on the
    shard). ``column`` / ``row``: the modules of the column- and row-parallel linears."""
    index = np.arange(len(work))
    if tp <= 1 or "op" not in work.columns or "module" not in work.columns:
        return work, index
    op = work["op"].astype(str).to_numpy()
    mods = work["module"].astype(str).to_numpy()
    phase = work["phase"].astype(str).to_numpy()
    cast = op == "float8_cast"
    fwd = cast & (phase == "forward") & np.isin(mods, list(column))
    bwd = cast & (phase == "backward") & np.isin(mods, list(row))
    if not (fwd.any() or bwd.any()):
        return work, index
    shared = fwd & np.array([bool(_SHARED_INPUT.search(m)) for m in mods], dtype=bool)
    fwd &= ~shared
    per_el = float(FP8_CAST_COMPILED_BYTES_PER_ELEMENT)
    w = work.copy()
    cols = ("flops", "bytes", "tiles", "dim_m")
    whole = {c: unsplit[c].to_numpy(float) for c in cols}
    for mask, b in ((fwd, 3.0 / tp), (bwd, 3.0 / tp + 2.0)):
        for c in cols:
            w.loc[mask, c] = np.maximum(whole[c][mask] * b / per_el, 1.0 if c == "dim_m" else 0.0)
    at = np.flatnonzero(fwd)
    tr = work.iloc[at].copy()
    for c in cols:
        tr[c] = np.maximum(whole[c][at] * 2.0 / per_el, 1.0 if c == "dim_m" else 0.0)
    tr["op"], tr["phase"] = "float8_transpose", "backward"
    keep = np.flatnonzero(~shared)
    out = pd.concat([w.iloc[keep], tr], ignore_index=True)
    return out, np.concatenate([index[keep], at])


def _fp8_gemms(w: pd.DataFrame, vocab) -> np.ndarray:
    """The rows of the linears' GEMMs that run in FP8: ``aten.mm`` / ``addmm`` of the forward and backward passes, none
    of whose dimensions is the vocabulary (the output projection stays in BF16)."""
    mm = w["op"].isin(["aten.mm", "aten.addmm"]).to_numpy() & w["phase"].astype(str).isin(["forward", "backward"]).to_numpy()
    if vocab:
        mm &= ~((w["dim_m"] == vocab) | (w["dim_n"] == vocab) | (w["dim_k"] == vocab)).to_numpy()
    return mm


def _token_rows(sel: pd.DataFrame) -> pd.DataFrame:
    """The GEMMs of ``sel`` whose rows are the tokens: the commonest row count of its forward GEMMs."""
    fwd_m = sel.loc[sel["phase"].astype(str) == "forward", "dim_m"]
    tokens = float(fwd_m.mode().iloc[0]) if len(fwd_m) else np.nan
    return sel[sel["dim_m"].to_numpy(float) == tokens]


def _cast_rows(sel: pd.DataFrame, nbytes: np.ndarray, op, phase) -> pd.DataFrame:
    """Cast kernels moving ``nbytes`` each (``op``: one name, or one per row), described as :func:`work_from_ops` describes an elementwise kernel of those
    bytes (the binary op over ``bytes / 12`` elements, rows of the operand's reduction dimension ``dim_n``)."""
    eq = np.maximum(nbytes / 12.0, 1.0)
    last = np.minimum(np.maximum(sel["dim_n"].to_numpy(float), 1.0), eq)
    casts = pd.DataFrame({"op_class": "elementwise", "flops": eq, "bytes": nbytes, "tiles": np.ceil(eq / 512),
                          "dim_m": eq / last, "dim_n": 1.0, "dim_k": last, "dim_b": 1.0, "op": op, "phase": phase,
                          "fp8": False, "fp4": False, "fp8_split": False})
    if "module" in sel.columns:
        casts["module"] = sel["module"].to_numpy()
    return casts


#: linears that read the input of the linear named before them in their block (Hugging Face's names): the key and
#: value projections read the query projection's input, the up projection the gate projection's.
_SHARED_INPUT = re.compile(r"\.(?:k_proj|v_proj|key|value|up_proj)$")


def _shared_inputs_once(sel: pd.DataFrame) -> pd.DataFrame:
    """The forward GEMMs of ``sel`` without those that read the input another one read (:data:`_SHARED_INPUT`: the
    key and value projections, a gated MLP's up projection), as Transformer Engine casts that input once for its
    fused ``LayerNormLinear`` / ``LayerNormMLP``. Backward GEMMs (each reads its own output gradient) all stay."""
    if "module" not in sel.columns or not len(sel):
        return sel
    fwd = (sel["phase"].astype(str) == "forward").to_numpy()
    shared = sel["module"].astype(str).str.contains(_SHARED_INPUT).to_numpy()
    return sel[~(fwd & shared)]


def _weight_casts(w: pd.DataFrame, per_element: float = TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT,
                  op: str = TE_FP8_WEIGHT_CAST_OP, phase: str = "forward") -> pd.DataFrame:
    """``w`` with each FP8 weight (of the GEMMs its ``fp8`` column marks) cast, with its transpose, by one kernel ``op``
    moving ``per_element`` bytes per element (:data:`TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT`), once per micro-batch, in
    the pass ``phase`` (the weight of a forward GEMM whose rows are the tokens is its ``dim_k × dim_n`` operand; the
    rows added are not FP8 GEMMs, so a second call sees the same weights)."""
    fwd = w[w["fp8"].to_numpy(bool) & (w["phase"].astype(str) == "forward").to_numpy()]
    if not len(fwd):
        return w
    tokens = float(fwd["dim_m"].mode().iloc[0])
    fwd = fwd[fwd["dim_m"].to_numpy(float) == tokens]
    n_el = fwd["dim_b"].to_numpy(float) * fwd["dim_k"].to_numpy(float) * fwd["dim_n"].to_numpy(float)
    casts = _cast_rows(fwd, per_element * n_el, op, phase)
    return pd.concat([w, casts[w.columns]], ignore_index=True)


def _te_activation_casts(w: pd.DataFrame, mm: np.ndarray, recipe: str) -> pd.DataFrame:
    """The cast kernels of the activations and gradients Transformer Engine's FP8 linears read, under delayed scaling,
    current scaling or MXFP8, as Megatron-Core's TE layers run them (``TELayerNormColumnParallelLinear`` for the
    linears fed by a norm, ``TERowParallelLinear`` for the others; TE d0067d0), one row per kernel of a single GPU's
    step (:func:`te_tp_casts` sizes them for a tensor-parallel rank):

    * forward, a linear fed by a norm (its reduction over the hidden state, not a row-parallel linear: q, k and v
      share one input, gate and up another, :func:`_shared_inputs_once`): delayed scaling's fused norm writes the FP8
      input and a transpose kernel its column-wise copy (:data:`TE_TRANSPOSE_OP`); current scaling's norm writes BF16
      and its maximum (``FUSED_NORM_AMAX_FP8``), then the tensor is cast on the hidden state before TE's all-gather
      (:data:`TE_GATHERED_CAST_OP`); MXFP8 casts the norm's BF16 output (:data:`TE_SEQUENCE_CAST_OP`: the norm is not
      fused with an MXFP8 cast);
    * forward, a row-parallel linear (:func:`_row_parallel`: the output projection after the attention kernel, the
      down projection after the activation): its BF16 input cast with its transpose (:data:`TE_CAST_OP`);
    * backward, each FP8 linear's output gradient (the input-gradient GEMM's token-row operand) cast with its
      transpose: a column-parallel linear's (:data:`TE_CAST_OP`), a row-parallel one's, on the hidden state
      (:data:`TE_GATHERED_CAST_OP`; :data:`TE_SEQUENCE_CAST_OP` under MXFP8, which gathers both copies);
    * current scaling reads each tensor it casts for its maximum first, by a kernel of its own (:data:`TE_AMAX_OP`,
      :data:`TE_SEQUENCE_AMAX_OP` on the hidden state), but where the norm computed it."""
    sel = _token_rows(w[mm])
    if "module" not in sel.columns or not len(sel):
        return sel.iloc[:0]
    phase = sel["phase"].astype(str).to_numpy()
    fwd = sel[phase == "forward"]
    row_mods = set(fwd["module"].astype(str).to_numpy()[_row_parallel(fwd)]) if len(fwd) else set()
    sel = _shared_inputs_once(sel)
    phase = sel["phase"].astype(str).to_numpy()
    row = sel["module"].astype(str).isin(row_mods).to_numpy()
    forward = phase == "forward"
    norm_fed, hidden_grad = forward & ~row, ~forward & row
    mx = recipe in ("mxfp8", "nvfp4", "blockwise")  # block-scaled: the column-wise copy is quantized, not transposed
    cast = _TE_BLOCK_CAST_BYTES.get(recipe, float(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT))
    if mx:
        op = np.where(norm_fed | hidden_grad, TE_SEQUENCE_CAST_OP, TE_CAST_OP)
    else:
        op = np.where(norm_fed, TE_TRANSPOSE_OP if recipe == "delayed" else TE_GATHERED_CAST_OP,
                      np.where(hidden_grad, TE_GATHERED_CAST_OP, TE_CAST_OP))
    per_el = np.where(op == TE_TRANSPOSE_OP, float(TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT), cast)
    n_el = sel["dim_b"].to_numpy(float) * sel["dim_m"].to_numpy(float) * sel["dim_n"].to_numpy(float)
    out = _cast_rows(sel, per_el * n_el, "", phase)
    out["op"] = op
    if recipe in ("current", "nvfp4"):  # the per-tensor maximum first, but where the norm computed it
        amax = ~norm_fed
        first = _cast_rows(sel[amax], TE_AMAX_BYTES_PER_ELEMENT * n_el[amax], "", phase[amax])
        first["op"] = np.where(hidden_grad[amax], TE_SEQUENCE_AMAX_OP, TE_AMAX_OP)
        out = pd.concat([first, out], ignore_index=True)
    return out


def te_tp_casts(work: pd.DataFrame, unsplit: pd.DataFrame, tp: int, sequence_parallel: bool) -> pd.DataFrame:
    """A tensor-parallel rank's work rows (``work``, after the layout's split; ``unsplit`` the same rows before it)
    with Transformer Engine's activation and gradient casts (:func:`_te_activation_casts`) sized from the unsplit
    step, whatever the split did to them (their rows' shape says nothing of the linear's): :data:`TE_CAST_OP` its
    ``1/tp`` share (the tensor TP splits), :data:`TE_TRANSPOSE_OP` whole (the gathered input, or the input every rank
    computes whole without sequence parallelism), :data:`TE_SEQUENCE_CAST_OP` its ``1/tp`` share with sequence
    parallelism (the rank's sequence shard) and whole without (:data:`TE_AMAX_OP` and :data:`TE_SEQUENCE_AMAX_OP` as
    the casts they precede), :data:`TE_GATHERED_CAST_OP` with sequence
    parallelism the row-wise cast of the rank's shard and the transpose of the gathered whole
    (``TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT / tp + TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT`` bytes per element of the
    whole where the single GPU's cast moves :data:`TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT`), whole without."""
    if tp <= 1 or "op" not in work.columns:
        return work
    sp = bool(sequence_parallel)
    gathered = ((TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT / tp + TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT)
                / TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT)
    sequence = 1.0 / tp if sp else 1.0
    return resized_from_unsplit(work, unsplit, {TE_CAST_OP: 1.0 / tp, TE_AMAX_OP: 1.0 / tp, TE_TRANSPOSE_OP: 1.0,
                                                TE_SEQUENCE_CAST_OP: sequence, TE_SEQUENCE_AMAX_OP: sequence,
                                                TE_GATHERED_CAST_OP: gathered if sp else 1.0})


def te_fp8_work(work: pd.DataFrame, *, vocab: int | None = None, recipe: str | None = "delayed") -> pd.DataFrame:
    """Work rows of a BF16 step under Transformer Engine's FP8 (``stack="te"``, as Megatron-Core runs it) — a stated
    model, no TE kernel was measured:

    * every linear's GEMM of the forward and backward passes runs at the FP8 tensor-core rate (``fp8`` True), the
      vocabulary projection excepted (kept in BF16, as Megatron does), attention in BF16 (TE's FP8 attention is off
      by default);
    * ``recipe="delayed"`` (the default; scales from the amax history): the casts Megatron-Core's TE layers run
      (:func:`_te_activation_casts`, TE d0067d0): the input of a linear fed by a norm (q, k, v; gate, up: TE's
      ``LayerNormLinear``) is written in FP8 by the fused norm kernel, and its transposed copy, which the
      weight-gradient GEMM reads, by a transpose kernel (:data:`TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT`); the input of a
      linear fed by another kernel (the attention's output projection after the attention kernel, the down
      projection after the activation) and the output gradient of every FP8 linear are cast, with the transpose, by
      kernels of their own (:data:`TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT`);
    * ``recipe="mxfp8"`` (a scale per 32-element block, computed where the block is written; Blackwell-class GPUs):
      the same casts, each writing a row-wise and a column-wise MXFP8 copy
      (:data:`TE_MXFP8_CAST_BYTES_PER_ELEMENT`), the norms' outputs included (their cast is not fused);
    * ``recipe="blockwise"`` (``Float8BlockScaling``, DeepSeek-V3's recipe; NVIDIA Hopper and Blackwell): the casts
      MXFP8 runs, each writing a row-wise and a column-wise copy with an FP32 scale per 1x128 block
      (:data:`TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT`), the weights in 128x128 blocks cast as delayed scaling casts
      them; every FP8 GEMM, the forward one too, with split accumulation (the recipe fixes
      ``use_split_accumulator=True`` for all three; marked in the ``fp8_split`` column);
    * ``recipe="current"`` (per-tensor current scaling): a tensor's scale needs its own maximum before it is cast:
      the same casts as delayed scaling's, each preceded by a kernel reading the tensor for its maximum
      (:data:`TE_AMAX_BYTES_PER_ELEMENT`), but the norms' outputs, whose maximum the norm kernel takes and which are
      cast by a kernel of their own (the norm writes BF16);
    * each FP8 weight is cast, with its transpose, by one kernel moving :data:`TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT`
      bytes per element, with each micro-batch's work here; under Megatron-Core, which keeps TE's FP8 weight cache
      from a model chunk's first micro-batch of the step to its last, the step counts it once
      (:data:`perfmodel.step.parallel.ONCE_PER_STEP_OPS`);
    * ``recipe="nvfp4"`` (TE's ``NVFP4BlockScaling``, NVIDIA Blackwell): the same GEMMs run at the GPU's FP4 tensor-core
      rate (``fp4`` column True; fprop, dgrad and wgrad all in NVFP4, as the recipe runs them, no layer kept in BF16
      beyond the vocabulary projection); the activations and gradients are cast where MXFP8 casts them, each first
      read for its maximum as current scaling reads it (NVFP4's per-tensor scale is the tensor's own maximum), at
      :data:`TE_NVFP4_CAST_BYTES_PER_ELEMENT` in all (the norms' outputs at the cast's
      :data:`TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT`), and each weight at
      :data:`TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT` (16x16 blocks). No FP4 kernel was measured: the FP4 GEMMs are the
      tensor-core GEMM model at the FP4 peak, an extrapolation.

    The weight of a forward GEMM whose rows are the tokens is its ``dim_k × dim_n`` operand."""
    w = work.copy()
    mm = _fp8_gemms(w, vocab) & ~_router_rows(w)
    w["fp8"] = mm
    if recipe == "blockwise":  # every FP8 GEMM, the forward one too, with split accumulation (low_precision_rates)
        w["fp8_split"] = mm
    fp4 = recipe == "nvfp4"
    if fp4:
        w["fp4"] = mm
    casts = _te_activation_casts(w, mm, recipe) if mm.any() else None
    per, op = (TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT, "te_nvfp4_weight_cast") if fp4 else (
        TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT, TE_FP8_WEIGHT_CAST_OP)
    w = _weight_casts(w, per, op)
    grouped = ((w["op"].astype(str) == GROUPED_GEMM_OP) & w["phase"].astype(str).isin(["forward", "backward"])).to_numpy()
    if grouped.any():  # the experts' grouped GEMMs (TE's GroupedLinear): their own casts and weight casts
        w["fp8"] = w["fp8"].to_numpy(bool) | grouped
        if recipe == "blockwise":
            w["fp8_split"] = w["fp8_split"].to_numpy(bool) | grouped
        if fp4:
            w["fp4"] = w["fp4"].to_numpy(bool) | grouped
        casts = pd.concat([c for c in (casts, _te_grouped_casts(w, grouped, recipe, per, op)) if c is not None],
                          ignore_index=True)
    if casts is not None and len(casts):
        w = pd.concat([w, casts[w.columns]], ignore_index=True)
    return w


def _router_rows(w: pd.DataFrame) -> np.ndarray:
    """Rows of a mixture of experts' routing modules (:data:`_ROUTING_MODULES` beside an ``experts`` module):
    Megatron-Core computes them outside Transformer Engine's FP8 linears, at the training precision."""
    if "module" not in w.columns:
        return np.zeros(len(w), dtype=bool)
    mods = w["module"].astype(str)
    experts = {m[: -len(".experts")] for m in pd.unique(mods) if m.endswith(".experts")}
    if not experts:
        return np.zeros(len(w), dtype=bool)
    parent, last = mods.str.rpartition(".")[0], mods.str.rpartition(".")[2]
    return (parent.isin(experts) & last.isin(list(_ROUTING_MODULES))).to_numpy()


def _te_grouped_casts(w: pd.DataFrame, grouped: np.ndarray, recipe: str, weight_per: float, weight_op: str) -> pd.DataFrame:
    """The casts of a mixture of experts' grouped GEMMs under Transformer Engine's FP8 (Megatron-Core's
    ``TEGroupedLinear``): per forward grouped GEMM (``dim_b`` experts, ``dim_m`` tokens each, reduction ``dim_n``,
    ``dim_k`` outputs) its input, written by the token permutation or the activation and so cast, with its transpose,
    by a kernel of its own (:data:`TE_CAST_OP`, ``b·m·n`` elements), the gradient of its output in the backward pass
    (``b·m·k``), and its experts' weights (``b·n·k``, ``weight_op``: once per step under Megatron-Core's weight
    cache); current scaling and NVFP4 read each activation and gradient for its maximum first (:data:`TE_AMAX_OP`)."""
    fwd = w[grouped & (w["phase"].astype(str) == "forward").to_numpy()]
    if not len(fwd):
        return w.iloc[:0]
    b, m, n, k = (fwd[c].to_numpy(float) for c in ("dim_b", "dim_m", "dim_n", "dim_k"))
    cast = _TE_BLOCK_CAST_BYTES.get(recipe, float(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT))
    parts = []
    for n_el, phase in ((b * m * n, "forward"), (b * m * k, "backward")):
        if recipe in ("current", "nvfp4"):
            parts.append(_cast_rows(fwd, TE_AMAX_BYTES_PER_ELEMENT * n_el, TE_AMAX_OP, phase))
        parts.append(_cast_rows(fwd, cast * n_el, TE_CAST_OP, phase))
    parts.append(_cast_rows(fwd, weight_per * b * n * k, weight_op, "forward"))
    return pd.concat(parts, ignore_index=True)


def _trace_step_ops(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference) -> pd.DataFrame:
    import torch

    from perfmodel.features import extract

    dtype = getattr(torch, PRECISION_DTYPES[prec])
    ops = extract(net, shape, batch_size=int(batch_size), per_op=True, optimizer=None if optimizer == "adam-fused" else optimizer,
                  input_dtype=in_dtype, input_high=high, dtype=None if dtype == torch.float32 else dtype, train=not inference)
    # the trace's attrs (the device, the repeated stacks) are not read here, and pandas deep-copies them into every
    # frame derived from this one: dropped, they cost nothing downstream
    ops.attrs = {}
    if inference:
        ops = ops[ops["phase"] == "forward"]
    return _optimizer_kernels(net, ops, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)


def _optimizer_kernels(net, ops: pd.DataFrame, *, batch_size, prec, optimizer, inference) -> pd.DataFrame:
    """The per-op rows ``ops`` of a traced step with the kernels :func:`step_ops` adds for ``optimizer``: the fused
    Adam kernel, and under mixed precision the optimizer's FP32 bytes and the master copies around it."""
    import torch

    if optimizer is None or inference:
        return ops
    dtype = getattr(torch, PRECISION_DTYPES[prec])
    if isinstance(net, str):  # a zoo id: its parameters counted on the meta device
        from perfmodel import zoo

        net = zoo.build(net, device="meta")
    n = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
    size = torch.empty((), dtype=dtype).element_size()

    def kernel(op: str, read: float, written: float, index: int) -> dict:
        return dict(model=ops["model"].iloc[0] if len(ops) else "", batch_size=int(batch_size), phase="optimizer",
                    index=index, op=op, op_class="elementwise", module="", flops=0, bytes_read=read,
                    bytes_written=written, dtype=str(dtype).replace("torch.", ""), input_shapes=str(n),
                    output_shapes=str(n), attributes="", dataflow=((), ()))

    nxt = int(ops["index"].max()) + 1 if len(ops) else 0
    if optimizer == "adam-fused":
        ops = pd.concat([ops, pd.DataFrame([kernel("fused_adam", 4 * size * n, 3 * size * n, nxt)])[ops.columns]],
                        ignore_index=True)
    if size < 4 and n:
        # mixed precision: the optimizer steps FP32 master weights with FP32 states and gradients (what predict_memory
        # counts), so its kernels move FP32 bytes; the half-precision gradients are copied into the masters' FP32
        # ones before the step and the updated masters back into the parameters after it (AMP's casts, and what
        # perfmodel.measure.measure_llm_step times)
        opt = (ops["phase"] == "optimizer").to_numpy()
        ops = ops.copy()
        for c in ("bytes_read", "bytes_written"):
            ops.loc[opt, c] = ops.loc[opt, c].to_numpy(float) * (4 / size)
        last = int(ops["index"].max()) + 1 if len(ops) else 0
        casts = [kernel(MASTER_GRAD_CAST_OP, size * n, 4 * n, last), kernel(MASTER_PARAM_COPY_OP, 4 * n, size * n, last + 1)]
        ops = pd.concat([ops, pd.DataFrame(casts)[ops.columns]], ignore_index=True)
    return ops


#: the kernels of mixed precision around the optimizer (:func:`_trace_step_ops`): the half-precision gradients copied
#: into the FP32 master weights' gradients, the updated masters copied back into the half-precision parameters.
MASTER_GRAD_CAST_OP, MASTER_PARAM_COPY_OP = "master_grad_cast", "master_param_copy"


_MM_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.matmul", "aten._scaled_mm")


def checkpointed_layers(mode: str, n_layers: int) -> np.ndarray:
    """Which transformer layers ``mode`` checkpoints whole (bool per layer): all for ``"full"``, the ``N``-th, ``2N``-th
    … for ``"layer:N"`` (torchtitan counts its layers from 1), none for ``"selective"``."""
    idx = np.arange(n_layers)
    if mode == "full":
        return np.ones(n_layers, bool)
    if isinstance(mode, str) and mode.startswith("layer:"):
        return (idx + 1) % int(mode.split(":")[1]) == 0
    return np.zeros(n_layers, bool)


def check_checkpointable(lay, mode, name: str) -> None:
    """Refuse activation checkpointing ``mode`` for a model whose layout (:func:`model_layout`) is not one flat stack
    of layers: none at all, or blocks nested in stages (a ResNet's ``layers.0.*``, ``layers.1.*`` …). The step time
    charges the recomputed forward pass and the memory the checkpointed layers' inputs; both are modelled per layer of
    one stack, and for a nested one they would disagree (the recompute of every stage against the memory of one)."""
    if not mode:
        return
    nested = bool(lay.block_prefix) and any(part.isdigit() for part in lay.block_prefix.split("."))
    if lay.n_layers and not nested:
        return
    what = (f"its blocks are nested in stages ({lay.block_prefix.rsplit('.', 1)[0]}.0.*, .1.*, …)" if nested
            else "it has no stack of repeated layers")
    raise ValueError(f"activation_checkpointing={mode!r}: perfmodel models checkpointing per layer of one stack of "
                     f"identical layers (a transformer's), and {name} is not one: {what}. Pass "
                     "activation_checkpointing=False, or a model whose layers form one ModuleList.")


def recompute_mask(mode: str, rows: pd.DataFrame, layer: np.ndarray, n_layers: int) -> np.ndarray:
    """Forward rows a checkpointing ``mode`` (:func:`checkpointing_mode`) recomputes in the backward pass:
    :func:`selective_recompute_mask` for ``"selective"``, :func:`core_attention_mask` for ``"attention"``; every
    forward row of a checkpointed layer (:func:`checkpointed_layers`) otherwise."""
    if mode == "selective":
        return selective_recompute_mask(rows, layer, n_layers)
    if mode == "attention":
        return core_attention_mask(rows, layer, n_layers)
    fwd = (rows["phase"].astype(str).to_numpy() == "forward") & (layer >= 0) & (layer < n_layers)
    ck = checkpointed_layers(mode, n_layers)
    return fwd & ck[np.clip(layer, 0, max(n_layers - 1, 0))] if n_layers else fwd & False


def selective_recompute_mask(rows: pd.DataFrame, layer: np.ndarray, n_layers: int) -> np.ndarray:
    """Forward rows (per-op or work rows with ``op`` and ``phase``) that selective checkpointing recomputes: inside a
    layer (``0 <= layer < n_layers``), every forward operator but the fused attention kernels and the odd-numbered
    matmuls of the layer (1st, 3rd, …), which are kept (:func:`checkpointing_mode`)."""
    op = rows["op"].astype(str).to_numpy()
    fwd = (rows["phase"].astype(str).to_numpy() == "forward") & (layer >= 0) & (layer < n_layers)
    is_mm = np.isin(op, _MM_OPS)
    kept = np.array(["attention" in o for o in op], dtype=bool)
    count: dict = {}
    for i in np.flatnonzero(fwd & is_mm):
        count[layer[i]] = count.get(layer[i], 0) + 1
        kept[i] = count[layer[i]] % 2 == 1
    return fwd & ~kept


#: the attention module itself (not its projections): the end of a module path (BERT's and RoBERTa's is
#: ``attention.self``).
_ATTENTION_MODULE = re.compile(r"(^|\.)(attn|attention|self_attn|selfattention|self_attention|core_attention|attention\.self)$",
                               re.IGNORECASE)


def core_attention_mask(rows: pd.DataFrame, layer: np.ndarray, n_layers: int) -> np.ndarray:
    """Forward rows (per-op or work rows with ``op``, ``phase`` and ``module``, in trace order) that Megatron's selective
    recomputation recomputes (``"attention"``, :func:`checkpointing_mode`): inside each layer, the operators of the
    attention module itself — not of its query/key/value and output projections, which are its children — from its
    first matmul (the query-key product) or fused attention kernel to its last (the product with the values), both
    included: the scaling, mask, softmax and attention dropout between them. The rotary embeddings and head reshapes
    before the first and the head merge after the last are kept."""
    op = rows["op"].astype(str).to_numpy()
    in_attn = _matches(rows["module"].astype(str), _ATTENTION_MODULE)
    fwd = (rows["phase"].astype(str).to_numpy() == "forward") & (layer >= 0) & (layer < n_layers) & in_attn
    core = fwd & (np.isin(op, _MM_OPS) | np.array(["attention" in o for o in op], dtype=bool))
    out = np.zeros(len(rows), dtype=bool)
    if n_layers and not core.any() and ((rows["phase"].astype(str).to_numpy() == "forward") & (layer >= 0)
                                        & (layer < n_layers)).any():
        raise ValueError("activation_checkpointing='attention' recomputes each layer's core attention, and no layer of "
                         "this model has one perfmodel can find: a module named attn, attention, self_attn, "
                         "self_attention or attention.self running a matmul or a fused attention kernel. Use 'full' or "
                         "'selective' instead.")
    for i in np.unique(layer[core]):
        at = np.flatnonzero(core & (layer == i))
        lo, hi = at[0], at[-1] + 1
        out[lo:hi] = fwd[lo:hi] & (layer[lo:hi] == i)
    return out


_SPLIT_MODULE = re.compile(r"(^|\.)(attn|attention|self_attn|selfattention|mlp|ffn|feed_forward|feedforward|intermediate|experts)(\.|$)",
                           re.IGNORECASE)


@dataclasses.dataclass
class ModelLayout:
    """Where the transformer layers of a module are and what tensor parallelism splits.

    ``block_prefix``: module path of the repeated layers in the per-op frame (``"model.transformer.h"``);
    ``n_layers``; ``hidden``, ``heads``, ``ffn``, ``vocab`` from the config (``None`` when unknown);
    ``params``: parameter count; ``param_layer``: for each parameter name, its layer index (-1 before the layers,
    ``n_layers`` after); ``param_split``: whether tensor parallelism splits it; ``param_numel``; ``tied``: input and
    output embeddings share their weight; ``kv_heads``: key/value heads (grouped-query attention; ``heads`` when the
    config does not say); ``experts``: routed experts of a mixture-of-experts model (``None`` for a dense one),
    ``experts_per_token``: how many of them a token is routed to (``None`` when the config does not say) and
    ``expert_ffn``: a routed expert's width (``moe_intermediate_size``, else ``intermediate_size``; ``None`` for a
    dense model); ``expert_groups`` and ``group_topk``: group-limited routing (DeepSeek's ``n_group`` groups of
    experts, ``topk_group`` of them open to each token; ``None`` without).
    """

    block_prefix: str
    n_layers: int
    hidden: int | None
    heads: int | None
    ffn: int | None
    vocab: int | None
    tied: bool
    param_numel: dict
    param_layer: dict
    param_split: dict
    kv_heads: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    expert_ffn: int | None = None
    expert_groups: int | None = None
    group_topk: int | None = None

    @property
    def params(self) -> int:
        return int(sum(self.param_numel.values()))


def _cfg_get(cfg, *names):
    for n in names:
        v = getattr(cfg, n, None) if not isinstance(cfg, dict) else cfg.get(n)
        if v is not None:
            return int(v) if not isinstance(v, bool) else v
    return None


def _layer_prefix(names) -> tuple[str, list[int]]:
    """The dotted prefix followed by an integer index that carries the most distinct indices (the layer list)."""
    prefix, layers = _layer_prefix_of(tuple(str(n) for n in names))  # memoised: a step's modules are asked often
    return prefix, list(layers)


@functools.lru_cache(maxsize=256)
def _layer_prefix_of(names: tuple) -> tuple[str, tuple]:
    found: dict[str, set] = {}
    for name in names:
        parts = str(name).split(".")
        for i, part in enumerate(parts[1:], 1):
            if part.isdigit():
                found.setdefault(".".join(parts[:i]), set()).add(int(part))
    if not found:
        return "", ()
    prefix = max(found, key=lambda k: (len(found[k]), -k.count(".")))
    return prefix, tuple(sorted(found[prefix]))


def _below_layer(names, prefix: str) -> list[str]:
    """Per module name, its path below the layer that holds it (``"self_attn.q_proj"`` of
    ``"model.layers.3.self_attn.q_proj"`` under the prefix ``"model.layers"``, :func:`_layer_prefix`); ``""`` outside
    the layers and for a layer itself."""
    head = prefix + "."
    codes, distinct = pd.factorize(np.asarray(names, dtype=object), use_na_sentinel=False)  # each name split once
    below = []
    for m in distinct:
        rest = m[len(head):].split(".", 1) if prefix and m.startswith(head) else []
        below.append(rest[1] if len(rest) == 2 else "")
    return [below[c] for c in codes]


def model_and_layout(model, input_shape=None, input_dtype=None):
    """The module of ``model`` (any form :func:`perfmodel.predict_step_time` takes; a zoo id is built on the meta device),
    its input shape, input dtype, vocabulary size and name, and its :func:`model_layout`."""

    net, shape, in_dtype, vocab, name = model_input(model, input_shape, input_dtype)
    if isinstance(net, str):  # a zoo id: built on the meta device
        from perfmodel import zoo

        net = zoo.build(net, device="meta")
    return net, shape, in_dtype, vocab, name, model_layout(net)


def model_layout(net) -> ModelLayout:
    """:class:`ModelLayout` of a module (a Hugging Face model carries its config: hidden size, heads, vocabulary).

    Memoised (:func:`perfmodel.step.step_time.module_memo`); the layout returned is a copy, so changing it
    changes nothing for the next caller."""
    from perfmodel.step.trace import module_fingerprint, module_memo

    key = ("layout", module_fingerprint(net))
    memo = module_memo(net)
    if key not in memo:
        memo[key] = _model_layout(net)
    lay = memo[key]  # its dicts hold names, ints and bools: copies of the dicts are a deep copy
    return dataclasses.replace(lay, param_numel=dict(lay.param_numel), param_layer=dict(lay.param_layer),
                               param_split=dict(lay.param_split))


def _model_layout(net) -> ModelLayout:
    cfg = next((getattr(mod, "config") for mod in net.modules() if getattr(mod, "config", None) is not None), None)
    named = [(n, p) for n, p in net.named_parameters(remove_duplicate=False)]
    seen = {}
    tied = False
    for n, p in named:
        key = id(p)
        if key in seen:
            tied = True
        seen.setdefault(key, n)
    names = [n for n, p in named if seen[id(p)] == n]
    numel = {n: int(p.numel()) for n, p in named if seen[id(p)] == n}
    prefix, idx = _layer_prefix(names)
    hidden = _cfg_get(cfg, "hidden_size", "n_embd", "d_model") if cfg is not None else None
    heads = _cfg_get(cfg, "num_attention_heads", "n_head", "num_heads") if cfg is not None else None
    ffn = (_cfg_get(cfg, "intermediate_size", "n_inner", "ffn_dim", "d_ff") if cfg is not None else None) or (4 * hidden if hidden else None)
    vocab = _cfg_get(cfg, "vocab_size") if cfg is not None else None
    kv_heads = (_cfg_get(cfg, "num_key_value_heads", "n_head_kv", "num_kv_heads") if cfg is not None else None) or heads
    experts = (_cfg_get(cfg, "num_local_experts", "num_experts", "n_routed_experts") if cfg is not None else None) or None
    per_token = (_cfg_get(cfg, "num_experts_per_tok", "moe_topk") if cfg is not None else None) or None
    expert_ffn = (_cfg_get(cfg, "moe_intermediate_size", "intermediate_size") if cfg is not None else None) or None
    groups = (_cfg_get(cfg, "n_group") if cfg is not None else None) or None
    group_topk = (_cfg_get(cfg, "topk_group") if cfg is not None else None) or None
    grouped = isinstance(groups, int) and isinstance(group_topk, int) and 0 < group_topk < groups
    layer, split = {}, {}
    first = idx[0] if idx else 0
    for n in names:
        if prefix and n.startswith(prefix + "."):
            i = int(n[len(prefix) + 1:].split(".")[0]) - first
            layer[n] = i
            split[n] = bool(_SPLIT_MODULE.search(n[len(prefix) + 1:]))
        else:
            before = not prefix or names.index(n) < next((k for k, m in enumerate(names) if m.startswith(prefix + ".")), len(names))
            layer[n] = -1 if before else len(idx)
            shape = dict(named)[n].shape
            split[n] = bool(vocab) and vocab in tuple(shape)
    return ModelLayout(block_prefix=prefix, n_layers=len(idx), hidden=hidden, heads=heads, ffn=ffn, vocab=vocab, tied=tied,
                       param_numel=numel, param_layer=layer, param_split=split, kv_heads=kv_heads,
                       experts=int(experts) if isinstance(experts, int) and experts > 1 else None,
                       experts_per_token=int(per_token) if isinstance(per_token, int) and per_token > 0 else None,
                       expert_ffn=(int(expert_ffn) if isinstance(experts, int) and experts > 1
                                   and isinstance(expert_ffn, int) and expert_ffn > 0 else None),
                       expert_groups=int(groups) if grouped and isinstance(experts, int) and experts > 1 else None,
                       group_topk=int(group_topk) if grouped and isinstance(experts, int) and experts > 1 else None)


def op_layer(ops: pd.DataFrame, n_layers: int) -> np.ndarray:
    """Layer index of each per-op row from its module path: -1 for modules the forward pass runs before the first
    layer (embeddings), ``n_layers`` for the others outside the layers (final norm, head, loss, optimizer)."""
    # each distinct module path is parsed once (a step of a deep model has tens of thousands of rows, a few thousand
    # paths); the rows take their path's answer through its code
    codes, names = pd.factorize(ops["module"].astype(str))
    prefix, idx = _layer_prefix(names)
    out = np.full(len(ops), n_layers, dtype=int)
    if not prefix or not idx:
        return out
    pat = re.compile(r"^" + re.escape(prefix) + r"\.(\d+)(\.|$)")
    matches = [pat.match(n) for n in names]
    name_inside = np.array([m is not None for m in matches], dtype=bool)
    name_layer = np.array([int(m.group(1)) - idx[0] if m is not None else 0 for m in matches], dtype=int)
    inside = name_inside[codes]
    out[inside] = name_layer[codes][inside]
    fwd = (ops["phase"] == "forward").to_numpy()
    first = int(np.argmax(inside & fwd)) if (inside & fwd).any() else len(ops)
    pre = set(codes[:first][fwd[:first]].tolist())
    name_pre = np.array([i in pre and n != "" for i, n in enumerate(names)], dtype=bool)
    out[(~inside) & name_pre[codes]] = -1
    return out


def loss_rows(rows: pd.DataFrame, n_layers: int) -> np.ndarray:
    """Rows (per-op, work or saved-tensor rows with ``module``; ``phase`` when present) of the loss: after the layers
    (:func:`op_layer`) and run by the model itself rather than a submodule (a transformers model computes its loss in
    its own ``forward``: the cast of the logits, log-softmax, negative log-likelihood and their gradients) or by no
    module (the loss's reduction). The optimizer's rows are not the loss's."""
    mod = rows["module"].astype(str).to_numpy()
    after = op_layer(rows if "phase" in rows.columns else rows.assign(phase="forward"), n_layers) >= n_layers
    out = after & np.array(["." not in m for m in mod], dtype=bool)
    if "phase" in rows.columns:
        out &= rows["phase"].astype(str).to_numpy() != "optimizer"
    return out


def compile_regions(rows: pd.DataFrame, n_layers: int, scope: str) -> np.ndarray:
    """The compiled graph of each row (per-op or work rows with ``module`` and ``phase``) when ``torch.compile``
    compiles the part ``scope`` of a step (:data:`perfmodel._workload.COMPILE_SCOPES`): ``"model"`` one graph (0) for
    every row; ``"layers"`` layer ``i``'s rows in graph ``i`` and every other row eager (-1); ``"layers+loss"`` the same
    with the loss's rows (:func:`loss_rows`) in a graph of their own (``n_layers``). A scope other than ``"model"`` on
    a model without transformer layers is a ``ValueError``."""
    if scope == "model":
        return np.zeros(len(rows), dtype=int)
    if not n_layers:
        raise ValueError(f"compile_scope={scope!r} compiles each transformer layer on its own, and perfmodel finds no "
                         "repeated layers in this model; pass compile_scope='model' (the whole step compiled).")
    layer = op_layer(rows, n_layers)
    out = np.where((layer >= 0) & (layer < n_layers), layer, -1)
    if scope == "layers+loss":
        out = np.where(loss_rows(rows, n_layers), n_layers, out)
    return out


def context_parallel_work(work: pd.DataFrame, cp: int, lay: ModelLayout) -> pd.DataFrame:
    """Work rows of one context-parallel rank (traced at ``s / cp`` tokens): each fused attention kernel attends its
    ``s / cp`` queries to the keys of the whole sequence (ring attention, load-balanced: ``1/cp`` of the causal work
    of the sequence, ``cp`` times the traced shard's), so its FLOPs and key length grow ``cp``-fold and it reads the
    whole sequence's K and V (the ``kv_heads / (heads + kv_heads)`` share of its traced bytes, ``cp``-fold). Every
    other operator works on the rank's tokens, as traced."""
    w = work.copy()
    attn = w["op"].astype(str).str.contains("scaled_dot_product").to_numpy() & (w["op_class"] == "matmul").to_numpy()
    if attn.any():
        h, kv = float(lay.heads or 1), float(lay.kv_heads or lay.heads or 1)
        share = kv / (h + kv)
        w.loc[attn, "flops"] = w.loc[attn, "flops"] * cp
        w.loc[attn, "dim_n"] = w.loc[attn, "dim_n"] * cp
        w.loc[attn, "bytes"] = w.loc[attn, "bytes"] * ((1 - share) + share * cp)
        w.loc[attn, "tiles"] = w.loc[attn, "tiles"] * cp
    return w


#: op of the memory-bound kernels PyTorch's ring attention runs around its attention kernels (:func:`ring_attention_work`)
RING_ATTENTION_OP = "ring_attention_merge"


def _ring_bytes(n_out: float, n_kv: float, cp: int, size: int, compiled: bool) -> dict:
    """Bytes of each memory-bound kernel of one context-parallel rank's ring attention per pass (forward, backward):
    lists of per-kernel bytes (:func:`ring_attention_work`)."""
    fwd = [4 * n_kv * size] * (cp - 1)  # K and V concatenated for each send
    bwd = [4 * n_kv * size] * (cp - 1)
    if compiled:
        fwd += [(8 + size) * n_out] * (cp - 1)  # each merge: FP32 running output and the step's output in, FP32 out
        # each step: dK and dV added into the FP32 buffer the ring carries (written flat for the send), dQ into its own
        bwd += [2 * (8 + size) * n_kv + (8 + size) * n_out] * cp
    else:
        fwd += [(40 + size) * n_out] * (cp - 1) + [2 * (4 + size) * n_out]  # the merges' kernels; the casts at both ends
        bwd += [(40 + 2 * size) * n_kv + (12 + size) * n_out] * cp + [4 * n_out + 8 * n_kv]  # the adds, copies; zeros
    bwd.append((4 + size) * n_out + (8 + 2 * size) * n_kv)  # dQ, dK, dV cast back from FP32
    return {"forward": fwd, "backward": bwd}


def ring_attention_work(work: pd.DataFrame, cp: int, kv_ratio: float, size: int, compiled: bool) -> pd.DataFrame:
    """``work`` (after :func:`context_parallel_work`) with the memory-bound kernels PyTorch's ring attention
    (``torch.distributed.tensor.experimental.context_parallel``, as torchtitan runs it) adds around each attention
    kernel of a rank, each row after its attention's: it runs the attention as ``cp`` kernels, one per block of K and V
    the ring brings, and keeps the running result in FP32 (``_ContextParallelOptions.convert_to_f32``, on by default).

    With ``N`` the elements of the rank's attention output (its queries times the head dimension, its heads) and
    ``M = kv_ratio·N`` those of its K (and of V, at the heads the kernel takes), ``s`` the activations' bytes per
    element: in the forward pass ``cp − 1`` concatenations of K and V for the send (``4·M·s`` bytes each) and ``cp − 1``
    merges of a block's output into the running one (``_SDPAMerger``: ``out − sigmoid(lse_b − lse)·(out − out_b)``);
    in the backward pass ``cp − 1`` concatenations of K and V, and per block the gradients of K and V added into the
    FP32 buffer that travels the ring (and concatenated flat for the send) and that of Q into its own, then the three
    cast back. ``compiled`` (torchtitan compiles each layer, the ring with it): each merge one kernel, ``(8 + s)·N``
    bytes, each backward block ``2·(8 + s)·M + (8 + s)·N``; eager: each operator its own kernel, a merge ``(40 + s)·N``
    (the cast to FP32, the difference, the product, the update, and on half the blocks the round-robin's
    concatenation of the updated half), a backward block ``(40 + 2s)·M + (12 + s)·N``, and the casts and zero-fills
    at the ends. Read from PyTorch's ``_templated_ring_attention`` and ``_templated_ring_attention_backward``
    (torch/distributed/tensor/experimental/_attention.py); nothing measured. The K and V exchange itself is
    communication (:mod:`perfmodel.step.parallel`)."""
    if cp <= 1:
        return work
    attn = np.flatnonzero(work["op"].astype(str).str.contains("scaled_dot_product").to_numpy()
                          & (work["op_class"] == "matmul").to_numpy())
    if not len(attn):
        return work
    phases, dim_m = work["phase"].astype(str).to_numpy(), work["dim_m"].to_numpy(float)
    dim_k = work["dim_k"].to_numpy(float)
    src, nbytes = [], []
    for i in attn:
        n_out = float(dim_m[i]) * float(dim_k[i])
        b = _ring_bytes(n_out, kv_ratio * n_out, int(cp), int(size), bool(compiled)).get(phases[i], [])
        src += [i] * len(b)
        nbytes += b
    src = np.asarray(src, dtype=int)
    # each kernel a copy of its attention's row with the fields of the elementwise op that moves its bytes
    fields = np.array([_elementwise_fields(b, b / 12.0, float(dim_k[i])) for b, i in zip(nbytes, src)],
                      dtype=float).reshape(-1, 7)
    extra = work.iloc[src].reset_index(drop=True)
    extra = extra.assign(**dict(zip(("flops", "bytes", "tiles", "dim_m", "dim_n", "dim_k", "dim_b"), fields.T)),
                         op_class="elementwise", op=RING_ATTENTION_OP)
    if "fp8" in extra.columns:
        extra["fp8"] = False
    extra = extra.astype(work.dtypes.to_dict())
    order = np.argsort(np.concatenate([np.arange(len(work), dtype=float), src + 0.5]), kind="stable")
    return pd.concat([work, extra], ignore_index=True).iloc[order].reset_index(drop=True)

"""One training step of any PyTorch model on any GPU: the per-operator model summed over the step's operators.

:func:`predict_step_time` extracts the aten operators of one training step (forward, backward and, when asked for, the
optimizer step) from shapes alone (:func:`perfmodel.features.extract` with ``per_op=True``, on the meta device for
large models), maps each to an operator class with its shape (:func:`work_from_ops`), predicts each operator's latency
on the GPU from the GPU's spec sheet (:func:`perfmodel.step.op_latency.default_op_model`: roofline × efficiency
learned on NeuSight's microbenchmarks of its five training GPUs) and sums the kernel times — kernels of one eager
training step run back to back on one stream, so the launch overhead each isolated microbenchmark carries is left out
(:meth:`perfmodel.step.op_latency.OpLatencyModel.predict_in_stream`).

Prediction interval: split-conformal over GPUs. Each of the five training GPUs is held out in turn, its microbenchmarks
predicted by a model fitted on the other four, and the nonconformity of that GPU is ``|log(Σ predicted / Σ measured)|``
over all its operators (what a sum of operators feels). The interval is ``[t·e^{−q}, t·e^{q}]`` with ``q`` the
``⌈(1−alpha)(n+1)⌉``-th smallest of the ``n = 5`` scores (the largest when that rank exceeds ``n``, and the row's
``interval`` says so): it covers ``1 − alpha`` of new GPUs if a new GPU behaves like one more draw of the training GPUs.

This module is the face of a layered model (:mod:`perfmodel.models` lists the layers): it checks the arguments and
hands over to one GPU's step (:mod:`perfmodel.step.one_gpu`) or a parallel layout's
(:mod:`perfmodel.step.parallel`), each built on the trace (:mod:`perfmodel.step.trace`) and the kernel times
(:mod:`perfmodel.step.kernels`); memory comes from :mod:`perfmodel.step.memory`.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from perfmodel._run import Parallelism, keyword_run
from perfmodel.step.collectives import resolve_interconnect
from perfmodel.step.kernels import gpu_specs
from perfmodel.step.memory import memory_frame
from perfmodel.step.one_gpu import _recompute_fraction, add_recompute, recompute_comm, single_gpu_rows
from perfmodel.step.parallel import parallel_rows
from perfmodel.step.strategy import check_async_tp, check_stack_framework, parse_strategy, pipeline_virtual_stages
from perfmodel.step.trace import Workload, accepts_workload, check_step_args, checkpointing_mode

# the layers' public names, re-exported: this module is the step-time model's face
from perfmodel.step.kernels import (FUSED_ATTENTION_EFFICIENCY, HALF_MODEL_PRECISIONS, clear_trace_cache, conformal_scores,  # noqa: E402,I001
                                      fused_attention_floor_s, gpu_extrapolation, half_model_applies)
from perfmodel.step.op_latency import step_design
from perfmodel.step.trace import (ATTN_IMPLEMENTATIONS, CHECKPOINTING_MODES, FP8_CAST_COMPILED_BYTES_PER_ELEMENT,
                                       FUSED_ADAM_PASSES, OPTIMIZERS, PRECISION_DTYPES, attention_implementation,
                                       attention_kernel, attention_note,
                                       checkpointed_layers, compiled_work, fp8_work, module_fingerprint, module_memo,
                                       recompute_mask, selective_recompute_mask, work_from_ops, STACKS, stack_of,
                                       resolve_stack, fp8_recipe_of, compile_scope_of)

__all__ = ["Workload", "work_from_ops", "predict_step_time", "with_memory", "OutOfMemoryWarning", "add_recompute", "step_design", "half_model_applies", "HALF_MODEL_PRECISIONS", "FUSED_ATTENTION_EFFICIENCY", "fused_attention_floor_s", "compiled_work", "fp8_work", "checkpointing_mode", "CHECKPOINTING_MODES", "selective_recompute_mask", "checkpointed_layers", "recompute_mask", "PRECISION_DTYPES", "FP8_CAST_COMPILED_BYTES_PER_ELEMENT", "OPTIMIZERS", "FUSED_ADAM_PASSES", "conformal_scores",
           "clear_trace_cache", "module_fingerprint", "attention_implementation", "ATTN_IMPLEMENTATIONS", "module_memo", "gpu_extrapolation",
           "STACKS", "STACK_BASIS", "resolve_stack", "step_frame", "step_rows", "keyword_run", "predict_frame", "memory_rows"]


@accepts_workload("input_shape", "batch_size", "input_dtype", "input_high", "precision", "optimizer", "inference", "compile",
                  "activation_checkpointing", "stack")
def predict_step_time(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high: int | None = None,
                      precision: str = "fp32", optimizer: str | None = "sgd-momentum", alpha: float = 0.2,
                      inference: bool = False, n_gpus: int = 1, strategy: str = "dp", micro_batches: int | None = None,
                      interconnect=None, overlap_grad_reduce: bool = True,
                      activation_checkpointing: bool | str = False, gpus_per_node: int = 8, compile: bool = False,
                      async_tp: bool = False, pipeline_schedule: str = "1f1b", stack: str | None = None,
                      nics_per_node: int | None = None, framework: str = "pytorch", distributed_optimizer: bool | None = None,
                      sequence_parallel: bool | None = None, virtual_stages: int | None = None) -> pd.DataFrame:
    """Predicted time of one training step of ``model`` on each GPU, from the GPU's spec sheet.

    Parameters
    ----------
    model : str, torch.nn.Module, dict, transformers.PretrainedConfig or Workload
        A zoo id, ``"package.module:Class"``, a module (built on ``meta`` is fine), or a Hugging Face config (built on
        meta from the config, never downloaded; token inputs and the causal-LM / MLM loss on labels = inputs).
        A :class:`perfmodel.Workload` gives the step's fields once (a keyword that is also given must agree).
    gpus : str, GPUSpec or sequence of them
        Catalog ids or device names (``"H100"``, ``"NVIDIA_H100_80GB_HBM3"``, ``"A100 80GB PCIe"``), or
        :class:`perfmodel.datasets.GPUSpec` for a GPU that is not in the catalog.
    input_shape : tuple of int
        One sample without the batch dimension (``(3, 32, 32)`` default for zoo CNNs; ``(seq_len,)`` for token models).
    batch_size : int
        Samples per step; with ``n_gpus > 1`` the **global** batch over all GPUs.
    input_dtype : torch.dtype, optional
        ``torch.long`` for token models (set for Hugging Face configs); default float inputs.
    input_high : int, optional
        Exclusive upper bound of token ids (default: the config's vocabulary size).
    precision : {"fp32", "tf32", "bf16", "fp16", "fp8"}
        Tensor precision; TF32/BF16/FP16 run matmuls and convolutions at the GPU's tensor-core rate (an error where the
        GPU has none). ``"bf16"``/``"fp16"`` is mixed-precision training: BF16 compute and activations, FP32 master
        weights and optimizer states (:func:`perfmodel.predict_memory`). ``"fp8"``: a BF16 step whose linear layers
        run as torchao's ``Float8Linear`` (:func:`fp8_work`; a stated extrapolation, Hopper/Ada only). The
        efficiencies were learned on FP32 microbenchmarks: other precisions extrapolate, with a warning.
    optimizer : {"sgd-momentum", "adam", "adam-fused", None}
        Include one optimizer step: PyTorch's ``foreach`` implementation, or ``"adam-fused"``, one fused kernel moving
        :data:`FUSED_ADAM_PASSES` × the parameter bytes (apex / Megatron-LM / torch ``fused=True``); ``None`` is
        forward + backward only (the step NeuSight's single-GPU labels time). In half precision the optimizer steps
        FP32 master weights with FP32 states and gradients (their bytes), the gradients copied into the masters' and
        the masters back into the parameters by a kernel each (AMP's casts; under FSDP the collectives' copy-ins: the
        unsharded gradients cast for the reduce-scatter, the FP32 shard cast for each all-gather; Megatron accumulates
        its FP32 main gradients in the weight-gradient GEMMs: no gradient copy).
    alpha : float in (0, 1)
        Miss rate of the interval (see the module docstring; with five calibration GPUs, ``alpha < 1/6`` gives the
        widest score).
    inference : bool
        Predict one forward pass in evaluation mode (dropout off) instead of a training step; needs ``optimizer=None``.
    n_gpus : int
        GPUs training together; 1 (default) is the single-GPU step above, unchanged.
    strategy : str or dict
        With ``n_gpus > 1``: ``"dp"`` data parallel (DDP's bucketed gradient all-reduce), ``"fsdp"`` fully sharded data
        parallel (ZeRO-3), ``"tp"`` Megatron tensor parallel, or ``"pp"`` 1F1B pipeline parallel over all the GPUs
        (:mod:`perfmodel.step.parallel`); or a Megatron combination with each factor's degree, ``"dp2-tp2-pp2"``,
        ``"tp4-pp2"``, ``"dp-tp2"`` (the factor without a degree takes the GPUs the others leave) or
        ``{"dp": 2, "tp": 2}``, whose degrees multiply to ``n_gpus`` (:func:`perfmodel.step.parallel.parse_strategy`);
        torchtitan's layouts: ``"fsdp32-tp8"`` (2D), ``"fsdp8-tp8-pp8"`` (3D), ``"fsdp4-cp2"`` or
        ``"fsdp2-cp2-tp8-pp8"`` (context parallel, with fsdp).
    micro_batches : int, optional
        Micro-batches per step: the pipeline's ``m`` for ``"pp"``, gradient-accumulation steps for the others.
        Default: with a pipeline, one sequence per micro-batch (Megatron's and torchtitan's default micro-batch size;
        :meth:`perfmodel.Parallelism.with_micro_batches`); otherwise 1.
    pipeline_schedule : {"1f1b", "interleaved-1f1b"}
        With pipeline parallelism: 1F1B, or the interleaved 1F1B schedule with ``virtual_stages`` model chunks per
        rank (:func:`perfmodel.step.parallel.pipeline_time`).
    virtual_stages : int, optional
        Model chunks per pipeline rank with ``"interleaved-1f1b"`` (default 2, torchtitan's; Megatron's recipes run 2
        to 8).
    framework : {"pytorch", "megatron"}, default "pytorch"
        How the layout runs (:func:`perfmodel.step.strategy.resolve_execution`): PyTorch DDP / FSDP2 as torchtitan
        runs them, or Megatron-Core — the distributed optimizer (optimizer states sharded over the data- and
        context-parallel ranks, gradients reduce-scattered and parameters all-gathered in buckets under compute),
        sequence parallelism with tensor parallelism, FP32 main gradients. ``strategy`` spells its data-parallel
        factor ``dp`` (``"dp2-tp4-pp8"``, ``"dp2-cp2-tp8-pp8"``).
    distributed_optimizer : bool, optional
        Megatron's distributed optimizer; default on with ``framework="megatron"`` (``False``: Megatron-LM before it,
        as Narayanan et al., SC 2021 ran), refused with ``"pytorch"`` (shard with ``fsdp``).
    sequence_parallel : bool, optional
        Tensor-parallel ranks split the norms, dropouts and the activations between the split blocks along the
        sequence; default on with ``"megatron"`` and ``tp > 1``, and with ``"pytorch"`` under ``fsdp`` with ``tp``
        (torchtitan's 2D).
    async_tp : bool, default False
        Asynchronous tensor parallelism (torchtitan's, with ``torch.compile``): each tensor-parallel collective of a
        layer overlapped with its matmul, one chunk of ``1/tp`` exposed; needs a ``tp`` factor, and under
        ``framework="pytorch"`` ``compile=True`` (a compiler pass: refused without, as torchtitan refuses it).
    interconnect : str, Interconnect or dict, optional
        Link between the GPUs: ``"nvlink"``, ``"pcie4"``, ``"infiniband-ndr"`` ... (:data:`perfmodel.step.parallel.INTERCONNECTS`)
        or an :class:`perfmodel.step.parallel.Interconnect`; default the GPU's own link from the catalog (NVLink,
        Infinity Fabric, else its PCIe) inside a node and, when the layout spans nodes, its reference system's network
        between them, said in ``basis`` (:func:`perfmodel.step.strategy.default_network`: for Hopper a 400 Gb/s NDR
        NIC per GPU, as DGX H100).
        A link per level, ``{"intra": "nvlink", "inter": "infiniband-ndr"}``: a process group inside one node of
        ``gpus_per_node`` GPUs uses ``"intra"``, one spanning nodes ``"inter"`` (each GPU's NIC;
        :func:`perfmodel.step.parallel.crosses_nodes`); or a link per group ``{"tp": ..., "pp": ..., "dp": ...}``.
    gpus_per_node : int, default 8
        GPUs per node, for the per-level ``interconnect``.
    nics_per_node : int, optional
        NICs per node, each on its own rail, for the per-level ``interconnect``: a group that spans nodes carries its
        collectives over its share of them (:func:`perfmodel.step.strategy.rail_link`), never faster than the node's
        own link. None (default): one per GPU when the ``"inter"`` link is InfiniBand (the rail-optimised HGX / DGX
        fabrics, :data:`perfmodel.step.strategy.RAIL_FABRICS`); on other links one NIC carries each group that leaves
        its node.
    compile : bool, default False
        ``torch.compile``: every chain of memory-bound operators between two GEMMs runs as one fused kernel
        (:func:`compiled_work`); the same as ``stack="compile"``.
    stack : {"eager", "compile", "te", "liger"}, optional
        The kernel family the run uses, said in ``basis``: ``"eager"`` (default; PyTorch's kernels), ``"compile"``
        (``torch.compile``) or ``"te"`` (NVIDIA Transformer Engine's fused modules, as Megatron-core runs them:
        :func:`perfmodel.step.trace.te_ops` — fused norms, MLP activation, rotary embedding and cross-entropy,
        cuDNN fused attention at its published forward and backward rates on Hopper (FlashAttention-3's paper); a
        stated model, no TE kernel was measured) or ``"liger"`` (eager PyTorch with Liger Kernel's fused norms,
        gated-MLP activation, rotary embedding and fused linear cross-entropy: ``te_ops(family="liger")``; its memory
        too, see :func:`perfmodel.predict_memory`).
    overlap_grad_reduce : bool
        ``"dp"``: gradient buckets are all-reduced while the backward pass runs (PyTorch DDP); ``False`` all-reduces
        after the backward pass (Megatron-LM's default).
    activation_checkpointing : bool or {"full", "selective", "attention", "layer", "layer:N"}
        ``True`` / ``"full"``: keep only each layer's input and recompute the forward pass during the backward pass
        (``torch.utils.checkpoint``, Megatron's full recompute): one more forward pass per micro-batch on every GPU,
        counted in ``backward_s`` (where it runs) and in ``step_time_s`` (:func:`add_recompute`). ``"selective"``:
        torchtitan's per-operator policy (:func:`checkpointing_mode`): only the forward operators it does not keep are
        recomputed (with ``framework="megatron"``: Megatron's, as ``"attention"``). ``"attention"``: Megatron's
        selective recomputation, each layer's core attention recomputed (:func:`checkpointing_mode`). ``"layer"`` /
        ``"layer:N"``: torchtitan's per-layer policy, every ``N``-th layer (default 2) checkpointed whole. The memory
        it saves is :func:`perfmodel.predict_memory`'s.

    Returns
    -------
    DataFrame
        One row per GPU: ``model``, ``gpu``, ``batch_size``, ``precision``, ``optimizer``, ``step_time_s``,
        ``lower_s``, ``upper_s``, ``forward_s``, ``backward_s``, ``optimizer_s``, ``n_kernels``, ``flops``,
        ``basis`` (what the prediction rests on), and for a training step ``memory_per_gpu_bytes`` and ``fits``
        (:func:`perfmodel.predict_memory`; an :class:`OutOfMemoryWarning` names the GPUs it does not fit on). With ``n_gpus > 1`` also ``n_gpus``, ``strategy``,
        ``micro_batches``, ``interconnect``, ``compute_s`` (busiest GPU's kernels), ``comm_s`` (exposed
        communication), ``comm_total_s`` (all communication, hidden or not), ``bubble_s`` (pipeline idle time),
        ``comm_tp_forward_s`` / ``comm_cp_forward_s`` / ``comm_ep_forward_s`` (the exposed per-layer tensor-,
        context- and expert-parallel collectives of the forward passes, what activation checkpointing runs again: already counted in ``comm_s``,
        and with checkpointing the re-run too, :func:`perfmodel.step.one_gpu.recompute_comm`); ``forward_copy_out_s``
        (the seconds of ``forward_s`` that are FSDP2's all-gather copy-outs, which checkpointing does not recompute);
        ``forward_tp_reduce_s`` (those that are the partial sums ending asynchronous TP's fused reduce-scatters, which
        torchtitan's selective checkpointing does not recompute); ``forward_s`` / ``backward_s`` / ``optimizer_s``
        and ``flops`` are those of one GPU.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Unknown GPU (with suggestions), precision, strategy or interconnect.
    perfmodel.datasets.UnsupportedPrecisionError
        The GPU has no units for ``precision`` (BF16 on a V100).
    perfmodel.step.parallel.StrategyError
        A strategy that does not divide the model or the batch, or a layout its framework does not run (PyTorch's
        ``async_tp`` uncompiled; a ``ValueError``).
    ValueError, TypeError
        Bad arguments; a token model without ``input_dtype`` fails in the extraction with the cause named.
    """
    w, cs, p = keyword_run(model, gpus, **{k: v for k, v in locals().items() if k not in ("model", "gpus", "alpha")})
    return predict_frame(w, cs, p, alpha=alpha)


def predict_frame(w: Workload, clusters, p: Parallelism, *, alpha: float = 0.2) -> pd.DataFrame:
    """:func:`predict_step_time`'s frame of a run said in its objects (the workload's fields all set), one row per
    cluster: the step (:func:`step_frame`) and, for a training step, its memory (:func:`with_memory`)."""
    out = step_frame(w, clusters, p, alpha=alpha)
    return out if w.inference else with_memory(out, w, clusters, p)


def step_frame(w: Workload, clusters, p: Parallelism, *, alpha: float = 0.2, by_group: bool = False) -> pd.DataFrame:
    """:func:`predict_step_time`'s rows before memory, one per cluster of ``clusters`` (:func:`step_rows`), with the
    kernel family and the attention note in ``basis``. ``by_group=True`` adds the per-group communication columns
    (:data:`perfmodel.step.parallel.GROUP_COLUMNS`) and ``recompute_s``: what :func:`perfmodel.predict` shows."""
    out = step_rows(w, clusters, p, alpha=alpha, by_group=by_group)
    note = attention_note(w.model)
    kernels = (EAGER_ATTENTION_BASIS if w.stack == "eager" and attention_kernel(w.model) == "eager"
               else STACK_BASIS[w.stack])
    recipe = fp8_recipe_of(w.precision, w.stack, w.fp8_recipe)
    if recipe is not None and recipe != fp8_recipe_of(w.precision, w.stack):
        kernels += f"; FP8 recipe: {RECIPE_BASIS[recipe]}"
    scope = compile_scope_of(w.stack, w.compile_scope)
    if scope is not None:
        kernels += f"; compiled: {SCOPE_BASIS[scope]}"
    out["basis"] = out["basis"].astype(str) + "; kernels: " + kernels + (f"; {note}" if note else "")
    return out


#: What each ``compile_scope`` compiles, for ``basis``.
SCOPE_BASIS = {
    "model": "the whole step, the loss with it (it saves the logits, not their FP32 log-softmax)",
    "layers": ("each transformer layer its own graph (no kernel fuses across two layers); the embedding, final norm, "
               "output projection and loss eager"),
    "layers+loss": ("each transformer layer and the loss their own graphs (no kernel fuses across two); the embedding, "
                    "final norm and output projection eager; the loss saves the logits, not their FP32 log-softmax"),
}


#: What each FP8 recipe other than its kernel family's default runs, for ``basis``.
RECIPE_BASIS = {
    "rowwise": ("torchao's rowwise scaling (the GEMMs at the FP8 rate as tensorwise ones; the weights gathered in BF16 "
                "and cast per micro-batch; compiled, per FP8 linear the cost beyond its GEMMs and casts calibrated on "
                "torchao's published row-wise microbenchmark of an H100, bytes per element of its input, output "
                "gradient and weight: perfmodel.step.float8_rowwise)"),
    "current": ("Transformer Engine's current per-tensor scaling (the tensors delayed scaling casts, each read for its "
                "maximum by a kernel of its own before the cast, but the norms' outputs, whose maximum the norm takes "
                "and which are cast by a kernel of their own)"),
    "mxfp8": ("Transformer Engine's MXFP8 block scaling (a scale per 32 elements; the tensors delayed scaling casts, and the "
              "norms' outputs, cast row-wise and column-wise by kernels of their own; "
              "the GEMMs at the dense FP8 rate)"),
    "blockwise": ("Transformer Engine's FP8 block scaling (Float8BlockScaling, DeepSeek-V3's recipe: an FP32 scale per "
                  "1x128 block of each activation and gradient, cast row-wise and column-wise by one kernel of their own, "
                  "the norms' outputs included, and per 128x128 block of each weight; every GEMM, the forward one too, "
                  "at the dense FP8 rate with split accumulation, which costs time on Hopper only; on Blackwell TE "
                  "converts the scales to MXFP8's, kernels not counted)"),
    "nvfp4": ("Transformer Engine's NVFP4 recipe (the linears' forward and gradient GEMMs by the same GEMM model at the "
              "dense FP4 rate instead of the FP8 peak, extrapolated: no FP4 GEMM was measured; each activation and gradient read for its per-tensor maximum (the norms' outputs' in the norm), then "
              "cast row-wise and, with the random Hadamard transform, column-wise by kernels of their own; the weights "
              "cast in 16x16 blocks per micro-batch; attention, norms and the vocabulary projection in BF16)"),
}


def check_recipe_on(recipe: str | None, clusters) -> None:
    """A recipe the clusters' GPUs can run: MXFP8 needs block-scaled FP8 tensor cores (Blackwell-class; the catalog's
    GPUs with an FP4 rate: B200, GB200, B300, GB300, RTX 5090, MI355X); NVFP4 needs NVIDIA's FP4 tensor cores
    (NVIDIA GPUs with an FP4 rate: B200, GB200, B300, GB300, RTX 5090); FP8 block scaling needs NVIDIA's compute
    capability 9.0 or later (Hopper, Blackwell: ``check_fp8_block_scaling_support`` in
    transformer_engine/pytorch/quantization.py at d0067d0)."""
    if recipe not in ("mxfp8", "nvfp4", "blockwise"):
        return
    specs = gpu_specs([c.gpu for c in clusters], "fp8")
    if recipe == "blockwise":
        bad = [s.gpu for s in specs if str(getattr(s, "vendor", "")).upper() != "NVIDIA"
               or str(getattr(s, "architecture", "") or "").split()[:1] not in (["Hopper"], ["Blackwell"])]
        if bad:
            from perfmodel.datasets import UnsupportedPrecisionError

            raise UnsupportedPrecisionError(
                f"fp8_recipe='blockwise' runs Transformer Engine's FP8 block-scaled GEMMs, which need an NVIDIA GPU of "
                f"compute capability 9.0 or later (Hopper, Blackwell: the first word of the GPU's architecture); "
                f"{', '.join(map(str, bad))} {'is' if len(bad) == 1 else 'are'} not. Use fp8_recipe='delayed' or 'current' "
                "there, or give a custom GPUSpec its architecture.")
        return
    if recipe == "nvfp4":
        bad = [s.gpu for s in specs if not np.isfinite(getattr(s, "fp4_peak_tflops", np.nan))
               or str(getattr(s, "vendor", "")).upper() != "NVIDIA"]
        if bad:
            from perfmodel.datasets import UnsupportedPrecisionError

            raise UnsupportedPrecisionError(
                f"fp8_recipe='nvfp4' runs its GEMMs on NVIDIA's FP4 tensor cores (NVFP4: E2M1 values with an E4M3 scale "
                f"per 16 elements, Blackwell's block-scaled instructions), which {', '.join(map(str, bad))} lack "
                "(NVIDIA Blackwell GPUs have them: B200, GB200, B300, GB300, RTX 5090; AMD's MI355X runs MXFP4, a "
                "different format Transformer Engine's NVFP4 recipe does not use). Use fp8_recipe='mxfp8', 'delayed' "
                "or 'current' there.")
        return
    bad = [s.gpu for s in specs if not np.isfinite(getattr(s, "fp4_peak_tflops", np.nan))]
    if bad:
        from perfmodel.datasets import UnsupportedPrecisionError

        raise UnsupportedPrecisionError(f"fp8_recipe='mxfp8' needs block-scaled (microscaling) FP8 tensor cores, which "
                                        f"{', '.join(map(str, bad))} lack (Blackwell-class GPUs have them: B200, GB200, "
                                        "B300, RTX 5090; MI355X). Use fp8_recipe='delayed' or 'current' there.")


#: What each kernel family (``stack=``) runs, for ``basis``.
STACK_BASIS = {
    "eager": ("eager PyTorch (one kernel per operator; attention through scaled_dot_product_attention, "
              "FlashAttention-2)"),
    "compile": ("torch.compile (each chain of memory-bound operators between two GEMMs one fused kernel moving what "
                "the dataflow says it reads and writes; pointwise results saved for the backward pass recomputed there)"),
    "te": ("Transformer Engine (fused RMSNorm/LayerNorm, MLP activation, rotary embedding with q/k/v in the "
           "projections' layout, fused cross-entropy; cuDNN fused attention at its rates FlashAttention-3's paper "
           "publishes for Hopper; at fp8 its delayed-scaling recipe: linears' GEMMs at the FP8 rate, the inputs the norms "
           "write in FP8 transposed, the other inputs and every output gradient cast with their transposes by kernels "
           "of their own, each weight cast with its transpose once per micro-batch, once per step under Megatron-Core's "
           "weight cache; nothing measured)"),
    "liger": ("eager PyTorch with Liger Kernel's fused modules (RMSNorm/LayerNorm, a gated MLP's SwiGLU/GeGLU, rotary "
              "embedding, fused linear cross-entropy: logits made chunk by chunk, loss and gradient in place in the "
              "forward pass); attention through scaled_dot_product_attention, FlashAttention-2; at fp8 torchao's "
              "Float8 as eager; nothing measured)"),
}


#: The eager family's text when the attention is eager too (a config that asks for it, or a model transformers has no
#: SDPA path for).
EAGER_ATTENTION_BASIS = ("eager PyTorch (one kernel per operator; attention eager: softmax(QKᵀ)V with the score matrix "
                         "written and read)")


def with_memory(out: pd.DataFrame, w: Workload, clusters, p: Parallelism) -> pd.DataFrame:
    """``out`` (one row per cluster of a training step) with ``memory_per_gpu_bytes`` and ``fits`` from
    :func:`perfmodel.step.memory.memory_frame`, and a warning naming the GPUs the step does not fit on: a step time
    for a run that would stop with out-of-memory is said to be one, in the row and on the screen."""
    import warnings

    mem = memory_rows(w, clusters, p)
    out = out.copy()
    out["memory_per_gpu_bytes"] = [float(m["total_bytes"]) for m in mem]
    out["fits"] = [bool(m["fits"]) for m in mem]
    if not out["fits"].all():
        bad = [f"{g} ({m['total_bytes'] / 2**30:.1f} GiB of {m['capacity_bytes'] / 2**30:.1f})"
               for g, m, f in zip(out["gpu"], mem, out["fits"]) if not f]
        warnings.warn(f"the step does not fit in GPU memory on {', '.join(bad)}: its time is that of a run that would stop "
                      "with out-of-memory. Use more GPUs, fsdp/tp/pp, activation checkpointing or a smaller batch "
                      "(see perfmodel.predict_memory).", OutOfMemoryWarning, stacklevel=4)
    return out


def memory_rows(w: Workload, clusters, p: Parallelism) -> list:
    """One :func:`perfmodel.step.memory.memory_frame` row per cluster, for the step :func:`with_memory` and
    :func:`perfmodel.predict` describe (the step's precision checked on each GPU first)."""
    gpu_specs([c.gpu for c in clusters], check_step_args(0.2, w.optimizer, False, w.precision, w.batch_size))
    return [row for _, row in memory_frame(w, clusters, p).iterrows()]


class OutOfMemoryWarning(UserWarning):
    """A predicted step needs more memory per GPU than the GPU has (``fits`` is False in its row)."""


def _step_time_only(model, gpus, *, alpha: float = 0.2, by_group: bool = False, **keywords) -> pd.DataFrame:
    """:func:`predict_step_time`'s rows without the memory and without the kernel family in ``basis``: what the
    planners compare (they predict the memory apart)."""
    return step_rows(*keyword_run(model, gpus, **keywords), alpha=alpha, by_group=by_group)


def step_rows(w: Workload, clusters, p: Parallelism, *, alpha: float = 0.2, by_group: bool = False) -> pd.DataFrame:
    """One row per cluster of ``clusters`` (the same run on each one's GPU), each GPU at the clock a step runs it at,
    named as given (:func:`perfmodel.step.kernels.clocked_clusters`): :func:`_step_rows`."""
    from perfmodel.step.kernels import clocked_clusters, name_clocked_rows

    check_recipe_on(fp8_recipe_of(w.precision, w.stack, w.fp8_recipe), clusters)  # refused naming the GPU as given
    clocked, names, notes = clocked_clusters(w.precision, clusters)
    return name_clocked_rows(_step_rows(w, clocked, p, alpha=alpha, by_group=by_group), names, notes)


def _step_rows(w: Workload, clusters, p: Parallelism, *, alpha: float = 0.2, by_group: bool = False) -> pd.DataFrame:
    """One row per cluster of ``clusters`` (the same run on each one's GPU): activation checkpointing added to the
    step without it (:func:`perfmodel.step.one_gpu.add_recompute`), a parallel layout's step
    (:func:`perfmodel.step.parallel.parallel_rows`) or one GPU's (:func:`perfmodel.step.one_gpu.single_gpu_rows`)."""
    check_step_args(alpha, w.optimizer, w.inference, w.precision, w.batch_size)
    p = p.with_micro_batches(w.batch_size, clusters[0].n_gpus if clusters else 1)
    check_recipe_on(fp8_recipe_of(w.precision, w.stack, w.fp8_recipe), clusters)
    check_stack_framework(w.stack, p.framework)
    ac = p.checkpointing
    if ac and w.inference:
        raise ValueError("activation_checkpointing recomputes the forward pass during the backward pass of a training "
                         "step; an inference pass has no backward pass. Pass activation_checkpointing=False.")
    if ac:
        from perfmodel.step.trace import check_checkpointable, model_and_layout

        name, lay = model_and_layout(w.model, w.input_shape, w.input_dtype)[4:]
        check_checkpointable(lay, p.activation_checkpointing, name)
        plain = _step_rows(w, clusters, dataclasses.replace(p, activation_checkpointing=False), alpha=alpha,
                          by_group=by_group)
        fraction = 1.0 if ac == "full" else _recompute_fraction(w, clusters, ac, frame=plain)
        return add_recompute(plain, alpha=alpha, fraction=fraction, detail=by_group, mode=ac,
                             comm_rerun=recompute_comm(plain, ac, lay.n_layers))
    n_gpus = clusters[0].n_gpus if clusters else 1
    if n_gpus > 1 or p.micro_batches not in (None, 1):
        return parallel_rows(w, clusters, p, alpha=alpha, by_group=by_group)
    pipeline_virtual_stages(p.pipeline_schedule, p.virtual_stages)
    check_async_tp(p.async_tp, 1, "one GPU")
    if p.strategy is not None:
        parse_strategy(p.strategy, 1)  # a combination over more GPUs ("dp2-tp2") is an error on one GPU
    p.execution(1, dict(tp=1, fsdp=False, name="one GPU"))
    if clusters and clusters[0].interconnect is not None:
        resolve_interconnect(clusters[0].interconnect, gpu_specs([c.gpu for c in clusters], w.precision)[0])
    return single_gpu_rows(w, clusters, alpha=alpha)

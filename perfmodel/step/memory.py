"""Memory of one GPU while training: parameters, gradients, optimizer states and activations, per parallel strategy and
precision — whether a model fits on a GPU before anyone rents one.

It fits nothing and predicts no time: it is the feasibility check the step predictor reports in its rows and the
planner filters on, built on the shapes of :func:`perfmodel.features.extract` and the model layout of
:mod:`perfmodel.step.trace` (``perfmodel.planning.memory`` is the same module's planning-side name).

Counted per GPU:

* **parameters**: their bytes at ``precision`` (FP32 or TF32: 4, BF16/FP16: 2) for the GPU's share — all of them for
  ``"dp"``; ``1/n`` for ``"fsdp"`` plus the largest layer gathered twice (the one computing and the one prefetched),
  or, at the backward's start, one layer and the head (final norm and output projection: FSDP2 does not reshard
  the root after the forward), whichever is more;
  for ``"tp"`` the split ones (attention, MLP, vocabulary) ``/ n`` and the replicated ones (norms) whole; for ``"pp"``
  the stage's layers (the embedding on the first stage, the head on the last, a tied embedding on both);
* **gradients**: as many bytes as the GPU's parameters (``"fsdp"``: its shard, plus the head's gradient whole until
  its reduce-scatter);
* **optimizer states**: FP32, Adam 8 bytes per parameter (two moments), SGD-momentum 4, none 0; with BF16/FP16
  parameters also an FP32 master copy (4 bytes), as mixed-precision training keeps;
* **activations**: the tensors autograd saves for the backward pass (recorded with
  ``torch.autograd.graph.saved_tensors_hooks`` on a forward pass on the meta device, each counted once, parameters
  left out) at the GPU's micro-batch; with ``activation_checkpointing`` the input of each
  layer plus one layer's activations recomputed, and whatever runs outside the layers. ``"tp"`` splits the
  activations of the split operators ``n`` ways; under 1F1B a pipeline stage ``s`` keeps ``min(m, p − s)``
  micro-batches in flight. ``"fsdp"`` with ``"tp"`` (torchtitan's 2D) shards the hidden states along the sequence too
  (sequence parallelism): every saved tensor and each layer's checkpointed input ``/ tp``.
  ``activation_checkpointing="selective"`` (torchtitan's per-operator policy) keeps each
  layer's input, its fused attention outputs and every other matmul output. The backward pass starts with the
  gradients of the largest tensor the head saved (a language model's log-softmax output): the one flowing into its
  backward kernel and the one it writes, both of its size, allocated while every saved activation is alive: counted
  on top of them (or one recomputed layer, whichever is larger). Under half precision, where that tensor is the FP32
  upcast of the logits (an eager language-model loss), the half-precision logits' block is counted beside them too:
  freed after the forward, it cannot serve the FP32 gradients (the caching allocator reuses a free block only for a
  request that fits in it), so the reserved peak — what torchtitan logs and an allocation fails against — holds it
  (:func:`_upcast_logits_block`).
* **combinations** (``"dp2-tp2-pp2"``, :func:`perfmodel.step.parallel.parse_strategy`): the GPU's micro-batch is
  ``batch / dp / m``; parameters, gradients and optimizer states are those of the largest pipeline stage (all the
  layers without ``pp``) with the tensor-parallel split ones ``/ tp`` (data parallel replicates them); activations
  as above, the split operators' ``/ tp`` (Megatron without sequence parallelism: the layer norms, dropouts and
  residuals on the hidden state stay whole on every tensor-parallel rank) and ``min(m, pp − s)`` micro-batches in
  flight on stage ``s`` (interleaved: as many per model chunk as its warm-up runs, :func:`pipeline_in_flight`).
  ``"fsdp"`` with ``"pp"`` (torchtitan's 3D): the stage's shard ``1/(dp·cp)`` of parameters,
  gradients and optimizer states, plus its parameters whole (no resharding between micro-batches) and their
  gradients whole in FP32 (accumulated until the last micro-batch in FSDP's reduce dtype). Context parallelism
  (``"fsdp4-cp2"``): activations at the rank's ``s / cp`` tokens, parameters sharded over ``dp·cp``. Sequence
  parallelism as PyTorch runs it (``fsdp`` with ``tp``): each norm output that feeds a block is kept whole besides
  its shard — the column-parallel linears' matmuls save their all-gathered input (:func:`_gathered_block_inputs`);
  Megatron saves the shard and gathers it again in the backward pass.

Kernel families (``stack=``): under Transformer Engine's or Liger Kernel's fused modules the norms, a gated MLP's
activation and the loss save what those kernels save (:func:`_fused_saved`); eager PyTorch and torch.compile save what
the traced operators save (the recomputation torch.compile's partitioner may choose is not modelled). Under
Megatron-Core at ``precision="fp8"`` TE's linears keep each FP8 weight's quantized copy and its transpose between
micro-batches (its weight cache, :func:`_te_weight_cache`): counted with the parameters.

Not counted: the CUDA context and other allocator fragmentation (a few hundred MiB to a few GiB), communication buffers,
temporary workspaces of the kernels.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd

from perfmodel._workload import accepts_workload
from perfmodel.step.strategy import check_pipeline_split, pipeline_chunks
#: the output projection of an attention module (row-parallel; :data:`perfmodel.step.trace.OUT_PROJECTION`)
from perfmodel.step.trace import OUT_PROJECTION as _OUT_PROJECTION
from perfmodel.step.trace import expert_parallel_layout, expert_shard_layout, in_experts_module, is_shared_expert

__all__ = ["predict_memory", "MEMORY_COLUMNS", "OPTIMIZER_STATE_BYTES", "pipeline_in_flight"]

#: bytes per element of the gradients FSDP reduces (torchtitan's mixed-precision policy: reduce_dtype float32); an
#: unsharded gradient accumulated over a pipeline's micro-batches is kept at this width.
FSDP_REDUCE_BYTES = 4

#: bytes of optimizer state per parameter (FP32 states).
OPTIMIZER_STATE_BYTES = {"adam": 8, "adam-fused": 8, "sgd-momentum": 4, "sgd": 0, None: 0}

#: columns of :func:`predict_memory`.
MEMORY_COLUMNS = ["model", "gpu", "batch_size", "n_gpus", "strategy", "micro_batches", "precision", "optimizer",
                  "activation_checkpointing", "params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                  "total_bytes", "capacity_bytes", "fits", "basis"]


def _DropoutMasks():
    """A dispatch mode that records the tensors dropout draws its mask into (``bernoulli_``), in :attr:`ids`.

    Off the GPU (on the meta device the memory is counted on) PyTorch's dropout draws its mask as a tensor of the
    input's dtype and saves it for the backward pass; on a CUDA or ROCm GPU the fused kernel (``native_dropout``) saves a
    one-byte bool mask instead. The memory counts such a mask at one byte per element, as the GPU keeps it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    import torch

    class DropoutMasks(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ids: set = set()
            self._keep: list = []  # the masks stay alive while the ids are compared (no id reused)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in (torch.ops.aten.bernoulli_.float, torch.ops.aten.bernoulli_.Tensor) and args:
                self.ids.add(id(args[0]))
                self._keep.append(args[0])
            return out

    return DropoutMasks()


def _saved_tensors(net, x) -> pd.DataFrame:
    """The tensors autograd saves for the backward pass in one forward pass of ``net`` on ``x`` (meta device: no memory,
    no arithmetic): one row per distinct tensor, ``module`` (innermost module running when it was saved), ``bytes``,
    ``shape``; parameters (and views of them) are left out — they are counted as parameters. Dropout masks count one
    byte per element, as a GPU's fused dropout keeps them (:func:`_DropoutMasks`)."""
    import torch

    names = {m: n for n, m in net.named_modules()}
    params = {id(p) for p in net.parameters()}
    stack: list[str] = []
    rows, seen, keep = [], set(), []

    def pre(mod, args):
        stack.append(names[mod])

    def post(mod, args, out):
        if stack:
            stack.pop()

    masks = _DropoutMasks()

    def pack(t):
        base = t._base if t._base is not None else t
        if id(base) not in params and id(base) not in seen:
            seen.add(id(base))
            keep.append(base)
            size = 1 if id(base) in masks.ids else base.element_size()  # a GPU's fused dropout keeps a bool mask
            rows.append((stack[-1] if stack else "", float(base.numel() * size), "x".join(map(str, base.shape))))
        return t

    import contextlib

    from perfmodel.features._counting import MetaSDPAMode, ValueReadMode

    handles = [m.register_forward_pre_hook(pre) for m in names] + [m.register_forward_hook(post) for m in names]
    reads = ValueReadMode()
    # the attention kernel a run would take (the fused one saves O(s·d): its inputs, output and log-sum-exp), not the
    # math path meta tensors fall back to (which saves the s×s scores); the same choice the step-time trace makes
    sdpa = MetaSDPAMode() if x.device.type == "meta" else contextlib.nullcontext()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), reads, sdpa, masks:
            net(x)
    except (RuntimeError, NotImplementedError) as exc:
        if not reads.reads and "meta" not in str(exc):
            raise
        from perfmodel.features import DataDependentOpsError

        what, where = reads.reads[0] if reads.reads else ("a read of a tensor's value", "(unknown line)")
        raise DataDependentOpsError(
            f"{type(net).__name__} reads the value of a tensor in Python ({what}) at {where}: its graph (and so the "
            f"tensors it saves) depends on the values of its tensors, which the meta device used to count memory does not "
            f"have ({type(exc).__name__}: {exc}). Expected control flow that depends on shapes only; make the loop or "
            f"branch static to predict its memory."
        ) from exc
    finally:
        for h in handles:
            h.remove()
    return pd.DataFrame(rows, columns=["module", "bytes", "shape"])


def _saved_repeated(net, x) -> pd.DataFrame | None:
    """:func:`_saved_tensors` of ``net`` from a shallow copy of its stacks of identical layers, the rows of one
    repeated layer copied to the full depth with their module names (:mod:`perfmodel.features._repeats`, as the step's
    trace does); None when ``net`` has no such stack, the copy fails, or its rows do not prove the layers repeated
    (two units must save the same tensors, in the same order, from the same modules up to the layer index): the caller
    then runs the full model."""
    from perfmodel.features import _repeats

    stacks = _repeats.find_stacks(net)
    if not stacks:
        return None
    try:
        small = _saved_tensors(_repeats.shallow_copy(net, stacks), x)
    except Exception:  # noqa: BLE001 - whatever the copy raised, the full model gives the answer (or the error)
        return None
    # records in the trace's layout: the compared fields first, the module scope at 7
    recs = [(b, shape, 0, 0, 0, 0, 0, (mod,), 0, 0) for mod, b, shape in small.itertuples(index=False)]
    out = _repeats.expand(recs, len(recs), len(recs), stacks)
    if out is None:
        return None
    return pd.DataFrame([(r[7][0], r[0], r[1]) for r in out[0]], columns=["module", "bytes", "shape"])


def _saved_for(net, dtype, x_shape, x_dtype):
    """:func:`_saved_tensors` of ``net`` in ``dtype`` on a meta input of ``x_shape``, memoised per module and
    :func:`perfmodel.step.step_time.module_memo`; and the layout of the meta copy when one was made (None
    when ``net`` itself ran). ``net`` is never changed: a module not on the meta device, or in another dtype, is
    copied first."""
    import torch

    from perfmodel.step.trace import built_here, model_layout, module_fingerprint, module_memo

    fingerprint = module_fingerprint(net)
    key = ("saved", fingerprint, str(dtype), tuple(x_shape), str(x_dtype))
    memo = module_memo(net)
    if key not in memo:
        on_meta = next(iter(net.parameters()), torch.empty(0, device="meta")).device.type == "meta"
        if on_meta and dtype == torch.float32:
            meta_net = net
        elif built_here(net):  # its copy on meta in dtype made once per dtype (a deep copy of a 70B model: ~0.2 s)
            copy_key = ("meta-copy", fingerprint, str(dtype))
            if copy_key not in memo:
                memo[copy_key] = copy.deepcopy(net).to("meta").to(dtype)
            meta_net = memo[copy_key]
        else:  # a user's module may change in ways no fingerprint sees: copied as it is now
            meta_net = copy.deepcopy(net).to("meta").to(dtype)
        x = torch.empty(tuple(x_shape), dtype=x_dtype, device="meta")
        saved = _saved_repeated(meta_net, x)
        if saved is None:
            saved = _saved_tensors(meta_net, x)
        memo[key] = (saved, model_layout(meta_net) if meta_net is not net else None)
    saved, lay = memo[key]
    return saved.copy(), lay


def _rank_saved(net, dtype, x_shape, x_dtype, lay, size: int, family: str, fp8_input_bytes: float | None) -> tuple:
    """``(saved rows, their layers, the fused loss's transient or None, the meta copy's layout or None, derived)``: the
    tensors :func:`_saved_for` records for ``net`` on an input of ``x_shape``, each row's layer
    (:func:`perfmodel.step.trace.op_layer`), as the kernel ``family`` (``"te"``, ``"liger"``; ``"eager"`` leaves them
    as traced) saves them (:func:`_fused_saved`). Memoised per module (:func:`perfmodel.step.trace.module_memo`): a
    layout search asks for the same micro-batch under every checkpointing policy and gradient layout. The rows and
    layers returned are copies; ``derived`` is the memo's own dict of what a caller derives from them alone (the rows
    tensor parallelism splits, the gathered block inputs), filled as they are asked for."""
    import torch

    from perfmodel.step.trace import module_fingerprint, module_memo, op_layer

    key = ("rank-saved", module_fingerprint(net), str(dtype), tuple(x_shape), str(x_dtype), family, fp8_input_bytes)
    memo = module_memo(net)
    if key not in memo:
        saved, meta_lay = _saved_for(net, dtype, x_shape, x_dtype)
        on = meta_lay if meta_lay is not None else lay
        layer = op_layer(saved.assign(phase="forward"), on.n_layers) if len(saved) else np.zeros(0, dtype=int)
        fused_head = None  # the loss's transient under a family of fused modules (None: eager's)
        if family in ("te", "liger") and len(saved):
            linears = ({k for k, m in net.named_modules() if isinstance(m, torch.nn.Linear)}
                       if fp8_input_bytes is not None else None)
            saved, layer, fused_head = _fused_saved(saved, layer, on, size, int(np.prod(x_shape)), family,
                                                    fp8_input_bytes=fp8_input_bytes, linears=linears)
        memo[key] = (saved, layer, fused_head, meta_lay, {})
    saved, layer, fused_head, meta_lay, derived = memo[key]
    return saved.copy(), layer.copy(), fused_head, meta_lay, derived


def _gathered_block_inputs(saved: pd.DataFrame, layer: np.ndarray, lay, size: int) -> np.ndarray:
    """Saved tensors that are a layer's norm output at the training precision (the input of the block after it): per
    norm module directly inside a layer (``input_layernorm``, ``post_attention_layernorm``, ``ln_1``, ``ffn_norm``),
    the last hidden-sized tensor it saved with ``size`` bytes per element — but in a layer of a mixture of experts
    whose MoE block has no shared expert, the last norm's: that block stays whole beside tensor parallelism (expert
    tensor parallelism 1) and runs on the sequence shard, gathering nothing."""
    from perfmodel.step.trace import _below_layer, _layer_prefix

    out = np.zeros(len(saved), dtype=bool)
    if not lay.hidden or not lay.n_layers:
        return out
    mods = saved["module"].astype(str).to_numpy()
    rel = _below_layer(mods, _layer_prefix(pd.unique(mods))[0])
    last: dict = {}
    for i, (m, r, shape, b) in enumerate(zip(mods, rel, saved["shape"].astype(str), saved["bytes"].to_numpy(float))):
        name = r.lower()
        if not (0 <= layer[i] < lay.n_layers) or not name or "." in name or not ("norm" in name or name.startswith("ln")):
            continue
        dims = [int(x) for x in shape.split("x") if x.isdigit()]
        if dims and dims[-1] == lay.hidden and b == float(np.prod(dims)) * size:
            last[m] = i
    moe = {int(li) for li, r in zip(layer, rel) if ".experts" in "." + r}
    moe -= {int(li) for li, r in zip(layer, rel) if is_shared_expert(r)}
    for li in moe:  # the norm before a whole MoE block: its output is not gathered
        feeds = [i for i in last.values() if layer[i] == li]
        if feeds:
            last = {m: i for m, i in last.items() if i != max(feeds)}
    out[list(last.values())] = True
    return out


def _split_saved(saved: pd.DataFrame, layer: np.ndarray, lay) -> np.ndarray:
    """Saved tensors tensor parallelism splits: inside a layer, those of attention and MLP submodules but the
    hidden-state ones (the input of the attention's row-parallel output projection is split, :data:`_OUT_PROJECTION`);
    outside the layers, those with a vocabulary-sized dimension."""
    from perfmodel.step.trace import _SPLIT_MODULE, _below_layer, _layer_prefix

    mods = saved["module"].astype(str).to_numpy()
    inside = (layer >= 0) & (layer < lay.n_layers)
    rel = _below_layer(mods, _layer_prefix(pd.unique(mods))[0])
    in_split = inside & np.array([bool(_SPLIT_MODULE.search("." + r)) if r else False for r in rel], dtype=bool)
    dims = saved["shape"].astype(str).str.split("x")
    hidden_state = dims.str[-1].to_numpy() == str(lay.hidden)
    # the attention's output projection is row-parallel: its input, the heads' outputs, is split though it is as wide
    # as the hidden state (Korthikanti et al. 2022, Section 4.1: the 2sbh of the linear projection's input over t)
    row_parallel = np.array([bool(_OUT_PROJECTION.search(m)) for m in mods], dtype=bool)
    mask = in_split & (~hidden_state | row_parallel)
    if lay.vocab:
        mask |= (~inside) & np.array([str(lay.vocab) in d for d in dims], dtype=bool)
    return mask


@accepts_workload("batch_size", "precision", "optimizer", "activation_checkpointing", "input_shape", "input_dtype", "compile", "stack")
def predict_memory(model, gpu, *, batch_size: int, n_gpus: int = 1, strategy: str = "dp", precision: str = "fp32",
                   optimizer: str | None = "adam", activation_checkpointing: bool = False, input_shape=None,
                   input_dtype=None, micro_batches: int | None = None, compile: bool = False, gpus_per_node: int = 8,
                   interconnect=None, async_tp: bool = False, pipeline_schedule: str = "1f1b",
                   stack: str | None = None, framework: str = "pytorch", distributed_optimizer: bool | None = None,
                   sequence_parallel: bool | None = None, virtual_stages: int | None = None) -> pd.DataFrame:
    """Bytes per GPU of training ``model`` on ``n_gpus`` GPUs with ``strategy``, by part, and whether it fits.

    Parameters
    ----------
    model : str, torch.nn.Module, dict, transformers.PretrainedConfig or Workload
        As for :func:`perfmodel.predict_step_time`.
        A :class:`perfmodel.Workload` gives the step's fields once (a keyword that is also given must agree).
    gpu : str, GPUSpec or sequence of them
        Catalog ids or specs; the capacity is the catalog's ``memory_gib``.
    batch_size : int
        Global batch (samples per step over all GPUs).
    n_gpus : int
        GPUs training together.
    strategy : str or dict
        Parallel strategy (ignored for one GPU): ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` over all the GPUs, or a
        combination ``"dp2-tp2-pp2"``, ``"tp2-pp2"``, ``{"dp": 2, "tp": 2}`` whose degrees multiply to ``n_gpus``
        (:func:`perfmodel.step.parallel.parse_strategy`).
    precision : {"fp32", "tf32", "bf16", "fp16"}
        Precision of parameters and activations.
    optimizer : {"adam", "adam-fused", "sgd-momentum", "sgd", None}
        What the optimizer keeps per parameter.
    activation_checkpointing : bool or {"full", "selective", "attention", "layer", "layer:N"}
        ``True``/``"full"``: keep only each layer's input and recompute the layer in the backward pass; ``"layer:N"``:
        every ``N``-th layer so (default 2), the others keep everything;
        ``"selective"``: torchtitan's per-operator policy — each layer keeps its input, the fused attention outputs and
        the outputs of every other matmul (:func:`perfmodel.step.step_time.checkpointing_mode`), and one layer's
        recomputed rest is transient; ``"attention"`` (and ``"selective"`` with ``framework="megatron"``):
        Megatron's selective recomputation, every tensor kept but the core attention's score-sized ones
        (Korthikanti et al. 2022's ``5·a·s²·b`` per layer), one layer's of them transient.
    input_shape, input_dtype
        One sample, as for :func:`perfmodel.predict_step_time`.
    micro_batches : int, optional
        Micro-batches per step (the pipeline's ``m``; gradient accumulation otherwise). Default: with a pipeline, one
        sequence per micro-batch (the frameworks' default micro-batch size); otherwise 1.
    compile, gpus_per_node, interconnect, async_tp, stack
        As for :func:`perfmodel.predict_step_time`, so that one set of arguments serves both; they are checked and do
        not change the bytes counted (the tensors autograd saves are those of the eager step; torchao's FP8
        activations are counted in BF16), but for ``stack="te"`` and ``"liger"`` (their fused norms, gated-MLP
        activation and loss save what those kernels save, and TE's FP8 linears their inputs quantized:
        :func:`_fused_saved`) and for the FP8 linears' weights an FSDP layer gathers in
        FP8 under ``torch.compile`` at ``precision="fp8"`` (torchtitan's FP8 all-gather: one byte each in the gathered
        layers). With
        :func:`perfmodel.predict` and ``Parallelism(fp8_param_gather=True)``, Megatron keeps those weights in FP8
        (:func:`perfmodel.step.strategy.resolve_fp8_param_gather`).
    pipeline_schedule : {"1f1b", "interleaved-1f1b"}
        With pipeline parallelism: the interleaved schedule keeps ``1 + (p−1)/(p·v)`` times 1F1B's activations in
        flight on the first rank (Korthikanti et al., 2022, §4.2.3; ``v`` = ``virtual_stages`` model chunks per rank,
        default 2), ``((p−s−1)·2 + (v−1)·p + 1)/v`` micro-batches' worth on rank ``s`` as its warm-up runs them, and
        no schedule more than the ``m`` micro-batches there are.
    framework, distributed_optimizer, sequence_parallel, virtual_stages
        As for :func:`perfmodel.predict_step_time` (:func:`perfmodel.step.strategy.resolve_execution`).
        ``"megatron"`` keeps FP32 main gradients (4 bytes per parameter under BF16/FP16: Megatron-LM accumulates and
        reduces them in FP32), and with the distributed optimizer the FP32 master weights and optimizer states
        ``/ (dp·cp)``: Megatron's 18 bytes per parameter become ``6 + 12 / (dp·cp)`` (its distributed-optimizer
        guide). Sequence parallelism divides every saved tensor by ``tp`` (Korthikanti et al., 2022, §4.2.2).

    Returns
    -------
    DataFrame
        One row per GPU, :data:`MEMORY_COLUMNS`: ``params_bytes``, ``grads_bytes``, ``optimizer_bytes``,
        ``activations_bytes``, ``total_bytes`` (their sum), ``capacity_bytes`` (the GPU's memory) and ``fits``
        (total ≤ capacity; the CUDA context and fragmentation are not counted).

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Unknown GPU, precision or strategy.
    perfmodel.step.parallel.StrategyError
        The strategy does not divide the model or the batch, or its degrees do not multiply to ``n_gpus``.
    """
    from perfmodel._run import Cluster, Parallelism, trusted
    from perfmodel._workload import Workload, framework_stack

    stack = framework_stack(stack, compile, framework)  # as the step's keyword face runs it
    w = trusted(Workload, model=model, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                input_high=None, precision=precision, optimizer=optimizer, compile=compile, stack=stack)
    gpu_list = [gpu] if isinstance(gpu, str) or not hasattr(gpu, "__iter__") else list(gpu)
    cs = tuple(trusted(Cluster, gpu=g, n_gpus=n_gpus, gpus_per_node=gpus_per_node, interconnect=interconnect)
               for g in gpu_list)
    p = trusted(Parallelism, strategy=strategy, micro_batches=micro_batches, pipeline_schedule=pipeline_schedule,
                activation_checkpointing=activation_checkpointing, async_tp=async_tp, framework=framework,
                virtual_stages=virtual_stages, distributed_optimizer=distributed_optimizer,
                sequence_parallel=sequence_parallel)
    return memory_frame(w, cs, p)


def memory_frame(w, clusters, p) -> pd.DataFrame:
    """:func:`predict_memory` of a run said in its objects: one row per cluster of ``clusters`` (the same run on each
    one's GPU; the workload's fields all set, :meth:`perfmodel.Workload.filled`)."""
    p = p.with_micro_batches(w.batch_size, clusters[0].n_gpus if clusters else 1)
    prec, ac, deg, specs = _check_memory_args(w, clusters, p)
    from perfmodel._workload import compile_scope_of, fp8_recipe_of, resolve_stack

    stack = resolve_stack(w.stack, w.compile)
    r = _memory_rank(w.model, deg, prec=prec, ac=ac, activation_checkpointing=p.activation_checkpointing,
                     input_shape=w.input_shape, input_dtype=w.input_dtype, stack=stack,
                     compiled_loss=compile_scope_of(stack, w.compile_scope) in ("model", "layers+loss"),
                     fp8_recipe=fp8_recipe_of(prec, stack, w.fp8_recipe) if prec == "fp8" else None)
    deg["fp8"] = _fp8_kept(w, p, deg, prec, r)
    deg["te_cache"] = _te_weight_cache(w, deg, prec, r)
    optimizer = w.optimizer
    state = OPTIMIZER_STATE_BYTES[optimizer] + (4 if r.size < 4 and optimizer is not None else 0)
    params_b, grads_b, opt_b, act_b = (_pipeline_memory if deg["pp"] > 1 else _flat_memory)(r, deg, state)
    rows = []
    for spec in specs:
        total = params_b + grads_b + opt_b + act_b
        cap = float(spec.memory_gib) * 2**30
        rows.append(dict(model=r.name, gpu=spec.gpu, batch_size=deg["B"], n_gpus=deg["n"], strategy=deg["name"],
                         micro_batches=deg["m"], precision=prec, optimizer=optimizer or "none",
                         activation_checkpointing=ac if isinstance(p.activation_checkpointing, str) else bool(ac),
                         params_bytes=float(params_b), grads_bytes=float(grads_b), optimizer_bytes=float(opt_b),
                         activations_bytes=float(act_b), total_bytes=float(total), capacity_bytes=cap, fits=bool(total <= cap),
                         basis=_memory_basis(r, deg, state)))
    return pd.DataFrame(rows, columns=MEMORY_COLUMNS)


def _fp8_kept(w, p, deg: dict, prec: str, r) -> set:
    """The parameters kept or gathered in FP8 (:func:`perfmodel.step.strategy.resolve_fp8_param_gather`): FSDP's FP8
    all-gather gathers them in FP8 (the shards stay at the training precision); Megatron's ``--fp8-param-gather``
    stores them in FP8. Empty otherwise."""
    from perfmodel.step import trace as wl
    from perfmodel.step.strategy import resolve_fp8_param_gather

    stack = wl.resolve_stack(w.stack, w.compile)
    if not resolve_fp8_param_gather(p.fp8_param_gather, deg, fsdp=deg["fsdp"], precision=prec, stack=stack,
                                    recipe=w.fp8_recipe):
        return set()
    return _fp8_linear_names(w, r)


def _fp8_linear_names(w, r) -> set:
    """Names of the weights of the linears the workload ``w`` runs in FP8
    (:func:`perfmodel.step.trace.fp8_linear_weights`; the vocabulary projection's by the token ids' range)."""
    from perfmodel.step import trace as wl

    vocab = wl.model_and_layout(w.model, w.input_shape, w.input_dtype)[3]
    high = w.input_high if isinstance(w.input_high, (int, np.integer)) and not isinstance(w.input_high, bool) else vocab
    return wl.fp8_linear_weights(r.net, r.lay, int(high) if high else high, experts=r.stack == "te")


def _te_weight_cache(w, deg: dict, prec: str, r) -> tuple:
    """``(FP8 linears' weight names, bytes per element)`` of Transformer Engine's FP8 weight cache under Megatron-Core
    (``stack="te"``, ``precision="fp8"``): Megatron passes ``is_first_microbatch`` to TE's linears, which then keep
    each weight's quantized copies — the row-wise one the forward GEMM reads and the column-wise one (on Hopper its
    transpose) the input-gradient GEMM reads — in a workspace of the module for the whole run (TE's
    ``get_weight_workspace(cache_name="weight")``; Megatron-LM ``TELinear.forward``). Two copies at the recipe's
    bytes per element of a weight (:func:`te_fp8_weight_bytes`), one where ``--fp8-param-gather`` stores the weight quantized
    already (``deg["fp8"]``). ``(set(), 0.0)`` otherwise."""
    from perfmodel._workload import fp8_recipe_of

    if deg.get("framework") != "megatron" or r.stack != "te" or prec != "fp8":
        return set(), 0.0
    per = te_fp8_weight_bytes(fp8_recipe_of(prec, r.stack, w.fp8_recipe))
    return _fp8_linear_names(w, r), per if deg.get("fp8") else 2 * per


def _memory_basis(r, deg: dict, state: int) -> str:
    fp8 = ("" if not deg.get("fp8") else ", the FP8 linears' weights stored in FP8" if deg.get("framework") == "megatron"
           else ", the FP8 linears' weights gathered in FP8")
    fused = {"liger": ("; Liger Kernel's fused modules: norms save their input once, a gated MLP does not save its "
                       "activation, the fused linear cross-entropy keeps no logits (one chunk at a time)"),
             "te": ("; Transformer Engine's fused modules: norms save their input once, a gated MLP does not save its "
                    "activation, the fused cross-entropy keeps the logits at the activations' size")}.get(r.stack, "")
    if r.stack == "te" and r.fp8_input_bytes is not None:
        fused += f", its FP8 linears' inputs saved quantized ({r.fp8_input_bytes:.4g} B/element)"
    cache, per = deg.get("te_cache") or (set(), 0.0)
    if cache:
        fused += (f", their weights' quantized copies ({per:.4g} B/element) kept between micro-batches in TE's weight "
                  "cache (Megatron-Core)")
    return (f"{r.lay.params:,} parameters at {r.size} B{fp8}{fused}, optimizer states {state} B/parameter"
            + (", Megatron-Core: FP32 main gradients" + (f", distributed optimizer over {deg['dp'] * deg['cp']} ranks"
                                                          if deg.get("distributed_optimizer") else "")
               if deg.get("framework") == "megatron" else "")
            + (f", gradients sharded over {deg['dp'] * deg['cp']} ranks (ZeRO-2)"
               if deg.get("shard_gradients") and (deg["pp"] > 1 or not deg["fsdp"]) else "")
            + (f", expert parallel over {deg['ep']}: each rank holds 1/{deg['ep']} of the routed experts (the sharded "
               "states 1/(dp·cp) of every parameter's tensor-parallel share)" if deg.get("ep", 1) > 1 else "")
            + (f", the busiest expert-parallel rank's experts keeping the activations of {deg['expert_load_imbalance']:g} "
               "times the mean routed tokens" if deg.get("ep", 1) > 1 and deg.get("expert_load_imbalance", 1.0) != 1.0
               else "")
            + ((f", each routed expert split over the {deg['tp']} tensor-parallel ranks (expert tensor parallelism "
                f"{deg['tp']}), its activations on the hidden size over the tokens they gather"
                if _expert_split(deg, r.lay) > 1 else ", each routed expert whole beside tensor parallelism (expert "
                "tensor parallelism 1)") if deg["tp"] > 1 and r.lay.experts else "")
            + (f", sequence parallel over {deg['tp']}" if r.sp else "") + ", forward "
            f"outputs of the {r.n_saved} tensors autograd saves at micro-batch {r.mb}; the CUDA context "
            "and fragmentation are not counted")


def _check_memory_args(w, clusters, p):
    """:func:`memory_frame`'s run checked: ``(precision, checkpointing mode, degrees, GPU specs)``; the
    degrees (:func:`perfmodel.step.strategy.parse_strategy`'s) with the global batch ``B``, GPUs ``n``,
    micro-batches ``m``, the GPU's micro-batch ``mb`` and the pipeline's model chunks ``v``."""
    from perfmodel.step import kernels as kn
    from perfmodel.step import trace as wl
    from perfmodel.step.strategy import (STRATEGIES, StrategyError, _check_gpus_per_node, check_async_tp, check_micro_batches,
                                           check_stack_framework,
                                           check_strategy_name, parse_strategy, pipeline_virtual_stages,
                                           resolve_links)

    optimizer, precision, batch_size, compile, stack = w.optimizer, w.precision, w.batch_size, w.compile, w.stack
    c0 = clusters[0] if clusters else None
    n_gpus, gpus_per_node, interconnect = (c0.n_gpus, c0.gpus_per_node, c0.interconnect) if c0 else (1, 8, None)
    strategy, micro_batches = p.strategy, p.micro_batches
    if optimizer not in OPTIMIZER_STATE_BYTES:
        raise ValueError(f"optimizer must be one of {[k for k in OPTIMIZER_STATE_BYTES]}; got {optimizer!r}.")
    prec = wl.check_step_args(0.2, None, False, precision, batch_size)
    ac = p.checkpointing
    wl.check_flag("compile", compile, "torch.compile")
    check_stack_framework(wl.resolve_stack(stack, compile), p.framework)
    _check_gpus_per_node(gpus_per_node)
    vchunks = pipeline_virtual_stages(p.pipeline_schedule, p.virtual_stages)
    check_strategy_name(strategy)
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    n, m, B = int(n_gpus), check_micro_batches(micro_batches), int(batch_size)
    if n == 1:
        parse_strategy(strategy, 1)  # a combination over more GPUs ("dp2-tp2") is an error on one GPU
        deg = dict(name="dp", dp=1, tp=1, pp=1, fsdp=False, cp=1)
    else:
        deg = dict(parse_strategy(strategy, n))
    strat, d = deg["name"], deg["dp"]
    check_async_tp(p.async_tp, deg["tp"], strat, framework=p.framework, stack=wl.resolve_stack(stack, compile))
    deg.update(p.execution(n, deg))
    single = strat in STRATEGIES
    specs = kn.gpu_specs([c.gpu for c in clusters], prec)
    per_rank = B // d
    if B % d:
        raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split over {n} GPUs. Use a batch_size that is "
                            "a multiple of n_gpus." if single else
                            f"strategy={strat!r}: the global batch {B} does not split over its {d} data-parallel replicas. "
                            f"Use a batch_size that is a multiple of {d}.")
    if per_rank % m:
        raise StrategyError(f"micro_batches={m} does not divide the per-GPU batch {per_rank}. Use micro_batches that divides it."
                            if single or d == 1 else
                            f"strategy={strat!r}: micro_batches={m} does not divide the per-replica batch {per_rank} "
                            "(batch_size / dp). Use micro_batches that divides it.")
    if interconnect is not None:  # an unknown link is an error here too
        for s_ in specs:
            resolve_links(interconnect, s_, degrees={"tp": deg["tp"], "dp": d, "pp": deg["pp"], "cp": deg["cp"]},
                          gpus_per_node=gpus_per_node)
    check_pipeline_split(p.pipeline_layers, deg["pp"], strategy)
    deg.update(n=n, m=m, B=B, mb=per_rank // m, v=vchunks, pipeline_layers=p.pipeline_layers,
               expert_load_imbalance=p.expert_load_imbalance)
    return prec, ac, deg, specs


@dataclasses.dataclass(frozen=True, eq=False)
class _MemoryRank:
    """What one GPU keeps for the backward pass, before the layout places it: the bytes of each saved tensor
    (``out_b``, split as tensor or sequence parallelism splits it) and its layer, per layer and outside them."""

    net: object
    name: str
    lay: object
    size: int
    mb: int
    tokens: int
    ac: str | None
    sp: bool
    tp: int
    out_b: np.ndarray
    layer: np.ndarray
    per_layer_act: np.ndarray
    head_grad: float
    kept_sel: np.ndarray
    core_attn: np.ndarray
    n_saved: int
    stack: str = "eager"
    fp8_input_bytes: float | None = None  # Transformer Engine's FP8: bytes an element of a linear's saved input

    def activations(self, layers) -> tuple[float, float]:
        """(kept activations of one micro-batch, transient recompute) for a set of layer indices."""
        from perfmodel.step import trace as wl
        lay, ac = self.lay, self.ac
        idx = list(layers)
        acts = self.per_layer_act[idx] if len(idx) else np.zeros(0)
        if not ac or not len(acts):
            return float(acts.sum()), 0.0
        inp = float(self.tokens * lay.hidden * self.size) / (self.tp if self.sp else 1) if lay.hidden else float(acts.min())
        if ac == "selective":
            kept = np.minimum(self.kept_sel[idx] + inp, acts)
            return float(kept.sum()), float((acts - kept).max())
        if ac == "attention":  # everything but the core attention's inner tensors, rebuilt one layer at a time
            dropped = np.minimum(self.core_attn[idx], acts)
            return float((acts - dropped).sum()), float(dropped.max())
        if ac != "full":  # "layer:N": the checkpointed layers keep their input, the others everything
            ck = wl.checkpointed_layers(ac, lay.n_layers)[idx]
            kept = np.where(ck, np.minimum(inp, acts), acts)
            return float(kept.sum()), float(acts[ck].max()) if ck.any() else 0.0
        return inp * len(acts), float(acts.max())


def _memory_rank(model, deg: dict, *, prec: str, ac, activation_checkpointing, input_shape, input_dtype,
                 stack: str = "eager", compiled_loss: bool = False, fp8_recipe: str | None = None) -> _MemoryRank:
    import torch

    from perfmodel.step import trace as wl
    from perfmodel.step.strategy import (StrategyError, check_sequence_length, check_sequence_parallel,
                                         check_tensor_parallel, context_parallel_shape)
    from perfmodel.step.trace import model_and_layout, op_layer

    strat, n, tpd, p, mb = deg["name"], deg["n"], deg["tp"], deg["pp"], deg["mb"]
    net, shape, in_dtype, vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    wl.check_checkpointable(lay, activation_checkpointing if ac else False, name)
    check_sequence_length(net, shape, in_dtype)  # the whole sequence: a cp rank's shard keeps its full-sequence positions
    shape = context_parallel_shape(shape, in_dtype, deg["cp"], strat)  # a context-parallel rank holds s / cp tokens
    check_sequence_parallel(shape, in_dtype, tpd, strat, framework=deg.get("framework", "pytorch"),
                            sequence_parallel=bool(deg.get("sequence_parallel", False)))
    if tpd > 1 or strat == "tp":
        check_tensor_parallel(lay, tpd, strat, n, name)
    if p > 1 and lay.n_layers < p:
        from perfmodel.step.strategy import STRATEGIES

        raise StrategyError(f"strategy='pp' over {n} stages needs at least {n} layers; {name} has {lay.n_layers}. Use fewer "
                            "GPUs or 'dp' / 'fsdp'." if strat in STRATEGIES else
                            f"strategy={strat!r}: {p} pipeline stages need at least {p} layers; {name} has {lay.n_layers}. "
                            "Use a pp degree of at most the number of layers.")
    dtype = getattr(torch, wl.PRECISION_DTYPES[prec])
    size = torch.empty((), dtype=dtype).element_size()
    fp8_input_bytes = te_fp8_saved_bytes(fp8_recipe) if stack == "te" and prec == "fp8" else None
    saved, layer, fused_head, meta_lay, derived = _rank_saved(net, dtype, (mb, *shape), in_dtype or dtype, lay, size,
                                                              stack if stack in ("te", "liger") else "eager",
                                                              fp8_input_bytes)
    if meta_lay is not None:
        lay = meta_lay
    if stack not in ("te", "liger") and compiled_loss and len(saved):
        saved, fused_head = _compiled_loss_saved(saved, layer, lay, size)
        derived = {}  # the rows changed: nothing derived from the memoised ones applies
    out_b = saved["bytes"].to_numpy(float)
    sp = bool(deg.get("sequence_parallel", deg["fsdp"] and tpd > 1))  # the hidden states split along the sequence
    if sp and len(saved):  # the hidden states between the split blocks are sharded along the sequence: every tensor / tp
        out_b = out_b / tpd
    elif tpd > 1 and len(saved):
        if "split" not in derived:
            derived["split"] = _split_saved(saved, layer, lay)
        out_b = np.where(derived["split"], out_b / tpd, out_b)
    if sp and tpd > 1 and deg.get("framework", "pytorch") != "megatron" and len(saved):
        # PyTorch's sequence parallelism (DTensor, as torchtitan runs it) all-gathers a block's input before its
        # column-parallel linears, whose matmuls save that gathered input for the weight gradient: each norm output
        # that feeds a block is kept whole besides its shard. Megatron saves the shard and gathers it again in the
        # backward pass (Korthikanti et al. 2022), so its blocks keep the shard only.
        if "gathered" not in derived:
            derived["gathered"] = _gathered_block_inputs(saved, layer, lay, size)
        out_b = np.where(derived["gathered"], out_b * (1 + tpd), out_b)
    in_experts = in_experts_module(saved["module"]) if len(saved) else np.zeros(0, dtype=bool)
    if sp and _expert_split(deg, lay) > 1 and len(saved):
        # experts split over the tensor-parallel ranks compute the tokens those ranks gather: what they save on the
        # hidden size (their permuted inputs, their outputs) is whole, on their width 1/tp as the sequence shard's
        hidden = saved["shape"].astype(str).str.split("x").str[-1].to_numpy() == str(lay.hidden)
        out_b = np.where(in_experts & hidden, out_b * tpd, out_b)
    f = float(deg.get("expert_load_imbalance", 1.0)) if deg.get("ep", 1) > 1 else 1.0
    if f != 1.0 and len(saved):  # the busiest expert-parallel rank keeps its experts' activations for more tokens
        out_b = np.where(in_experts, out_b * f, out_b)
    tokens = mb * int(np.prod(shape)) if in_dtype in (torch.long, torch.int, torch.int64) else mb
    # the backward pass starts at the loss: the backward kernel of the largest tensor the head saved (a language
    # model's log-softmax output, FP32 logits) reads the gradient flowing into it and writes the gradient of its input,
    # both of that size, while every saved activation is still alive; later transients (one layer recomputed) come
    # after they have been freed
    head = layer >= lay.n_layers
    kept_sel = (_selective_kept(net, shape, in_dtype, vocab, mb, prec, lay, tpd, sp) if ac == "selective" and lay.n_layers
                else np.zeros(lay.n_layers))
    core_attn = (_core_attention_saved(saved, layer, out_b, lay) if ac == "attention" and lay.n_layers
                 else np.zeros(lay.n_layers))
    return _MemoryRank(
        net=net, name=name, lay=lay, size=size, mb=mb, tokens=tokens, ac=ac, sp=sp, tp=tpd, out_b=out_b, layer=layer,
        per_layer_act=(np.array([out_b[layer == i].sum() for i in range(lay.n_layers)]) if lay.n_layers else np.zeros(0)),
        head_grad=(fused_head / tpd if fused_head is not None  # vocabulary-sized: split over the tensor-parallel ranks
                   else _eager_loss_transients(deg, tpd, sp) * float(out_b[head].max()) + _upcast_logits_block(
                       saved, out_b, head, size) if head.any() else 0.0),
        kept_sel=kept_sel, core_attn=core_attn, n_saved=len(saved), stack=stack,
        fp8_input_bytes=fp8_input_bytes)


def te_fp8_weight_bytes(recipe: str | None) -> float:
    """Bytes per element of a weight Transformer Engine keeps quantized: as :func:`te_fp8_saved_bytes`, but under FP8
    block scaling, whose weights take an FP32 scale per 128x128 block (``w_block_scaling_dim=2``), not per 1x128."""
    from perfmodel.step.trace import FP8_BLOCK_WEIGHT_BYTES_PER_ELEMENT

    return FP8_BLOCK_WEIGHT_BYTES_PER_ELEMENT if recipe == "blockwise" else te_fp8_saved_bytes(recipe)


def te_fp8_saved_bytes(recipe: str | None) -> float:
    """Bytes per element of the input a Transformer Engine FP8 linear saves for its weight gradient: the quantized
    copy the weight-gradient GEMM reads, its row-wise data discarded after the forward GEMM
    (``inputmat.update_usage(rowwise_usage=False, columnwise_usage=True)`` in ``_Linear.forward``,
    transformer_engine/pytorch/module/linear.py at d0067d0): an E4M3 byte (delayed and current scaling), with an E8M0
    scale per 32 elements (MXFP8), an E4M3 byte with an FP32 scale per 128 (FP8 block scaling), an E2M1 half byte with
    an E4M3 scale per 16 (NVFP4)."""
    from perfmodel.step.trace import FP8_BLOCK_BYTES_PER_ELEMENT, MXFP8_BYTES_PER_ELEMENT, NVFP4_BYTES_PER_ELEMENT

    return {"mxfp8": MXFP8_BYTES_PER_ELEMENT, "nvfp4": NVFP4_BYTES_PER_ELEMENT,
            "blockwise": FP8_BLOCK_BYTES_PER_ELEMENT}.get(recipe, 1.0)


def _fused_saved(saved: pd.DataFrame, layer: np.ndarray, lay, size: int, tokens: int,
                 family: str, *, fp8_input_bytes: float | None = None,
                 linears: set | None = None) -> tuple[pd.DataFrame, np.ndarray, float | None]:
    """What the fused modules of Transformer Engine (``family="te"``) or Liger Kernel (``"liger"``) save for the
    backward pass instead of eager PyTorch's operators (:func:`perfmodel.step.trace.te_ops` fuses the same modules):
    ``(saved rows, their layers, the loss's transient bytes)``.

    * a norm (TE's ``RMSNorm`` / ``LayerNorm`` and the norm of ``LayerNormLinear``, ``LigerRMSNorm``,
      ``LigerLayerNorm``) saves its input once at the activations' size and its per-row statistics — not eager
      RMSNorm's FP32 copy of the input beside it;
    * a gated MLP's SwiGLU / GeGLU (TE's ``LayerNormMLP``, Liger's ``LigerSwiGLUMLP``; under ``"te"`` a mixture of
      experts' shared experts too, which Megatron-Core runs as such an MLP) saves the gate and up projections'
      outputs and recomputes the activation in the backward pass: the activation submodule's saved tensors go (an
      ungated MLP keeps its eager ones);
    * ``"te"``: a mixture of experts' routed experts as Megatron-Core's grouped MLP runs them (``TEGroupedMLP``, its
      fused SwiGLU weighted by the routing probabilities; :func:`_te_expert_rows`) save per routed token their first
      GEMM's input and output and the weighted activation (the second GEMM's input) — not the activation's output
      eager saves besides as a product operand, nor the second GEMM's output its product with the probabilities saves;
      under FP8 the two GEMMs' inputs quantized (``"te"`` takes the experts as Megatron-Core's grouped linears whatever
      the framework);
    * the loss keeps no FP32 log-softmax. ``"te"`` (Megatron's fused cross-entropy, as the step's time model reads it):
      the logits at the activations' size, their gradient (the same size) the transient at the start of the backward
      pass. ``"liger"`` (the fused linear cross-entropy): no vocabulary-sized tensor — the gradient of its input, which
      eager saves too as the output projection's input; it holds one chunk of logits at a time,
      ``2^ceil(log2(ceil(tokens / ceil(vocab / hidden))))`` rows of the vocabulary at the activations' size (Liger's
      chunk size; ``tokens`` those of the micro-batch), at the end of the forward pass while every activation is
      alive: the transient.
    * ``fp8_input_bytes`` (Transformer Engine's FP8, :func:`te_fp8_saved_bytes`): each linear of a layer saves its
      input quantized, at these bytes per element, instead of at the activations' size; a linear whose input another
      module saves (the attention's output projection: the attention kernel keeps its BF16 output) saves its own
      quantized copy besides, ``tokens × hidden`` elements. ``linears``: the module names of the network's linears.
    """
    import bisect

    from perfmodel.step.trace import _ACT_SUBMODULE, _MLP_MODULE, _SHARED_MLP_MODULE, _TE_NORM, OUT_PROJECTION

    mods = saved["module"].astype(str).to_numpy()
    shape_codes, shapes = pd.factorize(saved["shape"].astype(str).to_numpy())  # each distinct shape parsed once
    parsed = [[int(x) for x in sh.split("x") if x.isdigit()] for sh in shapes]
    dims = [parsed[k] for k in shape_codes]
    numel = np.array([float(np.prod(d)) if d else 1.0 for d in parsed])[shape_codes]
    out = saved["bytes"].to_numpy(float).copy()
    keep = np.ones(len(saved), dtype=bool)
    codes, names = pd.factorize(mods)  # each module's rows, found once (a search per module was quadratic)
    rows_of = np.split(np.argsort(codes, kind="stable"), np.cumsum(np.bincount(codes, minlength=len(names)))[:-1])
    present = set(names)
    for m, at in zip(names, rows_of):
        if _TE_NORM.search(m):
            big = at[numel[at] == numel[at].max()]
            out[big[0]] = numel[big[0]] * size  # the input once, at the activations' size
            keep[big[1:]] = False
        elif _ACT_SUBMODULE.search(m) and _ACT_SUBMODULE.sub("", m) in present \
                and (_MLP_MODULE.search(_ACT_SUBMODULE.sub("", m))
                     or (family == "te" and _SHARED_MLP_MODULE.search(_ACT_SUBMODULE.sub("", m)))):
            keep[at] = False  # a gated MLP's activation: recomputed from the gate projection's output
    if family == "te":
        drop, quantized = _te_expert_rows(names, rows_of, present, dims, lay, fp8_input_bytes is not None)
        keep[drop] = False
        if quantized:
            out[quantized] = numel[quantized] * fp8_input_bytes
    fp8_extra = []
    if family == "te" and fp8_input_bytes is not None and linears:
        in_layer = (layer >= 0) & (layer < lay.n_layers)
        fp8_rows = in_layer & pd.Index(mods).isin(linears)
        out[fp8_rows] = numel[fp8_rows] * fp8_input_bytes
        own = set(mods[fp8_rows])
        # each module's first row inside a layer: where a block's first saved tensor is
        first_in_layer = sorted((m, int(at[in_layer[at]][0])) for m, at in zip(names, rows_of) if in_layer[at].any())
        keys = [m for m, _ in first_in_layer]
        for m in sorted(linears - own):
            if OUT_PROJECTION.search(m) and lay.hidden:
                block = m.rsplit(".", 1)[0]
                lo = bisect.bisect_left(keys, block)  # the modules named block...: a run of the sorted names
                hi = lo
                while hi < len(keys) and keys[hi].startswith(block):
                    hi += 1
                if hi > lo:  # the attention block of this output projection saved something: it ran in a layer
                    fp8_extra.append((m, min(i for _, i in first_in_layer[lo:hi])))
    head = layer >= lay.n_layers
    transient, extra = None, None  # None: no language-model loss to fuse (eager's transient stands)
    vocab_sized = (head & np.array([lay.vocab in d for d in dims], dtype=bool)) if lay.vocab else np.zeros(len(saved), bool)
    if vocab_sized.any():
        if family == "te":  # the logits, at the activations' size, in place of what eager saves
            transient = float(tokens) * lay.vocab * size
            first = int(np.flatnonzero(vocab_sized)[0])
            extra = saved.iloc[[first]].assign(bytes=transient, shape=f"{int(tokens)}x{int(lay.vocab)}")
        else:  # Liger's chunk of logits
            rows = max(1, -(-int(tokens) // -(-int(lay.vocab) // max(int(lay.hidden or 1), 1))))
            transient = float(2 ** int(np.ceil(np.log2(rows)))) * lay.vocab * size
        keep &= ~vocab_sized
    sel = saved[keep].assign(bytes=out[keep])
    lay_of = layer[keep]
    if extra is not None:
        sel = pd.concat([sel, extra], ignore_index=True)
        lay_of = np.r_[lay_of, lay.n_layers]
    if fp8_extra:  # the output projections' own quantized inputs, each a copy of its block's first saved row
        rows = saved.iloc[[i for _, i in fp8_extra]].assign(module=[m for m, _ in fp8_extra],
                                                            bytes=float(tokens) * lay.hidden * fp8_input_bytes,
                                                            shape=f"{int(tokens)}x{lay.hidden}")
        sel = pd.concat([sel, rows], ignore_index=True)
        lay_of = np.r_[lay_of, layer[[i for _, i in fp8_extra]].astype(int)]
    return sel.reset_index(drop=True), lay_of, transient


def _te_expert_rows(names, rows_of, present: set, dims: list, lay, fp8: bool) -> tuple[list, list]:
    """Rows of a mixture of experts' saved tensors that Megatron-Core's grouped MLP with Transformer Engine
    (``TEGroupedMLP``: grouped linears, ``weighted_bias_swiglu_impl``) does not save, and those it saves quantized under FP8:
    ``(dropped, quantized)`` row positions.

    Per routed token the grouped MLP saves its first GEMM's input (hidden wide), that GEMM's output (the gate and up
    projections, ``2·expert_ffn``: the fused SwiGLU's input, from which its backward recomputes the activation), the
    routing probability and the weighted SwiGLU's output (``expert_ffn``, the second GEMM's input): Megatron-Core
    weighs the activation by the probabilities inside its fused kernel (``weighted_bias_swiglu_impl``). Eager Hugging
    Face experts (Mixtral, Qwen-MoE, DeepSeek: an ``experts`` module with an activation submodule over the first
    GEMM's output) save those and, besides, the activation's output (a product operand: the first of the experts
    module's own ``expert_ffn``-wide rows after the activation's) and the second GEMM's output (hidden wide, which
    their product with the probabilities saves: the first such row after the ``expert_ffn``-wide ones); both go.
    Under FP8 (``fp8``) the two GEMMs' saved inputs are the quantized copies TE's grouped linears keep: the
    hidden-wide row before the activation's and the ``expert_ffn``-wide one kept. Experts without an activation
    submodule (gpt-oss's clamped SwiGLU) or of another pattern keep eager's rows."""
    f, h = getattr(lay, "expert_ffn", None), lay.hidden
    drop, quantized = [], []
    if not f or not h:
        return drop, quantized
    from perfmodel.step.trace import _ACT_SUBMODULE, _EXPERTS_ACT

    where = dict(zip(names, rows_of))
    for act in names:
        parent = _ACT_SUBMODULE.sub("", act)
        if not _EXPERTS_ACT.search(act) or parent not in present:
            continue
        at, act_at = where[parent], where[act]
        gates = [i for i in act_at if len(dims[i]) == 2 and dims[i][-1] == 2 * f]
        # after the activation's row: the activation's output and the product (then, as wide when expert_ffn equals
        # the hidden size, the second GEMM's output)
        wide = [i for i in at if len(dims[i]) == 2 and dims[i][-1] == f and gates and i > gates[0]][:2]
        routed = {dims[i][0] for i in [*gates, *wide]}
        if len(gates) != 1 or len(wide) != 2 or len(routed) != 1:
            continue  # not the pattern of a gated grouped MLP: eager's rows stand
        drop.append(int(wide[0]))
        # the second GEMM's output, which eager's product with the routing probabilities saves: Megatron-Core weighs
        # the activation inside its fused SwiGLU instead, before the second GEMM
        weighed = [i for i in at if i > wide[1] and dims[i] == [dims[wide[1]][0], h]][:1]
        drop += [int(i) for i in weighed]
        if fp8:
            first = [i for i in at if i < gates[0] and len(dims[i]) == 2 and dims[i] == [dims[gates[0]][0], h]]
            quantized += [int(i) for i in first[-1:]] + [int(wide[1])]
    return drop, quantized


def _eager_loss_transients(deg: dict, tp: int, sp: bool) -> int:
    """How many tensors of the loss's saved FP32 log-softmax output an eager loss's backward holds besides it: 2
    (the gradient flowing in and the one written); 3 under PyTorch's tensor parallelism as torchtitan runs it
    (``fsdp`` x ``tp``, sequence parallel through DTensor), whose ``loss_parallel`` (torchtitan's default with TP)
    computes the vocabulary-sharded NLL and log-softmax backward in one function that holds the zeroed gradient,
    ``exp`` of the saved output and their sum at once before writing the product
    (``_nll_loss_and_log_softmax_backward`` in torch/distributed/tensor/parallel/loss.py). Megatron's vocabulary-
    parallel cross-entropy (Megatron-style ``tp`` without FSDP, ``framework="megatron"``) is not this."""
    return 3 if tp > 1 and sp and deg.get("framework", "pytorch") != "megatron" else 2


def _upcast_logits_block(saved: pd.DataFrame, out_b: np.ndarray, head: np.ndarray, size: int) -> float:
    """Bytes the caching allocator holds idle at the start of an eager loss's backward under half precision: where
    the head's largest saved tensor is an FP32 upcast of half-precision logits (``logits.float()`` before the
    cross-entropy, as torchtitan's and Hugging Face's language-model losses do), the half-precision logits' block,
    freed after the forward (or still referenced by the caller), cannot serve the FP32 gradients the backward
    allocates at the logits' shape (best fit: a free block is only reused for a request that fits in it), so it stays
    reserved beside them — the reserved peak, which torchtitan logs and an allocation fails against, holds it. 0 when
    the step is not in half precision or the head saves no FP32 tensor."""
    if size >= 4 or not head.any():
        return 0.0
    at = int(np.flatnonzero(head)[int(np.argmax(out_b[head]))])
    shape = str(saved["shape"].iloc[at])
    numel = float(np.prod([int(x) for x in shape.split("x")])) if shape else 1.0
    fp32 = numel > 0 and float(saved["bytes"].iloc[at]) == 4 * numel
    return float(out_b[at]) * size / 4 if fp32 else 0.0


def _compiled_loss_saved(saved: pd.DataFrame, layer: np.ndarray, lay, size: int) -> tuple[pd.DataFrame, float | None]:
    """The saved tensors of a step whose loss ``torch.compile`` compiles (``compile_scope`` ``"model"`` or
    ``"layers+loss"``), and the loss's transient at the backward's start (None: the eager one, no loss found).

    AOTAutograd's partitioner saves a compiled cross-entropy's input — the logits, at the training precision — and two
    numbers per token (the row maximum and the log of the sum of exponentials), and recomputes the softmax in the
    backward kernel, which writes the logits' gradient at the training precision. Eager PyTorch saves the log-softmax
    output in FP32 (transformers and torchtitan upcast the logits first) and its backward holds two FP32 tensors of
    that size. So the loss's largest saved tensor (:func:`perfmodel.step.trace.loss_rows`) counts at ``size`` bytes
    per element, and the transient is one tensor of that size."""
    from perfmodel.step.trace import loss_rows

    loss = loss_rows(saved, lay.n_layers)
    if not loss.any():
        return saved, None
    out = saved.copy()
    at = out.index[np.flatnonzero(loss)[int(np.argmax(out["bytes"].to_numpy(float)[loss]))]]
    numel = float(np.prod([int(x) for x in str(out.at[at, "shape"]).split("x") if x]))
    out.at[at, "bytes"] = numel * size
    return out, numel * size


def _selective_kept(net, shape, in_dtype, vocab, mb, prec, lay, tpd, sp) -> np.ndarray:
    """Bytes per layer torchtitan's per-operator policy keeps: the outputs of the fused attention kernels and of every
    other matmul of a layer's forward pass (:func:`perfmodel.step.trace.selective_recompute_mask`); the rest is
    recomputed from the layer's input. Memoised per module (:func:`perfmodel.step.trace.module_memo`); a copy is
    returned."""
    from perfmodel.step.trace import module_fingerprint, module_memo

    key = ("selective-kept", module_fingerprint(net), tuple(shape), str(in_dtype), vocab, int(mb), prec, lay.n_layers,
           lay.hidden, int(tpd), bool(sp))
    memo = module_memo(net)
    if key not in memo:
        memo[key] = _selective_kept_bytes(net, shape, in_dtype, vocab, mb, prec, lay, tpd, sp)
    return memo[key].copy()


def _selective_kept_bytes(net, shape, in_dtype, vocab, mb, prec, lay, tpd, sp) -> np.ndarray:
    """:func:`_selective_kept`, computed."""
    from perfmodel.step import trace as wl
    from perfmodel.step.trace import op_layer

    ops = wl.step_ops(net, shape, in_dtype, vocab, batch_size=mb, prec=prec, optimizer=None, inference=False)
    layer_of = op_layer(ops, lay.n_layers)
    fwd_in = (ops["phase"].astype(str).to_numpy() == "forward") & (layer_of >= 0) & (layer_of < lay.n_layers)
    keep = fwd_in & ~wl.selective_recompute_mask(ops, layer_of, lay.n_layers)
    wrote = ops["bytes_written"].to_numpy(float)
    if sp:
        wrote = wrote / tpd
    elif tpd > 1:  # column-parallel outputs are split; those of hidden width (row-parallel, all-reduced) are not
        last = ops["output_shapes"].astype(str).str.split(";").str[0].str.split("x").str[-1].to_numpy()
        wrote = np.where(last == str(lay.hidden), wrote, wrote / tpd)
    return np.bincount(layer_of[keep], weights=wrote[keep], minlength=lay.n_layers)[:lay.n_layers]


def _core_attention_saved(saved: pd.DataFrame, layer: np.ndarray, out_b: np.ndarray, lay) -> np.ndarray:
    """Bytes per layer of the tensors Megatron's selective recomputation does not keep (``"attention"``): those the
    attention module itself saves (not its projections) shaped like the attention scores, ``… × s × s`` — the softmax
    output, the dropout mask and the dropped-out probabilities (Korthikanti et al. 2022's ``5·a·s²·b`` per layer). The
    query, key and value they are computed from stay. Where the head dimension equals the sequence length, the query,
    key and value are shaped like the scores too: the first three such tensors of each layer are taken as those and
    kept."""
    from perfmodel.step.trace import _ATTENTION_MODULE, _matches

    in_attn = _matches(saved["module"].astype(str), _ATTENTION_MODULE)
    inside = (layer >= 0) & (layer < lay.n_layers)
    if inside.any() and not (in_attn & inside).any():
        raise ValueError("activation_checkpointing='attention' recomputes each layer's core attention, and no layer of "
                         "this model has one perfmodel can find: no tensor is saved by a module named attn, attention, "
                         "self_attn, self_attention or attention.self. Use 'full' or 'selective' instead.")
    dims = [d.split("x") for d in saved["shape"].astype(str)]
    square = np.array([len(d) >= 3 and d[-1] == d[-2] for d in dims], dtype=bool)
    scores = in_attn & square & (layer >= 0) & (layer < lay.n_layers)
    head_dim = lay.hidden // lay.heads if lay.hidden and lay.heads else None
    if head_dim is not None:
        alike = scores & np.array([d[-1] == str(head_dim) for d in dims], dtype=bool)
        for i in np.unique(layer[alike]):
            scores[np.flatnonzero(alike & (layer == i))[:3]] = False
    return np.bincount(layer[scores], weights=out_b[scores], minlength=lay.n_layers)[:lay.n_layers]


def _layer_params(lay, names=None) -> tuple[np.ndarray, np.ndarray]:
    """Parameters of each repeated layer (of ``names`` only, when given), and the tensor-parallel split ones among
    them."""
    layer_params = np.zeros(max(lay.n_layers, 1))
    layer_split = np.zeros(max(lay.n_layers, 1))
    for k, v in lay.param_numel.items():
        if names is not None and k not in names:
            continue
        if 0 <= lay.param_layer[k] < lay.n_layers:
            layer_params[lay.param_layer[k]] += v
            layer_split[lay.param_layer[k]] += v if lay.param_split[k] else 0
    return layer_params, layer_split


def _outside_params(lay, names=None) -> list:
    """``(name, parameters, layer, split)`` of each parameter outside the repeated layers (of ``names`` only, when
    given), in the layout's order: the embedding's before them, the head's after."""
    return [(k, n, lay.param_layer[k], lay.param_split[k]) for k, n in lay.param_numel.items()
            if not 0 <= lay.param_layer[k] < lay.n_layers and (names is None or k in names)]


def _stage_rank_params(lay, ls, s: int, p: int, tied: set, tpd: int, names=None, per_layer=None,
                       outside=None) -> float:
    """Parameters one tensor-parallel rank of pipeline stage ``s`` (of ``p``) holds, of ``names`` only when given: its
    layers ``ls`` (``per_layer``: :func:`_layer_params` of ``names``, computed once for every stage), the embedding
    on the first stage, the head and a tied output projection (``tied``) on the last (``outside``:
    :func:`_outside_params` of ``names``, likewise)."""
    layer_p, layer_split = per_layer if per_layer is not None else _layer_params(lay, names)
    total = float(layer_p[ls].sum()) if len(ls) else 0.0
    split = float(layer_split[ls].sum()) if len(ls) else 0.0
    for k, n, li, is_split in outside if outside is not None else _outside_params(lay, names):
        if (li < 0 and s == 0) or (li >= lay.n_layers and s == p - 1) or (s == p - 1 and k in tied):
            total += n
            split += n if is_split else 0
    return split / tpd + (total - split) if tpd > 1 else total


def _tied_output(r: _MemoryRank) -> set:
    """Names of the parameters that are a tied output projection: before the repeated layers (the embedding) with
    the vocabulary in their shape, when the model ties its input and output embeddings; empty otherwise."""
    lay = r.lay
    if not (lay.tied and lay.vocab):
        return set()
    shapes = {k: tuple(q.shape) for k, q in r.net.named_parameters()}
    return {k for k in lay.param_numel if lay.param_layer[k] < 0 and lay.vocab in shapes.get(k, ())}


def _head_params(r: _MemoryRank, tpd: int) -> float:
    """Parameters of a language model's head on one tensor-parallel rank: those after the repeated layers (final
    norm, output projection) and, when the output projection is tied to the embedding, that embedding (the parameter
    whose shape holds the vocabulary); the split ones ``/ tpd``. 0 for a model without a vocabulary (a CNN's
    "layers" are not the units FSDP wraps, so nothing is said about its head)."""
    lay = r.lay
    if not lay.vocab:
        return 0.0
    tied = _tied_output(r)
    out = 0.0
    for k, n in lay.param_numel.items():
        if lay.param_layer[k] >= lay.n_layers or k in tied:
            out += n / tpd if (tpd > 1 and lay.param_split[k]) else n
    return float(out)


def _flat_memory(r: _MemoryRank, deg: dict, state: int) -> tuple[float, float, float, float]:
    """(parameters, gradients, optimizer states, activations) bytes of one GPU without a pipeline."""
    lay, size, tpd, d, cpd = r.lay, r.size, deg["tp"], deg["dp"], deg["cp"]
    # what a rank holds: experts / ep of the routed experts (split over tp with expert tensor parallelism)
    held = expert_parallel_layout(lay, deg.get("ep", 1), split_experts=_expert_split(deg, lay) > 1)
    P = lay.params
    shard = expert_shard_layout(lay)  # what a sharded optimizer cuts its shard from (an expert over all its holders)
    split = sum(v for k, v in shard.param_numel.items() if shard.param_split[k])
    layer_params, layer_split = _layer_params(held)
    outside = (r.layer < 0) | (r.layer >= lay.n_layers)
    kept, tmp = r.activations(range(lay.n_layers))
    act_b = kept + float(r.out_b[outside].sum()) + max(tmp, r.head_grad)
    fp8 = deg.get("fp8")
    if deg["fsdp"]:  # with tp (2D): the tensor-parallel rank's share, sharded over the dp group
        tp_share = split / tpd + (P - split) if tpd > 1 else P
        rank_p = tp_share / (d * cpd)
        if fp8:  # the gathered layer's FP8 linears' weights at one byte
            per_layer = _tp_rank_params(layer_params, layer_split, tpd)
            per_layer8 = _tp_rank_params(*_layer_params(held, fp8), tpd)
            layer_b = float(((per_layer - per_layer8) * size + per_layer8).max())
        else:
            layer_b = (float((layer_split / tpd + (layer_params - layer_split)).max()) if tpd > 1
                       else float(layer_params.max())) * size
        # two layers gathered at a time (the one running and the one prefetched); at the backward's start, when the
        # activations peak, the head (the output projection and final norm) is gathered instead of the second one —
        # FSDP2 does not reshard the root, nor torchtitan the last units, after the forward — with its gradient
        # whole until its reduce-scatter
        head = _head_params(r, tpd)
        params_b = rank_p * size + max(2 * layer_b, layer_b + head * size)
        return _framework_parts((params_b, rank_p * size + head * size, rank_p * state, act_b), deg, size)
    from perfmodel.step.trace import rank_share

    if held is lay:
        rank_p = split / tpd + (P - split) if tpd > 1 else float(P)
    else:  # a mixture of experts: experts / ep of the routed experts, each whole beside tensor parallelism
        rank_p = rank_share(held, held.param_numel, tpd)
    params_b = rank_p * size

    if fp8 and not deg["fsdp"]:  # Megatron's --fp8-param-gather: the FP8 linears' weights stored in FP8
        rank8 = rank_share(held, fp8, tpd)
        params_b = (rank_p - rank8) * size + rank8
    cache, per = deg.get("te_cache") or (set(), 0.0)
    if cache:  # Transformer Engine's FP8 weight cache (_te_weight_cache)
        params_b += rank_share(held, cache, tpd) * per
    # the distributed optimizer's shard is cut from every parameter's tensor-parallel share (an expert's over all the
    # tp·cp·dp/ep ranks that hold it), not from what the rank holds
    return _framework_parts((params_b, rank_p * size, rank_p * state, act_b), deg, size,
                            sharded_ratio=(split / tpd + (P - split) if tpd > 1 else P) / rank_p)


def _expert_split(deg: dict, lay) -> int:
    """The tensor-parallel ranks each routed expert of ``lay`` is split over (:attr:`perfmodel.Parallelism.
    expert_tensor_parallel` as the layout resolves it): 1 for a dense model or without tensor parallelism; a
    ``StrategyError`` where ``ep`` does not divide the ``dp·cp`` ranks it is then carved from."""
    from perfmodel.step.strategy import check_expert_grid

    etp = int(deg.get("expert_tensor_parallel", 1)) if lay.experts and deg["tp"] > 1 else 1
    check_expert_grid(deg["name"], f"a mixture of experts ({lay.experts} routed experts)", deg["tp"], deg.get("ep", 1),
                      deg["dp"] * deg["cp"], etp, framework=deg.get("framework", "pytorch"), expert_ffn=lay.expert_ffn,
                      hidden=lay.hidden)
    return etp


def _tp_rank_params(params: np.ndarray, split: np.ndarray, tp: int) -> np.ndarray:
    """Parameters one tensor-parallel rank holds of ``params``, ``split`` of them divided over the ``tp`` ranks."""
    return split / tp + (params - split) if tp > 1 else params


def _framework_parts(part: tuple[float, float, float, float], deg: dict, size: int,
                     sharded_ratio: float = 1.0) -> tuple[float, float, float, float]:
    """One GPU's (or one stage's) parts as its framework keeps them: Megatron-Core's FP32 main gradients, and its
    distributed optimizer's states sharded over the ``dp·cp`` ranks; PyTorch's as they are. Under expert parallelism
    a rank holds ``experts / ep`` of the routed experts, each whole beside tensor parallelism, but the distributed
    optimizer shards each over the ``tp·dp·cp/ep`` ranks that hold it: its shard is ``1/(dp·cp)`` of every
    parameter's tensor-parallel share, the held parameters' states times ``sharded_ratio`` (that share over the held
    parameters) over ``dp·cp``."""
    if deg.get("framework") != "megatron":
        return part
    params_b, grads_b, opt_b, act_b = part
    grads_b = grads_b * max(4 / size, 1.0)
    if deg.get("distributed_optimizer"):
        opt_b = opt_b * sharded_ratio / (deg["dp"] * deg["cp"])
    if deg.get("shard_gradients"):  # ZeRO-2: the rank's shard, and one bucket whole until its reduce-scatter
        from perfmodel.step.parallel import megatron_bucket_bytes

        ranks = deg["dp"] * deg["cp"]
        grads_b = min(grads_b, grads_b * sharded_ratio / ranks + megatron_bucket_bytes(max(size, 4), ranks))
    return params_b, grads_b, opt_b, act_b


def pipeline_in_flight(p: int, v: int, m: int, s: int) -> list:
    """Micro-batches whose activations each of pipeline rank ``s``'s ``v`` model chunks holds at the schedule's peak,
    ``m`` micro-batches over ``p`` ranks. 1F1B (``v == 1``): ``min(m, p − s)``, the forwards before the rank's first
    backward. Interleaved 1F1B (Megatron-Core's and PyTorch's ``ScheduleInterleaved1F1B``): ``(p−s−1)·2 + (v−1)·p``
    warm-up chunk forwards and one more in the steady state, at most the ``m·v`` there are, run in groups of ``p``
    micro-batches chunk after chunk (Megatron's ``microbatch_group_size_per_vp_stage`` default): on the first rank of
    a long step ``2p−1`` in its first chunk and ``p`` in the others, Korthikanti et al.'s (2022, §4.2.3)
    ``p·(1 + (p−1)/(p·v))`` micro-batches' worth of equal chunks; with ``m ≤ p`` every micro-batch of every chunk,
    as 1F1B's first rank."""
    if v == 1:
        return [float(min(m, p - s))]
    n = min((p - s - 1) * 2 + (v - 1) * p + 1, m * v)
    counts, done, g = [0.0] * v, 0, 0
    while done < n:
        for j in range(v):
            take = min(p, m - g * p, n - done)
            if take <= 0:
                break
            counts[j] += take
            done += take
        g += 1
    return counts


def _pipeline_memory(r: _MemoryRank, deg: dict, state: int) -> tuple[float, float, float, float]:
    """(parameters, gradients, optimizer states, activations) bytes of the pipeline stage that needs the most, each
    stage's parts counted as its framework keeps them."""
    lay, size, tpd, p, m, v = r.lay, r.size, deg["tp"], deg["pp"], deg["m"], deg["v"]
    chunks = pipeline_chunks(lay.n_layers, p, v, deg.get("pipeline_layers"))  # interleaved: chunk c on rank c mod p
    bounds = [np.concatenate([c for j, c in enumerate(chunks) if j % p == s]) for s in range(p)]
    # a tied output projection sits on the last stage too: the shapes of the parameters say which one it is
    tied = _tied_output(r)
    fp8 = deg.get("fp8") or set()
    cache, per = deg.get("te_cache") or (set(), 0.0)
    # all the parameters, the FP8-kept ones and those of TE's weight cache: per layer once, per stage below
    sets = (None, fp8, cache)
    # what a rank holds: experts / ep of the routed experts (split over tp with expert tensor parallelism)
    own = expert_parallel_layout(lay, deg.get("ep", 1), split_experts=_expert_split(deg, lay) > 1)
    shard_lay = expert_shard_layout(lay)  # what a sharded optimizer cuts its shard from (an expert over all its holders)
    per_layer = [_layer_params(own, names) for names in sets]
    outside = [_outside_params(own, names) for names in sets]
    layer_params, layer_split = per_layer[0]
    full = _layer_params(shard_lay) if own is not lay else per_layer[0]
    full_outside = _outside_params(shard_lay) if own is not lay else outside[0]
    best = None
    for s, ls in enumerate(bounds):
        stage_p, st8, stc = (_stage_rank_params(own, ls, s, p, tied, tpd, names, lp, out)
                             for names, lp, out in zip(sets, per_layer, outside))
        # sharded (FSDP, the distributed optimizer): 1/(dp·cp) of every parameter of the stage, experts included
        stage_full = (_stage_rank_params(shard_lay, ls, s, p, tied, tpd, None, full, full_outside) if own is not lay
                      else stage_p)
        # the stage's parameters at the training precision but its FP8 linears' weights: one byte each where they
        # are gathered (FSDP) or stored (Megatron) in FP8
        stage_b = (stage_p - st8) * size + st8 if fp8 else stage_p * size
        stage_b += stc * per  # Transformer Engine's FP8 weight cache under Megatron-Core (_te_weight_cache)
        # each of the rank's chunks (local chunk j is chunk j·p + s) keeps what its layers save for as many
        # micro-batches as its forwards are ahead of their backwards at the schedule's peak; the embedding's outputs
        # belong to the first chunk, the head's to the last
        held, tmp = 0.0, 0.0
        for j, n_mb in enumerate(pipeline_in_flight(p, v, m, s)):
            kept_j, tmp_j = r.activations(chunks[j * p + s])
            if s == 0 and j == 0:
                kept_j += float(r.out_b[r.layer < 0].sum())
            if s == p - 1 and j == v - 1:
                kept_j += float(r.out_b[r.layer >= lay.n_layers].sum())
            held, tmp = held + kept_j * n_mb, max(tmp, tmp_j)
        if s == p - 1:
            tmp = max(tmp, r.head_grad)
        if deg["fsdp"]:
            # FSDP with a pipeline (torchtitan): the stage's shard (1/(dp·cp)) of parameters, gradients and
            # optimizer states, plus its parameters gathered whole for the step (no resharding between
            # micro-batches) and their unsharded gradients accumulated until the last micro-batch — in the
            # reduce dtype, FP32 (FSDP2 upcasts an accumulated unsharded gradient to its mixed-precision policy's
            # reduce_dtype, FSDPParam.to_accumulated_grad_if_needed; torchtitan reduces in float32)
            shard = stage_full / (deg["dp"] * deg["cp"])
            reduce_b = max(size, FSDP_REDUCE_BYTES)
            if deg.get("shard_gradients"):
                # ZeRO-2 (every micro-batch reduce-scattered): the shard's accumulated gradients, and the largest of
                # the stage's layers' unsharded gradients until its reduce-scatter
                layer_p = float(_tp_rank_params(layer_params[ls], layer_split[ls], tpd).max()) if len(ls) else 0.0
                part = (shard * size + stage_b, shard * reduce_b + layer_p * reduce_b, shard * state, held + tmp)
            else:
                part = (shard * size + stage_b, shard * size + stage_p * reduce_b, shard * state, held + tmp)
        else:
            part = (stage_b, stage_p * size, stage_p * state, held + tmp)
        part = _framework_parts(part, deg, size, sharded_ratio=stage_full / stage_p if stage_p else 1.0)
        if best is None or sum(part) > sum(best):
            best = part
    return best

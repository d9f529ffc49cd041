"""Implementation of :func:`perfmodel.features.extract` (see the package docstring for the conventions)."""
from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = [
    "extract", "FeatureExtractionError", "DataDependentOpsError", "UnsupportedOpsWarning", "FEATURE_COLUMNS",
    "PER_LAYER_COLUMNS", "PER_OP_COLUMNS", "OPTIMIZERS",
]

_MIB = 2**20


class FeatureExtractionError(RuntimeError):
    """The model could not be analysed (bad input shape, the model raised, unknown target)."""


class DataDependentOpsError(FeatureExtractionError, ValueError):
    """The model runs ops whose output shapes depend on tensor values, which stand-in or meta tensors do not have."""


class UnsupportedOpsWarning(UserWarning):
    """Some ops that compute have no FLOP formula and are not known to be free; their FLOPs are not in the totals."""


#: Columns of the one-row frame returned by :func:`extract` (units in names).
FEATURE_COLUMNS = (
    "model", "batch_size", "input_shape", "forward_macs", "forward_flops", "backward_flops", "train_step_flops",
    "params", "trainable_params", "trainable_tensors", "param_bytes", "param_bytes_by_dtype", "avg_tensor_mib",
    "max_tensor_mib", "buffer_bytes", "state_dict_bytes", "optimizer_state_bytes", "checkpoint_bytes_estimate",
    "activation_bytes", "n_conv", "n_linear", "n_norm", "n_weight_layers", "depth", "unsupported_ops",
)

#: Columns of the frame returned by :func:`extract` with ``per_layer=True`` (one row per module).
PER_LAYER_COLUMNS = (
    "model", "module", "module_type", "depth_in_tree", "params", "forward_macs", "forward_flops", "backward_flops",
    "train_step_flops", "output_bytes", "batch_size",
)

#: Columns of the frame returned by :func:`extract` with ``per_op=True`` (one row per aten op of the training step).
PER_OP_COLUMNS = (
    "model", "batch_size", "phase", "index", "op", "op_class", "module", "flops", "bytes_read", "bytes_written", "dtype",
    "input_shapes", "output_shapes", "attributes", "dataflow",
)

# ----------------------------------------------------------------------------------------------------------- inputs
@functools.lru_cache(maxsize=64)
def _zoo_module(model_id: str):
    """A zoo CNN built on the meta device (no memory); cached — extract() never modifies the modules it analyses."""
    from perfmodel import zoo

    return zoo.build(model_id, device="meta")


def _resolve_model(model):
    """(module, display name); zoo ids are built on the meta device (no memory, no initialisation)."""
    import torch

    if isinstance(model, str):
        from perfmodel.datasets.names import canonical_model

        name = canonical_model(model)  # unknown id: UnknownNameError listing the ids
        return _zoo_module(name), name
    if not isinstance(model, torch.nn.Module):
        raise FeatureExtractionError(
            f"extract() needs a torch.nn.Module or a zoo id (e.g. 'resnet-32'); got {type(model).__name__}. "
            "Pass an instantiated module, or a name from perfmodel.zoo.list_models()."
        )
    return model, type(model).__name__


def _check_shape(input_shape) -> tuple[int, ...]:
    if isinstance(input_shape, (int, np.integer)) and not isinstance(input_shape, bool):
        input_shape = (int(input_shape),)
    ok = (
        isinstance(input_shape, Sequence) and not isinstance(input_shape, str) and len(input_shape) > 0
        and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in input_shape)
    )
    if not ok:
        hint = ""
        if isinstance(input_shape, str):  # "512" would be read as (5, 1, 2)
            import re

            dims = tuple(int(d) for d in re.findall(r"[0-9]+", input_shape))
            hint = f" A string is not a shape: pass {f'input_shape={dims!r}' if dims else 'a tuple of ints, e.g. input_shape=(512,)'}."
        raise FeatureExtractionError(
            "input_shape must be a non-empty sequence of positive ints without the batch dimension, e.g. (3, 32, 32); "
            f"got {input_shape!r}.{hint}"
        )
    return tuple(int(d) for d in input_shape)


def _check_dtype(value, what: str):
    """``value`` as a ``torch.dtype``: a dtype, its name (``"int64"``, ``"long"``, ``"float32"``) or ``"torch.int64"``."""
    import torch

    if value is None or isinstance(value, torch.dtype):
        return value
    if isinstance(value, str):
        found = getattr(torch, value.strip().removeprefix("torch."), None)
        if isinstance(found, torch.dtype):
            return found
    examples = "'int64', 'long', 'float32', 'bfloat16', 'torch.int64'"
    raise FeatureExtractionError(
        f"{what} must be a torch.dtype or the name of one ({examples}), or None; got {value!r}. Pass e.g. "
        f"{what}=torch.long (or {what}='int64') for token ids."
    )


def _make_input(shape, batch, device, input_dtype, input_high):
    import torch

    full = (batch, *shape)
    if input_dtype is not None and not torch.empty((), dtype=input_dtype).is_floating_point():
        if device == "meta":
            return torch.empty(full, dtype=input_dtype, device="meta")
        return torch.randint(0, input_high, full, dtype=input_dtype, generator=torch.Generator().manual_seed(0))
    return torch.zeros(full, dtype=input_dtype or torch.get_default_dtype(), device=device)


def _itemsize(t, dtype) -> int:
    """Bytes per element of ``t`` after ``Module.to(dtype)`` (which casts floating-point tensors only)."""
    import torch

    if dtype is not None and t.is_floating_point():
        return torch.empty((), dtype=dtype).element_size()
    return t.element_size()


def _stand_ins(net, device: str, dtype) -> dict:
    """Tensors to run ``net`` with (``torch.func.functional_call``), so that the module itself is never modified.

    Parameters on ``device`` are used detached (no copy; gradients go to the stand-in, not to ``.grad`` of the
    module); buffers are cloned (BatchNorm running statistics stay untouched); tensors on another device, or to be
    cast to ``dtype``, are replaced by zeros (values do not matter to the counts; parameters by a broadcast zero that
    takes no memory) — on ``meta``, by empty meta tensors.
    """
    import torch

    def one(t, buffer):
        dt = dtype if (dtype is not None and t.is_floating_point()) else t.dtype
        if device == "meta":
            return torch.empty(t.shape, dtype=dt, device="meta")
        if t.device.type == device and dt == t.dtype:
            return t.detach().clone() if buffer else t.detach()
        if buffer:  # written in place (running statistics): needs its own memory
            return torch.zeros(t.shape, dtype=dt, device=device)
        return torch.zeros((), dtype=dt, device=device).expand(t.shape)  # read-only zeros without memory

    state = {n: one(p, False).requires_grad_(p.requires_grad) for n, p in net.named_parameters()}
    state.update({n: one(b, True) for n, b in net.named_buffers()})
    return state


# ----------------------------------------------------------------------------------------------------- static part
def _static(net, dtype) -> dict:
    from torch import nn

    params = list(net.parameters())
    train = [p for p in params if p.requires_grad]
    by_dtype: dict[str, int] = {}
    for p in params:
        key = str(dtype if (dtype is not None and p.is_floating_point()) else p.dtype).replace("torch.", "")
        by_dtype[key] = by_dtype.get(key, 0) + p.numel() * _itemsize(p, dtype)
    train_bytes = sum(p.numel() * _itemsize(p, dtype) for p in train)
    state = {id(t): t for t in net.state_dict(keep_vars=True).values() if hasattr(t, "numel")}  # tied weights once
    conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
    norm = (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm)
    if hasattr(nn, "RMSNorm"):
        norm = (*norm, nn.RMSNorm)
    mods = list(net.modules())
    n_conv = sum(isinstance(m, conv) for m in mods)
    n_linear = sum(isinstance(m, (nn.Linear, nn.Bilinear)) for m in mods)
    state_bytes = sum(t.numel() * _itemsize(t, dtype) for t in state.values())
    return dict(
        params=sum(p.numel() for p in params), trainable_params=sum(p.numel() for p in train), trainable_tensors=len(train),
        param_bytes=sum(by_dtype.values()), param_bytes_by_dtype=";".join(f"{k}:{v}" for k, v in sorted(by_dtype.items())),
        avg_tensor_mib=(train_bytes / _MIB / len(train)) if train else 0.0,
        max_tensor_mib=max((p.numel() * _itemsize(p, dtype) for p in train), default=0) / _MIB,
        buffer_bytes=sum(b.numel() * _itemsize(b, dtype) for b in net.buffers()), state_dict_bytes=state_bytes,
        optimizer_state_bytes=train_bytes, checkpoint_bytes_estimate=state_bytes + train_bytes,
        n_conv=n_conv, n_linear=n_linear, n_norm=sum(isinstance(m, norm) for m in mods), n_weight_layers=n_conv + n_linear,
    )


# --------------------------------------------------------------------------------------------------- one train step
def _longest_weight_path(root) -> int:
    """Longest chain of convolution / matmul nodes in the autograd graph ending at ``root`` (iterative DP)."""
    weighty = ("Convolution", "Addmm", "Mm", "Bmm", "Baddbmm", "Matmul", "Linear", "Attention")
    memo: dict = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node is None or node in memo:
            continue
        children = [f for f, _ in getattr(node, "next_functions", ()) if f is not None]
        if not expanded:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in memo)
        else:
            own = 1 if any(w in type(node).__name__ for w in weighty) else 0
            memo[node] = own + max((memo.get(c, 0) for c in children), default=0)
    return memo.get(root, 0)


def _tensors(obj) -> list:
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return [obj] if hasattr(obj, "grad_fn") else []


class _ScopeTracker:
    """Attributes every op, forward and backward, to the chain of modules it runs in.

    Forward: module pre/post hooks keep a stack of module names, read by the counting mode as ``mode.scope``.
    Backward: each autograd node is tagged with the scope that created it — on entering a module, the nodes created
    so far (reachable from its inputs) get the outer scope; on leaving it, the nodes created inside (reachable from its
    outputs) get the inner one — and a pre-hook on the node sets ``mode.scope`` before the node's backward ops run
    (the CPU autograd engine runs the nodes one at a time on the calling thread). Backward FLOPs of a layer are thereby
    those of the gradients of its own forward ops, whatever the module nesting.
    """

    def __init__(self, net, mode, names: dict):
        self.mode, self.names = mode, names
        self.stack: list = [()]
        self.tags: dict = {}
        mode.scope = ()

    def _tag(self, tensors, scope) -> None:
        todo = [t.grad_fn for t in tensors if t.grad_fn is not None]
        tags = self.tags
        while todo:
            node = todo.pop()
            if node is None or node in tags:
                continue
            tags[node] = scope
            todo.extend(f for f, _ in node.next_functions)

    def pre(self, mod, args) -> None:
        self._tag(_tensors(args), self.stack[-1])
        self.stack.append(self.stack[-1] + (self.names[mod],))
        self.mode.scope = self.stack[-1]

    def post(self, mod, args, out) -> None:
        self._tag(_tensors(out), self.stack[-1])
        self.stack.pop()
        self.mode.scope = self.stack[-1]

    def arm_backward(self, outputs) -> None:
        self._tag(_tensors(outputs), ())
        mode = self.mode

        def setter(scope):
            def hook(grad_outputs):
                mode.scope = scope

            return hook

        for node, scope in self.tags.items():
            if type(node).__name__ != "AccumulateGrad":
                node.register_prehook(setter(scope))
        mode.scope = ()


def _one_step(net, state, x, *, skip_compute: bool, per_layer: bool, depth: bool = True, memory_limit=None,
              per_op: bool = False, optimizer=None) -> dict:
    """Run forward + ``sum().backward()`` (+ the optimizer step) once on stand-in tensors; return the counts and records."""
    import torch
    from torch.func import functional_call

    from perfmodel.features._counting import MetaSDPAMode, ShapeOnlyMode, ValueReadMode, op_class
    from perfmodel.features._dataflow import resolve

    names = {m: n for n, m in net.named_modules()}
    leaves = {m for m in names if not list(m.children())}
    scoped = per_layer or per_op
    mode = ShapeOnlyMode(skip_compute=skip_compute, count=True, scoped=scoped, memory_limit=memory_limit, trace=per_op)
    act_records: list = []  # (module name, output bytes) of every leaf-module call, in order
    out_records: list = []  # the same for every module

    def bytes_hook(mod, inp, out):
        rec = (names[mod], sum(t.numel() * t.element_size() for t in _tensors(out) if isinstance(t, torch.Tensor)))
        out_records.append(rec)
        if mod in leaves:
            act_records.append(rec)

    handles = [m.register_forward_hook(bytes_hook) for m in names]
    tracker = _ScopeTracker(net, mode, names) if scoped else None
    if tracker is not None:
        handles += [m.register_forward_pre_hook(tracker.pre) for m in names]
        handles += [m.register_forward_hook(tracker.post) for m in names]
    loss = None
    fake_values = skip_compute and x.device.type != "meta"
    reads = ValueReadMode() if fake_values else contextlib.nullcontext()
    with mode:
        try:
            with MetaSDPAMode() if x.device.type == "meta" else contextlib.nullcontext(), reads:
                out = functional_call(net, state, (x,), strict=False, tie_weights=True)
        finally:
            for h in handles:
                h.remove()
        n_fwd = len(mode.records)
        outs = [t for t in _tensors(out) if isinstance(t, torch.Tensor) and t.requires_grad]
        n_trace = [0, 0]
        if outs:
            if tracker is not None:
                tracker.arm_backward(outs)
            loss = sum(t.float().sum() for t in outs)
            n_trace[0] = len(mode.trace_records)
            loss.backward()
        else:
            n_trace[0] = len(mode.trace_records)
        n_trace[1] = len(mode.trace_records)
    if fake_values and reads.reads:
        what, where = reads.reads[0]
        raise DataDependentOpsError(_value_read_message("The model", what, where, meta=False))
    _check_data_dependent(mode, fake_values)
    fwd_rec, bwd_rec = mode.records[:n_fwd], mode.records[n_fwd:]
    if optimizer is not None:
        _optimizer_step(mode, state, optimizer)
    module_flops: tuple = ({}, {})
    if per_layer:
        for i, recs in enumerate((fwd_rec, bwd_rec)):
            acc = module_flops[i]
            for _, n, scope in recs:
                for name in scope[1:]:
                    acc[name] = acc.get(name, 0) + n
            acc[""] = sum(n for _, n, _ in recs)  # the root also gets ops outside any module (the loss)
    out_bytes: dict = {}
    for n, b in out_records:
        out_bytes[n] = out_bytes.get(n, 0) + b
    return {
        "forward_flops": sum(r[1] for r in fwd_rec),
        "backward_flops": sum(r[1] for r in bwd_rec),
        "activation_bytes": sum(b for _, b in act_records),
        "records": {"forward_flops": [r[:2] for r in fwd_rec], "backward_flops": [r[:2] for r in bwd_rec],
                    "module_output_bytes": out_records},
        "depth": _longest_weight_path(loss.grad_fn) if (loss is not None and depth) else 0,
        "seen": mode.seen,
        "seen_ops": mode.seen_ops,
        "module_flops": module_flops,
        "module_out_bytes": out_bytes,
        "trace": resolve(mode.trace_records, n_trace, op_class) if per_op else mode.trace_records,
        "state": state,
        "trace_phases": n_trace,
    }


def _check_data_dependent(mode, fake_values: bool) -> None:
    """Refuse ops whose output shapes depend on values when the values are stand-in zeros (never undercount silently)."""
    from perfmodel.features._counting import DATA_DEPENDENT, _op_name

    bad = sorted({str(op._overloadpacket) for op in mode.seen_ops if _op_name(op) in DATA_DEPENDENT})
    if fake_values and bad:
        raise DataDependentOpsError(
            f"The model runs op(s) whose output shape depends on the values of its tensors ({', '.join(bad)}; e.g. a "
            "mixture-of-experts router choosing tokens per expert). extract() runs the step on zero-valued stand-ins "
            "(skip_compute=True), so the counts downstream of them would be those of all-zero data, not of a real "
            "step. Expected a model whose shapes do not depend on values; replace the data-dependent part by a static "
            "one (perfmodel.zoo.hf.build gives Switch Transformers uniform routing), or pass skip_compute=False to count "
            "one step on the module's own weights and random inputs."
        )


def _value_read_message(name, op, where, *, meta: bool) -> str:
    made_up = ("On the meta device there are no values to decide it" if meta else
               "extract() runs the step on zero-valued stand-ins (skip_compute=True), so the branch taken or the number of "
               "iterations would be made up, and the counts could be those of another graph")
    return (
        f"{name} reads the value of a tensor in Python ({op}; Tensor.item(), or bool / int / float of a tensor, as in "
        f"`if x.mean() > 0:` or `range(int(x.sum()))`) at {where}. Its graph depends on the values of its tensors. "
        f"{made_up}. Expected control flow that depends on shapes only; make it static, or pass device='cpu' and "
        "skip_compute=False to count the step the module takes on its own weights and the input extract() makes."
    )


#: Optimizer steps ``extract(..., per_op=True, optimizer=...)`` can add (torch's default multi-tensor implementation).
OPTIMIZERS = ("sgd-momentum", "adam")


def _optimizer_step(mode, state: dict, optimizer: str) -> None:
    """Record one steady-state optimizer step (after a first step that creates the state) on meta tensors.

    The parameters that received a gradient are mirrored on the meta device (the stand-ins on the CPU may share memory
    with the module's own weights, which must stay untouched); torch's ``foreach`` implementation is used, the default
    on GPUs. The ops are appended to ``mode.trace_records``.
    """
    import torch

    params = []
    for t in state.values():
        if isinstance(t, torch.Tensor) and t.requires_grad and t.grad is not None:
            p = torch.empty(t.shape, dtype=t.dtype, device="meta", requires_grad=True)
            p.grad = torch.empty(t.grad.shape, dtype=t.grad.dtype, device="meta")
            params.append(p)
    if not params:
        return
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    else:
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)
    from perfmodel.features._counting import ShapeOnlyMode

    with ShapeOnlyMode():  # (its fast paths for meta tensors; nothing recorded)
        opt.step()  # creates the momentum / moment buffers: not part of a steady-state step
    mode.scope = ()
    mode.host_only_skipped = True  # the step counters of torch's default (non-capturable) Adam live on the host
    try:
        with mode:
            opt.step()
    finally:
        mode.host_only_skipped = False


# -------------------------------------------------------------------------------------------------- extrapolation
def _batch_split(rec_a: list, rec_b: list, ba: int, bb: int):
    """(constant, per-sample) parts of a count from per-op records at batches ``ba`` < ``bb``, or None.

    Each op's count must be the same at both batches (e.g. a parameter-only matmul) or exactly proportional to the
    batch (every op with the batch in its shapes: conv, linear, bmm, attention). Anything else — a B×B similarity
    matrix, a token prepended to the batch, control flow that depends on the batch — returns None: the count is not
    extrapolated but made at the real batch.
    """
    if len(rec_a) != len(rec_b):
        return None
    const = per_sample = 0
    for (ka, va), (kb, vb) in zip(rec_a, rec_b):
        if ka != kb:
            return None
        if va == vb:
            const += va
        elif va * bb == vb * ba and va % ba == 0:
            per_sample += va // ba
        else:
            return None
    return const, per_sample


def _affine(points: list, batch: int) -> int:
    """Value at ``batch`` of the line through (b1, v1), (b2, v2); exact once :func:`_batch_split` accepted every op."""
    if len(points) == 1:
        return points[0][1]
    (b1, v1), (b2, v2) = points
    return v1 + (batch - b1) * (v2 - v1) // (b2 - b1)


# ------------------------------------------------------------------------------------------------------- extract
def extract(
    model,
    input_shape,
    *,
    batch_size: int = 1,
    per_layer: bool = False,
    per_op: bool = False,
    optimizer: str | None = None,
    device: str | None = None,
    dtype=None,
    input_dtype=None,
    input_high: int = 2,
    skip_compute: bool = True,
    train: bool = True,
    max_memory_bytes: int | None = None,
    full_trace: bool = False,
) -> pd.DataFrame:
    """Graph features of a model for one training step at ``batch_size``, from shapes.

    Parameters
    ----------
    model : torch.nn.Module or str
        A module, or a zoo id (``"resnet-32"``; any upstream spelling, e.g. ``"Res32"``). The module is not
        modified: it runs on stand-in tensors (parameters detached, buffers cloned), so its weights, ``.grad`` and
        BatchNorm running statistics are left as they were.
    input_shape : sequence of int
        Shape of one sample, without the batch dimension, e.g. ``(3, 32, 32)``; for token models ``(seq_len,)`` with
        ``input_dtype=torch.long``.
    batch_size : int, default 1
        Batch size the counts are for. On ``"cpu"`` the step runs at batch 1 and 2 (2 and 3 for models that cannot
        run a batch of one, e.g. ``BatchNorm1d`` in training) and the counts are extrapolated — exactly, because every
        op's FLOPs and every module's output bytes are checked to be constant or proportional to the batch; if one is
        not, the step is counted again at ``batch_size`` on the meta device. The cost does not grow with the batch.
    per_layer : bool, default False
        One row per module (:data:`PER_LAYER_COLUMNS`: ``module``, ``module_type``, ``params`` of the module itself,
        ``forward_macs``, ``forward_flops``, ``backward_flops``, ``train_step_flops`` (a parent's include its
        children's), ``output_bytes`` (bytes of the module's outputs, summed over calls)) instead of the one-row
        summary; the frame's ``attrs["unsupported_ops"]`` lists the uncounted ops.
    per_op : bool, default False
        One row per aten op of the training step (:data:`PER_OP_COLUMNS`), counted at ``batch_size``:

        * ``phase``: ``"forward"`` (incl. the loss), ``"backward"`` or ``"optimizer"``; ``index``: order of execution;
        * ``op`` (``"aten.addmm"``), ``op_class`` (``"matmul"``, ``"conv"``, ``"attention"``, ``"elementwise"``,
          ``"reduction"``, ``"norm"``, ``"softmax"``, ``"embedding"``, ``"copy"``, ``"view"`` ... see
          :func:`perfmodel.features._counting.op_class`);
        * ``module``: the module path the op ran in (``"(root)"`` for the model's own forward, ``""`` for ops outside
          the model: the summed loss, the optimizer); backward ops are attributed to the module of the forward op they
          differentiate, as with ``per_layer``;
        * ``flops``: torch's formulas, **2 FLOPs per multiply–add** (FlopCounterMode's convention; fvcore counts 1),
          0 for the ops the convention leaves out (elementwise, norms ...); the forward and backward rows sum to
          ``forward_flops`` and ``backward_flops`` of the one-row summary;
        * ``bytes_read`` / ``bytes_written``: sizes of the op's tensor inputs / outputs (an in-place op's output is the
          tensor it writes); 0 for views (no data moves); ``dtype`` of the first output (else input);
        * ``input_shapes`` / ``output_shapes``: the tensors' shapes, ``"8x3x32x32;16x3x3x3"`` (``"-"`` for a 0-d tensor);
        * ``attributes``: what else of the call changes the kernel's work — ``"causal"`` for a fused attention kernel
          called with ``is_causal=True`` (its ``flops`` are still counted over the whole score matrix, FlopCounterMode's
          convention; the kernel computes about half of it), else ``""``;
        * ``dataflow``: which tensors the op reads and writes and where they come from and go, in rows relative to
          it — ``((bytes, produced, seen), ...)`` per tensor read and ``((bytes, reach, later), ...)`` per tensor
          written (:mod:`perfmodel.features._dataflow`); what a compiler's fused kernel moves is computed from it.

        Runs once at the real ``batch_size`` (no extrapolation: every shape is the real one).
    optimizer : {None, "sgd-momentum", "adam"}, default None
        With ``per_op=True``: also the ops of one steady-state optimizer step (``phase="optimizer"``; momentum 0.9, or
        Adam), in torch's multi-tensor ``foreach`` implementation, the default on GPUs. ``None``: forward + backward
        only. The optimizer's elementwise ops count 0 FLOPs by the convention above; their bytes are what they move.
    device : {None, "cpu", "meta"}, default None
        ``"meta"``: no parameter or activation memory is allocated (models too large for memory; zoo ids are built on
        meta), and the step runs once at ``batch_size``. Slower per op than ``"cpu"``, independent of model size.
        ``None`` (default): ``"meta"`` for a module whose parameters or buffers are on the meta device (e.g.
        :func:`perfmodel.zoo.hf.build`), else ``"cpu"`` — which moves to meta by itself when the step would not fit in
        memory (``max_memory_bytes``).
    dtype : torch.dtype or str, optional
        Count as if the floating-point parameters and buffers were cast to ``dtype`` (bytes follow); the module is
        not cast.
    input_dtype : torch.dtype or str, optional
        Input dtype (a ``torch.dtype`` or its name: ``"int64"``, ``"long"``, ``"torch.int64"``, ``"float32"``); an
        integer dtype draws token ids in ``[0, input_high)``. Default: ``dtype`` when given, else
        torch's default dtype.
    input_high : int, default 2
        Exclusive upper bound of integer inputs (the vocabulary size for embeddings).
    skip_compute : bool, default True
        Return zeros instead of computing the counted ops (convolutions, matmuls, attention). ``False`` computes
        everything (needed only when control flow depends on intermediate values).
    train : bool, default True
        Training mode for the step (BatchNorm batch statistics, dropout, Shake-Shake mixing); the mode is restored.
    max_memory_bytes : int, optional
        Memory the ``"cpu"`` step may use (parameter gradients, cloned buffers, the input and every op output, counted
        as it runs). Default: three quarters of the available memory (``psutil``, else ``sysconf``). A model over the
        limit is counted on the ``meta`` device instead — the counts agree — and ``attrs["device"]`` says ``"meta"``;
        only a model that also cannot run on meta is refused, with the memory it would need.
    full_trace : bool, default False
        With ``per_op=True`` on ``meta``, a model with a deep stack of identical layers (a ``ModuleList`` of
        transformer blocks: GPT-2, BERT, OPT; Switch Transformers' alternating dense and sparse blocks) is traced with
        only four repeated units of the stack, and the rows of one unit are repeated to the full depth with their
        module names (:mod:`perfmodel.features._repeats`) — the same rows as the full trace, about ten times faster for
        GPT-2-large. It is used only when the trace proves the units repeated (two of them give identical rows); else
        the full model is traced. ``attrs["repeated_stacks"]`` lists the stacks expanded (empty when none).
        ``True`` always traces every layer.

    Notes
    -----
    While it runs, ``extract`` uses one intra-op thread (the tensors are tiny; threads only add synchronisation), turns
    oneDNN off (recurrent layers then run torch's cell-by-cell kernels, counted as on ``meta``) and restores both, and
    the global random states (torch CPU, Python ``random``, NumPy), afterwards — also on error. Ops computed outside
    torch (e.g. NumPy inside a custom ``autograd.Function``) are invisible to the counting and cannot be reported.

    Returns
    -------
    DataFrame
        One row with :data:`FEATURE_COLUMNS`:

        * ``forward_macs`` (multiply–accumulates), ``forward_flops`` (= 2 × MACs, torch's convention; fvcore counts
          1 per MAC), ``backward_flops`` (counted op by op), ``train_step_flops`` (forward + backward; no optimizer);
        * ``params``, ``trainable_params`` (counts), ``trainable_tensors`` (parameters with ``requires_grad``),
          ``param_bytes`` and ``param_bytes_by_dtype`` (``"float32:2775272"``), ``avg_tensor_mib`` (trainable bytes /
          2^20 / trainable tensors: CM-DARE's "Average Tensor Size (MB)"), ``max_tensor_mib`` (largest trainable
          tensor, MiB: CM-DARE's "Max Tensor Size (MB)");
        * ``buffer_bytes`` (BatchNorm running statistics ...), ``state_dict_bytes``, ``optimizer_state_bytes``
          (momentum SGD: one slot per trainable parameter), ``checkpoint_bytes_estimate`` (state dict + momentum, like
          TensorFlow's saver: CM-DARE's "Weight File Size");
        * ``activation_bytes`` (sum of the outputs of leaf modules in the forward pass, at ``batch_size``);
        * ``n_conv``, ``n_linear``, ``n_norm``, ``n_weight_layers``, ``depth`` (longest chain of convolution / matmul
          ops from input to loss), ``batch_size``, ``input_shape`` (``"3x32x32"``), ``model``;
        * ``unsupported_ops`` (``;``-joined ops without a FLOP formula that are not known to be free; empty when none).

        ``attrs["device"]``: the device the step was counted on (``"meta"`` when a CPU model exceeded
        ``max_memory_bytes``).

    Raises
    ------
    FeatureExtractionError
        Bad input shape, batch size, device or memory limit, not a module, or the model failed to run: the message
        names the likely cause (input shape, input dtype, BatchNorm with a batch of one, token ids beyond the
        vocabulary, out of memory) and the model's exception is chained.
    perfmodel.datasets.UnknownNameError
        ``model`` is a string that is not a zoo id.

    Warns
    -----
    UnsupportedOpsWarning
        Once, listing the ops without a FLOP formula that are not known to be free (their FLOPs are not in the totals);
        see :data:`perfmodel.features._counting.KNOWN_FREE`.
    """
    shape = _check_shape(input_shape)
    input_dtype = _check_dtype(input_dtype, "input_dtype")
    dtype = _check_dtype(dtype, "dtype")
    if per_op and per_layer:
        raise FeatureExtractionError("per_layer and per_op cannot both be True: pass one (per-op rows carry the module).")
    if optimizer is not None and optimizer not in OPTIMIZERS:
        raise FeatureExtractionError(
            f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))} or None (forward + backward only); got {optimizer!r}."
        )
    if optimizer is not None and not per_op:
        raise FeatureExtractionError(
            f"optimizer={optimizer!r} adds the optimizer step's ops to the per-op rows; pass per_op=True as well (the "
            "one-row summary counts forward + backward only)."
        )
    if device is None and per_op:
        # per-op rows are counted at the real batch: on meta (no memory, no arithmetic) unless the model cannot run there
        kwargs = dict(batch_size=batch_size, per_op=True, optimizer=optimizer, dtype=dtype, input_dtype=input_dtype,
                      input_high=input_high, skip_compute=skip_compute, train=train, max_memory_bytes=max_memory_bytes,
                      full_trace=full_trace)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                df = extract(model, input_shape, device="meta", **kwargs)
        except DataDependentOpsError:
            raise
        except FeatureExtractionError:
            return extract(model, input_shape, device="cpu", **kwargs)
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return df
    if device is None:
        device = _default_device(model)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise FeatureExtractionError(f"batch_size must be a positive int; got {batch_size!r}.")
    if device not in ("cpu", "meta"):
        raise FeatureExtractionError(f"device must be 'cpu' or 'meta'; got {device!r}. (Counting never needs a GPU.)")
    if max_memory_bytes is not None and (
        isinstance(max_memory_bytes, bool) or not isinstance(max_memory_bytes, (int, np.integer)) or max_memory_bytes < 1
    ):
        raise FeatureExtractionError(
            f"max_memory_bytes must be a positive int (bytes) or None for the available memory; got {max_memory_bytes!r}."
        )
    batch_size = int(batch_size)
    net, name = _resolve_model(model)
    was_training = net.training
    net.train(train)
    try:
        with _isolated():
            static = _static(net, dtype)
            limit = int(max_memory_bytes) if max_memory_bytes is not None else _available_memory_bytes()
            runs, used = _count(net, name, shape, batch_size, device, dtype, input_dtype, input_high, skip_compute, per_layer,
                                limit, static, per_op=per_op, optimizer=optimizer, full_trace=full_trace)
    finally:
        net.train(was_training)

    from perfmodel.features._counting import formula_registry, is_uncounted_compute

    reg = formula_registry()
    unsupported = sorted({str(op._overloadpacket) for _, r in runs for op in r["seen_ops"] if is_uncounted_compute(op, reg)})
    if unsupported:
        warnings.warn(
            f"{name}: {len(unsupported)} op(s) that compute have no FLOP formula and are not known to be free, so they are "
            f"NOT in the FLOP totals: {', '.join(unsupported)}. Register a formula with "
            "torch.utils.flop_counter.register_flop_formula to count them.",
            UnsupportedOpsWarning,
            stacklevel=2,
        )
    if per_layer or per_op:
        df = (_per_op_frame if per_op else _per_layer_frame)(net, name, runs, batch_size, unsupported)
        df.attrs["device"] = used
        if per_op:
            df.attrs["repeated_stacks"] = runs[0][1].get("repeated_stacks", [])
        return df

    def at_batch(key):
        return int(_affine([(b, r[key]) for b, r in runs], batch_size))

    fwd, bwd = at_batch("forward_flops"), at_batch("backward_flops")
    row = dict(
        model=name, batch_size=batch_size, input_shape="x".join(map(str, shape)), forward_macs=fwd // 2, forward_flops=fwd,
        backward_flops=bwd, train_step_flops=fwd + bwd, **static, activation_bytes=at_batch("activation_bytes"),
        depth=int(runs[-1][1]["depth"]), unsupported_ops=";".join(unsupported),
    )
    df = pd.DataFrame([row], columns=list(FEATURE_COLUMNS))
    df.attrs["device"] = used
    return df


@contextlib.contextmanager
def _isolated():
    """One intra-op thread, the native (non-oneDNN) CPU kernels, and the caller's RNG states restored afterwards.

    Every tensor here is tiny (batch 1–3, counted ops faked), so threads only add synchronisation (3–16× slower on a busy
    machine). oneDNN is off so that recurrent layers run torch's own cell-by-cell path, as on the meta device (the fused
    ``mkldnn_rnn_layer`` has no FLOP formula). Dropout and stochastic layers draw from the global generators; their
    states (torch CPU, Python ``random``, NumPy) are restored so that extraction does not change the caller's stream.
    """
    import random

    import torch

    threads, onednn = torch.get_num_threads(), torch.backends.mkldnn.enabled
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.set_num_threads(1)
            torch.backends.mkldnn.enabled = False
            yield
    finally:
        torch.backends.mkldnn.enabled = onednn
        torch.set_num_threads(threads)
        random.setstate(py_state)
        np.random.set_state(np_state)


def _available_memory_bytes() -> int:
    """Memory a CPU step may use: three quarters of the available memory (psutil, else ``sysconf``)."""
    import os

    try:
        import psutil

        avail = psutil.virtual_memory().available
    except ImportError:  # pragma: no cover - psutil is a dependency of the test environment
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return int(avail * 3 // 4)


def _mib(n: int) -> str:
    return f"{n / _MIB:,.1f} MiB"


_SHAPE_HINTS = ("shape", "size", "columns", "reduction dim", "mat1 and mat2", "channels", "dimension", "dims", "Expected input", "expected input")
_DTYPE_HINTS = ("dtype", "scalar type", "Expected tensor for argument", "not implemented for", "but got torch.", "Long", "Float")
_DATA_HINTS = ("nonzero", "data-dependent", "data dependent", "cannot be called on meta tensors", "masked_select", "unique")
_OOM_HINTS = ("can't allocate memory", "not enough memory", "out of memory", "DefaultCPUAllocator")


def _explain(name, exc, x, shape, input_dtype) -> FeatureExtractionError:
    """A FeatureExtractionError naming the likely cause of ``exc`` (raised by the model's training step on ``x``)."""
    msg = str(exc)
    head = f"{name} failed to run a training step on an input of shape {tuple(x.shape)} and dtype {x.dtype} ({type(exc).__name__}: {msg})."
    tail = " The model's own exception is chained."
    if isinstance(exc, MemoryError) or any(h in msg for h in _OOM_HINTS):
        return FeatureExtractionError(
            f"{head} It ran out of memory. Pass device='meta' (no parameter or activation memory is allocated), or a "
            f"smaller max_memory_bytes so that extract() moves to the meta device by itself.{tail}"
        )
    if x.device.type == "meta" and any(h in msg for h in _DATA_HINTS):
        return FeatureExtractionError(
            f"{head} The model needs the values of a tensor (an op whose output shape depends on data, such as "
            "nonzero in a mixture-of-experts router, or .item() in control flow), which the meta device does not have. "
            "Expected a model whose shapes do not depend on values on device='meta'; use device='cpu' (with "
            "skip_compute=False where shapes depend on values), or give the data-dependent part a static form "
            f"(perfmodel.zoo.hf.build routes Switch Transformers' tokens uniformly).{tail}"
        )
    if "Expected more than 1 value per channel when training" in msg:
        return FeatureExtractionError(
            f"{head} A BatchNorm layer in training mode cannot normalise a batch of one sample per channel. Expected "
            f"batch_size >= 2 (got {x.shape[0]}); pass a larger batch_size, or train=False to use the running statistics.{tail}"
        )
    if "index out of range" in msg and not x.is_floating_point():
        return FeatureExtractionError(
            f"{head} The token ids drawn in [0, input_high) exceed an embedding table. Expected input_high to be at most "
            f"the vocabulary size (num_embeddings); lower it.{tail}"
        )
    if any(h in msg for h in _DTYPE_HINTS) and not any(h in msg for h in ("mat1 and mat2 shapes",)):
        want = "a floating-point dtype (input_dtype=None)" if not x.is_floating_point() else (
            "an integer dtype (input_dtype=torch.long, with input_high = the vocabulary size) for token ids / embeddings")
        return FeatureExtractionError(
            f"{head} The input dtype does not suit the model's first layer. Expected {want}; got input_dtype={input_dtype!r}. "
            f"Pass the dtype the model takes.{tail}"
        )
    if any(h in msg for h in _SHAPE_HINTS):
        return FeatureExtractionError(
            f"{name} failed to run a training step on an input of shape {tuple(x.shape)} ({type(exc).__name__}: {msg}). "
            f"Expected input_shape to be the shape of one sample without the batch dimension (got {shape}; e.g. (3, 32, 32) "
            "for a CIFAR CNN) and input_dtype to suit the first layer (torch.long for embeddings); fix them. The model's "
            "own exception is chained."
        )
    return FeatureExtractionError(
        f"{head} The model itself raised this error on zero-valued stand-in inputs; check that it runs on "
        f"torch.zeros({tuple(x.shape)}, dtype={x.dtype}) in training mode.{tail}"
    )


def _count(net, name, shape, batch_size, device, dtype, input_dtype, input_high, skip_compute, per_layer, limit, static,
           per_op=False, optimizer=None, full_trace=False):
    """([(batch, counts), ...], device used): one run at ``batch_size``, or two small runs whose counts extrapolate exactly.

    On ``"cpu"``, a step whose memory (parameter gradients, buffers, inputs, then every op output as it runs) would
    exceed ``limit`` bytes is counted on the meta device instead — the counts agree — and is refused, with the memory
    it would need, only when the model cannot run on meta either.
    """
    import torch

    from perfmodel._errors import ModelConfigError
    from perfmodel.features._counting import MemoryLimitExceeded, ValueReadError

    states: dict = {}
    if input_dtype is None and dtype is not None and dtype.is_floating_point:
        input_dtype = dtype  # parameters counted as ``dtype``: a floating input of the same dtype, as the cast model takes
    item = torch.empty((), dtype=input_dtype or torch.get_default_dtype()).element_size()
    fixed = static["buffer_bytes"] + 3 * item * int(np.prod(shape))  # buffer clones + the input

    def run(b, dev, depth=True, module=None, opt=optimizer):
        module = net if module is None else module
        x = _make_input(shape, b, dev, input_dtype, input_high)
        key = (dev, id(module))
        if key not in states:
            states[key] = _stand_ins(module, dev, dtype)
        for t in states[key].values():
            t.grad = None
        try:
            return _one_step(module, states[key], x, skip_compute=skip_compute, per_layer=per_layer, depth=depth,
                             memory_limit=None if dev == "meta" else max(limit - fixed, 0), per_op=per_op,
                             optimizer=opt)
        except (MemoryLimitExceeded, DataDependentOpsError, ModelConfigError):
            raise  # (ModelConfigError: the model refuses this input, e.g. a sequence longer than its position table)
        except ValueReadError as exc:
            raise DataDependentOpsError(_value_read_message(name, exc.op, exc.where, meta=True)) from exc
        except Exception as exc:
            raise _explain(name, exc, x, shape, input_dtype) from exc

    def on_meta(need):
        try:
            return [(batch_size, run(batch_size, "meta"))], "meta"
        except FeatureExtractionError as exc:
            raise FeatureExtractionError(
                f"{name} needs about {_mib(need)} for a training step on the CPU (parameter gradients, buffers, input and "
                f"activations), more than the {_mib(limit)} it may use (three quarters of the available memory, or "
                f"max_memory_bytes), and it cannot run on the meta device either ({exc.__cause__!r}). Free memory, raise "
                "max_memory_bytes, or make the model's ops meta-compatible."
            ) from exc.__cause__

    static_need = static["optimizer_state_bytes"] + fixed  # a gradient per trainable parameter (= optimizer_state_bytes)
    if device == "cpu" and static_need > limit:
        return on_meta(static_need)
    try:
        if per_op and device == "meta" and not full_trace:  # deep stacks of identical layers: a shallow copy, expanded
            fast = _repeated_run(net, run, batch_size, dtype, optimizer)
            if fast is not None:
                return [(batch_size, fast)], device
        if per_op:  # every op's shapes at the real batch: one run, no extrapolation
            return [(batch_size, run(batch_size, device))], device
        return _count_on(run, batch_size, device), device
    except MemoryLimitExceeded as exc:
        return on_meta(exc.allocated + fixed)


def _repeated_run(net, run, batch_size, dtype, optimizer):
    """The per-op run of ``net`` on meta from a shallow copy of its stacks of identical layers, or None.

    None when ``net`` has no such stack, the copy fails to run, or its trace does not prove the layers repeated
    (:mod:`perfmodel.features._repeats`): the caller then traces the full model.
    """
    import torch

    from perfmodel.features import _repeats
    from perfmodel.features._counting import ShapeOnlyMode, op_class
    from perfmodel.features._dataflow import resolve

    stacks = _repeats.find_stacks(net)
    if not stacks:
        return None
    shallow = _repeats.shallow_copy(net, stacks)
    try:
        small = run(batch_size, "meta", module=shallow, opt=None)
    except Exception:  # noqa: BLE001 - whatever the copy raised, the full trace gives the answer (or the error)
        return None
    n_fwd, n_bwd = small["trace_phases"]
    out = _repeats.expand(small["trace"], n_fwd, n_bwd, stacks)
    if out is None:
        return None
    trace, n_fwd, n_bwd = out
    seen, seen_ops = set(small["seen"]), set(small["seen_ops"])
    if optimizer is not None:
        # the full model's parameters (those whose layer received a gradient in the copy), in the full model's order
        state = _stand_ins(net, "meta", dtype)
        grads = {n: t.grad for n, t in small["state"].items() if isinstance(t, torch.Tensor) and t.grad is not None}
        for n, t in state.items():
            g = grads.get(_shallow_name(n, stacks))
            if g is not None and t.requires_grad:
                t.grad = torch.empty(g.shape, dtype=g.dtype, device="meta")
        mode = ShapeOnlyMode(count=True, scoped=True, trace=True)
        _optimizer_step(mode, state, optimizer)
        trace = trace + resolve(mode.trace_records, (0, 0), op_class)
        seen |= mode.seen
        seen_ops |= mode.seen_ops
    flops = [r[1] for r in trace]
    return {
        "forward_flops": sum(flops[:n_fwd]), "backward_flops": sum(flops[n_fwd:n_bwd]), "trace": trace,
        "trace_phases": [n_fwd, n_bwd], "seen": seen, "seen_ops": seen_ops,
        "repeated_stacks": [s.describe() for s in stacks],
    }


def _shallow_name(name: str, stacks) -> str:
    """Name in the shallow copy of the parameter (or buffer) ``name`` of the full model."""
    for s in stacks:
        prefix = s.path + "."
        if name.startswith(prefix):
            head, dot, rest = name[len(prefix):].partition(".")
            if head.isdigit():
                return f"{prefix}{s.shallow_index(int(head))}{dot}{rest}"
    return name


def _count_on(run, batch_size, device) -> list:
    if device == "meta" or batch_size == 1:
        return [(batch_size, run(batch_size, device))]
    try:
        runs = [(1, run(1, device, depth=False)), (2, run(2, device))]
    except FeatureExtractionError as first:
        try:  # e.g. BatchNorm1d in training cannot normalise a batch of one
            runs = [(2, run(2, device, depth=False)), (3, run(3, device))]
        except FeatureExtractionError:
            raise first from first.__cause__
    (ba, a), (bb, b) = runs
    if all(_batch_split(a["records"][k], b["records"][k], ba, bb) is not None for k in a["records"]):
        return runs
    # some count is not constant-or-proportional in the batch: count at the real batch, on meta if the model runs there
    try:
        return [(batch_size, run(batch_size, "meta"))]
    except FeatureExtractionError:
        return [(batch_size, run(batch_size, device))]


def _per_layer_frame(net, name, runs, batch_size, unsupported) -> pd.DataFrame:
    rows = []
    for mod_name, mod in net.named_modules():
        fwd, bwd = (int(_affine([(b, r["module_flops"][i].get(mod_name, 0)) for b, r in runs], batch_size)) for i in (0, 1))
        rows.append(dict(
            model=name, module=mod_name or "(root)", module_type=type(mod).__name__,
            depth_in_tree=0 if not mod_name else mod_name.count(".") + 1, params=sum(p.numel() for p in mod.parameters(recurse=False)),
            forward_macs=fwd // 2, forward_flops=fwd, backward_flops=bwd, train_step_flops=fwd + bwd,
            output_bytes=int(_affine([(b, r["module_out_bytes"].get(mod_name, 0)) for b, r in runs], batch_size)),
            batch_size=batch_size,
        ))
    df = pd.DataFrame(rows, columns=list(PER_LAYER_COLUMNS))
    df.attrs["unsupported_ops"] = unsupported
    return df


def _default_device(model) -> str:
    """``"meta"`` for a module with parameters or buffers on the meta device, else ``"cpu"``."""
    import torch

    if isinstance(model, torch.nn.Module):
        for t in (*model.parameters(), *model.buffers()):
            if t.device.type == "meta":
                return "meta"
    return "cpu"


def _shape_text(shapes) -> str:
    return ";".join("x".join(map(str, sh)) if sh else "-" for sh in shapes)


def _per_op_frame(net, name, runs, batch_size, unsupported) -> pd.DataFrame:
    from perfmodel.features._counting import op_class

    (_, run), = runs
    trace, (n_fwd, n_bwd) = run["trace"], run["trace_phases"]
    ops: dict = {}  # per (op, is view): (name, class); the rows of repeated layers share their shape tuples
    texts: dict = {}
    rows = []
    for i, (func, flops, nread, nwritten, dt, ins, outs, scope, view, attributes, flow) in enumerate(trace):
        op = ops.get((func, view))
        if op is None:
            op = ops[(func, view)] = (str(func._overloadpacket), op_class(func, view))
        tin, tout = texts.get(ins), texts.get(outs)
        if tin is None:
            tin = texts[ins] = _shape_text(ins)
        if tout is None:
            tout = texts[outs] = _shape_text(outs)
        rows.append((
            name, batch_size, "forward" if i < n_fwd else "backward" if i < n_bwd else "optimizer", i,
            op[0], op[1], (scope[-1] or "(root)") if scope else "", flops, nread, nwritten, dt, tin, tout, attributes, flow,
        ))
    df = pd.DataFrame(rows, columns=list(PER_OP_COLUMNS))
    df["phase"] = pd.Categorical(df["phase"], categories=["forward", "backward", "optimizer"])
    df.attrs["unsupported_ops"] = unsupported
    return df

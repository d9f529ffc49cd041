"""Counting machinery: FLOPs by torch's own formulas, per module, forward and backward, without the arithmetic.

Two dispatch modes are stacked while the model runs one training step (forward, then ``sum().backward()``):

* ``torch.utils.flop_counter.FlopCounterMode`` (on top) attributes FLOPs per op and per module with torch's registered
  formulas, plus the formulas this module adds for ops it misses on CPU (the fused scaled-dot-product-attention kernels
  ``_scaled_dot_product_flash_attention_for_cpu`` and its backward, for which FlopCounterMode counts 0);
* :class:`ShapeOnlyMode` (below it) receives the ops FlopCounterMode executes. For the expensive ops that have a FLOP
  formula (convolutions and their backward, mm/addmm/bmm/baddbmm, attention) it returns zero tensors of the right
  shape instead of computing them; every other op runs for real. It also records every op it sees, so that compute
  ops without a formula are reported instead of silently counted as 0.

Outputs are therefore numerically meaningless (zeros flow through the network); only shapes matter. Models whose
control flow depends on the *values* of intermediate tensors need ``skip_compute=False``.
"""
from __future__ import annotations

import math

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import flop_counter as fc
from torch.utils._python_dispatch import TorchDispatchMode

from perfmodel.features._dataflow import footprint, span

aten = torch.ops.aten

__all__ = [
    "ShapeOnlyMode", "EXTRA_FORMULAS", "KNOWN_FREE", "DATA_DEPENDENT", "formula_registry", "is_known_free",
    "is_uncounted_compute", "op_class",
]


def _sdpa_cpu_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_cpu_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def _grouped_mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of ``torch._grouped_mm(a, b, offs)``, the grouped GEMM of a mixture-of-experts layer: each group's rows
    (``offs`` cuts the 2-D operand) multiplied by its own matrix. Whatever the cut, every row, reduction index and
    column is used once, so the count is ``2·M·K·N`` of the whole operands: ``a`` ``(M, K)`` by ``b`` ``(G, K, N)``
    (the experts' forward), ``(M, K_total)`` by ``(K_total, N)`` (their weight gradients, one ``K`` range per
    group), ``(G, M, K)`` by ``(K, N_total)``, and ``G`` products of ``(G, M, K)`` by ``(G, K, N)``."""
    a, b = list(a_shape), list(b_shape)
    groups = a[0] if len(a) == 3 and len(b) == 3 else 1
    return 2 * groups * a[-2] * a[-1] * b[-1]


#: Formulas added to torch's registry (ops FlopCounterMode leaves at 0 on CPU, or has no formula for).
EXTRA_FORMULAS = {
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_cpu_flop,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_cpu_backward_flop,
    aten._grouped_mm: _grouped_mm_flop,
}


def formula_registry() -> set:
    """Op overload packets that have a FLOP formula (torch's registry + :data:`EXTRA_FORMULAS`)."""
    return set(fc.flop_registry) | set(EXTRA_FORMULAS)


# Ops known to be free under the counting convention (documented in perfmodel.features): besides the ones torch tags
# ``pointwise`` (elementwise, bandwidth-bound), ``reduction`` or ``nondeterministic_seeded`` (random numbers), views and
# in-place views, these are copies, factories, shape and indexing ops, norms, softmax, pooling, dropout, embedding
# lookups, padding and losses. Every other op without a FLOP formula is reported — the list is of what is free, not
# of what computes, so an op nobody thought of is reported rather than silently counted as 0.
KNOWN_FREE = frozenset({
    # factories, copies, metadata
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros", "ones",
    "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor", "arange", "linspace", "fill", "fill_", "zero_",
    "copy", "copy_", "_to_copy", "clone", "detach", "detach_", "alias", "lift_fresh", "lift_fresh_copy", "contiguous",
    "_unsafe_view", "resize_", "set_", "_local_scalar_dense", "item", "is_nonzero", "equal", "_assert_async",
    "_assert_tensor_metadata", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "_has_compatible_shallow_copy_type",
    "_to_dense", "to_dense", "_to_sparse", "to_sparse", "_to_sparse_csr", "_to_sparse_csc", "_sparse_coo_tensor_with_dims_and_tensors", "_coalesce", "coalesce", "_indices", "_values", "indices", "values", "_nnz",
    # shape and indexing
    "cat", "stack", "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unbind", "chunk", "narrow",
    "select_backward", "slice_backward", "select_scatter", "slice_scatter", "diagonal_backward", "as_strided_scatter",
    "index", "_unsafe_index", "index_select", "index_put", "index_put_", "_index_put_impl_", "index_add", "index_add_",
    "index_copy", "index_fill", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
    "masked_fill", "masked_fill_", "masked_scatter", "masked_select", "flip", "roll", "repeat", "tile", "tril", "triu",
    "tril_", "triu_", "one_hot", "nonzero", "where", "constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d",
    "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "reflection_pad1d_backward",
    "reflection_pad2d_backward", "replication_pad2d_backward", "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "upsample_nearest1d_backward",
    "upsample_nearest2d_backward", "upsample_nearest3d_backward", "_upsample_nearest_exact2d",
    # embedding lookups
    "embedding", "embedding_dense_backward", "embedding_backward", "embedding_renorm_", "_embedding_bag",
    "_embedding_bag_backward", "_embedding_bag_dense_backward",
    # norms
    "native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training", "batch_norm_backward", "_batch_norm_with_update", "_batch_norm_no_update",
    "native_layer_norm", "native_layer_norm_backward", "native_group_norm", "native_group_norm_backward",
    "_fused_rms_norm", "_fused_rms_norm_backward", "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats",
    # softmax
    "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "_safe_softmax",
    # pooling
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "avg_pool2d_backward", "avg_pool3d_backward", "_adaptive_avg_pool2d",
    "_adaptive_avg_pool3d", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "adaptive_max_pool2d_backward", "adaptive_max_pool3d_backward", "max_unpool2d",
    # dropout and random numbers
    "native_dropout", "native_dropout_backward", "bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like",
    "randint", "randint_like", "randperm", "normal", "normal_", "uniform_", "exponential_", "multinomial",
    # losses (elementwise + reduction)
    "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward", "mse_loss", "mse_loss_backward",
    "l1_loss", "smooth_l1_loss", "smooth_l1_loss_backward", "huber_loss", "huber_loss_backward", "binary_cross_entropy",
    "binary_cross_entropy_backward", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    # scans (one pass over the tensor, like a reduction)
    "cumsum", "cumsum_", "cumprod", "cumprod_", "logcumsumexp", "cummax", "cummin",
    # a mixture-of-experts router's bookkeeping over tokens x experts: selection, sorting, counting, index arithmetic
    "topk", "sort", "argsort", "histc", "bincount", "floor_divide", "floor_divide_",
})

#: Ops whose output *shape* depends on the values of their inputs. On zero-valued stand-ins (``skip_compute``) their
#: shapes — and the counts of every op downstream (e.g. the tokens a mixture-of-experts router sends to each expert)
#: — would be those of all-zero data, and on ``meta`` they cannot run at all; :func:`perfmodel.features.extract`
#: refuses them with a message naming the fix rather than undercounting silently.
DATA_DEPENDENT = frozenset({
    "nonzero", "argwhere", "masked_select", "unique", "_unique", "_unique2", "unique_dim", "unique_consecutive",
    "unique_dim_consecutive", "repeat_interleave",
})
_FREE_TAGS = frozenset({torch.Tag.pointwise, torch.Tag.reduction, torch.Tag.nondeterministic_seeded, torch.Tag.view_copy,
                        torch.Tag.inplace_view})


def _packet(op):
    return getattr(op, "_overloadpacket", op)


def _op_name(op) -> str:
    name = getattr(_packet(op), "__name__", str(op))
    return name.split(".")[-1]


def is_known_free(op) -> bool:
    """True for an op the counting convention leaves at 0 on purpose (views, elementwise, norms, copies ...).

    ``op`` is an ``OpOverload`` (the tags and schema of the overload that ran are used) or an overload packet.
    """
    name = _op_name(op)
    if name in KNOWN_FREE or name.startswith("_foreach_"):  # multi-tensor elementwise (optimizer steps)
        return True
    if str(_packet(op)).startswith("profiler."):  # record_function markers (optimizer steps), no computation
        return True
    overloads = [op] if hasattr(op, "_schema") else [getattr(op, o) for o in op.overloads()] if hasattr(op, "overloads") else []
    for ov in overloads:
        if _FREE_TAGS.intersection(ov.tags):
            return True
        returns = ov._schema.returns
        if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
            return True  # a view of an input
    return False


def is_uncounted_compute(op, registry: set) -> bool:
    """True for an op that has no FLOP formula and is not known to be free (reported as unsupported)."""
    if _packet(op) in registry:
        return False
    return not is_known_free(op)


def _is_view(func) -> bool:
    """True for an op that only makes a view of an input (no data moved)."""
    if func.is_view:
        return True
    returns = func._schema.returns
    return bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)


_COPY_OPS = frozenset({
    "copy", "copy_", "_to_copy", "clone", "contiguous", "cat", "stack", "index", "_unsafe_index", "index_select", "gather",
    "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add", "index_add_", "index_put", "index_put_",
    "_index_put_impl_", "index_copy", "constant_pad_nd", "repeat", "flip", "roll", "select_backward", "slice_backward",
    "select_scatter", "slice_scatter", "masked_fill", "masked_fill_", "one_hot", "tril", "triu", "where",
})
#: Ops whose schema does not declare an alias but that only reshape their input's storage: ``_unsafe_view`` (the
#: reshape after a matmul of a 3-D input; "unsafe" because autograd does not track it as a view) launches no kernel.
_VIEW_LIKE_OPS = frozenset({"_unsafe_view"})
#: Ops that run on the host and launch no kernel: ``_fused_sdp_choice`` picks the attention backend (returns an int).
_HOST_OPS = frozenset({"_fused_sdp_choice"})
_FACTORY_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros", "ones",
    "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor", "arange", "linspace", "fill", "fill_",
    "zero_", "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "item",
})


def op_class(func, view: bool | None = None) -> str:
    """Coarse class of an aten op, for per-operator latency models.

    One of ``"matmul"`` (mm, addmm, bmm, baddbmm), ``"conv"``, ``"attention"`` (fused scaled-dot-product kernels),
    ``"embedding"``, ``"norm"``, ``"softmax"``, ``"pool"``, ``"loss"``, ``"elementwise"`` (torch's ``pointwise`` tag,
    and the multi-tensor ``_foreach_*`` ops of optimizer steps), ``"reduction"`` (incl. scans), ``"copy"`` (copies,
    concatenation, indexing, padding), ``"factory"`` (allocation, fills, host scalars), ``"view"`` (no data moved),
    ``"other"``.
    """
    name = _op_name(func)
    if _packet(func) in formula_registry():
        return "conv" if "convolution" in name else "attention" if "attention" in name else "matmul"
    if (view if view is not None else _is_view(func)) or name in _VIEW_LIKE_OPS:
        return "view"
    if name in _HOST_OPS:
        return "factory"
    if "embedding" in name:
        return "embedding"
    if "norm" in name:
        return "norm"
    if "softmax" in name:
        return "softmax"
    if "pool" in name:
        return "pool"
    if "loss" in name:
        return "loss"
    if name in _COPY_OPS:
        return "copy"
    if name in _FACTORY_OPS:
        return "factory"
    tags = set(getattr(func, "tags", ()))
    if name.startswith("_foreach_") or torch.Tag.pointwise in tags or "dropout" in name:
        return "elementwise"
    if torch.Tag.reduction in tags or name.startswith("cum") or name == "logcumsumexp":
        return "reduction"
    return "other"


def _conv_out_shape(x, w, stride, padding, dilation, transposed, output_padding, groups) -> list[int]:
    nd = len(x) - 2
    stride, padding, dilation = (list(v) if len(v) == nd else list(v) * nd for v in (stride, padding, dilation))
    output_padding = list(output_padding) if len(output_padding) == nd else list(output_padding) * nd
    if transposed:
        c_out = w[1] * groups
        sp = [(x[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[2 + i] - 1) + output_padding[i] + 1 for i in range(nd)]
    else:
        c_out = w[0]
        sp = [math.floor((x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) / stride[i]) + 1 for i in range(nd)]
    return [x[0], c_out, *sp]


def _shapes(obj):
    """Tensors → their shapes (one level of list/tuple/dict nesting, as aten arguments have)."""
    if isinstance(obj, torch.Tensor):
        return obj.shape
    if isinstance(obj, (list, tuple)):
        return type(obj)(o.shape if isinstance(o, torch.Tensor) else o for o in obj)
    if isinstance(obj, dict):
        return {k: (v.shape if isinstance(v, torch.Tensor) else v) for k, v in obj.items()}
    return obj


class MemoryLimitExceeded(MemoryError):
    """The CPU step would allocate more than the memory it may use (see ``ShapeOnlyMode.memory_limit``)."""

    def __init__(self, allocated: int, limit: int):
        super().__init__(f"the step allocated {allocated} bytes, over the limit of {limit} bytes")
        self.allocated, self.limit = allocated, limit


def _flat_tensors(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_tensors(o)]
    return []


def _direct_out(packet, args):
    """Zeros of the output of a matmul or CPU-attention op, shapes computed here (no meta kernel or decomposition,
    which would import torch._dynamo). None when the arguments are not the plain case: the meta kernel then runs and
    raises the same error as torch would."""
    ts = [a for a in args[:3] if isinstance(a, torch.Tensor)]
    if not ts or len({t.dtype for t in ts}) != 1 or len({t.device for t in ts}) != 1:
        return None
    dtype, device = ts[0].dtype, ts[0].device
    if packet in (aten.mm, aten.addmm):
        a, b = args[-2:] if packet is aten.addmm else args[:2]
        if a.dim() == b.dim() == 2 and a.shape[1] == b.shape[0]:
            return torch.zeros((a.shape[0], b.shape[1]), dtype=dtype, device=device)
    elif packet in (aten.bmm, aten.baddbmm):
        a, b = args[1:3] if packet is aten.baddbmm else args[:2]
        if a.dim() == b.dim() == 3 and a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1]:
            return torch.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=dtype, device=device)
    return None


def _zeros_like_meta(out, like: torch.Tensor):
    """Zero tensors with the shapes/dtypes of ``out`` (computed on meta) on the device of ``like``."""
    if isinstance(out, torch.Tensor):
        return torch.zeros(out.shape, dtype=out.dtype, device=like.device)
    if isinstance(out, (tuple, list)):
        return type(out)(_zeros_like_meta(o, like) for o in out)
    return out


def _to_meta(a):
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
    if isinstance(a, (list, tuple)):
        return type(a)(_to_meta(x) for x in a)
    return a


_FUNCTIONAL: dict = {}
_PLAIN = (bool, int, float, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _functional(func) -> bool:
    """True for an op that neither mutates nor aliases its arguments (fresh outputs only); cached per overload."""
    ok = _FUNCTIONAL.get(func)
    if ok is None:
        schema = func._schema
        ok = _FUNCTIONAL[func] = bool(schema.returns) and not func.is_view and all(
            a.alias_info is None for a in (*schema.arguments, *schema.returns)
        )
    return ok


_INPLACE_FOREACH: dict = {}


def _inplace_foreach(func) -> bool:
    """True for an in-place ``_foreach_*_`` op that returns nothing (it only writes its list arguments)."""
    ok = _INPLACE_FOREACH.get(func)
    if ok is None:
        schema = func._schema
        ok = _INPLACE_FOREACH[func] = func._overloadpacket.__name__.startswith("_foreach_") and not schema.returns and any(
            a.alias_info is not None and a.alias_info.is_write for a in schema.arguments
        )
    return ok


def _all_meta(args, kwargs) -> bool:
    ts = _flat_tensors(list(args) + list(kwargs.values()))
    return bool(ts) and all(t.device.type == "meta" for t in ts)


def _arg_key(a):
    if isinstance(a, torch.Tensor):
        if a.device.type != "meta":
            raise TypeError  # values exist: not memoised
        return (tuple(a.shape), a.stride(), a.dtype, a.storage_offset())
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, *map(_arg_key, a))
    if isinstance(a, _PLAIN):
        return (type(a).__name__, a)  # 1 and 1.0 and True differ
    raise TypeError


def _meta_key(func, args, kwargs):
    """Hashable metadata of a call whose tensors are all on meta (their shapes, strides, dtypes: all a meta kernel
    sees), or None. A meta kernel's outputs are a function of it, so their metadata can be reused."""
    try:
        key = (func, tuple(map(_arg_key, args)), tuple((k, _arg_key(v)) for k, v in kwargs.items()))
    except TypeError:
        return None
    if not any(isinstance(a, torch.Tensor) for a in (*args, *kwargs.values())) and not any(
            isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor) for a in (*args, *kwargs.values())):
        return None  # factories: their dtype may come from the global default
    return key


def _spec(out):
    """Metadata of the fresh meta outputs of an op (tensors, None, lists/tuples of them), or None."""
    if isinstance(out, torch.Tensor):
        return ("T", tuple(out.shape), out.stride(), out.dtype) if out.device.type == "meta" else None
    if out is None:
        return ("N",)
    if isinstance(out, (list, tuple)):
        parts = [_spec(o) for o in out]
        return None if any(p is None for p in parts) else (type(out), parts)
    return None


def _from_spec(spec):
    if spec[0] == "T":
        return torch.empty_strided(spec[1], spec[2], dtype=spec[3], device="meta")
    if spec[0] == "N":
        return None
    return spec[0](_from_spec(p) for p in spec[1])


#: Ops that read a tensor's value into Python (``Tensor.item()``, ``bool`` / ``int`` / ``float`` of a tensor, hence
#: ``if x.mean() > 0:`` or ``range(int(x.sum()))``; ``torch.equal``): control flow that depends on values.
_VALUE_READS = frozenset({aten._local_scalar_dense, aten.equal})


class ValueReadError(RuntimeError):
    """A tensor's value was read into Python (``op``) at ``where`` while tracing on the meta device, which has none."""

    def __init__(self, op: str, where: str):
        super().__init__(f"{op} on a meta tensor at {where}")
        self.op, self.where = op, where


def _any_meta(args, kwargs) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in (*args, *kwargs.values()))


def _caller(internal_too: bool = True) -> str | None:
    """``file:line: source`` of the innermost frame outside torch and perfmodel's counting (the model's own code).

    With ``internal_too=False``, None when the innermost frame outside this module is torch's own code (a value read
    by torch itself, e.g. an argument check, is not the model's control flow)."""
    import os
    import traceback

    here, torch_dir = __file__, os.path.dirname(torch.__file__)
    for fr in reversed(traceback.extract_stack()[:-1]):
        if fr.filename == here or "<frozen" in fr.filename:
            continue
        if fr.filename.startswith(torch_dir):
            if not internal_too:
                return None
            continue
        return f"{fr.filename}:{fr.lineno}: {(fr.line or '').strip()}"
    return "an unknown place"


class ValueReadMode(torch.overrides.TorchFunctionMode):
    """Record the reads of a tensor's value into Python by the model's own code (``bool(t)``, ``t.item()``, ``int(t)``,
    ``float(t)``, ``range(t)``, ``t.tolist()``, ``torch.equal``) as ``(what, "file:line: source")`` in :attr:`reads`.

    Used while a step runs on zero-valued stand-ins, where such a read would decide the graph from made-up values.
    Reads by torch's own code (argument checks such as ``one_hot``'s range check) are not the model's control flow
    and are not recorded."""

    _NAMES = {"__bool__": "bool(tensor)", "item": "Tensor.item()", "__int__": "int(tensor)", "__float__": "float(tensor)",
              "__index__": "a tensor used as an index or range()", "tolist": "Tensor.tolist()", "equal": "torch.equal",
              "__complex__": "complex(tensor)"}

    def __init__(self):
        super().__init__()
        self.reads: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        what = self._NAMES.get(getattr(func, "__name__", ""))
        if what is not None:
            where = _caller(internal_too=False)
            if where is not None:
                self.reads.append((what, where))
        return func(*args, **(kwargs or {}))


class ShapeOnlyMode(TorchDispatchMode):
    """Run a model with the expensive formula-counted ops replaced by zero tensors of the right shape.

    Parameters
    ----------
    skip_compute : bool
        Replace the counted ops (convolutions, matmuls, attention) by zeros; ``False`` runs everything for real.

    count : bool
        Also count FLOPs with the formula registry (``flops`` attribute, per op in ``flops_by_op``); used for the
        totals, where FlopCounterMode's per-module tracking is not needed.

    Attributes
    ----------
    seen : set
        Op overload packets executed.
    seen_ops : set
        The ``OpOverload`` s executed (their tags and schemas classify the uncounted ones).
    memory_limit : int or None
        When set, :class:`MemoryLimitExceeded` is raised before the bytes of the outputs allocated so far (views
        excluded; an upper bound of the live memory) would exceed it.
    allocated_bytes : int
        Bytes of the op outputs allocated so far.
    flops : int
        Total FLOPs of the counted ops (when ``count``).
    records : list of (packet, int) or (packet, int, scope)
        FLOPs of every counted op call, in execution order (when ``count``); used to check that each op's count is
        constant or linear in the batch size before extrapolating. With ``scoped``, each record also carries
        :attr:`scope`, the tuple of module names the op ran in (set by the caller, see ``_extract._ScopeTracker``).
    """

    #: ops answered with zeros of the right shape (their FLOPs come from the formulas)
    _FAKE_ALL = frozenset({
        aten.convolution, aten._convolution, aten.convolution_backward, aten.mm, aten.addmm, aten.bmm, aten.baddbmm,
        aten._scaled_dot_product_flash_attention_for_cpu, aten._scaled_dot_product_flash_attention_for_cpu_backward,
    })

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps every dispatch mode's __torch_dispatch__ in torch._dynamo.disable, whose first call imports
        # torch._dynamo (1-1.6 s per process); nothing here is compiled, so the wrapper is not needed.
        return False

    _SAME_DTYPE = frozenset({aten.convolution, aten._convolution, aten.mm, aten.addmm, aten.bmm, aten.baddbmm})

    def __init__(self, skip_compute: bool = True, count: bool = False, scoped: bool = False, memory_limit: int | None = None,
                 trace: bool = False):
        super().__init__()
        self.trace = trace
        self.host_only_skipped = False  # set while tracing an optimizer step on meta tensors
        self.trace_records: list = []
        self._storages: dict = {}  # storage address -> (serial, weak reference), for the dataflow of traced ops
        self._next_storage = 0
        self._views: dict = {}
        self.seen_ops: set = set()
        self.memory_limit = memory_limit
        self.allocated_bytes = 0
        self.skip_compute = skip_compute
        self.count = count
        self.scoped = scoped
        self.scope: tuple = ()
        self.seen: set = set()
        self.flops = 0
        self.flops_by_op: dict = {}
        self.records: list = []
        # raw formulas take shapes; unwrap torch's shape_wrapper (pytree) and pass shapes directly (much faster)
        self._formulas = {k: getattr(v, "__wrapped__", v) for k, v in fc.flop_registry.items()}
        self._formulas.update(EXTRA_FORMULAS)
        self._meta_outputs: dict = {}  # (op, argument metadata) -> output metadata, for ops on meta tensors only

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func._overloadpacket
        self.seen.add(packet)
        self.seen_ops.add(func)
        if packet in _VALUE_READS and _any_meta(args, kwargs):  # cannot run: say where the model reads the value
            raise ValueReadError(str(packet), _caller())
        key = _meta_key(func, args, kwargs) if _functional(func) else None
        spec = self._meta_outputs.get(key) if key is not None else None
        if spec is not None:
            out = _from_spec(spec)
        elif _inplace_foreach(func) and _all_meta(args, kwargs):
            out = None  # an in-place multi-tensor op (optimizer steps) changes no metadata of meta tensors
        elif self.skip_compute and packet in self._FAKE_ALL:
            out = self._fake(func, packet, args, kwargs)
        else:
            out = func(*args, **kwargs)
        if key is not None and spec is None:
            spec = _spec(out)
            if spec is not None:
                self._meta_outputs[key] = spec
        if self.memory_limit is not None and not func.is_view:
            self.allocated_bytes += sum(t.numel() * t.element_size() for t in _flat_tensors(out))
            if self.allocated_bytes > self.memory_limit:
                raise MemoryLimitExceeded(self.allocated_bytes, self.memory_limit)
        n = 0
        if self.count:
            formula = self._formulas.get(packet)
            if formula is not None:
                n = int(formula(*_shapes(args), **_shapes(kwargs), out_shape=_shapes(out)))
                self.flops += n
                self.flops_by_op[packet] = self.flops_by_op.get(packet, 0) + n
                self.records.append((packet, n, self.scope) if self.scoped else (packet, n))
        if self.trace and func.namespace == "aten":
            self._trace(func, n, args, kwargs, out)
        return out

    def _trace(self, func, flops, args, kwargs, out) -> None:
        """Record one op: (op, flops, bytes read, bytes written, dtype, input shapes, output shapes, scope, is view,
        attributes: ``"causal"`` for a fused attention kernel called with ``is_causal=True``, else ``""``, dataflow:
        the tensors read and written, :func:`perfmodel.features._dataflow.resolve` makes it relative)."""
        info = self._views.get(func)
        if info is None:
            schema = func._schema
            written = tuple(a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write)
            info = self._views[func] = (_is_view(func), written, all(r.alias_info is None for r in schema.returns),
                                        _op_name(func) in _VIEW_LIKE_OPS)
        view, written, fresh, alias = info
        ins = _flat_tensors(list(args) + list(kwargs.values()))
        outs = _flat_tensors(out)
        if self.host_only_skipped and not any(t.device.type == "meta" for t in (*ins, *outs)):
            return  # host-side bookkeeping of a step traced on meta (e.g. Adam's step counters stay on the CPU)
        first = outs[0] if outs else ins[0] if ins else None
        nwritten = 0
        flow: tuple = ((), ())
        if not view:
            # an in-place or out= op writes the arguments it mutates (``_foreach_add_`` returns nothing); fresh outputs too
            mutated: list = []
            if written:
                named = dict(zip((a.name for a in func._schema.arguments), args)) | kwargs
                mutated = [t for n in written for t in _flat_tensors(named.get(n))]
                nwritten = sum(t.numel() * t.element_size() for t in mutated)
            if fresh:
                nwritten += sum(t.numel() * t.element_size() for t in outs)
                mutated += outs
            if not alias:
                flow = (tuple(self._tensor_ref(t) for t in ins), tuple(self._tensor_ref(t) for t in mutated))
            elif ins and outs:  # ``_unsafe_view`` aliases its input (traced on meta, its output is a fresh tensor)
                self._alias(outs[0], ins[0])
        attributes = ""
        if "is_causal" in self._arg_names(func):  # fused attention: a causal kernel skips the blocks above the diagonal
            named = dict(zip(self._arg_names(func), args)) | kwargs
            attributes = "causal" if named.get("is_causal") is True else ""
        self.trace_records.append((
            func, flops,
            0 if view else sum(t.numel() * t.element_size() for t in ins),
            nwritten,
            str(first.dtype).replace("torch.", "") if first is not None else "",
            tuple(tuple(t.shape) for t in ins), tuple(tuple(t.shape) for t in outs), self.scope, view, attributes, flow,
        ))

    def _alias(self, t, base) -> None:
        """Give ``t``'s storage the serial number of ``base``'s (one tensor, as far as the dataflow goes)."""
        try:
            st = t.untyped_storage()
            sid = self._tensor_ref(base)[0]
            self._storages[st._cdata] = (sid, StorageWeakRef(st))
        except (RuntimeError, NotImplementedError, AttributeError):
            pass

    def _tensor_ref(self, t) -> tuple:
        """(storage, (lo, hi) bytes of it covered, bytes) of a traced tensor (:mod:`perfmodel.features._dataflow`): the storage a serial
        number per allocation — a weak reference keeps a freed allocation's address from being taken for it."""
        try:
            st = t.untyped_storage()
            c = st._cdata
        except (RuntimeError, NotImplementedError, AttributeError):  # no storage (a sparse or wrapper tensor)
            self._next_storage += 1
            return (-self._next_storage, (0, footprint(t)), footprint(t))
        known = self._storages.get(c)
        if known is None or known[1].expired():
            self._next_storage += 1
            known = self._storages[c] = (self._next_storage, StorageWeakRef(st))
        sid = known[0]
        return (sid, span(t), footprint(t))

    _ARG_NAMES: dict = {}

    @classmethod
    def _arg_names(cls, func) -> tuple:
        names = cls._ARG_NAMES.get(func)
        if names is None:
            names = cls._ARG_NAMES[func] = tuple(a.name for a in func._schema.arguments)
        return names

    def _fake(self, func, packet, args, kwargs):
        """Zeros of the output shape of a counted op (computed for real on meta tensors)."""
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is None or first.device.type == "meta":
            return func(*args, **kwargs)
        if packet in self._SAME_DTYPE:  # the zeros below would hide the error torch raises for mixed operands
            dtypes = [a.dtype for a in args[:3] if isinstance(a, torch.Tensor)]
            if len(set(dtypes)) > 1:
                raise RuntimeError(
                    f"{packet}: expected all operands to have the same dtype, got {', '.join(map(str, dtypes))}"
                )
        if packet in (aten.convolution, aten._convolution) and args[0].dim() == args[1].dim():
            x, w = args[0], args[1]
            stride, padding, dilation, transposed, output_padding, groups = args[3:9]
            shape = _conv_out_shape(list(x.shape), list(w.shape), stride, padding, dilation, transposed, output_padding, groups)
            return torch.zeros(shape, dtype=x.dtype, device=x.device)
        if packet is aten.convolution_backward and args[1].dim() == args[2].dim():
            grad_out, x, w = args[0], args[1], args[2]
            bias_sizes, mask = args[3], args[10]
            # weight / bias gradients only reach AccumulateGrad (never read): uninitialised memory, not zeroed
            return (
                torch.zeros(x.shape, dtype=x.dtype, device=x.device) if mask[0] else None,
                torch.empty(w.shape, dtype=w.dtype, device=w.device) if mask[1] else None,
                torch.empty(bias_sizes if bias_sizes is not None else [w.shape[0]], dtype=grad_out.dtype, device=grad_out.device) if mask[2] else None,
            )
        direct = _direct_out(packet, args)
        if direct is not None:
            return direct
        meta_out = func(*_to_meta(args), **_to_meta(kwargs))
        return _zeros_like_meta(meta_out, first)


def _sdpa_arguments(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa


def _cpu_stand_in(t):
    """A CPU tensor with the shape, dtype and last-dimension stride of meta tensor ``t``, backed by one row of memory."""
    last = t.stride(-1) if t.dim() else 1
    if last not in (0, 1):
        return None
    return torch.empty(max(t.shape[-1], 1) if last else 1, dtype=t.dtype).as_strided(t.shape, (0,) * (t.dim() - 1) + (last,))


class MetaSDPAMode(torch.overrides.TorchFunctionMode):
    """On the meta device, run ``scaled_dot_product_attention`` with the kernel the CPU would choose.

    On meta, torch always takes the math path (softmax(QKᵀ)V as bmm's, whose backward has 4 bmm's), while a CPU run of
    the same call usually takes the fused ``_scaled_dot_product_flash_attention_for_cpu`` kernel (whose backward
    formula also counts the recomputation of QKᵀ: 5). Asking ``torch._fused_sdp_choice`` with CPU stand-ins of the same
    shapes, dtypes and last-dimension strides (one row of memory each) keeps meta and CPU counts equal.

    One exception: values with a head size of their own (multi-head latent attention, DeepSeek-V2/V3's 192-wide
    queries and keys with 128-wide values), which the CPU's fused kernel refuses and a GPU runs fused (PyTorch's
    memory-efficient kernel, cuDNN's and Transformer Engine's fused attention take them): traced as
    ``_scaled_dot_product_efficient_attention``, a fused kernel, not as the math path's score matrix.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch._C._nn.scaled_dot_product_attention:
            q, k, v, mask, dropout_p, is_causal, scale, gqa = _sdpa_arguments(*args, **kwargs)
            if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and q.device.type == "meta":
                mask = torch.zeros(mask.shape, dtype=q.dtype, device="meta")  # the CPU path converts bool masks to additive
            if q.device.type == "meta":
                stand = [_cpu_stand_in(t) for t in (q, k, v)]
                cpu_mask = _cpu_stand_in(mask) if isinstance(mask, torch.Tensor) else None
                if all(s is not None for s in stand) and (mask is None or cpu_mask is not None):
                    choice = torch._fused_sdp_choice(*stand, cpu_mask, dropout_p, is_causal, scale=scale, enable_gqa=gqa)
                    if choice == int(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                        return aten._scaled_dot_product_flash_attention_for_cpu(
                            q, k, v, dropout_p, is_causal, attn_mask=mask, scale=scale
                        )[0]
                    if (q.dim() == k.dim() == v.dim() == 4 and v.shape[-1] != q.shape[-1] and k.shape[:-1] == v.shape[:-1]
                            and q.shape[:2] == k.shape[:2]):  # the fused kernels' 4-D inputs, batch and heads alike
                        # a value head size of its own: fused on a GPU (see the class docstring)
                        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
                        return aten._scaled_dot_product_efficient_attention(
                            q, k, v, mask, grad, dropout_p, is_causal, scale=scale)[0]
        return func(*args, **kwargs)

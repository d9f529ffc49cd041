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
import re

import torch
from torch.utils import flop_counter as fc
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

__all__ = ["ShapeOnlyMode", "EXTRA_FORMULAS", "formula_registry", "is_uncounted_compute"]


def _sdpa_cpu_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_flop_count(query_shape, key_shape, value_shape)


def _sdpa_cpu_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return fc.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


#: Formulas added to torch's registry (ops FlopCounterMode leaves at 0 on CPU).
EXTRA_FORMULAS = {
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_cpu_flop,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_cpu_backward_flop,
}


def formula_registry() -> set:
    """Op overload packets that have a FLOP formula (torch's registry + :data:`EXTRA_FORMULAS`)."""
    return set(fc.flop_registry) | set(EXTRA_FORMULAS)


# Ops that do arithmetic proportional to a product of several dimensions (matmul-like) — counting them as 0 would
# be wrong. Everything else (elementwise, reductions, norms, pooling, views, copies, indexing, embedding lookups) is
# not counted, as in FlopCounterMode and fvcore (documented in perfmodel.features.extract).
_COMPUTE = re.compile(r"conv|(^|_)mm|matmul|bmm|attention|linalg|fft|cdist|cholesky|triangular|lstm|gru|rnn|tensordot|bilinear|_cufft|einsum|addr$|addmv|^mv$|dot$|kron")


def is_uncounted_compute(packet, registry: set) -> bool:
    """True for a matmul-like op without a FLOP formula (reported as unsupported)."""
    if packet in registry:
        return False
    name = packet.__name__ if hasattr(packet, "__name__") else str(packet)
    name = name.split(".")[-1]
    return bool(_COMPUTE.search(name))


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

    def __init__(self, skip_compute: bool = True, count: bool = False, scoped: bool = False):
        super().__init__()
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

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func._overloadpacket
        self.seen.add(packet)
        out = self._fake(func, packet, args, kwargs) if self.skip_compute and packet in self._FAKE_ALL else func(*args, **kwargs)
        if self.count:
            formula = self._formulas.get(packet)
            if formula is not None:
                n = int(formula(*_shapes(args), **_shapes(kwargs), out_shape=_shapes(out)))
                self.flops += n
                self.flops_by_op[packet] = self.flops_by_op.get(packet, 0) + n
                self.records.append((packet, n, self.scope) if self.scoped else (packet, n))
        return out

    def _fake(self, func, packet, args, kwargs):
        """Zeros of the output shape of a counted op (computed for real on meta tensors)."""
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is None or first.device.type == "meta":
            return func(*args, **kwargs)
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
        return func(*args, **kwargs)

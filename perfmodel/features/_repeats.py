"""Deep stacks of identical blocks, counted per op from a shallow copy of the model and expanded to the full depth.

A transformer of 36 identical layers runs the same ops, with the same shapes, in each layer; tracing all of them on the
meta device costs ~0.06 s per layer in torch's Python meta kernels. :func:`find_stacks` finds the ``nn.ModuleList`` s
whose layers are structurally identical — the same module types, parameter and buffer shapes, dtypes and plain
attributes (``layer_idx``, the key-value cache slot of Hugging Face layers, excepted) — possibly after a few leading
layers and with a period (Switch Transformers alternate dense and sparse layers; its first layer also holds the relative
position bias). :func:`shallow_copy` builds a copy of the model whose stacks keep the leading layers, **four** repeated
units and the trailing layers (the layer modules themselves are shared, nothing is copied but the containers), and
:func:`expand` turns the per-op trace of that copy into the trace of the full model: the rows of the second unit are
repeated, with their module names renamed, forward in increasing and backward in decreasing order.

It is exact only when the rows of a unit do not depend on its position. That is checked on the trace itself rather
than assumed: the rows of units 2 and 3 of the copy (each with its neighbours on both sides) must be identical, op by
op — FLOPs, bytes, dtypes, shapes and module names up to the layer index — and every unit must run exactly once, in
order, forward and backward. If anything differs (or the copy fails to run), :func:`expand` returns ``None`` and
:func:`perfmodel.features.extract` traces the whole model, never a different answer; ``full_trace=True`` forces that.
"""
from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

__all__ = ["Stack", "find_stacks", "shallow_copy", "expand", "UNITS"]

#: repeated units kept in the shallow copy: unit 0 (after the leading layers), units 1 and 2 (compared with each
#: other: the repeated one), unit 3 (the last, before the trailing layers)
UNITS = 4
#: plain attributes that differ between otherwise identical layers without changing what they run
_INDEX_ATTRS = frozenset({"layer_idx"})
_SIMPLE = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class Stack:
    """A ``ModuleList`` at ``path`` of ``n_layers`` layers: ``head`` leading layers, ``units`` repeats of ``period``
    identical layers, ``tail`` trailing layers."""

    path: str
    n_layers: int
    head: int
    period: int
    units: int
    tail: int

    @property
    def kept(self) -> list[int]:
        """Indices of the full stack's layers kept in the shallow copy, in order."""
        return [*range(self.head + UNITS * self.period), *range(self.n_layers - self.tail, self.n_layers)]

    def full_index(self, j: int, copy_unit: int = 0) -> int:
        """Index in the full stack of layer ``j`` of the shallow copy (``copy_unit`` > 0: that many units further on,
        for the copies of unit 2)."""
        head, p = self.head, self.period
        if copy_unit:
            return j + copy_unit * p
        if j < head + 3 * p:
            return j
        return j + (self.units - UNITS) * p

    def shallow_index(self, i: int) -> int:
        """Index in the shallow copy of the layer whose rows stand for layer ``i`` of the full stack."""
        head, p, c = self.head, self.period, self.units
        if i < head + 2 * p:
            return i
        if i < head + (c - 1) * p:
            return head + p + (i - head) % p
        return i - (c - UNITS) * p

    def describe(self) -> str:
        return (f"{self.path}: {self.n_layers} layers = {self.head} + {self.units} x {self.period} + {self.tail}, "
                f"traced {len(self.kept)}")


def _attr_key(value):
    import torch

    if isinstance(value, (*_SIMPLE, torch.dtype, torch.device)):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(v, _SIMPLE) for v in value):
        return (type(value).__name__, tuple(value))
    return ("object", id(value))  # anything else (a config, a function): the very same object in every layer


def _describe(layer) -> list:
    """(module path, type, plain attributes, parameters, buffers, hook counts) of every module of a layer."""
    import torch

    out = []
    for rel, m in layer.named_modules():
        attrs = {k: _attr_key(v) for k, v in vars(m).items()
                 if not k.startswith("_") and k != "training" and k not in _INDEX_ATTRS and not isinstance(v, torch.nn.Module)}
        params = tuple((n, None if p is None else (tuple(p.shape), p.dtype, p.requires_grad)) for n, p in m._parameters.items())
        bufs = tuple((n, None if b is None else (tuple(b.shape), b.dtype)) for n, b in m._buffers.items())
        hooks = tuple(len(getattr(m, h, ())) for h in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                                                        "_backward_pre_hooks"))
        out.append((rel, type(m), attrs, params, bufs, hooks))
    return out


def _signatures(layers) -> list[tuple]:
    """What each layer runs, up to its position: module types, parameters, buffers and plain attributes of every
    module. Attributes that only some layers have are left out: modules may cache state on themselves as they run
    (Switch Transformers' router keeps the dtype of its last input), and a layer that has not run yet lacks it."""
    described = [_describe(layer) for layer in layers]
    common: dict = {}
    for d in described:
        for rel, _, attrs, *_ in d:
            common[rel] = common[rel] & attrs.keys() if rel in common else set(attrs)
    return [
        tuple((rel, t, tuple(sorted((k, v) for k, v in attrs.items() if k in common[rel])), params, bufs, hooks)
              for rel, t, attrs, params, bufs, hooks in d)
        for d in described
    ]


def _split(sigs: list, max_period: int = 4, max_head: int = 3):
    """(head, period, units, tail) of the cheapest repetition of ``sigs`` with at least ``UNITS + 1`` units, or None."""
    n, best = len(sigs), None
    for p in range(1, max_period + 1):
        for h in range(max_head + 1):
            c = (n - h) // p
            if c <= UNITS:
                continue
            tail = n - h - c * p
            if all(sigs[i] == sigs[i + p] for i in range(h, h + (c - 1) * p)):
                cost = h + UNITS * p + tail
                if best is None or cost < best[0]:
                    best = (cost, h, p, c, tail)
    return None if best is None else best[1:]


def find_stacks(net) -> list[Stack]:
    """The outermost ``ModuleList`` s of ``net`` made of repeated identical layers (see the module docstring).

    A layer that shares a module or a parameter with anything else in the model (a weight tied across layers) makes
    its stack ineligible, as does a list holding the same layer twice.
    """
    import torch

    mod_uses = Counter(id(m) for _, m in net.named_modules(remove_duplicate=False))
    par_uses = Counter(id(p) for _, p in net.named_parameters(remove_duplicate=False))
    stacks: list[Stack] = []
    for name, m in net.named_modules():
        if not isinstance(m, torch.nn.ModuleList) or len(m) <= UNITS or not name:
            continue
        if any(name.startswith(s.path + ".") for s in stacks):
            continue  # inside a layer of a stack found already (named_modules is pre-order)
        layers = list(m)
        owned = all(
            mod_uses[id(sub)] == 1 for layer in layers for sub in layer.modules()
        ) and all(par_uses[id(p)] == 1 for layer in layers for p in layer.parameters())
        if not owned:
            continue
        split = _split(_signatures(layers))
        if split is not None:
            stacks.append(Stack(name, len(layers), *split))
    return stacks


def shallow_copy(net, stacks: list[Stack]):
    """A copy of ``net`` whose stacks hold only their kept layers (the containers on the way are copied, the layers
    and everything else are shared with ``net``, which is not modified)."""
    copies = {"": copy.copy(net)}
    copies[""]._modules = type(net._modules)(net._modules)
    for s in stacks:
        parts = s.path.split(".")
        for k in range(1, len(parts) + 1):
            path, parent = ".".join(parts[:k]), ".".join(parts[: k - 1])
            if path in copies:
                continue
            orig = copies[parent]._modules[parts[k - 1]]
            new = copy.copy(orig)
            new._modules = type(orig._modules)(orig._modules)
            copies[parent]._modules[parts[k - 1]] = copies[path] = new
        layers = list(copies[s.path]._modules.values())
        copies[s.path]._modules = type(copies[s.path]._modules)((str(j), layers[i]) for j, i in enumerate(s.kept))
    return copies[""]


class _Names:
    """Layer membership and renaming of the module scopes of trace records, for one stack (shallow-copy indices)."""

    def __init__(self, stack: Stack, others: list[Stack]):
        self.stack, self.prefix = stack, stack.path + "."
        self.other_prefixes = tuple(o.path + "." for o in others)
        self._labels: dict = {}
        self._renamed: dict = {}

    def _index(self, name: str):
        if not name.startswith(self.prefix):
            return None
        head, _, _ = name[len(self.prefix):].partition(".")
        return int(head) if head.isdigit() else None

    def label(self, scope) -> int | None:
        """Shallow layer index of the first layer of this stack in ``scope``; -1 for a layer of another stack; None."""
        lab = self._labels.get(scope, False)
        if lab is False:
            lab = next((j for j in map(self._index, scope) if j is not None), None)
            if lab is None and any(
                n.startswith(p) and n[len(p):].partition(".")[0].isdigit() for n in scope for p in self.other_prefixes
            ):
                lab = -1
            self._labels[scope] = lab
        return lab

    def rename(self, scope, copy_unit: int = 0):
        key = (scope, copy_unit)
        out = self._renamed.get(key)
        if out is None:
            names = []
            for name in scope:
                j = self._index(name)
                if j is not None:
                    rest = name[len(self.prefix) + len(str(j)):]
                    name = f"{self.prefix}{self.stack.full_index(j, copy_unit)}{rest}"
                names.append(name)
            out = self._renamed[key] = tuple(names)
        return out


def _unit(stack: Stack, j):
    """Repeated unit (0 … UNITS-1) of shallow layer ``j``; -1 before, UNITS after; None outside the stack."""
    if j is None or j < 0:
        return j
    if j < stack.head:
        return "head"
    u = (j - stack.head) // stack.period
    return u if u < UNITS else "tail"


_ORDER = {"head": -1, 0: 0, 1: 1, 2: 2, 3: 3, "tail": UNITS}


def _expand_phase(records: list, names: _Names, forward: bool):
    """The records of one phase (forward or backward) of the full stack, or None when the units are not repeated."""
    stack = names.stack
    units = [_unit(stack, names.label(r[7])) for r in records]
    if any(u == -1 for u in units):  # a layer of another stack inside this one's rows: keep it simple, refuse
        other = [i for i, u in enumerate(units) if u == -1]
        own = [i for i, u in enumerate(units) if u not in (None, -1)]
        if own and other and own[0] < other[-1] and other[0] < own[-1]:
            return None
    seq = [_ORDER[u] for u in units if u not in (None, -1)]
    if forward and any(a > b for a, b in zip(seq, seq[1:])):
        return None
    if not forward and any(a < b for a, b in zip(seq, seq[1:])):
        return None
    order = (1, 2, 3) if forward else (2, 1, 0)
    try:
        a, b, c = (units.index(u) for u in order)
    except ValueError:  # a unit runs no op in this phase
        return None
    if b - a != c - b or any(units[i] == -1 for i in range(a, c)):
        return None
    shift = 1 if forward else -1  # unit of [b, c) relative to the unit of [a, b)
    for k in range(b - a):
        ra, rb = records[a + k], records[b + k]
        # the dataflow (field 10) is relative to each row, identical across identical layers by construction, and
        # not compared: a tensor of the model's root read by every layer (rotary tables) is farther from later ones
        if ra[:7] != rb[:7] or ra[8:10] != rb[8:10] or _shifted(names, ra[7], shift) != rb[7]:
            return None
    n_copies = stack.units - UNITS
    seg = records[b:c] if forward else records[a:b]  # unit 2 (with its junction to the next unit)
    copies = []
    steps = range(1, n_copies + 1) if forward else range(n_copies, 0, -1)
    for m in steps:
        copies.extend((*r[:7], names.rename(r[7], m), *r[8:]) for r in seg)
    cut = c if forward else a

    def keep(rs):
        return [(*r[:7], names.rename(r[7]), *r[8:]) for r in rs]

    if forward:
        return records[:cut] + copies + keep(records[cut:])
    return keep(records[:cut]) + copies + records[cut:]


def _shifted(names: _Names, scope, units: int):
    """``scope`` with this stack's layer indices moved by ``units`` repeated units (for the comparison of two units)."""
    p, prefix = names.stack.period, names.prefix
    out = []
    for name in scope:
        j = names._index(name)
        if j is not None:
            name = f"{prefix}{j + units * p}{name[len(prefix) + len(str(j)):]}"
        out.append(name)
    return tuple(out)


def expand(trace: list, n_forward: int, n_backward_end: int, stacks: list[Stack]):
    """(records, n_forward, n_backward_end) of the full model from the trace of its shallow copy, or None when a
    stack's units are not provably repeated (then trace the full model)."""
    fwd, bwd, rest = trace[:n_forward], trace[n_forward:n_backward_end], trace[n_backward_end:]
    for s in stacks:
        names = _Names(s, [o for o in stacks if o is not s])
        fwd = _expand_phase(fwd, names, forward=True)
        if fwd is None:
            return None
        if bwd:
            bwd = _expand_phase(bwd, names, forward=False)
            if bwd is None:
                return None
    return fwd + bwd + rest, len(fwd), len(fwd) + len(bwd)

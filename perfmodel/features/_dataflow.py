"""Which tensor each traced op reads and writes, and which op produced or reads it next — the dataflow of the step.

An eager step moves, per kernel, every tensor it reads and writes. A compiler that fuses a chain of memory-bound
kernels (``torch.compile``'s Inductor) moves less: the chain reads each tensor produced outside it once, keeps its
intermediates in registers, and writes only what is read after it. Which tensors those are is a property of the
dataflow, not of the chain's widest member, so the trace records it per op:

* while tracing (:class:`perfmodel.features._counting.ShapeOnlyMode`), the tensors an op reads and writes, each as
  ``(storage, span, bytes)``: ``storage`` a serial number per allocation (views and saved tensors share their base's),
  ``span`` the bytes ``[lo, hi)`` of the storage the view covers, ``bytes`` its footprint in memory (a broadcast
  tensor counts its stored elements, not its expanded ones);
* after the step (:func:`resolve`), each op's record gets a position-independent description of it, ``(reads,
  writes)``:

  - per tensor read, ``(bytes, produced, seen, slot, lo, hi, again, again_slot, recompute)``: ``produced`` the number of rows back to the op
    that wrote that version of the storage, ``seen`` the rows back to the previous read of that version (any view of
    it, ``0`` for an earlier read by the same op; ``slot`` its position among that row's reads); ``produced`` ``0``
    and ``seen`` ``-1`` when there is none in the same phase within :data:`FLOW_CAP` rows (a parameter, the batch, a
    tensor of an earlier phase or far away); ``[lo, hi)`` the bytes
    of the storage the view spans, so that two slices of one tensor read in one fused kernel count once; for a
    backward op reading what a run of forward memory-bound ops produced only for the backward pass, ``recompute``
    the bytes the run reads from outside it (what recomputing it reads) and ``again`` / ``again_slot`` the previous
    backward read of something that run saved, as ``seen`` / ``slot`` (``-1``: none), else ``-1, 0, 0``;
  - per tensor written, ``(bytes, reach, later)``: ``reach`` the rows ahead to the last read of what it wrote in the
    same phase (``0``: none; :data:`FLOW_CAP` + 1: beyond the cap, or never read nor overwritten — a result of the
    step such as a parameter's gradient, or a buffer it updates), ``later`` whether an op of a later phase reads it
    (the backward pass reads what the forward pass saved; the optimizer reads the gradients).

Relative distances, not tensor identities, so that the records of identical layers are identical and the deep-stack
expansion (:mod:`perfmodel.features._repeats`) copies them unchanged; a chain of fused kernels spans far fewer rows
than :data:`FLOW_CAP`.
"""
from __future__ import annotations

__all__ = ["FLOW_CAP", "resolve", "footprint", "span", "union_length"]

#: rows over which a producer, a previous read or a reader is located; farther means "outside any fused chain"
FLOW_CAP = 256


def footprint(t) -> int:
    """Bytes of memory a tensor view spans: its elements, or fewer when strides repeat elements (a broadcast)."""
    n = t.numel()
    if n == 0:
        return 0
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()) if s > 1)
    return min(n, span) * t.element_size()


def span(t) -> tuple:
    """``(lo, hi)``: the bytes of its storage a tensor view covers, from its first to its last element."""
    es = t.element_size()
    lo = t.storage_offset() * es
    if t.numel() == 0:
        return (lo, lo)
    hi = lo + es * (1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 1 and st > 0))
    lo += es * sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 1 and st < 0)
    return (lo, hi)


def resolve(records: list, bounds, op_class) -> list:
    """``records`` (trace tuples whose last field is ``(reads, writes)`` of ``(storage, span, bytes)``) with that field
    replaced by the relative description of the module docstring. ``bounds`` = (first backward row, first optimizer
    row): rows before the first are the forward pass. ``op_class(func, view)`` classes an op
    (:func:`perfmodel.features._counting.op_class`): which ops a compiler fuses."""
    n0, n1 = bounds

    def phase(i):
        return 0 if i < n0 else 1 if i < n1 else 2

    far = FLOW_CAP + 1
    version: dict = {}  # storage -> row that wrote its current version
    last_read: dict = {}  # (storage, version) -> (row, slot) of its last read
    readers: dict = {}  # (row, storage) of a write -> [last same-phase reader row, read in a later phase]
    overwritten: set = set()  # (row, storage) of writes whose storage was written again
    ins_all = []
    runs = _forward_runs(records, n0, op_class)
    origin_read: dict = {}  # first row of a forward run -> (row, slot) of the last backward read of what it saved
    for i, rec in enumerate(records):
        reads, writes = rec[-1]
        p_i = phase(i)
        ins = []
        for slot, (sid, (lo, hi), nb) in enumerate(reads):
            w = version.get(sid)
            produced = 0
            origin = (-1, 0, 0)
            if w is not None and p_i == 1 and w < n0 and w in runs:
                start, end, recompute = runs[w]
                entry = readers[(w, sid)]
                if entry[0] is None or entry[0] <= end:  # saved only for the backward pass: recomputable there
                    q, q_slot = origin_read.get(start, (None, 0))
                    back = i - q if q is not None and i - q <= FLOW_CAP else -1
                    origin = (back, q_slot if back >= 0 else 0, recompute)
                    origin_read[start] = (i, slot)
            if w is not None:
                if phase(w) == p_i and i - w <= FLOW_CAP:
                    produced = i - w
                entry = readers[(w, sid)]
                if phase(w) == p_i:
                    entry[0] = i
                else:
                    entry[1] = True
            k = (sid, w)
            q, q_slot = last_read.get(k, (None, 0))
            seen = i - q if q is not None and phase(q) == p_i and i - q <= FLOW_CAP else -1
            last_read[k] = (i, slot)
            ins.append((nb, produced, seen, q_slot if seen >= 0 else 0, lo, hi, *origin))
        for sid, _key, _nb in writes:
            w = version.get(sid)
            if w is not None:
                overwritten.add((w, sid))
            version[sid] = i
            readers.setdefault((i, sid), [None, False])
        ins_all.append(tuple(ins))
    out = []
    for i, rec in enumerate(records):
        _, writes = rec[-1]
        outs = []
        for sid, _key, nb in writes:
            last, later = readers[(i, sid)]
            if last is not None and last > i:
                reach = last - i if last - i <= FLOW_CAP else far
            elif last is None and not later and (i, sid) not in overwritten:
                reach = far  # never read, never overwritten: a result of the step (a gradient, an updated buffer)
            else:
                reach = 0
            outs.append((nb, reach, later))
        out.append((*rec[:-1], (ins_all[i], tuple(outs))))
    return out


#: what a traced op is to a compiler that fuses memory-bound chains: a GEMM-like kernel it leaves alone (it ends a
#: chain), a view or allocation that launches nothing, or a memory-bound op it fuses (as work_from_ops classes them)
_GEMM_CLASSES = ("matmul", "conv", "attention")
_FREE_CLASSES = ("view", "factory")


def _forward_runs(records: list, n0: int, op_class) -> dict:
    """Forward row of each memory-bound op -> (first row, last row, bytes read from outside) of the run of
    memory-bound ops it is in (views and allocations do not break a run): what recomputing its outputs in the backward
    pass reads, as a compiler that recomputes fused pointwise chains rather than saving them does."""
    classes: dict = {}
    runs: dict = {}
    members: list = []

    def close():
        if not members:
            return
        start, end = members[0], members[-1]
        inside = set(members)
        produced: dict = {}
        covered: dict = {}  # (storage, version) -> {(lo, hi): bytes}
        for i in members:
            reads, writes = records[i][-1]
            for sid, (lo, hi), nb in reads:
                w = produced.get(sid)
                if w is not None and w in inside:
                    continue
                covered.setdefault((sid, w), {})[(lo, hi)] = nb
            for sid, _span, _nb in writes:
                produced[sid] = i
        recompute = sum(min(sum(v.values()), union_length(v)) for v in covered.values())
        for i in members:
            runs[i] = (start, end, recompute)
        members.clear()

    for i in range(min(n0, len(records))):
        rec = records[i]
        key = (rec[0], rec[8])
        cls = classes.get(key)
        if cls is None:
            cls = classes[key] = op_class(rec[0], rec[8])
        if cls in _FREE_CLASSES:
            continue
        if cls in _GEMM_CLASSES and rec[1] > 0 or str(rec[0]._overloadpacket) in ("aten.mm", "aten.addmm", "aten.bmm"):
            close()
            continue
        members.append(i)
    close()
    return runs


def union_length(spans) -> int:
    """Total length of the union of ``[lo, hi)`` intervals."""
    total, end = 0, None
    for lo, hi in sorted(spans):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total

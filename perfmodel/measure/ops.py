"""Operator microbenchmarks on your own device, in NeuSight's schema: the rows that calibrate perfmodel's operator model.

:func:`measure_ops` times one PyTorch call of each operator NeuSight measures (``neusight/Dataset/collect.py``;
:data:`perfmodel.datasets.neusight.MICROBENCHMARK_OPS`) — ``torch.bmm``, ``nn.Linear``, ``nn.Conv2d``,
``nn.LayerNorm``, ``nn.Softmax`` and the element-wise ops — over a grid of shapes (:func:`op_grid`), and returns (or
appends to a CSV) one row per (op, shape) in the columns :func:`perfmodel.step.op_latency.load_op_rows` reads, so
that ``perfmodel fit --with ops.csv`` (:func:`perfmodel.step.op_latency.fit_op_model`) refits the model with them.

Timing rules (NeuSight's, except the statistic):

* forward only (NeuSight's microbenchmark schema has no backward column), under ``torch.no_grad``, on tensors of the
  precision's dtype drawn once per shape (normal noise; positive for ``pow`` and ``div``);
* CUDA: ``warmup`` untimed calls, a device synchronisation, then ``repeats`` calls each between two CUDA events
  (``elapsed_time`` after the end event's synchronisation) — one call timed alone on an idle GPU, as NeuSight does, so
  a latency includes the host's launch overhead, which the model separates out (:mod:`perfmodel.step.op_latency`);
* CPU (and any other device): ``time.perf_counter`` around each call, after ``warmup`` untimed calls (synchronised
  for devices that run asynchronously);
* ``latency_ms`` is the **median** of the repeats (NeuSight keeps the mean of the 5 fastest of 25; the median is
  robust to a busy host as well as to the slow first calls); ``latency_min_ms`` is the fastest repeat;
* ``fp32`` runs FP32 with TF32 off (NeuSight's setting), ``tf32`` FP32 tensors with TF32 matmuls and convolutions on
  (``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32``, restored afterwards), ``bf16``
  and ``fp16`` tensors and modules of that dtype.

The ``device`` column holds the device's name as ``torch.cuda.get_device_name()`` spells it (what
:func:`perfmodel.datasets.gpu_spec` reads); a CPU run writes ``"CPU: <model name>"`` — useful to test the harness, but
a CPU is not a GPU the operator model can be calibrated to (:func:`~perfmodel.step.op_latency.load_op_rows` refuses
such rows). The ``precision`` column tells the model to featurise a row with that precision's element size and peak
rate.
"""
from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager

import numpy as np
import pandas as pd

__all__ = ["measure_ops", "op_grid", "check_precision", "OP_COLUMNS", "OP_PRECISIONS", "SHAPE_COLUMNS"]

#: Shape columns of NeuSight's microbenchmark schema (``load_neusight_microbenchmarks``), in its order.
SHAPE_COLUMNS = ["b", "m", "n", "k", "h", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding"]

#: Columns of :func:`measure_ops` rows: NeuSight's microbenchmark schema as perfmodel reads it (``op``, ``device``,
#: ``source_name``, the shape, ``latency_ms``, ``torch_version``, ``cudnn_version``, ``cuda_version``), then what a
#: calibration needs besides: ``precision`` (fp32, tf32, bf16, fp16), ``dtype`` (torch's name), ``latency_min_ms``,
#: ``repeats``, ``warmup``, ``timer`` (``cuda-events`` or ``perf_counter``), ``threads`` (torch CPU threads), ``cpu``
#: (the host's CPU), ``perfmodel_version`` and ``timestamp_utc``.
OP_COLUMNS = ["op", "device", "source_name", *SHAPE_COLUMNS, "latency_ms", "torch_version", "cudnn_version", "cuda_version",
              "precision", "dtype", "latency_min_ms", "repeats", "warmup", "timer", "threads", "cpu", "perfmodel_version",
              "timestamp_utc"]

#: Precisions :func:`measure_ops` runs, with the torch dtype of their tensors.
OP_PRECISIONS = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}
_PRECISION_ALIASES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16"}

#: NeuSight's operators per class of the latency model (``NEUSIGHT_OP_CLASS``).
_CLASS_OPS = {"matmul": ("bmm", "linear"), "conv": ("conv",), "layernorm": ("ln",), "softmax": ("softmax",),
              "elementwise": ("add", "mul", "div", "pow", "addu", "mulu", "divu", "powu", "relu", "gelu", "tanh")}
_ALL_OPS = tuple(op for ops in _CLASS_OPS.values() for op in ops)
_SHAPE_OF = {"bmm": ("b", "m", "n", "k"), "linear": ("b", "m", "n", "k"),
             "conv": ("b", "in_channels", "out_channels", "kernel_size", "input_size", "stride", "padding"),
             **{op: ("b", "h") for op in ("ln", "softmax", *_CLASS_OPS["elementwise"])}}

#: Largest tensor work of a default-grid shape: FLOPs of a matmul or convolution, elements of any one tensor.
_MAX_FLOPS = 1e11
_MAX_NUMEL = 2**26


def _geom(lo: int, hi: int, per_octave: int) -> list[int]:
    """Integers from ``lo`` to ``hi`` spaced ``per_octave`` per doubling (rounded, distinct)."""
    n = int(round(per_octave * math.log2(hi / lo)))
    return sorted({int(round(lo * 2 ** (i / per_octave))) for i in range(n + 1)})


def _default_grid() -> list[dict]:
    rows: list[dict] = []
    for b in (1, 4, 16, 64):  # bmm: (b, m, n) @ (b, n, k)
        for m in (32, 128, 512, 2048):
            for n in (32, 128, 512, 2048):
                for k in (32, 128, 512, 2048):
                    if 2 * b * m * n * k <= _MAX_FLOPS and b * max(m * n, n * k, m * k) <= _MAX_NUMEL:
                        rows.append(dict(op="bmm", b=b, m=m, n=n, k=k))
    for b in (1, 8):  # nn.Linear(n, k) on (b, m, n)
        for m in (64, 256, 1024, 4096):
            for n in (128, 512, 2048, 8192):
                for k in (128, 512, 2048, 8192):
                    if 2 * b * m * n * k <= _MAX_FLOPS and max(b * m * n, n * k, b * m * k) <= _MAX_NUMEL:
                        rows.append(dict(op="linear", b=b, m=m, n=n, k=k))
    for b in (1, 8, 32):  # nn.Conv2d(ci, co, r, stride, padding=r // 2) on (b, ci, s, s)
        for ci, co in ((3, 32), (32, 32), (64, 64), (64, 128), (128, 128), (256, 256)):
            for r in (1, 3):
                for stride in (1, 2):
                    for s in (7, 14, 28, 56, 112):
                        ho = (s + 2 * (r // 2) - r) // stride + 1
                        if 2 * b * ho * ho * co * ci * r * r <= _MAX_FLOPS and b * max(ci, co) * s * s <= _MAX_NUMEL:
                            rows.append(dict(op="conv", b=b, in_channels=ci, out_channels=co, kernel_size=r, input_size=s,
                                             stride=stride, padding=r // 2))
    for op in ("ln", "softmax"):
        for b in _geom(1, 16384, 2):
            for h in _geom(32, 16384, 1):
                if b * h <= _MAX_NUMEL:
                    rows.append(dict(op=op, b=b, h=h))
    for op in _CLASS_OPS["elementwise"]:
        for b in (1, 16, 256, 4096):
            for h in (256, 1024, 4096, 16384, 65536):
                if b * h <= _MAX_NUMEL:
                    rows.append(dict(op=op, b=b, h=h))
    return rows


def _quick_grid() -> list[dict]:
    rows = [dict(op="bmm", b=2, m=64, n=64, k=64), dict(op="bmm", b=4, m=128, n=64, k=32),
            dict(op="linear", b=1, m=32, n=64, k=64), dict(op="linear", b=2, m=64, n=128, k=256),
            dict(op="conv", b=1, in_channels=3, out_channels=16, kernel_size=3, input_size=16, stride=1, padding=1),
            dict(op="conv", b=2, in_channels=16, out_channels=16, kernel_size=1, input_size=8, stride=2, padding=0)]
    for op in ("ln", "softmax"):
        rows += [dict(op=op, b=16, h=64), dict(op=op, b=64, h=256)]
    rows += [dict(op=op, b=16, h=256) for op in _CLASS_OPS["elementwise"]]
    return rows


def _select_ops(classes) -> list[str]:
    if isinstance(classes, str):
        classes = [classes]
    ops: list[str] = []
    for c in classes:
        if c in _CLASS_OPS:
            ops += [o for o in _CLASS_OPS[c] if o not in ops]
        elif c in _ALL_OPS:
            ops += [c] if c not in ops else []
        else:
            raise ValueError(f"classes must name operator classes {list(_CLASS_OPS)} or NeuSight ops {list(_ALL_OPS)}; got {c!r}.")
    if not ops:
        raise ValueError(f"classes is empty; name some of {list(_CLASS_OPS)}.")
    return ops


def op_grid(sizes="default", classes=tuple(_CLASS_OPS)) -> pd.DataFrame:
    """The shapes :func:`measure_ops` times: one row per (op, shape).

    Parameters
    ----------
    sizes : {'default', 'quick'} or DataFrame or list of dict
        ``"default"``: log-spaced shapes of every op, at least 200 per operator class (the fewest rows for which the
        model fits a class its own per-GPU trees and launch overhead), no matmul or convolution above 1e11 FLOPs and
        no tensor above 2**26 elements (about 1500 shapes; a minute or two on a GPU). ``"quick"``: 21 small shapes,
        one or two per op (seconds on a CPU; for testing the harness). Or your own shapes: ``op`` and its shape
        columns (:data:`SHAPE_COLUMNS`; ``padding`` defaults to 0, ``stride`` to 1).
    classes : sequence of str
        Operator classes (``"matmul"``, ``"conv"``, ``"layernorm"``, ``"softmax"``, ``"elementwise"``) or NeuSight
        op names (``"bmm"``, ``"gelu"`` ...) to keep.

    Returns
    -------
    DataFrame
        ``op`` and :data:`SHAPE_COLUMNS` (nullable integers, <NA> where the op has no such dimension).

    Raises
    ------
    ValueError
        An unknown grid name, op or class, or a missing or non-positive dimension.
    """
    ops = _select_ops(classes)
    if isinstance(sizes, str):
        grids = {"default": _default_grid, "quick": _quick_grid}
        if sizes not in grids:
            raise ValueError(f"sizes must be 'default', 'quick' or a table of shapes (op and shape columns); got {sizes!r}.")
        rows = pd.DataFrame(grids[sizes]())
    else:
        rows = pd.DataFrame(sizes)
        if "op" not in rows.columns:
            raise ValueError(f"a table of shapes needs an 'op' column (one of {list(_ALL_OPS)}); it has {list(rows.columns)}.")
        unknown = sorted(set(rows["op"].astype(str)) - set(_ALL_OPS))
        if unknown:
            raise ValueError(f"unknown op(s) {unknown} in the shapes; expected some of {list(_ALL_OPS)}.")
        rows = rows.assign(**{c: rows[c] if c in rows.columns else (1 if c == "stride" else 0) for c in ("stride", "padding")})
    rows = rows[rows["op"].isin(ops)].reset_index(drop=True)
    out = pd.DataFrame({"op": rows["op"].astype(str)})
    for c in SHAPE_COLUMNS:
        out[c] = pd.array(rows[c], dtype="Int64") if c in rows.columns else pd.array([pd.NA] * len(rows), dtype="Int64")
    for i, op in enumerate(out["op"]):
        need = _SHAPE_OF[op]
        vals = [out.at[i, c] for c in need]
        if any(v is pd.NA or v < (0 if c == "padding" else 1) for c, v in zip(need, vals)):
            raise ValueError(f"shape row {i} ({op}) needs the dimensions {list(need)} as positive integers (padding ≥ 0); "
                             f"got {dict(zip(need, vals))}.")
        for c in SHAPE_COLUMNS:
            if c not in need:
                out.at[i, c] = pd.NA
    return out


def _canonical(precision) -> str:
    key = str(precision).strip().lower().removeprefix("torch.")
    key = _PRECISION_ALIASES.get(key, key)
    if key not in OP_PRECISIONS:
        raise ValueError(f"precision must be one of {list(OP_PRECISIONS)} (or a torch dtype name such as 'bfloat16'); "
                         f"got {precision!r}.")
    return key


@contextmanager
def matmul_mode(precision: str):
    """TF32 matmuls and convolutions on for ``"tf32"``, off for every other precision (FP32 means FP32), restored
    afterwards (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``; no effect on a CPU)."""
    import torch

    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    on = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def check_precision(device: str, precision) -> str:
    """The canonical precision (``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"``) if ``device`` can run it, else a
    ValueError saying why and what to use instead.

    TF32 and BF16 need an NVIDIA GPU of compute capability 8.0 or later (Ampere: A100, A10, L4, H100 ...); TF32 is a
    mode of those GPUs' tensor cores and is refused elsewhere (use fp32). On a CPU or another device, bf16 and fp16
    are checked by running a tiny matmul, layer norm and element-wise op of that dtype there.

    Parameters
    ----------
    device : str
        A device :func:`perfmodel.measure.check_device` accepted (``"cpu"``, ``"cuda:0"`` ...).
    precision : str
        ``"fp32"``, ``"tf32"``, ``"bf16"``, ``"fp16"`` or a torch dtype name.
    """
    import torch

    p = _canonical(precision)
    dev = torch.device(device)
    if dev.type == "cuda":
        major, minor = torch.cuda.get_device_capability(dev)
        if p in ("tf32", "bf16") and major < 8:
            name = torch.cuda.get_device_name(dev)
            alt = "fp32" if p == "tf32" else "fp16 or fp32"
            raise ValueError(f"precision {p!r} is not available on {name!r} (compute capability {major}.{minor}): {p} needs an "
                             f"NVIDIA GPU of compute capability 8.0 or later (A100, A10, L4, H100 ...). Use {alt}.")
        return p
    if p == "tf32":
        raise ValueError(f"precision 'tf32' is a mode of NVIDIA tensor cores (compute capability 8.0 or later); device "
                         f"{device!r} has none. Use fp32 there, or --device cuda on an Ampere or later GPU.")
    if p in ("bf16", "fp16"):
        dtype = getattr(torch, OP_PRECISIONS[p])
        try:
            x = torch.ones(4, 8, device=dev, dtype=dtype)
            torch.nn.functional.layer_norm(x @ x.T, (4,))
            torch.nn.functional.gelu(x + x)
        except (RuntimeError, TypeError, NotImplementedError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise ValueError(f"precision {p!r} is not available on device {device!r} ({type(exc).__name__}: {first}). "
                             "Use fp32.") from None
    return p


def _runner(op: str, shape: dict, device, dtype, gen):
    """A zero-argument callable running one call of ``op`` at ``shape`` (inputs and module built once)."""
    import torch

    def rand(*size, positive=False):
        t = torch.randn(*size, generator=gen)
        if positive:
            t = t.abs() + 0.5
        return t.to(device=device, dtype=dtype)

    s = {c: int(v) for c, v in shape.items() if pd.notna(v)}
    nn = torch.nn
    if op == "bmm":
        a, b = rand(s["b"], s["m"], s["n"]), rand(s["b"], s["n"], s["k"])
        return lambda: torch.bmm(a, b)
    if op == "linear":
        mod = nn.Linear(s["n"], s["k"], bias=True).to(device=device, dtype=dtype)
        x = rand(s["b"], s["m"], s["n"])
        return lambda: mod(x)
    if op == "conv":
        mod = nn.Conv2d(s["in_channels"], s["out_channels"], s["kernel_size"], stride=s["stride"], padding=s["padding"],
                        bias=False).to(device=device, dtype=dtype)
        x = rand(s["b"], s["in_channels"], s["input_size"], s["input_size"])
        return lambda: mod(x)
    positive = op in ("pow", "powu", "div")
    x = rand(s["b"], s["h"], positive=positive)
    if op == "ln":
        mod = nn.LayerNorm(s["h"]).to(device=device, dtype=dtype)
        return lambda: mod(x)
    if op == "softmax":
        mod = nn.Softmax(dim=-1)
        return lambda: mod(x)
    if op in ("add", "mul", "div", "pow"):
        y = rand(s["b"], s["h"], positive=positive)
        fn = getattr(torch, op)
        return lambda: fn(x, y)
    if op in ("addu", "mulu", "divu", "powu"):
        fn, scalar = getattr(torch, op[:-1]), 1.5
        return lambda: fn(x, scalar)
    unary = {"relu": nn.ReLU(), "gelu": nn.GELU(), "tanh": torch.tanh}
    f = unary[op]
    return lambda: f(x)


def _time_calls(fn, device, *, repeats: int, warmup: int) -> np.ndarray:
    """Milliseconds of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones (CUDA events on CUDA)."""
    import torch

    dev = torch.device(device)
    for _ in range(warmup):
        fn()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        out = np.empty(repeats)
        for i in range(repeats):
            starts[i].record()
            fn()
            ends[i].record()
            ends[i].synchronize()
            out[i] = starts[i].elapsed_time(ends[i])
        return out
    sync = getattr(getattr(torch, dev.type, None), "synchronize", None) if dev.type != "cpu" else None
    if sync is not None:
        sync()
    out = np.empty(repeats)
    for i in range(repeats):
        t0 = time.perf_counter()
        fn()
        if sync is not None:
            sync()
        out[i] = (time.perf_counter() - t0) * 1e3
    return out


def measure_ops(device: str = "cuda", precision: str = "fp32", *, classes=tuple(_CLASS_OPS), sizes="default",
                repeats: int = 25, warmup: int = 5, out=None, random_state: int = 0, progress: bool = False) -> pd.DataFrame:
    """Time NeuSight's operator microbenchmarks on ``device``: one row per (op, shape), in NeuSight's schema.

    Parameters
    ----------
    device : str
        ``"cuda"``, ``"cuda:1"``, ``"cpu"`` ... (:func:`perfmodel.measure.check_device`).
    precision : {'fp32', 'tf32', 'bf16', 'fp16'}
        Tensor dtype and TF32 mode (see the module's timing rules; :func:`check_precision`).
    classes : sequence of str
        Operator classes or NeuSight op names to time (default: all five classes, 16 ops).
    sizes : {'default', 'quick'} or DataFrame or list of dict
        The shapes (:func:`op_grid`).
    repeats, warmup : int
        Timed calls per shape (≥ 1; the median is kept) and untimed calls before them (≥ 0).
    out : path, optional
        CSV file to append the rows to (:func:`perfmodel.measure.append_rows`: atomic, under a lock; a new file gets
        the header; an existing file must have exactly :data:`OP_COLUMNS` — checked before anything is timed — and
        is never overwritten).
    random_state : int
        Seed of the input tensors and the modules' initial weights.
    progress : bool
        Show a progress bar over the shapes (tqdm, on stderr).

    Returns
    -------
    DataFrame
        :data:`OP_COLUMNS`: ``op``, ``device`` (``torch.cuda.get_device_name()``, or ``"CPU: <model>"``),
        ``source_name`` (the same), the shape, ``latency_ms`` (median of the repeats, ms), ``torch_version``,
        ``cudnn_version``, ``cuda_version`` (``"cu121"`` style; <NA> without CUDA), ``precision``, ``dtype``,
        ``latency_min_ms``, ``repeats``, ``warmup``, ``timer``, ``threads``, ``cpu``, ``perfmodel_version``,
        ``timestamp_utc``. A shape that does not fit in the device's memory is skipped with one warning listing
        the skipped shapes.

    Raises
    ------
    ValueError
        An unusable device (``cuda`` without CUDA ...), an unknown precision or one the device lacks (bf16 before
        Ampere, tf32 off NVIDIA tensor cores), bad ``repeats``/``warmup``, unknown classes or shapes.
    MeasurementFileError
        ``out`` exists with other columns.

    Examples
    --------
    >>> df = measure_ops("cpu", sizes="quick", repeats=5)          # doctest: +SKIP
    >>> df = measure_ops("cuda", "bf16", out="ops.csv")            # doctest: +SKIP
    """
    import warnings

    import torch
    from tqdm.auto import tqdm

    from perfmodel import __version__
    from perfmodel.measure.store import append_rows, check_appendable
    from perfmodel.measure.timing import check_device, environment

    for name, v, lo in (("repeats", repeats, 1), ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer ≥ {lo}; got {v!r}.")
    device = check_device(device)
    prec = check_precision(device, precision)
    grid = op_grid(sizes, classes)
    if out is not None:
        check_appendable(out, OP_COLUMNS)
    dev = torch.device(device)
    dtype = getattr(torch, OP_PRECISIONS[prec])
    env = environment(device)
    cuda = dev.type == "cuda"
    rows, skipped = [], []
    gen = torch.Generator(device="cpu").manual_seed(random_state)
    torch.manual_seed(random_state)
    with matmul_mode(prec), torch.no_grad():
        for shape in tqdm(grid.to_dict("records"), desc=f"ops on {env['device_name']} ({prec})", unit="shape",
                          disable=not progress, file=sys.stderr):
            op = shape.pop("op")
            try:
                t = _time_calls(_runner(op, shape, dev, dtype, gen), dev, repeats=int(repeats), warmup=int(warmup))
            except torch.cuda.OutOfMemoryError:
                skipped.append(f"{op} {({k: int(v) for k, v in shape.items() if pd.notna(v)})}")
                if cuda:
                    torch.cuda.empty_cache()
                continue
            rows.append(dict(op=op, **shape, latency_ms=float(np.median(t)), latency_min_ms=float(t.min())))
    if skipped:
        warnings.warn(f"{len(skipped)} shape(s) did not fit in the memory of {env['device_name']} and were skipped: "
                      f"{'; '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}", RuntimeWarning, stacklevel=2)
    cudnn = torch.backends.cudnn.version() if cuda and torch.backends.cudnn.is_available() else None
    df = pd.DataFrame(rows, columns=["op", *SHAPE_COLUMNS, "latency_ms", "latency_min_ms"])
    for c in SHAPE_COLUMNS:
        df[c] = pd.array(df[c], dtype="Int64")
    df = df.assign(device=env["device_name"], source_name=env["device_name"], torch_version=torch.__version__,
                   cudnn_version=pd.array([cudnn] * len(df), dtype="Int64"),
                   cuda_version=("cu" + torch.version.cuda.replace(".", "")) if cuda and torch.version.cuda else pd.NA,
                   precision=prec, dtype=OP_PRECISIONS[prec], repeats=int(repeats), warmup=int(warmup),
                   timer="cuda-events" if cuda else "perf_counter", threads=torch.get_num_threads(), cpu=env["cpu"],
                   perfmodel_version=__version__, timestamp_utc=env["timestamp_utc"])[OP_COLUMNS]
    if out is not None:
        append_rows(df, out)
    return df

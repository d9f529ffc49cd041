"""Timing a language model's training step, and GEMMs held for seconds, on your own GPU — with the clock and power
the part ran at — in the schemas perfmodel's predictions are checked against.

* :func:`measure_llm_step` — one training step of a Hugging Face model built from its config (nothing downloaded),
  the step perfmodel's single-GPU prediction traces (:func:`perfmodel.predict_step_time` with that config): the
  model's loss on labels = inputs (:class:`perfmodel.zoo.hf.TrainingStep`), backward, and the optimizer step, at one
  precision and attention kernel; one row per step (:data:`LLM_STEP_COLUMNS`).
* :func:`measure_sustained_gemms` — ``torch.mm`` of each shape run back to back for ``seconds``, the load under
  which a part reaches its power limit; one row per shape (:data:`GEMM_COLUMNS`), with the columns ``m``, ``n``,
  ``k``, ``precision``, ``ms`` that :func:`perfmodel.step.kernels.sustained_clock` and ``perfmodel predict
  --sustained-clock FILE`` read, so that the share of its datasheet clock a part sustains is measured, not assumed.

Timing rules (those of :mod:`perfmodel.measure.timing`, and):

* precisions: ``"fp32"`` (TF32 off), ``"tf32"`` (FP32 tensors, TF32 matmuls: ``torch.backends.cuda.matmul.allow_tf32``
  and ``torch.backends.cudnn.allow_tf32``, restored afterwards), ``"bf16"`` and ``"fp16"``: the model's parameters,
  activations and gradients in that dtype (the operators perfmodel's trace of that precision runs; not autocast) and,
  with an optimizer, FP32 master weights and optimizer states, as mixed-precision training keeps them and
  :func:`perfmodel.predict_memory` counts them: after the backward pass each gradient is copied into its FP32 master's
  (and freed), the optimizer steps the masters, and they are copied back into the parameters — all inside the timed
  step (no loss scaling at ``"fp16"``: the kernels are the same);
* optimizers: ``"none"`` (forward and backward only, NeuSight's single-GPU labels), ``"sgd-momentum"`` (momentum
  0.9), ``"adam"`` (``torch.optim.Adam``, its ``foreach`` kernels) and ``"adam-fused"`` (``fused=True``);
* a step is timed from ``zero_grad`` to the end of ``optimizer.step()``, the device synchronised before both clock
  reads; the first ``warmup`` steps are reported (``warmup=True``) and belong to no statistic; outliers are flagged
  (:func:`perfmodel.measure.flag_outliers`), never dropped;
* the clock columns (:data:`perfmodel.measure.gpu_clock.CLOCK_FIELDS`) are the samples of
  :class:`~perfmodel.measure.gpu_clock.ClockSampler` taken while that step (or the GEMM loop's sustained half) ran;
  on a CPU they are empty and ``clock_source`` says why;
* ``peak_allocated_gib`` / ``peak_reserved_gib``: ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` over
  the run (every step of it; empty on a CPU).

Measuring is a command (``perfmodel measure llm``, ``perfmodel measure gemms``), never a test: the tests run the same
code on a CPU with tiny configs.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time

import numpy as np
import pandas as pd

from perfmodel.measure.gpu_clock import CLOCK_FIELDS, ClockSampler
from perfmodel.measure.ops import matmul_mode
from perfmodel.measure.timing import _sync, check_device, environment, flag_outliers

__all__ = ["measure_llm_step", "measure_sustained_gemms", "LLM_STEP_COLUMNS", "GEMM_COLUMNS", "LLM_PRECISIONS",
           "GEMM_PRECISIONS", "LLM_OPTIMIZERS", "DEFAULT_GEMM_SHAPES", "parse_gemm_shapes"]

#: Precisions :func:`measure_llm_step` and :func:`measure_sustained_gemms` run.
LLM_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
#: Optimizer steps :func:`measure_llm_step` includes (``"none"``: forward and backward only).
LLM_OPTIMIZERS = ("none", "sgd-momentum", "adam", "adam-fused")

_ENV = ["device", "device_name", "torch_version", "transformers_version", "python_version", "cpu", "perfmodel_version",
        "timestamp_utc"]
#: Columns of :func:`measure_llm_step` rows.
LLM_STEP_COLUMNS = ["model", "config_sha256", "n_params", "seq_len", "batch_size", "precision", "attention", "optimizer",
                    "step", "warmup", "step_time_s", "tokens_per_s", "outlier", "peak_allocated_gib", "peak_reserved_gib",
                    *CLOCK_FIELDS, *_ENV]
#: Columns of :func:`measure_sustained_gemms` rows: the GEMM (an ``m × k`` input times a ``k × n`` weight, as
#: :func:`perfmodel.step.kernels.gemm_work` reads it), its operands' ``dtype`` and its ``accumulation`` (``"fp32"``;
#: at FP8 ``"fast"`` or ``"split"``, :data:`GEMM_PRECISIONS`), ``ms`` (median per call over the loop's second half),
#: ``ms_first`` (the loop's first timed chunk: the part before it warms to its limit), ``tflops`` (``2·m·n·k / ms``),
#: ``calls`` and ``seconds`` of the loop, the clock over the second half.
GEMM_COLUMNS = ["m", "n", "k", "precision", "dtype", "accumulation", "ms", "ms_first", "tflops", "calls", "seconds",
                *CLOCK_FIELDS, *[c for c in _ENV if c != "transformers_version"]]

#: Precisions :func:`measure_sustained_gemms` runs: those of :data:`LLM_PRECISIONS`, and FP8 (E4M3 operands, a BF16
#: output, ``torch._scaled_mm`` with unit scales) with fast accumulation (``"fp8"``, the forward GEMMs of torchao's
#: ``Float8Linear`` and Transformer Engine) or split accumulation (``"fp8-split"``, their input- and weight-gradient
#: GEMMs: ``use_fast_accum=False``); the rows of both say ``precision="fp8"`` and tell them apart by ``accumulation``.
GEMM_PRECISIONS = (*LLM_PRECISIONS, "fp8", "fp8-split")

#: The GEMMs :func:`measure_sustained_gemms` runs by default, ``(m, n, k)``: a Llama-3-8B layer's at 8,192 tokens
#: (fused QKV 4096 → 6144, MLP up 4096 → 14336, down 14336 → 4096) and two square ones.
DEFAULT_GEMM_SHAPES = ((8192, 6144, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 8192, 8192), (4096, 4096, 4096))

_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _canonical_optimizer(optimizer) -> str:
    key = "none" if optimizer is None else str(optimizer).strip().lower()
    if key not in LLM_OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(map(repr, LLM_OPTIMIZERS))} (or None: forward and backward "
                         f"only); got {optimizer!r}.")
    return key


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}.")
    return int(value)


def _env(device: str) -> dict:
    from perfmodel import __version__

    env = environment(device)
    try:
        import transformers

        tv = transformers.__version__
    except ImportError:
        tv = ""
    return dict(env, transformers_version=tv, perfmodel_version=__version__)


def _config_dict(config) -> dict:
    from pathlib import Path

    from perfmodel._errors import ModelConfigError
    from perfmodel.zoo.hf import config_dict, read_config

    if isinstance(config, (str, Path)):
        return read_config(config)
    cfg = config_dict(config)
    if cfg is not None:
        return cfg
    raise ModelConfigError(f"config must be a Hugging Face config: a dict with 'model_type' (what a config.json holds), "
                           f"the path of a config.json, or a transformers PretrainedConfig; got {type(config).__name__}.")


def _to_masters(params, masters) -> None:
    """The half-precision gradients into the FP32 master weights' gradients, each freed once copied."""
    for p, m in zip(params, masters):
        m.grad = None if p.grad is None else p.grad.float()
        p.grad = None


def _from_masters(params, masters) -> None:
    """The updated FP32 master weights back into the half-precision parameters the model computes with."""
    import torch

    with torch.no_grad():
        for p, m in zip(params, masters):
            p.copy_(m)
            m.grad = None


def _peak_gib(device: str) -> tuple[float, float]:
    import torch

    if torch.device(device).type != "cuda":
        return float("nan"), float("nan")
    return torch.cuda.max_memory_allocated(device) / 2**30, torch.cuda.max_memory_reserved(device) / 2**30


def measure_llm_step(config, *, seq_len: int, batch_size: int = 1, precision: str = "bf16", optimizer: str | None = "adam-fused",
                     attention: str | None = None, device: str = "cuda", steps: int = 10, warmup: int = 3, name: str | None = None,
                     out=None, random_state: int = 0, progress: bool = False) -> pd.DataFrame:
    """Time ``warmup + steps`` training steps of the Hugging Face model of ``config``; one row per step.

    Parameters
    ----------
    config : dict, path of a config.json, or transformers.PretrainedConfig
        The model, built from its config (random weights, nothing downloaded) on ``device``.
    seq_len, batch_size : int
        Tokens per sequence and sequences per step (random token ids below the vocabulary size).
    precision : {"fp32", "tf32", "bf16", "fp16"}
        See the module docstring (a torch dtype name such as ``"bfloat16"`` is accepted).
    optimizer : {"none", "sgd-momentum", "adam", "adam-fused"} or None
    attention : {"sdpa", "eager"}, optional
        The attention kernel (``"flash_attention_2"`` counts as ``"sdpa"``, as perfmodel traces it); default the
        config's ``attn_implementation``, else ``"sdpa"`` (:func:`perfmodel.step.trace.attention_implementation`).
    device : str
        ``"cuda"``, ``"cuda:1"``, ``"cpu"`` (a CPU run tests the harness: its clock columns are empty).
    steps, warmup : int
        Timed steps (≥ 1) and untimed warm-up steps before them (≥ 0).
    name : str, optional
        The ``model`` column (default: the config's ``_name_or_path``, else its ``model_type``).
    out : path, optional
        Append the rows to this CSV (:func:`perfmodel.measure.append_rows`: atomic, locked, never overwritten); the file is
        checked before anything is built.
    random_state : int
        Seed of the weights and the tokens.
    progress : bool
        A progress bar of the steps (tqdm, on stderr).

    Returns
    -------
    DataFrame
        :data:`LLM_STEP_COLUMNS`, one row per step.

    Raises
    ------
    ValueError
        A size that is not a positive int, an unknown precision, optimizer or attention kernel, a device this machine
        does not have or that cannot run the precision (:func:`perfmodel.measure.ops.check_precision`), a step that
        does not fit in the device's memory (the message says how much it had), or a config transformers cannot build
        (:class:`perfmodel._errors.ModelConfigError`).
    """
    import torch

    from perfmodel.measure.ops import check_precision
    from perfmodel.measure.store import append_rows, check_appendable
    from perfmodel.step.trace import attention_implementation
    from perfmodel.zoo import hf

    seq_len = _positive_int("seq_len", seq_len)
    batch_size = _positive_int("batch_size", batch_size)
    steps = _positive_int("steps", steps)
    if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0; got {warmup!r}.")
    opt_name = _canonical_optimizer(optimizer)
    device = check_device(device)
    prec = check_precision(device, precision)
    cfg = _config_dict(config)
    if attention is not None:
        cfg["attn_implementation"] = str(attention)
    impl = attention_implementation(cfg)
    cfg = {k: v for k, v in cfg.items() if k not in ("attn_implementation", "_attn_implementation")}
    if out is not None:
        check_appendable(out, LLM_STEP_COLUMNS)
    label = name or str(cfg.get("_name_or_path") or cfg.get("model_type") or "hf-model")
    sha = hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()[:16]
    vocab = int(cfg.get("vocab_size") or 2)
    dtype = getattr(torch, _DTYPES[prec])
    is_cuda = torch.device(device).type == "cuda"
    torch.manual_seed(random_state)
    times, windows = [], []
    net = opt = x = masters = None
    try:
        with matmul_mode(prec):
            net = hf.build(cfg, attn_implementation=impl, device=device)
            net = net.to(dtype=dtype)
            n_params = int(sum(p.numel() for p in net.parameters()))
            params = [p for p in net.parameters() if p.requires_grad]
            # half precision with an optimizer: FP32 master weights and optimizer states, as mixed precision keeps them
            masters = ([p.detach().float() for p in params] if opt_name != "none" and prec in ("bf16", "fp16") else None)
            stepped = masters if masters is not None else params
            opt = (None if opt_name == "none" else torch.optim.SGD(stepped, lr=1e-4, momentum=0.9) if opt_name == "sgd-momentum"
                   else torch.optim.Adam(stepped, lr=1e-5, fused=opt_name == "adam-fused"))
            g = torch.Generator(device="cpu").manual_seed(random_state)
            x = torch.randint(0, vocab, (batch_size, seq_len), generator=g).to(device)
            if is_cuda:
                torch.cuda.reset_peak_memory_stats(device)
            from tqdm.auto import tqdm

            bar = tqdm(total=warmup + steps, desc=f"{label} {prec} b={batch_size} s={seq_len}", unit="step",
                       disable=not progress, file=sys.stderr)
            with ClockSampler(device) as clocks:
                for i in range(warmup + steps):
                    _sync(device)
                    t0 = time.perf_counter()
                    if opt is not None:
                        opt.zero_grad(set_to_none=True)
                    else:
                        net.zero_grad(set_to_none=True)
                    loss = net(x)
                    loss.backward()
                    if masters is not None:
                        _to_masters(params, masters)
                    if opt is not None:
                        opt.step()
                    if masters is not None:
                        _from_masters(params, masters)
                    _sync(device)
                    t1 = time.perf_counter()
                    times.append(t1 - t0)
                    windows.append((t0, t1))
                    bar.update(1)
                    bar.set_postfix_str(f"{times[-1]:.3g} s" + (" (warm-up)" if i < warmup else ""))
            bar.close()
            peak_alloc, peak_res = _peak_gib(device)
    except torch.cuda.OutOfMemoryError as exc:
        net = opt = x = masters = stepped = params = None
        if is_cuda:
            torch.cuda.empty_cache()
        total = torch.cuda.mem_get_info(device)[1] if is_cuda else 0
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"the step of {label} ({prec}, batch {batch_size} x {seq_len} tokens, optimizer {opt_name}) does not fit "
                         f"in the memory of {device} ({total / 2**30:.1f} GiB; {first[:160]}). Use a smaller batch_size or "
                         "seq_len, fewer layers, or a GPU with more memory.") from None
    finally:
        net = opt = x = masters = stepped = params = None
        if is_cuda:
            torch.cuda.empty_cache()
    env = _env(device)
    t = np.asarray(times)
    wm = np.arange(len(t)) < warmup
    clock = [clocks.window(a, b) for a, b in windows]
    df = pd.DataFrame({"model": label, "config_sha256": sha, "n_params": n_params, "seq_len": seq_len, "batch_size": batch_size,
                       "precision": prec, "attention": impl, "optimizer": opt_name, "step": np.arange(len(t)), "warmup": wm,
                       "step_time_s": t, "tokens_per_s": batch_size * seq_len / t, "outlier": flag_outliers(t, wm),
                       "peak_allocated_gib": peak_alloc, "peak_reserved_gib": peak_res})
    for f in CLOCK_FIELDS:
        df[f] = [c[f] for c in clock]
    for k in _ENV:
        df[k] = env[k]
    df = df[LLM_STEP_COLUMNS]
    if out is not None:
        append_rows(df, out)
    return df


def parse_gemm_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """``"8192x14336x4096,4096x4096x4096"`` as ``((8192, 14336, 4096), (4096, 4096, 4096))``: ``m x n x k`` (an ``m × k``
    input times a ``k × n`` weight), comma-separated, each a positive int; a ValueError names the item that is not."""
    out = []
    for item in str(text).split(","):
        parts = item.strip().lower().split("x")
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            dims = ()
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError(f"a GEMM shape is m x n x k (three positive ints joined by 'x', e.g. 8192x14336x4096); got "
                             f"{item.strip()!r} in {text!r}.")
        out.append(dims)
    return tuple(out)


def _check_fp8(device: str, precision) -> str | None:
    """``"fp8"`` / ``"fp8-split"`` if ``precision`` names an FP8 GEMM and ``device`` can run one, None for another
    precision; a ValueError where the device has no FP8 tensor cores."""
    import torch

    key = str(precision).strip().lower()
    if key not in ("fp8", "fp8-split"):
        return None
    dev = torch.device(device)
    cap = torch.cuda.get_device_capability(dev) if dev.type == "cuda" else None
    if cap is None or cap < (8, 9) or not hasattr(torch, "_scaled_mm"):
        where = (f"{torch.cuda.get_device_name(dev)} (compute capability {cap[0]}.{cap[1]})" if cap else f"device {device!r}")
        raise ValueError(f"precision {precision!r} runs FP8 GEMMs (torch._scaled_mm), which need an NVIDIA GPU of compute "
                         f"capability 8.9 or later (Ada, Hopper, Blackwell: L4, L40S, H100, H200, B200); {where} has none. "
                         f"Use one of {', '.join(LLM_PRECISIONS)} there.")
    return key


def _gemm_call(m: int, n: int, k: int, prec: str, device: str, g):
    """(the call that runs one GEMM, its operands' dtype name, its accumulation) at precision ``prec``."""
    import torch

    if prec in ("fp8", "fp8-split"):
        if m % 16 or n % 16 or k % 16:
            raise ValueError(f"an FP8 GEMM needs m, n and k divisible by 16 (torch._scaled_mm); got {m} x {n} x {k}.")
        a = torch.randn((m, k), generator=g).to(device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        b = torch.randn((n, k), generator=g).to(device=device, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device, dtype=torch.float32)
        fast = prec == "fp8"
        return (lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=fast),
                "float8_e4m3fn", "fast" if fast else "split")
    dtype = getattr(torch, _DTYPES[prec])
    a = torch.randn((m, k), generator=g).to(device=device, dtype=dtype)
    b = torch.randn((k, n), generator=g).to(device=device, dtype=dtype)
    return (lambda: torch.mm(a, b)), str(dtype).replace("torch.", ""), "fp32"


def measure_sustained_gemms(shapes=DEFAULT_GEMM_SHAPES, *, precision: str = "bf16", seconds: float = 10.0, device: str = "cuda",
                            out=None, random_state: int = 0, progress: bool = False) -> pd.DataFrame:
    """Run ``torch.mm`` of each shape back to back for ``seconds`` and time it, with the clock the part held.

    The loop is cut into chunks of about 50 ms (each between two device synchronisations); ``ms`` is the median per
    call over the chunks of the loop's second half (the part at its power and thermal limits), ``ms_first`` the
    first chunk's. The rows feed :func:`perfmodel.step.kernels.sustained_clock`.

    Parameters
    ----------
    shapes : sequence of (m, n, k)
        An ``m × k`` input times a ``k × n`` weight each (default :data:`DEFAULT_GEMM_SHAPES`).
    precision : {"fp32", "tf32", "bf16", "fp16", "fp8", "fp8-split"}
        :data:`GEMM_PRECISIONS` (FP8 on a GPU of compute capability 8.9 or later; m, n, k divisible by 16).
    seconds : float
        Loop length per shape, in (0, 600].
    device : str
        ``"cuda"`` ...; ``"cpu"`` tests the harness.
    out : path, optional
        Append the rows to this CSV (atomic, locked; checked before anything runs).

    Returns
    -------
    DataFrame
        :data:`GEMM_COLUMNS`, one row per shape.
    """
    import torch

    from perfmodel.measure.ops import check_precision
    from perfmodel.measure.store import append_rows, check_appendable

    if isinstance(shapes, str):
        shapes = parse_gemm_shapes(shapes)
    try:
        shapes = tuple(tuple(int(d) for d in s) for s in shapes)
        ok = bool(shapes) and all(len(s) == 3 and min(s) >= 1 for s in shapes)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError("shapes must be a non-empty sequence of (m, n, k), three positive ints each (an m x k input times a "
                         f"k x n weight); got {shapes!r}.")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < float(seconds) <= 600:
        raise ValueError(f"seconds must be the loop's length per shape in (0, 600]; got {seconds!r}.")
    device = check_device(device)
    prec = _check_fp8(device, precision) or check_precision(device, precision)
    if out is not None:
        check_appendable(out, GEMM_COLUMNS)
    g = torch.Generator(device="cpu").manual_seed(random_state)
    rows = []
    from tqdm.auto import tqdm

    with matmul_mode(prec), ClockSampler(device) as clocks:
        for m, n, k in tqdm(shapes, desc=f"GEMMs {prec}", unit="shape", disable=not progress, file=sys.stderr):
            call, dtype, accumulation = _gemm_call(m, n, k, prec, device, g)
            for _ in range(3):
                call()
            _sync(device)
            t0 = time.perf_counter()
            call()
            _sync(device)
            one = max(time.perf_counter() - t0, 1e-6)
            per_chunk = max(1, int(0.05 / one))
            chunks = []  # (start, end, calls)
            start = time.perf_counter()
            while True:
                c0 = time.perf_counter()
                for _ in range(per_chunk):
                    call()
                _sync(device)
                c1 = time.perf_counter()
                chunks.append((c0, c1, per_chunk))
                if c1 - start >= seconds:
                    break
            half = [c for c in chunks if c[0] >= start + (chunks[-1][1] - start) / 2] or chunks[-1:]
            ms = float(np.median([(c1 - c0) / calls for c0, c1, calls in half])) * 1e3
            first = chunks[0]
            clock = clocks.window(half[0][0], half[-1][1])
            rows.append(dict(m=m, n=n, k=k, precision="fp8" if prec.startswith("fp8") else prec, dtype=dtype,
                             accumulation=accumulation, ms=ms,
                             ms_first=(first[1] - first[0]) / first[2] * 1e3, tflops=2.0 * m * n * k / (ms * 1e-3) / 1e12,
                             calls=int(sum(c[2] for c in chunks)), seconds=chunks[-1][1] - start, **clock))
            del call
    env = _env(device)
    df = pd.DataFrame(rows)
    for c in GEMM_COLUMNS:
        if c not in df.columns:
            df[c] = env[c]
    df = df[GEMM_COLUMNS]
    if out is not None:
        append_rows(df, out)
    return df

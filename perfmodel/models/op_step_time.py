"""One training step of any PyTorch model on any GPU: the per-operator model summed over the step's operators.

:func:`predict_step_time` extracts the aten operators of one training step (forward, backward and, when asked for, the
optimizer step) from shapes alone (:func:`perfmodel.features.extract` with ``per_op=True``, on the meta device for
large models), maps each to an operator class with its shape (:func:`work_from_ops`), predicts each operator's latency
on the GPU from the GPU's spec sheet (:func:`perfmodel.models.op_latency.default_op_model`: roofline × efficiency
learned on NeuSight's microbenchmarks of its five training GPUs) and sums the kernel times — kernels of one eager
training step run back to back on one stream, so the launch overhead each isolated microbenchmark carries is left out
(:meth:`perfmodel.models.op_latency.OpLatencyModel.predict_in_stream`).

Prediction interval: split-conformal over GPUs. Each of the five training GPUs is held out in turn, its microbenchmarks
predicted by a model fitted on the other four, and the nonconformity of that GPU is ``|log(Σ predicted / Σ measured)|``
over all its operators (what a sum of operators feels). The interval is ``[t·e^{−q}, t·e^{q}]`` with ``q`` the
``⌈(1−alpha)(n+1)⌉``-th smallest of the ``n = 5`` scores (the largest when that rank exceeds ``n``, and the row's
``interval`` says so): it covers ``1 − alpha`` of new GPUs if a new GPU behaves like one more draw of the training GPUs.
"""
from __future__ import annotations

import json
import re
import weakref
from collections import OrderedDict

import numpy as np
import pandas as pd

__all__ = ["work_from_ops", "predict_step_time", "with_memory", "OutOfMemoryWarning", "add_recompute", "step_design", "half_model_applies", "HALF_MODEL_PRECISIONS", "FUSED_ATTENTION_EFFICIENCY", "fused_attention_floor_s", "compiled_work", "fp8_work", "checkpointing_mode", "CHECKPOINTING_MODES", "selective_recompute_mask", "checkpointed_layers", "recompute_mask", "PRECISION_DTYPES", "FP8_CAST_COMPILED_BYTES_PER_ELEMENT", "OPTIMIZERS", "FUSED_ADAM_PASSES", "conformal_scores",
           "clear_trace_cache", "module_fingerprint", "attention_implementation", "ATTN_IMPLEMENTATIONS", "module_memo", "gpu_extrapolation"]

#: torch dtype of the tensors at each precision (TF32 keeps FP32 tensors; only the matmul units differ).
PRECISION_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}

#: bytes an FP8 linear's input casts move per element of each operand (tensorwise scaling, torchao ``Float8Linear``):
#: the BF16 tensor read for its absolute maximum (2), read again and written as FP8 (2 + 1).
FP8_CAST_BYTES_PER_ELEMENT = 5
#: the same under ``torch.compile``, per element of each **activation** operand: Inductor fuses the absolute-maximum
#: reduction into the kernel that produced the tensor, and the cast reads the BF16 tensor once (2) and writes its FP8
#: copy and the transposed FP8 copy the weight-gradient GEMM reads (1 + 1). Weights are cast on their FSDP shard before
#: the FP8 all-gather (torchtitan's ``enable_fsdp_float8_all_gather``), not per GEMM.
FP8_CAST_COMPILED_BYTES_PER_ELEMENT = 4

_FREE = {"view", "factory"}
_SHAPE = re.compile(r"[0-9]+(x[0-9]+)*")


def _dims(text) -> list[tuple[int, ...]]:
    out = []
    for part in str(text).split(";"):
        out.append(tuple(int(v) for v in part.split("x")) if _SHAPE.fullmatch(part) else ())
    return out


def work_from_ops(ops: pd.DataFrame) -> pd.DataFrame:
    """Operator-model rows (:data:`perfmodel.models.op_latency.WORK_COLUMNS`) of the per-op rows of
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
            n_el = max(numel, 1.0)
            if not 8.0 <= nbytes / n_el <= 12.0:
                n_el = max(nbytes / 12.0, 1.0)
            w_last = min(last, n_el)
            rows.append(("elementwise", n_el, nbytes, np.ceil(n_el / 512), n_el / w_last, 1.0, w_last, 1.0, r.op, r.phase, *mod))
    from perfmodel.models.op_latency import WORK_COLUMNS

    return pd.DataFrame(rows, columns=[*WORK_COLUMNS, "op", "phase", *(["module"] if has_module else [])])


def conformal_scores() -> pd.Series:
    """Nonconformity ``|log(Σ predicted / Σ measured)|`` of each training GPU held out (leave-one-GPU-out on NeuSight's
    microbenchmarks), fitted once and cached with the default model
    (:func:`perfmodel.models.op_latency.fitted_bundle`)."""
    from perfmodel.models.op_latency import fitted_bundle

    return fitted_bundle()["scores"].copy()


def _model_input(model, input_shape, input_dtype):
    """(module, input_shape, input_dtype, input_high, name) for a zoo id, a module or a Hugging Face config."""
    import torch

    from pathlib import Path

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
    is_config = isinstance(model, dict) or type(model).__name__.endswith("Config")
    if is_config:
        from perfmodel.zoo import hf

        cfg = dict(model) if isinstance(model, dict) else model.to_dict()
        impl = getattr(model, "_attn_implementation", None) if not isinstance(model, dict) else None
        if impl and "attn_implementation" not in cfg:  # a PretrainedConfig keeps it out of to_dict()
            cfg["attn_implementation"] = impl
        if input_shape is None:
            raise ValueError("input_shape is required for a Hugging Face config: (seq_len,), e.g. (1024,).")
        name = str(cfg.get("_name_or_path") or cfg.get("model_type") or "hf-model")
        net = _built_config(json.dumps(cfg, sort_keys=True, default=str), cfg)
        vocab = int(cfg.get("vocab_size") or 2)
        return net, tuple(input_shape), input_dtype or torch.long, vocab, name
    from perfmodel._errors import ModelConfigError  # a TypeError (and a ValueError): e.g. a config.json holding [] or null

    shown = "null (None)" if model is None else f"{type(model).__name__} {repr(model)[:40]}"
    raise ModelConfigError(f"model must be a zoo id, 'package.module:Class', a torch.nn.Module or a Hugging Face config (a "
                           f"dict with 'model_type', as a config.json holds, or a PretrainedConfig); got {shown}. Pass one "
                           "of these, e.g. {'model_type': 'gpt2', 'n_layer': 12}.")


#: optimizers :func:`predict_step_time` models (``None``: forward + backward only).
OPTIMIZERS = ("sgd-momentum", "adam", "adam-fused", None)

#: bytes a fused Adam step moves per parameter, in units of the parameter's size: parameter read and written, gradient
#: read, both moments read and written (apex / Transformer Engine / Megatron-LM ``FusedAdam``, torch ``fused=True``).
FUSED_ADAM_PASSES = 7


def _check_step_args(alpha, optimizer, inference, precision, batch_size) -> str:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'sgd-momentum', 'adam' or None (forward + backward only), or 'adam-fused' (one "
                         f"fused kernel, as apex / Megatron-LM); got {optimizer!r}.")
    if inference and optimizer is not None:
        raise ValueError(f"inference=True predicts a forward pass: pass optimizer=None (got optimizer={optimizer!r}).")
    prec = str(precision).lower()
    if prec not in PRECISION_DTYPES:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"Unknown precision {precision!r}. Expected one of: {', '.join(PRECISION_DTYPES)}.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int; got {batch_size!r}.")
    return prec


def _gpu_specs(gpus, prec):
    from perfmodel.datasets import gpu_spec, peak_tflops

    gpu_list = [gpus] if isinstance(gpus, str) or not hasattr(gpus, "__iter__") else list(gpus)
    if not gpu_list:
        raise ValueError("gpus must name at least one GPU, e.g. 'H100'.")
    specs = [gpu_spec(g) for g in gpu_list]
    for s in specs:
        peak_tflops(s, prec)  # UnsupportedPrecisionError before any work
    return specs


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
        _BUILT[key] = hf.build({k: v for k, v in model.items() if k not in _ATTN_KEYS},
                               attn_implementation=attention_implementation(model))
        _FIXED_FINGERPRINTS[_BUILT[key]] = module_fingerprint(_BUILT[key])
        while len(_BUILT) > _BUILT_MAX:
            _BUILT.popitem(last=False)
    return _BUILT[key]


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
    hyper-parameters) and every parameter's name, shape, dtype and ``requires_grad``. A module changed in place gets
    a new fingerprint, so a stale trace is never reused."""
    if isinstance(net, str):  # a zoo id: its definition is fixed
        return ("zoo", net)
    try:
        fixed = _FIXED_FINGERPRINTS.get(net)
    except TypeError:
        fixed = None
    if fixed is not None:
        return fixed
    return (type(net).__qualname__, repr(net),
            tuple((n, tuple(p.shape), str(p.dtype), bool(p.requires_grad)) for n, p in net.named_parameters()))


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


def clear_trace_cache() -> None:
    """Forget everything memoised per module (:func:`module_memo`: traces, layouts, saved tensors) and the built
    config modules."""
    _TRACES.clear()
    _ZOO_TRACES.clear()
    _BUILT.clear()
    _KERNEL_MEMO.clear()


def _step_ops(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference) -> pd.DataFrame:
    """Per-op rows of one step of ``net`` (:func:`perfmodel.features.extract`); ``"adam-fused"`` adds one kernel that
    moves :data:`FUSED_ADAM_PASSES` × the parameter bytes.

    Memoised (:func:`module_memo`): the same step is traced once per process."""
    key = ("ops", module_fingerprint(net), tuple(shape), str(in_dtype), high, int(batch_size), prec, optimizer, bool(inference))
    memo = module_memo(net)
    if key not in memo:
        memo[key] = _trace_step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer,
                                    inference=inference)
    return memo[key].copy()


def _step_work(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference, compile: bool = False) -> pd.DataFrame:
    """:func:`work_from_ops` of :func:`_step_ops` (index 0…n−1), memoised with the trace; at ``"fp8"`` with the FP8
    linears marked and their casts added (:func:`fp8_work`); with ``compile`` its memory-bound chains fused
    (:func:`compiled_work`)."""
    key = ("work", module_fingerprint(net), tuple(shape), str(in_dtype), high, int(batch_size), prec, optimizer, bool(inference))
    if compile:
        key = (*key, "compile")
    memo = module_memo(net)
    if key not in memo:
        if compile:
            # fusion first, then FP8's casts as kernels of their own (they are not chained with one another)
            ops = _step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)
            fused = compiled_work(work_from_ops(ops).reset_index(drop=True))
            memo[key] = fp8_work(fused, vocab=high, compiled=True) if prec == "fp8" else fused
        else:
            ops = _step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)
            work = work_from_ops(ops).reset_index(drop=True)
            memo[key] = fp8_work(work, vocab=high) if prec == "fp8" else work
    return memo[key].copy()


_FUSABLE = ("elementwise", "layernorm", "softmax")


def compiled_work(work: pd.DataFrame) -> pd.DataFrame:
    """Work rows of the step as ``torch.compile`` (Inductor) runs it: every maximal chain of consecutive memory-bound
    operators (``elementwise``, ``layernorm``, ``softmax`` rows of one phase, between two GEMMs / attention kernels)
    becomes one fused kernel — one launch, one pass over memory.

    Without the dataflow of the chain, the fused kernel is described by its widest member: the ``bytes`` and shape of
    the chain's row that moves the most (a chain reads its inputs and writes its outputs once; its intermediate tensors
    stay in registers), the chain's summed ``flops``, the class of that member. GEMMs, attention and the optimizer's
    kernels are unchanged (Inductor leaves matmuls to cuBLAS and FlashAttention). A stated approximation: a chain whose
    side inputs (a residual, a saved tensor for the backward pass) are as wide as its widest member moves more.
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
    chain = np.cumsum(start)
    out = work.copy()
    out["_chain"] = np.where(fusable, chain, -np.arange(1, len(work) + 1))
    keep = out.groupby("_chain", sort=False)["bytes"].idxmax()
    flops = out.groupby("_chain", sort=False)["flops"].sum()
    fused = out.loc[keep.to_numpy()].copy()
    fused["flops"] = flops.loc[fused["_chain"]].to_numpy()
    return fused.drop(columns="_chain").sort_index().reset_index(drop=True)


def fp8_work(work: pd.DataFrame, *, vocab: int | None = None, compiled: bool = False) -> pd.DataFrame:
    """Work rows of a BF16 step with its linear layers in FP8, as torchao's ``Float8Linear`` (tensorwise scaling, the
    recipe torchtitan's Float8 runs use) trains them — a stated extrapolation, no FP8 kernel was measured:

    * every ``aten.mm`` / ``addmm`` of the forward and backward passes (the linears' GEMMs and their two gradient
      GEMMs) runs at the GPU's FP8 tensor-core rate (``fp8`` column True), except a GEMM with a dimension of the
      vocabulary size (the output projection stays in BF16, as torchtitan leaves it);
    * each such GEMM first casts its two operands to FP8: one elementwise kernel per GEMM moving
      :data:`FP8_CAST_BYTES_PER_ELEMENT` bytes per operand element (a work row as :func:`work_from_ops` describes an
      elementwise kernel of those bytes);
    * attention, norms, activations and the optimizer stay in BF16 / FP32.

    ``compiled`` (``torch.compile``, as torchtitan runs Float8): only the activation operand of a GEMM whose rows are
    the tokens (the input of a forward GEMM, the output gradient of an input-gradient GEMM; the weight-gradient GEMM
    reuses both) is cast, by one kernel of its own moving :data:`FP8_CAST_COMPILED_BYTES_PER_ELEMENT` bytes per
    element; the token count is the commonest row count of the forward FP8 GEMMs.
    """
    w = work.copy()
    mm = w["op"].isin(["aten.mm", "aten.addmm"]).to_numpy() & w["phase"].astype(str).isin(["forward", "backward"]).to_numpy()
    if vocab:
        mm &= ~((w["dim_m"] == vocab) | (w["dim_n"] == vocab) | (w["dim_k"] == vocab)).to_numpy()
    w["fp8"] = mm
    sel = w[mm]
    per_el = FP8_CAST_COMPILED_BYTES_PER_ELEMENT if compiled else FP8_CAST_BYTES_PER_ELEMENT
    if len(sel) and compiled:
        fwd_m = sel.loc[sel["phase"].astype(str) == "forward", "dim_m"]
        tokens = float(fwd_m.mode().iloc[0]) if len(fwd_m) else np.nan
        sel = sel[sel["dim_m"].to_numpy(float) == tokens]
    if len(sel):
        n_el = sel["dim_b"].to_numpy(float) * sel["dim_m"].to_numpy(float) * sel["dim_n"].to_numpy(float)
        if not compiled:
            n_el = n_el + sel["dim_b"].to_numpy(float) * sel["dim_n"].to_numpy(float) * sel["dim_k"].to_numpy(float)
        # described as work_from_ops describes an elementwise kernel moving other than 8-12 bytes per element: the
        # binary op over bytes / 12 elements, rows of the operand's last dimension (the GEMM's reduction dimension)
        nbytes = per_el * n_el
        eq = np.maximum(nbytes / 12.0, 1.0)
        last = np.minimum(np.maximum(sel["dim_n"].to_numpy(float), 1.0), eq)
        casts = pd.DataFrame({"op_class": "elementwise", "flops": eq, "bytes": nbytes,
                              "tiles": np.ceil(eq / 512), "dim_m": eq / last, "dim_n": 1.0, "dim_k": last, "dim_b": 1.0,
                              "op": "float8_cast", "phase": sel["phase"].to_numpy(), "fp8": False})
        if "module" in w.columns:
            casts["module"] = sel["module"].to_numpy()
        w = pd.concat([w, casts[w.columns]], ignore_index=True)
    return w


def _trace_step_ops(net, shape, in_dtype, high, *, batch_size, prec, optimizer, inference) -> pd.DataFrame:
    import torch

    from perfmodel.features import extract

    dtype = getattr(torch, PRECISION_DTYPES[prec])
    ops = extract(net, shape, batch_size=int(batch_size), per_op=True, optimizer=None if optimizer == "adam-fused" else optimizer,
                  input_dtype=in_dtype, input_high=high, dtype=None if dtype == torch.float32 else dtype, train=not inference)
    if inference:
        ops = ops[ops["phase"] == "forward"]
    if optimizer == "adam-fused":
        n = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
        size = torch.empty((), dtype=dtype).element_size()
        fused = dict(model=ops["model"].iloc[0] if len(ops) else "", batch_size=int(batch_size), phase="optimizer",
                     index=int(ops["index"].max()) + 1 if len(ops) else 0, op="fused_adam", op_class="elementwise", module="",
                     flops=0, bytes_read=4 * size * n, bytes_written=3 * size * n, dtype=str(dtype).replace("torch.", ""),
                     input_shapes=str(n), output_shapes=str(n), attributes="")
        ops = pd.concat([ops, pd.DataFrame([fused])[ops.columns]], ignore_index=True)
    return ops


def _interval(alpha):
    """(q, text): the half-width ``q`` of the interval in log space (``[t·e^-q, t·e^q]``) for miss rate ``alpha``.

    Split conformal over whole steps: the scores ``|log(predicted / measured)|`` of NeuSight's end-to-end labels on
    the training GPUs of :data:`perfmodel.models.op_latency.CALIBRATION_GPUS`, each predicted by the operator model fitted
    without its GPU (:func:`perfmodel.models.op_latency.step_calibration`); an artifact without them falls back to the
    per-GPU operator scores (:func:`conformal_scores`)."""
    from perfmodel.models.op_latency import _OVERRIDE, interval_step_scores

    steps = interval_step_scores()
    if _OVERRIDE and (steps is None or not len(steps)):
        return 0.0, "no interval: an operator model without step calibration (using_op_model)"
    if steps is not None and len(steps):
        scores = np.sort(steps["score"].to_numpy(float))
        what = f"{len(scores)} end-to-end labels of training GPUs held out ({', '.join(sorted(set(steps['gpu'])))})"
    else:
        scores = np.sort(conformal_scores().to_numpy())
        what = f"the {len(scores)} training GPUs held out"
    rank = int(np.ceil((1 - alpha) * (len(scores) + 1)))
    q = float(scores[min(rank, len(scores)) - 1])
    text = (f"split-conformal over {what}, 1-alpha = {1 - alpha:g}"
            + (" (rank beyond the scores: the widest one)" if rank > len(scores) else ""))
    return q, text


#: Kernel times memoised by (work rows, GPU spec, precision, operator model): strategies and planners ask for the same
#: work on the same GPU many times (dp and fsdp at one per-GPU batch, every price row of one GPU).
_KERNEL_MEMO: dict = {}
_KERNEL_MEMO_MAX = 512


#: Best published efficiency of the fused attention kernel PyTorch's ``scaled_dot_product_attention`` runs in half
#: precision (its flash backend is FlashAttention-2), as a share of the dense BF16/FP16 tensor-core peak, per GPU
#: architecture; a fused attention row is never predicted faster than this (:func:`fused_attention_floor_s`).
#: Hopper: FlashAttention-2's causal forward pass, head dim 128, sequence 8k-16k, on an H100 80GB SXM5: 333-335
#: TFLOPS of 989.4 (Shah et al., "FlashAttention-3", 2024, Figure 5; FlashAttention-2 does not use Hopper's wgmma/TMA,
#: which cuBLAS GEMMs do). Other GPUs: the top of "50-73% of the theoretical maximum FLOPs/s on A100" (Dao,
#: "FlashAttention-2", 2023, abstract). FLOPs counted as the papers count them: causal masks halve them.
FUSED_ATTENTION_EFFICIENCY = {"Hopper": 335 / 989.4, "default": 0.73}


def fused_attention_floor_s(work: pd.DataFrame, spec, prec: str) -> np.ndarray:
    """Per work row: the least time a fused attention kernel can take (its FLOPs at
    :data:`FUSED_ATTENTION_EFFICIENCY` of the GPU's matrix peak), 0 for every other row and outside BF16/FP16/FP8."""
    from perfmodel.datasets import matmul_peak_tflops

    out = np.zeros(len(work))
    if prec not in HALF_MODEL_PRECISIONS or "op" not in work.columns:
        return out
    fused = work["op"].astype(str).str.contains("scaled_dot_product").to_numpy() & (work["op_class"] == "matmul").to_numpy()
    if fused.any():
        arch = "Hopper" if "hopper" in str(getattr(spec, "architecture", "")).lower() else "default"
        rate = FUSED_ATTENTION_EFFICIENCY[arch] * matmul_peak_tflops(spec, "bf16" if prec == "fp8" else prec) * 1e12
        out[fused] = work["flops"].to_numpy(float)[fused] / rate
    return out


def _kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model=None) -> np.ndarray:
    """Predicted in-stream time (s) of each work row on the GPU ``spec`` at precision ``prec`` (memoised); a fused
    attention row no faster than :func:`fused_attention_floor_s`."""
    from perfmodel.models.op_latency import WORK_COLUMNS, default_op_model

    op_model = default_op_model() if op_model is None else op_model
    w = work[WORK_COLUMNS].reset_index(drop=True)
    fp8 = work["fp8"].to_numpy(bool) if "fp8" in work.columns else np.zeros(len(w), bool)
    floor = fused_attention_floor_s(work.reset_index(drop=True), spec, prec)
    key = (pd.util.hash_pandas_object(w, index=False).to_numpy().tobytes(), fp8.tobytes(), floor.tobytes(), repr(spec), prec,
           id(op_model), half_model_applies(op_model, prec))  # the same model object predicts differently under an override
    hit = _KERNEL_MEMO.get(key)
    if hit is not None and hit[0] is op_model:
        return hit[1].copy()
    t = np.maximum(_kernel_seconds_uncached(w, spec, prec, op_model, fp8=fp8), floor)
    if len(_KERNEL_MEMO) >= _KERNEL_MEMO_MAX:
        _KERNEL_MEMO.pop(next(iter(_KERNEL_MEMO)))
    _KERNEL_MEMO[key] = (op_model, t.copy())
    return t


#: precisions whose matmul, layer-norm and elementwise kernels are predicted by the half-precision model learned on
#: measured FP16 kernels (:mod:`perfmodel.models.half_precision`); FP8 GEMMs at the FP8 rate in its features.
HALF_MODEL_PRECISIONS = ("bf16", "fp16", "fp8")


def half_model_applies(op_model, prec: str) -> bool:
    """Whether the half-precision model predicts this step's kernels: at BF16 / FP16 / FP8 with perfmodel's shipped
    operator model. A user's refit (``PERFMODEL_OP_MODEL``, :func:`perfmodel.models.op_latency.using_op_model`, an
    explicit ``op_model``) is used for every precision instead — it may hold the user's own half-precision
    measurements (``perfmodel measure ops --precision bf16``)."""
    import os

    from perfmodel.models.op_latency import _OVERRIDE, ENV_OP_MODEL, fitted_bundle

    if prec not in HALF_MODEL_PRECISIONS or _OVERRIDE or os.environ.get(ENV_OP_MODEL):
        return False
    return op_model is fitted_bundle()["model"]


def _kernel_seconds_uncached(work: pd.DataFrame, spec, prec: str, op_model, fp8=None) -> np.ndarray:
    if half_model_applies(op_model, prec):
        from perfmodel.models.half_precision import half_precision_op_model

        half = half_precision_op_model()
        known = work["op_class"].isin(half.classes_).to_numpy()
        t = np.empty(len(work))
        if known.any():
            t[known] = half.predict_in_stream(step_design(work[known], spec, prec, None if fp8 is None else fp8[known]))
        if (~known).any():  # convolutions and softmax: never measured in half precision
            rest = work[~known].reset_index(drop=True)
            t[~known] = _default_kernel_seconds(rest, spec, prec, op_model, None if fp8 is None else fp8[~known])
        return t
    return _default_kernel_seconds(work, spec, prec, op_model, fp8)


def step_design(work: pd.DataFrame, spec, prec: str, fp8=None) -> pd.DataFrame:
    """Operator-model inputs (:func:`perfmodel.models.op_latency.op_design`) of work rows on the GPU ``spec`` at
    ``prec``, as the step predictor sees the GPU: GEMMs and convolutions at the matrix units' rate (tensor cores; FP32
    too where the vendor BLAS runs FP32 GEMMs on matrix cores, AMD CDNA), the rest on the CUDA cores / vector units; at
    ``"fp8"`` the rows marked in ``fp8`` (:func:`fp8_work`) at the FP8 rate and every other GEMM at BF16's."""
    from perfmodel.datasets import matmul_peak_tflops
    from perfmodel.models.op_latency import WORK_COLUMNS, gpu_columns, op_design

    cols = gpu_columns([spec] * len(work), precision="fp32")
    mm = work["op_class"].isin(["matmul", "conv"]).to_numpy()
    cols.loc[mm, "peak_flops_per_s"] = matmul_peak_tflops(spec, "bf16" if prec == "fp8" else prec) * 1e12
    if prec == "fp8" and fp8 is not None and fp8.any():
        cols.loc[fp8 & mm, "peak_flops_per_s"] = matmul_peak_tflops(spec, "fp8") * 1e12
    return op_design(work[WORK_COLUMNS].reset_index(drop=True), cols)


def _default_kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model, fp8=None) -> np.ndarray:
    X = step_design(work, spec, prec, fp8)
    t = op_model.predict_in_stream(X)
    conv = np.flatnonzero(X["op_class"].to_numpy() == "conv")
    if len(conv):
        t[conv] = _monotone_in_batch(X.iloc[conv].reset_index(drop=True), t[conv], op_model, prec)
    return t


#: Points per doubling of a convolution's rows on the grid of :func:`_monotone_in_batch` (which starts at one row).
MONOTONE_POINTS_PER_OCTAVE = 4


def _monotone_in_batch(X: pd.DataFrame, t: np.ndarray, op_model, prec: str) -> np.ndarray:
    """Convolution times that never fall when the batch grows.

    The same kernel over more images cannot take less time than over fewer, but the learned efficiency of a
    convolution is not monotone in its size: on NeuSight's microbenchmarks, convolutions of few channels on few images
    measure 30-100 x their roofline (launch-bound cuDNN kernels), and the trees give a small convolution of a step on
    a fast GPU that factor while a larger one falls in a region of efficient kernels — shake-shake-16's 3x3
    convolutions of 16-32 channels on H100 came out at 170 µs at batch 64 and 88 µs at batch 256, and 16 of 120
    neighbouring batch sizes of five zoo CNNs on V100/A100/H100 were predicted faster at the larger batch (with the
    convolutions already described as the microbenchmarks' implicit GEMMs, :func:`work_from_ops`).

    Each convolution is an implicit GEMM of (batch x pixels) rows (``dim_m``), in-channels x taps (``dim_n``) and
    out-channels (``dim_k``); with its shape fixed, every feature of the model is a function of its rows. The model is
    evaluated on a fixed grid of row counts (:data:`MONOTONE_POINTS_PER_OCTAVE` per doubling, from one row to just above
    the row's count; FLOPs and activation bytes scale with the rows, the weights do not), the grid's times are replaced
    by their running maximum from below — the smallest non-decreasing function above them, the projection onto "more
    images never take less time" — and the row's time is that envelope interpolated log-linearly at its own count. The
    result is non-decreasing in the batch for every convolution, exactly.

    Of the two projections (raise a larger convolution to a smaller one's time, or lower the smaller one), this one
    was chosen after both were scored on the only measured CNN steps perfmodel has, CM-DARE's K80/P100 samples
    (``external.cmdare_op_model``: MAPE 41.5 % without either, 38.2 % raising, 44.2 % lowering): a choice made with
    that benchmark in view, stated as such."""
    from perfmodel.models.op_latency import _TILE

    L = MONOTONE_POINTS_PER_OCTAVE
    itemsize = 4.0 if prec in ("fp32", "tf32") else 2.0
    m = X["dim_m"].to_numpy(float)
    wbytes = np.minimum(itemsize * X["dim_n"].to_numpy(float) * X["dim_k"].to_numpy(float), X["bytes"].to_numpy(float) * 0.99)
    pos = L * np.log2(m)
    j0 = np.floor(pos).astype(int)
    counts = j0 + 2  # grid points 0 .. j0 + 1 (2**(j/L) rows)
    row = np.repeat(np.arange(len(X)), counts)
    j = np.concatenate([np.arange(0, a + 2) for a in j0])
    scale = 2.0 ** (j / L) / m[row]
    Y = X.iloc[row].reset_index(drop=True)
    Y["dim_m"] = m[row] * scale
    Y["flops"] = X["flops"].to_numpy(float)[row] * scale
    Y["bytes"] = wbytes[row] + (X["bytes"].to_numpy(float)[row] - wbytes[row]) * scale
    Y["tiles"] = np.ceil(Y["dim_m"] / _TILE) * np.ceil(Y["dim_k"] / _TILE)
    grid = op_model.predict_in_stream(Y)
    out = np.empty(len(X))
    ends = np.cumsum(counts)
    for i, e in enumerate(ends):
        env = np.maximum.accumulate(grid[e - counts[i]:e])  # running maximum from below: non-decreasing in rows
        x = pos[i] - j0[i]
        out[i] = env[-2] ** (1 - x) * env[-1] ** x
    return out


def _extrapolation_notes(spec) -> list[str]:
    where = gpu_extrapolation(spec)
    return [f"{spec.gpu}: " + ", ".join(where)] if where else []


def gpu_extrapolation(gpu) -> list[str]:
    """How a GPU's spec lies outside the GPUs the per-operator model was trained on (peak FP32 rate and memory
    bandwidth against :data:`perfmodel.models.op_latency.TRAINING_GPUS`): one phrase per quantity outside the
    trained range, empty when both lie inside it.

    Parameters
    ----------
    gpu : str or GPUSpec
        Anything :func:`perfmodel.datasets.gpu_spec` takes.
    """
    from perfmodel.datasets import gpu_spec, peak_tflops
    from perfmodel.models.op_latency import TRAINING_GPUS

    spec = gpu_spec(gpu)
    train_peaks = [peak_tflops(g, "fp32") for g in TRAINING_GPUS]
    train_bw = [gpu_spec(g).memory_bandwidth_gb_per_s for g in TRAINING_GPUS]
    where = []
    if spec.fp32_peak_tflops > max(train_peaks) or spec.fp32_peak_tflops < min(train_peaks):
        where.append(f"peak FP32 {spec.fp32_peak_tflops:.3g} TFLOPS outside the training GPUs' {min(train_peaks):.3g}-"
                     f"{max(train_peaks):.3g}")
    if spec.memory_bandwidth_gb_per_s > max(train_bw) or spec.memory_bandwidth_gb_per_s < min(train_bw):
        where.append(f"memory bandwidth {spec.memory_bandwidth_gb_per_s:.4g} GB/s outside their {min(train_bw):.4g}-"
                     f"{max(train_bw):.4g}")
    return where


def learned_on(prec: str) -> str:
    """What the kernel efficiencies of a step at ``prec`` were learned on, for the ``basis`` column."""
    from perfmodel.models.op_latency import TRAINING_GPUS, default_op_model

    fp32 = f"learned on NeuSight microbenchmarks of {', '.join(TRAINING_GPUS)} (FP32)"
    if prec in HALF_MODEL_PRECISIONS and half_model_applies(default_op_model(), prec):
        return (f"learned on Vidur's FP16 kernels of the A40 and A100 (GEMMs, norms, elementwise; fused attention no "
                f"faster than FlashAttention-2's published rate) and, for convolutions and softmax, {fp32}")
    return fp32


def _warn_extrapolation(far, prec):
    import warnings

    from perfmodel.models._extrapolation import ExtrapolationWarning

    from perfmodel.models.op_latency import default_op_model

    far = list(far)
    if prec in HALF_MODEL_PRECISIONS and half_model_applies(default_op_model(), prec):
        far.append(f"precision {prec}: GEMMs, norms and elementwise kernels from the model learned on Vidur's A40 and A100 "
                   "FP16 kernels (scored on the held-out H100 by external.vidur_h100_ops), convolutions and softmax from the FP32-learned "
                   "model at the tensor-core peak" + ("; FP8 linears extrapolated at the FP8 rate" if prec == "fp8" else ""))
    elif prec != "fp32":
        far.append(f"precision {prec}: the efficiencies were learned on FP32 CUDA-core microbenchmarks; tensor-core "
                   "matmuls are scaled by the tensor-core peak")
    if far:
        warnings.warn("predict_step_time extrapolates: " + "; ".join(far) + ".", ExtrapolationWarning, stacklevel=3)


#: activation checkpointing modes: ``"full"`` (every layer's forward recomputed: ``torch.utils.checkpoint`` per layer,
#: Megatron's full recompute), ``"selective"`` (torchtitan's per-operator policy) and ``"layer"`` (torchtitan's
#: per-layer selective policy: every ``N``-th layer fully checkpointed, ``"layer:N"``, default every other one).
CHECKPOINTING_MODES = ("full", "selective", "layer")
_MM_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.matmul", "aten._scaled_mm")
_LAYER_MODE = re.compile(r"^(?:selective-)?layer(?::(\d+))?$")


def checkpointing_mode(value) -> str | None:
    """``None`` (no checkpointing), ``"full"``, ``"selective"`` or ``"layer:N"`` from what a caller passes as
    ``activation_checkpointing``: ``False``/``None`` → ``None``; ``True``/``"full"`` → ``"full"``; ``"selective"``
    (or ``"op"``, torchtitan's name) → ``"selective"``; ``"layer"`` / ``"layer:N"`` (or ``"selective-layer[:N]"``) →
    ``"layer:N"`` (``N`` = 2 when not given; ``"layer:1"`` is ``"full"``).

    ``"selective"`` is torchtitan's per-operator selective checkpointing (``selective_ac_option = "op"``): inside each
    transformer layer the outputs of the fused attention kernel and of every other matmul (the first, third, …
    ``aten.mm`` of the layer's forward pass) are kept; every other operator of the layer (norms, activations, rotary
    embeddings, casts, the remaining matmuls) is recomputed in the backward pass from the layer's input.

    ``"layer:N"`` is torchtitan's per-layer selective checkpointing (``selective_ac_option = "N"``, its default
    ``"2"``): the ``N``-th, ``2N``-th, … transformer layers are checkpointed whole (keep their input, recompute their
    forward pass), the others keep every activation.

    Raises
    ------
    ValueError
        Anything else, with the accepted values.
    """
    if value is None or value is False or (isinstance(value, np.bool_) and not value):
        return None
    if value is True or (isinstance(value, np.bool_) and value):
        return "full"
    if isinstance(value, str) and value.lower() in ("full", "selective", "op"):
        return "selective" if value.lower() in ("selective", "op") else "full"
    hit = _LAYER_MODE.match(value.strip().lower()) if isinstance(value, str) else None
    if hit and (hit.group(1) is None or int(hit.group(1)) >= 1):
        every = int(hit.group(1) or 2)
        return "full" if every == 1 else f"layer:{every}"
    raise ValueError(f"activation_checkpointing must be False, True (= 'full'), 'full', 'selective' (torchtitan's "
                     f"per-operator policy) or 'layer' / 'layer:N' (every N-th layer checkpointed, N >= 1; torchtitan's "
                     f"per-layer policy); got {value!r}.")


def checkpointed_layers(mode: str, n_layers: int) -> np.ndarray:
    """Which transformer layers ``mode`` checkpoints whole (bool per layer): all for ``"full"``, the ``N``-th, ``2N``-th
    … for ``"layer:N"`` (torchtitan counts its layers from 1), none for ``"selective"``."""
    idx = np.arange(n_layers)
    if mode == "full":
        return np.ones(n_layers, bool)
    if isinstance(mode, str) and mode.startswith("layer:"):
        return (idx + 1) % int(mode.split(":")[1]) == 0
    return np.zeros(n_layers, bool)


def recompute_mask(mode: str, rows: pd.DataFrame, layer: np.ndarray, n_layers: int) -> np.ndarray:
    """Forward rows a checkpointing ``mode`` (:func:`checkpointing_mode`) recomputes in the backward pass:
    :func:`selective_recompute_mask` for ``"selective"``; every forward row of a checkpointed layer
    (:func:`checkpointed_layers`) otherwise."""
    if mode == "selective":
        return selective_recompute_mask(rows, layer, n_layers)
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


def add_recompute(frame: pd.DataFrame, *, alpha: float = 0.2, fraction=1.0) -> pd.DataFrame:
    """:func:`predict_step_time` rows with activation checkpointing: the forward pass run once more during the backward
    pass.

    * one GPU, ``"dp"``, ``"fsdp"``, ``"tp"``: ``forward_s`` (already the forward pass of every micro-batch of one
      GPU) is added to ``backward_s``, ``step_time_s`` and ``compute_s``;
    * ``"pp"``: every stage's 1F1B slot grows by its forward pass; with ``forward_s`` the ``m`` forward passes of the
      slowest stage ``f``, the step grows by ``(m + p − 1)·f`` and the bubble by ``(p − 1)·f`` (equal stages).

    ``fraction`` (a number or one per row): the share of the forward pass recomputed — 1 for full checkpointing, the
    recomputed operators' share of the forward kernel time for selective checkpointing (:func:`checkpointing_mode`).

    The interval grows with the compute (``lower_s`` by ``e^{−q}`` times the recompute, ``upper_s`` by ``e^{q}``).
    Not credited: a longer backward pass hides more of DDP's all-reduce, FSDP gathers the parameters again and tensor
    parallelism repeats its forward all-reduces for the recompute; the predicted step is therefore an upper bound for
    those effects.
    """
    if not isinstance(frame, pd.DataFrame) or not {"forward_s", "backward_s", "step_time_s"} <= set(frame.columns):
        raise ValueError("add_recompute needs the frame of perfmodel.predict_step_time (columns forward_s, backward_s, "
                         "step_time_s).")
    if set(frame.get("optimizer", pd.Series(dtype=object))) & {"inference"}:
        raise ValueError("add_recompute: an inference row has no backward pass to recompute in; predict a training step.")
    out = frame.copy()
    fwd = out["forward_s"].to_numpy(float) * np.broadcast_to(np.asarray(fraction, float), (len(out),))
    extra = fwd.copy()
    if "strategy" in out.columns:
        from perfmodel.models.parallel import parse_strategy

        # pipeline degree: all the GPUs for "pp", the pp factor of a combination ("dp2-pp2")
        p = np.array([k if s == "pp" else parse_strategy(s, int(k))["pp"] for s, k in zip(out["strategy"], out["n_gpus"])], dtype=float)
        pp = (out["strategy"] == "pp").to_numpy() | (p > 1)
        m = out["micro_batches"].to_numpy(float)
        # interleaved 1F1B: the fill and drain are v times shorter (perfmodel.models.parallel.pipeline_time)
        from perfmodel.models.parallel import PIPELINE_SCHEDULES

        v = (out["pipeline_schedule"].map(PIPELINE_SCHEDULES).fillna(1).to_numpy(float)
             if "pipeline_schedule" in out.columns else np.ones(len(out)))
        extra = np.where(pp, (m + (p - 1) / v) * fwd / m, fwd)
        out["bubble_s"] = out["bubble_s"].to_numpy(float) + np.where(pp, (p - 1) / v * fwd / m, 0.0)
        out["compute_s"] = out["compute_s"].to_numpy(float) + fwd  # pp: step − comm − bubble grows by m·f = forward_s
    q, _ = _interval(alpha)
    out["backward_s"] = out["backward_s"].to_numpy(float) + fwd
    out["step_time_s"] = out["step_time_s"].to_numpy(float) + extra
    out["lower_s"] = out["lower_s"].to_numpy(float) + extra * np.exp(-q)
    out["upper_s"] = out["upper_s"].to_numpy(float) + extra * np.exp(q)
    what = ("the forward pass recomputed in the backward pass" if np.all(np.asarray(fraction) == 1.0) else
            "selective: the forward operators (or layers) it does not keep recomputed in the backward pass")
    out["basis"] = out["basis"].astype(str) + f"; activation checkpointing: {what}"
    return out


def predict_step_time(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high: int | None = None,
                      precision: str = "fp32", optimizer: str | None = "sgd-momentum", alpha: float = 0.2,
                      inference: bool = False, n_gpus: int = 1, strategy: str = "dp", micro_batches: int | None = None,
                      interconnect=None, overlap_grad_reduce: bool = True,
                      activation_checkpointing: bool | str = False, gpus_per_node: int = 8, compile: bool = False,
                      async_tp: bool = False, pipeline_schedule: str = "1f1b") -> pd.DataFrame:
    out = _step_time_only(model, gpus, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                          input_high=input_high, precision=precision, optimizer=optimizer, alpha=alpha, inference=inference,
                          n_gpus=n_gpus, strategy=strategy, micro_batches=micro_batches, interconnect=interconnect,
                          overlap_grad_reduce=overlap_grad_reduce, activation_checkpointing=activation_checkpointing,
                          gpus_per_node=gpus_per_node, compile=compile, async_tp=async_tp,
                          pipeline_schedule=pipeline_schedule)
    if inference:
        return out
    return with_memory(out, model, gpus, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                       precision=precision, optimizer=optimizer, n_gpus=n_gpus, strategy=strategy, micro_batches=micro_batches,
                       activation_checkpointing=activation_checkpointing, pipeline_schedule=pipeline_schedule)


def _recompute_fraction(model, gpus, mode, *, input_shape, input_dtype, input_high, prec, frame, compile=False) -> np.ndarray:
    """Per row of ``frame``: the share of one GPU's forward kernel time that checkpointing ``mode`` (``"selective"``
    or ``"layer:N"``) recomputes (:func:`recompute_mask`), on that row's GPU at its per-GPU micro-batch (a
    context-parallel rank's shard of the sequence)."""
    from perfmodel.models.parallel import _op_layer, context_parallel_shape, context_parallel_work, model_and_layout, parse_strategy

    net, shape, in_dtype, vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    high = int(input_high) if input_high is not None else vocab
    specs = _gpu_specs(gpus, prec)
    out = []
    for spec, r in zip(specs, frame.itertuples(index=False)):
        n = int(getattr(r, "n_gpus", 1))
        m = int(getattr(r, "micro_batches", 1))
        deg = parse_strategy(getattr(r, "strategy", "dp"), n) if n > 1 else dict(dp=1, cp=1, name="dp")
        b = max(int(r.batch_size) // deg["dp"] // m, 1)
        rank_shape = context_parallel_shape(shape, in_dtype, deg["cp"], deg["name"])
        work = _step_work(net, rank_shape, in_dtype, high, batch_size=b, prec=prec, optimizer=None, inference=False,
                          compile=compile)
        if deg["cp"] > 1:
            work = context_parallel_work(work, deg["cp"], lay)
        t = _kernel_seconds(work, spec, prec)
        layer = _op_layer(work, lay.n_layers)
        fwd = work["phase"].astype(str).to_numpy() == "forward"
        total = float(t[fwd].sum())
        out.append(float(t[recompute_mask(mode, work, layer, lay.n_layers)].sum()) / total if total > 0 else 0.0)
    return np.array(out)


def with_memory(out: pd.DataFrame, model, gpus, *, input_shape, batch_size, input_dtype, precision, optimizer, n_gpus,
                strategy, micro_batches, activation_checkpointing, pipeline_schedule="1f1b") -> pd.DataFrame:
    """``out`` (one row per GPU of a training step) with ``memory_per_gpu_bytes`` and ``fits`` from
    :func:`perfmodel.predict_memory`, and a warning naming the GPUs the step does not fit on: a step time for a run that
    would stop with out-of-memory is said to be one, in the row and on the screen."""
    import warnings

    from perfmodel.planning.memory import predict_memory

    specs = _gpu_specs(gpus, _check_step_args(0.2, optimizer, False, precision, batch_size))
    mem = [predict_memory(model, s, batch_size=batch_size, n_gpus=n_gpus, strategy=strategy, precision=precision,
                          optimizer=optimizer, activation_checkpointing=activation_checkpointing, input_shape=input_shape,
                          input_dtype=input_dtype, micro_batches=micro_batches,
                          pipeline_schedule=pipeline_schedule).iloc[0] for s in specs]
    out = out.copy()
    out["memory_per_gpu_bytes"] = [float(m["total_bytes"]) for m in mem]
    out["fits"] = [bool(m["fits"]) for m in mem]
    if not out["fits"].all():
        bad = [f"{g} ({m['total_bytes'] / 2**30:.1f} GiB of {m['capacity_bytes'] / 2**30:.1f})"
               for g, m, f in zip(out["gpu"], mem, out["fits"]) if not f]
        warnings.warn(f"the step does not fit in GPU memory on {', '.join(bad)}: its time is that of a run that would stop "
                      "with out-of-memory. Use more GPUs, fsdp/tp/pp, activation checkpointing or a smaller batch "
                      "(see perfmodel.predict_memory).", OutOfMemoryWarning, stacklevel=3)
    return out


class OutOfMemoryWarning(UserWarning):
    """A predicted step needs more memory per GPU than the GPU has (``fits`` is False in its row)."""


def _step_time_only(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high: int | None = None,
                      precision: str = "fp32", optimizer: str | None = "sgd-momentum", alpha: float = 0.2,
                      inference: bool = False, n_gpus: int = 1, strategy: str = "dp", micro_batches: int | None = None,
                      interconnect=None, overlap_grad_reduce: bool = True,
                      activation_checkpointing: bool | str = False, gpus_per_node: int = 8, compile: bool = False,
                      async_tp: bool = False, pipeline_schedule: str = "1f1b") -> pd.DataFrame:
    """Predicted time of one training step of ``model`` on each GPU, from the GPU's spec sheet.

    Parameters
    ----------
    model : str, torch.nn.Module, dict or transformers.PretrainedConfig
        A zoo id, ``"package.module:Class"``, a module (built on ``meta`` is fine), or a Hugging Face config (built on
        meta from the config, never downloaded; token inputs and the causal-LM / MLM loss on labels = inputs).
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
        forward + backward only (the step NeuSight's single-GPU labels time).
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
        (:mod:`perfmodel.models.parallel`); or a Megatron combination with each factor's degree, ``"dp2-tp2-pp2"``,
        ``"tp4-pp2"``, ``"dp-tp2"`` (the factor without a degree takes the GPUs the others leave) or
        ``{"dp": 2, "tp": 2}``, whose degrees multiply to ``n_gpus`` (:func:`perfmodel.models.parallel.parse_strategy`);
        torchtitan's layouts: ``"fsdp32-tp8"`` (2D), ``"fsdp8-tp8-pp8"`` (3D), ``"fsdp4-cp2"`` or
        ``"fsdp2-cp2-tp8-pp8"`` (context parallel, with fsdp).
    micro_batches : int, optional
        Micro-batches per step: the pipeline's ``m`` for ``"pp"``, gradient-accumulation steps for the others
        (default 1).
    pipeline_schedule : {"1f1b", "interleaved-1f1b"}
        With pipeline parallelism: 1F1B, or the interleaved 1F1B schedule with two model chunks per rank
        (:func:`perfmodel.models.parallel.pipeline_time`).
    async_tp : bool, default False
        Asynchronous tensor parallelism (torchtitan's, with ``torch.compile``): each tensor-parallel collective of a
        layer overlapped with its matmul, one chunk of ``1/tp`` exposed; needs a ``tp`` factor.
    interconnect : str, Interconnect or dict, optional
        Link between the GPUs: ``"nvlink"``, ``"pcie4"``, ``"infiniband-ndr"`` ... (:data:`perfmodel.models.parallel.INTERCONNECTS`)
        or an :class:`perfmodel.models.parallel.Interconnect`; default the GPU's NVLink from the catalog, else its PCIe.
        A link per level, ``{"intra": "nvlink", "inter": "infiniband-ndr"}``: a process group inside one node of
        ``gpus_per_node`` GPUs uses ``"intra"``, one spanning nodes ``"inter"`` (each GPU's NIC;
        :func:`perfmodel.models.parallel.crosses_nodes`); or a link per group ``{"tp": ..., "pp": ..., "dp": ...}``.
    gpus_per_node : int, default 8
        GPUs per node, for the per-level ``interconnect``.
    compile : bool, default False
        ``torch.compile``: every chain of memory-bound operators between two GEMMs runs as one fused kernel
        (:func:`compiled_work`).
    overlap_grad_reduce : bool
        ``"dp"``: gradient buckets are all-reduced while the backward pass runs (PyTorch DDP); ``False`` all-reduces
        after the backward pass (Megatron-LM's default).
    activation_checkpointing : bool or {"full", "selective", "layer", "layer:N"}
        ``True`` / ``"full"``: keep only each layer's input and recompute the forward pass during the backward pass
        (``torch.utils.checkpoint``, Megatron's full recompute): one more forward pass per micro-batch on every GPU,
        counted in ``backward_s`` (where it runs) and in ``step_time_s`` (:func:`add_recompute`). ``"selective"``:
        torchtitan's per-operator policy (:func:`checkpointing_mode`): only the forward operators it does not keep are
        recomputed. ``"layer"`` / ``"layer:N"``: torchtitan's per-layer policy, every ``N``-th layer (default 2)
        checkpointed whole. The memory it saves is :func:`perfmodel.predict_memory`'s.

    Returns
    -------
    DataFrame
        One row per GPU: ``model``, ``gpu``, ``batch_size``, ``precision``, ``optimizer``, ``step_time_s``,
        ``lower_s``, ``upper_s``, ``forward_s``, ``backward_s``, ``optimizer_s``, ``n_kernels``, ``flops``,
        ``basis`` (what the prediction rests on), and for a training step ``memory_per_gpu_bytes`` and ``fits``
        (:func:`perfmodel.predict_memory`; an :class:`OutOfMemoryWarning` names the GPUs it does not fit on). With ``n_gpus > 1`` also ``n_gpus``, ``strategy``,
        ``micro_batches``, ``interconnect``, ``compute_s`` (busiest GPU's kernels), ``comm_s`` (exposed
        communication), ``comm_total_s`` (all communication, hidden or not), ``bubble_s`` (pipeline idle time);
        ``forward_s`` / ``backward_s`` / ``optimizer_s`` and ``flops`` are those of one GPU.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Unknown GPU (with suggestions), precision, strategy or interconnect.
    perfmodel.datasets.UnsupportedPrecisionError
        The GPU has no units for ``precision`` (BF16 on a V100).
    perfmodel.models.parallel.StrategyError
        A strategy that does not divide the model or the batch (a ``ValueError``).
    ValueError, TypeError
        Bad arguments; a token model without ``input_dtype`` fails in the extraction with the cause named.
    """
    prec = _check_step_args(alpha, optimizer, inference, precision, batch_size)
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    if not isinstance(compile, (bool, np.bool_)):
        raise TypeError(f"compile must be True (torch.compile: memory-bound operator chains fused) or False; got {compile!r}.")
    from perfmodel.models.parallel import _check_gpus_per_node

    _check_gpus_per_node(gpus_per_node)
    ac = checkpointing_mode(activation_checkpointing)
    if ac and inference:
        raise ValueError("activation_checkpointing recomputes the forward pass during the backward pass of a training "
                         "step; an inference pass has no backward pass. Pass activation_checkpointing=False.")
    if ac:
        plain = _step_time_only(model, gpus, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                                  input_high=input_high, precision=precision, optimizer=optimizer, alpha=alpha,
                                  n_gpus=n_gpus, strategy=strategy, micro_batches=micro_batches, interconnect=interconnect,
                                  overlap_grad_reduce=overlap_grad_reduce, gpus_per_node=gpus_per_node, compile=compile,
                                  async_tp=async_tp, pipeline_schedule=pipeline_schedule)
        fraction = 1.0
        if ac != "full":
            fraction = _recompute_fraction(model, gpus, ac, input_shape=input_shape, input_dtype=input_dtype,
                                           input_high=input_high, prec=prec, frame=plain, compile=compile)
        return add_recompute(plain, alpha=alpha, fraction=fraction)
    if n_gpus > 1 or micro_batches not in (None, 1):
        from perfmodel.models.parallel import predict_parallel_step_time

        return predict_parallel_step_time(model, gpus, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                                          input_high=input_high, precision=prec, optimizer=optimizer, alpha=alpha,
                                          inference=inference, n_gpus=int(n_gpus), strategy=strategy,
                                          micro_batches=micro_batches, interconnect=interconnect,
                                          overlap_grad_reduce=overlap_grad_reduce, gpus_per_node=gpus_per_node,
                                          compile=compile, async_tp=async_tp, pipeline_schedule=pipeline_schedule)
    from perfmodel.models.parallel import check_async_tp, pipeline_virtual_stages

    pipeline_virtual_stages(pipeline_schedule)
    check_async_tp(async_tp, 1, "one GPU")
    if strategy is not None:
        from perfmodel.models.parallel import parse_strategy

        parse_strategy(strategy, 1)  # a combination over more GPUs ("dp2-tp2") is an error on one GPU
    specs = _gpu_specs(gpus, prec)
    if interconnect is not None:
        from perfmodel.models.parallel import resolve_interconnect

        resolve_interconnect(interconnect, specs[0])
    net, shape, in_dtype, vocab, name = _model_input(model, input_shape, input_dtype)
    high = int(input_high) if input_high is not None else vocab
    ops = _step_ops(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference)
    work = _step_work(net, shape, in_dtype, high, batch_size=batch_size, prec=prec, optimizer=optimizer, inference=inference,
                      compile=compile)
    if work.empty:
        raise ValueError(f"{name} launches no kernel in a training step (no operator moves data): nothing to predict.")
    q, interval = _interval(alpha)
    rows, far = [], []
    for s in specs:
        t = _kernel_seconds(work, s, prec)
        by_phase = pd.Series(t).groupby(work["phase"].to_numpy()).sum()
        total = float(t.sum())
        far += _extrapolation_notes(s)
        rows.append(dict(model=name, gpu=s.gpu, batch_size=int(batch_size), precision=prec,
                         optimizer="inference" if inference else (optimizer or "none"),
                         step_time_s=total, lower_s=total * np.exp(-q), upper_s=total * np.exp(q),
                         forward_s=float(by_phase.get("forward", 0.0)), backward_s=float(by_phase.get("backward", 0.0)),
                         optimizer_s=float(by_phase.get("optimizer", 0.0)), n_kernels=len(work),
                         flops=float(ops["flops"].sum()),
                         basis=f"sum of {len(work)} operators, each roofline x efficiency {learned_on(prec)}; interval: {interval}"))
    _warn_extrapolation(far, prec)
    return pd.DataFrame(rows)


predict_step_time.__doc__ = _step_time_only.__doc__

"""perfmodel.features — graph features of any PyTorch module from shapes alone: FLOPs, parameters, bytes, tensors.

>>> import perfmodel as pm
>>> pm.features.extract("resnet-32", (3, 32, 32), batch_size=128)        # one-row frame      # doctest: +SKIP

Conventions (stated because every FLOP counter differs):

* ``forward_macs`` counts multiply–accumulates of the matmul-like ops (convolutions incl. grouped / depthwise /
  dilated / transposed, linear / mm / addmm / bmm / baddbmm / einsum via bmm, scaled-dot-product attention);
  ``forward_flops = 2 × forward_macs`` — torch's FlopCounterMode counts an FMA as 2 FLOPs, fvcore as 1.
* ``backward_flops`` is **counted op by op** with torch's backward formulas (``convolution_backward`` with its output
  mask, the mm's of linear layers...), not assumed to be 2 × forward: the first layer computes no input gradient
  (its input does not require grad), so backward is slightly less than twice the forward.
* ``train_step_flops = forward_flops + backward_flops`` (optimizer update not counted). CM-DARE's published
  ``Model FLOPs`` (TensorFlow's profiler on the training graph, per image) also counts norms, activations, adds and
  the optimizer; the zoo's ``train_step_flops`` at batch 1 is 0.97–0.99 of it.
* Elementwise ops, reductions, norms, pooling, embedding lookups, copies and views are not counted (as in
  FlopCounterMode and fvcore). Matmul-like ops without a formula (e.g. the fused LSTM kernel ``mkldnn_rnn_layer``,
  ``linalg_*``, FFTs) are listed in one warning and in the ``unsupported_ops`` column — never a silent 0.
* The numbers equal ``torch.utils.flop_counter.FlopCounterMode`` run on real tensors at the requested batch size
  (tested), with one deliberate difference: on CPU, FlopCounterMode counts 0 for the fused attention kernel
  ``_scaled_dot_product_flash_attention_for_cpu``; perfmodel counts it with torch's own SDPA formula.

How it stays cheap: one training step is run at batch 1 (and batch 2 when ``batch_size > 1``, to extrapolate exactly
for any count that is affine in the batch size) with real CPU tensors, but the counted ops are not computed: they
return zero tensors of the right shape (:class:`~perfmodel.features._counting.ShapeOnlyMode`). Models too large to
instantiate can be analysed on the ``meta`` device (see ``device``).
"""
from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Sequence
from importlib import resources

import numpy as np
import pandas as pd

__all__ = [
    "extract",
    "features_table",
    "compare_with_published",
    "load_zoo_features",
    "FeatureExtractionError",
    "UnsupportedOpsWarning",
    "FEATURE_COLUMNS",
]


class FeatureExtractionError(RuntimeError):
    """The model could not be analysed (bad input shape, the model raised, unknown target)."""


class UnsupportedOpsWarning(UserWarning):
    """Some matmul-like ops have no FLOP formula; their FLOPs are not in the totals."""


#: Columns of the one-row frame returned by :func:`extract` (units in names).
FEATURE_COLUMNS = (
    "model", "batch_size", "input_shape", "forward_macs", "forward_flops", "backward_flops", "train_step_flops",
    "params", "trainable_params", "trainable_tensors", "param_bytes", "param_bytes_by_dtype", "avg_tensor_mib",
    "max_tensor_mib", "buffer_bytes", "state_dict_bytes", "optimizer_state_bytes", "checkpoint_bytes_estimate",
    "activation_bytes", "n_conv", "n_linear", "n_norm", "n_weight_layers", "depth", "unsupported_ops",
)

_MIB = 2**20


def _resolve_model(model, device: str, dtype):
    import torch

    if isinstance(model, str):
        from perfmodel import zoo

        name = model
        net = zoo.build(model, device="meta")
        if device != "meta":
            net = net.to_empty(device=device)  # values are irrelevant for shape-only counting; skip initialisation
        if dtype is not None:
            net = net.to(dtype=dtype)
        return net, name
    if not isinstance(model, torch.nn.Module):
        raise FeatureExtractionError(
            f"extract() needs a torch.nn.Module or a zoo id (e.g. 'resnet-32'); got {type(model).__name__}. "
            "Pass an instantiated module, or a name from perfmodel.zoo.list_models()."
        )
    if dtype is not None:
        model = model.to(dtype=dtype)
    return model, type(model).__name__


def _check_shape(input_shape) -> tuple[int, ...]:
    if isinstance(input_shape, (int, np.integer)):
        input_shape = (int(input_shape),)
    if not isinstance(input_shape, Sequence) or len(input_shape) == 0 or not all(isinstance(d, (int, np.integer)) and d > 0 for d in input_shape):
        raise FeatureExtractionError(
            f"input_shape must be a non-empty sequence of positive ints without the batch dimension, e.g. (3, 32, 32); got {input_shape!r}."
        )
    return tuple(int(d) for d in input_shape)


def _make_input(shape, batch, device, input_dtype, input_high):
    import torch

    full = (batch, *shape)
    if input_dtype is not None and not torch.empty((), dtype=input_dtype).is_floating_point():
        if device == "meta":
            return torch.empty(full, dtype=input_dtype, device="meta")
        return torch.randint(0, input_high, full, dtype=input_dtype, generator=torch.Generator().manual_seed(0))
    dt = input_dtype or torch.get_default_dtype()
    return torch.zeros(full, dtype=dt, device=device)


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


def _one_step(net, x, *, skip_compute: bool, per_layer: bool):
    """Run forward + backward once; return counts (and FlopCounterMode objects when per_layer)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from perfmodel.features._counting import EXTRA_FORMULAS, ShapeOnlyMode

    leaves = [m for m in net.modules() if not list(m.children())]
    act = {"bytes": 0}
    per_module_out: dict = {}
    names = {m: n for n, m in net.named_modules()}

    def hook(mod, inp, out):
        b = sum(t.numel() * t.element_size() for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor))
        act["bytes"] += b
        per_module_out[names.get(mod, "")] = per_module_out.get(names.get(mod, ""), 0) + b

    handles = [m.register_forward_hook(hook) for m in leaves]
    # Totals: one ShapeOnlyMode per phase counts FLOPs itself (fast). Per layer: FlopCounterMode attributes FLOPs to
    # modules; it must sit above ShapeOnlyMode (which would otherwise answer the counted ops first) and span forward
    # and backward (its module tracker must see the forward to attribute the backward); the forward share is a
    # snapshot taken between the two phases.
    outer = ShapeOnlyMode(skip_compute=skip_compute, count=False) if per_layer else contextlib.nullcontext()
    fcm = FlopCounterMode(display=False, custom_mapping=EXTRA_FORMULAS) if per_layer else contextlib.nullcontext()
    fwd_mode = contextlib.nullcontext() if per_layer else ShapeOnlyMode(skip_compute=skip_compute, count=True)
    bwd_mode = contextlib.nullcontext() if per_layer else ShapeOnlyMode(skip_compute=skip_compute, count=True)
    fwd_counts: dict = {}
    loss = None
    with outer, fcm:
        try:
            with fwd_mode:
                out = net(x)
        finally:
            for h in handles:
                h.remove()
        if per_layer:
            fwd_counts = {k: sum(v.values()) for k, v in fcm.get_flop_counts().items()}
        outs = [t for t in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(t, torch.Tensor)]
        grad_outs = [t.float().sum() for t in outs if t.requires_grad]
        if grad_outs:
            loss = sum(grad_outs)
            with bwd_mode:
                loss.backward()
    depth = _longest_weight_path(loss.grad_fn) if loss is not None else 0
    seen = outer.seen if per_layer else (fwd_mode.seen | bwd_mode.seen)
    if per_layer:
        total_counts = {k: sum(v.values()) for k, v in fcm.get_flop_counts().items()}
        bwd_counts = {k: total_counts.get(k, 0) - fwd_counts.get(k, 0) for k in total_counts}
        fwd_total, bwd_total = fwd_counts.get("Global", 0), bwd_counts.get("Global", 0)
    else:
        bwd_counts = {}
        fwd_total, bwd_total = fwd_mode.flops, bwd_mode.flops
    res = {
        "forward_flops": fwd_total,
        "backward_flops": bwd_total,
        "activation_bytes": act["bytes"],
        "depth": depth,
        "seen": seen,
        "module_flops": (fwd_counts, bwd_counts),
        "module_out_bytes": per_module_out,
    }
    net.zero_grad(set_to_none=True)
    return res


def _static(net) -> dict:
    import torch
    from torch import nn

    params = list(net.parameters())
    train = [p for p in params if p.requires_grad]
    by_dtype: dict[str, int] = {}
    for p in params:
        by_dtype[str(p.dtype).replace("torch.", "")] = by_dtype.get(str(p.dtype).replace("torch.", ""), 0) + p.numel() * p.element_size()
    param_bytes = sum(by_dtype.values())
    train_bytes = sum(p.numel() * p.element_size() for p in train)
    buffer_bytes = sum(b.numel() * b.element_size() for b in net.buffers())
    conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
    norm = (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm)
    rms = getattr(nn, "RMSNorm", None)
    if rms is not None:
        norm = (*norm, rms)
    mods = list(net.modules())
    n_conv = sum(isinstance(m, conv) for m in mods)
    n_linear = sum(isinstance(m, (nn.Linear, nn.Bilinear)) for m in mods)
    state_bytes = sum(t.numel() * t.element_size() for t in net.state_dict().values() if isinstance(t, torch.Tensor))
    return dict(
        params=sum(p.numel() for p in params), trainable_params=sum(p.numel() for p in train), trainable_tensors=len(train),
        param_bytes=param_bytes, param_bytes_by_dtype=";".join(f"{k}:{v}" for k, v in sorted(by_dtype.items())),
        avg_tensor_mib=(train_bytes / _MIB / len(train)) if train else 0.0,
        max_tensor_mib=max((p.numel() * p.element_size() for p in train), default=0) / _MIB,
        buffer_bytes=buffer_bytes, state_dict_bytes=state_bytes, optimizer_state_bytes=train_bytes,
        checkpoint_bytes_estimate=state_bytes + train_bytes,
        n_conv=n_conv, n_linear=n_linear, n_norm=sum(isinstance(m, norm) for m in mods), n_weight_layers=n_conv + n_linear,
    )


def extract(
    model,
    input_shape,
    *,
    batch_size: int = 1,
    per_layer: bool = False,
    device: str = "cpu",
    dtype=None,
    input_dtype=None,
    input_high: int = 2,
    skip_compute: bool = True,
    train: bool = True,
) -> pd.DataFrame:
    """Graph features of a model for one training step at ``batch_size``, from shapes.

    Parameters
    ----------
    model : torch.nn.Module or str
        A module, or a zoo id (``"resnet-32"``; any upstream spelling).
    input_shape : sequence of int
        Input shape without the batch dimension, e.g. ``(3, 32, 32)``; for token models, ``(seq_len,)`` with
        ``input_dtype=torch.long``.
    batch_size : int, default 1
        Batch size the counts are for. Counting runs at batch 1 (and 2) and extrapolates exactly for counts affine in
        the batch size — its cost does not grow with ``batch_size``.
    per_layer : bool, default False
        One row per module (``module``, ``module_type``, ``params``, ``forward_flops``, ``backward_flops``,
        ``output_bytes``; parents include their children) instead of the one-row summary.
    device : {"cpu", "meta"}, default "cpu"
        ``"meta"``: analyse without allocating parameters or activations (for models too large for memory): the model
        is moved with ``to_empty(device="meta")`` (zoo ids are built on meta) and run at the requested batch directly.
        Slower per op (shape inference in Python), independent of model size.
    dtype : torch.dtype, optional
        Cast the model's parameters (e.g. ``torch.float16``); bytes follow.
    input_dtype : torch.dtype, optional
        Input dtype; an integer dtype draws token ids in ``[0, input_high)``.
    skip_compute : bool, default True
        Return zeros instead of computing the counted ops. ``False`` computes everything (needed only when control
        flow depends on intermediate values).
    train : bool, default True
        Put the module in training mode (BatchNorm batch statistics, dropout) for the step; its mode is restored.

    Returns
    -------
    DataFrame
        One row with :data:`FEATURE_COLUMNS`: ``forward_macs``, ``forward_flops`` (= 2 × MACs), ``backward_flops``,
        ``train_step_flops``, ``params`` / ``trainable_params`` (count), ``trainable_tensors``, ``param_bytes`` (and
        ``param_bytes_by_dtype``), ``avg_tensor_mib`` (trainable bytes / 2^20 / trainable tensors — CM-DARE's
        "Average Tensor Size (MB)"), ``max_tensor_mib`` (largest trainable tensor), ``buffer_bytes`` (BN running
        stats ...), ``state_dict_bytes``, ``optimizer_state_bytes`` (momentum SGD: one slot per trainable parameter),
        ``checkpoint_bytes_estimate`` (state dict + momentum, like TensorFlow's saver: CM-DARE's "Weight File Size"),
        ``activation_bytes`` (sum of the outputs of leaf modules in the forward pass), ``n_conv``, ``n_linear``,
        ``n_norm``, ``n_weight_layers``, ``depth`` (longest chain of convolution/matmul ops from input to loss),
        ``unsupported_ops`` (``;``-joined, empty when none).

    Raises
    ------
    FeatureExtractionError
        Bad input shape, not a module, or the model failed to run (its exception is chained).
    """
    shape = _check_shape(input_shape)
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise FeatureExtractionError(f"batch_size must be a positive int; got {batch_size!r}.")
    if device not in ("cpu", "meta"):
        raise FeatureExtractionError(f"device must be 'cpu' or 'meta'; got {device!r}. (Counting never needs a GPU.)")
    net, name = _resolve_model(model, device, dtype)
    if device == "meta" and any(p.device.type != "meta" for p in net.parameters()):
        net = net.to_empty(device="meta")
    was_training = net.training
    net.train(train)
    static = _static(net)
    if device == "meta" or batch_size == 1:
        plans = [(batch_size,)]
    else:  # batch 1 and 2; a model that cannot run at batch 1 (BatchNorm1d in training) is counted at 2 and 3
        plans = [(1, 2), (2, 3)]
    runs: list = []
    try:
        for plan_i, batches in enumerate(plans):
            runs = []
            try:
                for b in batches:
                    x = _make_input(shape, b, device, input_dtype, input_high)
                    runs.append((b, _one_step(net, x, skip_compute=skip_compute, per_layer=per_layer)))
                break
            except Exception as exc:
                if plan_i + 1 < len(plans) and b == 1:
                    continue
                raise FeatureExtractionError(
                    f"{name} failed on an input of shape {tuple(x.shape)} ({type(exc).__name__}: {exc}). Check input_shape "
                    "(without the batch dimension) and input_dtype; the model's own exception is attached."
                ) from exc
    finally:
        net.train(was_training)

    def at_batch(key, runs=runs):
        return _affine([(b, r[key]) for b, r in runs], batch_size)

    from perfmodel.features._counting import formula_registry, is_uncounted_compute

    reg = formula_registry()
    unsupported = sorted({str(p) for _, r in runs for p in r["seen"] if is_uncounted_compute(p, reg)})
    if unsupported:
        warnings.warn(
            f"{name}: {len(unsupported)} matmul-like op(s) have no FLOP formula and are NOT in the FLOP totals: "
            f"{', '.join(unsupported)}. Register a formula with torch.utils.flop_counter.register_flop_formula to count them.",
            UnsupportedOpsWarning,
            stacklevel=2,
        )
    if per_layer:
        return _per_layer_frame(net, name, runs, batch_size, unsupported)
    fwd = int(at_batch("forward_flops"))
    bwd = int(at_batch("backward_flops"))
    row = dict(
        model=name, batch_size=int(batch_size), input_shape="x".join(map(str, shape)), forward_macs=fwd // 2, forward_flops=fwd,
        backward_flops=bwd, train_step_flops=fwd + bwd, **static, activation_bytes=int(at_batch("activation_bytes")),
        depth=int(runs[-1][1]["depth"]), unsupported_ops=";".join(unsupported),
    )
    return pd.DataFrame([row], columns=list(FEATURE_COLUMNS))


def _affine(points: list[tuple[int, int]], batch: int) -> int:
    """Value at ``batch`` of the line through (b1, v1), (b2, v2) — exact for counts affine in the batch size."""
    if len(points) == 1:
        return points[0][1]
    (b1, v1), (b2, v2) = points
    slope, rem = divmod(v2 - v1, b2 - b1)
    if rem:  # pragma: no cover - integer counts of consecutive batches
        raise FeatureExtractionError("FLOP counts are not affine in the batch size; use device='meta' to count at the real batch.")
    return v1 + (batch - b1) * slope


def _per_layer_frame(net, name, runs, batch_size, unsupported) -> pd.DataFrame:
    def counts(run, i):
        return run["module_flops"][i]

    root = type(net).__name__
    rows = []
    for mod_name, mod in net.named_modules():
        key = root if mod_name == "" else f"{root}.{mod_name}"

        def val(i, key=key):
            return _affine([(b, counts(r, i).get(key, 0)) for b, r in runs], batch_size)

        out_b = _affine([(b, r["module_out_bytes"].get(mod_name, 0)) for b, r in runs], batch_size)
        rows.append(dict(
            model=name, module=mod_name or "(root)", module_type=type(mod).__name__, depth_in_tree=0 if not mod_name else mod_name.count(".") + 1,
            params=sum(p.numel() for p in mod.parameters(recurse=False)), forward_flops=int(val(0)), backward_flops=int(val(1)),
            output_bytes=int(out_b), batch_size=int(batch_size),
        ))
    df = pd.DataFrame(rows)
    df["train_step_flops"] = df["forward_flops"] + df["backward_flops"]
    df.attrs["unsupported_ops"] = unsupported
    return df


def features_table(target: str, input_shape, **kwargs) -> pd.DataFrame:
    """Features of a zoo id or of ``package.module:ClassName`` (instantiated with no arguments); see :func:`extract`."""
    if ":" in target:
        mod_name, _, cls_name = target.partition(":")
        try:
            cls = getattr(importlib.import_module(mod_name), cls_name)
        except (ImportError, AttributeError) as exc:
            raise FeatureExtractionError(
                f"Cannot import {target!r} ({type(exc).__name__}: {exc}). Expected 'package.module:ClassName' importable "
                "from the current environment, or a zoo id such as 'resnet-32'."
            ) from exc
        try:
            model = cls()
        except Exception as exc:
            raise FeatureExtractionError(f"{target} could not be instantiated without arguments ({type(exc).__name__}: {exc}).") from exc
        return extract(model, input_shape, **kwargs)
    return extract(target, input_shape, **kwargs)


def load_zoo_features() -> pd.DataFrame:
    """The precomputed features of the twenty zoo CNNs (batch 1, 3×32×32), shipped as ``datasets/features/zoo_features.csv``.

    No torch needed. Regenerate with ``python -m perfmodel.features.zoo_table``.
    """
    from perfmodel.datasets._io import parse_csv

    res = resources.files("perfmodel._data") / "features" / "zoo_features.csv"
    return parse_csv(res.read_bytes(), source="perfmodel datasets/features/zoo_features.csv", keep_default_na=False)


def compare_with_published() -> pd.DataFrame:
    """Zoo features next to the published CM-DARE values (CATALOG.md §4), one row per CNN.

    Columns: ``model``, ``n_params`` / ``params`` (published / ours), ``n_trainable_tensors`` / ``trainable_tensors``,
    ``max_tensor_mib`` (published) / ``max_tensor_mib_ours``, ``model_flops`` (published, TF profiler) /
    ``train_step_flops`` (ours, batch 1) and their ratio ``flops_ratio``, ``weight_file_mb`` (published, MiB) /
    ``checkpoint_mib_estimate`` (ours). Reads the shipped feature table (no torch).
    """
    from perfmodel.datasets import load_reported_cnns

    ours = load_zoo_features()
    pub = load_reported_cnns()
    df = pub[["model", "n_params", "n_trainable_tensors", "max_tensor_mib", "model_flops", "weight_file_mb"]].merge(
        ours[["model", "params", "trainable_tensors", "max_tensor_mib", "forward_macs", "train_step_flops", "checkpoint_bytes_estimate"]],
        on="model", suffixes=("", "_ours"), validate="one_to_one",
    )
    df["flops_ratio"] = df["train_step_flops"] / df["model_flops"]
    df["checkpoint_mib_estimate"] = df.pop("checkpoint_bytes_estimate") / _MIB
    return df

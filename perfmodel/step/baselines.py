"""The two baselines every external score is printed beside: the practitioner's rule of thumb and the roofline.

A detailed model is worth its cost only where it beats the one-line estimate every practitioner already uses.

* **Rule of thumb** (:func:`rule_of_thumb_step_time`): a training step of a transformer takes
  ``(6·N + 12·L·h·s)`` FLOPs per token — ``6·N`` for the forward and backward pass through the ``N`` weights of its
  matrix products (2 FLOPs per multiply-add forward, 4 backward; Kaplan et al. 2020, "Scaling Laws for Neural
  Language Models", Table 1), ``12·L·h·s`` for attention's two products over the ``s`` tokens of the sequence in each of
  the ``L`` layers of width ``h`` (Chowdhery et al. 2022, "PaLM", Appendix B, the model-FLOPs utilisation formula) —
  at a model-FLOPs utilisation (MFU) of 40 % of the GPU's dense peak at the precision. ``N`` counts every weight but
  the embedding tables (as torchtitan counts it for its MFU: ``6 · (params − embedding params)``); an output head tied
  to the input embedding is counted, since its product runs. Step time = FLOPs per token × tokens per step /
  (GPUs × peak × MFU). A model without token inputs (a CNN) is counted as three times its forward FLOPs (forward,
  and twice that backward) per sample, the same rule said without tokens; a forward-only or inference step as one
  forward pass (``2·N + 4·L·h·s`` per token).
* **Roofline** (:func:`roofline_step_time`): every kernel of the traced step (the same trace perfmodel predicts) at
  100 % of the GPU's peak rate or memory bandwidth, whichever binds, summed: the least time the step could take
  on that GPU, with nothing learned.

Both take the GPU through its spec sheet only, as perfmodel does.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["RULE_OF_THUMB_MFU", "rule_of_thumb_step_time", "attention_flops_per_token", "roofline_step_time", "matmul_params"]

#: Model-FLOPs utilisation of the rule of thumb: 40 % of the dense peak, the figure practitioners size runs with
#: (well-tuned large runs report 38-43 % on A100/H100: PaLM 46 % on TPU v4, Llama 3 405B 38-43 % on H100).
RULE_OF_THUMB_MFU = 0.4


def _expert_share(net) -> float:
    """The share of a mixture-of-experts model's routed-expert weights one token passes through: the experts it is
    routed to over the routed experts (:attr:`perfmodel.step.trace.ModelLayout.experts_per_token` / ``experts``, from
    the config's ``num_experts_per_tok`` / ``num_local_experts``, the names Mixtral, Qwen-MoE, DeepSeek and gpt-oss
    configs use); 1 for a dense model."""
    from perfmodel.step.trace import model_layout

    lay = model_layout(net)
    experts, per_token = lay.experts, lay.experts_per_token
    return per_token / experts if experts and per_token and per_token < experts else 1.0


def matmul_params(net) -> int:
    """Weights of a module that take part in its matrix products: every parameter but the embedding tables
    (``nn.Embedding``); an embedding table that is also the output head (tied weights) is counted once. In a mixture
    of experts the routed experts' weights (:func:`perfmodel.step.trace.is_routed_expert`) count at the share a token
    passes through (:func:`_expert_share`: the active parameters practitioners count ``6·N`` over), shared experts whole.

    Parameters
    ----------
    net : torch.nn.Module

    Returns
    -------
    int
    """
    import torch

    from perfmodel.step.trace import is_routed_expert

    seen: set[int] = set()
    head = None
    get_out = getattr(net, "get_output_embeddings", None)
    if callable(get_out):
        try:
            out = get_out()
            head = id(out.weight) if out is not None and getattr(out, "weight", None) is not None else None
        except (AttributeError, NotImplementedError):
            head = None
    emb: set[int] = set()
    for m in net.modules():
        if isinstance(m, torch.nn.Embedding):
            for p in m.parameters(recurse=False):
                if id(p) != head:
                    emb.add(id(p))
    share = _expert_share(net)
    total = 0.0
    for name, p in net.named_parameters():
        if id(p) in seen or id(p) in emb:
            continue
        seen.add(id(p))
        total += p.numel() * (share if is_routed_expert(name) else 1.0)
    return int(round(total))


def _is_token_model(shape, in_dtype) -> bool:
    import torch

    return len(shape) == 1 and (in_dtype is None or in_dtype in (torch.long, torch.int64, torch.int32))


def _attention_per_token(lay, s: int, passes: int) -> float:
    """The rule's attention FLOPs per token: ``4·L·h·s`` a pass through both products, ``passes`` times."""
    return float(passes * 4 * lay.n_layers * lay.hidden * s)


def attention_flops_per_token(model, input_shape=None, *, input_dtype=None, inference: bool = False) -> float:
    """The rule of thumb's attention FLOPs per token of a token model: ``12·L·h·s`` (``4·L·h·s`` with
    ``inference``), the part of its count a causal count halves. A ``ValueError`` for a model without a sequence of
    tokens and transformer layers."""
    from perfmodel.step.trace import model_and_layout

    _net, shape, in_dtype, _vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    if not (_is_token_model(shape, in_dtype) and lay.n_layers and lay.hidden):
        raise ValueError(f"{name}: the rule of thumb counts attention FLOPs only for a model of token sequences with "
                         f"transformer layers; got input shape {tuple(shape)} ({in_dtype}). Pass a causal language "
                         "model and its input_shape=(sequence_length,).")
    return _attention_per_token(lay, int(shape[0]), 1 if inference else 3)


def rule_of_thumb_step_time(model, gpus, *, input_shape=None, batch_size: int, precision: str = "bf16", n_gpus: int = 1,
                            optimizer="adam", inference: bool = False, mfu: float = RULE_OF_THUMB_MFU,
                            input_dtype=None) -> pd.DataFrame:
    """Step time by the rule of thumb: ``(6·N + 12·L·h·s)`` FLOPs per token at ``mfu`` of the dense peak (module
    docstring).

    Parameters
    ----------
    model : str, torch.nn.Module or Hugging Face config
        As :func:`perfmodel.predict_step_time` takes it.
    gpus : str, GPUSpec or list of them
        One row per GPU.
    input_shape : tuple of int
        One sample without the batch dimension (``(seq_len,)`` for a language model).
    batch_size : int
        Global batch (samples per step over all ``n_gpus``).
    precision : str
        The peak it is taken at (``"bf16"``, ``"fp16"``, ``"tf32"``, ``"fp32"``; FP32 at the vector rate, or the matrix
        units' where the vendor BLAS uses them, as perfmodel does). ``"fp8"`` is counted against the BF16 peak, as
        torchtitan and Megatron-LM report the MFU of FP8 runs (attention, norms and the non-linear layers stay BF16).
    n_gpus : int
        GPUs the step is spread over (perfectly: the rule has no communication).
    optimizer : str or None
        ``None`` or ``inference=True``: a forward pass only (``2·N + 4·L·h·s`` per token with ``None`` and a
        backward pass: forward + backward without an optimizer is still ``6·N``; only ``inference`` drops the backward
        pass). The optimizer's own kernels are not in the rule.
    inference : bool
        Forward pass only.
    mfu : float
        Model-FLOPs utilisation, in (0, 1].

    Returns
    -------
    DataFrame
        One row per GPU: ``model``, ``gpu``, ``batch_size``, ``n_gpus``, ``precision``, ``flops_per_step``,
        ``peak_tflops``, ``mfu``, ``step_time_s``, ``basis``.
    """
    from perfmodel.datasets import matmul_peak_tflops, mfu_precision
    from perfmodel.features import extract
    from perfmodel.step.kernels import gpu_specs
    from perfmodel.step.trace import model_and_layout

    if not (isinstance(mfu, (int, float)) and 0 < float(mfu) <= 1):
        raise ValueError(f"mfu must be a share of the peak in (0, 1]; got {mfu!r}. The rule of thumb uses 0.4.")
    if not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}.")
    if not (isinstance(n_gpus, (int, np.integer)) and n_gpus >= 1):
        raise ValueError(f"n_gpus must be a positive integer; got {n_gpus!r}.")
    net, shape, in_dtype, _vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    passes = 1 if inference else 3  # forward; forward + backward (2x forward)
    if _is_token_model(shape, in_dtype) and lay.n_layers and lay.hidden:
        s = int(shape[0])
        n = matmul_params(net)
        per_token = passes * 2 * n + _attention_per_token(lay, s, passes)
        flops = float(per_token) * s * batch_size
        how = (f"{'2' if inference else '6'}·N + {'4' if inference else '12'}·L·h·s FLOPs per token "
               f"(N = {n:,} weights without the embedding tables, L = {lay.n_layers}, h = {lay.hidden}, s = {s})")
    else:
        fwd = float(extract(net, shape, batch_size=1, input_dtype=in_dtype)["forward_flops"].iloc[0])
        flops = passes * fwd * batch_size
        how = f"{passes} x the forward FLOPs per sample ({fwd:.4g})"
    rows = []
    at = mfu_precision(precision)  # MFU of FP8 runs is counted against the BF16 peak
    for spec in gpu_specs(gpus, precision):
        peak = matmul_peak_tflops(spec, at)
        t = flops / (n_gpus * peak * 1e12 * float(mfu))
        rows.append(dict(model=name, gpu=spec.gpu, batch_size=int(batch_size), n_gpus=int(n_gpus), precision=precision,
                         flops_per_step=flops, peak_tflops=peak, mfu=float(mfu), step_time_s=t,
                         basis=f"rule of thumb: {how} at {float(mfu):.0%} of the dense {at} peak "
                               f"({peak:g} TFLOPS) on {n_gpus} GPU(s)"))
    return pd.DataFrame(rows)


def roofline_step_time(model, gpus, *, input_shape=None, batch_size: int, precision: str = "bf16", optimizer="adam",
                       inference: bool = False, input_dtype=None, compile: bool = False) -> pd.DataFrame:
    """Step time on one GPU at the roofline: every kernel of the traced step at the GPU's peak rate or bandwidth,
    whichever binds (module docstring).

    Parameters are those of :func:`perfmodel.predict_step_time` for one GPU (``batch_size`` per GPU).

    Returns
    -------
    DataFrame
        One row per GPU: ``model``, ``gpu``, ``batch_size``, ``precision``, ``step_time_s``, ``compute_bound_s`` (the
        kernels bound by the peak rate), ``memory_bound_s``, ``n_kernels``, ``basis``.
    """
    from perfmodel.step.kernels import gpu_specs
    from perfmodel.step.op_latency import FP8_RATE, FP8_SPLIT_ACCUMULATION_RATE, _roofline_s, low_precision_rates, step_design
    from perfmodel.step.trace import model_input, step_work

    net, shape, in_dtype, vocab, name = model_input(model, input_shape, input_dtype)
    work = step_work(net, shape, in_dtype, vocab, batch_size=batch_size, prec=precision, optimizer=optimizer,
                     inference=inference, compile=compile)
    fp8 = low_precision_rates(work)
    fp8[fp8 == FP8_SPLIT_ACCUMULATION_RATE] = FP8_RATE  # the roofline: every FP8 GEMM at the datasheet's FP8 peak
    rows = []
    for spec in gpu_specs(gpus, precision):
        X = step_design(work, spec, precision, fp8)
        t = _roofline_s(X)
        comp = X["flops"].to_numpy(float) / X["peak_flops_per_s"].to_numpy(float) >= \
            X["bytes"].to_numpy(float) / X["bandwidth_bytes_per_s"].to_numpy(float)
        rows.append(dict(model=name, gpu=spec.gpu, batch_size=int(batch_size), precision=precision,
                         step_time_s=float(t.sum()), compute_bound_s=float(t[comp].sum()),
                         memory_bound_s=float(t[~comp].sum()), n_kernels=len(work),
                         basis=f"roofline: {len(work)} kernels each at the peak rate or the memory bandwidth, whichever "
                               "binds (100 % efficiency, no launch cost)"))
    return pd.DataFrame(rows)


"""One training step on several GPUs: data, fully sharded, tensor and pipeline parallel, from the single-GPU operator model.

The compute of each GPU is the per-operator model of :mod:`perfmodel.models.op_step_time` applied to the operators that
GPU runs; the communication is an α–β cost on the link between the GPUs:

* **collectives** (ring algorithm, ``n`` GPUs, message of ``S`` bytes, link bandwidth ``B`` per direction with NCCL's
  efficiency ``e``, latency ``α`` per step): all-reduce ``2(n−1)/n · S/(eB) + 2(n−1)α``; all-gather and
  reduce-scatter (``S`` the gathered size) ``(n−1)/n · S/(eB) + (n−1)α``; a point-to-point send ``S/(eB) + α``;
  tree all-reduce ``2·S/(eB) + 2⌈log2 n⌉α``.
* **dp** (PyTorch DDP): each GPU runs the step at ``batch / n``; gradients are all-reduced in buckets (first 1 MiB,
  then 25 MiB, DDP's defaults) in the order the backward pass produces them (from the last layer to the first); bucket
  ``i`` is ready when the backward pass has produced its share of the gradient bytes, and the buckets go through the
  link one after another: only what is still on the link when the backward pass ends is exposed (the last bucket, when
  the backward pass is long enough). ``overlap_grad_reduce=False`` all-reduces everything after the backward pass
  (Megatron-LM's default).
* **fsdp** (ZeRO-3): each GPU holds ``1/n`` of the parameters, gathers them per layer in the forward and again in the
  backward pass and reduce-scatters the gradients; gathers are prefetched under the previous layer's compute, so a
  pass costs ``max(compute, communication)`` plus the first layer's gather; the optimizer updates ``1/n`` of the
  parameters.
* **tp** (Megatron-LM): every GPU sees the whole batch; the matmuls, attention and activation of each attention and
  MLP block are split ``n`` ways (attention heads, MLP columns), as are the vocabulary projection, the loss and the
  embedding (vocabulary-parallel); layer norms, residual adds and the dropouts on the hidden state are replicated. Two
  all-reduces of the activations (``tokens × hidden``) per transformer layer in the forward pass and two in the
  backward pass, plus one for the embedding and one for the vocabulary projection.
* **pp** (1F1B): contiguous stages of transformer layers (the embedding on the first stage, the head and loss on the
  last), ``m`` micro-batches of ``batch / m``; with ``t_s`` the forward + backward time of stage ``s`` per
  micro-batch, the step takes ``Σ_s t_s + (m−1)·max_s t_s`` (``(m+p−1)·t`` for equal stages: a bubble of
  ``(p−1)/(m+p−1)``), plus one send of the activations forward and one of their gradients backward per stage
  boundary and micro-batch; tied input/output embeddings are all-reduced between the first and the last stage.

What it does not model: congestion between collectives of different groups, NCCL protocol switches on small messages,
kernel slow-down from communication sharing the GPU's SMs, and combinations of strategies.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd

from perfmodel._errors import UnknownNameError

__all__ = [
    "Interconnect", "INTERCONNECTS", "NCCL_EFFICIENCY", "STRATEGIES", "DDP_BUCKET_BYTES", "DDP_FIRST_BUCKET_BYTES", "StrategyError",
    "resolve_interconnect", "check_strategy_name", "allreduce_time", "allgather_time", "reduce_scatter_time", "p2p_time",
    "bucket_sizes", "exposed_bucket_allreduce", "pipeline_time", "predict_parallel_step_time", "ModelLayout", "model_layout",
]

#: strategies :func:`predict_parallel_step_time` models.
STRATEGIES = ("dp", "fsdp", "tp", "pp")
#: PyTorch DDP's gradient bucket cap (``bucket_cap_mb=25``) and its first, smaller bucket (1 MiB), bytes.
DDP_BUCKET_BYTES = 25 * 2**20
DDP_FIRST_BUCKET_BYTES = 2**20
#: share of a link's peak bandwidth NCCL's ring collectives reach on large messages: nccl-tests' all-reduce bus
#: bandwidth on a DGX A100 is about 230 GB/s of NVLink's 300 GB/s per direction.
NCCL_EFFICIENCY = 0.75


class StrategyError(ValueError):
    """A parallel strategy does not divide the model or the batch (tensor parallel over heads that do not split, more
    pipeline stages than layers, a global batch that does not split over the GPUs)."""


@dataclasses.dataclass(frozen=True)
class Interconnect:
    """A link between GPUs for the α–β cost model.

    Parameters
    ----------
    name : str
        Label.
    bandwidth_gb_per_s : float
        Peak bandwidth of one GPU's link **per direction**, GB/s (10^9 bytes/s).
    latency_s : float
        α, seconds per step of a collective (launch and synchronisation).
    efficiency : float
        Share of the peak a large collective reaches (:data:`NCCL_EFFICIENCY`).
    """

    name: str
    bandwidth_gb_per_s: float
    latency_s: float = 5e-6
    efficiency: float = NCCL_EFFICIENCY

    def __post_init__(self):
        for f in ("bandwidth_gb_per_s", "latency_s", "efficiency"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (f != "latency_s" and v == 0):
                raise ValueError(f"Interconnect {self.name!r}: {f} must be a positive finite number; got {v!r}.")
        if self.efficiency > 1:
            raise ValueError(f"Interconnect {self.name!r}: efficiency must be in (0, 1]; got {self.efficiency!r}.")

    @property
    def bytes_per_s(self) -> float:
        """Effective bandwidth per direction, bytes/s."""
        return self.bandwidth_gb_per_s * 1e9 * self.efficiency


#: Named links (per-direction peak bandwidth). PCIe x16: 8 / 16 / 32 GT/s per lane with 128b/130b encoding (PCI-SIG
#: base specifications 3.0 / 4.0 / 5.0); networks: their line rate (100 GbE = 12.5 GB/s; InfiniBand HDR 200 Gb/s,
#: NDR 400 Gb/s). ``"nvlink"`` takes the GPU's NVLink bandwidth from the catalog (``nvlink_gb_per_s``, both
#: directions, halved).
INTERCONNECTS = {
    "pcie3": Interconnect("pcie3", 15.75, 10e-6),
    "pcie4": Interconnect("pcie4", 31.5, 10e-6),
    "pcie5": Interconnect("pcie5", 63.0, 10e-6),
    "ethernet-25g": Interconnect("ethernet-25g", 3.125, 20e-6),
    "ethernet-100g": Interconnect("ethernet-100g", 12.5, 20e-6),
    "ethernet-200g": Interconnect("ethernet-200g", 25.0, 20e-6),
    "infiniband-hdr": Interconnect("infiniband-hdr", 25.0, 10e-6),
    "infiniband-ndr": Interconnect("infiniband-ndr", 50.0, 10e-6),
}
_NVLINK_LATENCY_S = 5e-6


def resolve_interconnect(interconnect=None, gpu=None) -> Interconnect:
    """The :class:`Interconnect` for a name, a spec, or (``None``) the GPU's own: its NVLink when the catalog lists one,
    else its PCIe generation.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown name (the message lists the known ones).
    """
    if isinstance(interconnect, Interconnect):
        return interconnect
    spec = None
    if gpu is not None:
        from perfmodel.datasets import gpu_spec

        spec = gpu_spec(gpu)
    if interconnect is None:
        if spec is None:
            raise ValueError("resolve_interconnect needs an interconnect name or a GPU to take the link from.")
        if math.isfinite(spec.nvlink_gb_per_s) and spec.nvlink_gb_per_s > 0:
            return Interconnect(f"nvlink ({spec.gpu})", spec.nvlink_gb_per_s / 2, _NVLINK_LATENCY_S)
        gen = int(spec.pcie_generation) if math.isfinite(spec.pcie_generation) else 3
        return INTERCONNECTS[f"pcie{min(max(gen, 3), 5)}"]
    if not isinstance(interconnect, str):
        raise TypeError(f"interconnect must be a name ({', '.join(['nvlink', *INTERCONNECTS])}) or an Interconnect; "
                        f"got {type(interconnect).__name__}.")
    key = interconnect.strip().lower().replace("_", "-").replace(" ", "-")
    if key == "nvlink":
        if spec is None:
            raise ValueError("interconnect 'nvlink' takes its bandwidth from the GPU's catalog row: pass gpu=, or an "
                             "Interconnect('nvlink', bandwidth_gb_per_s=..., latency_s=...).")
        if not (math.isfinite(spec.nvlink_gb_per_s) and spec.nvlink_gb_per_s > 0):
            raise UnknownNameError(f"interconnect 'nvlink': GPU {spec.gpu} has no NVLink in the catalog (nvlink_gb_per_s = "
                                   f"{spec.nvlink_gb_per_s:g}). Use its PCIe ('pcie{int(spec.pcie_generation) if math.isfinite(spec.pcie_generation) else 4}') or pass an Interconnect.")
        return Interconnect(f"nvlink ({spec.gpu})", spec.nvlink_gb_per_s / 2, _NVLINK_LATENCY_S)
    if key not in INTERCONNECTS:
        raise UnknownNameError(f"Unknown interconnect {interconnect!r}. Expected one of: nvlink, {', '.join(INTERCONNECTS)}, "
                               "or an Interconnect(name, bandwidth_gb_per_s, latency_s).")
    return INTERCONNECTS[key]


def check_strategy_name(strategy) -> str:
    """``strategy`` lower-cased if it is one of :data:`STRATEGIES`, else :class:`UnknownNameError`."""
    key = str(strategy).strip().lower() if isinstance(strategy, str) else strategy
    if key not in STRATEGIES:
        raise UnknownNameError(f"Unknown parallel strategy {strategy!r}. Expected one of: {', '.join(STRATEGIES)} "
                               "(data parallel, fully sharded data parallel, tensor parallel, pipeline parallel).")
    return key


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (GPUs in the collective) must be a positive int; got {n!r}.")


def allreduce_time(nbytes: float, n: int, link: Interconnect, *, algorithm: str = "ring") -> float:
    """Seconds to all-reduce ``nbytes`` over ``n`` GPUs: ring ``2(n−1)/n·S/(eB) + 2(n−1)α``, tree
    ``2·S/(eB) + 2⌈log2 n⌉α``; 0 for one GPU or nothing to send."""
    _check_n(n)
    if n == 1 or nbytes <= 0:
        return 0.0
    if algorithm == "ring":
        return 2 * (n - 1) / n * nbytes / link.bytes_per_s + 2 * (n - 1) * link.latency_s
    if algorithm == "tree":
        return 2 * nbytes / link.bytes_per_s + 2 * math.ceil(math.log2(n)) * link.latency_s
    raise UnknownNameError(f"Unknown all-reduce algorithm {algorithm!r}. Expected one of: ring, tree.")


def allgather_time(nbytes: float, n: int, link: Interconnect) -> float:
    """Seconds to all-gather a tensor of ``nbytes`` (the gathered size) over ``n`` GPUs: ``(n−1)/n·S/(eB) + (n−1)α``."""
    _check_n(n)
    if n == 1 or nbytes <= 0:
        return 0.0
    return (n - 1) / n * nbytes / link.bytes_per_s + (n - 1) * link.latency_s


def reduce_scatter_time(nbytes: float, n: int, link: Interconnect) -> float:
    """Seconds to reduce-scatter ``nbytes`` (the full size before scattering) over ``n`` GPUs; same cost as
    :func:`allgather_time`."""
    return allgather_time(nbytes, n, link)


def p2p_time(nbytes: float, link: Interconnect) -> float:
    """Seconds to send ``nbytes`` from one GPU to another: ``S/(eB) + α``."""
    if nbytes <= 0:
        return 0.0
    return nbytes / link.bytes_per_s + link.latency_s


def bucket_sizes(grad_bytes: float, *, bucket_bytes: float = DDP_BUCKET_BYTES, first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES) -> np.ndarray:
    """Sizes (bytes) of DDP's gradient buckets in the order they are all-reduced: a first bucket of
    ``first_bucket_bytes``, then ``bucket_bytes`` each, the rest in the last one."""
    if grad_bytes <= 0:
        return np.zeros(0)
    sizes = [min(first_bucket_bytes, grad_bytes)]
    left = grad_bytes - sizes[0]
    while left > 0:
        sizes.append(min(bucket_bytes, left))
        left -= sizes[-1]
    return np.asarray(sizes, dtype=float)


def exposed_bucket_allreduce(backward_s: float, grad_bytes: float, n: int, link: Interconnect, *, overlap: bool = True,
                             bucket_bytes: float = DDP_BUCKET_BYTES, first_bucket_bytes: float = DDP_FIRST_BUCKET_BYTES) -> tuple[float, float]:
    """(exposed, total) seconds of DDP's gradient all-reduce after a backward pass of ``backward_s``.

    Bucket ``i`` is ready when the backward pass has produced its cumulative share of ``grad_bytes`` (gradients
    produced at a constant rate); buckets go through the link one after another. Exposed is what is left after the
    backward pass ends: at least the last bucket's all-reduce, at most all of them. ``overlap=False``: all of them,
    as one all-reduce of ``grad_bytes`` after the backward pass.
    """
    if n == 1 or grad_bytes <= 0:
        return 0.0, 0.0
    if not overlap:
        t = allreduce_time(grad_bytes, n, link)
        return t, t
    sizes = bucket_sizes(grad_bytes, bucket_bytes=bucket_bytes, first_bucket_bytes=first_bucket_bytes)
    ready = backward_s * np.cumsum(sizes) / grad_bytes
    end = 0.0
    total = 0.0
    for r, size in zip(ready, sizes):
        c = allreduce_time(float(size), n, link)
        end = max(end, float(r)) + c
        total += c
    return max(end - backward_s, 0.0), total


def pipeline_time(stage_s, micro_batches: int, *, p2p_s: float = 0.0) -> tuple[float, float]:
    """(step, bubble) seconds of a 1F1B pipeline: ``Σ t_s + (m−1)·max t_s`` with ``t_s`` the forward + backward time of
    stage ``s`` for one micro-batch, plus ``2·p2p_s`` per stage boundary on the first micro-batch's path and per
    micro-batch at the slowest stage. The bubble is the idle time of the slowest stage: ``(p−1)/(m+p−1)`` of the
    step for equal stages without communication."""
    t = np.asarray(stage_s, dtype=float)
    if t.ndim != 1 or len(t) == 0 or (t < 0).any():
        raise ValueError(f"stage_s must be a non-empty sequence of non-negative seconds; got {stage_s!r}.")
    if isinstance(micro_batches, bool) or not isinstance(micro_batches, (int, np.integer)) or micro_batches < 1:
        raise ValueError(f"micro_batches must be a positive int; got {micro_batches!r}.")
    p, m = len(t), int(micro_batches)
    hop = 2 * p2p_s if p > 1 else 0.0
    step = float(t.sum() + (m - 1) * t.max() + (p - 1) * hop + (m - 1) * hop)
    busy = float(m * t.max())
    return step, max(step - busy - (m - 1) * hop, 0.0) if p > 1 else 0.0


# -- the model's layout: transformer layers, what tensor parallelism splits ------------------------------------------

_SPLIT_MODULE = re.compile(r"(^|\.)(attn|attention|self_attn|selfattention|mlp|ffn|feed_forward|feedforward|intermediate|experts)(\.|$)",
                           re.IGNORECASE)


@dataclasses.dataclass
class ModelLayout:
    """Where the transformer layers of a module are and what tensor parallelism splits.

    ``block_prefix``: module path of the repeated layers in the per-op frame (``"model.transformer.h"``);
    ``n_layers``; ``hidden``, ``heads``, ``ffn``, ``vocab`` from the config (``None`` when unknown);
    ``params``: parameter count; ``param_layer``: for each parameter name, its layer index (-1 before the layers,
    ``n_layers`` after); ``param_split``: whether tensor parallelism splits it; ``param_numel``; ``tied``: input and
    output embeddings share their weight.
    """

    block_prefix: str
    n_layers: int
    hidden: int | None
    heads: int | None
    ffn: int | None
    vocab: int | None
    tied: bool
    param_numel: dict
    param_layer: dict
    param_split: dict

    @property
    def params(self) -> int:
        return int(sum(self.param_numel.values()))


def _cfg_get(cfg, *names):
    for n in names:
        v = getattr(cfg, n, None) if not isinstance(cfg, dict) else cfg.get(n)
        if v is not None:
            return int(v) if not isinstance(v, bool) else v
    return None


def _layer_prefix(names) -> tuple[str, list[int]]:
    """The dotted prefix followed by an integer index that carries the most distinct indices (the layer list)."""
    found: dict[str, set] = {}
    for name in names:
        parts = str(name).split(".")
        for i, part in enumerate(parts[1:], 1):
            if part.isdigit():
                found.setdefault(".".join(parts[:i]), set()).add(int(part))
    if not found:
        return "", []
    prefix = max(found, key=lambda k: (len(found[k]), -k.count(".")))
    return prefix, sorted(found[prefix])


def model_and_layout(model, input_shape=None, input_dtype=None):
    """The module of ``model`` (any form :func:`perfmodel.predict_step_time` takes; a zoo id is built on the meta device),
    its input shape, input dtype, vocabulary size and name, and its :func:`model_layout`."""
    from perfmodel.models import op_step_time as ost

    net, shape, in_dtype, vocab, name = ost._model_input(model, input_shape, input_dtype)
    if isinstance(net, str):  # a zoo id: built on the meta device
        from perfmodel import zoo

        net = zoo.build(net, device="meta")
    return net, shape, in_dtype, vocab, name, model_layout(net)


def model_layout(net) -> ModelLayout:
    """:class:`ModelLayout` of a module (a Hugging Face model carries its config: hidden size, heads, vocabulary)."""
    cfg = next((getattr(mod, "config") for mod in net.modules() if getattr(mod, "config", None) is not None), None)
    named = [(n, p) for n, p in net.named_parameters(remove_duplicate=False)]
    seen = {}
    tied = False
    for n, p in named:
        key = id(p)
        if key in seen:
            tied = True
        seen.setdefault(key, n)
    names = [n for n, p in named if seen[id(p)] == n]
    numel = {n: int(p.numel()) for n, p in named if seen[id(p)] == n}
    prefix, idx = _layer_prefix(names)
    hidden = _cfg_get(cfg, "hidden_size", "n_embd", "d_model") if cfg is not None else None
    heads = _cfg_get(cfg, "num_attention_heads", "n_head", "num_heads") if cfg is not None else None
    ffn = (_cfg_get(cfg, "intermediate_size", "n_inner", "ffn_dim", "d_ff") if cfg is not None else None) or (4 * hidden if hidden else None)
    vocab = _cfg_get(cfg, "vocab_size") if cfg is not None else None
    layer, split = {}, {}
    first = idx[0] if idx else 0
    for n in names:
        if prefix and n.startswith(prefix + "."):
            i = int(n[len(prefix) + 1:].split(".")[0]) - first
            layer[n] = i
            split[n] = bool(_SPLIT_MODULE.search(n[len(prefix) + 1:]))
        else:
            before = not prefix or names.index(n) < next((k for k, m in enumerate(names) if m.startswith(prefix + ".")), len(names))
            layer[n] = -1 if before else len(idx)
            shape = dict(named)[n].shape
            split[n] = bool(vocab) and vocab in tuple(shape)
    return ModelLayout(block_prefix=prefix, n_layers=len(idx), hidden=hidden, heads=heads, ffn=ffn, vocab=vocab, tied=tied,
                       param_numel=numel, param_layer=layer, param_split=split)


def _op_layer(ops: pd.DataFrame, n_layers: int) -> np.ndarray:
    """Layer index of each per-op row from its module path: -1 for modules the forward pass runs before the first
    layer (embeddings), ``n_layers`` for the others outside the layers (final norm, head, loss, optimizer)."""
    modules = ops["module"].astype(str)
    prefix, idx = _layer_prefix(modules.unique())
    out = np.full(len(ops), n_layers, dtype=int)
    if not prefix or not idx:
        return out
    pat = re.compile(r"^" + re.escape(prefix) + r"\.(\d+)(\.|$)")
    hits = modules.str.extract(pat)[0]
    inside = hits.notna().to_numpy()
    out[inside] = hits[inside].astype(int).to_numpy() - idx[0]
    fwd = (ops["phase"] == "forward").to_numpy()
    first = int(np.argmax(inside & fwd)) if (inside & fwd).any() else len(ops)
    pre = set(modules[:first][fwd[:first]]) - {""}
    out[(~inside) & modules.isin(pre).to_numpy()] = -1
    return out


def _divide_rows(work: pd.DataFrame, mask: np.ndarray, n: int, tokens: int) -> pd.DataFrame:
    """Work rows with the rows under ``mask`` split ``n`` ways: FLOPs, bytes and tiles / n, and one dimension / n
    (the batch of a batched matmul, else the largest matmul dimension other than the token count; the rows of other
    kernels)."""
    w = work.copy()
    if not mask.any() or n == 1:
        return w
    for c in ("flops", "bytes", "tiles"):
        w.loc[mask, c] = w.loc[mask, c] / n
    mm = mask & (w["op_class"].isin(["matmul", "conv"])).to_numpy()
    batched = mm & (w["dim_b"].to_numpy() > 1)
    w.loc[batched, "dim_b"] = w.loc[batched, "dim_b"] / n
    plain = np.flatnonzero(mm & ~batched)
    if len(plain):
        dims = w.iloc[plain][["dim_m", "dim_n", "dim_k"]].to_numpy(float)
        dims_no_tok = np.where(np.isclose(dims, tokens), -1.0, dims)
        col = np.argmax(dims_no_tok, axis=1)
        for r, c in zip(plain, col):
            name = ("dim_m", "dim_n", "dim_k")[c]
            w.iat[r, w.columns.get_loc(name)] = max(w.iat[r, w.columns.get_loc(name)] / n, 1.0)
    other = mask & ~mm
    w.loc[other, "dim_m"] = np.maximum(w.loc[other, "dim_m"] / n, 1.0)
    return w


def _scale_rows(work: pd.DataFrame, mask: np.ndarray, f: float) -> pd.DataFrame:
    """Work rows with FLOPs, bytes, tiles and rows of the rows under ``mask`` times ``f`` (an optimizer over a share
    of the parameters)."""
    w = work.copy()
    if mask.any() and f != 1:
        for c in ("flops", "bytes", "tiles", "dim_m"):
            w.loc[mask, c] = np.maximum(w.loc[mask, c] * f, 1.0 if c == "dim_m" else 0.0)
    return w


def _tp_split_mask(work: pd.DataFrame, layer: np.ndarray, lay: ModelLayout) -> np.ndarray:
    """Rows Megatron's tensor parallelism splits: inside a layer, every kernel of an attention or MLP submodule but
    those on the hidden state (the bias, dropout of a row-parallel output); outside the layers, every kernel with a
    vocabulary-sized dimension (embedding, output projection, loss)."""
    mods = work["module"].astype(str).to_numpy()
    prefix, _ = _layer_prefix(pd.unique(work["module"].astype(str)))
    inside = (layer >= 0) & (layer < lay.n_layers)
    rel = np.array([m[len(prefix) + 1:].split(".", 1)[-1] if (prefix and m.startswith(prefix + ".")) else "" for m in mods])
    in_split = inside & np.array([bool(_SPLIT_MODULE.search("." + r)) if r else False for r in rel])
    is_mm = work["op_class"].isin(["matmul", "conv", "softmax"]).to_numpy()
    hidden_state = (~is_mm) & (work["dim_k"].to_numpy(float) == float(lay.hidden or -1))
    mask = in_split & (is_mm | ~hidden_state)
    if lay.vocab:
        dims = work[["dim_m", "dim_n", "dim_k"]].to_numpy(float)
        mask |= (~inside) & (work["phase"] != "optimizer").to_numpy() & (dims == float(lay.vocab)).any(axis=1)
    return mask


def predict_parallel_step_time(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high=None,
                               precision: str = "fp32", optimizer: str | None = "sgd-momentum", alpha: float = 0.2,
                               inference: bool = False, n_gpus: int = 2, strategy: str = "dp", micro_batches: int | None = None,
                               interconnect=None, overlap_grad_reduce: bool = True) -> pd.DataFrame:
    """:func:`perfmodel.predict_step_time` on ``n_gpus`` GPUs with a parallel ``strategy`` (see the module docstring);
    ``batch_size`` is the global batch. Prefer calling :func:`perfmodel.predict_step_time` with ``n_gpus=``."""
    import torch

    from perfmodel.models import op_step_time as ost
    from perfmodel.models.op_latency import TRAINING_GPUS

    prec = ost._check_step_args(alpha, optimizer, inference, precision, batch_size)
    strat = check_strategy_name(strategy)
    if inference:
        raise ValueError("inference=True predicts one forward pass on one GPU; parallel strategies model training steps "
                         "(pass n_gpus=1 for inference).")
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    n = int(n_gpus)
    if micro_batches is None:
        m = 1
    elif isinstance(micro_batches, bool) or not isinstance(micro_batches, (int, np.integer)) or micro_batches < 1:
        raise ValueError(f"micro_batches must be a positive int or None (1); got {micro_batches!r}.")
    else:
        m = int(micro_batches)
    B = int(batch_size)
    specs = ost._gpu_specs(gpus, prec)
    links = [resolve_interconnect(interconnect, s) for s in specs]
    if strat in ("dp", "fsdp"):
        if B % n:
            raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split over {n} GPUs. Use a batch_size "
                                f"that is a multiple of n_gpus (e.g. {n * max(B // n, 1)} or {n * (B // n + 1)}).")
        if (B // n) % m:
            raise StrategyError(f"strategy={strat!r}: the per-GPU batch {B // n} does not split into micro_batches={m}. "
                                "Use micro_batches that divides batch_size / n_gpus.")
        b_rank = B // n // m
    else:
        if B % m:
            raise StrategyError(f"strategy={strat!r}: the global batch {B} does not split into micro_batches={m}. Use "
                                "micro_batches that divides batch_size.")
        b_rank = B // m
    net, shape, in_dtype, vocab, name, lay = model_and_layout(model, input_shape, input_dtype)
    if strat == "tp":
        if not (lay.heads and lay.hidden):
            raise StrategyError(f"strategy='tp' splits attention heads and hidden columns, but {name} has no config with "
                                "num_attention_heads / hidden_size. Pass a Hugging Face config or model, or use 'dp', "
                                "'fsdp' or 'pp'.")
        bad = [f"{what} = {v}" for what, v in (("attention heads", lay.heads), ("hidden size", lay.hidden), ("MLP size", lay.ffn))
               if v and v % n]
        if bad:
            raise StrategyError(f"strategy='tp' over {n} GPUs does not divide {name}: {', '.join(bad)} not divisible by {n}. "
                                f"Use n_gpus that divides them, or 'dp' / 'fsdp' / 'pp'.")
    if strat == "pp" and lay.n_layers < n:
        raise StrategyError(f"strategy='pp' over {n} stages needs at least {n} layers; {name} has {lay.n_layers} "
                            f"{'repeated layers' if lay.n_layers else 'repeated layers (none found)'}. Use fewer GPUs "
                            "(n_gpus <= layers) or 'dp' / 'fsdp'.")
    high = int(input_high) if input_high is not None else vocab
    ops = ost._step_ops(net, shape, in_dtype, high, batch_size=b_rank, prec=prec, optimizer=optimizer, inference=False)
    work = ost.work_from_ops(ops).reset_index(drop=True)
    if work.empty:
        raise ValueError(f"{name} launches no kernel in a training step (no operator moves data): nothing to predict.")
    layer = _op_layer(work, lay.n_layers)
    phase = work["phase"].to_numpy()
    is_opt = phase == "optimizer"
    size = torch.empty((), dtype=getattr(torch, ost.PRECISION_DTYPES[prec])).element_size()
    P = lay.params
    tokens = b_rank * int(np.prod(shape)) if in_dtype in (torch.long, torch.int, torch.int64) else b_rank
    act_bytes = float(tokens * (lay.hidden or 0) * size)
    if strat == "tp":
        split_params = sum(v for k, v in lay.param_numel.items() if lay.param_split[k])
        work = _divide_rows(work, _tp_split_mask(work, layer, lay), n, tokens)
        work = _scale_rows(work, is_opt, (split_params / n + (P - split_params)) / P)
    elif strat == "fsdp":
        work = _scale_rows(work, is_opt, 1 / n)
    stage = None
    if strat == "pp":
        bounds = np.array_split(np.arange(lay.n_layers), n)
        of_layer = np.concatenate([np.full(len(b), s) for s, b in enumerate(bounds)])
        stage = np.where(layer < 0, 0, np.where(layer >= lay.n_layers, n - 1, of_layer[np.clip(layer, 0, lay.n_layers - 1)]))
        stage_params = np.zeros(n)
        for k, v in lay.param_numel.items():
            li = lay.param_layer[k]
            s = 0 if li < 0 else (n - 1 if li >= lay.n_layers else of_layer[li])
            stage_params[s] += v
            if lay.tied and lay.vocab and lay.vocab in tuple(dict(net.named_parameters())[k].shape) and s == 0:
                stage_params[n - 1] += v  # Megatron keeps a copy of the tied embedding on the last stage
    q, interval = ost._interval(alpha)
    rows, far = [], []
    for spec, link in zip(specs, links):
        t = ost._kernel_seconds(work, spec, prec)
        fwd = float(t[phase == "forward"].sum())
        bwd = float(t[phase == "backward"].sum())
        opt = float(t[is_opt].sum())
        bubble = 0.0
        if strat == "dp":
            exposed, comm_total = exposed_bucket_allreduce(bwd, P * size, n, link, overlap=overlap_grad_reduce)
            compute = m * (fwd + bwd) + opt
            step = compute + exposed
            f_rank, b_rank_s, o_rank = m * fwd, m * bwd, opt
        elif strat == "fsdp":
            units = max(lay.n_layers, 1)
            ag = allgather_time(P * size, n, link)
            rs = reduce_scatter_time(P * size, n, link)
            f_pass = max(fwd, ag) + ag / units
            b_pass = max(bwd, ag + rs) + rs / units
            compute = m * (fwd + bwd) + opt
            step = m * (f_pass + b_pass) + opt
            exposed, comm_total = step - compute, m * (2 * ag + rs)
            f_rank, b_rank_s, o_rank = m * fwd, m * bwd, opt
        elif strat == "tp":
            per = allreduce_time(act_bytes, n, link)
            n_ar = 4 * lay.n_layers + 2
            exposed = comm_total = m * n_ar * per
            compute = m * (fwd + bwd) + opt
            step = compute + exposed
            f_rank, b_rank_s, o_rank = m * fwd, m * bwd, opt
        else:  # pp
            st_fb = np.array([float(t[(stage == s) & ~is_opt].sum()) for s in range(n)])
            st_opt = opt * stage_params / P
            hop = p2p_time(act_bytes, link)
            pipe, bubble = pipeline_time(st_fb, m, p2p_s=hop)
            tied_ar = allreduce_time(lay.vocab * lay.hidden * size, 2, link) if (lay.tied and lay.vocab and lay.hidden) else 0.0
            o_rank = float(st_opt.max())
            step = pipe + tied_ar + o_rank
            exposed = comm_total = 2 * hop * ((n - 1) + (m - 1)) + tied_ar
            compute = step - exposed - bubble
            sb = int(np.argmax(st_fb))
            f_rank = m * float(t[(stage == sb) & (phase == "forward")].sum())
            b_rank_s = m * float(t[(stage == sb) & (phase == "backward")].sum())
        work_s = step - exposed
        far += ost._extrapolation_notes(spec)
        rows.append(dict(model=name, gpu=spec.gpu, batch_size=B, precision=prec, optimizer=optimizer or "none",
                         step_time_s=step, lower_s=work_s * np.exp(-q) + exposed, upper_s=work_s * np.exp(q) + exposed,
                         forward_s=f_rank, backward_s=b_rank_s, optimizer_s=o_rank, n_kernels=len(work),
                         flops=float(work.loc[~is_opt, "flops"].sum()) * m, n_gpus=n, strategy=strat, micro_batches=m,
                         interconnect=link.name, compute_s=compute, comm_s=exposed, comm_total_s=comm_total, bubble_s=bubble,
                         basis=f"{strat} over {n} GPUs ({link.name}, {link.bandwidth_gb_per_s:g} GB/s per direction x "
                               f"{link.efficiency:g}): per-GPU operators, each roofline x efficiency learned on NeuSight "
                               f"microbenchmarks of {', '.join(TRAINING_GPUS)} (FP32), plus alpha-beta communication; "
                               f"interval on the compute only: {interval}"))
    ost._warn_extrapolation(far, prec)
    return pd.DataFrame(rows)

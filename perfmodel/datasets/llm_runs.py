"""Loaders for large-language-model measurements: Vidur's operator and NCCL profiles, torchtitan's published training runs.

microsoft/vidur (MLSys'24, commit ``7d47513``, MIT)
    ``data/profiling/compute/<gpu>/<org>/<model>/mlp.csv``: FP16 forward (inference-mode) times of the operators of one
    transformer layer outside attention, profiled on **one** GPU holding a ``1/tp`` tensor-parallel shard (Vidur's
    ``vidur/profiling/mlp/``: the model is cast to ``torch.float16``, 2 warm-up then 20 timed forward passes; min, max,
    mean, median and std over them, in ms; CUDA kernel times from the PyTorch profiler (Kineto)). The attention kernel
    itself is in ``attention.csv``, which the mirror does not hold.
    ``data/profiling/network/<system>/{all_reduce,send_recv}.csv``: NCCL collective times (ms) versus message size
    and number of GPUs (``vidur/profiling/collectives/``).
pytorch/torchtitan (BSD-3-Clause)
    Three benchmark reports under ``benchmarks/`` and ``docs/performance.md``: published training throughput (tokens/s
    per GPU), peak memory (GiB) and MFU of Llama 2 / 3 / 3.1 runs, the configuration of each table in its heading and
    the prose around it.

Every file is registered in ``datasets/registry.csv`` with its sha256 and hash-checked on every load.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError
from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets._registry import entry, keys_under, read_bytes, read_csv
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.names import canonical_gpu
from perfmodel.datasets.neusight import _unknown

__all__ = [
    "GRAND_TETON_H100",
    "torchtitan_gpu_spec",
    "VISIBLE_MEMORY_SHARE",
    "device_memory_gib",
    "gpu_of_device_memory",
    "VIDUR_OPERATORS",
    "VIDUR_GPUS",
    "VIDUR_SYSTEMS",
    "TORCHTITAN_FILES",
    "load_vidur_operators",
    "load_vidur_collectives",
    "load_torchtitan_runs",
    "DATASETS",
]

_STATS = ("min", "max", "mean", "median", "std")

#: What each Vidur operator name times (``vidur/profiling/mlp/mlp_impl.py``; one GPU's ``1/tp`` shard, no collective).
VIDUR_OPERATORS = {
    "emb": "token-embedding lookup (VocabParallelEmbedding: vocab_size/tp rows of n_embd)",
    "input_layernorm": "norm before attention (RMSNorm, or LayerNorm for phi-2)",
    "attn_pre_proj": "fused QKV projection (ColumnParallelLinear n_embd -> (n_head + 2 n_kv_head) * head_dim / tp)",
    "attn_rope": "rotary position embedding applied to q and k",
    "attn_post_proj": "attention output projection (RowParallelLinear n_head * head_dim / tp -> n_embd), without its all-reduce",
    "post_attention_layernorm": "RMSNorm before the MLP (absent for phi-2, whose attention and MLP run in parallel on one norm)",
    "mlp_up_proj": "MLP up projection (gate and up fused, n_embd -> 2 n_expanded_embd / tp, when use_gated_mlp; else n_embd -> n_expanded_embd / tp)",
    "mlp_act": "MLP activation (SiLU-and-multiply when use_gated_mlp, else GELU)",
    "mlp_down_proj": "MLP down projection (RowParallelLinear n_expanded_embd / tp -> n_embd), without its all-reduce",
    "add": "residual addition(s) of the layer",
}

#: Vidur's compute folders -> perfmodel catalog id (None: the GPU is not in the catalog).
#: ``a100``: Vidur's README lists two A100 systems, "A100 80GB DGX" (SXM4) and "4xA100 80GB Pairwise NVLink Node", and
#: docs/profiling.md says one ``a100`` compute folder serves both; it names the pairwise node Azure Standard_NC96ads_A100_v4
#: (A100 80GB **PCIe** cards, NVLink-bridged in pairs), profiles its example with ``--num_gpus 4`` (that node's size), and
#: the commit adding the Llama 3 A100 profiles reads "Support Llama3 8B and 70B ... on a100_pairwise_nvlink". We therefore
#: read ``a100`` as the A100 80GB PCIe (assumption: Vidur does not name the card of its compute profiles).
#: ``h100``: only the H100 DGX (SXM5 80GB) is listed by Vidur for H100.
#: ``a40``: None although the catalog now has an ``A40`` row: Vidur's A40 rows keep ``gpu_in_catalog`` False, as when
#: the shipped fits were made, so that its pairwise-NVLink send/recv stays out of the NCCL fit
#: (:mod:`perfmodel.step.collectives`) and its compute rows are described by
#: :data:`perfmodel.step.half_precision.A40_SPEC` (the same part and rates as the catalog row).
VIDUR_GPUS = {"a100": "A100-PCIe-80GB", "h100": "H100", "a40": None}

#: Vidur's network folders -> (catalog id or None, description). ``h100_pairwise_nvlink``: Vidur does not describe it;
#: NVLink-bridged pairs are PCIe cards (assumed H100 PCIe), and its ``send_recv.csv`` is byte-identical to
#: ``a100_pairwise_nvlink/send_recv.csv`` upstream (a copy of the A100 measurements).
VIDUR_SYSTEMS = {
    "a100_dgx": ("A100-SXM4-80GB", "A100 80GB DGX: 8 SXM4 GPUs, all NVLink-connected"),
    "h100_dgx": ("H100", "H100 DGX: 8 SXM5 GPUs, all NVLink-connected"),
    "a100_pairwise_nvlink": ("A100-PCIe-80GB", "Azure Standard_NC96ads_A100_v4: 4 A100 80GB PCIe, NVLink within pairs"),
    "h100_pairwise_nvlink": ("H100-PCIe", "H100 node with NVLink within pairs (not described by Vidur; send_recv.csv is a copy of a100_pairwise_nvlink's)"),
    "a40_pairwise_nvlink": (None, "8xA40 node, NVLink within pairs (send_recv only)"),
}

_NOT_IN_CATALOG = ("Vidur's A40 rows are kept apart from the catalog (VIDUR_GPUS: as when the shipped fits were made); "
                   "gpu holds NVIDIA's name, which is also the catalog's A40 id")


def _vidur_gpu(folder: str, key: str) -> tuple[str, bool]:
    if folder not in VIDUR_GPUS:
        raise DataFormatError(f"{key}: Vidur GPU folder {folder!r} has no catalog mapping; expected one of {sorted(VIDUR_GPUS)}. "
                              "Add it to perfmodel.datasets.llm_runs.VIDUR_GPUS.")
    gid = VIDUR_GPUS[folder]
    return (gid, True) if gid is not None else (folder.upper(), False)


def _check(what: str, got, valid) -> None:
    if got is not None and got not in set(valid):
        raise _unknown(what, got, sorted(set(valid)))


@cached_frame
def _vidur_mlp_file(key: str) -> pd.DataFrame:
    shape = ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"]
    d = read_csv(key, required_columns=shape)
    ops = [c[len("time_stats."):-len(".mean")] for c in d.columns if c.startswith("time_stats.") and c.endswith(".mean")]
    unknown = [o for o in ops if o not in VIDUR_OPERATORS]
    if unknown:
        raise DataFormatError(f"{entry(key).key}: unknown Vidur operator(s) {unknown}; expected a subset of {list(VIDUR_OPERATORS)}.")
    parts = []
    for op in ops:
        cols = {f"time_stats.{op}.{s}": f"time_ms_{s}" for s in _STATS}
        missing = [c for c in cols if c not in d.columns]
        if missing:
            raise DataFormatError(f"{entry(key).key} lacks {missing} for operator {op!r}.")
        p = d[shape + list(cols)].rename(columns=cols)
        p.insert(0, "operator", op)
        parts.append(p)
    return pd.concat(parts, ignore_index=True)


@cached_frame
def load_vidur_operators(gpu: str | None = None) -> pd.DataFrame:
    """Vidur's FP16 per-operator times of one transformer layer: one row per (GPU, model, num_tokens, tp, operator).

    From microsoft/vidur ``data/profiling/compute/{a100,h100,a40}/<org>/<model>/mlp.csv`` (commit ``7d47513``, MIT;
    Agrawal et al., "Vidur: A Large-Scale Simulation Framework for LLM Inference", MLSys'24). One GPU runs the layer's
    ``1/tp`` tensor-parallel shard forward in ``torch.inference_mode`` with ``num_tokens`` tokens (prefill and decode
    tokens alike); 2 warm-up then 20 timed passes, CUDA kernel times from the PyTorch profiler (Kineto). Times exclude
    the tensor-parallel all-reduces (see :func:`load_vidur_collectives`) and the attention kernel (upstream
    ``attention.csv``, not mirrored).

    Parameters
    ----------
    gpu : str, optional
        Vidur's folder name (``"a100"``, ``"h100"``, ``"a40"``): read only that GPU's files.

    Returns
    -------
    DataFrame
        One row per (gpu, model, num_tokens, tp, operator) (200,127 rows × 20 columns for the three GPUs; Vidur's
        files repeat some (num_tokens, tp) profiles: 1,654 rows share their key with another and are kept): ``gpu`` (catalog id: ``A100-PCIe-80GB``, ``H100``; ``A40`` is not
        in the catalog, see ``gpu_in_catalog``), ``gpu_in_catalog`` (bool), ``source_gpu`` (Vidur's folder), ``model``
        (Hugging Face name, e.g. ``meta-llama/Llama-2-7b-hf``), ``operator`` (Vidur's name, see :data:`VIDUR_OPERATORS`),
        ``num_tokens``, ``tp`` (tensor-parallel degree), ``n_head``, ``n_kv_head``, ``n_embd``, ``n_expanded_embd``
        (MLP hidden size), ``vocab_size``, ``use_gated_mlp`` (bool), ``time_ms_min``, ``time_ms_max``,
        ``time_ms_mean``, ``time_ms_median``, ``time_ms_std`` (ms, over the 20 passes), ``dtype`` (``"float16"``),
        ``source_file``.

    Assumption: the ``a100`` folder is read as the A100 80GB PCIe (see :data:`VIDUR_GPUS` for the evidence).

    Raises
    ------
    UnknownNameError
        ``gpu`` is not one of Vidur's compute folders.
    """
    root = "VD:profiling/compute"
    keys = [k for k in keys_under(root) if k.endswith("/mlp.csv")]
    prefix = entry(keys[0]).key.split("/profiling/compute/")[0] + "/profiling/compute/" if keys else ""
    folders = sorted({k[len(prefix):].split("/")[0] for k in keys})
    _check("Vidur GPU folder", gpu, folders)
    frames = []
    for k in keys:
        rel = k[len(prefix):].split("/")
        if len(rel) != 4:
            raise DataFormatError(f"{k}: expected profiling/compute/<gpu>/<org>/<model>/mlp.csv.")
        folder, model = rel[0], f"{rel[1]}/{rel[2]}"
        if gpu is not None and folder != gpu:
            continue
        gid, known = _vidur_gpu(folder, k)
        d = _vidur_mlp_file(k)
        d.insert(0, "model", model)
        d.insert(0, "source_gpu", folder)
        d.insert(0, "gpu_in_catalog", known)
        d.insert(0, "gpu", gid)
        d["source_file"] = k
        frames.append(d)
    df = pd.concat(frames, ignore_index=True).rename(columns={"num_tensor_parallel_workers": "tp"})
    df["use_gated_mlp"] = df["use_gated_mlp"].astype(bool)
    for c in ("num_tokens", "tp", "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size"):
        df[c] = df[c].astype("int64")
    df["dtype"] = "float16"
    cols = ["gpu", "gpu_in_catalog", "source_gpu", "model", "operator", "num_tokens", "tp", "n_head", "n_kv_head", "n_embd",
            "n_expanded_embd", "vocab_size", "use_gated_mlp", *[f"time_ms_{s}" for s in _STATS], "dtype", "source_file"]
    df = df[cols].sort_values(["source_gpu", "model", "tp", "num_tokens", "operator"], kind="stable").reset_index(drop=True)
    for c in ("gpu", "source_gpu", "model", "operator", "source_file"):
        df[c] = df[c].astype("category")
    return df


@cached_frame
def load_vidur_collectives(system: str | None = None) -> pd.DataFrame:
    """Vidur's NCCL collective times: one row per measurement (system, collective, n_gpus, devices_per_node, size).

    From microsoft/vidur ``data/profiling/network/<system>/{all_reduce,send_recv}.csv`` (commit ``7d47513``, MIT).
    Vidur's ``vidur/profiling/collectives/collectives_impl.py`` runs ``torch.distributed.all_reduce`` (or a
    ``send``/``recv`` pair from rank 0 to rank 1) on a buffer ``torch.empty(size=(size,), dtype=torch.float16)``,
    captured in a CUDA graph; its ``--max_collective_size`` is documented as the "Maximum number of elements involved
    in the collective", but the row it writes holds ``"size": self._size * 2,  # bytes``
    (``vidur/profiling/collectives/collectives_wrapper.py``, ``CollectiveWrapper.profile``), and Vidur's own predictor
    reads it back as bytes (``size / embedding_dim / 2`` tokens, ``sklearn_execution_time_predictor.py``); the largest
    upstream ``size``, 67,108,864, is twice the default ``--max_collective_size`` of 4096 × 8192 elements. So ``size``
    is already the **message in bytes** (float16 elements × 2) and ``message_bytes = size``. Times are the median over
    the NCCL kernels rank 0 ran (the only rank upstream files hold; Vidur's ``CudaTimer(filter_str="nccl")`` on kineto
    traces), in ms.

    Parameters
    ----------
    system : str, optional
        Vidur's network folder (see :data:`VIDUR_SYSTEMS`): read only that system's files.

    Returns
    -------
    DataFrame
        26,364 rows × 15 columns: ``system`` (Vidur's folder: ``a100_dgx``, ``h100_dgx``, ``a100_pairwise_nvlink``, ``h100_pairwise_nvlink``,
        ``a40_pairwise_nvlink``), ``gpu`` (catalog id, ``A40`` outside the catalog), ``gpu_in_catalog``,
        ``collective`` (``all_reduce``, ``send_recv``), ``n_gpus`` (upstream ``num_workers``), ``devices_per_node``
        (GPUs used per node: fewer than ``n_gpus`` means the collective crosses nodes), ``max_devices_per_node`` (GPUs
        in a node), ``size`` (upstream's column: bytes), ``message_bytes`` (= ``size``), ``time_ms_min``, ``time_ms_max``,
        ``time_ms_mean``, ``time_ms_median``, ``time_ms_std``, ``source_file``. Upstream quirks: ``a40_pairwise_nvlink``
        has no ``all_reduce.csv``; ``h100_pairwise_nvlink/send_recv.csv`` is byte-identical to
        ``a100_pairwise_nvlink/send_recv.csv``.

    Raises
    ------
    UnknownNameError
        ``system`` is not one of Vidur's network folders.
    """
    keys = [k for k in keys_under("VD:profiling/network") if k.endswith(".csv")]
    folders = sorted({k.split("/")[-2] for k in keys})
    _check("Vidur network system", system, folders)
    frames = []
    for k in keys:
        folder, name = k.split("/")[-2:]
        if system is not None and folder != system:
            continue
        if folder not in VIDUR_SYSTEMS:
            raise DataFormatError(f"{k}: Vidur network folder {folder!r} has no GPU mapping; expected one of {sorted(VIDUR_SYSTEMS)}. "
                                  "Add it to perfmodel.datasets.llm_runs.VIDUR_SYSTEMS.")
        coll = name[: -len(".csv")]
        stats = [f"time_stats.{coll}.{s}" for s in _STATS]
        d = read_csv(k, required_columns=[*stats, "num_workers", "size", "collective", "devices_per_node", "max_devices_per_node"],
                     numeric_columns=stats)
        if set(d["collective"]) != {coll}:
            raise DataFormatError(f"{k}: column 'collective' holds {sorted(set(d['collective']))}; expected only {coll!r}.")
        gid, _ = VIDUR_SYSTEMS[folder]
        out = pd.DataFrame({
            "system": folder, "gpu": gid if gid is not None else folder.split("_")[0].upper(), "gpu_in_catalog": gid is not None,
            "collective": coll, "n_gpus": d["num_workers"].astype("int64"), "devices_per_node": d["devices_per_node"].astype("int64"),
            "max_devices_per_node": d["max_devices_per_node"].astype("int64"), "size": d["size"].astype("int64"),
        })
        out["message_bytes"] = out["size"]  # upstream writes size = elements * 2 bytes
        for s, c in zip(_STATS, stats):
            out[f"time_ms_{s}"] = d[c].astype(float)
        out["source_file"] = k
        frames.append(out)
    df = pd.concat(frames, ignore_index=True)
    df = df.sort_values(["system", "collective", "n_gpus", "devices_per_node", "size"], kind="stable").reset_index(drop=True)
    for c in ("system", "gpu", "collective", "source_file"):
        df[c] = df[c].astype("category")
    return df


# ---------------------------------------------------------------------------------------------------------------- torchtitan

TORCHTITAN_FILES = (
    "TT:benchmarks/llama3_h100_202412_torchtitan.md",
    "TT:benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md",
    "TT:benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md",
    "TT:docs/performance.md",
)

#: Configuration stated only in prose, by (file, table heading prefix). Configuration, never results.
_PROSE_CONFIG = {
    # docs/performance.md: "the default sequence length in Llama 2 is 4096 which is halved compared with Llama 3"
    ("docs/performance.md", "Llama 3 performance"): {"seq_len": 8192},
    ("docs/performance.md", "Llama 2 performance"): {"seq_len": 4096},
    # asyncTP_llama3_h100_2025-06: the columns read "tokens/sec", the heading does not say per GPU; the same run as
    # llama3_h100_202412 Table 4 (Llama 3.1 70B, 256 H100, FSDP 32, TP 8, compile, Float8, full AC, local batch 16)
    # published "829" TPS/GPU there and 809.8 here (float8 tensorwise, vanilla TP): the numbers are per GPU.
}

_COLS = ["source_file", "table", "model", "gpu", "source_gpu", "n_gpus", "fsdp", "tp", "pp", "cp", "activation_checkpointing",
         "selective_ac", "compile", "float8", "float8_recipe", "async_tp", "pp_schedule", "local_batch_size", "global_batch_size",
         "seq_len", "tokens_per_s_per_gpu", "memory_gib", "mfu_pct", "config_text", "note"]


def _num(cell: str) -> float:
    s = cell.strip().rstrip("%").replace(",", "").strip()
    try:
        return float(s)
    except ValueError:
        raise DataFormatError(f"expected a number in a torchtitan table cell, got {cell!r}.") from None


def _md_blocks(text: str) -> list[dict]:
    """Markdown tables with their section heading, caption (last paragraph line before them) and the prose since the heading."""
    lines = text.splitlines()
    out, heading, prose, i, in_code = [], "", [], 0, False
    while i < len(lines):
        ln = lines[i].strip()
        if ln.startswith("```"):
            in_code = not in_code
            prose.append(lines[i])
            i += 1
            continue
        if not in_code and ln.startswith("#"):
            heading, prose = ln.lstrip("#").strip(), []
        elif not in_code and ln.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            caption = next((p.strip() for p in reversed(prose) if p.strip() and not p.strip().startswith("```")), "")
            body = [r for r in rows[1:] if not all(set(c) <= set(":- ") for c in r)]
            out.append(dict(heading=heading, caption=caption, prose="\n".join(prose), header=rows[0], rows=body))
            prose = []
            continue
        else:
            prose.append(lines[i])
        i += 1
    return out


def _section(text: str, name: str) -> str:
    m = re.search(rf"^#+\s*{name}\s*$(.*?)(?=^#+\s|\Z)", text, flags=re.M | re.S | re.I)
    return m.group(1) if m else ""


def _models_listed(text: str) -> dict[str, str]:
    """``{"8B": "Llama 3.1", ...}`` from a ``### Models`` section reading e.g. ``Llama 3.1 8B, 70B, 405B``."""
    sec = _section(text, "Models")
    m = re.search(r"Llama (\d(?:\.\d)?) ((?:\d+B(?:,\s*)?)+)", sec)
    return {s.strip(): f"Llama {m.group(1)}" for s in m.group(2).split(",")} if m else {}


def _source_gpu(text: str) -> str:
    """The GPU as the file's Hardware section describes it, e.g. ``H100 96GB HBM2e 500W`` or ``H200``."""
    hw = _section(text, "Hardware")
    chip = re.search(r"\d+ NVIDIA (\w+) GPUs", hw)
    if chip is None:
        return ""
    parts = [chip.group(1)]
    mem = re.search(r"(\d+GB) (HBM\w*)", hw)
    if mem:
        parts += [mem.group(1), mem.group(2)]
    watts = re.search(r"default (\d+W) power limit", hw)
    if watts:
        parts.append(f"{watts.group(1)} power limit")
    return " ".join(parts)


#: The H100 of torchtitan's two H100 benchmark files, as the files describe it (``benchmarks/llama3_h100_202412_torchtitan.md``,
#: Hardware section and footnote 2): "96GB HBM2e with 2.4 TB/sec peak memory bandwidth", "the default 500W power limit",
#: and a peak "between SXM and NVL, and we don't know its exact value". Not a catalog part (Meta's Grand Teton
#: H100): the H100 SXM5's spec with the stated memory, bandwidth and power, and each peak rate the midpoint of the
#: H100 SXM5's and the H100 NVL's datasheet rates — the middle of the range the file gives, set from the file alone.
GRAND_TETON_H100 = dict(gpu="H100-96GB-HBM2e-500W", base="H100", between="H100-NVL", memory_gib=96.0,
                        memory_bandwidth_gb_per_s=2400.0, tdp_w=500.0)


def torchtitan_gpu_spec(source_gpu: str):
    """The GPU a torchtitan run was measured on, as perfmodel predicts for it (:class:`~perfmodel.datasets.GPUSpec`):
    the catalog GPU of :func:`load_torchtitan_runs`'s ``gpu``, or for the Grand Teton H100 (``"H100 96GB HBM2e 500W
    power limit"``) the part the file describes (:data:`GRAND_TETON_H100`)."""
    import dataclasses

    from perfmodel.datasets.gpus import PRECISIONS, gpu_spec

    if not re.match(r"H100 96GB HBM2e", source_gpu or ""):
        return gpu_spec(_gpu_of(source_gpu)[0])
    g = GRAND_TETON_H100
    base, other = gpu_spec(g["base"]), gpu_spec(g["between"])
    rates = {col: (getattr(base, col) + getattr(other, col)) / 2 for col in PRECISIONS.values()}
    return dataclasses.replace(base, gpu=g["gpu"], memory_gib=g["memory_gib"], tdp_w=g["tdp_w"],
                               memory_bandwidth_gb_per_s=g["memory_bandwidth_gb_per_s"], **rates)


#: the least share of its nominal memory a GPU reports to torch as its total (the driver and ECC keep the rest): an
#: H100 80GB HBM3 logs 79.1 GiB (``load_torchtitan_memory_logs``' reference row, 98.9 %)
VISIBLE_MEMORY_SHARE = 0.97


def device_memory_gib(logs: pd.DataFrame) -> pd.Series:
    """The device memory each logged torchtitan line implies, in GiB: ``logged_memory_gib / logged_memory_pct · 100``
    (torchtitan's ``DeviceMemoryMonitor`` logs the peak reserved memory as a share of
    ``torch.cuda.get_device_properties(...).total_memory``); ``logs`` as
    :func:`perfmodel.datasets.load_torchtitan_memory_logs`."""
    pct = logs["logged_memory_pct"].astype(float)
    ok = pct.between(0, 100, inclusive="right")
    if not ok.all():
        raise DataFormatError(f"logged memory shares must lie in (0, 100] % of the device; got {sorted(set(pct[~ok]))}. "
                              "Transcribe the percentage torchtitan logs beside the GiB.")
    return logs["logged_memory_gib"].astype(float) / pct * 100


def gpu_of_device_memory(memory_gib: float, family: str):
    """The part of a GPU family a run ran on, from the device memory its logs imply (:func:`device_memory_gib`), as
    :func:`torchtitan_gpu_spec` predicts for it.

    The candidates are the catalog GPUs whose id begins with ``family`` and, for ``"H100"``, the Grand Teton H100
    (:data:`GRAND_TETON_H100`, 96 GB HBM2e at 500 W). A part fits when torch's total lies between
    :data:`VISIBLE_MEMORY_SHARE` of its nominal memory and all of it.

    Raises
    ------
    ValueError
        When no candidate or more than one fits, naming each candidate's range.
    """
    from perfmodel.datasets.gpus import gpu_spec
    from perfmodel.datasets.reference import load_gpu_catalog

    if not np.isfinite(memory_gib) or memory_gib <= 0:
        raise ValueError(f"gpu_of_device_memory: the device memory must be a positive number of GiB; got "
                         f"{memory_gib!r}.")
    ids = [g for g in load_gpu_catalog()["gpu"] if g == family or g.startswith(f"{family}-")]
    parts = [gpu_spec(g) for g in ids]
    if family == "H100":
        parts.append(torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit"))
    fits = [p for p in parts if VISIBLE_MEMORY_SHARE * p.memory_gib <= memory_gib <= p.memory_gib]
    if len(fits) != 1:
        ranges = ", ".join(f"{p.gpu} {VISIBLE_MEMORY_SHARE * p.memory_gib:.1f}-{p.memory_gib:.0f} GiB" for p in parts)
        raise ValueError(f"gpu_of_device_memory: {memory_gib:.2f} GiB of device memory fits "
                         f"{[p.gpu for p in fits] or 'no part'} of the {family!r} family ({ranges or 'no candidates'}); "
                         "expected exactly one. Name the part instead.")
    return fits[0]


def _gpu_of(source_gpu: str) -> tuple[str, str]:
    """Catalog id and a note; the Grand Teton H100 (96 GB HBM2e, 500 W) is not in the catalog and maps to the H100 SXM5."""
    if not source_gpu:
        raise DataFormatError("a torchtitan benchmark file names no GPU (expected 'Each host has <n> NVIDIA <GPU> GPUs' in its "
                              "Hardware section, or 'on <n> A100 (80GB) GPUs').")
    if re.match(r"H100 96GB HBM2e", source_gpu):
        return "H100", ("the catalog has no H100 96GB HBM2e at 500 W (Grand Teton); its closest catalog part is the H100 "
                        "SXM5 80GB, and it is predicted as the file describes it (torchtitan_gpu_spec: 2.4 TB/s, peak "
                        "rates between the SXM5's and the NVL's)")
    m = re.match(r"A100 \((\d+GB)\)", source_gpu)
    name = f"A100 {m.group(1)}" if m else source_gpu
    gid = canonical_gpu(name)
    note = "the file does not say SXM or PCIe; canonical_gpu reads an unqualified A100 80GB as the SXM4" if m else ""
    return gid, note


def _ac(text: str) -> tuple[str | None, str | None]:
    t = text.lower()
    if re.search(r"\bfull (ac|activation checkpointing)\b", t) or t.strip() == "full":
        return "full", None
    if "selective" in t or "sac" in t.split() or " sac" in t:
        mode = "op" if re.search(r"\bop\b|per op", t) else ("layer" if "layer" in t else None)
        return "selective", mode
    if t.strip() in ("no", "none"):
        return "none", None
    return None, None


def _degree(text: str, name: str) -> int | None:
    m = re.search(rf"\b{name}\s*=?\s*(\d+)", text)
    return int(m.group(1)) if m else None


def _titan_h100_2024(rel: str, text: str) -> list[dict]:
    """``llama3_h100_202412``: captions ``**Table N** <parallelism> + <techniques>. Llama 3.1 8B model. 8 GPUs. Local batch size 2,
    global batch size 16. Selective activation checkpointing.``; a row adds techniques, a parallelism or a PP schedule."""
    src_gpu = _source_gpu(text)
    gpu, gpu_note = _gpu_of(src_gpu)
    rows = []
    for b in _md_blocks(text):
        if not b["caption"].startswith("**Table"):
            continue
        cap = b["caption"]
        table = re.sub(r"\*\*", "", cap).strip()
        hdr = [h.lower() for h in b["header"]]
        for r in b["rows"]:
            cell = dict(zip(hdr, r))
            label = r[0]
            cfg = f"{table} Row: {label}."
            both = f"{cap} {label}"
            note = [gpu_note]
            n_gpus = int(re.search(r"(\d+) GPUs", cap).group(1))
            deg = {d: _degree(both, d.upper()) for d in ("fsdp", "tp", "pp", "cp")}
            for d in ("tp", "pp", "cp"):
                deg[d] = deg[d] or 1
            if deg["fsdp"] is None:
                deg["fsdp"] = n_gpus // (deg["tp"] * deg["pp"] * deg["cp"])
            if deg["fsdp"] * deg["tp"] * deg["pp"] * deg["cp"] != n_gpus:
                note.append("the parallel degrees do not multiply to the GPU count")
            ac, sel = _ac(cap)
            lbs = re.search(r"Local batch size (\d+)", cap, flags=re.I)
            gbs = re.search(r"global batch size (\d+)", cap, flags=re.I)
            seq = cell.get("sequence length")
            if seq is None:
                note.append("sequence length not stated in the file")
            sched = cell.get("schedule") or (re.search(r"\+ ((?:Interleaved )?1F1B)", cap).group(1) if re.search(r"\+ ((?:Interleaved )?1F1B)", cap) else None)
            model = re.search(r"(Llama \d(?:\.\d)? \d+B)", cap).group(1)
            rows.append(dict(
                source_file=rel, table=table, model=model, gpu=gpu, source_gpu=src_gpu, n_gpus=n_gpus, **deg,
                activation_checkpointing=ac, selective_ac=sel, compile="torch.compile" in both, float8="Float8" in both,
                float8_recipe=None, async_tp="AsyncTP" in both, pp_schedule=sched,
                local_batch_size=int(lbs.group(1)) if lbs else None, global_batch_size=int(gbs.group(1)) if gbs else None,
                seq_len=int(_num(seq)) if seq is not None else None, tokens_per_s_per_gpu=_num(cell["tps/gpu"]),
                memory_gib=_num(cell["memory(gib)"]), mfu_pct=None, config_text=cfg, note=note,
            ))
    return rows


def _titan_async_tp(rel: str, text: str) -> list[dict]:
    """``asyncTP_llama3_h100_2025-06``: headings ``Llama3 70b on 256 H100s with FSDP=32, TP=8, torch.compile, full AC, local
    batch size 16``; a row is a quantisation with a vanilla-TP and an async-TP throughput (two runs)."""
    src_gpu = _source_gpu(text)
    gpu, gpu_note = _gpu_of(src_gpu)
    listed = _models_listed(text)
    rows = []
    for b in _md_blocks(text):
        h = b["heading"]
        m = re.match(r"Llama ?(\d(?:\.\d)?) ?(\d+)b on (\d+) (\w+)s with (.*)$", h, flags=re.I)
        if m is None:
            continue
        size = f"{m.group(2)}B"
        family = listed.get(size, f"Llama {m.group(1)}")
        n_gpus = int(m.group(3))
        opts = m.group(5)
        deg = {d: _degree(opts, d.upper()) or 1 for d in ("tp", "pp", "cp")}
        fsdp = _degree(opts, "FSDP") or n_gpus // (deg["tp"] * deg["pp"] * deg["cp"])
        ac, sel = _ac(opts)
        lbs = re.search(r"local batch size (\d+)", opts)
        hdr = [x.lower() for x in b["header"]]
        i_van = next(i for i, x in enumerate(hdr) if x.startswith("vanilla tp"))
        i_async = next(i for i, x in enumerate(hdr) if x.startswith("async tp") and "speedup" not in x)
        for r in b["rows"]:
            quant = r[0]
            f8 = quant.lower().startswith("float8")
            for async_tp, i in ((False, i_van), (True, i_async)):
                rows.append(dict(
                    source_file=rel, table=h, model=f"{family} {size}", gpu=gpu, source_gpu=src_gpu, n_gpus=n_gpus, fsdp=fsdp, **deg,
                    activation_checkpointing=ac, selective_ac=sel, compile="torch.compile" in opts, float8=f8,
                    float8_recipe=quant.split()[1] if f8 else None, async_tp=async_tp, pp_schedule=None,
                    local_batch_size=int(lbs.group(1)) if lbs else None, global_batch_size=None, seq_len=None,
                    tokens_per_s_per_gpu=_num(r[i]), memory_gib=None, mfu_pct=None,
                    config_text=f"{h}. Quantization: {quant}; {'async' if async_tp else 'vanilla'} TP.",
                    note=[gpu_note, "sequence length not stated in the file",
                          "the file's column reads tokens/sec; per GPU by comparison with llama3_h100_202412 Table 4"],
                ))
    return rows


def _titan_trainy(rel: str, text: str) -> list[dict]:
    """``llama3-8b_h200_202506_trainy-whitefiber``: one table of NUM_NODES; configuration in the torchrun command."""
    src_gpu = _source_gpu(text)
    gpu, gpu_note = _gpu_of(src_gpu)
    listed = _models_listed(text)
    cmd = re.search(r"```(.*?)```", text, flags=re.S).group(1)
    per_node = int(re.search(r"--nproc_per_node (\d+)", cmd).group(1))
    lbs = int(re.search(r"--training\.local_batch_size=(\d+)", cmd).group(1))
    conf = re.search(r"--job\.config-file (\S+)", cmd).group(1)
    size = re.search(r"llama3_(\d+b)\.toml", conf).group(1).upper()
    fsdp_f8 = "enable_fsdp_float8_all_gather" in cmd
    parallel_flags = re.findall(r"--parallelism\.\S+", cmd)
    rows = []
    for b in _md_blocks(text):
        hdr = [x.lower() for x in b["header"]]
        if "num_nodes" not in hdr:
            continue
        for r in b["rows"]:
            cell = dict(zip(hdr, r))
            n_gpus = int(cell["num_nodes"]) * per_node
            note = [gpu_note, "sequence length and activation checkpointing not stated: they are those of " + conf + " at the time",
                    "parallel degrees not stated: no --parallelism flag, so torchtitan's default of FSDP over every GPU "
                    "(the command enables FSDP Float8 all-gather)" if fsdp_f8 and not parallel_flags else "parallel degrees not stated"]
            rows.append(dict(
                source_file=rel, table=b["heading"], model=f"{listed.get(size, 'Llama 3')} {size}", gpu=gpu, source_gpu=src_gpu,
                n_gpus=n_gpus, fsdp=n_gpus if fsdp_f8 and not parallel_flags else None, tp=1 if not parallel_flags else None,
                pp=1 if not parallel_flags else None, cp=1 if not parallel_flags else None,
                activation_checkpointing=None, selective_ac=None, compile="--training.compile" in cmd,
                float8="quantize.linear.float8" in cmd, float8_recipe=None, async_tp=False, pp_schedule=None,
                local_batch_size=lbs, global_batch_size=None, seq_len=None, tokens_per_s_per_gpu=_num(cell["tps/gpu"]),
                memory_gib=_num(cell["memory(gib)"]), mfu_pct=None,
                config_text=f"torchrun --nnodes {cell['num_nodes']} --nproc_per_node {per_node} with {conf}, "
                            f"--training.local_batch_size={lbs}, --training.compile, Float8 linear layers.",
                note=note,
            ))
    return rows


def _titan_performance(rel: str, text: str) -> list[dict]:
    """``docs/performance.md``: sections ``Llama 3 performance numbers`` / ``Llama 2 performance numbers`` of FSDP2 runs on
    64 A100 (80GB); rows give model size, local batch size, activation checkpointing, WPS (tokens/s per GPU) and MFU."""
    rows = []
    for b in _md_blocks(text):
        m = re.match(r"(Llama \d) performance", b["heading"])
        if m is None:
            continue
        family = m.group(1)
        intro = re.search(r"with FSDP2 on (\d+) (A100 \(\d+GB\)) GPUs", b["prose"])
        n_gpus, src_gpu = int(intro.group(1)), intro.group(2)
        gpu, gpu_note = _gpu_of(src_gpu)
        prose_cfg = next((v for (f, h), v in _PROSE_CONFIG.items() if f == rel and b["heading"].startswith(h)), {})
        hdr = [x.lower() for x in b["header"]]
        for r in b["rows"]:
            cell = dict(zip(hdr, r))
            bs = re.match(r"(\d+)", cell["batch size"]).group(1)
            ac, sel = _ac(cell["activation checkpoiting"])
            rows.append(dict(
                source_file=rel, table=b["heading"], model=f"{family} {cell['model size']}", gpu=gpu, source_gpu=src_gpu,
                n_gpus=n_gpus, fsdp=n_gpus, tp=1, pp=1, cp=1, activation_checkpointing=ac, selective_ac=sel,
                compile=None, float8=None, float8_recipe=None, async_tp=False, pp_schedule=None,
                local_batch_size=int(bs), global_batch_size=int(bs) * n_gpus, seq_len=prose_cfg.get("seq_len"),
                tokens_per_s_per_gpu=_num(cell["wps"]), memory_gib=None, mfu_pct=_num(cell["mfu"]),
                config_text=f"{b['caption']} Row: {' | '.join(r)}.",
                note=[gpu_note, "torch.compile and Float8 not stated in the file",
                      "sequence length from the prose: 'the default sequence length in Llama 2 is 4096 which is halved compared with Llama 3'"],
            ))
    return rows


_TITAN_PARSERS = {
    "benchmarks/llama3_h100_202412_torchtitan.md": _titan_h100_2024,
    "benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md": _titan_async_tp,
    "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md": _titan_trainy,
    "docs/performance.md": _titan_performance,
}


def _titan_text(name: str) -> str:
    data = read_bytes(name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{entry(name).key} is not UTF-8 text ({exc}); expected a Markdown file.") from exc


@cached_frame
def load_torchtitan_runs() -> pd.DataFrame:
    """torchtitan's published training runs: one row per run of a table (a row with two throughputs is two runs).

    Parsed from the Markdown of pytorch/torchtitan ``benchmarks/llama3_h100_202412_torchtitan.md`` (Tables 1-6),
    ``benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md`` (vanilla vs async TP), ``benchmarks/llama3-8b_h200_202506_
    trainy-whitefiber.md`` and ``docs/performance.md`` (BSD-3-Clause): every number comes from the file text; the
    configuration from each table's heading or caption, its rows, the Hardware section and, where it is only in
    prose, the mapping ``_PROSE_CONFIG`` (which quotes the prose). Throughputs are read at one iteration (the 90th or
    100th) of BF16 training (Float8 linear layers where ``float8``); memory is the peak (max over ranks).

    Returns
    -------
    DataFrame
        40 rows × 25 columns (18 + 12 + 2 + 8 from the four files): ``source_file`` (path in torchtitan), ``table`` (caption or heading), ``model`` (e.g. ``"Llama 3.1 8B"``),
        ``gpu`` (catalog id), ``source_gpu`` (as the file says, e.g. ``"H100 96GB HBM2e 500W power limit"``),
        ``n_gpus``, ``fsdp``, ``tp``, ``pp``, ``cp`` (degrees; Int64, NA where not stated), ``activation_checkpointing``
        (``none``/``selective``/``full``, NA where not stated), ``selective_ac`` (``op``/``layer``), ``compile``,
        ``float8``, ``async_tp`` (nullable bool), ``float8_recipe`` (``tensorwise``/``rowwise``), ``pp_schedule``,
        ``local_batch_size``, ``global_batch_size``, ``seq_len`` (tokens), ``tokens_per_s_per_gpu``, ``memory_gib``
        (peak, GiB, where published), ``mfu_pct`` (where published), ``config_text`` (the sentence the row's
        configuration comes from), ``note`` (assumptions: the GPU mapping, what the file does not state; ``; ``-joined).

    Notes
    -----
    The H100 of the two H100 files is the Grand Teton H100 (96 GB HBM2e, 500 W power limit): not in perfmodel's
    catalog, its ``gpu`` is ``H100`` (SXM5 80GB, the closest part) with a note, and :func:`torchtitan_gpu_spec` gives
    the part as the file describes it, which the external benchmark predicts with. ``docs/performance.md`` says "A100 (80GB)" without
    the form factor: ``A100-SXM4-80GB`` by :func:`perfmodel.datasets.canonical_gpu`'s rule, with a note.
    """
    rows = []
    for name in TORCHTITAN_FILES:
        rel = entry(name).path
        text = _titan_text(name)
        found = _TITAN_PARSERS[rel](rel, text) if _md_blocks(text) else []
        if not found:
            raise DataFormatError(f"{entry(name).key}: no run table found; expected the Markdown tables torchtitan published.")
        rows += found
    df = pd.DataFrame(rows)
    df["note"] = ["; ".join(n for n in notes if n) for notes in df["note"]]
    df["note"] = df["note"].replace("", pd.NA).astype("string")
    for c in ("n_gpus", "fsdp", "tp", "pp", "cp", "local_batch_size", "global_batch_size", "seq_len"):
        df[c] = pd.array([pd.NA if v is None or (isinstance(v, float) and np.isnan(v)) else int(v) for v in df[c]], dtype="Int64")
    for c in ("compile", "float8", "async_tp"):
        df[c] = pd.array(list(df[c]), dtype="boolean")
    for c in ("tokens_per_s_per_gpu", "memory_gib", "mfu_pct"):
        df[c] = pd.to_numeric(df[c], errors="raise").astype(float)
    for c in ("source_file", "table", "model", "gpu", "source_gpu", "activation_checkpointing", "selective_ac", "float8_recipe",
              "pp_schedule", "config_text"):
        df[c] = df[c].astype("string")
    return df[_COLS]


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("vidur_operators", load_vidur_operators,
                "a Vidur FP16 operator of one transformer layer (GPU, model, tokens, TP degree): min/max/mean/median/std time (ms)",
                ("VD:profiling/compute/*/*/*/mlp.csv",), "Vidur MLSys'24"),
    DatasetSpec("vidur_collectives", load_vidur_collectives,
                "a Vidur NCCL all-reduce or send/recv (system, GPUs, message size): min/max/mean/median/std time (ms)",
                ("VD:profiling/network/*/*.csv",), "Vidur MLSys'24"),
    DatasetSpec("torchtitan_runs", load_torchtitan_runs,
                "a published torchtitan Llama training run (GPUs, parallelism, AC, compile, Float8): tokens/s per GPU, peak memory (GiB), MFU",
                TORCHTITAN_FILES, "torchtitan benchmarks"),
)

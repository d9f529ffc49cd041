"""Vidur's measured FP16 operators as perfmodel's work rows: what each operator computes, its kernel, its GPU.

microsoft/vidur's per-operator profiles of one Llama-family transformer layer on the A40, A100 and H100
(:func:`perfmodel.datasets.llm_runs.load_vidur_operators`) are the half-precision measurements perfmodel learns from
and is scored on: the GEMM model (:mod:`perfmodel.step.half_precision`), the elementwise class of the bandwidth model
(:mod:`perfmodel.step.bandwidth`) and their held-out scores (:mod:`perfmodel.step.half_precision_scores`). The mapping
of each Vidur operator to the kernel it runs, and why, is in :mod:`perfmodel.step.half_precision`'s docstring; this
module is the one below both models that reads the rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets.gpus import GPUSpec

__all__ = ["A40_SPEC", "VIDUR_SPECS", "vidur_work", "vidur_rows", "vidur_profile_hashes"]

#: NVIDIA A40 as Vidur's rows are described (the shipped fits' spec; the catalog's ``A40`` row has the same rates), from the NVIDIA A40 datasheet (https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf):
#: FP32 37.4 TFLOPS, TF32 74.8, BF16 149.7, FP16 149.7 TFLOPS dense (the starred figures are with sparsity), 48 GB GDDR6
#: at 696 GB/s, 10,752 CUDA cores (84 SMs x 128), PCIe Gen4, NVLink 112.5 GB/s, 300 W; GA102's 6 MB L2 (NVIDIA Ampere
#: GA102 whitepaper); 84 x 128 x 2 x 1.74 GHz = 37.4 TFLOPS.
A40_SPEC = GPUSpec("A40", fp32_peak_tflops=37.4, memory_bandwidth_gb_per_s=696.0, memory_gib=48.0, sm_count=84,
                   tf32_peak_tflops=74.8, fp16_peak_tflops=149.7, bf16_peak_tflops=149.7, l2_mib=6.0, clock_ghz=1.74,
                   pcie_generation=4, nvlink_gb_per_s=112.5, tdp_w=300.0, vendor="NVIDIA", architecture="Ampere GA102",
                   form_factor="PCIe 48 GB")

#: Vidur's compute folders -> the GPU spec each is predicted with (a catalog id, or :data:`A40_SPEC`).
VIDUR_SPECS = {"a40": A40_SPEC, "a100": "A100-PCIe-80GB", "h100": "H100"}

_ITEM = 2  # bytes per FP16 element




def vidur_work(frame: pd.DataFrame) -> pd.DataFrame:
    """Work rows (:data:`~perfmodel.step.op_latency.WORK_COLUMNS`) of Vidur's operator rows, one per row of ``frame``.

    Parameters
    ----------
    frame : DataFrame
        Rows of :func:`perfmodel.datasets.llm_runs.load_vidur_operators` (``operator``, ``num_tokens``, ``tp``,
        ``n_head``, ``n_kv_head``, ``n_embd``, ``n_expanded_embd``, ``use_gated_mlp``, ``model``).

    Returns
    -------
    DataFrame
        ``WORK_COLUMNS`` of **one kernel** of each row (FLOPs, bytes, tiles, GEMM dimensions, as
        :func:`perfmodel.step.step_time.work_from_ops` describes the per-op row of that kernel; see the module
        docstring for the mapping), plus ``op`` (the aten-style name) and ``n_kernels`` (identical kernels the Vidur
        operator times: 2 for phi-2's ``add``, else 1), on ``frame``'s index.

    Raises
    ------
    ValueError
        An operator Vidur's layer does not have.
    """
    from perfmodel.step.op_latency import WORK_COLUMNS
    from perfmodel.step.trace import work_from_ops

    op = frame["operator"].astype(str).to_numpy()
    known = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "mlp_act", "input_layernorm",
             "post_attention_layernorm", "attn_rope", "add", "emb"}
    bad = sorted(set(op) - known)
    if bad:
        raise ValueError(f"Unknown Vidur operator(s) {bad}; expected some of {sorted(known)}.")
    T = frame["num_tokens"].to_numpy(np.int64)
    tp = frame["tp"].to_numpy(np.int64)
    E = frame["n_embd"].to_numpy(np.int64)
    H = frame["n_head"].to_numpy(np.int64)
    KV = frame["n_kv_head"].to_numpy(np.int64)
    F = frame["n_expanded_embd"].to_numpy(np.int64)
    gated = frame["use_gated_mlp"].to_numpy(bool)
    d = E // H
    phi = ~gated  # phi-2 is the only model without a gated MLP: LayerNorm, no post-attention norm, two residual adds
    n = len(frame)
    name = np.empty(n, dtype=object)
    cls = np.empty(n, dtype=object)
    ins = np.empty(n, dtype=object)
    outs = np.empty(n, dtype=object)
    rd = np.zeros(n)
    wr = np.zeros(n)
    flops = np.zeros(n)
    kernels = np.ones(n, dtype=np.int64)

    def mm(mask, m, r, k):
        name[mask], cls[mask] = "aten.mm", "matmul"
        ins[mask] = [f"{a}x{b};{b}x{c}" for a, b, c in zip(m[mask], r[mask], k[mask])]
        outs[mask] = [f"{a}x{c}" for a, c in zip(m[mask], k[mask])]
        flops[mask] = 2.0 * m[mask] * r[mask] * k[mask]
        rd[mask] = _ITEM * (m[mask] * r[mask] + r[mask] * k[mask])
        wr[mask] = _ITEM * m[mask] * k[mask]

    def ew(mask, opname, rows, width, read, written, klass="elementwise"):
        name[mask], cls[mask] = opname, klass
        outs[mask] = [f"{a}x{b}" for a, b in zip(rows[mask], width[mask])]
        ins[mask] = outs[mask]
        rd[mask], wr[mask] = read[mask], written[mask]

    up_cols = np.where(gated, 2 * F, F) // tp
    mm(op == "attn_pre_proj", T, E, (H + 2 * KV) * d // tp)
    mm(op == "attn_post_proj", T, H * d // tp, E)
    mm(op == "mlp_up_proj", T, E, up_cols)
    mm(op == "mlp_down_proj", T, F // tp, E)
    norm = np.isin(op, ["input_layernorm", "post_attention_layernorm"])
    te = (T * E).astype(float)
    ew(norm, "aten.native_layer_norm", T, E, _ITEM * (te + np.where(phi, 2, 1) * E), _ITEM * te, klass="norm")
    fo = (T * (F // tp)).astype(float)
    ew(op == "mlp_act", "aten.silu_and_mul", T, F // tp, _ITEM * np.where(gated, 2, 1) * fo, _ITEM * fo)
    name[(op == "mlp_act") & ~gated] = "aten.gelu"
    ew(op == "add", "aten.add", T, E, _ITEM * 2 * te, _ITEM * te)
    kernels[(op == "add") & phi] = 2
    qk = (T * (H + KV) * d // tp).astype(float)
    ew(op == "attn_rope", "aten.rotary_embedding", T, (H + KV) * d // tp, _ITEM * (qk + T * d) + 8.0 * T, _ITEM * qk)
    ew(op == "emb", "aten.embedding", T, E, 8.0 * T + _ITEM * te, _ITEM * te)
    per_op = pd.DataFrame({"op": name, "op_class": cls, "phase": "forward", "flops": flops, "bytes_read": rd,
                           "bytes_written": wr, "input_shapes": ins, "output_shapes": outs})
    w = work_from_ops(per_op)
    if len(w) != n:  # pragma: no cover - every row moves bytes
        raise AssertionError("work_from_ops dropped a Vidur operator row")
    out = w[WORK_COLUMNS].copy()
    out["op"] = w["op"].to_numpy()
    out["n_kernels"] = kernels
    out.index = frame.index
    return out


def vidur_rows(gpus=("a40", "a100", "h100"), *, h100_spec=None) -> pd.DataFrame:
    """Vidur's operator rows as model rows: design columns, the measurement, and the row's provenance.

    Parameters
    ----------
    gpus : sequence of str
        Vidur's compute folders to read (``"a40"``, ``"a100"``, ``"h100"``).
    h100_spec : str or GPUSpec, optional
        The spec the ``h100`` rows are described with (default the catalog's ``"H100"``, SXM5).

    Returns
    -------
    DataFrame
        One row per Vidur row (:func:`perfmodel.datasets.llm_runs.load_vidur_operators`, same order):
        :func:`perfmodel.step.half_precision.half_precision_design` columns (``gpu`` the spec name: ``A40``, ``A100-PCIe-80GB``, ``H100``), ``op``,
        ``n_kernels``, ``source_gpu``, ``model``, ``operator``, ``num_tokens``, ``tp``, ``measured_s`` (the operator's
        median over Vidur's repetitions, s, all its kernels) and ``kernel_s`` (``measured_s / n_kernels``: one kernel).
    """
    frames = []
    for g in gpus:
        if g not in VIDUR_SPECS:
            raise ValueError(f"Unknown Vidur GPU folder {g!r}; expected some of {sorted(VIDUR_SPECS)}.")
        spec = h100_spec if (g == "h100" and h100_spec is not None) else VIDUR_SPECS[g]
        frames.append(_vidur_gpu_rows(g, spec))
    return pd.concat(frames, ignore_index=True)


@cached_frame
def _vidur_gpu_rows(g: str, spec) -> pd.DataFrame:
    """:func:`vidur_rows` of one Vidur folder described with ``spec``; once per process and data source (describing
    its ~70,000 rows as work rows takes seconds, and the item that scores the model asks twice)."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.datasets.llm_runs import load_vidur_operators
    from perfmodel.step.op_latency import step_design

    v = load_vidur_operators(g).reset_index(drop=True)
    w = vidur_work(v)
    X = step_design(w, gpu_spec(spec), "fp16")  # as perfmodel.step.half_precision.half_precision_design
    X["op"], X["n_kernels"] = w["op"].to_numpy(), w["n_kernels"].to_numpy()
    for c in ("source_gpu", "model", "operator", "num_tokens", "tp"):
        X[c] = v[c].astype(str).to_numpy() if c in ("source_gpu", "model", "operator") else v[c].to_numpy()
    X["measured_s"] = v["time_ms_median"].to_numpy(float) / 1e3
    X["kernel_s"] = X["measured_s"] / X["n_kernels"]
    return X


def vidur_profile_hashes(gpus, *, suffix: str = "") -> list[tuple[str, str]]:
    """(registry key, sha256) of every Vidur compute profile of the folders ``gpus`` whose key ends with ``suffix``,
    sorted by key: what a fit or a score on those rows depends on in the data."""
    from perfmodel.datasets import registry

    reg = registry()
    keys = reg[reg["key"].str.contains("/profiling/compute/", regex=False) & reg["key"].str.endswith(suffix)]
    keys = keys[[k.split("/profiling/compute/")[1].split("/")[0] in gpus for k in keys["key"]]].sort_values("key")
    return list(zip(keys["key"], keys["sha256"]))

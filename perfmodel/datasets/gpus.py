"""GPU specifications: a catalog row, or a GPU the catalog does not have, as one validated :class:`GPUSpec`.

Everything that takes a GPU can take either a catalog GPU by any of its names (``"H100"``, ``"NVIDIA A100 80GB PCIe"``,
see :func:`perfmodel.datasets.canonical_gpu`) or a :class:`GPUSpec` (or a dict, Series or one-row frame with the
catalog's columns) for a GPU that is not in the catalog; :func:`gpu_spec` turns any of them into a :class:`GPUSpec`.

Precisions are those of a training step: ``"fp32"`` (CUDA cores / vector units), ``"tf32"`` (tensor cores on FP32
tensors, Ampere and later), ``"fp16"`` and ``"bf16"`` (tensor or matrix cores where the GPU has them). Rates are dense
(no structured sparsity). A precision a GPU has no units for is an :class:`UnsupportedPrecisionError` naming the ones
it has.

Matrix products (GEMMs, convolutions) run at :func:`matmul_peak_tflops`: the same rate as :func:`peak_tflops`, except FP32
on a GPU whose vendor BLAS runs FP32 GEMMs on its matrix units (AMD CDNA: ``fp32_matrix_tflops``).
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from perfmodel._errors import UnknownNameError

__all__ = ["GPUSpec", "gpu_spec", "peak_tflops", "matmul_peak_tflops", "mfu_precision", "mfu_peak_tflops", "PRECISIONS",
           "DEFAULT_L2_MIB",
           "UnsupportedPrecisionError", "InvalidGPUSpecError"]

#: Precisions perfmodel predicts for, each with the catalog column of its dense peak rate.
PRECISIONS: dict[str, str] = {
    "fp32": "fp32_peak_tflops",
    "tf32": "tf32_peak_tflops",
    "fp16": "fp16_peak_tflops",
    "bf16": "bf16_peak_tflops",
    "fp8": "fp8_peak_tflops",
}

#: L2 (MiB) a :class:`GPUSpec` gets when none is given: the V100's 6 MiB, the middle of the L2 of the GPUs the
#: per-operator model is fitted on (2-40 MiB: P4, P100, T4, V100, A100), so that its working-set-over-L2 feature stays
#: inside the range it learned. Give the datasheet's L2 where you know it: it moves small operators' predictions.
DEFAULT_L2_MIB = 6.0

_PRECISION_ALIASES = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
                      "float8": "fp8", "float8_e4m3fn": "fp8", "e4m3": "fp8"}

#: What a GPU needs for each precision (said when it lacks it).
_NEEDS = {
    "tf32": "TF32 tensor cores (NVIDIA Ampere and later: A100, A10, L4, L40S, H100, H200, B200; AMD CDNA 3: MI300X, MI325X; "
            "not CDNA 4's MI355X)",
    "fp16": "FP16 tensor/matrix cores or fast FP16 arithmetic (NVIDIA P100 and Volta onwards, AMD MI100 onwards)",
    "bf16": "BF16 tensor/matrix cores (NVIDIA Ampere and later, AMD MI100 onwards)",
    "fp8": "FP8 tensor/matrix cores (NVIDIA Ada, Hopper and Blackwell: L4, L40S, H100, H200, B200; AMD MI300X onwards; not A100)",
}


class UnsupportedPrecisionError(ValueError):
    """A GPU has no units for the precision asked for (BF16 on a V100, TF32 on a T4); the message lists what it runs."""


class InvalidGPUSpecError(ValueError):
    """A GPU spec lacks a required field, has a field the spec does not know, or a value that is not a valid number."""


#: link bandwidth fields of GPUSpec, where 0 means "no such link"
_LINK_FIELDS = ("nvlink_gb_per_s", "infinity_fabric_gb_per_s")


@dataclass(frozen=True)
class GPUSpec:
    """The specification of one GPU, as perfmodel's predictors use it.

    Required are the name and the numbers a roofline needs; the rest are optional. A precision rate left ``NaN`` means
    the GPU has no units for it (it is then refused by :func:`peak_tflops`). Rates are dense peaks from the vendor's
    datasheet (no structured sparsity).

    Parameters
    ----------
    gpu : str
        Name (a catalog id for catalog rows; any label for your own GPU).
    fp32_peak_tflops : float
        Peak FP32 rate on the CUDA cores / vector units, TFLOPS.
    memory_bandwidth_gb_per_s : float
        Peak memory bandwidth, GB/s (10^9 bytes per second).
    memory_gib : float
        Memory size, GiB.
    sm_count : int
        Streaming multiprocessors (compute units on AMD).
    tf32_peak_tflops, fp16_peak_tflops, bf16_peak_tflops, fp8_peak_tflops : float, optional
        Dense TF32/FP16/BF16/FP8 tensor-core rates, TFLOPS; ``NaN`` (default) where the GPU has no such units.
    fp32_matrix_tflops : float, optional
        FP32 on matrix units (AMD CDNA), TFLOPS; ``NaN`` for NVIDIA. Where given, FP32 GEMMs and convolutions are
        predicted at this rate (:meth:`matmul_peak_tflops`): rocBLAS and MIOpen run FP32 GEMMs on CDNA's matrix
        cores (MFMA instructions), at twice the vector rate.
    l2_mib : float, optional
        L2 cache, MiB. Left out (or ``NaN``), it is :data:`DEFAULT_L2_MIB` (6 MiB), so that a spec of the required
        fields alone can be predicted for; the per-operator model uses it for the working set over L2.
    clock_ghz : float, optional
        Boost clock the FP32 peak is computed at, GHz.
    pcie_generation : int, optional
        Host link PCIe generation.
    nvlink_gb_per_s : float, optional
        NVLink bandwidth per GPU, all links, both directions, GB/s (0: none).
    infinity_fabric_gb_per_s : float, optional
        AMD Infinity Fabric peer-to-peer bandwidth per GPU of an 8-GPU platform (its fully connected links), all
        links, both directions, GB/s (0: none; NaN: not modelled, e.g. bridged PCIe cards).
    tdp_w : float, optional
        Board power, W.
    vendor, architecture, form_factor : str, optional
        Descriptive.
    fp4_peak_tflops : float, optional
        Dense FP4 tensor/matrix-core rate (NVFP4/MXFP4: NVIDIA Blackwell, AMD CDNA 4), TFLOPS; ``NaN`` (default) where
        the GPU has no FP4 units. Spec data only: FP4 is not one of :data:`PRECISIONS`.

    Examples
    --------
    >>> spec = GPUSpec("my-gpu", fp32_peak_tflops=40.0, memory_bandwidth_gb_per_s=1000.0, memory_gib=48, sm_count=100,
    ...                bf16_peak_tflops=300.0)
    >>> spec.precisions
    ('fp32', 'bf16')
    >>> spec.l2_mib  # not given: DEFAULT_L2_MIB
    6.0
    """

    gpu: str
    fp32_peak_tflops: float
    memory_bandwidth_gb_per_s: float
    memory_gib: float
    sm_count: int
    tf32_peak_tflops: float = math.nan
    fp16_peak_tflops: float = math.nan
    bf16_peak_tflops: float = math.nan
    fp8_peak_tflops: float = math.nan
    fp32_matrix_tflops: float = math.nan
    l2_mib: float = math.nan
    clock_ghz: float = math.nan
    pcie_generation: float = math.nan
    nvlink_gb_per_s: float = math.nan
    tdp_w: float = math.nan
    vendor: str = ""
    architecture: str = ""
    form_factor: str = ""
    fp4_peak_tflops: float = math.nan  # last, so that positional arguments keep their places
    infinity_fabric_gb_per_s: float = math.nan

    def __post_init__(self):
        if isinstance(self.l2_mib, numbers.Real) and not isinstance(self.l2_mib, bool) and math.isnan(self.l2_mib):
            object.__setattr__(self, "l2_mib", DEFAULT_L2_MIB)
        if not isinstance(self.gpu, str) or not self.gpu.strip():
            raise InvalidGPUSpecError(f"GPUSpec.gpu must be a non-empty name; got {self.gpu!r}.")
        for f in dataclasses.fields(self):
            if f.name == "gpu":
                continue
            v = getattr(self, f.name)
            if f.type == "str":
                if not isinstance(v, str):
                    raise InvalidGPUSpecError(f"GPUSpec {self.gpu!r}: {f.name} must be a string; got {v!r}.")
                continue
            required = f.default is dataclasses.MISSING
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise InvalidGPUSpecError(f"GPUSpec {self.gpu!r}: {f.name} must be a number ({_unit(f.name)}); got {v!r}.")
            v = float(v)
            ok = (math.isfinite(v) and v > 0) or (not required and (math.isnan(v) or (f.name in _LINK_FIELDS and v == 0)))
            if not ok:
                want = "a positive finite number" + ("" if required else " or NaN (unknown / no such unit)")
                raise InvalidGPUSpecError(f"GPUSpec {self.gpu!r}: {f.name} must be {want} ({_unit(f.name)}); got {v!r}.")
            if f.name == "sm_count" and v != int(v):
                raise InvalidGPUSpecError(f"GPUSpec {self.gpu!r}: sm_count must be a whole number of SMs; got {v!r}.")
            if f.name == "pcie_generation" and math.isfinite(v) and (v != int(v) or not 1 <= v <= 7):
                raise InvalidGPUSpecError(f"GPUSpec {self.gpu!r}: pcie_generation must be a PCIe generation, a whole "
                                          f"number from 1 to 7, or NaN (unknown); got {v!r}.")
            object.__setattr__(self, f.name, int(v) if f.name == "sm_count" else v)

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precisions this GPU has units for, in :data:`PRECISIONS` order."""
        return tuple(p for p, col in PRECISIONS.items() if math.isfinite(getattr(self, col)))

    def peak_tflops(self, precision: str = "fp32") -> float:
        """Dense peak rate at ``precision`` in TFLOPS (see :func:`peak_tflops`)."""
        p = _canonical_precision(precision)
        rate = getattr(self, PRECISIONS[p])
        if not math.isfinite(rate):
            raise UnsupportedPrecisionError(
                f"GPU {self.gpu!r} cannot run {p}: it has no {_NEEDS[p]}. {self.gpu} supports {', '.join(self.precisions)}; "
                f"pick one of these, or a GPU that has {p}."
            )
        return float(rate)

    def matmul_peak_tflops(self, precision: str = "fp32") -> float:
        """Dense peak rate of GEMMs and convolutions at ``precision`` in TFLOPS (see :func:`matmul_peak_tflops`)."""
        p = _canonical_precision(precision)
        if p == "fp32" and math.isfinite(self.fp32_matrix_tflops):
            return float(self.fp32_matrix_tflops)
        return self.peak_tflops(p)

    def to_dict(self) -> dict:
        """The spec as a plain dict (the catalog's column names)."""
        return dataclasses.asdict(self)


_FIELDS = {f.name: f for f in dataclasses.fields(GPUSpec)}
_REQUIRED = [n for n, f in _FIELDS.items() if f.default is dataclasses.MISSING]
#: Catalog columns that describe a value's provenance, not the GPU: dropped when a catalog row becomes a spec.
_PROVENANCE = {"device_name", "fp32_tflops_source", "tensor_tflops_source", "fp8_tflops_source", "bandwidth_source", "architecture_source",
               "interconnect_source", "in_paper_data", "note", "cuda_cores"}


def _unit(name: str) -> str:
    for suffix, unit in (("_tflops", "TFLOPS"), ("_gb_per_s", "GB/s"), ("_gib", "GiB"), ("_mib", "MiB"), ("_ghz", "GHz"), ("_w", "W")):
        if name.endswith(suffix):
            return unit
    return "a count" if name in ("sm_count", "pcie_generation") else "text"


def _canonical_precision(precision) -> str:
    key = str(precision).strip().lower().removeprefix("torch.")
    key = _PRECISION_ALIASES.get(key, key)
    if key not in PRECISIONS:
        raise UnknownNameError(f"Unknown precision {precision!r}. Expected one of: {', '.join(PRECISIONS)}.")
    return key


def _from_mapping(d: Mapping, what: str) -> GPUSpec:
    d = {k: v for k, v in d.items() if k not in _PROVENANCE}
    name = d.get("gpu")
    label = f"{what} for {name!r}" if name is not None else what
    missing = [k for k in _REQUIRED if k not in d or (k != "gpu" and _isna(d[k]))]
    if missing:
        raise InvalidGPUSpecError(f"The GPU spec {label} lacks the required field(s) {missing}; a spec needs {_REQUIRED}. "
                                  "Add them (see perfmodel.datasets.GPUSpec for units).")
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        raise InvalidGPUSpecError(f"The GPU spec {label} has unknown field(s) {unknown}; known fields: {list(_FIELDS)}.")
    clean = {}
    for k, v in d.items():
        if _FIELDS[k].type == "str":
            clean[k] = "" if _isna(v) else v
        else:
            clean[k] = math.nan if _isna(v) else v
    return GPUSpec(**clean)


def _isna(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def gpu_spec(gpu) -> GPUSpec:
    """The :class:`GPUSpec` of a GPU: a catalog GPU by any name, or a spec of your own, validated.

    Parameters
    ----------
    gpu : str, GPUSpec, dict, Series or one-row DataFrame
        A name :func:`perfmodel.datasets.canonical_gpu` accepts (``"V100"``, ``"Tesla_V100-PCIE-32GB"``,
        ``"H100 80GB SXM5"``), a :class:`GPUSpec`, or a mapping / row with :class:`GPUSpec`'s fields (the GPU catalog's
        column names; its source and note columns are ignored).

    Returns
    -------
    GPUSpec

    Raises
    ------
    UnknownNameError
        An unknown GPU name (with the closest catalog ids).
    InvalidGPUSpecError
        A spec that lacks a required field, has an unknown field or an invalid value.
    TypeError
        Anything else.
    """
    if isinstance(gpu, GPUSpec):
        return gpu
    if isinstance(gpu, str):
        from perfmodel.datasets.names import canonical_gpu

        return _catalog_spec(canonical_gpu(gpu))
    if isinstance(gpu, pd.DataFrame):
        if len(gpu) != 1:
            raise InvalidGPUSpecError(f"A GPU spec frame must have exactly one row; got {len(gpu)}. Pass one row (df.iloc[[i]]) "
                                      "or a list of GPUs.")
        return _from_mapping(gpu.iloc[0].to_dict(), "frame row")
    if isinstance(gpu, pd.Series):
        return _from_mapping(gpu.to_dict(), "Series")
    if isinstance(gpu, Mapping):
        return _from_mapping(gpu, "dict")
    raise TypeError(f"A GPU must be a name (str), a GPUSpec, a dict or a one-row DataFrame of GPU specs; got {type(gpu).__name__} {gpu!r}.")


@lru_cache(maxsize=None)
def _catalog_spec(gid: str) -> GPUSpec:
    """The (frozen) spec of a catalog id, read once per process: planners ask for the same GPUs thousands of times."""
    from perfmodel.datasets.reference import load_gpu_catalog

    row = load_gpu_catalog().set_index("gpu").loc[gid]
    return _from_mapping({"gpu": gid, **row.to_dict()}, "catalog row")


def peak_tflops(gpu, precision: str = "fp32") -> float:
    """Dense peak rate of a GPU at a precision, TFLOPS.

    Parameters
    ----------
    gpu : str, GPUSpec, dict, Series or one-row DataFrame
        See :func:`gpu_spec`.
    precision : {"fp32", "tf32", "fp16", "bf16"}
        ``"fp32"`` is the CUDA-core (vector) rate; ``"tf32"``, ``"fp16"``, ``"bf16"`` the dense tensor-core (matrix-core)
        rates (P100's FP16 runs on its CUDA cores at twice the FP32 rate). ``torch`` dtype names (``"float32"``,
        ``"bfloat16"``, ``"float16"``) are accepted too.

    Raises
    ------
    UnsupportedPrecisionError
        The GPU has no units for ``precision`` (BF16 on V100/T4/P100, TF32 before Ampere); the message lists the
        precisions it supports.
    UnknownNameError
        ``precision`` is none of the four, or the GPU name is unknown.

    >>> peak_tflops("A100", "bf16")
    312.0
    """
    return gpu_spec(gpu).peak_tflops(precision)


def mfu_precision(precision: str) -> str:
    """The precision whose dense peak a model-FLOPs utilisation (MFU) of a run at ``precision`` is counted against:
    BF16's for an FP8 run (whatever its recipe), as torchtitan and Megatron-LM report the MFU of FP8 runs, whose
    attention, norms and non-linear layers stay in BF16; the run's own precision otherwise.

    >>> mfu_precision("fp8"), mfu_precision("tf32")
    ('bf16', 'tf32')
    """
    p = _canonical_precision(precision)
    return "bf16" if p == "fp8" else p


def mfu_peak_tflops(gpu, precision: str = "fp32") -> float:
    """The dense peak (TFLOPS) an MFU of a run at ``precision`` on ``gpu`` is counted against:
    :func:`peak_tflops` at :func:`mfu_precision` (an FP8 run's MFU against the BF16 peak, so that it reads as
    torchtitan's and Megatron-LM's and as the rule of thumb's 40 %).

    >>> mfu_peak_tflops("H100", "fp8") == peak_tflops("H100", "bf16")
    True
    """
    return gpu_spec(gpu).peak_tflops(mfu_precision(precision))


def matmul_peak_tflops(gpu, precision: str = "fp32") -> float:
    """Dense peak rate of a GPU's matrix products (GEMMs, convolutions) at a precision, TFLOPS.

    The rate :func:`peak_tflops` gives, except FP32 on a GPU with FP32 matrix units (``fp32_matrix_tflops`` given:
    AMD CDNA/CDNA 2, MI100 onwards), where it is that rate: rocBLAS (and MIOpen's implicit-GEMM convolutions) run FP32
    GEMMs on the matrix cores with MFMA instructions (``v_mfma_f32_*_f32``: FP32 inputs and accumulation, no loss of
    precision), at 256 FLOP per clock per CU against the vector units' 128 (AMD lab notes, "AMD matrix cores",
    https://gpuopen.com/learn/amd-lab-notes/amd-lab-notes-matrix-cores-readme/; AMD CDNA and CDNA 2 whitepapers).
    NVIDIA GPUs have no FP32 matrix units: their FP32 GEMMs run on the CUDA cores (TF32 is the separate ``"tf32"``
    precision, off by default for matmuls in PyTorch), so there the rate is the FP32 (vector) peak.

    Parameters
    ----------
    gpu : str, GPUSpec, dict, Series or one-row DataFrame
        See :func:`gpu_spec`.
    precision : {"fp32", "tf32", "fp16", "bf16"}
        As for :func:`peak_tflops`.

    Raises
    ------
    UnsupportedPrecisionError, UnknownNameError
        As :func:`peak_tflops`.

    >>> matmul_peak_tflops("MI210", "fp32"), peak_tflops("MI210", "fp32")
    (45.3, 22.6)
    >>> matmul_peak_tflops("V100", "fp32") == peak_tflops("V100", "fp32")
    True
    """
    return gpu_spec(gpu).matmul_peak_tflops(precision)

"""Canonical names for the twenty CM-DARE CNNs, the GPUs and the cloud regions.

The upstream files spell the same model many ways ("Shake Large", "Shake large", "shakebig", "Shake Shake Big",
"shakebig80", ...). Every loader maps them to one canonical id with :func:`canonical_model` and keeps the upstream
spelling in a ``source_name`` column. Lookups ignore case, spaces, hyphens and underscores.

Architectures are derived by matching the data's ``Number of Parameters`` and
``Number of Tensors`` to the tensor2tensor code of CM-DARE: ResNets by ``layer_sizes`` (``resnet_cifar_15`` base),
Shake-Shakes by ``hidden_size`` and ``num_hidden_layers`` (``shakeshake_small`` base).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from perfmodel._errors import UnknownNameError

__all__ = [
    "ModelInfo",
    "MODELS",
    "MODEL_IDS",
    "HELD_OUT_MODEL_IDS",
    "GPU_IDS",
    "CATALOG_GPU_IDS",
    "REGION_IDS",
    "canonical_model",
    "canonical_gpu",
    "canonical_region",
    "model_info",
    "region_of_zone",
]


@dataclass(frozen=True)
class ModelInfo:
    """One of the twenty CM-DARE CNNs.

    Attributes
    ----------
    id : str
        Canonical id, e.g. ``"resnet-15"``, ``"shake-shake-big"``.
    label : str
        Label used in perfmodel's figures.
    family : str
        ``"resnet"`` or ``"shake_shake"``.
    layer_sizes : tuple of int or None
        ResNet blocks per stage (tensor2tensor ``layer_sizes``).
    hidden_size : int or None
        Shake-Shake base width (tensor2tensor ``hidden_size``; stages use 1×, 2×, 4× of it).
    num_hidden_layers : int or None
        Shake-Shake depth (``6 n + 2``, n blocks per stage).
    held_out : bool
        One of the four CNNs held out of training in CM-DARE's unseen-model experiments.
    speed_name : str
        Spelling in the ``speed_data`` CSVs (``Model (temp)`` column).
    folder : str
        Model part of the ``speed_data/0lat_<gpu>_<folder>`` TensorBoard export folders.
    checkpoint_names : tuple of str
        Spellings in the ``checkpoint`` CSVs.
    """

    id: str
    label: str
    family: str
    layer_sizes: tuple[int, int, int] | None
    hidden_size: int | None
    num_hidden_layers: int | None
    held_out: bool
    speed_name: str
    folder: str
    checkpoint_names: tuple[str, ...]
    extra_aliases: tuple[str, ...] = ()

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.id, self.label, self.speed_name, self.folder, *self.checkpoint_names, *self.extra_aliases)


def _resnet(id_, label, sizes, speed, folder, ckpt, held_out=False, extra=()):
    return ModelInfo(id_, label, "resnet", sizes, None, None, held_out, speed, folder, ckpt, extra)


def _shake(id_, label, hidden, layers, speed, folder, ckpt, held_out=False, extra=()):
    return ModelInfo(id_, label, "shake_shake", None, hidden, layers, held_out, speed, folder, ckpt, extra)


#: The twenty CNNs in the order of the published CNN table (``datasets/reference/cmdare_cnns.csv``: 16 training CNNs interleaved with the 4 held-out ones).
MODELS: tuple[ModelInfo, ...] = (
    _resnet("resnet-15", "ResNet-15", (2, 2, 2), "Res15", "res15", ("ResNet-15",), extra=("resnet_cifar_15", "res15k80", "res15p100", "res15p100ps2")),
    _resnet("resnet-32", "ResNet-32", (5, 5, 5), "Res32", "res32", ("ResNet-32",), extra=("resnet_cifar_32", "res32k80", "res32p100", "res32p100ps2")),
    _resnet("custom-resnet-1", "Custom ResNet 1", (2, 3, 3), "custom1", "cus1", ("Custom ResNet 1",)),
    _resnet("custom-resnet-2", "Custom ResNet 2", (2, 5, 3), "custom2", "cus2", ("Custom ResNet 2",)),
    _resnet("custom-resnet-3", "Custom ResNet 3", (3, 8, 3), "custom3", "cus3", ("Custom ResNet 3",)),
    _resnet("custom-resnet-4", "Custom ResNet 4", (7, 7, 7), "custom4", "cus4", ("Custom ResNet 4",)),
    _resnet("custom-resnet-5", "Custom ResNet 5", (8, 9, 9), "custom5", "cus5", ("Custom ResNet 5",)),
    _resnet("custom-resnet-6", "Custom ResNet 6", (10, 13, 12), "custom6", "cus6", ("Custom ResNet 6",)),
    _resnet("custom-resnet-7", "Custom ResNet 7", (14, 15, 15), "custom7", "cus7", ("Custom ResNet 7",)),
    _resnet("custom-resnet-8", "Custom ResNet 8", (16, 20, 16), "custom8", "cus8", ("Custom ResNet 8",)),
    _resnet("custom-resnet-9", "Custom ResNet 9", (6, 6, 6), "custom9", "cus9", ("Custom ResNet 9",), held_out=True, extra=("Custom9",)),
    _resnet("custom-resnet-10", "Custom ResNet 10", (11, 15, 12), "custom10", "cus10", ("Custom ResNet 10",), held_out=True, extra=("Custom10",)),
    _shake("shake-shake-16", "Shake-Shake 16", 16, 26, "shake16", "shake16", ("Shake 16",), extra=("ShakeShake 16",)),
    _shake("shake-shake-small", "Shake-Shake Small", 32, 26, "shakesmall", "shakesmall", ("Shake small",),
           extra=("ShakeShake Small", "Shake Shake Small", "shakeshake_small", "shakesmallk80", "shakesmall80", "shakesmall100", "shakesmallp100", "shakesmallp100ps2")),
    _shake("shake-shake-48", "Shake-Shake 48", 48, 26, "shake48", "shake48", ("Shake 48",), extra=("ShakeShake 48",)),
    _shake("shake-shake-64", "Shake-Shake 64", 64, 26, "shakemid", "shakemid", ("Shake 64",), extra=("ShakeShake 64", "Shake mid")),
    _shake("shake-shake-80", "Shake-Shake 80", 80, 26, "shake80", "shake80", ("Shake 80",), extra=("ShakeShake 80",)),
    _shake("shake-shake-big", "Shake-Shake Big", 96, 26, "shakebig", "shakebig", ("Shake Large", "Shake large"),
           extra=("ShakeShake Large", "Shake Shake Big", "shakeshake_big", "Shake big", "shakebigk80", "shakebig80", "shakebig100", "shakebigp100", "shakesbigp100ps2", "shakebigp100ps2")),
    _shake("shake-shake-small-32d", "Shake-Shake Small 32d", 32, 32, "shake small 32d", "shake32_d32", ("Shake small 32d",), held_out=True,
           extra=("Shake small 32D",)),
    _shake("shake-shake-64-32d", "Shake-Shake 64 32d", 64, 32, "shake mid 32d", "shake64_d32", ("Shake 64 32d", "Shake mid 32d"), held_out=True,
           extra=("Shake 64 32D",)),
)

MODEL_IDS: tuple[str, ...] = tuple(m.id for m in MODELS)
HELD_OUT_MODEL_IDS: tuple[str, ...] = tuple(m.id for m in MODELS if m.held_out)

#: The GPU ids of CM-DARE's data and of the paper-era predictors (the categories of the CM-DARE frames' ``gpu`` column).
#: ``V100`` is the SXM2 16 GB part (GCE's), ``A100`` the SXM4 40 GB, ``H100`` the SXM5 80 GB; every id of the GPU catalog
#: is in :data:`CATALOG_GPU_IDS`.
GPU_IDS: tuple[str, ...] = ("K80", "P100", "V100", "T4", "L4", "A100", "H100")


@dataclass(frozen=True)
class _GPUName:
    """How a catalog GPU is spelled: its chip token, the form-factor tokens and memory sizes that pick it among its chip's
    parts, and its host link's PCIe generation (a ``Gen4``/``Gen5`` in a name must match it)."""

    id: str
    chip: str
    forms: tuple[str, ...]
    memory: tuple[str, ...]
    pcie_gen: int


#: Every GPU of the catalog (``datasets/reference/gpus.csv``, in its row order), with the tokens that name it. Parts of one
#: chip are listed default first: a name that omits the form factor or the memory size gets the first part that matches
#: the tokens it does give (``"A100"`` → the SXM4 40 GB, ``"A100 80GB"`` → the SXM4 80 GB, ``"A100 PCIe"`` → the PCIe 40 GB).
#: ``pcie_gen`` is the catalog's ``pcie_generation`` (a test holds them equal).
_GPU_NAMES: tuple[_GPUName, ...] = (
    _GPUName("K80", "k80", (), ("12gb", "24gb"), 3),
    _GPUName("P4", "p4", ("pcie",), ("8gb",), 3),
    _GPUName("P100", "p100", ("pcie",), ("16gb",), 3),
    _GPUName("P100-SXM2", "p100", ("sxm", "sxm2"), ("16gb",), 3),
    _GPUName("V100", "v100", ("sxm", "sxm2"), ("16gb",), 3),
    _GPUName("V100-SXM2-32GB", "v100", ("sxm", "sxm2"), ("32gb",), 3),
    _GPUName("V100-PCIe-16GB", "v100", ("pcie",), ("16gb",), 3),
    _GPUName("V100-PCIe-32GB", "v100", ("pcie",), ("32gb",), 3),
    _GPUName("T4", "t4", ("pcie",), ("16gb", "15gb"), 3),
    _GPUName("A100", "a100", ("sxm", "sxm4"), ("40gb",), 4),
    _GPUName("A100-SXM4-80GB", "a100", ("sxm", "sxm4"), ("80gb",), 4),
    _GPUName("A100-PCIe-40GB", "a100", ("pcie",), ("40gb",), 4),
    _GPUName("A100-PCIe-80GB", "a100", ("pcie",), ("80gb",), 4),
    _GPUName("A10", "a10", ("pcie",), ("24gb",), 4),
    # AWS's g5 part: its own chip token, never the A10 (the A10's "a10" token does not match "a10g", nor the reverse)
    _GPUName("A10G", "a10g", ("pcie",), ("24gb",), 4),
    # the professional GA102 boards: the data-center A40 and the workstation RTX A6000 ("RTX A6000" is read as one chip
    # token, "rtxa6000"; clouds' bare "A6000" is an alias)
    _GPUName("A40", "a40", ("pcie",), ("48gb",), 4),
    _GPUName("RTX-A6000", "rtxa6000", ("pcie",), ("48gb",), 4),
    _GPUName("L4", "l4", ("pcie",), ("24gb",), 4),
    _GPUName("L40", "l40", ("pcie",), ("48gb",), 4),
    _GPUName("L40S", "l40s", ("pcie",), ("48gb",), 4),
    # "RTX 4090", "RTX 6000 Ada (Generation)" are read as one chip token each (see _gpu_tokens); a bare "RTX 6000" is the
    # Turing Quadro RTX 6000, not catalogued
    _GPUName("RTX-4090", "rtx4090", ("pcie",), ("24gb",), 4),
    _GPUName("RTX-6000-Ada", "rtx6000ada", ("pcie",), ("48gb",), 4),
    # "mega": Google Cloud's A3 Mega accelerator type (nvidia-h100-mega-80gb) is the same H100 SXM5 80 GB
    _GPUName("H100", "h100", ("sxm", "sxm5", "hbm3", "mega"), ("80gb",), 5),
    _GPUName("H100-PCIe", "h100", ("pcie", "hbm2e"), ("80gb",), 5),
    _GPUName("H100-NVL", "h100", ("nvl",), ("94gb",), 5),
    # export parts of GH100: chip tokens of their own, never an H100 ("H800 PCIe" and the 141 GB H20 are refused)
    _GPUName("H800", "h800", ("sxm", "sxm5", "hbm3"), ("80gb",), 5),
    _GPUName("H20", "h20", ("sxm", "hbm3"), ("96gb",), 5),
    _GPUName("H200", "h200", ("sxm", "sxm5", "hbm3e"), ("141gb",), 5),
    _GPUName("H200-NVL", "h200", ("nvl", "hbm3e"), ("141gb",), 5),
    _GPUName("RTX-5090", "rtx5090", ("pcie",), ("32gb",), 5),
    # HGX B200 / B300 (SXM boards of 8) and the GPUs of GB200 / GB300 superchips (NVL72 racks) are apart: their chip
    # tokens differ ("b200" is not "gb200"); memory: NVIDIA's current and launch-time figures
    _GPUName("B200", "b200", ("sxm", "sxm6", "hgx", "hbm3e"), ("180gb", "179gb", "192gb"), 5),
    _GPUName("GB200", "gb200", ("nvl", "nvl72", "nvl4", "superchip", "hbm3e"), ("186gb", "192gb"), 5),
    _GPUName("B300", "b300", ("sxm", "sxm6", "ac", "hgx", "nvl16", "hbm3e"), ("270gb", "288gb"), 6),
    _GPUName("GB300", "gb300", ("nvl", "nvl72", "superchip", "hbm3e"), ("279gb", "288gb"), 6),
    _GPUName("MI100", "mi100", ("pcie",), ("32gb",), 4),
    _GPUName("MI210", "mi210", ("pcie",), ("64gb",), 4),
    _GPUName("MI250", "mi250", ("oam",), ("64gb", "128gb"), 4),
    _GPUName("MI300X", "mi300x", ("oam", "hbm3"), ("192gb",), 5),
    _GPUName("MI325X", "mi325x", ("oam", "hbm3e"), ("256gb",), 5),
    _GPUName("MI355X", "mi355x", ("oam", "hbm3e"), ("288gb",), 5),
)

#: GPUs that clouds and benchmark tables name but the catalog does not have, each with the catalogued part it is most
#: often mistaken for (suggested, never substituted: their rates, SM counts or bandwidths differ).
_NOT_IN_CATALOG: dict[str, tuple[str, ...]] = {
    "v100s": ("V100-PCIe-32GB",),  # faster clocks and memory than the V100 PCIe
    "mi250x": ("MI250",),  # 110 CUs per die against the MI250's 104
    "a800": ("A100",),  # export part: cut NVLink
    "gh200": ("H100", "H200"),  # Grace Hopper: the Hopper GPU with 96 or 144 GB
    "b100": ("B200",),  # the 700 W Blackwell for HGX H100 boards: lower clocks
    "mi350x": ("MI355X",),  # the 1000 W air-cooled CDNA 4 part: lower clocks than the MI355X
    "rtx6000": ("RTX-6000-Ada",),  # a bare "RTX 6000" is the Turing Quadro RTX 6000 (24 GB), not the Ada part
    "mi300a": (), "a30": (),
}

#: Every GPU id of the GPU catalog (:func:`perfmodel.datasets.load_gpu_catalog`), in its row order.
CATALOG_GPU_IDS: tuple[str, ...] = tuple(g.id for g in _GPU_NAMES)

#: Google Compute Engine regions that appear in the data.
REGION_IDS: tuple[str, ...] = ("us-east1", "us-central1", "us-west1", "europe-west1", "europe-west4", "asia-east1")

_REGION_ALIASES = {
    "east": "us-east1", "useast": "us-east1", "useast1": "us-east1",
    "central": "us-central1", "uscentral": "us-central1", "uscentral1": "us-central1",
    "west": "us-west1", "uswest": "us-west1", "uswest1": "us-west1",
    "euro": "europe-west1", "euwest": "europe-west1", "europewest1": "europe-west1", "euwest1": "europe-west1",
    "euwest4": "europe-west4", "europewest4": "europe-west4",
    "asia": "asia-east1", "asiaeast1": "asia-east1",
}


def _norm(name: str) -> str:
    return re.sub(r"[\s\-_]+", "", str(name)).lower()


_MODEL_ALIASES: dict[str, str] = {}
for _m in MODELS:
    for _a in _m.aliases:
        _key = _norm(_a)
        if _MODEL_ALIASES.get(_key, _m.id) != _m.id:  # pragma: no cover - guards the table itself
            raise RuntimeError(f"alias {_a!r} is ambiguous")
        _MODEL_ALIASES[_key] = _m.id

_GPU_ALIASES = {_norm(g): g for g in CATALOG_GPU_IDS}
_GPU_ALIASES.update({"teslak80": "K80", "teslap100": "P100", "teslav100": "V100", "k": "K80", "p": "P100", "v": "V100",
                     "a6000": "RTX-A6000"})

#: Words that do not help to tell GPUs apart (vendor and product-line names, "GPU", a memory type shared by every part).
_GPU_NOISE = frozenset({"nvidia", "tesla", "amd", "instinct", "tensor", "core", "gpu", "gddr5", "gddr6", "gddr6x", "gddr7", "hbm2",
                        "geforce"})
_GPU_CHIPS = frozenset(g.chip for g in _GPU_NAMES)
_GPU_FORMS = frozenset(f for g in _GPU_NAMES for f in g.forms)
#: A memory size: "80GB", "80 GB", "80GiB", "80G" (SkyPilot's "A100-80G"), any case.
_GPU_MEMORY = re.compile(r"(?<![a-z0-9.])(\d+)\s*(?:gi?b|g)\b")  # not the "10g" of "A10G"
#: The host link's PCIe generation: "Gen5", "PCIe Gen4", "PCIe5", "PCIe-Gen 5".
_GPU_PCIE_GEN = re.compile(r"\b(pcie)?[\s\-_]*gen[\s\-_]*(\d)\b|\bpcie(\d)\b")
#: The RTX cards' names as one chip token: "RTX 6000 Ada Generation" -> "rtx6000ada", "GeForce_RTX_4090" -> "rtx4090" (a bare
#: "RTX 6000" -> "rtx6000", the Turing Quadro, not catalogued).
_GPU_RTX_ADA = re.compile(r"(?<![a-z0-9])rtx[\s\-_]*(\d{4})[\s\-_]*ada(?:[\s\-_]*generation)?(?![a-z0-9])")
_GPU_RTX = re.compile(r"(?<![a-z0-9])rtx[\s\-_]*(\d{4})(?![a-z0-9])")
#: The Ampere professional cards' names as one chip token: "RTX A6000" -> "rtxa6000".
_GPU_RTX_AMPERE = re.compile(r"(?<![a-z0-9])rtx[\s\-_]*a(\d{4})(?![a-z0-9])")


def _gpu_tokens(name) -> tuple[list[str], list[int]]:
    """Lower-case tokens of a device name with vendor words dropped, memory sizes as ``<n>gb`` and PCIe generations taken
    out (returned apart; a ``PCIe Gen5`` leaves its ``pcie`` form token)."""
    text = str(name).lower()
    gens: list[int] = []

    def gen(m):
        gens.append(int(m.group(2) or m.group(3)))
        return " pcie " if (m.group(1) or m.group(3)) else " "

    text = _GPU_PCIE_GEN.sub(gen, text)
    text = _GPU_RTX.sub(r" rtx\1 ", _GPU_RTX_ADA.sub(r" rtx\1ada ", _GPU_RTX_AMPERE.sub(r" rtxa\1 ", text)))
    text = _GPU_MEMORY.sub(lambda m: f" {int(m.group(1))}gb ", text)
    return [t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _GPU_NOISE], gens


def _gpu_from_tokens(name) -> str | None:
    """Match a device name by its tokens: one chip, form-factor words of one part, at most one memory size, at most one
    PCIe generation, nothing else.

    ``"NVIDIA_A100_80GB_PCIe"``, ``"Tesla V100-PCIE-32GB"``, ``"H100 80GB SXM5"``, ``"H100 SXM5 80GB HBM3"``,
    ``"H100 80GB PCIe Gen5"``, ``"h100-sxm"``, ``"nvidia-l4"``, ``"nvidia-tesla-a100"`` all split into such tokens. ``None``
    when a token is not understood or the tokens pick no catalog part.
    """
    tokens, gens = _gpu_tokens(name)
    chips = [t for t in tokens if t in _GPU_CHIPS]
    forms = set(t for t in tokens if t in _GPU_FORMS)
    sizes = set(t for t in tokens if re.fullmatch(r"\d+gb", t))
    if (len(chips) != 1 or len(sizes) > 1 or len(set(gens)) > 1
            or len(chips) + sum(t in forms or t in sizes for t in tokens) != len(tokens)):
        return None
    for g in _GPU_NAMES:  # default part first
        if (g.chip == chips[0] and forms <= set(g.forms) and (not sizes or next(iter(sizes)) in g.memory)
                and (not gens or gens[0] == g.pcie_gen)):
            return g.id
    return None


def _chip_of(name) -> str | None:
    """The one chip token a name mentions (for the suggestions when its form factor or memory matches no part)."""
    chips = {t for t in _gpu_tokens(name)[0] if t in _GPU_CHIPS}
    return chips.pop() if len(chips) == 1 else None


def _suggest(name, aliases: dict[str, str], valid: Iterable[str]) -> list[str]:
    """Canonical ids closest to ``name`` (difflib), matched on the ids and on every accepted spelling."""
    key = _norm(name)
    pool = {_norm(v): v for v in valid}
    pool.update(aliases)
    close = difflib.get_close_matches(key, list(pool), n=6, cutoff=0.6)
    return list(dict.fromkeys(pool[c] for c in close))[:3]


def _unknown(kind: str, name, valid: Iterable[str], hint: str = "", aliases: dict[str, str] | None = None) -> UnknownNameError:
    valid = list(valid)
    close = _suggest(name, aliases or {}, valid)
    mean = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return UnknownNameError(
        f"Unknown {kind} {name!r}. Expected one of: {', '.join(valid)}.{(' ' + hint) if hint else ''}{mean}"
    )


def canonical_model(name: str) -> str:
    """Return the canonical id of a CM-DARE CNN from any spelling used upstream.

    >>> canonical_model("Shake Large")
    'shake-shake-big'
    """
    key = _norm(name)
    if key in _MODEL_ALIASES:
        return _MODEL_ALIASES[key]
    raise _unknown("model", name, MODEL_IDS, "Spellings used upstream (e.g. 'Res15', 'Shake Large') are accepted too.", _MODEL_ALIASES)


def model_info(name: str) -> ModelInfo:
    """The :class:`ModelInfo` of a CM-DARE CNN given any of its spellings."""
    cid = canonical_model(name)
    return next(m for m in MODELS if m.id == cid)


def canonical_gpu(name: str) -> str:
    """Return the catalog id of a GPU from its id, its device name or an everyday spelling.

    Accepted: the ids of :data:`CATALOG_GPU_IDS` (case, spaces, hyphens and underscores ignored); device names as
    ``nvidia-smi``, ``torch.cuda.get_device_name`` and NeuSight's files spell them (``"NVIDIA H100 80GB HBM3"``,
    ``"Tesla_V100-PCIE-32GB"``, ``"NVIDIA_A100_80GB_PCIe"``, ``"Tesla P4"``, ``"AMD_Instinct_MI250"``); everyday spellings
    made of a chip, form-factor words, a memory size and a PCIe generation in any order (``"A100 80GB PCIe"``,
    ``"H100 80GB PCIe Gen5"``, ``"H100 SXM5 80GB HBM3"``, ``"h100-sxm"``, ``"A100-80G"``); the accelerator names of
    clouds (Google Cloud's ``"nvidia-tesla-a100"``, ``"nvidia-a100-80gb"``, ``"nvidia-h100-mega-80gb"``, ``"nvidia-l4"``;
    SkyPilot's ``"A100-80GB"``, ``"H100-SXM"``). Vendor and product-line words (NVIDIA, Tesla, AMD, Instinct, Tensor Core,
    GPU) are ignored; a memory size is read in GB, GiB or G; form-factor words (PCIe, SXM/SXM2/SXM4/SXM5, HBM3, HBM2e,
    NVL, OAM) must all belong to one part; a ``Gen4``/``Gen5`` must be that part's host link.

    A name that omits the form factor or the memory size gets the chip's first part in the catalog that fits what it
    does say: SXM before PCIe (``"A100"`` is the SXM4 40 GB, ``"H100"`` the SXM5, ``"V100"`` the SXM2 16 GB, as GCE
    attaches them and as AWS's p4d/p5/p3 instances have them), the smaller memory first (``"A100 PCIe"`` is the 40 GB
    card). Give both to be exact: a bare ``"A100"`` from a table that does not say which A100 it ran on is read as the
    SXM4 40 GB, which is 10-20 % off a PCIe card's sustained rates.

    Raises
    ------
    UnknownNameError
        For any other name, listing the catalog ids and the closest ones. A GPU that clouds name but the catalog does
        not have (``"AMD Instinct MI250X"``, ``"Tesla V100S-PCIE-32GB"``, ``"NVIDIA A800"``, ``"Quadro RTX 6000"``) is
        refused with the catalogued part it is often taken for, never mapped to it; so is a name of two GPUs (ROCm's
        ``"AMD Instinct MI250X / MI250"``) or of a part the catalog does not list (``"H100 SXM 94GB"``). A GPU that
        is not in the catalog can be passed as a :class:`perfmodel.datasets.GPUSpec` wherever a GPU is expected.

    >>> canonical_gpu("NVIDIA A100 80GB PCIe")
    'A100-PCIe-80GB'
    """
    key = _norm(name)
    if key in _GPU_ALIASES:
        return _GPU_ALIASES[key]
    found = _gpu_from_tokens(name)
    if found is not None:
        return found
    err = _unknown("GPU", name, CATALOG_GPU_IDS, "Device names ('NVIDIA A100 80GB PCIe', 'Tesla V100-SXM2-16GB') and spellings such as "
                   "'H100 80GB SXM5' are accepted too; a GPU that is not in the catalog can be passed as a "
                   "perfmodel.datasets.GPUSpec.", aliases=_GPU_ALIASES)
    msg = str(err).split(" Did you mean")[0]
    tokens = _gpu_tokens(name)[0]
    named = list(dict.fromkeys(t for t in tokens if t in _GPU_CHIPS or t in _NOT_IN_CATALOG))
    if len(named) > 1:  # ROCm names both MI250 and MI250X "AMD Instinct MI250X / MI250"
        rocm = (" ROCm reports MI250 and MI250X dies alike as 'AMD Instinct MI250X / MI250': rocminfo shows 104 compute units "
                "per die on an MI250 (pass 'MI250'), 110 on an MI250X (not in the catalog).") if set(named) == {"mi250x", "mi250"} else ""
        raise UnknownNameError(f"{msg} {name!r} names more than one GPU ({', '.join(t.upper() for t in named)}); pass one "
                               f"of them.{rocm}")
    if named and named[0] in _NOT_IN_CATALOG:
        near = _NOT_IN_CATALOG[named[0]]
        mean = (f" It is not the catalog's {' or '.join(repr(n) for n in near)} (a different part); pass that id to accept its "
                "numbers anyway.") if near else ""
        raise UnknownNameError(f"{msg} {named[0].upper()} is not in the catalog: pass a perfmodel.datasets.GPUSpec with its "
                               f"datasheet numbers.{mean}")
    chip = _chip_of(name)
    if chip is not None:  # the chip is known, its form factor / memory / extra words are not: suggest that chip's parts
        parts = [g.id for g in _GPU_NAMES if g.chip == chip]
        err = UnknownNameError(f"{msg} The catalog's {chip.upper()} parts are {' or '.join(repr(p) for p in parts)}; "
                               f"did you mean one of them?")
    raise err


def region_of_zone(zone: str) -> str:
    """GCE region of a zone name (``"us-east1-c"`` → ``"us-east1"``)."""
    m = re.fullmatch(r"([a-z]+-[a-z]+\d+)-[a-z]", str(zone).strip())
    if not m or m.group(1) not in REGION_IDS:
        raise _unknown("zone", zone, [f"{r}-<letter>" for r in REGION_IDS])
    return m.group(1)


#: AWS region names (``us-east-1``, ``eu-west-2``, ``ap-southeast-1`` ...): a dash before the number, unlike GCE's ``us-east1``.
_AWS_REGION = re.compile(r"(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-(east|west|north|south|central|northeast|northwest|southeast|"
                         r"southwest|northcentral|southcentral)-\d+[a-z]?", re.IGNORECASE)


def canonical_region(name: str) -> str:
    """Return the canonical GCE region id from a region, a zone or a notebook variable name (``euwest4``).

    AWS region names (``us-east-1``) are refused: the data are from Google Compute Engine, and an AWS region is not
    the GCE region of a similar name.
    """
    s = str(name).strip()
    if s in REGION_IDS:
        return s
    if _AWS_REGION.fullmatch(s):
        raise UnknownNameError(
            f"{s!r} is an AWS region name; perfmodel's lifetimes and prices are from Google Compute Engine regions "
            f"({', '.join(REGION_IDS)}), and AWS regions are not mapped to GCE regions (their revocation behaviour differs). "
            "Pass one of the GCE regions."
        )
    if re.fullmatch(r"[a-z]+-[a-z]+\d+-[a-z]", s):
        return region_of_zone(s)
    key = _norm(s)
    if key in _REGION_ALIASES:
        return _REGION_ALIASES[key]
    raise _unknown("region", name, REGION_IDS, aliases=_REGION_ALIASES)

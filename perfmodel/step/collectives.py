"""NCCL link efficiency and latency fitted on Vidur's measured all-reduce and send/recv curves.

The α–β cost of :mod:`perfmodel.step.parallel` (ring all-reduce ``2(n−1)/n · S/(eB) + 2(n−1)α``, or across nodes
NCCL's tree where its tuning model finds it faster, :func:`allreduce_time`; a send
``S/(eB) + α``) needs, per kind of link, NCCL's efficiency ``e`` (share of the link's peak per-direction bandwidth
``B``) and the latency ``α`` per step. This module fits them on microsoft/vidur's NCCL measurements
(:func:`perfmodel.datasets.load_vidur_collectives`: fp16 ``all_reduce`` and ``send``/``recv``, 4 KiB to 64 MiB, and
to 1 GiB for the 4-GPU PCIe node; times are the median NCCL kernel time of rank 0) with ``B`` from spec sheets:

* ``"nvlink"`` — rows inside one DGX node (``devices_per_node == n_gpus``) and the 2-GPU rows of the pairwise-NVLink
  nodes (an NVLink bridge joins GPUs 0 and 1, Vidur packs ranks in order): ``B`` = the GPU's ``nvlink_gb_per_s`` from
  the catalog (both directions) halved, as :func:`resolve_interconnect` does.
* ``"infiniband"`` — DGX rows across nodes (``devices_per_node < n_gpus``): ``B`` = the line rate of the one NIC each
  GPU has. DGX A100: 8 single-port ConnectX-6 HDR InfiniBand, 200 Gb/s = 25 GB/s each (NVIDIA DGX A100 System
  Architecture white paper, WP-10083-001, 2020, §"Networking"; DGX A100 datasheet); DGX H100: 8 single-port ConnectX-7
  NDR InfiniBand in four OSFP cages, 400 Gb/s = 50 GB/s each (NVIDIA DGX H100 datasheet, 2023; DGX H100 user guide,
  "Hardware overview"). These are ``INTERCONNECTS["infiniband-hdr"]`` and ``["infiniband-ndr"]``.
* ``"pcie"`` — the 4-GPU all-reduce of the pairwise-NVLink nodes: the ring crosses PCIe between the two NVLink pairs,
  the slowest hop, so ``B`` = PCIe x16 per direction (gen 4: 31.5 GB/s for A100 PCIe, gen 5: 63 GB/s for H100 PCIe).
* left out: the pairwise nodes' send/recv across nodes (Vidur does not say what network joins those nodes, so there is
  no ``B``); ``h100_pairwise_nvlink/send_recv.csv`` (a byte-identical copy of the A100 file, not an H100
  measurement); the A40's (kept apart from the catalog in the data, ``perfmodel.datasets.llm_runs.VIDUR_GPUS``).

**Fit.** Per link kind (and per InfiniBand fabric, :data:`IB_FABRICS`: the NICs of the two DGX systems differ, HDR
and NDR, and so do their measured efficiencies), on all its rows (both collectives, every size),
``t = α·k + w/(e·B)`` with ``k`` the steps (``2(n−1)`` for a ring all-reduce, 1 for a send) and ``w`` the bytes
each GPU puts on the wire (``2(n−1)/n·S``, or ``S``) is linear in ``(α, 1/e)``; they minimise the squared
**relative** error ``Σ ((α·k + w/(eB) − t) / t)²`` (every size weighs the same, whatever its time) with ``α ≥ 0``
and ``e ≤ 1`` (:func:`scipy.optimize.lsq_linear`).

What the data show (``perfmodel.papers.external.vidur_nccl`` scores it): the bandwidth term's ``2(n−1)/n`` holds on
A100 NVLink (a per-``n`` fit gives ``e`` = 0.53, 0.51, 0.51 for 2, 4, 8 GPUs), but the latency does not grow as
``2(n−1)``: below ~256 KiB the kernel time is a floor of roughly 10–60 µs whatever ``n`` (NCCL's low-latency
protocols and launch cost), so the fitted ``α`` is a compromise; send/recv reaches a larger share of NVLink than the
all-reduce (``e`` ≈ 0.95 vs 0.51 on A100), and H100's 4- and 8-GPU all-reduces are faster than the ring over NVLink
predicts (NVSwitch's in-network reduction, NVLS); a single GPU per node reaches ~0.3 of its HDR NIC on the A100
cluster but ~0.7 of its NDR NIC on the H100 one. One ``(e, α)`` per link kind is what
:class:`Interconnect` carries; these misfits are the errors the benchmark reports.

The shipped parameters (``perfmodel/step/fitted/nccl_links.json``, fitted on **all** the systems above) are read at
prediction time without the data; :func:`rebuild` refits them (``python -m perfmodel.step.collectives``).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel._errors import UnknownNameError

__all__ = [
    "LINK_KINDS", "IB_FABRICS", "NIC_GB_PER_S", "FITTED_PATH", "collective_frame", "fit_links", "predict_collective_time", "fitted_params",
    "fitted_link", "rebuild", "infinity_fabric", "mesh_link", "INFINITY_FABRIC_GPUS", "bridged_link", "NVLINK_BRIDGE_GPUS", "bus_bandwidth_gb_per_s",
    "alltoall_time", "TREE_BUS_SHARE", "TREE_CORRECTION", "tree_correction", "DEEPEP_INTERNODE_GB_PER_S", "DEEPEP_NIC_GB_PER_S", "deepep_rdma_share", "routed_spread", "deepep_time",
]

#: link kinds with measured NCCL curves
LINK_KINDS = ("nvlink", "infiniband", "pcie")
#: the InfiniBand fabric of each of Vidur's DGX systems (its compute NICs: ConnectX-6 HDR on the DGX A100, ConnectX-7
#: NDR on the DGX H100; the module docstring cites them): each named fabric gets the ``(e, α)`` fitted on its own
#: system's rows besides the pooled ``"infiniband"`` fit (:func:`fit_links`)
IB_FABRICS = {"a100_dgx": "infiniband-hdr", "h100_dgx": "infiniband-ndr"}
#: per-GPU NIC line rate of Vidur's DGX systems, GB/s (see the module docstring for the spec sheets)
NIC_GB_PER_S = {"a100_dgx": 25.0, "h100_dgx": 50.0}
#: PCIe x16 per direction, GB/s, of Vidur's pairwise-NVLink systems (A100 PCIe: gen 4, H100 PCIe: gen 5)
_PCIE_GB_PER_S = {"a100_pairwise_nvlink": 31.5, "h100_pairwise_nvlink": 63.0}
#: the shipped fit
FITTED_PATH = Path(__file__).resolve().parent / "fitted" / "nccl_links.json"
_FORMAT = 2
#: named links resolved with a fitted kind, and their per-direction line rate (GB/s; None: from the GPU's catalog row)
_NAMED = {"nvlink": ("nvlink", None), "infiniband-hdr": ("infiniband", 25.0), "infiniband-ndr": ("infiniband", 50.0),
          "pcie4": ("pcie", 31.5), "pcie5": ("pcie", 63.0)}


def collective_frame(data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Vidur's NCCL rows with the link each crosses and the terms of the α–β cost.

    Parameters
    ----------
    data : DataFrame, optional
        Rows of :func:`perfmodel.datasets.load_vidur_collectives` (default: all of them).

    Returns
    -------
    DataFrame
        The rows that have a link kind (see the module docstring for those left out), with added columns ``link``
        (``nvlink``, ``infiniband``, ``pcie``), ``link_gb_per_s`` (``B``, peak per direction, GB/s), ``steps``
        (``k``), ``wire_bytes`` (``w``) and ``time_s`` (the median, s).
    """
    if data is None:
        from perfmodel.datasets import load_vidur_collectives

        data = load_vidur_collectives()
    from perfmodel.datasets import gpu_spec

    d = data[data["gpu_in_catalog"]].copy()
    system = d["system"].astype(str)
    d = d[~((system == "h100_pairwise_nvlink") & (d["collective"] == "send_recv"))]  # a copy of the A100 file
    system = d["system"].astype(str)
    dgx = system.str.endswith("_dgx")
    inside = d["devices_per_node"] >= d["n_gpus"]
    link = np.select([dgx & inside, dgx & ~inside, ~dgx & inside & (d["n_gpus"] == 2), ~dgx & inside & (d["n_gpus"] == 4)],
                     ["nvlink", "infiniband", "nvlink", "pcie"], "")
    d["link"] = link
    d = d[d["link"] != ""].copy()
    nv = {g: gpu_spec(g).nvlink_gb_per_s / 2 for g in d["gpu"].astype(str).unique()}
    d["link_gb_per_s"] = [nv[g] if k == "nvlink" else NIC_GB_PER_S[s] if k == "infiniband" else _PCIE_GB_PER_S[s]
                          for k, s, g in zip(d["link"], d["system"].astype(str), d["gpu"].astype(str))]
    ar = (d["collective"] == "all_reduce").to_numpy()
    n = d["n_gpus"].to_numpy()
    d["steps"] = np.where(ar, 2 * (n - 1), 1)
    d["wire_bytes"] = np.where(ar, 2 * (n - 1) / n, 1.0) * d["message_bytes"].to_numpy()
    d["time_s"] = d["time_ms_median"] * 1e-3
    return d.reset_index(drop=True)


def _fit(rows: pd.DataFrame) -> tuple[float, float]:
    from scipy.optimize import lsq_linear

    t = rows["time_s"].to_numpy()
    a = np.c_[rows["steps"].to_numpy(), rows["wire_bytes"].to_numpy() / (rows["link_gb_per_s"].to_numpy() * 1e9)] / t[:, None]
    res = lsq_linear(a, np.ones(len(t)), bounds=([0.0, 1.0], [np.inf, np.inf]), method="bvls")
    return float(res.x[0]), float(1.0 / res.x[1])


def fit_links(frame: pd.DataFrame | None = None) -> dict:
    """Fit ``(e, α)`` per link kind by relative least squares (module docstring).

    Parameters
    ----------
    frame : DataFrame, optional
        :func:`collective_frame` rows to fit on (default: all; pass a subset, e.g. the A100 systems, for a held-out
        score).

    Returns
    -------
    dict
        ``{kind: {"efficiency": e, "latency_s": α, "n_rows": int, "systems": [...]}}`` for each kind with rows;
        ``e`` and ``α`` rounded to 6 significant digits (what is shipped).
    """
    frame = collective_frame() if frame is None else frame
    system = frame["system"].astype(str)
    groups = [(kind, frame["link"] == kind) for kind in LINK_KINDS]
    groups += [(fabric, (frame["link"] == "infiniband") & (system == s)) for s, fabric in IB_FABRICS.items()]
    out = {}
    for kind, mask in groups:
        rows = frame[mask]
        if len(rows) == 0:
            continue
        alpha, e = _fit(rows)
        out[kind] = {"efficiency": float(f"{e:.6g}"), "latency_s": float(f"{alpha:.6g}"), "n_rows": int(len(rows)),
                     "systems": sorted(set(rows["system"].astype(str)))}
    return out


def predict_collective_time(frame: pd.DataFrame, params: dict) -> np.ndarray:
    """α–β time (s) of each :func:`collective_frame` row with the ``(e, α)`` of its link kind in ``params``
    (:func:`fit_links`'s layout); rows whose kind ``params`` lacks are NaN."""
    out = np.full(len(frame), np.nan)
    for kind, p in params.items():
        m = (frame["link"] == kind).to_numpy()
        f = frame[m]
        out[m] = p["latency_s"] * f["steps"].to_numpy() + f["wire_bytes"].to_numpy() / (p["efficiency"] * f["link_gb_per_s"].to_numpy() * 1e9)
    return out


@functools.cache
def fitted_params() -> dict:
    """The shipped fit (``perfmodel/step/fitted/nccl_links.json``): ``{"format", "fitted_on", "links": {kind:
    {"efficiency", "latency_s", "n_rows", "systems"}}}``. JSON: loading it runs no code."""
    with open(FITTED_PATH, encoding="utf-8") as fh:
        p = json.load(fh)
    want = {*LINK_KINDS, *IB_FABRICS.values()}
    if p.get("format") != _FORMAT or set(p.get("links", {})) != want:
        raise ValueError(f"{FITTED_PATH}: expected format {_FORMAT} with links {sorted(want)}; got format "
                         f"{p.get('format')!r} with {sorted(p.get('links', {}))}. Rebuild it: python -m perfmodel.step.collectives")
    return p


def fitted_link(kind: str, gpu=None):
    """The :class:`Interconnect` of a named link with NCCL's fitted efficiency and latency.

    Parameters
    ----------
    kind : str
        ``"nvlink"`` (bandwidth from ``gpu``'s catalog row, both directions halved), ``"infiniband-hdr"`` (25 GB/s),
        ``"infiniband-ndr"`` (50 GB/s), ``"pcie4"`` (31.5 GB/s) or ``"pcie5"`` (63 GB/s): per-direction peak; ``e``
        and ``α`` from :func:`fitted_params`: an InfiniBand fabric's own fit (:data:`IB_FABRICS`: HDR on the DGX A100
        cluster's rows, NDR on the DGX H100 cluster's), the other links their kind's.
    gpu : str or GPUSpec, optional
        Required for ``"nvlink"``.

    Returns
    -------
    Interconnect

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown kind, or ``"nvlink"`` for a GPU the catalog lists without NVLink.
    ValueError
        ``"nvlink"`` without ``gpu``.
    """
    if not isinstance(kind, str):
        raise TypeError(f"fitted_link: kind must be a link name, one of {list(_NAMED)}; got {type(kind).__name__}.")
    key = kind.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in _NAMED:
        raise UnknownNameError(f"fitted_link: unknown link kind {kind!r}. Expected one of: {', '.join(_NAMED)} (links with "
                               "measured NCCL curves); other links (pcie3, ethernet-*) keep the assumed NCCL_EFFICIENCY "
                               "via perfmodel.step.collectives.resolve_interconnect.")
    fam, gb = _NAMED[key]
    links = fitted_params()["links"]
    p = links.get(key, links[fam])  # a fabric fitted on its own system's rows, else its kind's pooled fit
    name = key
    if gb is None:
        if gpu is None:
            raise ValueError("fitted_link('nvlink') takes its bandwidth from the GPU's catalog row: pass gpu=.")
        from perfmodel.datasets import gpu_spec

        spec = gpu_spec(gpu)
        if not (math.isfinite(spec.nvlink_gb_per_s) and spec.nvlink_gb_per_s > 0):
            raise UnknownNameError(f"fitted_link('nvlink'): GPU {spec.gpu} has no NVLink in the catalog (nvlink_gb_per_s = "
                                   f"{spec.nvlink_gb_per_s:g}); expected a GPU with NVLink, or use its PCIe link.")
        gb, name = spec.nvlink_gb_per_s / 2, f"nvlink ({spec.gpu})"
    return Interconnect(name, gb, p["latency_s"], p["efficiency"])


def rebuild(path: str | Path | None = None, frame: pd.DataFrame | None = None) -> dict:
    """Refit on all the systems and write the JSON the package ships (``path`` default :data:`FITTED_PATH`).

    Returns
    -------
    dict
        What was written.
    """
    out = {"format": _FORMAT,
           "fitted_on": "microsoft/vidur@7d47513 data/profiling/network (all systems with a link kind; see "
                        # the name the artifact records (kept from before the step model had its own package: shipped files stay byte-identical; the old module path is an alias)
                        "perfmodel.models.collectives), relative least squares per link kind and per InfiniBand fabric "
                        "(HDR: a100_dgx rows, NDR: h100_dgx rows)",
           "links": fit_links(frame)}
    path = Path(path) if path is not None else FITTED_PATH
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if path.resolve() == FITTED_PATH:
        fitted_params.cache_clear()
    return out


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(rebuild(), indent=1))


#: How much slower compute runs while a collective runs beside it, as a share of the compute's own time: NCCL's kernels
#: take SMs and memory bandwidth from the kernels they overlap. 0.189 is the mean slowdown of overlapped compute that
#: Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning (arXiv 2507.03114, 2025)
#: measured on GPT and Llama training on 4 A100, H100, MI210 and MI250 (at most 0.40); a published constant, not fitted
#: here. A step's hidden communication slows the compute under it by this share (:func:`overlap_slowdown`).
OVERLAP_SLOWDOWN = 0.189


def overlap_slowdown(hidden_comm_s: float, compute_s: float, share: float = OVERLAP_SLOWDOWN) -> float:
    """Seconds the compute of a step loses to the communication hidden under it: ``share`` of the compute that runs
    beside a collective, which is at most the hidden communication's time and at most the compute itself."""
    if share < 0:
        raise ValueError(f"the overlap slowdown is a share of the compute's time, ≥ 0; got {share!r}.")
    return float(share * min(max(hidden_comm_s, 0.0), max(compute_s, 0.0)))


#: assumed share of a link's peak bandwidth NCCL's ring collectives reach on large messages (nccl-tests' all-reduce
#: bus bandwidth on a DGX A100 is about 230 GB/s of NVLink's 300 GB/s per direction): the **fallback** for links
#: without measured NCCL curves (PCIe, Ethernet, a user's ``Interconnect``). NVLink and InfiniBand take ``e`` and ``α``
#: fitted on Vidur's measurements instead (:func:`perfmodel.step.collectives.fitted_link`).
NCCL_EFFICIENCY = 0.75


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
    tree_latency_s : float
        0 (default): NCCL runs its all-reduces over this link as rings. ``> 0``: the link of a process group that spans
        nodes, over which NCCL may run its all-reduce as a tree instead (:func:`allreduce_time`): the whole latency of
        that tree, ``2·((ppn−1)·α_intra + ⌊log2 N⌋·α_inter)`` for ``ppn`` ranks on each of ``N`` nodes
        (:func:`perfmodel.step.strategy.tree_latency`, set by :func:`perfmodel.step.strategy.resolve_links`).
    mesh_peers : int
        0 (default): a switched link (NVSwitch, a NIC, PCIe), every GPU's whole bandwidth whichever peers it talks to.
        ``k > 0``: a fully connected mesh, ``bandwidth_gb_per_s`` the sum of a GPU's ``k`` direct links, of which a
        process group uses those to its own members (:func:`mesh_link`: AMD's Infinity Fabric).
    domain_gpus : int
        0 (default): the link joins every GPU of the node. ``k > 0``: it joins blocks of ``k`` GPUs only (an NVLink
        bridge across 2 PCIe cards), and a group reaching beyond its block runs at the ``beyond`` link
        (:func:`bridged_link`).
    beyond : Interconnect, optional
        The link between the blocks of ``domain_gpus`` (the cards' PCIe).
    """

    name: str
    bandwidth_gb_per_s: float
    latency_s: float = 5e-6
    efficiency: float = NCCL_EFFICIENCY
    mesh_peers: int = 0
    domain_gpus: int = 0
    beyond: "Interconnect | None" = None
    tree_latency_s: float = 0.0

    def __post_init__(self):
        for f in ("bandwidth_gb_per_s", "latency_s", "efficiency", "tree_latency_s"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (f not in ("latency_s", "tree_latency_s") and v == 0):
                raise ValueError(f"Interconnect {self.name!r}: {f} must be a positive finite number; got {v!r}.")
        if self.efficiency > 1:
            raise ValueError(f"Interconnect {self.name!r}: efficiency must be in (0, 1]; got {self.efficiency!r}.")
        if isinstance(self.mesh_peers, bool) or not isinstance(self.mesh_peers, int) or self.mesh_peers < 0:
            raise ValueError(f"Interconnect {self.name!r}: mesh_peers must be 0 (a switched link) or the number of peers "
                             f"a GPU of a fully connected mesh links to directly; got {self.mesh_peers!r}.")
        if isinstance(self.domain_gpus, bool) or not isinstance(self.domain_gpus, int) or self.domain_gpus < 0:
            raise ValueError(f"Interconnect {self.name!r}: domain_gpus must be 0 (the link joins the whole node) or the "
                             f"GPUs of one block it joins (2 for an NVLink bridge); got {self.domain_gpus!r}.")
        if self.domain_gpus and not isinstance(self.beyond, Interconnect):
            raise ValueError(f"Interconnect {self.name!r}: a link that joins blocks of {self.domain_gpus} GPUs needs the "
                             "link between the blocks: beyond=Interconnect(...) (e.g. the cards' PCIe).")

    @property
    def bytes_per_s(self) -> float:
        """Effective bandwidth per direction, bytes/s."""
        return self.bandwidth_gb_per_s * 1e9 * self.efficiency


#: Named links (per-direction peak bandwidth). PCIe x16: 8 / 16 / 32 GT/s per lane with 128b/130b encoding (PCI-SIG
#: base specifications 3.0 / 4.0 / 5.0); networks: their line rate (100 GbE = 12.5 GB/s; InfiniBand HDR 200 Gb/s,
#: NDR 400 Gb/s). ``"nvlink"`` takes the GPU's NVLink bandwidth from the catalog (``nvlink_gb_per_s``, both
#: directions, halved). :func:`resolve_interconnect` gives ``"nvlink"``, ``"infiniband-hdr"`` and ``"infiniband-ndr"``
#: the efficiency and latency fitted on Vidur's NCCL curves (:func:`perfmodel.step.collectives.fitted_link`); the
#: entries below carry the assumed :data:`NCCL_EFFICIENCY` and guessed latencies (PCIe and Ethernet: no measurements).
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


#: links whose efficiency and latency are fitted on measured NCCL curves (:mod:`perfmodel.step.collectives`)
_FITTED_LINKS = ("infiniband-hdr", "infiniband-ndr")


#: GPUs one NVLink bridge joins on the catalog's PCIe cards that have one (their datasheets, the catalog's
#: ``interconnect_source``: the A100 PCIe's "NVLink bridge for 2 GPUs", the A40's and RTX A6000's "2-way bridge", the
#: H100 PCIe's and H100 NVL's bridge pairs; the H200 NVL's "2- or 4-way" bridge taken as its 2-way). Between the
#: pairs the cards talk over PCIe. A 4-way H200 NVL board: ``Interconnect(..., domain_gpus=4, beyond=...)``.
NVLINK_BRIDGE_GPUS = {"A100-PCIe-40GB": 2, "A100-PCIe-80GB": 2, "A40": 2, "RTX-A6000": 2, "H100-PCIe": 2,
                      "H100-NVL": 2, "H200-NVL": 2}


def _nvlink(spec) -> Interconnect:
    link = fitted_link("nvlink", spec)
    pair = NVLINK_BRIDGE_GPUS.get(spec.gpu)
    if pair is None:
        return link
    gen = int(spec.pcie_generation) if math.isfinite(spec.pcie_generation) else 4
    return dataclasses.replace(link, name=f"{link.name}, bridged in blocks of {pair}", domain_gpus=pair,
                               beyond=fitted_link(f"pcie{gen}") if f"pcie{gen}" in _NAMED else INTERCONNECTS[f"pcie{gen}"])


def bridged_link(link: Interconnect, ranks: int, stride: int = 1) -> Interconnect:
    """The link a process group of ``ranks`` GPUs of one node, ``stride`` ranks apart, runs at over a link that joins
    blocks of ``link.domain_gpus`` GPUs only (an NVLink bridge between 2 PCIe cards): the bridge while the group's GPUs
    lie in one block (``stride·ranks ≤ domain_gpus``), else the link between the blocks (``link.beyond``, the cards'
    PCIe), which every ring and every pipeline's hop between blocks crosses, at the pace of that slowest hop — as
    Vidur's 4-GPU all-reduces on pairwise-NVLink nodes run (:mod:`perfmodel.step.collectives` fits its PCIe on them).
    A link that joins the whole node is returned as it is."""
    if not link.domain_gpus:
        return link
    if int(stride) * int(ranks) <= link.domain_gpus:
        return dataclasses.replace(link, domain_gpus=0, beyond=None)
    return dataclasses.replace(link.beyond, name=f"{link.beyond.name}, between {link.name.split(',')[0]} blocks of "
                                                 f"{link.domain_gpus}")


def _has_infinity_fabric(spec) -> bool:
    v = getattr(spec, "infinity_fabric_gb_per_s", math.nan)
    return math.isfinite(v) and v > 0


#: GPUs of the AMD platforms whose Infinity Fabric the catalog describes (``infinity_fabric_gb_per_s``: the sum of one
#: GPU's links to the 7 others of an 8-GPU board, both directions).
INFINITY_FABRIC_GPUS = 8


def infinity_fabric(gpu) -> Interconnect:
    """The Infinity Fabric of an 8-GPU AMD platform (MI300X, MI325X, MI355X): every GPU linked directly to each of the
    7 others (``mesh_peers=7``), the catalog's aggregate (``infinity_fabric_gb_per_s``, both directions) halved per
    direction, at the assumed :data:`NCCL_EFFICIENCY` and PCIe's guessed latency; a process group of fewer GPUs of
    the board uses only the links among its members (:func:`mesh_link`). ``basis`` names the link. Checked, not
    fitted, against RCCL all-reduces measured on an MI300X board (:func:`perfmodel.datasets.load_rccl_allreduce`)."""
    from perfmodel.datasets import gpu_spec

    spec = gpu_spec(gpu)
    if not _has_infinity_fabric(spec):
        raise UnknownNameError(f"GPU {spec.gpu} has no Infinity Fabric in the catalog (infinity_fabric_gb_per_s = "
                               f"{spec.infinity_fabric_gb_per_s:g}); use its PCIe link or pass an Interconnect.")
    return Interconnect(f"infinity-fabric ({spec.gpu})", spec.infinity_fabric_gb_per_s / 2, 10e-6,
                        mesh_peers=INFINITY_FABRIC_GPUS - 1)


def mesh_link(link: Interconnect, ranks: int, *, ring: bool = True) -> Interconnect:
    """The share of a fully connected mesh (``link.mesh_peers > 0``) a process group gets on one board: a ring
    collective (all-reduce, all-gather, reduce-scatter) of ``ranks`` GPUs of the board spreads its channels over each
    GPU's direct links to the ``ranks − 1`` others (``ring``); a send to one neighbour (a pipeline's, context
    parallelism's ring of sends: ``ring=False``) has one direct link. A switched link (``mesh_peers == 0``) is returned
    as it is: every GPU has its whole bandwidth to any peer. RCCL's all-reduce on an 8-GPU MI300X board reaches
    47.7 GB/s of bus bandwidth on 2 GPUs and 312.9 on 8 (one 64 GB/s link against seven)."""
    if not link.mesh_peers:
        return link
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise ValueError(f"mesh_link: ranks must be the group's GPUs on one board, a positive whole number; got {ranks!r}.")
    used = min(max(int(ranks) - 1, 1), link.mesh_peers) if ring else 1
    if used == link.mesh_peers:
        return link
    return dataclasses.replace(link, name=f"{link.name}, {used} of its {link.mesh_peers} direct links",
                               bandwidth_gb_per_s=link.bandwidth_gb_per_s * used / link.mesh_peers, mesh_peers=0)


def resolve_interconnect(interconnect=None, gpu=None) -> Interconnect:
    """The :class:`Interconnect` for a name, a spec, or (``None``) the GPU's own: its NVLink when the catalog lists one,
    else its Infinity Fabric (AMD's 8-GPU platforms, :func:`infinity_fabric`), else its PCIe generation.

    NVLink and InfiniBand (``"infiniband-hdr"``, ``"infiniband-ndr"``) carry NCCL's efficiency and latency fitted on
    Vidur's measured all-reduce and send/recv curves (:func:`perfmodel.step.collectives.fitted_link`); PCIe and
    Ethernet the assumed :data:`NCCL_EFFICIENCY` and their guessed latencies.

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
            return _nvlink(spec)
        if _has_infinity_fabric(spec):
            return infinity_fabric(spec)
        gen = int(spec.pcie_generation) if math.isfinite(spec.pcie_generation) else 3
        if f"pcie{gen}" not in INTERCONNECTS:  # never priced as another generation's link without a word
            known = sorted(k for k in INTERCONNECTS if k.startswith("pcie"))
            raise ValueError(f"{spec.gpu} has PCIe generation {gen}, for which perfmodel has no link model (it has "
                             f"{', '.join(known)}). Pass the link explicitly: interconnect='{known[0]}' (or another), or an "
                             "Interconnect(name, GB/s per direction, latency s).")
        return INTERCONNECTS[f"pcie{gen}"]
    if isinstance(interconnect, dict):
        raise TypeError("resolve_interconnect gives one link; a dict of links per process group ({'tp': ..., 'pp': ..., "
                        "'dp': ...}) is for multi-GPU strategies: use resolve_links, or pass the dict to "
                        "predict_step_time / predict_memory / explore_strategies with n_gpus > 1.")
    if not isinstance(interconnect, str):
        raise TypeError(f"interconnect must be a name ({', '.join(['nvlink', *INTERCONNECTS])}) or an Interconnect; "
                        f"got {type(interconnect).__name__}.")
    key = interconnect.strip().lower().replace("_", "-").replace(" ", "-")
    if key in ("infinity-fabric", "xgmi"):
        if spec is None or not _has_infinity_fabric(spec):
            raise UnknownNameError(f"interconnect {interconnect!r} takes its bandwidth from the GPU's catalog row "
                                   f"(infinity_fabric_gb_per_s): pass the gpu= of an AMD GPU that has it (MI300X, MI325X, "
                                   f"MI355X){'' if spec is None else f'; {spec.gpu} has none'}, or an Interconnect.")
        return infinity_fabric(spec)
    if key == "nvlink":
        if spec is None:
            raise ValueError("interconnect 'nvlink' takes its bandwidth from the GPU's catalog row: pass gpu=, or an "
                             "Interconnect('nvlink', bandwidth_gb_per_s=..., latency_s=...).")
        if not (math.isfinite(spec.nvlink_gb_per_s) and spec.nvlink_gb_per_s > 0):
            own = ("'infinity-fabric' (its board's link)" if _has_infinity_fabric(spec) else
                   f"its PCIe ('pcie{int(spec.pcie_generation) if math.isfinite(spec.pcie_generation) else 4}')")
            raise UnknownNameError(f"interconnect 'nvlink': GPU {str(spec.gpu).split('@')[0]} has no NVLink in the catalog "
                                   f"(nvlink_gb_per_s = {spec.nvlink_gb_per_s:g}). Use {own}, leave the link out for the "
                                   "GPU's own, or pass an Interconnect.")
        return _nvlink(spec)
    if key in _FITTED_LINKS:
        return fitted_link(key)
    if key not in INTERCONNECTS:
        raise UnknownNameError(f"Unknown interconnect {interconnect!r}. Expected one of: nvlink, infinity-fabric, {', '.join(INTERCONNECTS)}, "
                               "an Interconnect(name, bandwidth_gb_per_s, latency_s), or a link per level such as "
                               "{'intra': 'nvlink', 'inter': 'infiniband-ndr'} (on the command line "
                               "intra=nvlink,inter=infiniband-ndr).")
    return INTERCONNECTS[key]


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (GPUs in the collective) must be a positive int; got {n!r}.")


def _check_bytes(nbytes):
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float, np.integer, np.floating)) or not math.isfinite(nbytes) or nbytes < 0:
        raise ValueError(f"nbytes (message size in bytes) must be a finite number >= 0; got {nbytes!r}.")


#: the share of its ring's bus bandwidth NCCL's tree all-reduce reaches on the same links: NCCL's own tuning model
#: (``ncclTopoTuneModel``, src/graph/tuning.cc, NVIDIA/nccl at 5067397c: a tree all-reduce's bus bandwidth is its
#: channels' bandwidth ``* .92``, the ring's the channels' bandwidth itself, and the tree's algorithm bandwidth half
#: its bus bandwidth)
TREE_BUS_SHARE = 0.92
#: NCCL's correction of its tree all-reduce's bandwidth on medium messages ("Trees are not perfectly sticking to the
#: model for medium sizes", ``treeCorrectionFactor`` in src/graph/tuning.cc at 5067397c, the Simple protocol's row):
#: index ``⌊log2(S / 64)⌋`` for 64 B to 256 MiB; 1 from 512 MiB up
TREE_CORRECTION = (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9)


def tree_correction(nbytes: float) -> float:
    """NCCL's correction of its tree all-reduce's bandwidth for a message of ``nbytes`` (:data:`TREE_CORRECTION`;
    ``ncclTopoGetAlgoTime``: ``log2i(nBytes >> 6)`` indexes it below 23, 1.0 beyond)."""
    size = int(nbytes) >> 6
    if size < 1:
        return 1.0
    index = size.bit_length() - 1
    return TREE_CORRECTION[index] if index < len(TREE_CORRECTION) else 1.0


def allreduce_time(nbytes: float, n: int, link: Interconnect, *, algorithm: str = "nccl") -> float:
    """Seconds to all-reduce ``nbytes`` over ``n`` GPUs; 0 for one GPU or nothing to send.

    ``algorithm``: ``"ring"`` ``2(n−1)/n·S/(eB) + 2(n−1)α``; ``"tree"`` a textbook binary tree with one latency per
    level, ``2·S/(eB) + 2⌈log2 n⌉α``; ``"nccl"`` (default) the one of NCCL's algorithms its tuning model picks: the
    ring, or on a link that carries NCCL's tree over nodes (``link.tree_latency_s > 0``: a group that spans nodes,
    :func:`perfmodel.step.strategy.resolve_links`) that tree where it is faster,
    ``tree_latency_s + 2·S/(0.92·c(S)·eB)`` (:data:`TREE_BUS_SHARE`, NCCL's medium-size correction ``c``,
    :func:`tree_correction`): a chain through each node's ranks and a double binary tree over the nodes, whose latency
    grows with ``log2`` of the nodes where the ring's grows with the ranks, so the tree takes the small all-reduces of
    many nodes (a data-parallel bucket on hundreds of GPUs) and the ring the large ones of a few. Both are timed with
    the link's fitted ``e`` and ``α``; NCCL's own constants (its latencies, the ring's 1.4 "plateau" factor across
    nodes, its protocols) are not taken, only the tree's structure, bandwidth share and correction."""
    _check_n(n)
    _check_bytes(nbytes)
    if n == 1 or nbytes <= 0:
        return 0.0
    ring = 2 * (n - 1) / n * nbytes / link.bytes_per_s + 2 * (n - 1) * link.latency_s
    if algorithm == "ring":
        return ring
    if algorithm == "tree":
        return 2 * nbytes / link.bytes_per_s + 2 * math.ceil(math.log2(n)) * link.latency_s
    if algorithm == "nccl":
        if link.tree_latency_s <= 0:
            return ring
        tree = 2 * nbytes / (TREE_BUS_SHARE * tree_correction(nbytes) * link.bytes_per_s) + link.tree_latency_s
        return min(ring, tree)
    raise UnknownNameError(f"Unknown all-reduce algorithm {algorithm!r}. Expected one of: nccl, ring, tree.")


def allgather_time(nbytes: float, n: int, link: Interconnect) -> float:
    """Seconds to all-gather a tensor of ``nbytes`` (the gathered size) over ``n`` GPUs: ``(n−1)/n·S/(eB) + (n−1)α``."""
    _check_n(n)
    _check_bytes(nbytes)
    if n == 1 or nbytes <= 0:
        return 0.0
    return (n - 1) / n * nbytes / link.bytes_per_s + (n - 1) * link.latency_s


def reduce_scatter_time(nbytes: float, n: int, link: Interconnect) -> float:
    """Seconds to reduce-scatter ``nbytes`` (the full size before scattering) over ``n`` GPUs; same cost as
    :func:`allgather_time`."""
    return allgather_time(nbytes, n, link)


def alltoall_time(nbytes: float, n: int, link: Interconnect) -> float:
    """Seconds of an all-to-all over ``n`` GPUs in which each sends ``nbytes`` in all, ``1/n`` of it to itself (an
    expert-parallel dispatch or combine of a mixture of experts' routed tokens): ``(n−1)/n·S/(eB) + (n−1)α``, the
    sends to its ``n − 1`` peers as NCCL's all-to-all issues them, the link's bus share (nccl-tests' ``alltoall``
    bus bandwidth is ``(n−1)/n`` of its algorithm bandwidth). A group that spans nodes passes the link its NICs give
    it (:func:`perfmodel.step.strategy.alltoall_across`). 0 for one GPU or nothing to send."""
    return allgather_time(nbytes, n, link)


#: DeepEP's normal (training) kernels between nodes as its README publishes them (deepseek-ai/DeepEP, README.md at
#: 567632dd, "Normal kernels with NVLink and RDMA forwarding"; docs/legacy.md since its V2): expert-parallel size ->
#: (dispatch, combine) "bottleneck" RDMA bandwidth, GB/s per GPU, on H800s with one ConnectX-7 400 Gb/s NIC each
#: (:data:`DEEPEP_NIC_GB_PER_S`), 4,096 tokens of hidden 7,168, top-8 of 256 experts over the top-4 node groups, FP8
#: dispatch, BF16 combine. Logical bandwidth, as its tests count it: each token once per distinct destination node, its
#: own node included (tests/test_internode.py at the same commit).
DEEPEP_INTERNODE_GB_PER_S = {16: (43.0, 43.0), 32: (58.0, 57.0), 64: (51.0, 50.0)}
#: the NIC line rate of those measurements, GB/s ("~50 GB/s maximum bandwidth", the same README)
DEEPEP_NIC_GB_PER_S = 50.0


def deepep_rdma_share() -> float:
    """DeepEP's logical RDMA rate between nodes as a share of the NIC's line rate: the mean of its published dispatch
    and combine rates over expert-parallel sizes 16, 32 and 64 (:data:`DEEPEP_INTERNODE_GB_PER_S`) over
    :data:`DEEPEP_NIC_GB_PER_S` (1.007: counted with each token's own node, the rate may pass the line rate)."""
    rates = [x for pair in DEEPEP_INTERNODE_GB_PER_S.values() for x in pair]
    return float(np.mean(rates)) / DEEPEP_NIC_GB_PER_S


def routed_spread(experts: int, per_token: int, units: int, groups: int | None = None,
                  group_topk: int | None = None) -> float:
    """The expected number of ``units`` (nodes, or ranks) a token's ``per_token`` routed experts fall on, the
    ``experts`` laid out evenly and in order over the units, each token's experts drawn evenly at random — from all of
    them, or under group-limited routing (``groups`` equal groups of consecutive experts, ``group_topk`` of them open to
    each token: DeepSeek-V3's node-limited routing, Megatron-Core's ``--moe-router-num-groups`` /
    ``--moe-router-group-topk``) from the experts of ``group_topk`` groups drawn evenly. A unit is missed when none of
    the token's experts is among its own: without groups with probability ``C(E − E/U, k) / C(E, k)``; with groups,
    summed over which of the groups the unit overlaps are open to the token (``C(G − |I|, M − |T|) / C(G, M)`` for the
    open ones ``T`` of the ``|I|`` it overlaps) times ``C(pool − c_T, k) / C(pool, k)``, ``c_T`` the unit's experts in
    them and ``pool`` the ``M·E/G`` experts open — averaged over the units. Returns ``units·(1 − P(missed))``."""
    import itertools

    E, k, U = int(experts), int(per_token), int(units)
    if E < 1 or k < 1 or U < 1 or E % U or k > E:
        raise ValueError(f"routed_spread: {E} experts must split evenly over {U} units and hold the {k} a token "
                         "takes.")
    per_unit = E // U
    G, M = (int(groups), int(group_topk)) if groups and group_topk else (0, 0)
    if not G or M >= G or E % G or k > M * (E // G):
        return U * (1.0 - math.comb(E - per_unit, k) / math.comb(E, k))
    per_group, pool = E // G, M * (E // G)
    missed = 0.0
    for j in range(U):
        lo, hi = j * per_unit, (j + 1) * per_unit
        overlap = {g: min(hi, (g + 1) * per_group) - max(lo, g * per_group)
                   for g in range(lo // per_group, (hi - 1) // per_group + 1)}
        whole = [g for g, c in overlap.items() if c == per_group]
        part = [c for g, c in overlap.items() if c < per_group]  # at most the two at the unit's ends
        n_in = len(overlap)
        for x in range(len(whole) + 1):  # x of the unit's whole groups open to the token
            for opened in itertools.product((0, 1), repeat=len(part)):
                t = x + sum(opened)
                if t > M or M - t > G - n_in:
                    continue
                ways = math.comb(len(whole), x) * math.comb(G - n_in, M - t) / math.comb(G, M)
                held = x * per_group + sum(c for c, o in zip(part, opened) if o)
                missed += ways * math.comb(pool - held, k) / math.comb(pool, k)
    return U * (1.0 - missed / U)


def deepep_time(nbytes: float, ep: int, per_token: int, nodes: float, ranks: float, nvl: Interconnect,
                rdma: Interconnect | None = None, nodes_in_group: int = 1) -> float:
    """Seconds of one DeepEP dispatch (or combine) of a rank's routed tokens over an expert-parallel group of ``ep``
    GPUs on ``nodes_in_group`` nodes, ``nbytes`` the rank's ``per_token`` copies of each token at the hidden size (what
    an all-to-all sends). DeepEP sends each token once per destination: on one node once per rank it goes to
    (``ranks`` of them on average, :func:`routed_spread`) over NVLink (``nvl``), ``(ep−1)/ep`` of those bytes to the
    other ranks;
    across nodes once per node (``nodes``, its own counted, as DeepEP's logical rates count it) over the GPU's NIC at
    DeepEP's published rate (``rdma``: the NIC's line rate times :func:`deepep_rdma_share`), forwarded in the node
    over NVLink to its ranks at the same time: the slower of the two. One kernel, one latency (its link's α) either
    way; the handshake DeepEP's normal kernels make with the host before a dispatch is not counted."""
    if ep <= 1 or nbytes <= 0:
        return 0.0
    per_copy = float(nbytes) / max(int(per_token), 1)
    if rdma is None or nodes_in_group <= 1:  # one kernel: the share for the other ranks at the node's rate, one latency
        return (ep - 1) / ep * per_copy * ranks / nvl.bytes_per_s + nvl.latency_s
    t_rdma = per_copy * nodes / rdma.bytes_per_s + rdma.latency_s
    t_nvl = per_copy * ranks / nvl.bytes_per_s + nvl.latency_s
    return max(t_rdma, t_nvl)


def bus_bandwidth_gb_per_s(collective: str, nbytes: float, n: int, link: Interconnect, *,
                           algorithm: str = "nccl") -> float:
    """The bus bandwidth (GB/s) nccl-tests would report for the modelled ``collective`` (``"all_reduce"``,
    ``"all_gather"`` or ``"alltoall"``) of ``nbytes`` over ``n`` GPUs on ``link``: the bytes over the modelled time
    (:func:`allreduce_time`, :func:`allgather_time`, :func:`alltoall_time`) times nccl-tests' factor, ``2(n−1)/n`` for
    an all-reduce, ``(n−1)/n`` for an all-gather and an all-to-all; ``algorithm`` is the all-reduce's
    (:func:`allreduce_time`)."""
    if collective not in ("all_reduce", "all_gather", "alltoall"):
        raise UnknownNameError(f"bus_bandwidth_gb_per_s: collective must be 'all_reduce', 'all_gather' or 'alltoall'; "
                               f"got {collective!r}.")
    _check_n(n)
    if n == 1 or nbytes <= 0:
        raise ValueError("bus_bandwidth_gb_per_s: a bus bandwidth needs at least 2 GPUs and bytes to move; "
                         f"got n={n!r}, nbytes={nbytes!r}.")
    reduce = collective == "all_reduce"
    t = (allreduce_time(nbytes, n, link, algorithm=algorithm) if reduce else alltoall_time(nbytes, n, link) if collective == "alltoall"
         else allgather_time(nbytes, n, link))
    return (2.0 if reduce else 1.0) * (n - 1) / n * nbytes / t / 1e9


def p2p_time(nbytes: float, link: Interconnect) -> float:
    """Seconds to send ``nbytes`` from one GPU to another: ``S/(eB) + α``."""
    _check_bytes(nbytes)
    if nbytes <= 0:
        return 0.0
    return nbytes / link.bytes_per_s + link.latency_s

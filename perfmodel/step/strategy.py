"""Parallel layouts as names: the strategies a step can be spread with (``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"``,
their combinations such as ``"fsdp8-tp8-pp8"`` and ``"fsdp4-cp2"``), their checks, their pipeline schedules, and which
link each process group uses once the GPUs span nodes (:func:`resolve_links`). The timing of a layout is
:mod:`perfmodel.step.parallel`'s.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd

from perfmodel._errors import UnknownNameError
from perfmodel.step.collectives import resolve_interconnect

__all__ = ["STRATEGIES", "StrategyError", "LINK_GROUPS", "LINK_LEVELS", "crosses_nodes", "resolve_links", "alltoall_across", "ReferenceNetwork", "REFERENCE_NETWORKS", "FALLBACK_INTER", "DefaultNetwork", "default_network", "mesh_allreduce_check", "ring_step_latency", "tree_latency", "check_strategy_name", "parse_strategy", "strategy_combinations", "PIPELINE_SCHEDULES", "pipeline_virtual_stages", "PIPELINE_LAYER_KEYS", "check_pipeline_layers", "parse_pipeline_layers", "pipeline_chunks", "check_pipeline_split", "format_pipeline_layers", "FRAMEWORKS", "check_framework", "resolve_execution", "TP_BACKWARD_OVERLAP", "check_stack_framework", "check_async_tp", "context_parallel_shape", "check_tensor_parallel", "check_sequence_length"]


#: strategies :func:`predict_parallel_step_time` models over all the GPUs; combinations of them with their degrees
#: (``"dp2-tp2-pp2"``) are spelled as :func:`parse_strategy` reads them.
STRATEGIES = ("dp", "fsdp", "tp", "pp")


class StrategyError(ValueError):
    """A parallel strategy does not divide the model or the batch (tensor parallel over heads that do not split, more
    pipeline stages than layers, a global batch that does not split over the GPUs)."""


#: process groups of a combined strategy that may use their own link (``interconnect={"tp": ..., "pp": ..., "dp": ...}``;
#: ``"cp"``, the context-parallel group, defaults to the ``"tp"`` link when the dict leaves it out and names ``"tp"``;
#: ``"ep"``, the expert-parallel group, to the ``"dp"`` link, whose ranks it is carved from).
LINK_GROUPS = ("tp", "pp", "dp", "cp", "ep")


#: levels of a cluster's links (``interconnect={"intra": "nvlink", "inter": "infiniband-ndr"}``): inside a node of
#: ``gpus_per_node`` GPUs, and between nodes (the NIC of each GPU: DGX-class nodes give every GPU its own NIC).
LINK_LEVELS = ("intra", "inter")


def _positive_count(name: str, value, what: str) -> int:
    """``value`` as an int when it is a positive int (not a bool); else a ``ValueError`` naming ``name`` and saying
    ``what`` it counts."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int {what}; got {value!r}.")
    return int(value)


def _check_gpus_per_node(gpus_per_node) -> int:
    return _positive_count("gpus_per_node", gpus_per_node,
                           "(GPUs sharing a node's fast link, e.g. 8 for a DGX / p5.48xlarge / a3-highgpu-8g)")


def check_micro_batches(micro_batches) -> int:
    """Micro-batches per step: a positive int, or None for 1."""
    return 1 if micro_batches is None else _positive_count("micro_batches", micro_batches, "or None (1)")


def crosses_nodes(degrees: dict, gpus_per_node: int) -> dict:
    """Which process groups of a layout span more than one node, ranks placed Megatron's and torchtitan's way (tensor
    parallel innermost, then context parallel, then data parallel, pipeline outermost): the ``tp`` group when
    ``tp > gpus_per_node``; the ``cp`` group when ``tp·cp > gpus_per_node``; the ``dp`` group (FSDP's, which with
    context parallelism spans the ``dp·cp`` ranks) when ``tp·cp·dp > gpus_per_node``; the ``pp`` group (neighbouring
    stages ``tp·cp·dp`` ranks apart) when the pipeline spans nodes, ``pp > 1`` and ``tp·cp·dp·pp > gpus_per_node``.
    With ``tp·cp·dp < gpus_per_node`` only the hops at node boundaries cross, but a pipeline runs at the pace of its
    slowest hop: its activations and gradients pass that link every micro-batch. The ``ep`` group (expert parallel,
    carved from the tensor-, context- and data-parallel ranks, consecutive among them: Megatron-Core lays its expert
    grid out as ``etp-ep-edp-pp``; with each expert whole on its rank, expert tensor parallelism 1, the ``ep`` ranks
    are consecutive, as torchtitan takes ``ep`` from ``dp_shard × cp × tp`` when its ``etp`` is 1; with the experts
    split over the ``tp`` ranks, ``degrees``' ``"etp"`` equal to ``tp``, they are ``tp`` apart) when ``etp·ep >
    gpus_per_node``."""
    tp, dp, pp = int(degrees.get("tp", 1)), int(degrees.get("dp", 1)), int(degrees.get("pp", 1))
    cp, ep, etp = int(degrees.get("cp", 1)), int(degrees.get("ep", 1)), int(degrees.get("etp", 1))
    g = _check_gpus_per_node(gpus_per_node)
    return {"tp": tp > g, "cp": cp > 1 and tp * cp > g, "dp": dp * cp > 1 and tp * cp * dp > g,
            "pp": pp > 1 and tp * cp * dp * pp > g, "ep": ep > 1 and etp * ep > g}


#: Inter-node links of the rail-optimised fabrics of HGX / DGX-class nodes: the A100 reference design carries eight HDR
#: and the H100 one eight NDR adapters for the compute fabric, one per GPU, each on its own rail (as do AWS p5.48xlarge
#: and Azure ND H100 v5). A node whose ``"inter"`` link is named one of these has one NIC per GPU unless
#: ``nics_per_node`` says otherwise (:func:`resolve_links`).
RAIL_FABRICS = ("infiniband-hdr", "infiniband-ndr")


@dataclasses.dataclass(frozen=True)
class ReferenceNetwork:
    """The compute fabric between the nodes of a GPU's reference system: ``rails_per_gpu`` NICs of ``inter`` per GPU,
    each on its own rail, across NVLink domains of ``domain_gpus`` GPUs (the rack-scale NVL72 systems: 72; else the
    caller's ``gpus_per_node``); ``system`` names it and ``source`` says where it is published."""

    system: str
    inter: str
    rails_per_gpu: int
    source: str
    domain_gpus: int | None = None


_DGX_A100 = ReferenceNetwork("DGX A100", "infiniband-hdr", 1, "eight single-port ConnectX-6 HDR 200 Gb/s adapters, one "
                             "per GPU (NVIDIA DGX A100 System Architecture white paper, WP-10083-001)")
_DGX_H100 = ReferenceNetwork("DGX H100 / H200", "infiniband-ndr", 1, "eight single-port ConnectX-7 NDR 400 Gb/s adapters, "
                             "one per GPU (NVIDIA DGX H100 user guide, \"Hardware overview\"; AWS p5.48xlarge, p5en.48xlarge "
                             "and Azure ND H100 v5 carry the same 3,200 Gb/s per 8 GPUs)")
_H800 = ReferenceNetwork("DeepSeek-V3's H800 cluster", "infiniband-ndr", 1, "eight 400 Gb/s InfiniBand NICs per node, one per "
                         "GPU, each on its own plane (\"Insights into DeepSeek-V3\", arXiv:2505.09343)")
_HGX_B200 = ReferenceNetwork("DGX / HGX B200", "infiniband-ndr", 1, "eight ConnectX-7 400 Gb/s adapters, one per GPU "
                             "(NVIDIA DGX B200 user guide; AWS p6-b200.48xlarge and GCP a4-highgpu-8g: 3,200 Gb/s per 8 GPUs)")
_HGX_B300 = ReferenceNetwork("HGX B300", "infiniband-ndr", 2, "a ConnectX-8 800 Gb/s SuperNIC per GPU on the baseboard "
                             "(NVIDIA DGX B300 user guide; AWS p6-b300.48xlarge: 6,400 Gb/s per 8 GPUs), counted as two "
                             "400 Gb/s rails at NDR's fitted NCCL efficiency")
_GB200_NVL72 = ReferenceNetwork("GB200 NVL72", "infiniband-ndr", 1, "one NVLink domain of 72 GPUs per rack (18 compute trays "
                                "of 4 GPUs, each GPU with a ConnectX-7 400 Gb/s adapter: NVIDIA's multi-node NVLink "
                                "tuning guide, \"Understanding your Grace-Blackwell systems\")", 72)
_GB300_NVL72 = ReferenceNetwork("GB300 NVL72", "infiniband-ndr", 2, "one NVLink domain of 72 GPUs per rack (each compute "
                                "tray's 4 GPUs with 4 ConnectX-8 800 Gb/s adapters: NVIDIA's GB300 NVL72 enterprise "
                                "reference architecture), each adapter counted as two 400 Gb/s rails at NDR's fitted NCCL "
                                "efficiency", 72)
_AMD_MI3XX = ReferenceNetwork("AMD Instinct MI300-series platform", "infiniband-ndr", 1, "eight 400 Gb/s NICs, one per "
                              "GPU, on a rail network (AMD Instinct MI3XX reference design); RoCE taken at InfiniBand NDR's "
                              "fitted NCCL efficiency, no RCCL measurement across nodes being at hand")

#: The scale-out fabric of each catalog GPU's reference system: the network :func:`resolve_links` puts between nodes
#: when a layout spans nodes and no ``interconnect`` is given (:func:`default_network`). GPUs without one (PCIe cards,
#: V100, parts of other vendors' systems) get :data:`FALLBACK_INTER` instead.
REFERENCE_NETWORKS = {"A100": _DGX_A100, "A100-SXM4-80GB": _DGX_A100, "H100": _DGX_H100, "H200": _DGX_H100,
                      "H800": _H800, "B200": _HGX_B200, "B300": _HGX_B300, "GB200": _GB200_NVL72,
                      "GB300": _GB300_NVL72, "MI300X": _AMD_MI3XX, "MI325X": _AMD_MI3XX, "MI355X": _AMD_MI3XX}

#: The link between nodes of a GPU with no reference fabric when none is given: one 100 Gb/s Ethernet NIC per node
#: (the network of the 8-GPU PCIe-card instances of the clouds, AWS g5/g6.48xlarge and GCP g2-standard-96; the planner's
#: :data:`perfmodel.planning.cloud.MULTI_INSTANCE_LINK`).
FALLBACK_INTER = "ethernet-100g"


@dataclasses.dataclass(frozen=True)
class DefaultNetwork:
    """What :func:`default_network` assumes: the per-level ``links`` (``{"intra": None, "inter": ...}``, the GPU's own
    link inside a node), the node size and NICs it applies them with, and ``note``, the sentence ``basis`` carries."""

    links: dict
    gpus_per_node: int
    nics_per_node: int | None
    note: str


def default_network(gpu, degrees: dict, gpus_per_node: int = 8, nics_per_node: int | None = None) -> DefaultNetwork | None:
    """The network between nodes a layout gets when it spans nodes and no ``interconnect`` is given; None when every
    group stays inside one node (the GPU's own link serves them all).

    The GPU's own link (NVLink, Infinity Fabric, else PCIe) joins the GPUs of a node; between nodes, the compute fabric
    of the GPU's reference system (:data:`REFERENCE_NETWORKS`: a NIC per GPU on its own rail, InfiniBand HDR for the
    A100, NDR for Hopper, B200 and the AMD Instinct MI300 series, two NDR rails' worth per GPU for the B300's
    800 Gb/s), the node being the rack-scale NVLink domain (72 GPUs) on GB200 and GB300 NVL72 whatever
    ``gpus_per_node`` says; for any other GPU one :data:`FALLBACK_INTER` NIC per node. A given ``nics_per_node``
    overrides the reference's count. Rather than NVLink across nodes, which no 8-GPU node has.
    """
    from perfmodel.datasets import gpu_spec

    name = str(gpu_spec(gpu).gpu).split("@")[0]  # a clocked part ("H100@0.859clk") is its catalog GPU
    ref = REFERENCE_NETWORKS.get(name)
    node = ref.domain_gpus if ref is not None and ref.domain_gpus else _check_gpus_per_node(gpus_per_node)
    if not any(crosses_nodes(degrees, node).values()):
        return None
    if ref is None:
        nics = nics_per_node
        note = (f"no network given between the nodes of {node} GPUs: {name} has no reference system in perfmodel's table, "
                f"so one {FALLBACK_INTER} NIC per node is assumed (pass interconnect={{'intra': ..., 'inter': ...}} "
                "with your cluster's)")
        return DefaultNetwork({"intra": None, "inter": FALLBACK_INTER}, node, nics, note)
    nics = nics_per_node if nics_per_node is not None else ref.rails_per_gpu * node
    note = (f"no network given between the nodes of {node} GPUs: {name}'s reference system, {ref.system}, assumed: "
            f"{ref.source} (pass interconnect={{'intra': ..., 'inter': ...}} and nics_per_node= with your cluster's)")
    return DefaultNetwork({"intra": None, "inter": ref.inter}, node, nics, note)


def default_nics_per_node(inter, gpus_per_node: int) -> int | None:
    """NICs of a node when the caller does not say: one per GPU when its inter-node link is named one of
    :data:`RAIL_FABRICS`; else None (one NIC carries each group that leaves the node: Ethernet between cloud
    instances, a link given as a spec)."""
    if isinstance(inter, str) and inter.strip().lower() in RAIL_FABRICS:
        return int(gpus_per_node)
    return None


def resolve_links(interconnect=None, gpu=None, *, degrees: dict | None = None, gpus_per_node: int = 8,
                  nics_per_node: int | None = None) -> dict:
    """The :class:`Interconnect` of each process group, ``{"tp": ..., "pp": ..., "dp": ...}``.

    Parameters
    ----------
    interconnect : str, Interconnect, dict or None
        One link (a name or a spec, :func:`resolve_interconnect`) serves all the groups; ``None``: the GPU's own link
        (NVLink, Infinity Fabric, else PCIe) inside a node and, when the layout's groups span nodes (``degrees``), its
        reference system's network between them (:func:`default_network`: a 400 Gb/s NDR NIC per GPU for Hopper);
        a dict with keys among ``"tp"``, ``"pp"``, ``"dp"`` gives a group its own link (e.g. ``{"tp": "nvlink",
        "pp": "infiniband-ndr", "dp": "infiniband-ndr"}``: tensor parallel inside a node, the rest across nodes); a
        group the dict leaves out uses the GPU's own link. The data-parallel group of ``"fsdp"`` is ``"dp"``.
        Or a link per level, ``{"intra": "nvlink", "inter": "infiniband-ndr"}`` (:data:`LINK_LEVELS`): a group inside
        one node uses ``"intra"`` (default the GPU's own link), a group spanning nodes (:func:`crosses_nodes`)
        ``"inter"`` — one NIC's link; with ``nics_per_node``, a group that spans nodes gets its share of the node's
        NICs (:func:`rail_link`): with a NIC per GPU on its own rail (HGX/DGX-class nodes), NCCL spreads the group's
        channels over them. An InfiniBand ``"inter"`` (:data:`RAIL_FABRICS`) has one NIC per GPU unless
        ``nics_per_node`` says otherwise. On a fully connected mesh (AMD's Infinity Fabric: ``Interconnect.mesh_peers``)
        a group gets, with ``degrees``, the direct links among its ranks on the board
        (:func:`perfmodel.step.collectives.mesh_link`): tensor parallelism over 2 of 8 MI300X one 64 GB/s link. Over
        NVLink bridges between pairs of PCIe cards (``Interconnect.domain_gpus``) a group that reaches another pair
        runs at the cards' PCIe (:func:`perfmodel.step.collectives.bridged_link`).
    gpu : str or GPUSpec, optional
        The GPU whose own link (NVLink, else PCIe) fills in.
    degrees : dict, optional
        ``{"tp": .., "dp": .., "pp": ..}`` of the layout (:func:`parse_strategy`), for the per-level form.
    gpus_per_node : int, default 8
        GPUs per node, for the per-level form.
    nics_per_node : int, optional
        NICs of a node, each on its own rail, for the per-level form: a group that spans nodes gets its share of them
        (:func:`rail_link`; 8 on an HGX / DGX H100 node, AWS p5.48xlarge or GCP a3-megagpu-8g). None (default): one
        per GPU when ``"inter"`` is named one of :data:`RAIL_FABRICS` (:func:`default_nics_per_node`); for other
        links one NIC carries each group that leaves its node, whatever the node has.

    Returns
    -------
    dict
        A link per group of :data:`LINK_GROUPS`, and with expert parallelism over part of the ranks it is carved from
        (``degrees`` with ``1 < ep < tp·cp·dp``, :func:`expert_data_parallel`; or a mixture of experts, ``degrees``
        with ``"moe": True``, whole on each of ``tp > 1`` ranks) ``"edp"``: the ring of the ranks that hold the same experts, which reduces
        their gradients.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown link name, or a dict key that is not a group.
    TypeError
        A link that is not a name, an Interconnect or None.
    """
    if interconnect is None and degrees is not None and gpu is not None:
        net = default_network(gpu, degrees, gpus_per_node, nics_per_node)
        if net is not None:
            interconnect, gpus_per_node, nics_per_node = net.links, net.gpus_per_node, net.nics_per_node
    links = _resolve_links(interconnect, gpu, degrees, gpus_per_node, nics_per_node)
    if degrees is None:
        return links
    ranks = ranks_per_node(degrees, gpus_per_node)
    out = {g: _on_node(g, link, ranks, degrees) if g in LINK_GROUPS else link for g, link in links.items()}
    ep = int(degrees.get("ep", 1))
    shared = expert_data_parallel(degrees)
    # with experts whole beside tensor parallelism (degrees' "moe"), an expert is held by tp·cp·dp/ep ranks even
    # without ep
    if (ep > 1 or (degrees.get("moe") and int(degrees.get("tp", 1)) > 1)) and shared > 1:
        # the expert-data-parallel group: the ranks that hold the same experts, ep consecutive ranks apart (Megatron-
        # Core's expert grid etp-ep-edp with etp 1): a data-parallel ring of its own, strided as a dp group beside
        # ep ranks
        out["edp"] = resolve_links(interconnect, gpu, degrees={"tp": ep * int(degrees.get("etp", 1)), "dp": shared},
                                   gpus_per_node=gpus_per_node, nics_per_node=nics_per_node)["dp"]
    return out


def expert_data_parallel(degrees: dict) -> int:
    """Ranks that hold the same routed experts (Megatron-Core's expert-data-parallel group): the ``tp·cp·dp`` ranks over
    ``etp·ep`` (``degrees``' ``"etp"``, 1 unless the experts are split over the tensor-parallel ranks) — with each
    expert kept whole on its rank (expert tensor parallelism 1) the tensor-parallel ranks of a model replica hold
    different experts (``ep > 1``) or the same ones; split over them (``etp = tp``), the same expert's shards."""
    d = degrees or {}
    return (int(d.get("tp", 1)) * int(d.get("cp", 1)) * int(d.get("dp", 1))
            // max(int(d.get("ep", 1)) * int(d.get("etp", 1)), 1))


def _on_node(group: str, link, ranks: dict, degrees: dict | None):
    """What a group has of a node's link that does not join every pair of its GPUs alike: of a fully connected mesh
    its direct links to the group's other ranks on the board for the ring collectives (tensor and data parallel), one
    for the sends of the pipeline and of context parallelism's ring (:func:`perfmodel.step.collectives.mesh_link`);
    of NVLink bridges between pairs of cards, the bridge while the group stays in one pair, else the cards' PCIe
    (:func:`perfmodel.step.collectives.bridged_link`)."""
    from perfmodel.step.collectives import bridged_link, mesh_link

    if link.mesh_peers:
        return mesh_link(link, ranks[group], ring=group in _RING_GROUPS)
    if link.domain_gpus:
        d = degrees or {}
        tp, cp, dp, pp = (int(d.get(k, 1)) for k in ("tp", "cp", "dp", "pp"))
        ep = int(d.get("ep", 1))
        if {"tp": tp, "cp": cp, "dp": dp * cp, "pp": pp, "ep": ep}[group] <= 1:  # no such group: nothing to carry
            return link
        stride = {"tp": 1, "cp": tp, "dp": tp, "pp": tp * cp * dp, "ep": int(d.get("etp", 1))}[group]
        return bridged_link(link, ranks[group], stride)
    return link


def mesh_allreduce_check() -> pd.DataFrame:
    """RCCL's measured all-reduces on an MI300X board (:func:`perfmodel.datasets.load_rccl_allreduce`) next to the
    bus bandwidth the data-parallel group's link gives them (:func:`resolve_links` with the layout's degrees: the
    direct links among the group's GPUs, :func:`perfmodel.step.collectives.mesh_link`;
    :func:`perfmodel.step.collectives.bus_bandwidth_gb_per_s`). Returns ``gpu``, ``n_gpus``, ``payload_gib``,
    ``measured_busbw_gb_per_s``, ``predicted_busbw_gb_per_s``, ``link``."""
    from perfmodel.datasets import load_rccl_allreduce
    from perfmodel.step.collectives import bus_bandwidth_gb_per_s

    rows = []
    for r in load_rccl_allreduce().itertuples(index=False):
        n = int(r.n_gpus)
        link = resolve_links(None, r.gpu, degrees={"dp": n})["dp"]
        size = float(r.payload_gib) * 2**30
        rows.append(dict(gpu=r.gpu, n_gpus=n, payload_gib=float(r.payload_gib),
                         measured_busbw_gb_per_s=float(r.busbw_gb_per_s),
                         predicted_busbw_gb_per_s=bus_bandwidth_gb_per_s("all_reduce", size, n, link),
                         link=link.name))
    return pd.DataFrame(rows)


def _resolve_links(interconnect, gpu, degrees, gpus_per_node, nics_per_node) -> dict:
    if isinstance(interconnect, dict) and interconnect and set(interconnect) <= set(LINK_LEVELS):
        intra = resolve_interconnect(interconnect.get("intra"), gpu)
        cross = crosses_nodes(degrees or {}, gpus_per_node)
        if any(cross.values()) and interconnect.get("inter") is None:
            raise ValueError(f"the {', '.join(k for k, v in cross.items() if v)} group(s) span more than one node of "
                             f"{gpus_per_node} GPUs, but interconnect gives no 'inter' link. Add one, e.g. "
                             "{'intra': 'nvlink', 'inter': 'infiniband-ndr'}, or raise gpus_per_node.")
        if interconnect.get("inter") is None:
            return {g: intra for g in LINK_GROUPS}
        inter = resolve_interconnect(interconnect["inter"], gpu)
        if nics_per_node is None:
            nics_per_node = default_nics_per_node(interconnect["inter"], gpus_per_node)
        ranks = ranks_per_node(degrees or {}, gpus_per_node)
        if nics_per_node is None:  # one NIC carries each group that leaves its node
            out = {g: (_ring_across(g, inter, intra, degrees, ranks) if cross[g] else intra) for g in LINK_GROUPS}
            nic_share = 1.0 / ranks["ep"]
        else:
            nics = _check_nics(nics_per_node)
            # a ring that leaves the node is bounded by what it has of the node's own link (on a mesh, its ranks' links)
            out = {g: (_ring_across(g, rail_link(inter, _on_node(g, intra, ranks, degrees), nics * ranks[g] / gpus_per_node),
                                    intra, degrees, ranks) if cross[g] else intra) for g in LINK_GROUPS}
            nic_share = nics / gpus_per_node
        if cross["ep"]:
            out["ep"] = alltoall_across(inter, nic_share, int((degrees or {}).get("ep", 1)), ranks["ep"], intra.latency_s)
            if (degrees or {}).get("deepep"):  # DeepEP: the GPU's share of its node's NICs at DeepEP's rate, and NVLink
                from perfmodel.step.collectives import Interconnect, deepep_rdma_share

                out["ep_rdma"] = Interconnect(f"{nic_share:g} x {inter.name} per GPU at DeepEP's published rate",
                                              inter.bandwidth_gb_per_s * nic_share * deepep_rdma_share(), inter.latency_s,
                                              1.0)
                out["ep_nvl"] = _on_node("ep", intra, ranks, degrees)
        return out
    if isinstance(interconnect, dict):
        bad = [k for k in interconnect if k not in LINK_GROUPS]
        if set(interconnect) & set(LINK_LEVELS):
            raise UnknownNameError(f"interconnect dict mixes link levels ('intra', 'inter') with process groups "
                                   f"({list(LINK_GROUPS)}): {sorted(interconnect)}. Give either the levels, e.g. "
                                   "{'intra': 'nvlink', 'inter': 'infiniband-ndr'}, or a link per group.")
        if bad:
            raise UnknownNameError(f"interconnect dict has unknown group(s) {bad}; expected keys among {list(LINK_GROUPS)} "
                                   "(the tensor-, pipeline- and data-parallel groups), e.g. {'tp': 'nvlink', 'dp': "
                                   "'infiniband-ndr'}.")
        out = {g: resolve_interconnect(interconnect.get(g), gpu) for g in LINK_GROUPS if g not in ("cp", "ep")}
        out["cp"] = resolve_interconnect(interconnect.get("cp", interconnect.get("tp")), gpu)
        out["ep"] = resolve_interconnect(interconnect.get("ep", interconnect.get("dp")), gpu)
        return out
    link = resolve_interconnect(interconnect, gpu)
    return {g: link for g in LINK_GROUPS}


def _check_nics(nics_per_node) -> int:
    return _positive_count("nics_per_node", nics_per_node, "(a node's NICs, each on its own rail: 8 on an HGX / DGX H100 "
                                                           "node, 1 on a node with one network card)")


def ranks_per_node(degrees: dict, gpus_per_node: int) -> dict:
    """Ranks of one process group on one node, ranks placed as :func:`crosses_nodes` places them (tensor parallel
    innermost, then context, data, pipeline): a group whose members are ``stride`` ranks apart has
    ``max(1, min(size, gpus_per_node // stride))`` of them on a node."""
    tp, dp, pp = int(degrees.get("tp", 1)), int(degrees.get("dp", 1)), int(degrees.get("pp", 1))
    cp, ep, etp = int(degrees.get("cp", 1)), int(degrees.get("ep", 1)), int(degrees.get("etp", 1))
    g = _check_gpus_per_node(gpus_per_node)

    def on_node(size: int, stride: int) -> int:
        return max(1, min(size, g // stride)) if stride <= g else 1

    return {"tp": on_node(tp, 1), "cp": on_node(cp, tp), "dp": on_node(dp * cp, tp), "pp": on_node(pp, tp * cp * dp),
            "ep": on_node(ep, etp)}


#: the groups whose collectives are NCCL rings (all-reduce, all-gather, reduce-scatter) over their ranks, or whose
#: all-to-alls step through their peers as a ring does (expert parallel); the pipeline's sends and context
#: parallelism's ring of sends cross nodes at every step that leaves a node
_RING_GROUPS = ("tp", "dp", "ep")


def ring_step_latency(inter_latency_s: float, intra_latency_s: float, ranks: int, nodes: int) -> float:
    """α per step of an NCCL ring over ``ranks`` ranks on ``nodes`` nodes, as NCCL's own tuning model counts a ring's
    latency (``ncclTopoTuneModel``: ``(nsteps − nInterSteps)·intraLat + nInterSteps·interLat``): of an all-reduce's
    ``2(n−1)`` steps ``2(N−1)`` cross nodes (of an all-gather's or reduce-scatter's ``n−1``, ``N−1``), the others stay on
    the node's own link, so each step costs ``α_intra + (α_inter − α_intra)·(N−1)/(n−1)`` on average, the same for the
    three collectives. One node (or one rank): ``α_intra``."""
    if nodes <= 1 or ranks <= 1:
        return float(intra_latency_s)
    if nodes >= ranks:  # one rank per node: every step crosses
        return float(inter_latency_s)
    share = (min(nodes, ranks) - 1) / (ranks - 1)
    return float(intra_latency_s + (inter_latency_s - intra_latency_s) * share)


def tree_latency(inter_latency_s: float, intra_latency_s: float, per_node: int, nodes: int) -> float:
    """The whole latency of NCCL's tree all-reduce over ``nodes`` nodes of ``per_node`` ranks each, as NCCL's own
    tuning model counts it (``ncclTopoTuneModel``: ``2·((nRanks/nNodes − 1)·intraLat + log2i(nNodes)·interLat)``):
    up and down a chain through each node's ranks and a double binary tree over the nodes, ``⌊log2 N⌋`` levels deep.
    0 on one node: NCCL's tree is not taken there (its ring's latency is lower on the node's own link)."""
    if nodes <= 1:
        return 0.0
    return float(2 * ((max(int(per_node), 1) - 1) * intra_latency_s + math.floor(math.log2(int(nodes))) * inter_latency_s))


def _ring_across(group: str, link, intra, degrees, ranks: dict):
    """The link of a group that leaves its node with the latency of its ring (:func:`ring_step_latency`) and of
    NCCL's tree all-reduce over its nodes (:func:`tree_latency` with NCCL's ``nRanks / nNodes`` ranks per node, an
    integer division; :func:`perfmodel.step.collectives.allreduce_time` takes the tree where it is faster) for the
    collective groups (tensor, data and expert parallel; an expert-parallel group that leaves its node gets
    :func:`alltoall_across`'s link instead); the pipeline's and context parallelism's sends keep the inter-node link's
    latency at every step."""
    if group not in _RING_GROUPS:
        return link
    d = degrees or {}
    size = (int(d.get("tp", 1)) if group == "tp" else int(d.get("ep", 1)) if group == "ep"
            else int(d.get("dp", 1)) * int(d.get("cp", 1)))
    nodes = -(-size // max(1, ranks[group]))
    return dataclasses.replace(link, latency_s=ring_step_latency(link.latency_s, intra.latency_s, size, nodes),
                               tree_latency_s=tree_latency(link.latency_s, intra.latency_s, size // nodes, nodes))


def alltoall_across(inter, nic_share: float, ep: int, on_node: int, intra_latency_s: float | None = None):
    """The link an expert-parallel all-to-all over ``ep`` ranks, ``on_node`` of them on each node, gets when its group
    spans nodes: each GPU sends ``(ep − on_node)/ep`` of its tokens off its node through its share of the node's NICs
    (``nic_share``: one NIC per GPU on a rail-optimised node, NCCL's PXN moving each message over NVLink to the GPU on
    the receiver's rail), while the rest crosses NVLink at the same time, far faster. Spelled as a link whose
    ``(ep − 1)/ep`` bus share takes the time the off-node part takes: bandwidth ``inter × nic_share × (ep − 1) /
    (ep − on_node)``, the ``inter`` link's efficiency, and a latency per peer that is the ``inter`` link's for the
    ``ep − on_node`` peers off the node and ``intra_latency_s`` (the node's own link's; None: the ``inter`` link's)
    for the ``on_node − 1`` on it, averaged over the ``ep − 1`` peers, as :func:`ring_step_latency` counts a ring's
    steps."""
    from perfmodel.step.collectives import Interconnect

    ep, on_node = int(ep), max(int(on_node), 1)
    if ep <= on_node:
        return inter
    scale = nic_share * (ep - 1) / (ep - on_node)
    near = inter.latency_s if intra_latency_s is None else float(intra_latency_s)
    latency = (inter.latency_s * (ep - on_node) + near * (on_node - 1)) / (ep - 1)
    return Interconnect(f"{nic_share:g} x {inter.name} per GPU, {ep - on_node} of {ep} all-to-all peers off the node",
                        inter.bandwidth_gb_per_s * scale, latency, inter.efficiency)


def rail_link(inter, intra, nics: float):
    """The link of a group that leaves its node: ``nics`` NICs (the node's NICs times the group's share of the
    node's ranks: other groups of the same kind run their collectives at the same time on the other ranks) carry its
    channels, each at the ``inter`` link's rate, never faster than the node's own ``intra`` link (a ring also crosses
    the node's NVLink). One NIC's share or less is the ``inter`` link scaled down."""
    from perfmodel.step.collectives import Interconnect

    over = inter.bandwidth_gb_per_s * nics * inter.efficiency
    if nics == 1:
        return inter
    if over >= intra.bandwidth_gb_per_s * intra.efficiency:
        return Interconnect(f"{intra.name} (bounds {nics:g} x {inter.name})", intra.bandwidth_gb_per_s, inter.latency_s,
                            intra.efficiency)
    return Interconnect(f"{nics:g} x {inter.name}", inter.bandwidth_gb_per_s * nics, inter.latency_s, inter.efficiency)


_FACTORS = ("dp", "fsdp", "cp", "ep", "tp", "pp")


_FACTOR = re.compile(r"^(dp|fsdp|cp|ep|tp|pp)(\d+)?$")


_SEPARATORS = re.compile(r"[-_,+\s]+")


_KNOWN = ("Expected one of: dp, fsdp, tp, pp (data parallel, fully sharded data parallel, tensor parallel, pipeline "
          "parallel), or a combination with degrees such as 'dp2-tp2-pp2', 'tp4-pp2', 'dp-tp2', 'fsdp8-tp8-pp8' or "
          "'fsdp4-cp2' or 'dp2-cp2-tp8-pp8' (cp: context parallel) (a factor without a degree takes the GPUs the others leave), or a "
          "dict such as {'dp': 2, 'tp': 2}; a mixture of experts may add ep with a degree, expert parallel over the "
          "data- and tensor-parallel ranks ('dp8-ep8', 'fsdp16-ep8-pp4', 'dp4-ep8-tp2').")


def _factors(strategy) -> list[tuple[str, int | None]]:
    """The (name, degree or None) factors of a strategy spelling or dict, in the order dp/fsdp, tp, pp; spelling errors
    raise."""
    if isinstance(strategy, dict):
        if not strategy:
            raise UnknownNameError(f"Unknown parallel strategy {strategy!r}: an empty dict. {_KNOWN}")
        out = []
        for k, v in strategy.items():
            key = str(k).strip().lower() if isinstance(k, str) else k
            if key not in _FACTORS:
                raise UnknownNameError(f"Unknown parallel strategy {strategy!r}: key {k!r} is not one of dp, fsdp, cp, ep, tp, pp. {_KNOWN}")
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise StrategyError(f"parallel strategy {strategy!r}: the degree of {key!r} must be a positive int (or None: "
                                    f"the GPUs the others leave); got {v!r}.")
            out.append((key, None if v is None else int(v)))
    elif isinstance(strategy, str):
        tokens = [t for t in _SEPARATORS.split(strategy.strip().lower()) if t]
        out = []
        for tok in tokens:
            hit = _FACTOR.match(tok)
            if not hit:
                where = "" if len(tokens) == 1 else f": factor {tok!r} is not one of dp, fsdp, cp, ep, tp, pp with an optional degree"
                raise UnknownNameError(f"Unknown parallel strategy {strategy!r}{where}. {_KNOWN}")
            deg = hit.group(2)
            if deg is not None and int(deg) < 1:
                raise StrategyError(f"parallel strategy {strategy!r}: factor {tok!r} has degree {int(deg)}; degrees must be "
                                    "positive (e.g. 'dp2-tp2').")
            out.append((hit.group(1), None if deg is None else int(deg)))
        if not out:
            raise UnknownNameError(f"Unknown parallel strategy {strategy!r}. {_KNOWN}")
    else:
        raise UnknownNameError(f"Unknown parallel strategy {strategy!r}. {_KNOWN}")
    names = [k for k, _ in out]
    dup = sorted({k for k in names if names.count(k) > 1})
    if dup:
        raise StrategyError(f"parallel strategy {strategy!r} names {', '.join(dup)} more than once. Name each factor once "
                            "(e.g. 'dp2-tp2-pp2').")
    if "dp" in names and "fsdp" in names:
        raise StrategyError(f"parallel strategy {strategy!r} combines dp and fsdp: both are the data-parallel dimension "
                            "(fsdp shards it). Use one of them.")
    if "ep" in names:
        if dict(out)["ep"] is None:
            raise StrategyError(f"parallel strategy {strategy!r}: ep needs a degree (e.g. 'dp8-ep8'): expert parallelism "
                                "is carved from the data- and tensor-parallel ranks and takes no GPUs of its own.")
        if not ({"dp", "fsdp", "cp", "tp"} & set(names)):
            raise StrategyError(f"parallel strategy {strategy!r}: ep (expert parallel) spreads the experts over the "
                                "data- and tensor-parallel ranks, and the strategy has none. Add dp, fsdp or tp (e.g. 'dp8-ep8', "
                                "'fsdp16-ep8').")
    if sum(d is None for _, d in out) > 1 and len(out) > 1:
        raise StrategyError(f"parallel strategy {strategy!r} leaves more than one degree open; at most one factor may go "
                            "without a degree (it takes the GPUs the others leave), e.g. 'dp-tp2'.")
    return sorted(out, key=lambda f: _FACTORS.index(f[0]) if f[0] != "fsdp" else 0)


def check_strategy_name(strategy) -> str:
    """The canonical spelling of a parallel strategy, else a clear error.

    One of :data:`STRATEGIES` (lower-cased; over all the GPUs), or a combination of them with their degrees,
    ``"dp2-tp2-pp2"``, ``"tp4-pp2"``, ``"dp-tp2"`` (factors joined by ``-``; a factor without a degree takes the GPUs the
    others leave), or a dict ``{"dp": 2, "tp": 2}``; combinations come back with their factors in the order dp, tp,
    pp (``"TP2-DP2"`` → ``"dp2-tp2"``). The degrees are checked against a GPU count by :func:`parse_strategy`.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown strategy or factor (the message lists the known ones).
    StrategyError
        A factor named twice, ``dp`` with ``fsdp``, a degree below 1,
        more than one factor without a degree.
    """
    if isinstance(strategy, str) and strategy.strip().lower() in STRATEGIES:
        return strategy.strip().lower()
    out = _factors(strategy)
    if len(out) == 1 and out[0][1] is None:
        return out[0][0]
    return "-".join(f"{k}{'' if d is None else d}" for k, d in out)


def parse_strategy(strategy, n_gpus: int) -> dict:
    """Degrees of the data-, tensor- and pipeline-parallel dimensions of ``strategy`` on ``n_gpus`` GPUs.

    Parameters
    ----------
    strategy : str or dict
        As for :func:`check_strategy_name`: ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` (all ``n_gpus``), a combination
        ``"dp2-tp2-pp2"``, ``"dp-tp4"`` (the factor without a degree takes ``n_gpus`` / the others), or a dict
        ``{"dp": 2, "tp": 2}``.
    n_gpus : int
        GPUs training together; must equal ``dp × tp × pp``.

    Returns
    -------
    dict
        ``dp``, ``tp``, ``pp``, ``cp`` (ints, 1 for a dimension not used; ``dp`` is the sharded dimension for fsdp),
        ``ep`` (expert parallel: carved from the ``tp·cp·dp`` ranks, which it must divide; it adds no GPUs), ``fsdp``
        (bool) and ``name``: the canonical name on ``n_gpus`` GPUs — a bare ``"dp"`` / ``"fsdp"`` / ``"tp"`` / ``"pp"``
        when one dimension spans all the GPUs (``"tp4"`` on 4 GPUs is ``"tp"``; a bare name on one GPU stays as
        given), else the factors above 1, ``"dp2-tp2"``, ``"dp8-ep8"``.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown strategy or factor.
    StrategyError
        The degrees do not multiply to ``n_gpus`` (or the open one does not divide it), or a spelling
        :func:`check_strategy_name` refuses.
    ValueError
        ``n_gpus`` is not a positive int.
    """
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    n = int(n_gpus)
    canon = check_strategy_name(strategy)
    if canon in STRATEGIES:
        deg = dict(dp=n if canon in ("dp", "fsdp") else 1, tp=n if canon == "tp" else 1, pp=n if canon == "pp" else 1,
                   cp=1, fsdp=canon == "fsdp", name=canon, ep=1)
        return deg
    out = _factors(canon)
    ep = dict(out).pop("ep", None) or 1  # carved from the data- and tensor-parallel ranks: no GPUs of its own
    out = [(k, d) for k, d in out if k != "ep"]
    fixed = int(np.prod([d for _, d in out if d is not None]))
    open_ = [k for k, d in out if d is None]
    shown = " x ".join(f"{k}{d}" for k, d in out if d is not None)
    if open_:
        if n % fixed:
            raise StrategyError(f"strategy={canon!r} on {n} GPUs: the fixed degrees ({shown} = {fixed}) do not divide "
                                f"n_gpus = {n}, so {open_[0]!r} has no whole degree. Use n_gpus that is a multiple of {fixed}.")
        degrees = {k: (n // fixed if d is None else d) for k, d in out}
    else:
        if fixed != n:
            raise StrategyError(f"strategy={canon!r}: the degrees multiply to {shown} = {fixed}, but n_gpus = {n}. Make "
                                f"their product n_gpus, or leave one factor without a degree to take the rest (e.g. "
                                f"'{'-'.join([out[0][0]] + [f'{k}{d}' for k, d in out[1:]])}').")
        degrees = {k: d for k, d in out}
    fsdp = "fsdp" in degrees
    dp = degrees.get("fsdp", degrees.get("dp", 1))
    tp, pp, cp = degrees.get("tp", 1), degrees.get("pp", 1), degrees.get("cp", 1)
    if (tp * dp * cp) % ep:
        raise StrategyError(f"strategy={canon!r} on {n} GPUs: ep{ep} does not divide the {tp * dp * cp} ranks of a "
                            f"pipeline stage (tp x dp x cp = {tp} x {dp} x {cp}) it spreads the experts over. Use an ep "
                            f"that divides {tp * dp * cp}.")
    # cp keeps its data-parallel factor, and so does ep without tp
    used = [(k, v) for k, v in (("fsdp" if fsdp else "dp", dp), ("cp", cp), ("ep", ep), ("tp", tp), ("pp", pp))
            if v > 1 or (k in ("fsdp", "dp") and (cp > 1 or (ep > 1 and tp == 1)))]
    if not used:
        name = "fsdp" if fsdp else "dp"
    elif len(used) == 1:
        name = used[0][0]
    else:
        name = "-".join(f"{k}{v}" for k, v in used)
    return dict(dp=dp, tp=tp, pp=pp, cp=cp, fsdp=fsdp, name=name, ep=ep)


def strategy_combinations(n_gpus: int) -> list[str]:
    """Every combination of data, tensor and pipeline parallelism on ``n_gpus`` GPUs with at least two dimensions
    above 1: the factorisations ``dp × tp × pp = n_gpus``, spelled as :func:`parse_strategy` names them
    (``"dp2-tp2"``, ``"tp2-pp2"``, ``"dp2-tp2-pp2"`` ...), in the order dp, tp, pp descending. Empty for a prime or
    one GPU.

    Raises
    ------
    ValueError
        ``n_gpus`` is not a positive int.
    """
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    n = int(n_gpus)
    out = []
    for d in range(n, 0, -1):
        if n % d:
            continue
        for t in range(n // d, 0, -1):
            if (n // d) % t:
                continue
            pp = n // d // t
            used = [f"{k}{v}" for k, v in (("dp", d), ("tp", t), ("pp", pp)) if v > 1]
            if len(used) >= 2:
                out.append("-".join(used))
    return out


#: pipeline schedules and their model chunks per rank: 1F1B, and the interleaved 1F1B of Narayanan et al. (SC 2021)
#: with torchtitan's default of two chunks per rank (``generate_split_points``: ``num_stages_per_rank = 2`` for its
#: looped schedules).
PIPELINE_SCHEDULES = {"1f1b": 1, "interleaved-1f1b": 2}


def pipeline_virtual_stages(schedule, virtual_stages=None) -> int:
    """Model chunks per pipeline rank of a schedule name (:data:`PIPELINE_SCHEDULES`): ``"1f1b"`` → 1,
    ``"interleaved-1f1b"`` (also ``"Interleaved1F1B"``, torchtitan's spelling) → ``virtual_stages``, default 2
    (torchtitan's; Megatron's ``--num-layers-per-virtual-pipeline-stage`` gives 2 to 8 in its recipes).

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown schedule (the message lists the known ones).
    ValueError
        ``virtual_stages`` not an int of at least 2 with the interleaved schedule, or other than None / 1 with 1F1B.
    """
    key = schedule.strip().lower().replace("_", "-").replace(" ", "-") if isinstance(schedule, str) else None
    key = {"interleaved1f1b": "interleaved-1f1b", "interleaved": "interleaved-1f1b"}.get(key, key)
    if key not in PIPELINE_SCHEDULES:
        raise UnknownNameError(f"Unknown pipeline_schedule {schedule!r}. Expected one of: {', '.join(PIPELINE_SCHEDULES)} "
                               "(interleaved: two or more model chunks per pipeline rank, virtual_stages=).")
    if virtual_stages is None:
        return PIPELINE_SCHEDULES[key]
    if isinstance(virtual_stages, bool) or not isinstance(virtual_stages, (int, np.integer)) or virtual_stages < 1:
        raise ValueError(f"virtual_stages must be a positive int (model chunks per pipeline rank) or None; got "
                         f"{virtual_stages!r}.")
    if key == "1f1b" and virtual_stages != 1:
        raise ValueError(f"virtual_stages={virtual_stages} model chunks per pipeline rank need the interleaved schedule; "
                         "pass pipeline_schedule='interleaved-1f1b' (or virtual_stages=None with '1f1b').")
    if key == "interleaved-1f1b" and virtual_stages < 2:
        raise ValueError(f"pipeline_schedule='interleaved-1f1b' runs at least 2 model chunks per pipeline rank; got "
                         f"virtual_stages={virtual_stages}. Pass 2 or more, or use '1f1b'.")
    return int(virtual_stages)


#: the keys of :attr:`perfmodel.Parallelism.pipeline_layers` as a dict: Megatron-Core's uneven split of the layers over
#: the pipeline ranks (``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``) and its
#: balancing that counts the embedding and the loss as one layer each (``--account-for-embedding-in-pipeline-split``,
#: ``--account-for-loss-in-pipeline-split``)
PIPELINE_LAYER_KEYS = ("first", "last", "embedding", "loss")


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"pipeline_layers: {what} must be a non-negative int (transformer layers); got {value!r}.")
    return int(value)


def check_pipeline_layers(value):
    """:attr:`perfmodel.Parallelism.pipeline_layers` checked on its own (its sums are checked against the model and
    the layout by :func:`pipeline_chunks`), in its canonical form: None; a dict of :data:`PIPELINE_LAYER_KEYS`
    (``first`` / ``last``: non-negative ints, ``embedding`` / ``loss``: bools; Megatron cannot combine the two pairs);
    a sequence of per-rank layer counts as a tuple of ints, or of per-rank sequences of per-chunk counts as a tuple of
    tuples of ints.

    Raises
    ------
    ValueError
        Anything else, with what was expected.
    """
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = sorted(set(map(str, value)) - set(PIPELINE_LAYER_KEYS))
        if unknown or not value:
            raise ValueError(f"pipeline_layers as a dict takes the keys {', '.join(PIPELINE_LAYER_KEYS)} (Megatron's "
                             "--decoder-first/last-pipeline-num-layers and --account-for-embedding/loss-in-pipeline-split); "
                             f"got {sorted(map(str, value)) or 'an empty dict'}.")
        out = {}
        for k in ("first", "last"):
            if k in value:
                out[k] = _count(value[k], f"{k!r}")
        for k in ("embedding", "loss"):
            if k in value:
                if not isinstance(value[k], (bool, np.bool_)):
                    raise ValueError(f"pipeline_layers: {k!r} must be True or False (count the {k} as one layer in the "
                                     f"split); got {value[k]!r}.")
                out[k] = bool(value[k])
        if ({"first", "last"} & set(out)) and any(out.get(k) for k in ("embedding", "loss")):
            raise ValueError("pipeline_layers: 'first'/'last' and 'embedding'/'loss' cannot be combined (Megatron-Core "
                             "refuses --decoder-first/last-pipeline-num-layers with --account-for-*-in-pipeline-split); "
                             "give the layers of every rank instead, e.g. (7, 8, 8, 7).")
        return out
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ValueError("pipeline_layers must be None, the transformer layers of each pipeline rank (a sequence of "
                         "ints, e.g. (7, 8, 8, 7)), of each rank's model chunks (a sequence of sequences), or a dict "
                         f"with keys {', '.join(PIPELINE_LAYER_KEYS)}; got {value!r}.")
    items = list(value)
    if not items:
        raise ValueError("pipeline_layers: an empty sequence; give the transformer layers of each pipeline rank.")
    nested = [hasattr(x, "__iter__") and not isinstance(x, (str, bytes)) for x in items]
    if any(nested) and not all(nested):
        raise ValueError("pipeline_layers: mix of counts and sequences; give every rank an int (its layers) or every "
                         f"rank a sequence (the layers of each of its model chunks); got {value!r}.")
    if all(nested):
        return tuple(tuple(_count(c, f"rank {i}'s chunk {j}") for j, c in enumerate(x)) for i, x in enumerate(items))
    return tuple(_count(x, f"rank {i}'s layers") for i, x in enumerate(items))


def parse_pipeline_layers(text: str):
    """The command line's ``--pipeline-layers``: ``"7,8,8,7"`` (each rank's layers), ``"first=7,last=7"``,
    ``"embedding,loss"`` (both counted as a layer) → :func:`check_pipeline_layers`' value."""
    parts = [t.strip() for t in str(text).split(",") if t.strip()]
    if parts and all(t.lstrip("-").isdigit() for t in parts):
        return check_pipeline_layers([int(t) for t in parts])
    out = {}
    for t in parts:
        k, eq, v = t.partition("=")
        k = k.strip().lower()
        if k in ("embedding", "loss") and not eq:
            out[k] = True
        elif k in ("first", "last") and eq and v.strip().isdigit():
            out[k] = int(v)
        else:
            raise ValueError(f"--pipeline-layers {text!r}: expected each rank's layers (7,8,8,7), first=N and/or last=N, "
                             f"or embedding and/or loss; {t!r} is none of these.")
    return check_pipeline_layers(out)


def format_pipeline_layers(value) -> str:
    """:func:`check_pipeline_layers`' value as the command line spells it (:func:`parse_pipeline_layers` reads it
    back): ``""`` for None, ``"embedding,loss"``, ``"first=7,last=7"``, ``"7,8,8,7"``; per-chunk counts as each rank's
    ``"3+4,4+4"`` (no command-line spelling: pass them to :class:`perfmodel.Parallelism`)."""
    pl = check_pipeline_layers(value)
    if pl is None:
        return ""
    if isinstance(pl, dict):
        return ",".join(k if isinstance(v, bool) else f"{k}={v}" for k, v in pl.items() if v is not False)
    return ",".join("+".join(map(str, x)) if isinstance(x, tuple) else str(x) for x in pl)


def check_pipeline_split(pipeline_layers, pp: int, strategy) -> None:
    """A split of the layers (``pipeline_layers``) needs a pipeline: a ``StrategyError`` naming the fix where
    ``strategy`` has none (``pp == 1``)."""
    if pipeline_layers is not None and int(pp) == 1:
        raise StrategyError(f"pipeline_layers={pipeline_layers!r} splits the layers over pipeline ranks; "
                            f"strategy={strategy!r} has no pipeline. Add a pp factor (e.g. 'dp2-tp4-pp8') or drop "
                            "pipeline_layers.")


def pipeline_chunks(n_layers: int, p: int, v: int, pipeline_layers=None) -> list:
    """The layer indices of each model chunk of a pipeline of ``p`` ranks with ``v`` chunks each, in the order the
    layers run: chunk ``c`` on rank ``c mod p`` (Megatron's and torchtitan's interleaving). ``pipeline_layers``
    (:func:`check_pipeline_layers`) None: ``n_layers`` split as evenly as possible, the earlier chunks one longer
    where they do not divide (Megatron-Core needs them to divide; torchtitan's generated split points do not).
    Per-rank counts: each rank's layers split as evenly over its chunks. Per-chunk counts: as given. ``first`` /
    ``last``: those ranks' layers, the rest evenly over the middle ranks, each rank's a multiple of ``v`` (Megatron's
    rules). ``embedding`` / ``loss``: each counted as one layer of the first / last chunk, ``n_layers`` plus them
    split evenly over the ``p·v`` chunks, which they must divide (Megatron's rule).

    Raises
    ------
    StrategyError
        Counts that do not sum to ``n_layers``, a count per rank or chunk other than the layout's, a split Megatron's
        rules refuse — each with the split that would work.
    """
    L, p, v = int(n_layers), int(p), int(v)
    pl = check_pipeline_layers(pipeline_layers)

    def even(n, k):
        return [len(b) for b in np.array_split(np.arange(n), k)]

    if pl is None:
        chunk = even(L, p * v)
    elif isinstance(pl, dict) and ("embedding" in pl or "loss" in pl):
        e, lo = int(pl.get("embedding", False)), int(pl.get("loss", False))
        if (L + e + lo) % (p * v):
            raise StrategyError(f"pipeline_layers={pl}: {L} layers{' + the embedding' if e else ''}"
                                f"{' + the loss' if lo else ''} = {L + e + lo} do not split evenly over {p} ranks x {v} "
                                f"chunks; Megatron needs a multiple of {p * v}. Give each rank's layers instead.")
        k = (L + e + lo) // (p * v)
        chunk = [k] * (p * v)
        chunk[0] -= e
        chunk[-1] -= lo
        if min(chunk) < 0:
            raise StrategyError(f"pipeline_layers={pl}: {L} layers over {p * v} chunks leave none for the embedding or "
                                "the loss to replace; use fewer chunks.")
    else:
        if isinstance(pl, dict):
            first, last = pl.get("first"), pl.get("last")
            rest, mid = L - (first or 0) - (last or 0), p - (first is not None) - (last is not None)
            if p < 2 or mid < 0:
                raise StrategyError(f"pipeline_layers={pl} needs a pipeline of at least 2 ranks; this one has {p}.")
            if rest < 0 or (mid == 0 and rest) or (mid and rest % mid):
                raise StrategyError(f"pipeline_layers={pl}: the {max(rest, 0)} layers left of {L} do not split evenly over "
                                    f"the {mid} middle ranks. Give first/last so that the rest divides, or each rank's "
                                    "layers.")
            per_rank = [rest // mid if mid else 0] * p
            if first is not None:
                per_rank[0] = first
            if last is not None:
                per_rank[-1] = last
            bad = [(s, n) for s, n in enumerate(per_rank) if n % v]
            if bad:
                raise StrategyError(f"pipeline_layers={pl} with {v} model chunks per rank: rank {bad[0][0]}'s "
                                    f"{bad[0][1]} layers do not split over its chunks (Megatron needs each rank's layers "
                                    "a multiple of the chunks). Give each rank's chunks, e.g. ((3, 4), (4, 4), ...).")
            ranks = [even(n, v) for n in per_rank]
        elif isinstance(pl[0], tuple):
            if len(pl) != p or any(len(x) != v for x in pl):
                raise StrategyError(f"pipeline_layers gives {len(pl)} ranks of {sorted({len(x) for x in pl})} chunks; the "
                                    f"layout has {p} pipeline ranks of {v} model chunks each.")
            ranks = [list(x) for x in pl]
        else:
            if len(pl) != p:
                raise StrategyError(f"pipeline_layers gives the layers of {len(pl)} pipeline ranks; the layout has {p}.")
            ranks = [even(n, v) for n in pl]
        chunk = [ranks[c % p][c // p] for c in range(p * v)]
    if sum(chunk) != L:
        raise StrategyError(f"pipeline_layers={pl} places {sum(chunk)} transformer layers; the model has {L}.")
    per_rank = [sum(chunk[c] for c in range(s, p * v, p)) for s in range(p)]
    if pl is not None and min(per_rank) < 1:
        raise StrategyError(f"pipeline_layers={pl} leaves pipeline rank {per_rank.index(min(per_rank))} without a layer; "
                            "every rank needs at least one.")
    ends = np.cumsum([0] + chunk)
    return [np.arange(ends[c], ends[c + 1]) for c in range(p * v)]


#: how a layout's collectives and optimizer are run: ``"pytorch"`` (PyTorch DDP's bucketed all-reduce, FSDP2 as
#: torchtitan runs it, tensor and pipeline parallel as the module docstring of :mod:`perfmodel.step.parallel` says) and
#: ``"megatron"`` (Megatron-Core: the distributed optimizer, sequence parallelism with tensor parallelism, main
#: gradients in FP32, gradient reduce-scatter and parameter all-gather in buckets overlapped with compute).
FRAMEWORKS = ("pytorch", "megatron")


def check_framework(framework) -> str:
    """The canonical name of a training framework (:data:`FRAMEWORKS`; ``"megatron-lm"``, ``"megatron-core"``,
    ``"mcore"`` and ``"nemo"`` are ``"megatron"``, ``"torchtitan"`` is ``"pytorch"``)."""
    key = framework.strip().lower().replace("_", "-") if isinstance(framework, str) else None
    key = {"megatron-lm": "megatron", "megatron-core": "megatron", "mcore": "megatron", "nemo": "megatron",
           "torchtitan": "pytorch", "torch": "pytorch"}.get(key, key)
    if key not in FRAMEWORKS:
        raise UnknownNameError(f"Unknown framework {framework!r}. Expected one of: 'pytorch' (DDP, FSDP2 as torchtitan "
                               "runs it) or 'megatron' (Megatron-Core: distributed optimizer, sequence parallelism).")
    return key


def _flag_or_none(name: str, value, what: str):
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True, False or None ({what}); got {value!r}.")
    return None if value is None else bool(value)


def check_stack_framework(stack: str, framework) -> None:
    """Refuse a kernel family the framework does not run: Liger Kernel (``stack="liger"``) patches Hugging Face models
    trained with PyTorch; Megatron-Core runs Transformer Engine's modules (``stack="te"``) or its own fused kernels."""
    if stack == "liger" and check_framework(framework) == "megatron":
        raise StrategyError("stack='liger' with framework='megatron': Liger Kernel patches Hugging Face models trained with "
                            "PyTorch (FSDP, DDP); Megatron-Core runs Transformer Engine's modules or its own fused kernels. "
                            "Use stack='te' (or 'compile' for Megatron's own kernels) with framework='megatron', or "
                            "framework='pytorch' with Liger.")


def resolve_execution(framework, degrees: dict, *, distributed_optimizer=None, sequence_parallel=None,
                      overlap_tp_backward=None, shard_gradients=None, expert_tensor_parallel=None) -> dict:
    """How a layout runs: ``{"framework", "distributed_optimizer", "sequence_parallel", "overlap_tp_backward",
    "shard_gradients", "expert_tensor_parallel"}``.

    ``"megatron"``: the distributed optimizer (ZeRO-1: FP32 master weights and optimizer states sharded over the
    ``dp·cp`` ranks, gradients reduce-scattered and parameters all-gathered) unless ``distributed_optimizer=False``
    (Megatron-LM before it, as in Narayanan et al., SC 2021), sequence parallelism whenever ``tp > 1`` unless
    ``sequence_parallel=False``, and the column-parallel linears' backward collectives issued asynchronously under
    their GEMMs whenever ``tp > 1`` unless ``overlap_tp_backward=False`` (:data:`TP_BACKWARD_OVERLAP`); FSDP is
    refused (spell the data-parallel factor ``dp``). ``"pytorch"``: no distributed optimizer (shard with ``fsdp``),
    sequence parallelism by default with ``fsdp`` and ``tp`` (torchtitan's 2D), else as asked; the backward
    collectives in order with the GEMMs (DTensor's; torchtitan's overlap is ``async_tp``).

    ``shard_gradients`` (ZeRO-2, :attr:`perfmodel.Parallelism.shard_gradients`): each micro-batch's gradients
    reduce-scattered into the rank's ``1/(dp·cp)`` shard. Default: on for FSDP without a pipeline (torchtitan's
    gradient accumulation reduce-scatters every micro-batch), off elsewhere (Megatron's distributed optimizer and FSDP
    with a pipeline accumulate whole gradients and reduce once per step). True needs a sharded optimizer (FSDP, or
    Megatron's distributed optimizer) and data-parallel ranks to shard over.

    ``expert_tensor_parallel`` (:attr:`perfmodel.Parallelism.expert_tensor_parallel`): the tensor-parallel ranks that
    split each routed expert of a mixture of experts, 1 or ``tp``; default Megatron-Core's ``tp`` (its
    ``--expert-tensor-parallel-size`` unset), torchtitan's 1. Without tensor parallelism, 1.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An unknown framework.
    StrategyError
        FSDP under Megatron; the distributed optimizer or the backward overlap under PyTorch; sequence parallelism or
        the backward overlap without tensor parallelism; sharded gradients without a sharded optimizer or without
        data-parallel ranks, whole gradients under FSDP without a pipeline; an expert tensor parallelism other than 1
        or ``tp``.
    TypeError
        A flag that is not a bool or None.
    """
    name = check_framework(framework)
    dist = _flag_or_none("distributed_optimizer", distributed_optimizer, "Megatron's optimizer sharded over data parallel")
    sp = _flag_or_none("sequence_parallel", sequence_parallel, "norms, dropouts and activations split along the sequence "
                                                                "over the tensor-parallel ranks")
    ov = _flag_or_none("overlap_tp_backward", overlap_tp_backward, "Megatron's backward tensor-parallel collectives "
                                                                      "under the column-parallel linears' GEMMs")
    tp, fsdp, strat = int(degrees.get("tp", 1)), bool(degrees.get("fsdp", False)), degrees.get("name", "?")
    if name == "megatron":
        if fsdp:
            raise StrategyError(f"strategy={strat!r} with framework='megatron': Megatron-Core shards the optimizer over "
                                "data parallel with its distributed optimizer, not with FSDP. Spell the data-parallel "
                                "factor dp (e.g. 'dp2-tp4-pp8'), or use framework='pytorch' for FSDP.")
        dist = True if dist is None else dist
        sp = tp > 1 if sp is None else sp
        ov = tp > 1 if ov is None else ov
    else:
        if dist:
            raise StrategyError("distributed_optimizer=True is Megatron-Core's (framework='megatron'); with "
                                "framework='pytorch' shard the optimizer with fsdp (e.g. 'fsdp8').")
        if ov:
            raise StrategyError("overlap_tp_backward=True is Megatron-Core's and Transformer Engine's linear layers "
                                "(framework='megatron'); PyTorch's tensor parallelism runs its backward collectives in "
                                "order with the GEMMs. Use framework='megatron', or async_tp=True for torchtitan's "
                                "overlap of the collectives with their matmuls.")
        dist = False
        sp = (fsdp and tp > 1) if sp is None else sp
        ov = False
    if sp and tp < 2:
        raise StrategyError(f"sequence_parallel=True splits the norms, dropouts and activations over the tensor-parallel "
                            f"ranks, but strategy={strat!r} has no tensor parallelism. Add a tp factor or pass "
                            "sequence_parallel=None.")
    if ov and tp < 2:
        raise StrategyError(f"overlap_tp_backward=True hides tensor-parallel collectives under the backward GEMMs, but "
                            f"strategy={strat!r} has no tensor parallelism. Add a tp factor or pass "
                            "overlap_tp_backward=None.")
    zero2 = _resolve_shard_gradients(shard_gradients, degrees, fsdp=fsdp, distributed_optimizer=bool(dist))
    return dict(framework=name, distributed_optimizer=bool(dist), sequence_parallel=bool(sp),
                overlap_tp_backward=bool(ov), shard_gradients=zero2,
                expert_tensor_parallel=_resolve_expert_tensor_parallel(expert_tensor_parallel, name, tp, strat))


def check_expert_grid(strat: str, what: str, tp: int, ep: int, dp_ranks: int, etp: int, *, framework: str = "megatron",
                      expert_ffn: int | None = None, hidden: int | None = None) -> None:
    """A ``StrategyError`` for a mixture of experts (``what`` names it) whose routed experts the layout splits over the
    ``tp`` tensor-parallel ranks (``etp = tp > 1``) where perfmodel cannot lay that out: under PyTorch (torchtitan's
    expert tensor parallelism is not modelled); with experts as wide as the hidden size (``expert_ffn == hidden``:
    perfmodel tells an expert's hidden-size kernels and activations, on the gathered tokens, from its width ones,
    split over the ranks, by their size); or with an ``ep`` that does not divide the ``dp_ranks`` (``dp·cp``) ranks
    it is then carved from (Megatron-Core's expert grid ``etp·ep·edp = tp·dp·cp``)."""
    if etp <= 1:
        return
    keep = ("keep each expert whole with expert_tensor_parallel=1 (--expert-tensor-parallel 1), ep then over "
            "tp x dp x cp")
    if framework != "megatron":
        raise StrategyError(f"strategy={strat!r}: {what}, split over the {tp} tensor-parallel ranks (expert tensor "
                            f"parallelism {etp}) under framework={framework!r}: perfmodel splits the experts as "
                            "Megatron-Core's token dispatcher runs them (the dispatched tokens gathered over those "
                            "ranks); torchtitan's expert tensor parallelism is not modelled, and its default keeps each "
                            f"expert whole. Use framework='megatron', or {keep}.")
    if expert_ffn is not None and hidden is not None and int(expert_ffn) == int(hidden):
        raise StrategyError(f"strategy={strat!r}: {what}, each as wide as the hidden size ({hidden}), split over the "
                            f"{tp} tensor-parallel ranks (expert tensor parallelism {etp}): perfmodel tells an expert's "
                            "kernels on the tokens the ranks gather from those on its split width by their size, which "
                            f"is the same here, so it does not model this split. Please {keep}.")
    if dp_ranks % max(int(ep), 1):
        raise StrategyError(f"strategy={strat!r}: {what}, split over the {tp} tensor-parallel ranks (expert tensor "
                            f"parallelism {etp}: Megatron-Core's default unless --expert-tensor-parallel-size says "
                            f"otherwise), so ep{ep} is carved from the {dp_ranks} data- and context-parallel "
                            f"rank{'s' if dp_ranks > 1 else ''}, which it does not divide. Use an ep that divides "
                            f"dp x cp, or {keep}.")


def _resolve_expert_tensor_parallel(asked, framework: str, tp: int, strat: str) -> int:
    """:func:`resolve_execution`'s ``expert_tensor_parallel``: the framework's default (Megatron-Core ``tp``,
    PyTorch 1), or the asked 1 or ``tp``."""
    if asked is None:
        return tp if framework == "megatron" else 1
    if isinstance(asked, bool) or not isinstance(asked, (int, np.integer)) or asked < 1:
        raise StrategyError(f"expert_tensor_parallel must be a positive int (1, or the layout's tp) or None; got "
                            f"{asked!r}.")
    if int(asked) not in (1, tp):
        raise StrategyError(f"expert_tensor_parallel={asked} with strategy={strat!r}: perfmodel splits each routed expert "
                            f"over 1 rank (whole) or over all {tp} tensor-parallel rank{'s' if tp > 1 else ''} (as the "
                            "dense MLPs are); other sizes are not modelled. Pass 1 or "
                            f"{tp}" + (", or None for the framework's default." if tp > 1 else "."))
    return int(asked)


def _resolve_shard_gradients(asked, degrees: dict, *, fsdp: bool, distributed_optimizer: bool) -> bool:
    """:func:`resolve_execution`'s ``shard_gradients``: the default, or the asked value where the layout can run it."""
    asked = _flag_or_none("shard_gradients", asked, "gradients reduce-scattered every micro-batch into the rank's "
                                                      "shard, ZeRO-2")
    strat = degrees.get("name", "?")
    flat_fsdp = fsdp and int(degrees.get("pp", 1)) == 1
    if asked is None:
        return flat_fsdp
    if asked and not (fsdp or distributed_optimizer):
        raise StrategyError(f"shard_gradients=True keeps each rank's shard of the gradients, which needs the optimizer "
                            f"sharded with them, but strategy={strat!r} keeps whole replicas (DDP, or Megatron without "
                            "its distributed optimizer). Shard with fsdp (e.g. 'fsdp8-pp4'), or use framework='megatron' "
                            "with its distributed optimizer.")
    if asked and int(degrees.get("dp", 1)) * int(degrees.get("cp", 1)) < 2:
        raise StrategyError(f"shard_gradients=True shards the gradients over the data-parallel ranks, but "
                            f"strategy={strat!r} has none. Add a dp or fsdp factor, or pass shard_gradients=None.")
    if not asked and flat_fsdp:
        raise StrategyError(f"shard_gradients=False with strategy={strat!r}: FSDP without a pipeline reduce-scatters every "
                            "micro-batch's gradients into the rank's shard (torchtitan's gradient accumulation); whole "
                            "gradients there are not modelled. Pass shard_gradients=None, or add a pp factor (FSDP with "
                            "a pipeline accumulates whole gradients unless shard_gradients=True).")
    return bool(asked)


#: Megatron's overlap of the backward pass's tensor-parallel collectives with the column-parallel linears' GEMMs,
#: as ``Parallelism(overlap_tp_backward=...)`` and :func:`resolve_execution` model it, with the commits that brought
#: each part (NVIDIA/Megatron-LM): without sequence parallelism, the input gradient's all-reduce under the weight-
#: gradient GEMM (cf7efd4, 2021-08-30, "allreduce overlap with wgrad gemm", on unless
#: ``--no-async-tensor-model-parallel-allreduce``: after the runs of Narayanan et al., SC 2021, which predate it);
#: with it, the saved input shard all-gathered again under the input-gradient GEMM and the input gradient
#: reduce-scattered under the weight-gradient GEMM (02bb1f5, 2022-03-02, the sequence parallelism of Korthikanti et
#: al.). Megatron-Core keeps both, unconditionally (``LinearWithGradAccumulationAndAsyncCommunication`` in
#: megatron/core/tensor_parallel/layers.py at 000c4ac), and so do Transformer Engine's ``LayerNormLinear`` and
#: ``Linear`` (transformer_engine/pytorch/module/layernorm_linear.py and linear.py at d0067d0: the input gather and
#: the input gradient's reduce-scatter with ``async_op=True``). A row-parallel linear's output gradient is all-gathered
#: before its backward GEMMs (exposed) with sequence parallelism, and needs no collective without it.
TP_BACKWARD_OVERLAP = ("column-parallel linears: the input gradient's reduce-scatter (all-reduce without sequence "
                       "parallelism) under the weight-gradient GEMM, the input re-gathered under the input-gradient GEMM")


def resolve_fp8_param_gather(value, execution: dict, *, fsdp: bool, precision: str, stack: str, recipe=None) -> bool:
    """Whether the FP8 linears' weights (:func:`perfmodel.step.trace.fp8_linear_weights`) are kept and all-gathered in
    FP8, one byte each, by the data-parallel ranks that shard them.

    ``value`` None: the framework's default — PyTorch gathers them in FP8 under FSDP at ``precision="fp8"`` with
    ``torch.compile`` (torchtitan's ``enable_fsdp_float8_all_gather``, which its FP8 recipes turn on and the compiled
    cast model assumes: weights cast on their shard); Megatron-Core does not (``--fp8-param-gather`` is opt-in).
    True: Megatron-Core's ``--fp8-param-gather`` (the model's FP8 weights stored in FP8, the distributed optimizer
    gathering them in FP8, its FP32 main weights sharded), or torchao's FP8 all-gather under FSDP, eager or compiled;
    it needs ``precision="fp8"`` and ranks that gather the parameters (FSDP, or the distributed optimizer). False:
    every parameter at the training precision. torchao's rowwise recipe (``recipe="rowwise"``) gathers in BF16: never
    on by default, refused when asked for; so is Transformer Engine's NVFP4 recipe (``recipe="nvfp4"``: its weights are
    cast to FP4 from the training precision per micro-batch; perfmodel models no FP4 or FP8 weight storage for it).
    """
    from perfmodel._workload import fp8_recipe_of

    on = _flag_or_none("fp8_param_gather", value, "the FP8 linears' weights kept and all-gathered in FP8")
    framework = execution["framework"]
    rowwise = precision == "fp8" and fp8_recipe_of(precision, stack, recipe) == "rowwise"
    if on is None:
        return bool(framework == "pytorch" and fsdp and precision == "fp8" and stack == "compile" and not rowwise)
    if not on:
        return False
    if precision == "fp8" and fp8_recipe_of(precision, stack, recipe) == "nvfp4":
        raise ValueError("fp8_param_gather=True with fp8_recipe='nvfp4': Transformer Engine's NVFP4 recipe casts the "
                         "weights to FP4 from their BF16 copy per micro-batch, and perfmodel models no FP8 or FP4 weight "
                         "storage for it. Pass fp8_param_gather=None, or another recipe ('delayed', 'current', 'mxfp8', 'blockwise').")
    if rowwise:
        raise ValueError("fp8_param_gather=True with fp8_recipe='rowwise': torchao all-gathers rowwise-scaled weights in "
                         "BF16 (its FP8 all-gather is tensorwise). Use fp8_recipe='tensorwise', or fp8_param_gather=None.")
    if precision != "fp8":
        raise ValueError(f"fp8_param_gather=True keeps the FP8 linears' weights in FP8; the step runs at "
                         f"precision={precision!r}. Pass precision='fp8', or fp8_param_gather=None.")
    if framework == "megatron" and not execution["distributed_optimizer"]:
        raise StrategyError("fp8_param_gather=True with framework='megatron' needs the distributed optimizer (Megatron's "
                            "--fp8-param-gather gathers the parameters it shards). Pass distributed_optimizer=None "
                            "(on by default), or fp8_param_gather=False.")
    if framework == "pytorch" and not fsdp:
        raise StrategyError("fp8_param_gather=True with framework='pytorch' is FSDP's FP8 all-gather (torchao); the "
                            "layout has no fsdp factor. Use an fsdp layout ('fsdp8', 'fsdp4-tp2'), "
                            "framework='megatron' with its distributed optimizer, or fp8_param_gather=None.")
    return True


def check_async_tp(async_tp, tp: int, strategy: str, *, framework="pytorch", stack: str | None = None) -> None:
    """Refuse ``async_tp`` that is not a bool, asked for without tensor parallelism, or, under PyTorch
    (``framework="pytorch"``), without torch.compile's kernels (``stack`` other than ``"compile"``; None: not checked).

    PyTorch's asynchronous TP is a pass of torch.compile's inductor (``torch._inductor.config._micro_pipeline_tp``,
    torch/_inductor/fx_passes/micro_pipeline_tp.py) that fuses the collectives it finds in a compiled graph with their
    matmuls; an eager step runs them in order, and torchtitan refuses the flag without compile ("Async TP requires
    --training.compile", torchtitan/parallelisms/parallelize_llama.py at 9dec370 and
    torchtitan/models/llama3/parallelize_llama.py at 820504e, the commits of its published async-TP runs).
    Megatron's ``--tp-comm-overlap`` (Transformer Engine's userbuffers) needs no compiler."""
    if not isinstance(async_tp, (bool, np.bool_)):
        raise TypeError(f"async_tp must be True (tensor-parallel collectives overlapped with their matmuls) or False; "
                        f"got {async_tp!r}.")
    if async_tp and tp < 2:
        raise StrategyError(f"async_tp=True overlaps the tensor-parallel collectives with the matmuls, but strategy="
                            f"{strategy!r} has no tensor parallelism. Add a tp factor (e.g. 'fsdp8-tp8') or pass "
                            "async_tp=False.")
    if async_tp and stack is not None and stack != "compile" and check_framework(framework) == "pytorch":
        raise StrategyError(f"async_tp=True with framework='pytorch' is torch.compile's micro-pipelined tensor "
                            f"parallelism, a compiler pass that fuses each collective with its matmul in the compiled "
                            f"graph, but the workload's kernels are {stack!r}: eager PyTorch runs the collectives in "
                            f"order, and torchtitan refuses the flag without compile ('Async TP requires "
                            f"--training.compile'). Pass Workload(compile=True) (perfmodel predict --compile), or "
                            f"async_tp=False, or framework='megatron' for Megatron's --tp-comm-overlap.")


def context_parallel_shape(shape, in_dtype, cp: int, strategy: str) -> tuple:
    """One rank's sample under context parallelism: a token sequence ``(s,)`` cut in ``cp`` shards ``(s / cp,)``."""
    import torch

    shape = tuple(shape)
    if cp == 1:
        return shape
    if in_dtype not in (torch.long, torch.int, torch.int64) or len(shape) != 1:
        raise StrategyError(f"strategy={strategy!r} splits a token sequence over {cp} context-parallel ranks; the input "
                            f"is {tuple(shape)} of {in_dtype}. Use cp with a language model (input_shape=(seq_len,)).")
    if shape[0] % (2 * cp):
        raise StrategyError(f"strategy={strategy!r}: context parallelism over {cp} ranks cuts the sequence in {2 * cp} "
                            f"chunks (two per rank, load-balanced for causal masks), but seq_len = {shape[0]} is not a "
                            f"multiple of {2 * cp}. Use a sequence length divisible by {2 * cp}.")
    return (shape[0] // cp,)


def check_sequence_parallel(rank_shape, in_dtype, tp: int, strategy: str, *, framework: str,
                            sequence_parallel: bool) -> None:
    """Refuse Megatron's sequence parallelism where the tokens of a rank's sequence (``rank_shape``: the sequence a
    context-parallel rank holds) do not divide over the ``tp`` ranks: Megatron-Core scatters the hidden states along
    the sequence, and its reduce-scatter asserts 'First dimension of the tensor should be divisible by tensor parallel
    size' (``megatron/core/tensor_parallel/mappings.py``). PyTorch's DTensor shards unevenly, so ``"pytorch"`` is not
    refused."""
    import torch

    if framework != "megatron" or not sequence_parallel or tp < 2 or len(tuple(rank_shape)) != 1 \
            or in_dtype not in (torch.long, torch.int, torch.int64):
        return
    s = int(tuple(rank_shape)[0])
    if s % tp:
        raise StrategyError(f"strategy={strategy!r} with framework='megatron': sequence parallelism splits each "
                            f"sequence's {s} tokens (per context-parallel rank) over the {tp} tensor-parallel ranks, and "
                            f"{s} is not a multiple of {tp} (Megatron-Core refuses it: 'First dimension of the tensor "
                            f"should be divisible by tensor parallel size'). Use a sequence length whose share per "
                            f"context-parallel rank divides by {tp}, or sequence_parallel=False.")


def check_tensor_parallel(lay, tp: int, strategy: str, n_gpus: int, name: str, *, need_ffn: bool = True) -> None:
    """Refuse a tensor-parallel degree that does not divide what it splits: the attention heads, the key/value heads
    (grouped-query attention: the K/V projections are split over the tp ranks, whole heads each; Megatron-LM's
    attention refuses a tp degree that does not divide its query groups, NVIDIA/Megatron-LM ``ParallelAttention``), the
    hidden size and (``need_ffn``) the MLP size.

    ``lay`` is a :class:`perfmodel.step.trace.ModelLayout`; ``strategy`` the parsed name (``"tp"`` alone or a
    combination); a model without a config of heads and hidden size cannot be split."""
    single = strategy == "tp"
    if not (lay.heads and lay.hidden):
        raise StrategyError(f"strategy={strategy!r} splits attention heads and hidden columns, but {name} has no config with "
                            "num_attention_heads / hidden_size. Pass a Hugging Face config or model, or use "
                            + ("'dp', 'fsdp' or 'pp'." if single else "a strategy without tp."))
    kv = lay.kv_heads if lay.kv_heads and lay.kv_heads != lay.heads else None
    sizes = [("attention heads", lay.heads), ("key/value heads", kv), ("hidden size", lay.hidden),
             ("MLP size", lay.ffn if need_ffn else None)]
    bad = [f"{w} = {v}" for w, v in sizes if v and v % tp]
    if not bad:
        return
    g = 0
    for _, v in sizes:
        if v:
            g = math.gcd(g, int(v))
    valid = [k for k in range(1, g + 1) if g % k == 0]
    shown = ", ".join(map(str, valid[:12])) + (", ..." if len(valid) > 12 else "")
    why = (" (the key/value heads are split over the tp ranks, and a head is never cut: Megatron-LM refuses such a "
           "layout too, 'Currently the num_query_groups should be a multiple of the tensor parallel size', and "
           "torchtitan's attention cannot reshape a fraction of a head)" if kv and kv % tp else "")
    if single:
        raise StrategyError(f"strategy='tp' over {n_gpus} GPUs does not divide {name}: {', '.join(bad)} not divisible by "
                            f"{n_gpus}{why}. Use n_gpus that divides them, or 'dp' / 'fsdp' / 'pp'. Valid tp degrees for it: "
                            f"{shown}.")
    raise StrategyError(f"strategy={strategy!r}: tensor parallel over {tp} GPUs does not divide {name}: "
                        f"{', '.join(bad)} not divisible by {tp}{why}. Use a tp degree that divides them. Valid tp "
                        f"degrees for it: {shown}.")


def check_sequence_length(net, shape, in_dtype) -> None:
    """Refuse a token sequence longer than a Hugging Face model's position table, on the whole sequence: a
    context-parallel rank traces ``s / cp`` tokens, but each still sits at its position of the full sequence."""
    import torch

    cfg = getattr(getattr(net, "model", None), "config", None)
    if cfg is None or in_dtype not in (torch.long, torch.int, torch.int64) or len(tuple(shape)) < 1:
        return
    check = getattr(net, "_check_length", None)
    if check is not None:
        check(torch.empty((1, *tuple(shape)), dtype=torch.long, device="meta"))

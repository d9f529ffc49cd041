"""The network between a cloud's GPU instances, as :func:`perfmodel.planning.cloud.plan_cloud` joins a rental's instances.

A rental of more GPUs than one instance holds spans instances: each instance is a node of its GPUs (NVLink or PCIe
inside), and the groups that leave it cross the instance's network. That network is the instance type's own, read in
a cited source (:func:`perfmodel.datasets.reference.load_instance_networks`), or the one a user's price table states
(optional columns ``network_gbit_per_s`` and ``gpudirect_rdma``):

* **Its bandwidth** is split evenly over the instance's GPUs as rails (``nics_per_node`` = its GPUs, each at
  ``network_gbit_per_s / gpus`` Gb/s): a group that leaves the instance gets its ranks' share of the whole network
  (:func:`perfmodel.step.strategy.rail_link`). How many network cards carry it does not change that share.
* **NCCL's efficiency and latency** on it: with GPUDirect RDMA (AWS EFA on p4d/p4de/p5/p5en/p6-b200, Azure's ND
  InfiniBand sizes, Google's RoCE A3 Ultra and A4, a user's InfiniBand or RoCE) the NDR fabric's ``(e, α)`` fitted
  on Vidur's DGX H100 rows. The published nccl-tests of AWS p5.48xlarge (EFA, ``perfmodel reproduce --only
  nccl_multinode``, which prints the error) check that class on EFA: the all-gathers of 256 MiB and more within
  about a tenth, smaller messages and the all-reduces NCCL's tree takes over many nodes predicted faster than
  measured. Without
  it (TCP, GPUDirect-TCPX, or a source that does not say), the assumed
  :data:`perfmodel.step.collectives.NCCL_EFFICIENCY` and the Ethernet links' latency: no measured NCCL curves of
  those networks are in the data.

An instance type the table does not list keeps :data:`perfmodel.planning.cloud.MULTI_INSTANCE_LINK`, and the plan
says so.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import pandas as pd

__all__ = ["InstanceNetwork", "instance_network", "instance_networks"]


@dataclasses.dataclass(frozen=True)
class InstanceNetwork:
    """An instance type's network between instances.

    Parameters
    ----------
    instance_type : str
    gpus : int
        GPUs of one instance.
    gbit_per_s : float
        The instance's network bandwidth, Gb/s.
    gpudirect_rdma : bool
        NCCL reaches GPU memory over RDMA (EFA, InfiniBand, RoCE): the rail fabric's fitted efficiency; else TCP's
        assumed one.
    source : str
        Where the numbers were read (the shipped table's URL, or ``"prices"`` for a user's table).
    """

    instance_type: str
    gpus: int
    gbit_per_s: float
    gpudirect_rdma: bool
    source: str = ""

    def __post_init__(self):
        g, b = self.gpus, self.gbit_per_s
        if isinstance(g, bool) or not isinstance(g, int) or g < 1:
            raise ValueError(f"InstanceNetwork {self.instance_type!r}: gpus must be a positive whole number of GPUs per "
                             f"instance; got {g!r}.")
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or b <= 0:
            raise ValueError(f"InstanceNetwork {self.instance_type!r}: the network bandwidth must be a positive number of "
                             f"Gb/s; got {b!r}. Fix the row's network_gbit_per_s (e.g. 3200 for 32 x 100 Gb/s EFA).")

    @property
    def nics_per_node(self) -> int:
        """Rails of the instance: one per GPU (the network split evenly over them)."""
        return self.gpus

    def rail(self):
        """One GPU's rail, an :class:`perfmodel.step.collectives.Interconnect`: its share of the network at NCCL's
        efficiency and latency for the transport (module docstring)."""
        from perfmodel.step.collectives import INTERCONNECTS, NCCL_EFFICIENCY, Interconnect, fitted_link

        gb = self.gbit_per_s / 8 / self.gpus
        per = f"{self.gbit_per_s / self.gpus:g} Gb/s per GPU"
        if self.gpudirect_rdma:
            ndr = fitted_link("infiniband-ndr")
            return Interconnect(f"{self.instance_type} network ({per}, RDMA)", gb, ndr.latency_s, ndr.efficiency)
        return Interconnect(f"{self.instance_type} network ({per}, TCP)", gb, INTERCONNECTS["ethernet-100g"].latency_s,
                            NCCL_EFFICIENCY)

    def links(self) -> dict:
        """The link per level of a rental of these instances: the GPU's own link inside an instance, the rail across."""
        return {"intra": None, "inter": self.rail()}

    def describe(self) -> str:
        """A line for a plan's notes."""
        how = ("GPUDirect RDMA: NCCL efficiency of the NDR fit, checked on p5 EFA" if self.gpudirect_rdma else
               "no GPUDirect RDMA stated: NCCL efficiency assumed")
        src = "the price table's network_gbit_per_s" if self.source == "prices" else "perfmodel.datasets.load_instance_networks"
        rails = f"{self.gpus} rail{'s' if self.gpus > 1 else ''}"
        return f"link between instances: {self.instance_type}'s {self.gbit_per_s:g} Gb/s network as {rails} ({how}; {src})"


@functools.lru_cache(maxsize=1)
def _shipped() -> dict:
    from perfmodel.datasets.reference import load_instance_networks

    out = {}
    for r in load_instance_networks().itertuples(index=False):
        out[(str(r.instance_type), int(r.gpus_per_instance))] = InstanceNetwork(
            str(r.instance_type), int(r.gpus_per_instance), float(r.network_gbit_per_s),
            _flag(r.gpudirect_rdma, r.instance_type), str(r.source_url))
    return out


def instance_networks() -> pd.DataFrame:
    """The shipped networks as :func:`instance_network` reads them: one row per instance type, with the rail's
    bandwidth (GB/s per GPU), NCCL efficiency and latency."""
    rows = []
    for net in _shipped().values():
        rail = net.rail()
        rows.append(dict(instance_type=net.instance_type, gpus_per_instance=net.gpus, network_gbit_per_s=net.gbit_per_s,
                         gpudirect_rdma=net.gpudirect_rdma, rail_gb_per_s=rail.bandwidth_gb_per_s,
                         efficiency=rail.efficiency, latency_s=rail.latency_s))
    return pd.DataFrame(rows)


def _flag(v, instance_type) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no", ""):
        return False
    raise ValueError(f"prices: gpudirect_rdma of {instance_type!r} must be true or false (or empty: not stated); got {v!r}.")


def instance_network(instance_type: str, gpus_per_instance: int, *, network_gbit_per_s=None,
                     gpudirect_rdma=None) -> InstanceNetwork | None:
    """The network of an instance type: the price row's own (``network_gbit_per_s``, with ``gpudirect_rdma``) when
    given, else the shipped table's row of that type and GPU count, else None (not known).

    Raises
    ------
    ValueError
        A bandwidth that is not a positive number, a ``gpudirect_rdma`` that is not true or false.
    """
    given = network_gbit_per_s is not None and not (isinstance(network_gbit_per_s, float) and math.isnan(network_gbit_per_s))
    if given:
        b = pd.to_numeric(pd.Series([network_gbit_per_s]), errors="coerce").iloc[0]
        return InstanceNetwork(str(instance_type), int(gpus_per_instance), float(b) if pd.notna(b) else network_gbit_per_s,
                               _flag(gpudirect_rdma, instance_type), "prices")
    return _shipped().get((str(instance_type), int(gpus_per_instance)))

"""Multi-node NCCL all-reduce, all-gather and all-to-all bus bandwidth on a rail-optimised H100 cluster (published nccl-tests on 16-256 GPUs) predicted from spec sheets with the efficiency and latency fitted on Vidur's curves.

The measurements are a cloud's (AWS p5.48xlarge: NCCL over EFA through the aws-ofi-nccl plugin), not a DGX H100
SuperPOD's: EFA is not InfiniBand, but it gives each GPU the same 400 Gb/s on its own rail, and perfmodel has no link
model of its own for it, so the rows are predicted as an NDR-class rail fabric of that line rate — the link a user of
such instances would name. NCCL picks among ring, tree and (inside a node) NVLS algorithms; perfmodel prices an
all-gather as a ring and an all-reduce as NCCL's tuning model picks between its ring and its tree
(:func:`perfmodel.step.collectives.allreduce_time`), so what NVLink SHARP's tree adds on two nodes (bus bandwidth above
the NICs' line rate) is a misfit this item shows, not a parameter it tunes, and so is EFA's own latency: the network's
latency per step is the one fitted on Vidur's DGX H100 InfiniBand rows. Beside it, the all-reduces priced as rings
only (what perfmodel did before it took NCCL's tree). The all-to-alls (the
collective of an expert-parallel group) are priced as perfmodel prices a mixture of experts' dispatch: each GPU's
off-node share through its own NIC (:func:`perfmodel.step.strategy.alltoall_across`), beside the ring's rail link the
group would get were it priced as a ring.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.datasets._cache import cached_frame
from perfmodel.papers import _item
from perfmodel.papers._item import Item

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (published multi-node nccl-tests on rail-optimised H100 nodes)",
    title=("Multi-node NCCL all-reduce, all-gather and all-to-all bus bandwidth on a rail-optimised H100 cluster "
           "(published nccl-tests on 16-256 GPUs) predicted from spec sheets with the efficiency and latency fitted on "
           "Vidur's curves"),
    upstream="crazyguitar/aws-gpu-communication-benchmark data/ (nccl-tests on AWS p5.48xlarge)",
    sources=(("datasets/reference/nccl_tests_p5.csv: all_reduce_perf and all_gather_perf (32 MiB to 8 GiB) and "
              "alltoall_perf (32 MiB to 2 GiB) out-of-place bus bandwidth on 2-32 p5.48xlarge nodes (8 H100 SXM5 "
              "each, 400 Gb/s EFA per GPU) (perfmodel.datasets.load_nccl_tests_p5)"),),
    procedure=("Each row is the collective of one process group spanning the row's nodes, as perfmodel prices an "
               "FSDP group of that many ranks: H100 nodes of 8 GPUs with {'intra': 'nvlink', 'inter': "
               "'infiniband-ndr'} and 8 NICs per node, one per GPU on its own rail (perfmodel.step.strategy."
               "resolve_links: the group's share of the node's NICs, 8 x 50 GB/s, at the NDR fabric's efficiency "
               "fitted on Vidur's DGX H100 rows, never faster than NVLink; the ring's latency per step as NCCL's "
               "tuning model counts it, the steps that leave a node at the network's latency and the others at "
               "NVLink's), then allreduce_time / allgather_time of the row's message; the predicted bus bandwidth "
               "is nccl-tests' formula on that time; an all-reduce is NCCL's ring or, where its tuning model finds it "
               "faster, its tree (a chain through each node's 8 ranks and a double binary tree over the nodes, "
               "2((8 - 1) intra + floor(log2 nodes) inter) of latency, 0.92 of the ring's bus bandwidth times NCCL's "
               "correction of its trees on messages up to 256 MiB; "
               "perfmodel.step.collectives.allreduce_time). An all-to-all row is the dispatch of an expert-parallel group of "
               "that many ranks (degrees {'dp': n, 'ep': n}): each GPU sends the (n - 8)/n of its message bound for "
               "other nodes through its own NIC at the NDR efficiency, the rest over NVLink at the same time, with "
               "the network's latency per peer (perfmodel.step.strategy.alltoall_across, "
               "perfmodel.step.collectives.alltoall_time); beside it, the same all-to-all on the ring's rail link "
               "(the node's 8 NICs), what pricing it as the data-parallel ring's collectives would give. "
               "Baselines on the same rows: the line rate (the NICs' 400 GB/s "
               "per GPU, no latency, efficiency 1) and one InfiniBand fit pooled over Vidur's A100 and H100 "
               "clusters with every ring step at the network's latency; beside them, the all-reduces priced as NCCL's "
               "ring alone. Nothing is fitted on these rows. Scored: "
               "absolute % error of the bus bandwidth per row, their mean (MAPE) over the all-reduce and all-gather "
               "rows ('all'), over their messages of 256 MiB and more (the size of an FSDP unit's collective for "
               "8B-405B models) and per collective (the all-to-alls on their own), and the mean signed error."),
    status="perfmodel analysis",
    notebook="notebooks/14-vidur-nccl.ipynb",
    test="tests/papers/test_nccl_multinode.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

#: the links the rows are predicted with (a rail-optimised node: NVLink inside, a 400 Gb/s NIC per GPU)
LINKS = {"intra": "nvlink", "inter": "infiniband-ndr"}
#: GPUs and NICs of a p5.48xlarge node
GPUS_PER_NODE = 8
NICS_PER_NODE = 8
#: messages from this size up form the large band (bytes)
LARGE_BYTES = 256 * 2**20


@cached_frame
def data() -> pd.DataFrame:
    """One row per published measurement: ``collective``, ``nodes``, ``n_gpus``, ``message_bytes``, ``band``
    (``lt_256mib``, ``ge_256mib``), ``measured_busbw_gb_per_s``, ``predicted_busbw_gb_per_s`` (perfmodel), the two
    baselines' (``line_rate_busbw_gb_per_s``, ``pooled_fit_busbw_gb_per_s``), the collective on the ring's rail link
    (``ring_link_busbw_gb_per_s``: the prediction itself for an all-gather; for an all-reduce the same link with
    NCCL's ring alone, without its tree; for an all-to-all what pricing it as a ring would give), the link perfmodel
    used (``link_gb_per_s``, ``efficiency``, ``latency_us``) and the absolute
    % errors (``abs_error_pct``, ``line_rate_abs_error_pct``, ``pooled_fit_abs_error_pct``,
    ``ring_link_abs_error_pct``). Computed once per process; callers get copies."""
    from perfmodel.datasets import load_nccl_tests_p5
    from perfmodel.step.collectives import Interconnect, bus_bandwidth_gb_per_s, fitted_params, resolve_interconnect
    from perfmodel.step.strategy import alltoall_across, rail_link, resolve_links

    d = load_nccl_tests_p5()
    pooled = fitted_params()["links"]["infiniband"]
    intra = resolve_interconnect(LINKS["intra"], "H100")
    nic = resolve_interconnect(LINKS["inter"], "H100")
    # the pooled alternative: one InfiniBand fit for both clusters, every ring step at the network's latency (the
    # rail link keeps its NIC's latency)
    pooled_link = rail_link(Interconnect(nic.name, nic.bandwidth_gb_per_s, pooled["latency_s"], pooled["efficiency"]),
                            intra, NICS_PER_NODE)
    line = min(NICS_PER_NODE * nic.bandwidth_gb_per_s, intra.bandwidth_gb_per_s)
    rows = []
    for r in d.itertuples(index=False):
        n, s, coll = int(r.n_gpus), float(r.message_bytes), str(r.collective)
        if int(r.gpus_per_node) != GPUS_PER_NODE:
            raise ValueError(f"nccl_multinode: a row with {r.gpus_per_node} GPUs per node; the p5.48xlarge has "
                             f"{GPUS_PER_NODE}. Check datasets/reference/nccl_tests_p5.csv.")
        a2a = coll == "alltoall"
        links = resolve_links(LINKS, "H100", degrees={"dp": n, **({"ep": n} if a2a else {})},
                              gpus_per_node=GPUS_PER_NODE, nics_per_node=NICS_PER_NODE)
        link = links["ep" if a2a else "dp"]
        pooled_a2a = (alltoall_across(Interconnect(nic.name, nic.bandwidth_gb_per_s, pooled["latency_s"],
                                                   pooled["efficiency"]), NICS_PER_NODE / GPUS_PER_NODE, n,
                                      GPUS_PER_NODE) if a2a else pooled_link)
        rows.append(dict(collective=coll, nodes=int(r.nodes), n_gpus=n, message_bytes=int(r.message_bytes),
                         measured_busbw_gb_per_s=float(r.busbw_gb_per_s),
                         predicted_busbw_gb_per_s=bus_bandwidth_gb_per_s(coll, s, n, link),
                         ring_link_busbw_gb_per_s=bus_bandwidth_gb_per_s(coll, s, n, links["dp"], algorithm="ring"),
                         line_rate_busbw_gb_per_s=float(line),
                         pooled_fit_busbw_gb_per_s=bus_bandwidth_gb_per_s(coll, s, n, pooled_a2a),
                         link_gb_per_s=float(link.bandwidth_gb_per_s), efficiency=float(link.efficiency),
                         latency_us=1e6 * float(link.latency_s)))
    out = pd.DataFrame(rows)
    out["band"] = np.where(out["message_bytes"] >= LARGE_BYTES, "ge_256mib", "lt_256mib")
    m = out["measured_busbw_gb_per_s"]
    for key, col in (("", "predicted_busbw_gb_per_s"), ("line_rate_", "line_rate_busbw_gb_per_s"),
                     ("pooled_fit_", "pooled_fit_busbw_gb_per_s"), ("ring_link_", "ring_link_busbw_gb_per_s")):
        out[f"{key}abs_error_pct"] = 100 * (out[col] - m).abs() / m
    out["signed_error_pct"] = 100 * (out["predicted_busbw_gb_per_s"] - m) / m
    return out


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """MAPE of the bus bandwidth per ``collective`` (``all``: the all-reduces and all-gathers, the ring collectives)
    and ``band`` (``all``, ``lt_256mib``, ``ge_256mib``) for perfmodel, the two baselines and the ring's rail link
    (``ring_link_mape_pct``: for the all-reduces and all-gathers, NCCL's ring alone), with ``n_rows`` and perfmodel's
    mean signed error."""
    d = data() if d is None else d
    rows = []
    rings = d[d["collective"].isin(["all_reduce", "all_gather"])]
    for coll, g in (("all", rings), *d.groupby("collective", sort=True)):
        for band, b in (("all", g), *((k, g[g["band"] == k]) for k in ("lt_256mib", "ge_256mib"))):
            rows.append(dict(collective=str(coll), band=band, n_rows=len(b), mape_pct=float(b["abs_error_pct"].mean()),
                             mean_signed_pct=float(b["signed_error_pct"].mean()),
                             line_rate_mape_pct=float(b["line_rate_abs_error_pct"].mean()),
                             pooled_fit_mape_pct=float(b["pooled_fit_abs_error_pct"].mean()),
                             ring_link_mape_pct=float(b["ring_link_abs_error_pct"].mean())))
    return pd.DataFrame(rows)


def numbers() -> pd.DataFrame:
    """perfmodel's own results: :func:`summary`'s MAPE per collective and band with the baselines', the mean signed
    error, and the NDR fabric's fitted efficiency and latency the rows were predicted with."""
    from perfmodel.step.collectives import fitted_params

    rows = []
    for r in summary().itertuples(index=False):
        kind = ("all-reduce and all-gather" if r.collective == "all" else "all-to-all" if r.collective == "alltoall"
                else r.collective.replace("_", "-"))
        band = {"all": "", "lt_256mib": " with messages < 256 MiB", "ge_256mib": " with messages >= 256 MiB"}[r.band]
        what = f"{r.n_rows} {kind} rows{band}"
        key = f"{r.collective}_{r.band}"
        rows += [dict(quantity=f"{key}_busbw_mape_pct", unit="pct", value=r.mape_pct,
                      protocol=f"mean absolute % error of the bus bandwidth on the {what}, predicted by perfmodel's rail "
                               "model (nccl_multinode.data)"),
                 dict(quantity=f"{key}_busbw_mean_signed_pct", unit="pct", value=r.mean_signed_pct,
                      protocol=f"mean signed % error of the bus bandwidth on the {what} (negative: predicted slower)"),
                 dict(quantity=f"{key}_line_rate_busbw_mape_pct", unit="pct", value=r.line_rate_mape_pct,
                      protocol=f"the baseline on the {what}: the NICs' line rate, no latency, efficiency 1"),
                 dict(quantity=f"{key}_pooled_fit_busbw_mape_pct", unit="pct", value=r.pooled_fit_mape_pct,
                      protocol=f"the alternative on the {what}: one InfiniBand fit pooled over Vidur's A100 and H100 "
                               "clusters, every ring step at the network's latency")]
        if r.collective == "alltoall":
            rows.append(dict(quantity=f"{key}_ring_link_busbw_mape_pct", unit="pct", value=r.ring_link_mape_pct,
                             protocol=f"the alternative on the {what}: the all-to-alls priced on the ring's rail link "
                                      "(the node's 8 NICs shared by the group's ranks on it), as the data-parallel "
                                      "ring's collectives are"))
        elif r.collective != "all_gather":
            rows.append(dict(quantity=f"{key}_ring_only_busbw_mape_pct", unit="pct", value=r.ring_link_mape_pct,
                             protocol=f"the alternative on the {what}: the all-reduces priced as NCCL's ring alone, "
                                      "without its tree (the all-gathers are rings either way)"))
    ndr = fitted_params()["links"]["infiniband-ndr"]
    rows += [dict(quantity="ndr_efficiency", unit="ratio", value=float(ndr["efficiency"]),
                  protocol="NCCL efficiency of the NDR fabric fitted on Vidur's DGX H100 InfiniBand rows (shipped fit)"),
             dict(quantity="ndr_latency_us", unit="us", value=1e6 * float(ndr["latency_s"]),
                  protocol="latency per step of the NDR fabric fitted on Vidur's DGX H100 InfiniBand rows (shipped fit)")]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """Measured (points) and predicted (lines) bus bandwidth against message size, one panel per collective, one colour
    per node count, with the line rate."""
    import matplotlib.pyplot as plt

    d = globals()["data"]() if data is None else data
    colls = sorted(d["collective"].unique())
    if ax is None:
        fig, ax = plt.subplots(1, len(colls), figsize=(4.5 * len(colls), 3.4), squeeze=False)
        ax = ax[0]
    else:
        ax = np.atleast_1d(ax)
        fig = ax[0].figure
    for a, coll in zip(ax, colls):
        for nodes, g in d[d["collective"] == coll].groupby("nodes", sort=True):
            g = g.sort_values("message_bytes")
            pts = a.semilogx(g["message_bytes"], g["measured_busbw_gb_per_s"], "o", ms=3)[0]
            a.semilogx(g["message_bytes"], g["predicted_busbw_gb_per_s"], "-", color=pts.get_color(),
                       label=f"{nodes} nodes ({int(g['n_gpus'].iloc[0])} GPUs)")
        a.axhline(float(d["line_rate_busbw_gb_per_s"].iloc[0]), color="grey", lw=1, ls="--", label="line rate")
        a.set(title=f"{coll.replace('_', '-')} (p5.48xlarge, points: nccl-tests)", xlabel="message, bytes",
              ylabel="bus bandwidth, GB/s")
        a.legend(fontsize=6, frameon=False)
    fig.tight_layout()
    return fig

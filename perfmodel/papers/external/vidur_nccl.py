"""NCCL all-reduce and send/recv times on NVLink, InfiniBand and PCIe predicted from spec sheets with efficiency and latency fitted on the other GPU generation (Vidur's measured curves).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (Vidur's NCCL profiles)",
    title=("NCCL all-reduce and send/recv times on NVLink, InfiniBand and PCIe predicted from spec sheets with "
           "efficiency and latency fitted on the other GPU generation (Vidur's measured curves)"),
    upstream="microsoft/vidur data/profiling/network",
    sources=(("microsoft/vidur: measured NCCL all_reduce and send_recv kernel times (fp16, 4 KiB to 64 MiB; 1 GiB "
              "for the 4-GPU PCIe node) on DGX A100, DGX H100 and pairwise-NVLink A100 / H100 PCIe nodes"),),
    procedure=("perfmodel.step.collectives: each row gets its link kind (NVLink inside a node, InfiniBand "
               "across DGX nodes, PCIe between the NVLink pairs of a 4-GPU PCIe node) and that link's peak "
               "per-direction bandwidth from the spec sheet (GPU catalog, NIC line rate, PCIe generation); NCCL's "
               "efficiency e and latency α per link kind are fitted by relative least squares on the A100 systems "
               "and the H100 systems are predicted with them (and the other way round); median and time-weighted "
               "absolute % error per direction, link, collective and message-size band (< 1 MiB, >= 1 MiB). The "
               "parameters perfmodel ships (perfmodel/step/fitted/nccl_links.json) are fitted on all the "
               "systems and are not what is scored here."),
    status="perfmodel analysis",
    notebook="notebooks/14-vidur-nccl.ipynb",
    test="tests/papers/test_vidur_nccl.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]

#: held-out directions: (name, GPU generation fitted on, generation predicted)
DIRECTIONS = (("a100_to_h100", "a100", "h100"), ("h100_to_a100", "h100", "a100"))
#: message size at which the large band starts, bytes
LARGE_BYTES = 2**20


def data() -> pd.DataFrame:
    """One row per held-out prediction: ``direction`` (``a100_to_h100``: fitted on the A100 systems, predicting the
    H100 ones; ``h100_to_a100``), ``system``, ``gpu``, ``link``, ``collective``, ``n_gpus``, ``devices_per_node``,
    ``message_bytes``, ``band`` (``lt_1mib``, ``ge_1mib``), ``efficiency`` and ``latency_s`` (fitted on the other
    generation), ``link_gb_per_s`` (spec sheet), ``measured_s``, ``predicted_s``, ``roofline_s`` (the baseline: the
    wire bytes at the link's peak bandwidth, no latency), ``abs_error_pct``. A link kind
    without rows in the fitting generation is not predicted (InfiniBand all-reduce: only the A100 cluster has it)."""
    from perfmodel.step.collectives import collective_frame, fit_links, predict_collective_time

    f = collective_frame()
    gen = f["system"].astype(str).str.split("_").str[0]
    out = []
    for name, fit_on, predict in DIRECTIONS:
        params = fit_links(f[gen == fit_on])
        te = f[(gen == predict) & f["link"].isin(list(params))].copy()
        te["predicted_s"] = predict_collective_time(te, params)
        # the baseline: the spec sheet alone (the wire bytes at the link's peak bandwidth, no latency)
        te["roofline_s"] = predict_collective_time(te, {k: {"efficiency": 1.0, "latency_s": 0.0} for k in params})
        te["efficiency"] = te["link"].map({k: p["efficiency"] for k, p in params.items()})
        te["latency_s"] = te["link"].map({k: p["latency_s"] for k, p in params.items()})
        te["direction"] = name
        out.append(te)
    d = pd.concat(out, ignore_index=True)
    d["measured_s"] = d["time_s"]
    d["band"] = np.where(d["message_bytes"] >= LARGE_BYTES, "ge_1mib", "lt_1mib")
    d["abs_error_pct"] = 100 * (d["predicted_s"] - d["measured_s"]).abs() / d["measured_s"]
    cols = ["direction", "system", "gpu", "link", "collective", "n_gpus", "devices_per_node", "message_bytes", "band",
            "efficiency", "latency_s", "link_gb_per_s", "measured_s", "predicted_s", "roofline_s", "abs_error_pct"]
    return d[cols]


def summary(d: pd.DataFrame | None = None) -> pd.DataFrame:
    """Median and time-weighted absolute % error (``Σ|p − t| / Σt``) per ``direction``, ``link``, ``collective`` and
    ``band`` (``all``, ``lt_1mib``, ``ge_1mib``), with ``n_rows``, and the time-weighted error of the spec-sheet
    baseline on the same rows (``roofline_time_weighted_ape_pct``)."""
    d = data() if d is None else d
    rows = []
    for (direction, link, coll), g in d.groupby(["direction", "link", "collective"], sort=True, observed=True):
        for band, b in (("all", g), *((k, g[g["band"] == k]) for k in ("lt_1mib", "ge_1mib"))):
            if len(b) == 0:
                continue
            rows.append(dict(direction=direction, link=link, collective=str(coll), band=band, n_rows=len(b),
                             median_ape_pct=float(b["abs_error_pct"].median()),
                             time_weighted_ape_pct=float(100 * (b["predicted_s"] - b["measured_s"]).abs().sum() / b["measured_s"].sum()),
                             roofline_time_weighted_ape_pct=float(100 * (b["roofline_s"] - b["measured_s"]).abs().sum()
                                                                  / b["measured_s"].sum())))
    return pd.DataFrame(rows)


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the held-out median and time-weighted absolute % error of :func:`summary`
    (``<direction>_<link>_<collective>_<band>_{median,time_weighted}_ape_pct``), then the efficiency and latency
    fitted on each generation (``fit_<generation>_<link>_{efficiency,latency_us}``)."""
    d = data()
    rows = []
    for r in summary(d).itertuples():
        what = (f"{r.n_rows} {r.collective} rows of the {r.direction.split('_')[-1].upper()} systems over {r.link}"
                f"{'' if r.band == 'all' else ' with messages ' + ('< 1 MiB' if r.band == 'lt_1mib' else '>= 1 MiB')}")
        for stat, v in (("median", r.median_ape_pct), ("time_weighted", r.time_weighted_ape_pct)):
            rows.append(dict(quantity=f"{r.direction}_{r.link}_{r.collective}_{r.band}_{stat}_ape_pct", unit="pct", value=v,
                             protocol=f"{stat.replace('_', '-')} absolute % error on {what}, predicted from the spec-sheet bandwidth "
                                      f"with e and α fitted on the {r.direction.split('_')[0].upper()} systems only "
                                      "(perfmodel.step.collectives)"))
        rows.append(dict(quantity=f"{r.direction}_{r.link}_{r.collective}_{r.band}_roofline_time_weighted_ape_pct", unit="pct",
                         value=r.roofline_time_weighted_ape_pct,
                         protocol=f"the baseline on the same {what}: time-weighted absolute % error of the wire bytes at the "
                                  "link's spec-sheet bandwidth, no latency (efficiency 1)"))
    for name, fit_on, _ in DIRECTIONS:
        for link, g in d[d["direction"] == name].groupby("link", sort=True):
            rows.append(dict(quantity=f"fit_{fit_on}_{link}_efficiency", unit="ratio", value=float(g["efficiency"].iloc[0]),
                             protocol=f"NCCL efficiency of {link} fitted by relative least squares on the {fit_on.upper()} systems"))
            rows.append(dict(quantity=f"fit_{fit_on}_{link}_latency_us", unit="us", value=float(1e6 * g["latency_s"].iloc[0]),
                             protocol=f"latency per collective step of {link} fitted by relative least squares on the {fit_on.upper()} systems"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """Measured (points) and held-out predicted (lines) time against message size, log-log, one panel per link, for the
    A100 → H100 direction (``data`` defaults to :func:`data`; ``ax``: one Axes per link)."""
    import matplotlib.pyplot as plt

    d = globals()["data"]() if data is None else data
    d = d[d["direction"] == "a100_to_h100"]
    links = sorted(d["link"].unique())
    if ax is None:
        fig, ax = plt.subplots(1, len(links), figsize=(4 * len(links), 3.4), squeeze=False)
        ax = ax[0]
    else:
        ax = np.atleast_1d(ax)
        fig = ax[0].figure
    for a, link in zip(ax, links):
        for (system, coll, n, dpn), g in d[d["link"] == link].groupby(["system", "collective", "n_gpus", "devices_per_node"],
                                                                      sort=True, observed=True):
            g = g.sort_values("message_bytes")
            pts = a.loglog(g["message_bytes"], 1e6 * g["measured_s"], ".", ms=2, alpha=0.4)[0]
            a.loglog(g["message_bytes"], 1e6 * g["predicted_s"], "-", color=pts.get_color(),
                     label=f"{system} {coll} n={n} ({dpn}/node)")
        a.set(title=f"{link} (fitted on A100)", xlabel="message, bytes", ylabel="time, µs")
        a.legend(fontsize=6, loc="upper left", frameon=False)
    fig.tight_layout()
    return fig

"""ICAC'19 Tables I, III, IV, V and the cluster heatmaps of Figs. 1 and 4, computed from the run data with perfmodel's
cost model (:func:`perfmodel.planning.icac_run_costs`).

Conventions: tuples are (mean, sample std with ddof = 1); time in hours, cost in USD, accuracy in %
(the data store fractions). Table I and the heatmap annotations charge the parameter server at the **transient**
price (0.041 $/h) — Table III, IV and V at the on-demand price (0.143 $/h), which is what the recorded costs use.
Costs are recomputed with the cost model (a revoked worker billed by its uptime), which fixes the 2-K80 ``agg_data``
costs that charge revoked workers for the whole run. "4 K80 transient" etc. are the ``agg_data`` runs (failed
clusters excluded); r is the number of revoked workers of a cluster; for the r = 0 rows of 8-K80 clusters in Tables
IV and V the two clusters whose master was revoked after finishing are excluded as well.
"""
from __future__ import annotations

from perfmodel.plotting import subplots

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.planning.cost import icac_run_costs, price_per_second

__all__ = ["icac_table_i_data", "icac_table_iii_data", "icac_table_iv_data", "icac_table_v_data", "icac_heatmap_data", "icac_heatmap",
           "icac_heatmap_columns", "icac_heatmaps_2_8", "icac_table_numbers_data", "icac_fig1", "icac_fig4"]

_STATS = ["n_runs", "time_mean_h", "time_std_h", "cost_mean_usd", "cost_std_usd", "accuracy_mean_pct", "accuracy_std_pct"]


def _stats(runs: pd.DataFrame, cost: str = "cost_usd") -> dict:
    acc = runs["accuracy"] * 100
    return dict(n_runs=len(runs), time_mean_h=runs["duration_h"].mean(), time_std_h=runs["duration_h"].std(ddof=1),
                cost_mean_usd=runs[cost].mean(), cost_std_usd=runs[cost].std(ddof=1), accuracy_mean_pct=acc.mean(),
                accuracy_std_pct=acc.std(ddof=1))


def _k80(c: pd.DataFrame, config: str, *, agg: bool = True) -> pd.DataFrame:
    d = c[c["config"] == config]
    return d[d["in_agg_data"].fillna(False)] if agg else d


def _r0(d: pd.DataFrame) -> pd.DataFrame:
    return d[(d["n_revoked_workers"] == 0) & ~d["master_revoked"]]


def icac_table_i_data() -> pd.DataFrame:
    """Table I: 4 K80 transient vs 1 and 4 K80 on-demand, and the 4-K80 transient runs by revocations r = 0, 1, 2.

    Costs with the transient PS price (as the paper's Table I). Columns: ``row`` and :data:`_STATS`.
    """
    c = icac_run_costs(ps_transient=True)
    four = _k80(c, "4-spot")
    rows = {"4 K80 transient": four, "1 K80 on-demand": _k80(c, "k80-demand", agg=False), "4 K80 on-demand": _k80(c, "4-demand")}
    rows.update({f"r={r}": four[four["n_revoked_workers"] == r] for r in (0, 1, 2)})
    return pd.DataFrame([dict(row=k, **_stats(v)) for k, v in rows.items()])


def _revocations(config: str) -> tuple[int, int]:
    v = ds.load_icac_vms()
    v = v[v["config"] == config]
    return int(v["revoked"].sum()), len(v)


def icac_table_iii_data() -> pd.DataFrame:
    """Table III: scaling up (1 P100, 1 V100) vs scaling out (2, 4, 8 K80) under ICAC'19's $2.83 budget.

    Costs with the on-demand PS price; ``revoked_servers`` / ``servers`` count the VMs of the configuration's
    ``vm_data.csv`` revoked ('Revoked' workers and revoked masters; the K80 row pools the 2-, 4- and 8-K80 clusters).
    """
    c = icac_run_costs()
    rows = [dict(row=f"{n} K80", **_stats(_k80(c, f"{n}-spot"))) for n in (2, 4, 8)]
    k = [_revocations(f"{n}-spot") for n in (2, 4, 8)]
    for r in rows:
        r["revoked_servers"], r["servers"] = sum(a for a, _ in k), sum(b for _, b in k)
    for cfg, label in (("p100", "1 P100"), ("v100", "1 V100")):
        d = c[(c["experiment"] == "p100_v100_spot") & (c["config"] == cfg)]
        rev, n = _revocations(cfg)
        rows.append(dict(row=label, **_stats(d), revoked_servers=rev, servers=n))
    out = pd.DataFrame(rows)
    out["revoked_pct"] = out["revoked_servers"] / out["servers"] * 100
    return out


def _rounded(row: dict) -> dict:
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}


def icac_table_iv_data() -> pd.DataFrame:
    """Table IV: revocation overhead vs cluster size (2, 4, 8 K80 transient).

    Per cluster size and revocation count r: time, cost (on-demand PS) and accuracy means, and the overhead of r ≥ 1
    over r = 0 computed like the paper from the values rounded to 2 decimals: ``time_overhead_pct`` and
    ``cost_overhead_pct`` = (mean_r − mean_0) / mean_0 × 100, ``accuracy_diff_pp`` = mean_r − mean_0 (points; the paper
    prints its magnitude, ``accuracy_overhead_pp``, and shades the increases). ``cost_authors_mean_usd`` and
    ``cost_authors_overhead_pct``: the same with a revoked worker billed by its whole VM uptime, as the authors' cost code
    (``process_cost``) and the paper's 8-K80 rows do — two 8-K80 workers were revoked after training had ended.
    """
    c = icac_run_costs()
    rows = []
    for n in (2, 4, 8):
        d = _with_authors_cost(_k80(c, f"{n}-spot"), f"{n}-spot")
        groups = {0: _r0(d)} | {r: g for r, g in d[d["n_revoked_workers"] > 0].groupby("n_revoked_workers")}
        base = _rounded(_stats(groups[0]))
        base_a = round(groups[0]["cost_authors_usd"].mean(), 2)
        for r, g in sorted(groups.items()):
            s = _rounded(_stats(g))
            ca = round(g["cost_authors_usd"].mean(), 2)
            rows.append(dict(cluster=f"{n} K80", n_workers=n, r=int(r), **s, cost_authors_mean_usd=ca,
                             time_overhead_pct=(s["time_mean_h"] - base["time_mean_h"]) / base["time_mean_h"] * 100,
                             cost_overhead_pct=(s["cost_mean_usd"] - base["cost_mean_usd"]) / base["cost_mean_usd"] * 100,
                             cost_authors_overhead_pct=(ca - base_a) / base_a * 100,
                             accuracy_diff_pp=s["accuracy_mean_pct"] - base["accuracy_mean_pct"],
                             accuracy_overhead_pp=abs(s["accuracy_mean_pct"] - base["accuracy_mean_pct"])))
    return pd.DataFrame(rows)


def icac_table_v_data() -> pd.DataFrame:
    """Table V: transient clusters without revocation (r = 0) vs on-demand clusters of 2, 4, 8 K80 (on-demand PS)."""
    c = icac_run_costs()
    rows = []
    for n in (2, 4, 8):
        rows.append(dict(cluster=f"{n} K80", kind="transient r=0", **_stats(_r0(_k80(c, f"{n}-spot")))))
        rows.append(dict(cluster=f"{n} K80", kind="on-demand", **_stats(_k80(c, f"{n}-demand"))))
    out = pd.DataFrame(rows)
    out["over_budget_pct"] = (out["cost_mean_usd"] / _budget_usd() - 1) * 100  # the budget: 1 K80 on-demand (Table I)
    return out


def _budget_usd() -> float:
    """ICAC'19's budget: the cost of training on one K80 on-demand server, as Table I prints it ($2.83)."""
    ref = ds.load_paper_numbers("icac_tables").set_index("quantity")
    return float(ref.loc["t1_1_k80_on_demand_cost_usd", "paper_value"])


def _vm_order(config: str) -> pd.DataFrame:
    """The VMs of a K80 transient configuration in the order of its ``vm_data.csv`` (the order the authors' plots keep)."""
    v = ds.load_icac_vms()
    return v[v["config"] == config].reset_index(drop=True)


def _with_authors_cost(c: pd.DataFrame, config: str) -> pd.DataFrame:
    """Add ``cost_authors_usd``: the cost as the authors' cost code computes it (``process_cost`` of
    ``data/training/code/data_processor.py``), which bills a revoked worker by its whole VM uptime, also the part
    after training ended, where the cost model (``cost_usd``) stops at the end of training."""
    v = _vm_order(config)
    late = v[(v["role"] == "worker") & (v["status"] == "revoked")].merge(c[["zone", "run", "duration_s", "transient"]], on=["zone", "run"])
    late = late[late["uptime_s"] > late["duration_s"]]
    rate = price_per_second("K80", transient=True)
    extra = ((late["uptime_s"] - late["duration_s"]) * rate).groupby([late["zone"], late["run"]]).sum()
    key = pd.MultiIndex.from_frame(c[["zone", "run"]])
    out = c.copy()
    out["cost_authors_usd"] = out["cost_usd"].to_numpy() + extra.reindex(key).fillna(0.0).to_numpy()
    return out


def icac_heatmap_data(n_workers: int = 4) -> pd.DataFrame:
    """Figs. 1 (4 K80) and 4 (2 and 8 K80): per cluster and server, the server's lifetime normalized to the cluster's.

    The authors' procedure (``data/training/code/heatmap.py``): a server marked revoked gets its VM uptime divided by
    the master's VM uptime — not capped, so a revocation after the end of training stays visible — every other server
    1; a cluster's servers (the master is worker W1..Wn too) sorted by that value, the lightest on top. Clusters are
    numbered as the paper: the failed cluster (its master revoked before training finished) first, then by revoked
    workers ``r`` (descending), ties in the order of ``vm_data.csv``; the r = 0 clusters share one column in the figure.

    One row per (cluster, server): ``cluster`` (C1 …), ``cluster_index``, ``zone``, ``run``, ``worker_rank`` (0 = W1),
    ``lifetime_fraction``, ``revoked``, ``r``, ``failed``, ``group`` (``"failed"``, ``"r=2"``, ``"r=1"``, ``"r=0"``),
    ``n_revoked`` (revoked servers including a revoked master), ``accuracy_pct``, ``time_h``, ``cost_usd`` (transient PS,
    as the annotations; a revoked worker billed by its whole uptime, as the authors' cost code).
    """
    if n_workers not in (2, 4, 8):
        raise ValueError(f"n_workers must be 2, 4 or 8 (the ICAC'19 K80 transient clusters); got {n_workers!r}.")
    cfg = f"{n_workers}-spot"
    c = icac_run_costs(ps_transient=True)
    c = _with_authors_cost(c[c["config"] == cfg], cfg)
    v = _vm_order(cfg)
    rows = []
    for order, ((zone, run), g) in enumerate(v.groupby(["zone", "run"], sort=False)):
        r = c[(c["zone"] == zone) & (c["run"] == run)].iloc[0]
        master = float(g.loc[g["role"] == "master", "uptime_s"].iloc[0])
        rev = g["status"].eq("revoked").to_numpy()
        frac = np.where(rev, g["uptime_s"].to_numpy(float) / master, 1.0)
        failed = bool(r["failed"]) if pd.notna(r["failed"]) else False
        for rank, i in enumerate(np.argsort(frac, kind="stable")):
            rows.append(dict(zone=zone, run=int(run), order=order, worker_rank=rank, lifetime_fraction=float(frac[i]), revoked=bool(g["revoked"].iloc[i]),
                             n_revoked=int(g["revoked"].sum()), r=int(r["n_revoked_workers"]), failed=failed, accuracy_pct=float(r["accuracy"]) * 100,
                             time_h=float(r["duration_h"]), cost_usd=float(r["cost_authors_usd"])))
    d = pd.DataFrame(rows)
    d["group"] = np.where(d["failed"], "failed", "r=" + d["r"].astype(str))
    keys = d.drop_duplicates(["zone", "run"])[["zone", "run", "order", "failed", "r"]]
    keys = keys.sort_values(["failed", "r", "order"], ascending=[False, False, True], kind="stable").reset_index(drop=True)
    keys["cluster_index"] = np.arange(1, len(keys) + 1)
    keys["cluster"] = "C" + keys["cluster_index"].astype(str)
    d = d.merge(keys[["zone", "run", "cluster", "cluster_index"]], on=["zone", "run"]).drop(columns="order")
    return d.sort_values(["cluster_index", "worker_rank"]).reset_index(drop=True)


def icac_heatmap_columns(data: pd.DataFrame) -> pd.DataFrame:
    """The columns of the paper's heatmap: one per failed or revoked cluster, then one for all r = 0 clusters.

    Per column: ``label`` (``C2`` or ``C12-C32`` and the count on a second line), ``group``, the lifetimes W1..Wn
    (``W1`` …; the r = 0 column shows their mean), and the annotations ``accuracy_pct``, ``time_h``, ``cost_usd`` (the
    r = 0 column: mean, with ``*_std`` the sample std, ddof = 1, over the r = 0 clusters in which no server was revoked —
    the 8-K80 figure's annotation leaves out the two clusters whose master was revoked after training, as Table V);
    a failed cluster has no annotation (NaN), as the paper's "-".
    """
    n = int(data["worker_rank"].max()) + 1
    grid = data.pivot(index="cluster_index", columns="worker_rank", values="lifetime_fraction")
    grid.columns = [f"W{i + 1}" for i in grid.columns]
    per = data.drop_duplicates("cluster_index").set_index("cluster_index")
    cols = []
    for ci, row in per.iterrows():
        if row["group"] == "r=0":
            continue
        ann = {k: (np.nan if row["failed"] else row[k]) for k in ("accuracy_pct", "time_h", "cost_usd")}
        cols.append(dict(label=row["cluster"], group=row["group"], **grid.loc[ci].to_dict(), **ann))
    zero = per[per["group"] == "r=0"]
    if len(zero):
        lab = f"C{zero.index.min()}-C{zero.index.max()}\n({len(zero)})"
        clean = zero[zero["n_revoked"] == 0]  # as the paper's annotation (and Table V): no server revoked, master included
        ann = {k: clean[k].mean() for k in ("accuracy_pct", "time_h", "cost_usd")} | {f"{k}_std": clean[k].std(ddof=1) for k in ("accuracy_pct", "time_h", "cost_usd")}
        cols.append(dict(label=lab, group="r=0", **grid.loc[zero.index].mean().to_dict(), **ann))
    out = pd.DataFrame(cols)
    return out[["label", "group", *[f"W{i + 1}" for i in range(n)], *[c for c in out.columns if c not in ("label", "group") and not c.startswith("W")]]]


_GROUP_TITLES = {"failed": "Failed", "r=2": "2 Revocations", "r=1": "1 Revocation", "r=0": "0 Revocation"}


def _draw_heatmap(ax, data: pd.DataFrame, *, colorbar: bool = True):
    import matplotlib.pyplot as plt

    cols = icac_heatmap_columns(data)
    wcols = [c for c in cols.columns if c.startswith("W")]
    grid = cols[wcols].to_numpy(float).T
    im = ax.imshow(grid, aspect="equal", cmap="gray_r", vmin=0, vmax=1)
    ax.set_xticks(range(len(cols)), cols["label"], fontsize=6)
    ax.set_yticks(range(len(wcols)), wcols, fontsize=6)
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False, length=0)
    ax.set_xticks(np.arange(len(cols) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(wcols) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="w", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    # the revocation groups above the column labels
    for g, idx in cols.groupby("group", sort=False).groups.items():
        x = (min(idx) + max(idx)) / 2
        ax.annotate(_GROUP_TITLES[g], (x, 1), xycoords=("data", "axes fraction"), xytext=(0, 20), textcoords="offset points",
                    ha="center", va="bottom", fontsize=6)
    # the accuracy / time / cost rows below the heatmap
    fmt = {"accuracy_pct": "{:.1f}", "time_h": "{:.2f}", "cost_usd": "{:.2f}"}
    for k, (key, name) in enumerate((("accuracy_pct", "Accuracy (%)"), ("time_h", "Time (hour)"), ("cost_usd", "Cost ($)"))):
        ax.annotate(name, (-0.5, 0), xycoords=("data", "axes fraction"), xytext=(-4, -9 - 10 * k), textcoords="offset points",
                    ha="right", va="top", fontsize=6)
        for j, row in cols.iterrows():
            val = row[key]
            text = "-" if pd.isna(val) else fmt[key].format(val)
            if row["group"] == "r=0" and not pd.isna(val):
                text = f"({text}, {fmt[key].format(row[key + '_std'])})"
            ax.annotate(text, (j, 0), xycoords=("data", "axes fraction"), xytext=(0, -9 - 10 * k), textcoords="offset points",
                        ha="center", va="top", fontsize=5 if row["group"] == "r=0" else 6)
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax, fraction=0.04, pad=0.03, shrink=min(1.0, 0.25 + 0.1 * len(wcols)))
        cb.set_label("Normalized time", fontsize=6)
        cb.ax.tick_params(labelsize=6)
    return im


def icac_heatmap(n_workers: int = 4, *, data: pd.DataFrame | None = None, ax=None):
    """The paper's heatmap: W1..Wn rows, one column per failed or revoked cluster and one for the r = 0 clusters,
    gray = lifetime normalized to the master's (black: lived through training), the revocation groups above and the
    accuracy / time / cost rows below."""
    d = icac_heatmap_data(n_workers) if data is None else data
    cols = d["cluster"].nunique() - d.loc[d["group"] == "r=0", "cluster"].nunique() + 1
    fig, ax, own = subplots(ax, figsize=(1.6 + 0.42 * cols, 1.5 + 0.32 * n_workers))
    _draw_heatmap(ax, d)
    if own:
        fig.subplots_adjust(left=0.7 / fig.get_figwidth(), right=1 - 0.2 / fig.get_figwidth(), top=1 - 0.5 / fig.get_figheight(),
                            bottom=0.5 / fig.get_figheight())
    return fig


def icac_heatmaps_2_8(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 4 as the paper prints it: the 2-K80 panel left, the 8-K80 panel right (``data``: the rows of
    :func:`icac_heatmap_data` for 2 and 8 workers with an ``n_workers`` column)."""
    d = pd.concat([icac_heatmap_data(n).assign(n_workers=n) for n in (2, 8)], ignore_index=True) if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=(7.0, 3.4), gridspec_kw={"wspace": 0.35, "width_ratios": [1.1, 1]})
    for a, n in zip(axes, (2, 8)):
        _draw_heatmap(a, d[d["n_workers"] == n])
        a.set_title(f"{n} K80 workers", fontsize=7, pad=34)
    if own:
        fig.subplots_adjust(left=0.1, right=0.94, top=0.84, bottom=0.16)
    return fig


def icac_fig1():
    """ICAC'19 Fig. 1 (``cluster_4_spots_heatmap.pdf``): the 32 clusters of 4 transient K80 workers."""
    return icac_heatmap(4)


def icac_fig4():
    """ICAC'19 Fig. 4 (``cluster_2_8_spots_heatmap.pdf``): the clusters of 2 and of 8 transient K80 workers, two panels."""
    return icac_heatmaps_2_8()


def _table_quantities(df: pd.DataFrame, key: str, slug) -> dict:
    out = {}
    for r in df.to_dict("records"):
        p = slug(r[key]) if not isinstance(key, tuple) else slug(*(r[k] for k in key))
        for q, col in (("time_h", "time_mean_h"), ("time_std_h", "time_std_h"), ("cost_usd", "cost_mean_usd"), ("cost_std_usd", "cost_std_usd"),
                       ("accuracy_pct", "accuracy_mean_pct"), ("accuracy_std_pct", "accuracy_std_pct")):
            out[f"{p}_{q}"] = float(r[col])
    return out


def _slug(s: str) -> str:
    return s.lower().replace(" ", "_").replace("=", "").replace("-", "_")


def icac_table_numbers_data() -> pd.DataFrame:
    """Every number of Tables I, II (savings potential), III, IV, V and of the Fig. 1 / Fig. 4 annotations the catalog quotes, next to its
    value recomputed from the data (``datasets/reference/paper_numbers/icac_tables.csv``)."""
    rep: dict[str, float] = {}
    t1 = icac_table_i_data()
    rep.update({f"t1_{k}": v for k, v in _table_quantities(t1, "row", _slug).items()})
    by = t1.set_index("row")
    rep["t1_speedup_x"] = by.loc["1 K80 on-demand", "time_mean_h"] / by.loc["4 K80 transient", "time_mean_h"]
    rep["t1_saving_pct"] = (by.loc["1 K80 on-demand", "cost_mean_usd"] - by.loc["4 K80 transient", "cost_mean_usd"]) / by.loc["1 K80 on-demand", "cost_mean_usd"] * 100
    rep["t1_r0_runs"], rep["t1_r1_runs"], rep["t1_r2_runs"] = (float(by.loc[f"r={r}", "n_runs"]) for r in (0, 1, 2))
    t3 = icac_table_iii_data()
    rep.update({f"t3_{k}": v for k, v in _table_quantities(t3, "row", _slug).items()})
    b3 = t3.set_index("row")
    rep["t3_k80_revoked_servers"], rep["t3_k80_servers"] = float(b3.loc["2 K80", "revoked_servers"]), float(b3.loc["2 K80", "servers"])
    rep["t3_k80_revoked_pct"] = float(b3.loc["2 K80", "revoked_pct"])
    for g in ("P100", "V100"):
        rep[f"t3_{g.lower()}_revoked_servers"] = float(b3.loc[f"1 {g}", "revoked_servers"])
        rep[f"t3_{g.lower()}_revoked_pct"] = float(b3.loc[f"1 {g}", "revoked_pct"])
    rep["t1_k80_8x_speedup_x"] = by.loc["1 K80 on-demand", "time_mean_h"] / b3.loc["8 K80", "time_mean_h"]
    t4 = icac_table_iv_data()
    for r in t4.to_dict("records"):
        p = f"t4_{r['n_workers']}k80_r{r['r']}"
        rep.update({f"{p}_time_h": r["time_mean_h"], f"{p}_cost_usd": r["cost_mean_usd"], f"{p}_accuracy_pct": r["accuracy_mean_pct"]})
        if r["r"] > 0:
            rep.update({f"{p}_time_overhead_pct": r["time_overhead_pct"], f"{p}_cost_overhead_pct": r["cost_overhead_pct"],
                        f"{p}_accuracy_overhead_pp": r["accuracy_overhead_pp"], f"{p}_runs": float(r["n_runs"])})
        if r["n_workers"] == 8 and r["r"] > 0:
            rep.update({f"{p}_cost_usd_uptime_billed": r["cost_authors_mean_usd"], f"{p}_cost_overhead_pct_uptime_billed": r["cost_authors_overhead_pct"]})
    t5 = icac_table_v_data()
    rep.update({f"t5_{k}": v for k, v in _table_quantities(t5, ("cluster", "kind"), lambda a, b: _slug(f"{a} {b}")).items()})
    rep["t5_max_over_budget_pct"] = float(t5["over_budget_pct"].max())
    prices = ds.load_prices()
    for r in prices[prices["server"] == "worker"].itertuples(index=False):
        rep[f"t2_{str(r.gpu).lower()}_savings_potential_pct"] = r.transient_usd_per_h / r.on_demand_usd_per_h * 100
    for n in (2, 4, 8):
        h = icac_heatmap_data(n)
        per = h.drop_duplicates("cluster")
        rep[f"fig_{n}k80_clusters"] = float(len(per))
        rep[f"fig_{n}k80_clusters_revoked_or_failed"] = float((per["group"] != "r=0").sum())
        rep[f"fig_{n}k80_clusters_r0"] = float((per["group"] == "r=0").sum())
        for col in icac_heatmap_columns(h).to_dict("records"):
            if col["group"] == "r=0":
                for q in ("accuracy_pct", "time_h", "cost_usd"):
                    rep[f"fig_{n}k80_r0_{q}"], rep[f"fig_{n}k80_r0_{q.rsplit('_', 1)[0]}_std_{q.rsplit('_', 1)[1]}"] = col[q], col[f"{q}_std"]
            elif col["group"] != "failed":
                c = col["label"].lower()
                rep[f"fig_{n}k80_{c}_accuracy_pct"], rep[f"fig_{n}k80_{c}_time_h"], rep[f"fig_{n}k80_{c}_cost_usd"] = col["accuracy_pct"], col["time_h"], col["cost_usd"]
    rep["fig_4k80_revoked_servers"] = float(icac_heatmap_data(4).drop_duplicates("cluster")["n_revoked"].sum())
    rep["fig_4k80_clusters_with_revocation"] = float((icac_heatmap_data(4).drop_duplicates("cluster")["n_revoked"] > 0).sum())
    return compare_with_paper("icac_tables", rep)

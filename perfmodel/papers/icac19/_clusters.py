"""ICAC'19 Figs. 6, 7, 8: parameter servers, mixed GPUs and cross-region clusters, computed from the run data
with perfmodel's cost model (:mod:`perfmodel.planning.cost`).

* Fig. 6 (``icac_fig6``): runtime and cost (%) vs cluster size 2–8 for K80 and V100 workers with 1 or 2 PS,
  "normalized to the single K80 training" (the caption): the mean of the 10 single-K80 on-demand runs, 3.91 h and
  $2.83 (Table I). The points drawn in the paper's PDF imply a baseline of 3.854 h and $2.786 (= 3.854 h x 0.723 $/h,
  the K80 on-demand price without a PS), 1.5 % below that mean and below each of the 10 runs (3.874–3.975 h); the
  reproduced percentages are therefore 1.5 % lower than the drawn ones. The K80 1-PS runs (``1ps_k80``, one run per
  size) have no recorded cost: it is computed with the cost model.
* Fig. 7 (``icac_fig7``): clusters of 4 mixed workers (N_K80, N_P100, N_V100) = (2,1,1), (1,2,1), (1,1,2) — time,
  cost and accuracy normalized to the homogeneous 4-worker clusters (4 K80 transient with no revocation, 4 P100,
  4 V100). The paper's headlines: (1,1,2) up to 50 % faster than 4 K80 for 17 % more cost; (2,1,1) 28 % slower and
  26 % cheaper than 4 V100.
* Fig. 8 (``icac_fig8``): 4-worker clusters spread over regions (N_east, N_central, N_west) = (3,1), (2,2), (2,1,1),
  K80 and P100 — time and accuracy normalized to the single-region cluster (4 K80 r = 0: 0.97581 h, 91.058 %;
  4 P100: 0.4704 h, 91.35 %); up to 48 % slower.
"""
from __future__ import annotations

from perfmodel.plotting import figure_size, legend_outside, paper_figure, plot_bars, plot_lines, subplots

import pandas as pd

from perfmodel.papers._numbers import compare_with_paper
from perfmodel.planning.cost import icac_run_costs

__all__ = ["icac_fig6_data", "icac_fig6", "icac_fig7_data", "icac_fig7", "icac_fig8_data", "icac_fig8", "icac_cluster_numbers_data"]

_MIXED = {"1v1p2k": "(2,1,1)", "1v2p1k": "(1,2,1)", "2v1p1k": "(1,1,2)"}
_REGIONS = {"3e1c": "(3,1)", "2e2c": "(2,2)", "2e1c1w": "(2,1,1)"}
_BASE_SLUG = {"4 K80 (r=0)": "4k80", "4 P100": "4p100", "4 V100": "4v100"}


def _four_k80_r0(c: pd.DataFrame) -> pd.DataFrame:
    f = c[(c["config"] == "4-spot") & c["in_agg_data"].fillna(False)]
    return f[f["n_revoked_workers"] == 0]


def _single_k80() -> pd.DataFrame:
    """The single-K80 on-demand trainings (``k80_on_demand/k80-demand``, 10 runs; Table I's "1 K80 on-demand")."""
    c = icac_run_costs()
    return c[c["config"] == "k80-demand"]


def icac_fig6_data() -> pd.DataFrame:
    """Per (GPU, #PS, #workers): mean ``duration_h``, ``cost_usd`` (cost model), and both normalized as the paper's caption
    states — "normalized to the single K80 training" — to the mean time and recorded cost of the 10 single-K80 on-demand
    runs (``runtime_pct``, ``cost_pct``; baseline in ``baseline_duration_h``, ``baseline_cost_usd``)."""
    c = icac_run_costs()
    e = c[c["experiment"] == "experiment_1ps_vs_2ps"].copy()
    e["gpu"] = e["n_v100"].gt(0).map({True: "V100", False: "K80"})
    g = e.groupby(["gpu", "n_ps", "n_workers"], as_index=False).agg(duration_h=("duration_h", "mean"), cost_usd=("cost_usd", "mean"), n_runs=("run", "size"))
    one = _single_k80()
    g["baseline_duration_h"] = one["duration_h"].mean()
    g["baseline_cost_usd"] = one["cost_usd_file"].mean()
    g["runtime_pct"] = g["duration_h"] / g["baseline_duration_h"] * 100
    g["cost_pct"] = g["cost_usd"] / g["baseline_cost_usd"] * 100
    return g


def icac_fig7_data() -> pd.DataFrame:
    """Per mixed cluster and homogeneous baseline: time/cost/accuracy means and ratios (%) to the baseline.

    ``cost_pct`` uses the recorded costs (as the paper); ``cost_model_pct`` the cost model (one 2v1p1k run's recorded
    cost differs from the model by $0.09, which moves that ratio by < 1 point)."""
    c = icac_run_costs()
    mixed = c[c["experiment"] == "experiment_mixed_gpu"].groupby("config").agg(duration_h=("duration_h", "mean"), cost_usd=("cost_usd_file", "mean"),
                                                                                 cost_model_usd=("cost_usd", "mean"), accuracy=("accuracy", "mean"))
    bases = {"4 K80 (r=0)": _four_k80_r0(c), "4 P100": c[c["config"] == "4p100"], "4 V100": c[c["config"] == "4v100"]}
    rows = []
    for cfg, m in mixed.iterrows():
        for bname, b in bases.items():
            rows.append(dict(cluster=_MIXED[cfg], config=cfg, baseline=bname, duration_h=m["duration_h"], cost_usd=m["cost_usd"], accuracy=m["accuracy"],
                             time_pct=m["duration_h"] / b["duration_h"].mean() * 100, cost_pct=m["cost_usd"] / b["cost_usd_file"].mean() * 100,
                             cost_model_pct=m["cost_model_usd"] / b["cost_usd"].mean() * 100,
                             accuracy_pct=m["accuracy"] / b["accuracy"].mean() * 100))
    return pd.DataFrame(rows)


def icac_fig8_data() -> pd.DataFrame:
    """Per cross-region cluster: mean time and accuracy, and their ratio (%) to the single-region 4-worker cluster."""
    c = icac_run_costs()
    base = {"K80": _four_k80_r0(c), "P100": c[c["config"] == "4p100"]}
    cr = c[c["experiment"] == "experiment_cross_region"].copy()
    cr["gpu"] = cr["n_p100"].gt(0).map({True: "P100", False: "K80"})
    g = cr.groupby(["gpu", "config"], as_index=False).agg(duration_h=("duration_h", "mean"), accuracy=("accuracy", "mean"), n_runs=("run", "size"))
    g["cluster"] = g["config"].str.replace("-p100", "", regex=False).map(_REGIONS)
    g["baseline_duration_h"] = g["gpu"].map({k: v["duration_h"].mean() for k, v in base.items()})
    g["baseline_accuracy"] = g["gpu"].map({k: v["accuracy"].mean() for k, v in base.items()})
    g["time_pct"] = g["duration_h"] / g["baseline_duration_h"] * 100
    g["accuracy_pct"] = g["accuracy"] / g["baseline_accuracy"] * 100
    return g


def icac_cluster_numbers_data() -> pd.DataFrame:
    """The numbers quoted for ICAC'19 Figs. 6–8 next to their values recomputed from the runs: the
    K80 1-PS durations of Fig. 6, the mixed-GPU headlines of Fig. 7 (recorded costs, as the paper) and the
    cross-region baselines and largest slowdown of Fig. 8."""
    f6 = icac_fig6_data()
    k80 = f6[(f6["gpu"] == "K80") & (f6["n_ps"] == 1)]
    rep = {f"k80_1ps_w{int(n)}_duration_h": float(h) for n, h in zip(k80["n_workers"], k80["duration_h"])}
    f7 = icac_fig7_data().set_index(["cluster", "baseline"])
    rep["speedup_112_vs_4k80_pct"] = float(100 - f7.loc[("(1,1,2)", "4 K80 (r=0)"), "time_pct"])
    rep["extra_cost_112_vs_4k80_pct"] = float(f7.loc[("(1,1,2)", "4 K80 (r=0)"), "cost_pct"] - 100)
    rep["slowdown_211_vs_4v100_pct"] = float(f7.loc[("(2,1,1)", "4 V100"), "time_pct"] - 100)
    rep["cost_reduction_211_vs_4v100_pct"] = float(100 - f7.loc[("(2,1,1)", "4 V100"), "cost_pct"])
    f8 = icac_fig8_data()
    base = f8.groupby("gpu")[["baseline_duration_h", "baseline_accuracy"]].first()
    for g in ("K80", "P100"):
        rep[f"{g.lower()}_baseline_duration_h"] = float(base.loc[g, "baseline_duration_h"])
        rep[f"{g.lower()}_baseline_accuracy_pct"] = float(base.loc[g, "baseline_accuracy"] * 100)
    rep["max_slowdown_pct"] = float(f8["time_pct"].max() - 100)
    for r in f6.to_dict("records"):
        p = f"fig6_{r['gpu'].lower()}_{int(r['n_ps'])}ps_w{int(r['n_workers'])}"
        rep[f"{p}_runtime_pct"], rep[f"{p}_cost_pct"] = r["runtime_pct"], r["cost_pct"]
    v = f6[f6["gpu"] == "V100"].pivot(index="n_workers", columns="n_ps", values="duration_h")
    rep["fig6_v100_2ps_max_speedup_x"] = float((v[1] / v[2]).max())
    for r in f7.reset_index().to_dict("records"):
        p = f"fig7_{r['config']}_vs_{_BASE_SLUG[r['baseline']]}"
        rep[f"{p}_time_ratio"], rep[f"{p}_cost_ratio"], rep[f"{p}_accuracy_ratio"] = r["time_pct"] / 100, r["cost_pct"] / 100, r["accuracy_pct"] / 100
    for r in f8.to_dict("records"):
        p = f"fig8_{r['gpu'].lower()}_{r['config'].replace('-p100', '')}"
        rep[f"{p}_time_ratio"], rep[f"{p}_accuracy_ratio"] = r["time_pct"] / 100, r["accuracy_pct"] / 100
    frames = [compare_with_paper("icac_clusters", rep, item=i) for i in ("icac_fig6", "icac_fig7", "icac_fig8")]
    return pd.concat([f[f["paper_value"].notna()] for f in frames], ignore_index=True)


def _bars(ax, data, x, y, hue):
    """Grouped bars of normalized values with the 100 % baseline line (Figs. 7, 8)."""
    plot_bars(data, x=x, y=y, hue=hue, ax=ax, legend=False)
    ax.axhline(100, color="grey", lw=0.6)
    return ax


@paper_figure
def icac_fig6(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 6: runtime and cost of 2–8-worker clusters normalized to the single-K80 training, 1 vs 2 PS."""
    d = icac_fig6_data() if data is None else data
    d = d.assign(config=d["gpu"].astype(str) + " + " + d["n_ps"].astype(str) + " PS").sort_values(["gpu", "n_ps", "n_workers"])
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.0))
    plot_lines(d, x="n_workers", y="runtime_pct", hue="config", ax=axes[0], legend=False, marker="o", ms=3)
    plot_lines(d, x="n_workers", y="cost_pct", hue="config", ax=axes[1], legend=False, marker="o", ms=3)
    axes[0].set(xlabel="Cluster size", ylabel="Normalized runtime (%)")
    axes[1].set(xlabel="Cluster size", ylabel="Normalized cost (%)")
    legend_outside(axes[1], where="right")
    if own:
        fig.tight_layout()
    return fig


@paper_figure
def icac_fig7(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 7: mixed-GPU clusters' time, cost and accuracy normalized to each baseline."""
    d = icac_fig7_data() if data is None else data
    fig, axes, own = subplots(ax, 1, 3, figsize=figure_size("text", 2.0))
    for ax, (col, label) in zip(axes, (("time_pct", "Normalized time (%)"), ("cost_pct", "Normalized cost (%)"), ("accuracy_pct", "Normalized accuracy (%)"))):
        _bars(ax, d, "cluster", col, "baseline")
        ax.set(ylabel=label, xlabel="(N_K80, N_P100, N_V100)")
    legend_outside(axes[2], where="right")
    if own:
        fig.tight_layout()
    return fig


@paper_figure
def icac_fig8(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 8: cross-region clusters' time and accuracy normalized to the baselines."""
    d = icac_fig8_data() if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.0, fraction=0.75))
    for ax, (col, label) in zip(axes, (("time_pct", "Normalized time (%)"), ("accuracy_pct", "Normalized accuracy (%)"))):
        _bars(ax, d, "cluster", col, "gpu")
        ax.set(ylabel=label, xlabel="(N_east, N_central, N_west)")
    legend_outside(axes[1], where="right")
    if own:
        fig.tight_layout()
    return fig

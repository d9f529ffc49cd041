"""What a revocation costs: CM-DARE's VM start-up, restart and chief-rejoining figures, revocations by hour, the
estimated-vs-actual training time under revocations, and ICAC'19 Figs. 3 and 5 (§2).

* ``startup_breakdown`` (EXACT-DATA): provisioning / staging / booting means per file, **seconds** (the source axis
  says ms; the measuring code divided by 1000).
* ``vm_startup_exp``, ``tf_restart``, ``restart_training_overhead``, ``chief_rejoining``, revocations by hour: the
  authors' inline arrays (``datasets/reference/transcribed``), with the raw chief-rejoining runs beside them.
* ``training_time_estimates``: the 11 (estimated, actual) training times of runs with a revocation. The authors' way
  of estimating is not in the notebook; perfmodel's estimator (:func:`perfmodel.planning.estimate_time_after_revocation`) predicts the
  time from the revocation to the end of training as a TensorFlow cold start (55.08 s, ``tf_restart``) plus the
  remaining steps at the CM-DARE speed of a 4-K80 ResNet-32 cluster — an inference: the actual times fall on a line
  of slope 1 / 18.3 steps/s against the remaining steps, the speed of that cluster (18.13 steps/s, §1.3).
* ICAC'19 Fig. 3 (``lifetime_new.pdf``): lifetime CDFs of preemptible PS (CPU), K80, P100, V100 servers (plot.py arrays);
  Fig. 5 (``adaptive_lr.pdf``): accuracy vs steps of a static 1-K80 cluster and a cluster growing by one K80 every 16K
  steps with a naive and an adaptive learning rate.
"""
from __future__ import annotations

from perfmodel.plotting import figure_size, legend_outside, paper_figure, plot_bars, plot_lines, plot_parity, subplots

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.diagnostics.metrics import mae, mape
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.planning.revocation import estimate_time_after_revocation

__all__ = [
    "startup_breakdown_data", "startup_breakdown", "vm_startup_exp_data", "vm_startup_exp", "tf_restart_data", "tf_restart",
    "restart_training_overhead_data", "restart_training_overhead", "chief_rejoining_data", "chief_rejoining", "revocations_by_hour_data",
    "revocations_by_hour", "estimate_time_after_revocation", "training_time_estimates_data", "training_time_estimates",
    "icac_fig3_data", "icac_fig3", "icac_fig5_data", "icac_fig5", "transient_numbers_data",
]

_PHASES = ["provisioning_s", "staging_s", "booting_s"]


def startup_breakdown_data() -> pd.DataFrame:
    """Mean and std (ddof = 0, as ``np.std``) of each start-up phase per file: ``source_name``, ``gpu``, ``transient``,
    ``region``, ``n``, ``<phase>_mean`` / ``<phase>_std`` (s) for provisioning, staging, booting, ``total_s``."""
    v = ds.load_vm_startup()
    g = v.groupby(["source_name", "gpu", "transient", "region"], observed=True)
    out = g.size().rename("n").to_frame()
    for ph in _PHASES:
        out[f"{ph[:-2]}_mean_s"] = g[ph].mean()
        out[f"{ph[:-2]}_std_s"] = g[ph].std(ddof=0)
    out["total_s"] = out[[f"{p[:-2]}_mean_s" for p in _PHASES]].sum(axis=1)
    return out.reset_index()


@paper_figure
def startup_breakdown(data: pd.DataFrame | None = None, *, ax=None):
    """Two panels (east, west): stacked bars provisioning / staging / booting for preemptible and on-demand K80/P100."""
    d = startup_breakdown_data() if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.2), sharey=True)
    for ax, region in zip(axes, ("us-east1", "us-west1")):
        sub = d[d["region"] == region].sort_values(["transient", "gpu"], ascending=[False, True])
        server = [f"{'Pre' if t else 'On-d'} {g}" for g, t in zip(sub["gpu"].astype(str), sub["transient"])]
        long = pd.concat([pd.DataFrame({"server": server, "phase": ph[:-2].capitalize(), "time_s": sub[f"{ph[:-2]}_mean_s"].to_numpy(),
                                        "std_s": sub[f"{ph[:-2]}_std_s"].to_numpy()}) for ph in _PHASES], ignore_index=True)
        plot_bars(long, x="server", y="time_s", hue="phase", yerr="std_s", stacked=True, ax=ax, legend=False, capsize=2)
        ax.set(title=region, xlabel="", ylabel="")
    axes[0].set_ylabel("VM start-up time (s)")
    legend_outside(axes[1], where="right")
    if own:
        fig.tight_layout()
    return fig


def vm_startup_exp_data() -> pd.DataFrame:
    """Time for a new server request (s): immediate vs delayed, K80/P100/V100 (S2020 cell 36, inline)."""
    return ds.load_transcribed("vm_request_time")[["gpu", "cross_region", "request_type", "time_mean_s", "time_std_s", "plotted_in_vm_startup_exp"]]


@paper_figure
def vm_startup_exp(data: pd.DataFrame | None = None, *, ax=None):
    """Time to obtain a new server, immediate vs delayed request, per GPU (grouped bars with std)."""
    d = vm_startup_exp_data() if data is None else data
    d = d[d["plotted_in_vm_startup_exp"]]
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.0))
    plot_bars(d, x="gpu", y="time_mean_s", hue="request_type", yerr="time_std_s", order=["K80", "P100", "V100"],
              labels=lambda k: str(k).capitalize(), width=0.7, ax=ax, capsize=2)
    ax.set(xlabel="Requested GPU server type", ylabel="Time (s)")
    if own:
        fig.tight_layout()
    return fig


def tf_restart_data() -> pd.DataFrame:
    """TensorFlow cold vs warm start (s): overall bars and the per-model version (redraws cells 16–17)."""
    return ds.load_transcribed("tf_restart")[["scope", "model", "start_type", "time_s", "error_bar_s"]]


@paper_figure
def tf_restart(data: pd.DataFrame | None = None, *, ax=None):
    """TensorFlow cold vs warm start, overall bars with error bars."""
    d = tf_restart_data() if data is None else data
    o = d[d["scope"] == "overall"].assign(label=lambda f: f["start_type"].map({"cold": "Cold start", "warm": "Warm start"}))
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.0, fraction=0.6))
    plot_bars(o, x="label", y="time_s", yerr="error_bar_s", ax=ax, capsize=3, color=["tab:red", "tab:green"])
    ax.set(xlabel="", ylabel="Time (s)")
    if own:
        fig.tight_layout()
    return fig


def restart_training_overhead_data() -> pd.DataFrame:
    """Extra training time (s) vs steps since the last checkpoint: mean(y_i) − mean(baseline), error bar np.std(y_i)
    (S2020 cell 14, inline arrays)."""
    r = ds.load_transcribed("restart_overhead")
    base = r.loc[r["group"] == "baseline", "training_time_s"].mean()
    e = r[r["group"] == "experiment"]
    g = e.groupby("steps_since_last_checkpoint")["training_time_s"]
    return pd.DataFrame({"steps_since_last_checkpoint": g.mean().index.astype(int), "overhead_s": (g.mean() - base).to_numpy(),
                         "overhead_std_s": g.std(ddof=0).to_numpy()})


@paper_figure
def restart_training_overhead(data: pd.DataFrame | None = None, *, ax=None):
    """Extra training time vs steps since the last checkpoint (bars with std)."""
    d = restart_training_overhead_data() if data is None else data
    d = d.assign(steps=[f"{s / 1000:g}k" for s in d["steps_since_last_checkpoint"]])
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.0))
    plot_bars(d, x="steps", y="overhead_s", yerr="overhead_std_s", ax=ax, capsize=3)
    ax.set(xlabel="Steps since last checkpoint", ylabel="Extra training time (s)")
    if own:
        fig.tight_layout()
    return fig


def chief_rejoining_data() -> pd.DataFrame:
    """The raw chief-rejoining runs (``CM:chief_rejoining``): per run, total training time (last − first wall time, 24K
    steps, checkpoint every 4K) and final accuracy (%)."""
    c = ds.load_chief_rejoining()
    g = c.sort_values("step").groupby("run", sort=False)
    out = pd.DataFrame({"total_time_s": g["wall_time_s"].max() - g["wall_time_s"].min(), "final_accuracy_pct": g["accuracy"].last() * 100,
                        "rejoin_step": g["rejoin_step"].first()})
    return out.reset_index()


@paper_figure
def chief_rejoining(data: pd.DataFrame | None = None, *, ax=None):
    """Final accuracy of each chief-rejoining run (the raw data behind S2020 cells 15–16)."""
    d = chief_rejoining_data() if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.0))
    plot_bars(d, x="run", y="final_accuracy_pct", ax=ax)
    ax.set(xlabel="", ylabel="Final accuracy (%)", ylim=(70, 85))
    ax.tick_params(axis="x", labelsize=6, rotation=45)
    if own:
        fig.tight_layout()
    return fig


def revocations_by_hour_data(gpu: str = "K80", basis: str = "hours_since_start") -> pd.DataFrame:
    """Revocations per hour since VM start (24 bins) or per hour of day (25 bins, the last a padding 0)."""
    if basis not in ("hours_since_start", "hour_of_day"):
        raise ValueError(f"basis must be 'hours_since_start' or 'hour_of_day'; got {basis!r}.")
    r = ds.load_transcribed("revocations_by_hour")
    g = ds.canonical_gpu(gpu)
    d = r[(r["gpu"] == g) & (r["basis"] == basis)]
    if d.empty:
        raise ValueError(f"No revocation counts for {g}; the data has K80, P100 and V100.")
    return d[["gpu", "basis", "hour", "revocations", "padding_bin"]].reset_index(drop=True)


@paper_figure
def revocations_by_hour(gpu: str = "K80", basis: str = "hours_since_start", *, data: pd.DataFrame | None = None, ax=None):
    """``{gpu}_hour_after_starting.pdf`` (ylim 0–40) or ``{gpu}_hour_of_day.pdf`` (ylim 0–20)."""
    d = revocations_by_hour_data(gpu, basis) if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 1.8))
    ax.bar(d["hour"], d["revocations"])  # a numeric hour axis (every bin at its hour), not category slots
    ax.set(xlabel="Hours since start" if basis == "hours_since_start" else "Hour of day", ylabel="# revocations",
           ylim=(0, 40 if basis == "hours_since_start" else 20))
    if own:
        fig.tight_layout()
    return fig


def training_time_estimates_data() -> pd.DataFrame:
    """The 11 runs: ``rev_step``, ``act_time_s``, the authors' ``est_time_s`` and perfmodel's ``perfmodel_est_s``."""
    t = ds.load_transcribed("training_time_estimates")[["rev_step", "rec_delta", "est_time_s", "act_time_s"]].copy()
    t["perfmodel_est_s"] = estimate_time_after_revocation(t["rev_step"])
    return t


@paper_figure
def training_time_estimates(data: pd.DataFrame | None = None, *, ax=None):
    """Estimated vs actual training time after a revocation: the authors' estimates and perfmodel's, with y = x."""
    d = training_time_estimates_data() if data is None else data
    long = pd.concat([pd.DataFrame({"estimate_s": d["est_time_s"], "actual_s": d["act_time_s"], "by": "authors' estimate"}),
                      pd.DataFrame({"estimate_s": d["perfmodel_est_s"], "actual_s": d["act_time_s"], "by": "perfmodel"})], ignore_index=True)
    fig, ax, own = subplots(ax, figsize=figure_size("column", 3.0, fraction=0.85))
    plot_parity(long, x="estimate_s", y="actual_s", hue="by", ax=ax, s=14)
    ax.set(xlabel="Estimated training time (s)", ylabel="Actual training time (s)")
    if own:
        fig.tight_layout()
    return fig


def icac_fig3_data() -> pd.DataFrame:
    """ICAC'19 Fig. 3 arrays (``lifetime/plot.py``): ``server_type``, ``n_servers``, ``lifetime_lt_hours``,
    ``fraction_revoked``, ``plotted``."""
    d = ds.load_transcribed("icac19_lifetime_cdf")
    return d[["server_type", "legend_label", "plotted", "n_servers", "plot_x_hours", "lifetime_lt_hours", "fraction_revoked"]]


@paper_figure
def icac_fig3(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 3: CDF of the lifetime of preemptible servers by type (the authors' arrays)."""
    d = icac_fig3_data() if data is None else data
    d = d[d["plotted"]]
    n = d.groupby("legend_label", sort=False)["n_servers"].first()
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.2))
    plot_lines(d, x="plot_x_hours", y="fraction_revoked", hue="legend_label", labels=lambda k: f"{k} (n={int(n[k])})", ax=ax)
    ax.set(xlabel="Lifetime (hours)", ylabel="CDF", xlim=(0, 24), ylim=(0, 1))
    if own:
        fig.tight_layout()
    return fig


def icac_fig5_data() -> pd.DataFrame:
    """ICAC'19 Fig. 5 curves (``adaptive_lr/``): ``case`` (baseline / naive_lr / adaptive_lr), ``step``,
    ``elapsed_h``, ``accuracy_pct``."""
    a = ds.load_adaptive_lr()
    a = a[~a["duplicate_step"]] if "duplicate_step" in a else a
    return pd.DataFrame({"case": a["case"], "step": a["step"], "elapsed_h": a["elapsed_s"] / 3600, "accuracy_pct": a["accuracy"] * 100})


@paper_figure
def icac_fig5(data: pd.DataFrame | None = None, *, ax=None):
    """ICAC'19 Fig. 5: accuracy vs steps of a static 1-K80 cluster and of a growing cluster, naive vs adaptive LR."""
    d = icac_fig5_data() if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.2))
    labels = {"baseline": "1 K80 + 1 PS", "naive_lr": "dynamic, naive LR", "adaptive_lr": "dynamic, adaptive LR"}
    plot_lines(d, x="step", y="accuracy_pct", hue="case", labels=lambda k: labels.get(k, k), ax=ax, marker=".")
    ax.set(xlabel="Steps", ylabel="Top-1 accuracy (%)", ylim=(40, 95))
    if own:
        fig.tight_layout()
    return fig


def transient_numbers_data() -> pd.DataFrame:
    """The numbers quoted by the paper (revocations by hour, start-up, restart, chief rejoining, training-time
    estimates) and ICAC'19 Figs. 3 and 5, next to their reproduced values (``paper_numbers/transient.csv``)."""
    rep: dict[str, float] = {}
    s = startup_breakdown_data().set_index("source_name")
    for name, r in s.iterrows():
        key = name.replace("vm_time_measure_", "startup_")
        rep[f"{key}_n"] = float(r["n"])
        for ph in ("provisioning", "staging", "booting"):
            rep[f"{key}_{ph}_s"] = float(r[f"{ph}_mean_s"])
        rep[f"{key}_total_s"] = float(r["total_s"])
    for g in ("K80", "P100", "V100"):
        h = revocations_by_hour_data(g, "hours_since_start")
        rep[f"{g.lower()}_revocations_hour0"] = float(h.loc[h["hour"] == 0, "revocations"].sum())
        rep[f"{g.lower()}_revocations_within_2h"] = float(h.loc[h["hour"] <= 1, "revocations"].sum())
        rep[f"{g.lower()}_revocations_since_start_total"] = float(h["revocations"].sum())
        d = revocations_by_hour_data(g, "hour_of_day")
        rep[f"{g.lower()}_revocations_hour_of_day_total"] = float(d["revocations"].sum())
        rep[f"{g.lower()}_peak_hour_of_day"] = float(d.loc[d["revocations"].idxmax(), "hour"])
        rep[f"{g.lower()}_peak_hour_of_day_revocations"] = float(d["revocations"].max())
    o = restart_training_overhead_data()
    for r in o.itertuples(index=False):
        rep[f"restart_overhead_{r.steps_since_last_checkpoint}_s"] = float(r.overhead_s)
    c = chief_rejoining_data().set_index("run")
    for run, r in c.iterrows():
        rep[f"chief_{run}_total_time_s"] = float(r["total_time_s"])
        rep[f"chief_{run}_final_accuracy_pct"] = float(r["final_accuracy_pct"])
    t = training_time_estimates_data()
    err = (t["est_time_s"] - t["act_time_s"]).abs()
    rep["tte_authors_mape_pct"] = mape(t["act_time_s"], t["est_time_s"])
    rep["tte_authors_mae_s"] = mae(t["act_time_s"], t["est_time_s"])
    rep["tte_authors_max_abs_error_s"] = float(err.max())
    rep["tte_perfmodel_mape_pct"] = mape(t["act_time_s"], t["perfmodel_est_s"])
    rep["tte_perfmodel_mae_s"] = mae(t["act_time_s"], t["perfmodel_est_s"])
    f3 = icac_fig3_data()
    for st, sub in f3.groupby("server_type"):
        sub = sub.sort_values("lifetime_lt_hours")
        rep[f"fig3_{st.lower()}_n"] = float(sub["n_servers"].iloc[0])
        rep[f"fig3_{st.lower()}_revoked_before_24h"] = float(sub.loc[sub["lifetime_lt_hours"] <= 24, "fraction_revoked"].max())
        rep[f"fig3_{st.lower()}_revoked_first_hour"] = float(sub.loc[sub["lifetime_lt_hours"] <= 1, "fraction_revoked"].max())
    f5 = icac_fig5_data()
    for case, sub in f5.groupby("case"):
        rep[f"fig5_{case}_duration_h"] = float(sub["elapsed_h"].max())
        rep[f"fig5_{case}_final_accuracy_pct"] = float(sub.sort_values("step")["accuracy_pct"].iloc[-1])
    b, n = rep["fig5_baseline_duration_h"], rep["fig5_adaptive_lr_duration_h"]
    rep["fig5_dynamic_faster_pct"] = (b - n) / b * 100
    return compare_with_paper("transient", rep, extra_item=_transient_item)


#: Quantity prefix → the item (its ``datasets/reference`` name) that computes it, for quantities without a paper value.
_TRANSIENT_PREFIXES = (("tte_", "training_time_estimates"), ("fig3_", "icac_fig3"), ("fig5_", "icac_fig5"),
                       ("startup_", "startup_breakdown"), ("restart_", "restart_training_overhead"),
                       ("chief_", "chief_rejoining"))


def _transient_item(quantity: str) -> str:
    """The item a computed quantity of the ``transient`` area belongs to (every one has a current item)."""
    for prefix, item in _TRANSIENT_PREFIXES:
        if quantity.startswith(prefix):
            return item
    if "revocations" in quantity or "peak_hour" in quantity:
        return "revocations_by_hour"
    raise ValueError(f"no item computes the transient quantity {quantity!r}; add its prefix to _TRANSIENT_PREFIXES.")

"""Which cluster should I rent? Predicted time, cost and revocation overhead of every candidate configuration.

:func:`plan_cmdare` enumerates clusters (GPU type × workers × parameter servers × transient/on-demand × region) for a model
and a number of training steps, and predicts for each:

* **speed** (global steps/s) — :func:`perfmodel.models.predict_cluster_speed`: the PS model fitted on the CNN's own
  CM-DARE cluster runs when they exist, otherwise size-scaled shared PS terms plus the predicted single-worker step
  time (:func:`perfmodel.models.predict_cmdare_step_time`);
* **time** — ``steps / speed``, plus the expected revocation overhead for transient clusters;
* **revocations** — the renewal expectation of :func:`perfmodel.planning.revocation.expected_revocations` over the
  worker slots, from the CM-DARE lifetimes of the GPU (pooled or per region). The parameter servers are on-demand, as
  in both papers;
* **overhead per revocation** (asynchronous PS training, as in the papers: the cluster keeps training) — the
  replacement server's start-up (mean measured preemptible VM start-up, ``load_vm_startup``) plus TensorFlow's warm
  restart (11.87 s), during which the cluster runs one worker short (``/ n`` of the throughput); a
  revoked chief (one revocation in ``n``) also loses half a checkpoint interval of progress;
* **cost** — per-second billing (:func:`perfmodel.planning.cost.price_per_second`, ICAC'19 Table II prices of 2019
  and the authors' per-second rates): workers for the run and the replacement start-ups, PS on-demand for the run.

Then :func:`pareto_front` marks the time-vs-cost Pareto front, :func:`cheapest_under_deadline` and
:func:`fastest_under_budget` choose, and :func:`plot_pareto` draws the front. :func:`validate_against_icac` predicts
the ICAC'19 clusters and compares with what was measured.

Limits: the step-time models are fitted on CM-DARE's 20 CIFAR-10 CNNs at batch 128 (TensorFlow 1.x, 2019 GCE); GPUs
without measurements are extrapolated through peak TFLOPS; prices are those of the papers unless you pass ``prices``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["plan_cmdare", "vm_startup_s", "pareto_front", "cheapest_under_deadline", "fastest_under_budget", "plot_pareto", "PlanInfeasibleError",
           "validate_against_icac", "TF_WARM_RESTART_S"]



def __getattr__(name):
    # TF_WARM_RESTART_S: TensorFlow warm restart of a worker joining a running cluster (CM-DARE ``tf_restart.pdf``),
    # read from the reference data when first asked for (nothing is read at import time).
    if name == "TF_WARM_RESTART_S":
        from perfmodel.planning.revocation import tf_restart_s

        return tf_restart_s("warm")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Largest cluster CM-DARE measured (1–8 workers, ``load_cluster_runs``); beyond it speeds are extrapolated.
MEASURED_MAX_WORKERS = 8

_COLUMNS = ["model", "gpu", "n_workers", "n_ps", "transient", "region", "speed_steps_per_s", "compute_time_h", "expected_revocations",
            "revocation_overhead_h", "time_h", "worker_usd_per_h", "ps_usd_per_h", "cost_usd", "revocation_cost_usd", "price_date",
            "feasible", "pareto"]


class PlanInfeasibleError(ValueError):
    """No candidate configuration meets the deadline or the budget."""


def vm_startup_s(gpu: str, transient: bool) -> float:
    """Mean measured start-up of a VM with ``gpu`` (request to training, seconds; CM-DARE's 2019 GCE measurements,
    :func:`perfmodel.datasets.load_vm_startup`), transient or on-demand; the mean over the measured GPUs for a GPU that
    was not measured. Memoised per data source (planners ask once per candidate)."""
    from perfmodel.datasets import data_source

    key = (data_source(), str(gpu), bool(transient))
    if key not in _STARTUP_MEMO:
        _STARTUP_MEMO[key] = _vm_startup_s(str(gpu), bool(transient))
    return _STARTUP_MEMO[key]


_STARTUP_MEMO: dict = {}


def _vm_startup_s(gpu: str, transient: bool) -> float:
    v = ds.load_vm_startup()
    sel = v[(v["transient"] == transient) & (v["gpu"].astype(str) == gpu)]
    if sel.empty:
        sel = v[v["transient"] == transient]  # no measurement for this GPU: the mean over the measured GPUs
    return float(sel["total_s"].mean())


def _check_prices(prices: pd.DataFrame | None) -> pd.DataFrame:
    p = ds.load_prices() if prices is None else prices
    need = {"server", "gpu", "on_demand_usd_per_h", "transient_usd_per_h"}
    if not need <= set(p.columns):
        raise ValueError(f"prices must have the columns {sorted(need)} (like perfmodel.datasets.load_prices()); got {list(p.columns)}.")
    return p


def _price_h(p: pd.DataFrame, gpu: str | None, transient: bool) -> float:
    row = p[p["server"] == "parameter_server"] if gpu is None else p[(p["server"] == "worker") & (p["gpu"] == gpu)]
    if row.empty:
        have = sorted(p.loc[p["server"] == "worker", "gpu"].dropna())
        what = "the parameter server" if gpu is None else f"{gpu} workers"
        raise ValueError(f"No price for {what}: the price table has workers {have}. Pass prices= with a row for it "
                         "(columns server, gpu, on_demand_usd_per_h, transient_usd_per_h).")
    return float(row["transient_usd_per_h" if transient else "on_demand_usd_per_h"].iloc[0])


def pareto_front(frame: pd.DataFrame, *, time: str = "time_h", cost: str = "cost_usd") -> pd.Series:
    """Boolean Series: rows not dominated in (time, cost) — no other row is at least as fast and as cheap and
    strictly better in one (ties kept).

    O(n log n) time and O(n) memory: rows sorted by time then cost; a row is dominated when a strictly faster row is
    at least as cheap (running minimum of the cost over the faster rows) or an equally fast row is strictly cheaper.
    A row with a NaN time or cost is neither dominated nor dominating (no comparison with NaN holds).
    """
    t = frame[time].to_numpy(float)
    c = frame[cost].to_numpy(float)
    keep = np.ones(len(t), dtype=bool)
    valid = np.flatnonzero(~(np.isnan(t) | np.isnan(c)))
    if valid.size:
        order = valid[np.lexsort((c[valid], t[valid]))]
        ts, cs = t[order], c[order]
        # groups of equal time (sorted): first index of each group, the group's minimum cost
        starts = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
        group = np.cumsum(np.r_[True, ts[1:] != ts[:-1]]) - 1
        group_min = cs[starts]  # sorted by cost within a group
        # minimum cost over all strictly faster groups (inf for the fastest group)
        faster_min = np.r_[np.inf, np.minimum.accumulate(group_min)[:-1]]
        dominated = ((group > 0) & (faster_min[group] <= cs)) | (cs > group_min[group])
        keep[order] = ~dominated
    return pd.Series(keep, index=frame.index, name="pareto")


def mark_feasible(out: pd.DataFrame, *, deadline_h: float | None = None, budget_usd: float | None = None, ok=None) -> pd.DataFrame:
    """Add ``feasible`` (``ok`` — default all rows — and within the deadline and the budget) and ``pareto`` (the
    time–cost front among the feasible rows) to a frame with ``time_h`` and ``cost_usd``; returns it."""
    ok = pd.Series(True, index=out.index) if ok is None else pd.Series(ok, index=out.index).astype(bool)
    if deadline_h is not None:
        ok &= out["time_h"] <= deadline_h
    if budget_usd is not None:
        ok &= out["cost_usd"] <= budget_usd
    out["feasible"] = ok
    out["pareto"] = False
    if ok.any():
        out.loc[ok, "pareto"] = pareto_front(out[ok])
    return out


def plan_cmdare(model, *, gpus=("K80", "P100", "V100"), max_workers: int = 8, ps=(1, 2), transient=(True, False), regions=None,
         steps: int = 64000, deadline_h: float | None = None, budget_usd: float | None = None, prices: pd.DataFrame | None = None,
         checkpoint_interval_steps: int = 4000, input_shape=(3, 32, 32), batch_size: int = 128,
         staleness: bool | dict = False) -> pd.DataFrame:
    """CM-DARE's planner: candidate parameter-server clusters with predicted time, cost and revocation overhead, and
    their Pareto front. :func:`perfmodel.plan` (:mod:`perfmodel.planning.unified`) calls it for CM-DARE's world.

    Parameters
    ----------
    model : str, torch.nn.Module or DataFrame
        A zoo id, a module or a features row (:func:`perfmodel.models.model_features`).
    gpus : sequence of str
        Worker GPU types (each needs a price: K80, P100, V100 in the papers' table, or pass ``prices``).
    max_workers : int
        Clusters of 1..``max_workers`` workers.
    ps : int or sequence of int
        Parameter-server counts (on-demand).
    transient : bool or sequence of bool
        Transient (preemptible) and/or on-demand workers.
    regions : sequence of str, optional
        Transient lifetimes per region (CM-DARE's regions of the GPU); default pooled over the GPU's regions.
    steps : int
        Training steps (global steps of asynchronous training; ICAC'19 trains ResNet-32 for 64000).
    deadline_h, budget_usd : float, optional
        Constraints: rows meeting both get ``feasible=True``.
    prices : DataFrame, optional
        Price table like :func:`perfmodel.datasets.load_prices` (override the 2019 prices).
    checkpoint_interval_steps : int
        Checkpoint interval of the chief (CM-DARE used 4000 steps).
    input_shape : tuple of int
        Shape of one sample when ``model`` is a module.
    batch_size : int
        Samples per worker and step (default CM-DARE's 128; see :func:`perfmodel.models.predict_cluster_speed`).
    staleness : bool or dict, default False
        Opt-in: multiply each candidate's ``steps`` by the steps its worker count needs to reach the same accuracy under
        asynchronous staleness (:func:`perfmodel.planning.staleness_multiplier`; True: the fit on ICAC'19's K80
        ResNet-32 clusters, a dict: your :func:`perfmodel.planning.fit_staleness_multiplier`). Adds the columns
        ``staleness_multiplier`` and ``steps`` (after ``region``); time, revocations and cost follow from the scaled
        steps. Default False: every cluster trains ``steps`` global steps (the papers' fixed schedule, whose cost of
        staleness is lower accuracy, not time).

    Returns
    -------
    DataFrame
        One row per configuration: ``model``, ``gpu``, ``n_workers``, ``n_ps``, ``transient``, ``region``,
        ``speed_steps_per_s``, ``compute_time_h``, ``expected_revocations``, ``revocation_overhead_h``, ``time_h``,
        ``worker_usd_per_h``, ``ps_usd_per_h``, ``cost_usd``, ``revocation_cost_usd``, ``price_date``, ``feasible``,
        ``pareto`` (time–cost front among the feasible rows); with ``staleness``, also ``staleness_multiplier`` and
        ``steps`` (global steps planned for the row).

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        Unknown GPU or region.
    ValueError
        Bad counts, a non-positive budget or deadline, a GPU without a price or lifetime data for transient plans.
    """
    from perfmodel.models.cluster import predict_cluster_speed
    from perfmodel.planning.revocation import expected_revocations, lifetime_distribution, tf_restart_s

    from perfmodel.planning._inputs import gpu_names, positive_int, positive_number

    gpus = [ds.canonical_gpu(g) for g in gpu_names(gpus, "plan_cmdare")]
    steps = positive_int(steps, "steps", "training steps", 64000)
    batch_size = positive_int(batch_size, "batch_size", "samples per worker step", 128)
    checkpoint_interval_steps = positive_int(checkpoint_interval_steps, "checkpoint_interval_steps", "steps", 4000)
    positive_number(deadline_h, "deadline_h", "number of hours", "2.0")
    positive_number(budget_usd, "budget_usd", "amount of dollars", "50.0")
    ps = [int(p) for p in ([ps] if np.isscalar(ps) else ps)]
    transient = [bool(t) for t in ([transient] if isinstance(transient, (bool, np.bool_)) else transient)]
    if not gpus or not ps or not transient:
        raise ValueError("gpus, ps and transient must each name at least one option.")
    numeric = isinstance(max_workers, (int, float, np.integer, np.floating)) and not isinstance(max_workers, bool)
    if min(ps) < 1 or (numeric and int(max_workers) < 1):
        raise ValueError(f"max_workers and ps must be ≥ 1; got max_workers={max_workers}, ps={ps}.")
    max_workers = positive_int(max_workers, "max_workers", "workers", 8)
    if int(steps) < 1:
        raise ValueError(f"steps must be a positive number of training steps; got {steps}.")
    if int(max_workers) > MEASURED_MAX_WORKERS:
        warnings.warn(f"max_workers={int(max_workers)} is beyond the measured 1–{MEASURED_MAX_WORKERS} workers of CM-DARE's cluster runs: "
                      f"the speeds (and times, costs) of clusters above {MEASURED_MAX_WORKERS} workers are extrapolated by the "
                      "parameter-server model, not validated against measurements.", UserWarning, stacklevel=2)
    if budget_usd is not None and not budget_usd > 0:
        raise ValueError(f"budget_usd must be a positive amount of dollars; got {budget_usd}. (A zero budget rents nothing.)")
    if deadline_h is not None and not deadline_h > 0:
        raise ValueError(f"deadline_h must be a positive number of hours; got {deadline_h}.")
    regions = [None] if regions is None else [ds.canonical_region(r) for r in ([regions] if isinstance(regions, str) else regions)]
    if not (isinstance(staleness, (bool, np.bool_)) or isinstance(staleness, dict)):
        raise ValueError(f"staleness must be False, True or the dict of perfmodel.planning.fit_staleness_multiplier(); got "
                         f"{type(staleness).__name__}.")
    use_staleness = staleness is not False and staleness is not np.False_
    if use_staleness:
        from perfmodel.planning.efficiency import staleness_multiplier
    p = _check_prices(prices)
    date = str(p["price_date"].iloc[0]) if "price_date" in p.columns else ""
    ps_price = _price_h(p, None, False)
    warm_s = tf_restart_s("warm")
    rows = []
    for g in gpus:
        speeds = predict_cluster_speed(model, g, workers=range(1, int(max_workers) + 1), n_ps=ps, input_shape=input_shape,
                                       batch_size=batch_size)
        name = str(speeds["model"].iloc[0])
        for tr in transient:
            price = _price_h(p, g, tr)
            for reg in (regions if tr else [None]):
                dist = None
                if tr:
                    try:
                        dist = lifetime_distribution(g, reg)
                    except ValueError as exc:
                        raise ValueError(f"No transient lifetime data for {g}{' in ' + reg if reg else ''} ({exc}); plan it on-demand "
                                         "(transient=False) or choose a GPU/region with CM-DARE lifetimes.") from None
                replace_s = vm_startup_s(g, True) + warm_s
                n = speeds["n_workers"].to_numpy(int)
                speed = speeds["speed_steps_per_s"].to_numpy(float)
                n_ps = speeds["n_ps"].to_numpy(int)
                mult = (np.asarray(staleness_multiplier(n, None if staleness is True or staleness is np.True_ else staleness), dtype=float)
                        if use_staleness else np.ones(len(n)))
                row_steps = steps * mult
                compute_h = row_steps / speed / 3600
                if tr:
                    # one renewal function for all rows (vectorised over the horizons), times the worker slots
                    rev = n * expected_revocations(compute_h, 1, dist=dist)
                    lost_chief_s = 0.5 * checkpoint_interval_steps / speed
                    over_s = rev * (replace_s / n + (lost_chief_s + warm_s) / n)
                else:
                    rev, over_s = np.zeros(len(n)), np.zeros(len(n))
                time_h = compute_h + over_s / 3600
                rev_cost = rev * replace_s / 3600 * price
                cost = n * price * time_h + n_ps * ps_price * time_h + rev_cost
                rows.append(pd.DataFrame(dict(model=name, gpu=g, n_workers=n, n_ps=n_ps, transient=tr, region=reg or "pooled",
                                              speed_steps_per_s=speed, compute_time_h=compute_h, expected_revocations=rev,
                                              revocation_overhead_h=over_s / 3600, time_h=time_h, worker_usd_per_h=price,
                                              ps_usd_per_h=ps_price, cost_usd=cost, revocation_cost_usd=rev_cost, price_date=date,
                                              staleness_multiplier=mult, steps=row_steps)))
    out = mark_feasible(pd.concat(rows, ignore_index=True), deadline_h=deadline_h, budget_usd=budget_usd)
    out.attrs.update(deadline_h=deadline_h, budget_usd=budget_usd, steps=int(steps))
    cols = _COLUMNS
    if use_staleness:
        i = _COLUMNS.index("region") + 1
        cols = _COLUMNS[:i] + ["staleness_multiplier", "steps"] + _COLUMNS[i:]
        out.attrs["staleness"] = True
    return out[cols].sort_values(["time_h", "cost_usd"], kind="stable").reset_index(drop=True)


def _closest(frame: pd.DataFrame, by: str, k: int = 3) -> str:
    best = frame.nsmallest(k, by)
    return "; ".join(f"{r.n_workers}×{r.gpu} {'transient' if r.transient else 'on-demand'} + {r.n_ps} PS: {r.time_h:.2f} h, ${r.cost_usd:.2f}"
                     for r in best.itertuples(index=False))


def cheapest_under_deadline(frame: pd.DataFrame, deadline_h: float) -> pd.Series:
    """The cheapest configuration of a :func:`plan` frame that finishes within ``deadline_h`` hours.

    Raises :class:`PlanInfeasibleError` naming the fastest configurations when none does.
    """
    if not deadline_h > 0:
        raise ValueError(f"deadline_h must be a positive number of hours; got {deadline_h}.")
    ok = frame[frame["time_h"] <= deadline_h]
    if ok.empty:
        raise PlanInfeasibleError(f"No configuration finishes within {deadline_h} h. The fastest: {_closest(frame, 'time_h')}. "
                                  "Relax the deadline, allow more workers (max_workers) or faster GPUs.")
    return ok.loc[ok["cost_usd"].idxmin()]


def fastest_under_budget(frame: pd.DataFrame, budget_usd: float) -> pd.Series:
    """The fastest configuration of a :func:`plan` frame that costs at most ``budget_usd``.

    Raises :class:`PlanInfeasibleError` naming the cheapest configurations when none fits.
    """
    if not budget_usd > 0:
        raise ValueError(f"budget_usd must be a positive amount of dollars; got {budget_usd}. (A zero budget rents nothing.)")
    ok = frame[frame["cost_usd"] <= budget_usd]
    if ok.empty:
        raise PlanInfeasibleError(f"No configuration costs at most ${budget_usd}. The cheapest: {_closest(frame, 'cost_usd')}. "
                                  "Raise the budget, or allow transient servers and cheaper GPUs.")
    return ok.loc[ok["time_h"].idxmin()]


def plot_pareto(frame: pd.DataFrame, *, chosen: pd.Series | None = None, ax=None):
    """Time vs cost of every configuration (colour = GPU, marker = transient/on-demand), the Pareto front as a line and
    the chosen configuration circled. Returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 3.2))
    for (g, tr), d in frame.groupby(["gpu", "transient"], sort=True):
        ax.scatter(d["time_h"], d["cost_usd"], s=12, marker="o" if tr else "s", alpha=0.6, label=f"{g} {'transient' if tr else 'on-demand'}")
    front = frame[frame["pareto"]].sort_values("time_h")
    ax.plot(front["time_h"], front["cost_usd"], color="black", lw=1, label="Pareto front")
    if chosen is not None:
        ax.scatter([chosen["time_h"]], [chosen["cost_usd"]], s=120, facecolors="none", edgecolors="red", lw=1.5, label="chosen")
    ax.set(xlabel="Predicted training time (h)", ylabel="Predicted cost (USD)", xscale="log")
    ax.legend(frameon=False, fontsize=6)
    return ax


def validate_against_icac() -> pd.DataFrame:
    """Predict the measured ICAC'19 clusters (ResNet-32, 64000 steps) and compare time and cost.

    Configurations: K80 transient 2/4/8 workers (``k80_spot``), K80 on-demand 1/2/4/8, one P100 and one V100
    (transient, no PS), 4 P100 and 4 V100 (transient), and the three mixed clusters. Measured: the mean over the runs
    (all runs, revoked or not; durations and costs from :func:`perfmodel.planning.cost.icac_run_costs`). Predicted:
    :func:`plan` with the expected revocations (homogeneous), and ``ClusterSpeedModel.predict_heterogeneous`` on the
    predicted worker speeds for the mixed clusters (no revocation term). Single-GPU runs have no PS: their PS cost is
    dropped.

    Returns
    -------
    DataFrame
        ``config``, ``gpu``, ``n_workers``, ``transient``, ``n_runs``, ``measured_time_h``, ``predicted_time_h``,
        ``time_ape_pct``, ``measured_cost_usd``, ``predicted_cost_usd``, ``cost_ape_pct``; ``attrs['mape']`` holds the
        MAPE of time and cost.
    """
    from perfmodel.models.cluster import fit_cluster_speed_model
    from perfmodel.planning.cost import icac_run_costs

    runs = icac_run_costs()
    specs = [("k80_spot", f"{n}-spot", "K80", n, True) for n in (2, 4, 8)]
    specs += [("k80_on_demand", c, "K80", n, False) for c, n in (("k80-demand", 1), ("2-demand", 2), ("4-demand", 4), ("8-demand", 8))]
    specs += [("p100_v100_spot", "p100", "P100", 1, True), ("p100_v100_spot", "v100", "V100", 1, True),
              ("p100_v100_spot", "4p100", "P100", 4, True), ("p100_v100_spot", "4v100", "V100", 4, True)]
    rows = []
    prices = ds.load_prices()
    for exp, cfg, g, n, tr in specs:
        m = runs[(runs["experiment"] == exp) & (runs["config"] == cfg)]
        if m.empty:
            continue
        pl = plan_cmdare("resnet-32", gpus=[g], max_workers=n, ps=1, transient=tr, steps=64000)
        r = pl[pl["n_workers"] == n].iloc[0]
        cost = r["cost_usd"] - (r["ps_usd_per_h"] * r["time_h"] if int(m["n_ps"].iloc[0]) == 0 else 0.0)
        rows.append(dict(config=f"{exp}/{cfg}", gpu=g, n_workers=n, transient=tr, n_runs=len(m), measured_time_h=m["duration_h"].mean(),
                         predicted_time_h=r["time_h"], measured_cost_usd=m["cost_usd"].mean(), predicted_cost_usd=cost))
    mixed = runs[runs["experiment"] == "experiment_mixed_gpu"]
    ps_price = _price_h(prices, None, False)
    for cfg, m in mixed.groupby("config"):
        counts = {"K80": int(m["n_k80"].iloc[0]), "P100": int(m["n_p100"].iloc[0]), "V100": int(m["n_v100"].iloc[0])}
        v = []
        for g, k in counts.items():
            if k:
                one = plan_cmdare("resnet-32", gpus=[g], max_workers=1, ps=1, transient=False, steps=64000)
                v += [float(one["speed_steps_per_s"].iloc[0])] * k
        speed = fit_cluster_speed_model(gpu="P100", model="resnet-32").predict_heterogeneous(v, n_ps=1)
        t = 64000 / speed / 3600
        cost = t * (sum(_price_h(prices, g, True) * k for g, k in counts.items()) + ps_price)
        rows.append(dict(config=f"experiment_mixed_gpu/{cfg}", gpu="mixed", n_workers=sum(counts.values()), transient=True, n_runs=len(m),
                         measured_time_h=m["duration_h"].mean(), predicted_time_h=t, measured_cost_usd=m["cost_usd"].mean(),
                         predicted_cost_usd=cost))
    from perfmodel.diagnostics.metrics import ape  # imported here: the planner itself does not load scikit-learn

    out = pd.DataFrame(rows)
    out["time_ape_pct"] = ape(out["measured_time_h"], out["predicted_time_h"])
    out["cost_ape_pct"] = ape(out["measured_cost_usd"], out["predicted_cost_usd"])
    out.attrs["mape"] = {"time_pct": float(out["time_ape_pct"].mean()), "cost_pct": float(out["cost_ape_pct"].mean())}
    return out[["config", "gpu", "n_workers", "transient", "n_runs", "measured_time_h", "predicted_time_h", "time_ape_pct",
                "measured_cost_usd", "predicted_cost_usd", "cost_ape_pct"]]

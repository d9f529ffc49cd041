"""Statistical efficiency: the gradient noise scale of McCandlish et al. ("An Empirical Model of Large-Batch
Training", 2018), as Pollux (OSDI'21) and Scavenger use it to reason about batch size.

The simple noise scale ``B_simple = tr(Σ) / |G|²`` (per-example gradient covariance over squared true gradient) sets
the batch size beyond which larger batches stop reducing the number of steps: with batch ``B`` the steps needed scale
as ``1 + B_simple / B``. It is estimated from squared gradient norms measured at two batch sizes (their Appendix A):

    |G|² ≈ (B_big |G_big|² − B_small |G_small|²) / (B_big − B_small)
    tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)

CM-DARE's and ICAC'19's data hold no gradient statistics, so the planner does not use this for the papers' models
(it plans a fixed number of steps); for your own measurements (gradient norms logged during training, e.g. with
``torch.nn.utils.clip_grad_norm_`` returning the total norm), :func:`gradient_noise_scale` gives ``B_simple`` and
:func:`steps_multiplier` the relative number of steps a batch size needs.

The cost of asynchronous staleness is measured, not modelled: ICAC'19's accuracy curves (ResNet-32 on CIFAR-10,
asynchronous parameter-server training on 1–8 K80 workers) give, per cluster size, the accuracy after the fixed
64 000 steps and the steps needed to reach a target accuracy. :func:`staleness_cost` tabulates both with bootstrap
intervals over the runs, :func:`fit_staleness_multiplier` fits ``m(n) = 1 + c·(n − n_ref)`` to the per-size step
multipliers, :func:`staleness_multiplier` evaluates it for any worker count (warning outside the measured counts) and
``perfmodel.planning.plan(..., staleness=True)`` multiplies each candidate's steps by it.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = ["gradient_noise_scale", "steps_multiplier", "statistical_efficiency", "icac_staleness_curves", "staleness_cost", "fit_staleness_multiplier",
           "staleness_multiplier", "ICAC_LR_STEP"]

#: Global step at which ICAC'19's ResNet-32 schedule lowers the learning rate (half of the 64 000 steps). The data show it:
#: on every cluster size with ≥ 10 runs the mean accuracy rises most, after the first climb, in the evaluations around
#: this step and is flat after it (tests/planning/test_staleness.py checks it).
ICAC_LR_STEP = 32000


def gradient_noise_scale(sq_norm_small, sq_norm_big, batch_small: int, batch_big: int) -> dict:
    """``B_simple`` from squared gradient norms at two batch sizes (each an average over many steps, or arrays
    averaged here, as the estimators are unbiased only in expectation).

    Returns
    -------
    dict
        ``b_simple`` (samples), ``grad_sq_norm`` (|G|² estimate), ``trace_cov`` (tr Σ estimate).

    Raises
    ------
    ValueError
        Batch sizes not ordered or not positive, or estimates that are not positive (too few or too noisy
        measurements: average over more steps).
    """
    if not (0 < batch_small < batch_big):
        raise ValueError(f"need 0 < batch_small < batch_big; got {batch_small} and {batch_big}.")
    s = float(np.mean(sq_norm_small))
    b = float(np.mean(sq_norm_big))
    g2 = (batch_big * b - batch_small * s) / (batch_big - batch_small)
    tr = (s - b) / (1 / batch_small - 1 / batch_big)
    if not (g2 > 0 and tr > 0):
        raise ValueError(f"the estimates are not positive (|G|² = {g2:.4g}, tr Σ = {tr:.4g}): the squared norms must shrink with "
                         "the batch (|G_small|² > |G_big|²); average them over more steps.")
    return {"b_simple": tr / g2, "grad_sq_norm": g2, "trace_cov": tr}


def steps_multiplier(batch_size, b_simple: float):
    """Relative number of optimisation steps at ``batch_size`` compared with an infinitely large batch:
    ``1 + B_simple / B`` (McCandlish et al., eq. 2.11)."""
    bs = np.asarray(batch_size, dtype=float)
    if (bs <= 0).any() or not b_simple > 0:
        raise ValueError("batch_size and b_simple must be positive.")
    return 1 + b_simple / bs


def statistical_efficiency(batch_size, b_simple: float):
    """Share of the small-batch limit's sample efficiency kept at ``batch_size``: ``1 / (1 + B / B_simple)``
    (McCandlish et al., eq. 2.11: training to a target takes ``E_min · (1 + B / B_simple)`` samples), in (0, 1].
    With :func:`steps_multiplier`, ``steps · B`` samples are ``E_min / statistical_efficiency``.

    Raises
    ------
    ValueError
        A batch size or noise scale that is not positive.
    """
    bs = np.asarray(batch_size, dtype=float)
    if (bs <= 0).any() or not b_simple > 0:
        raise ValueError(f"batch_size and b_simple must be positive; got {batch_size!r} and {b_simple!r}.")
    return 1 / (1 + bs / b_simple)


# --------------------------------------------------------------------------------------------------------------------
# the cost of asynchronous staleness, measured on ICAC'19's accuracy curves

_RUN = ["experiment", "config", "zone", "run"]


def _selected_runs(runs: pd.DataFrame) -> pd.Series:
    """Homogeneous single-region K80 clusters with one PS (a single worker: none), that reached the target steps
    without a revoked server (revocations unrecorded — ``1ps_k80`` has no VM data — count as none)."""
    gpus = (runs[["n_k80", "n_p100", "n_v100"]] > 0).sum(axis=1)
    ps_ok = (runs["n_ps"] == 1) | ((runs["n_workers"] == 1) & (runs["n_ps"] == 0))
    return ((gpus == 1) & (runs["n_k80"] > 0) & runs["region_mix"].isna() & ps_ok & ~runs["failed"].astype(bool)
            & (runs["n_revoked_workers"].fillna(0) == 0) & ~runs["master_revoked"].fillna(False).astype(bool))


def icac_staleness_curves(configs=None) -> pd.DataFrame:
    """ICAC'19 accuracy curves of the clusters :func:`staleness_cost` measures staleness on, with their cluster size.

    The selection: homogeneous K80 clusters in one region (cross-region clusters left out), one parameter server
    (a single worker trains without one), runs that reached 64 000 steps with no worker or master revoked
    (``load_icac_runs``'s ``failed``, ``n_revoked_workers``, ``master_revoked``; ``1ps_k80`` records no VM data and
    is kept). From the ``k80_on_demand`` (1, 2, 4, 8 workers, 10 runs each), ``k80_spot`` (2, 4, 8 workers, the
    runs without a revocation) and ``experiment_1ps_vs_2ps/1ps_k80`` (one run of each size 2–8) folders.

    Parameters
    ----------
    configs : str or sequence of str, optional
        ICAC'19 configuration folders to keep (e.g. ``["k80-demand", "2-demand", "4-demand", "8-demand"]``); default
        every folder with a run in the selection.

    Returns
    -------
    DataFrame
        One row per evaluation: ``experiment``, ``config``, ``zone``, ``run``, ``run_id`` (``experiment/config/zone/run``),
        ``gpu`` (``"K80"``), ``n_workers``, ``n_ps``, ``transient``, ``step`` (global step), ``accuracy`` (top-1,
        fraction). The restart rows of ``load_icac_accuracy_curves`` are dropped.

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        A configuration with no run in the selection (the message lists those that have one).
    """
    from perfmodel import datasets as ds

    runs = ds.load_icac_runs(include_unprocessed=True)
    runs = runs[_selected_runs(runs)]
    have = list(dict.fromkeys(runs["config"].astype(str)))
    if configs is not None:
        configs = [configs] if isinstance(configs, str) else list(configs)
        unknown = [c for c in configs if c not in have]
        if unknown:
            raise ds.UnknownNameError(
                f"ICAC'19 configuration(s) {unknown} have no run in the staleness selection (homogeneous single-region K80 "
                f"clusters, 1 PS, no revocation or failure). Expected some of: {', '.join(have)}.")
        runs = runs[runs["config"].isin(configs)]
    curves = ds.load_icac_accuracy_curves()
    curves = curves[~curves["restart_row"]]
    key = lambda d: d[_RUN[:2]].astype(str).agg("/".join, axis=1) + "/" + d["zone"].astype("string").fillna("-").astype(str) + "/" + d["run"].astype(str)  # noqa: E731
    runs = runs.assign(run_id=key(runs), gpu="K80")
    curves = curves.assign(run_id=key(curves))
    out = curves.merge(runs[["run_id", "gpu", "n_workers", "n_ps", "transient"]], on="run_id", how="inner")
    cols = _RUN + ["run_id", "gpu", "n_workers", "n_ps", "transient", "step", "accuracy"]
    return out[cols].sort_values(["n_workers", "run_id", "step"], kind="stable").reset_index(drop=True)


def _first_crossing(grid: np.ndarray, acc: np.ndarray, target: float) -> np.ndarray:
    """Step at which each row of ``acc`` (rows × grid) first reaches ``target``, linearly interpolated between the two
    grid points around the crossing; ``inf`` where it never does."""
    acc = np.atleast_2d(acc)
    hit = acc >= target
    i = np.argmax(hit, axis=1)
    out = np.full(acc.shape[0], np.inf)
    ok = hit.any(axis=1)
    first = ok & (i == 0)
    out[first] = grid[0]
    mid = ok & (i > 0)
    j = i[mid]
    r = np.flatnonzero(mid)
    y0, y1 = acc[r, j - 1], acc[r, j]
    out[mid] = grid[j - 1] + (target - y0) / (y1 - y0) * (grid[j] - grid[j - 1])
    return out


def _check_curves(curves: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(curves, pd.DataFrame):
        raise TypeError(f"curves must be a DataFrame like perfmodel.planning.icac_staleness_curves(); got {type(curves).__name__}.")
    c = curves.copy()
    if "run_id" not in c.columns:
        if set(_RUN) <= set(c.columns):
            c["run_id"] = (c[_RUN[:2]].astype(str).agg("/".join, axis=1) + "/" + c["zone"].astype("string").fillna("-").astype(str)
                           + "/" + c["run"].astype(str))
        else:
            raise ValueError("curves needs a run identifier: a 'run_id' column, or 'experiment', 'config', 'zone' and 'run' "
                             f"(like load_icac_accuracy_curves). Got columns {list(curves.columns)}.")
    missing = [k for k in ("n_workers", "step", "accuracy") if k not in c.columns]
    if missing:
        raise ValueError(f"curves lacks the columns {missing}; staleness_cost needs one row per evaluation with 'n_workers', "
                         "'step', 'accuracy' and a run id (use perfmodel.planning.icac_staleness_curves(), or merge n_workers "
                         "from load_icac_runs into load_icac_accuracy_curves).")
    if "gpu" not in c.columns:
        c["gpu"] = "unknown"
    if c.empty:
        raise ValueError("curves is empty: no evaluation to measure staleness on.")
    vals = c[["n_workers", "step", "accuracy"]].apply(pd.to_numeric, errors="coerce")
    if vals.isna().any().any() or not np.isfinite(vals.to_numpy(float)).all():
        raise ValueError("curves has missing or non-numeric n_workers / step / accuracy values; every evaluation needs all three.")
    if not vals["accuracy"].between(0, 1).all():
        raise ValueError(f"accuracy must be a fraction in [0, 1]; got values from {vals['accuracy'].min():.4g} to "
                         f"{vals['accuracy'].max():.4g}. Divide percentages by 100.")
    if (vals["n_workers"] < 1).any() or (vals["n_workers"] % 1 != 0).any():
        raise ValueError("n_workers must be whole numbers ≥ 1.")
    c[["n_workers", "step", "accuracy"]] = vals.astype({"n_workers": "int64", "step": "float64", "accuracy": "float64"})
    c["gpu"] = c["gpu"].astype(str)
    if (c.groupby("run_id")[["n_workers", "gpu"]].nunique() > 1).any().any():
        raise ValueError("A run_id spans several cluster sizes or GPUs; every run needs one n_workers and one gpu.")
    return c


def staleness_cost(curves: pd.DataFrame | None = None, *, target_accuracy: float | None = None, reference_workers: int = 1,
                   before_step: float | None = ICAC_LR_STEP, grid_step: float | None = None, target_fraction: float = 0.95,
                   n_boot: int = 1000, random_state: int = 0) -> pd.DataFrame:
    """The cost of asynchronous staleness per cluster size: the accuracy lost at the end of training and the steps
    needed to reach a target accuracy, relative to a reference cluster size.

    Parameters
    ----------
    curves : DataFrame, optional
        One row per evaluation with ``run_id`` (or ``experiment``, ``config``, ``zone``, ``run``), ``n_workers``,
        ``step``, ``accuracy`` (fraction) and optionally ``gpu``. Default :func:`icac_staleness_curves` — ICAC'19's
        homogeneous K80 clusters of 1–8 workers (one PS, no revocation or failure).
    target_accuracy : float, optional
        Accuracy (fraction) whose first crossing defines the steps to target. Default ``target_fraction`` × the lowest,
        over cluster sizes, of the best mean accuracy reached on the searched steps (before ``before_step``): a level
        every size reaches, with a margin for the run-to-run noise.
    reference_workers : int, default 1
        Cluster size the multipliers and gaps are relative to (1: sequential SGD, no staleness).
    before_step : float or None, default :data:`ICAC_LR_STEP` (32 000)
        Steps to target are read on the grid points strictly before this step: ICAC'19 lowers the learning rate at
        32 000 steps, after which every size's accuracy jumps at once, so a crossing after it measures the schedule, not
        staleness. None: the whole curves (then targets above the pre-step plateau give multipliers near 1 and the
        cost shows as ``accuracy_gap``).
    grid_step : float, optional
        Spacing of the common step grid each run is interpolated on (runs evaluate at slightly different steps:
        4 003, 4 010 …). Default the median spacing of the evaluations rounded to two significant digits (4 000).
    target_fraction : float, default 0.95
        Fraction of the lowest best level used as the default target (ignored with ``target_accuracy``).
    n_boot : int, default 1000
        Bootstrap resamples of the runs (with replacement, within each cluster size) for the intervals.
    random_state : int, default 0
        Seed of the bootstrap.

    Returns
    -------
    DataFrame
        One row per (``gpu``, ``n_workers``): ``runs``; ``final_accuracy`` (mean over the runs of the accuracy at the
        last evaluation, ≈ step 64 000), ``final_accuracy_std`` (between runs, NaN for a single run),
        ``final_accuracy_min``, ``final_accuracy_max``; ``accuracy_gap`` (reference's ``final_accuracy`` minus this size's;
        positive = accuracy lost) with ``accuracy_gap_low`` / ``_high``; ``target_accuracy``; ``steps_to_target`` — the step at
        which the size's mean curve (mean over runs on the common grid) first reaches the target, interpolated
        linearly between grid points — with ``steps_to_target_low`` / ``_high``; ``staleness_multiplier`` =
        steps_to_target / the reference's, with ``multiplier_low`` / ``_high``; ``unreached_frac`` (fraction of resamples
        whose mean curve never reaches the target). Intervals: 2.5 and 97.5 % percentiles of ``n_boot`` bootstrap
        resamples of the runs, reference and size resampled independently; a resample that never reaches the target
        counts as infinitely many steps (so ``_high`` is ``inf`` when more than 2.5 % do). A size with one run has
        zero-width ``steps_to_target`` and final-accuracy intervals (its multiplier and gap intervals carry only the
        reference's noise): it says nothing about its own run-to-run noise. ``attrs`` hold ``target_accuracy``,
        ``reference_workers``, ``before_step``, ``grid_step``, ``n_boot``, ``random_state``.

    Raises
    ------
    ValueError
        Missing columns or bad values in ``curves``; no run of ``reference_workers`` (for a GPU); a run ending before the
        others' last grid step; a target at or below the initial accuracy, or one that a cluster size never reaches
        (the message names the sizes and their best level); bad ``n_boot``, ``grid_step``, ``target_fraction``.

    Notes
    -----
    On ICAC'19's curves the cost of staleness has two faces. Before the learning-rate step the steps to reach an
    accuracy grow with the cluster size (several-fold at 8 workers); after it all sizes jump together and the cost
    stays as a lower plateau (``accuracy_gap``, about 4.5 points at 8 workers). The planner uses the first
    (:func:`staleness_multiplier`); the second is what a fixed 64 000-step schedule costs.

    Resolution: runs are evaluated every ≈4 000 steps. A single worker reaches the default target within its first
    interval, where linear interpolation from step 0 overestimates its steps (the curve is concave), so the multipliers
    relative to one worker are more likely too low than too high; ``reference_workers=2`` resolves the reference better.
    """
    c = _check_curves(icac_staleness_curves() if curves is None else curves)
    if not int(n_boot) >= 1:
        raise ValueError(f"n_boot must be a positive number of bootstrap resamples; got {n_boot}.")
    if not 0 < target_fraction <= 1:
        raise ValueError(f"target_fraction must be in (0, 1]; got {target_fraction}.")
    reference_workers = int(reference_workers)
    c = c.sort_values(["run_id", "step"], kind="stable")
    if grid_step is None:
        d = c.groupby("run_id")["step"].diff().dropna()
        d = d[d > 0]
        if d.empty:
            raise ValueError("Every run has a single evaluation: steps to target need curves with several evaluations per run.")
        grid_step = float(f"{float(d.median()):.2g}")
    if not grid_step > 0:
        raise ValueError(f"grid_step must be a positive number of steps; got {grid_step}.")
    last = c.groupby("run_id")["step"].max()
    first = c.groupby("run_id")["step"].min()
    grid = np.arange(0.0, last.max() + 1e-9, grid_step)
    grid = grid[grid >= first.max()]
    short = last[last < grid[-1]]
    if len(short):
        raise ValueError(f"{len(short)} run(s) end before step {grid[-1]:.0f} that the others reach (e.g. {short.index[0]!r} at step "
                         f"{short.iloc[0]:.0f}): drop unfinished runs from curves (load_icac_runs' 'failed').")
    search = grid[grid < before_step] if before_step is not None else grid
    if len(search) < 2:
        raise ValueError(f"before_step={before_step} leaves fewer than two grid points (grid every {grid_step:.0f} steps); raise it "
                         "or pass before_step=None.")
    groups = {}
    for (g, n), d in c.groupby(["gpu", "n_workers"], sort=True):
        ids, mats, fin = [], [], []
        for rid, r in d.groupby("run_id", sort=True):
            ids.append(rid)
            mats.append(np.interp(search, r["step"].to_numpy(float), r["accuracy"].to_numpy(float)))
            fin.append(float(r["accuracy"].iloc[-1]))
        groups[(g, int(n))] = (np.vstack(mats), np.asarray(fin))
    refs = {g: groups.get((g, reference_workers)) for g in {k[0] for k in groups}}
    missing = sorted(g for g, v in refs.items() if v is None)
    if missing:
        have = sorted({n for (g, n) in groups if g == missing[0]})
        raise ValueError(f"No run of reference_workers={reference_workers} for GPU {missing[0]!r}: the curves hold cluster sizes {have}. "
                         "Pass one of them as reference_workers.")
    best = {k: float(m.mean(axis=0).max()) for k, (m, _) in groups.items()}
    if target_accuracy is None:
        target_accuracy = target_fraction * min(best.values())
    target_accuracy = float(target_accuracy)
    start = max(float(m.mean(axis=0)[0]) for m, _ in groups.values())
    if not target_accuracy > start:
        raise ValueError(f"target_accuracy {target_accuracy:.4g} is at or below the accuracy at the first evaluation ({start:.4g}): every "
                         "size reaches it at step 0. Choose a higher target.")
    never = {k: v for k, v in best.items() if v < target_accuracy}
    if never:
        where = f"before step {before_step:.0f}" if before_step is not None else "in the curves"
        raise ValueError(f"target_accuracy {target_accuracy:.4g} is never reached {where} by the mean curve of "
                         + ", ".join(f"{n} {g} workers (best {v:.4g})" for (g, n), v in sorted(never.items()))
                         + f". Choose a target ≤ {min(best.values()):.4g}" + (" or pass before_step=None." if before_step is not None else "."))
    rng = np.random.default_rng(random_state)
    B = int(n_boot)
    boot = {}
    for k, (m, f) in groups.items():
        idx = rng.integers(0, len(f), size=(B, len(f)))
        boot[k] = (_first_crossing(search, m[idx].mean(axis=1), target_accuracy), f[idx].mean(axis=1))
    rows = []
    q = lambda x, p, how: float(np.quantile(x, p, method=how)) if len(x) else np.nan  # noqa: E731
    for (g, n), (m, f) in groups.items():
        rm, rf = refs[g]
        steps = float(_first_crossing(search, m.mean(axis=0), target_accuracy)[0])
        ref_steps = float(_first_crossing(search, rm.mean(axis=0), target_accuracy)[0])
        bs, bf = boot[(g, n)]
        rs, rfb = boot[(g, reference_workers)]
        with np.errstate(invalid="ignore"):
            mult = bs / rs
        mult = mult[~np.isnan(mult)]
        gap = rfb - bf
        rows.append(dict(gpu=g, n_workers=n, runs=len(f), final_accuracy=float(f.mean()),
                         final_accuracy_std=float(f.std(ddof=1)) if len(f) > 1 else np.nan, final_accuracy_min=float(f.min()),
                         final_accuracy_max=float(f.max()), accuracy_gap=float(rf.mean() - f.mean()), accuracy_gap_low=q(gap, 0.025, "lower"),
                         accuracy_gap_high=q(gap, 0.975, "higher"), target_accuracy=target_accuracy, steps_to_target=steps,
                         steps_to_target_low=q(bs, 0.025, "lower"), steps_to_target_high=q(bs, 0.975, "higher"),
                         staleness_multiplier=steps / ref_steps, multiplier_low=q(mult, 0.025, "lower"),
                         multiplier_high=q(mult, 0.975, "higher"), unreached_frac=float(np.isinf(bs).mean())))
    out = pd.DataFrame(rows)
    out.attrs.update(target_accuracy=target_accuracy, reference_workers=reference_workers, before_step=before_step,
                     grid_step=float(grid_step), n_boot=B, random_state=random_state, boot_multipliers={})
    # the bootstrap multipliers, for fitting the model with intervals (fit_staleness_multiplier)
    out.attrs["boot_multipliers"] = {int(n): (boot[(g, n)][0] / boot[(g, reference_workers)][0]).tolist()
                                     for (g, n) in groups if g == out["gpu"].iloc[0]}
    return out


def fit_staleness_multiplier(cost: pd.DataFrame | None = None, *, gpu: str | None = None) -> dict:
    """Fit ``m(n) = 1 + c·(n − n_ref)`` to the per-size step multipliers of :func:`staleness_cost`.

    Weighted least squares through the reference (``m(n_ref) = 1`` exactly), each size weighted by its number of
    runs (the variance of a mean over runs falls as 1 / runs): ``c = Σ w x y / Σ w x²`` with ``x = n − n_ref``,
    ``y = m − 1``. The interval of ``c`` refits every bootstrap resample of the multipliers (resamples where a size
    never reaches the target are left out of that refit's sizes); ``staleness_cost`` keeps the resamples of its first GPU
    only, so for another GPU of a several-GPU table the interval is NaN (call it on that GPU's curves alone).

    Parameters
    ----------
    cost : DataFrame, optional
        :func:`staleness_cost` output; default ``staleness_cost()`` on ICAC'19's K80 clusters.
    gpu : str, optional
        The GPU whose rows are fitted when ``cost`` holds several; default the only one.

    Returns
    -------
    dict
        ``slope`` (c, extra steps per added worker as a fraction of the reference's), ``slope_low``, ``slope_high``
        (2.5 / 97.5 % over the bootstrap refits), ``reference_workers``, ``min_workers``, ``max_workers`` (measured
        counts: the range of validity), ``target_accuracy``, ``before_step``, ``gpu``, ``rmse`` (of the fitted vs
        measured multipliers, weighted by runs).

    Raises
    ------
    ValueError
        ``cost`` lacks the columns of :func:`staleness_cost`, holds several GPUs without ``gpu``, or has no size other
        than the reference.
    """
    cost = staleness_cost() if cost is None else cost
    need = {"gpu", "n_workers", "runs", "staleness_multiplier"}
    if not isinstance(cost, pd.DataFrame) or not need <= set(cost.columns):
        raise ValueError(f"cost must be the output of staleness_cost() with columns {sorted(need)}.")
    gpus = sorted(cost["gpu"].astype(str).unique())
    if gpu is None:
        if len(gpus) > 1:
            raise ValueError(f"cost holds several GPUs {gpus}; pass gpu= one of them.")
        gpu = gpus[0]
    if gpu not in gpus:
        raise ValueError(f"No rows for gpu {gpu!r} in cost; it holds {gpus}.")
    d = cost[cost["gpu"].astype(str) == gpu]
    ref = int(cost.attrs.get("reference_workers", d.loc[d["staleness_multiplier"] == 1, "n_workers"].min()))
    x = d["n_workers"].to_numpy(float) - ref
    y = d["staleness_multiplier"].to_numpy(float) - 1
    w = d["runs"].to_numpy(float)
    if not (x != 0).any():
        raise ValueError("cost holds only the reference cluster size: fitting a slope needs at least one other size.")
    slope = float((w * x * y).sum() / (w * x * x).sum())
    boots = cost.attrs.get("boot_multipliers") or {}
    refits = []
    if boots and gpu == str(cost["gpu"].iloc[0]):
        sizes = [int(n) for n in d["n_workers"] if int(n) in boots or str(int(n)) in boots]
        M = np.array([boots.get(n, boots.get(str(n))) for n in sizes], dtype=float)  # sizes × B
        xs = np.array(sizes, float) - ref
        ws = d.set_index("n_workers").loc[sizes, "runs"].to_numpy(float)
        ok = np.isfinite(M)
        num = np.where(ok, ws[:, None] * xs[:, None] * (M - 1), 0).sum(axis=0)
        den = np.where(ok, ws[:, None] * xs[:, None] ** 2, 0).sum(axis=0)
        refits = (num / den)[den > 0]
    pred = 1 + slope * x
    return dict(slope=slope, slope_low=float(np.quantile(refits, 0.025)) if len(refits) else np.nan,
                slope_high=float(np.quantile(refits, 0.975)) if len(refits) else np.nan, reference_workers=ref,
                min_workers=int(d["n_workers"].min()), max_workers=int(d["n_workers"].max()),
                target_accuracy=float(cost.attrs.get("target_accuracy", d.get("target_accuracy", pd.Series([np.nan])).iloc[0])),
                before_step=cost.attrs.get("before_step"), gpu=gpu,
                rmse=float(np.sqrt((w * (pred - 1 - y) ** 2).sum() / w.sum())))


_DEFAULT_FIT: dict | None = None


def staleness_multiplier(n_workers, fit: dict | None = None):
    """Steps an asynchronous cluster of ``n_workers`` needs to reach an accuracy, relative to the reference size:
    ``1 + c·(n − n_ref)`` of :func:`fit_staleness_multiplier`.

    Parameters
    ----------
    n_workers : int or array-like of int
        Worker counts (≥ 1).
    fit : dict, optional
        :func:`fit_staleness_multiplier` output; default the fit on ICAC'19's K80 clusters (ResNet-32, CIFAR-10,
        1–8 workers, computed once per session).

    Returns
    -------
    float or ndarray
        The multiplier(s) (float for a scalar input).

    Warns
    -----
    perfmodel.models.ExtrapolationWarning
        A count outside the measured ``min_workers``–``max_workers``: the linear form is not validated there.

    Raises
    ------
    ValueError
        A worker count below 1 or not whole, or a ``fit`` without ``slope`` / ``reference_workers``.

    Notes
    -----
    Validity: the measured counts, for ResNet-32 on CIFAR-10 with ICAC'19's schedule, read before its learning-rate
    step; other models, batch sizes and schedules will have other slopes (measure them with :func:`staleness_cost` on
    your own curves). The slope is measured on K80 workers; staleness comes from the number of asynchronous workers,
    so applying it to other GPUs assumes the same staleness per worker. ICAC'19's V100 clusters
    (``experiment_1ps_vs_2ps/1ps<N>v`` against the single-V100 runs, passed to :func:`staleness_cost` at the same
    target) give a lower slope, so the K80 fit is on the pessimistic side for V100 workers.
    """
    global _DEFAULT_FIT
    if fit is None:
        if _DEFAULT_FIT is None:
            _DEFAULT_FIT = fit_staleness_multiplier()
        fit = _DEFAULT_FIT
    if not isinstance(fit, dict) or not {"slope", "reference_workers"} <= set(fit):
        raise ValueError("fit must be the dict of fit_staleness_multiplier() (with 'slope' and 'reference_workers').")
    n = np.asarray(n_workers, dtype=float)
    if (n < 1).any() or (n % 1 != 0).any() or not np.isfinite(n).all():
        raise ValueError(f"n_workers must be whole numbers ≥ 1; got {n_workers!r}.")
    lo, hi = fit.get("min_workers"), fit.get("max_workers")
    if lo is not None and hi is not None:
        from perfmodel._extrapolation import ExtrapolationWarning, how_far_outside

        out = n[(n < lo) | (n > hi)]
        if out.size:
            far = out[np.argmax(np.maximum(lo - out, out - hi))]
            warnings.warn(f"staleness_multiplier: {how_far_outside('n_workers', float(far), lo, hi, what='measured cluster size')}; "
                          f"the linear staleness model was fitted on {lo}–{hi} workers and is extrapolated beyond them.",
                          ExtrapolationWarning, stacklevel=2)
    m = 1 + float(fit["slope"]) * (n - float(fit["reference_workers"]))
    return float(m) if m.ndim == 0 else m

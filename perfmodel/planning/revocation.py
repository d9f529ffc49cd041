"""Expected revocations of transient servers, the work they cost, and the checkpoint interval that minimises it.

A transient (preemptible) server slot is a renewal process: a server lives a random lifetime ``L`` (at most 24 h —
GCE terminates preemptible VMs at 24 h, which counts as a revocation here: the slot needs a new server), is revoked,
and is replaced. Lifetimes come from the CM-DARE per-region CDFs (:func:`perfmodel.models.lifetimes_from_cdf`, hourly
bins), pooled per GPU or per region, or from any lifetime sample.

* :func:`lifetime_distribution` — the probability mass of ``L`` per bin (hourly for CM-DARE's GCE data, whose censored
  servers end at 24 h; any bin and no cap for Spot VMs, e.g. the lives of :func:`perfmodel.datasets.spot_lifetimes`).
* :func:`expected_revocations` — the renewal function ``m(t) = F(t) + Σ_k f(k) m(t − k)`` (expected revocations of
  one slot by time ``t``) times the number of slots; checked against :func:`simulate_revocations` (Monte Carlo).
* :func:`young_daly_interval` — the checkpoint interval minimising expected lost work: Young's ``√(2 C M)`` and
  Daly's higher-order ``√(2 C M)·[1 + ⅓√(C/2M) + (C/2M)/9] − C`` (for ``C < 2M``), with ``C`` the checkpoint time and
  ``M`` the mean time between failures seen by the job.
* :func:`estimate_time_after_revocation` — training time from a revocation to the end of training: a TensorFlow
  restart plus the remaining steps at the cluster's speed.
* :func:`expected_job_overhead` / :func:`simulate_job` — expected wall time of a job of ``W`` hours of work that
  checkpoints every ``τ`` and loses the work since the last checkpoint plus a restart at each failure, analytic
  (exponential failures) and Monte Carlo; :func:`optimal_interval_by_simulation` scans ``τ``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = [
    "lifetime_distribution", "expected_revocations", "simulate_revocations", "mean_time_between_failures_h",
    "young_daly_interval", "expected_job_overhead", "simulate_job", "optimal_interval_by_simulation",
    "estimate_time_after_revocation", "tf_restart_s",
]

_H = 24  # preemptible VMs live at most 24 h


def lifetime_distribution(gpu: str | None = None, region: str | None = None, *, lifetimes_h=None, revoked=None,
                          max_lifetime_h: float | None = _H, bin_h: float = 1.0) -> pd.DataFrame:
    """Probability mass of a transient server's lifetime: revoked within each bin, or terminated at the cap.

    Parameters
    ----------
    gpu, region : str, optional
        Pool the CM-DARE reconstructed lifetimes of a GPU (all its regions) or of one region (GCE preemptible VMs,
        2018–19: hourly bins, 24-hour cap).
    lifetimes_h : array-like, optional
        Your own lifetimes in hours instead (e.g. :func:`perfmodel.datasets.spot_lifetimes`).
    revoked : array-like of bool, optional
        With ``lifetimes_h``: True where the server was revoked; False where its life was cut short by the end of the
        observation (right-censored; the mass is then estimated by Kaplan–Meier). Default: revoked below the cap.
    max_lifetime_h : float or None, default 24
        The forced termination of legacy preemptible VMs (24 h on GCE): lives at the cap are terminations. ``None`` for
        Spot VMs without a cap: the mass beyond the longest observed life follows an exponential tail with the
        lives' maximum-likelihood rate (revocations / total observed hours).
    bin_h : float, default 1
        Width of the lifetime bins in hours (the CM-DARE data are hourly; spot traces resolve about 30 s).

    Returns
    -------
    DataFrame
        One row per bin: ``kind`` (``"revoked"``; the last row ``"terminated_24h"`` — the cap — when there is one),
        ``hour`` (end of the bin), ``start_h``, ``end_h``, ``lifetime_h`` (mean lifetime of the row: the bin midpoint,
        or the cap), ``probability`` (sums to 1), ``n_servers``.
    """
    if lifetimes_h is None:
        if revoked is not None or max_lifetime_h != _H or bin_h != 1.0:
            raise ValueError("The CM-DARE lifetimes are hourly and capped at 24 h: revoked, max_lifetime_h and bin_h apply to your "
                             "own lifetimes_h only.")
        from perfmodel.models.lifetimes import lifetimes_from_cdf

        lt = lifetimes_from_cdf(gpu, region)
        life, flags = lt["lifetime_h"].to_numpy(float), lt["revoked"].to_numpy(bool)
        cap = float(_H)
    else:
        life = np.asarray(lifetimes_h, dtype=float).ravel()
        if life.size == 0 or not np.isfinite(life).all() or (life < 0).any():
            raise ValueError("lifetimes_h must be finite, non-negative hours (at least one); got "
                             f"{life.size} value(s), min {np.nanmin(life) if life.size else 'n/a'}.")
        cap = np.inf if max_lifetime_h is None else float(max_lifetime_h)
        if not cap > 0:
            raise ValueError(f"max_lifetime_h must be a positive number of hours or None (no cap); got {max_lifetime_h!r}.")
        if (life > cap).any():
            raise ValueError(f"lifetimes_h above {cap:g} h: preemptible servers are terminated at {cap:g} h; clip them to {cap:g}, "
                             "or pass max_lifetime_h=None for Spot VMs without a cap.")
        if revoked is None:
            flags = life < cap
        else:
            from perfmodel.models.lifetimes import as_flags

            flags = as_flags(revoked)
            if flags.shape != life.shape:
                raise ValueError(f"revoked must have one flag per lifetime; got {flags.size} flags for {life.size} lifetimes.")
            flags = flags & (life < cap)  # a life at the cap is the forced termination
    if not (np.isfinite(bin_h) and bin_h > 0) or (np.isfinite(cap) and abs(cap / bin_h - round(cap / bin_h)) > 1e-9):
        raise ValueError(f"bin_h must be a positive number of hours that divides the cap ({cap:g} h); got {bin_h!r}.")
    n = len(life)
    censored_early = ~flags & (life < cap)
    if np.isfinite(cap) and not censored_early.any():  # every life ends in a revocation or at the cap: counts per bin
        nb = int(round(cap / bin_h))
        idx = np.clip(np.ceil(life[flags] / bin_h - 1e-9), 1, nb).astype(int)
        mass = np.bincount(idx, minlength=nb + 1)[1:].astype(float) / n
        tail = float((~flags).sum()) / n
    else:
        mass, tail, nb = _km_mass(life, flags, cap, bin_h)
    ends = np.arange(1, nb + 1) * bin_h
    kinds = ["revoked"] * nb
    out = pd.DataFrame({"kind": kinds, "hour": ends, "start_h": ends - bin_h, "end_h": ends, "lifetime_h": ends - bin_h / 2,
                        "probability": mass, "n_servers": n})
    if np.isfinite(cap):
        out = pd.concat([out, pd.DataFrame({"kind": ["terminated_24h" if cap == _H else f"terminated_{cap:g}h"], "hour": [cap],
                                            "start_h": [cap], "end_h": [cap], "lifetime_h": [cap], "probability": [tail],
                                            "n_servers": [n]})], ignore_index=True)
    if bin_h == 1.0 and np.isfinite(cap):
        out["hour"] = out["hour"].round().astype(int)
    return out


def _km_mass(life: np.ndarray, flags: np.ndarray, cap: float, bin_h: float) -> tuple[np.ndarray, float, int]:
    """Kaplan–Meier mass per bin of lives with early censoring; beyond the longest life, the cap's termination or an
    exponential tail with the lives' maximum-likelihood rate."""
    from lifelines import KaplanMeierFitter

    if not flags.any():
        raise ValueError("No revocation among the lifetimes: the revocation rate is 0 and no distribution can be estimated.")
    km = KaplanMeierFitter().fit(np.maximum(life, 1e-9), flags)
    last = float(life.max())
    nb_obs = max(int(np.ceil(last / bin_h - 1e-9)), 1)
    grid = np.arange(nb_obs + 1) * bin_h
    surv = km.survival_function_at_times(grid).to_numpy(float)
    surv[0] = 1.0
    mass = -np.diff(surv)
    left = float(surv[-1])
    if np.isfinite(cap):
        nb = int(round(cap / bin_h))
        mass = np.concatenate([mass, np.zeros(nb - nb_obs)])[:nb]
        return mass, left, nb
    rate = flags.sum() / life.sum()  # revocations per observed hour
    extra = []
    s = left
    while s > 1e-9 and len(extra) < 100000:
        nxt = s * np.exp(-rate * bin_h)
        extra.append(s - nxt)
        s = nxt
    if extra:
        extra[-1] += s
    elif left > 0:
        extra = [left]
    mass = np.concatenate([mass, extra])
    return mass, 0.0, len(mass)


def mean_time_between_failures_h(dist: pd.DataFrame) -> float:
    """Mean lifetime (h) of a :func:`lifetime_distribution` — the mean time between failures of one slot."""
    return float((dist["lifetime_h"] * dist["probability"]).sum())


_STEP = 0.05  # h: the renewal grid (3 minutes)


def _density(dist: pd.DataFrame, horizon: int) -> np.ndarray:
    """Lifetime mass on the grid: revoked mass spread evenly over its hour, termination mass at 24 h."""
    f = np.zeros(horizon + 1)
    start, end = _bounds(dist)
    pr = dist["probability"].to_numpy(float)
    keep = pr != 0
    revoked = (dist["kind"] == "revoked").to_numpy()[keep]
    a, b, pr = start[keep], end[keep], pr[keep]
    # each row's cells and masses, rows in order, added one by one (np.add.at): the sums of a loop over the rows
    lo = np.round(a / _STEP).astype(np.int64)
    hi = np.maximum(np.ceil(b / _STEP - 1e-9).astype(np.int64), lo + 1)
    first = np.where(revoked, lo + 1, np.round(b / _STEP).astype(np.int64))
    count = np.where(revoked, hi - lo, 1)
    mass = np.where(revoked, pr / np.where(revoked, hi - lo, 1), pr)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    cell = np.repeat(first, count) + offset
    val = np.repeat(mass, count)
    inside = cell <= horizon
    np.add.at(f, cell[inside], val[inside])
    return f


def _bounds(dist: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (h) of each row's lifetime bin (distributions of older versions have only the hourly ``hour``)."""
    if "start_h" in dist.columns and "end_h" in dist.columns:
        return dist["start_h"].to_numpy(float), dist["end_h"].to_numpy(float)
    h = dist["hour"].to_numpy(float)
    rev = (dist["kind"] == "revoked").to_numpy()
    return np.where(rev, h - 1, h), h


#: the renewal function of each lifetime distribution seen (:func:`_renewal`), by the distribution's content
_RENEWAL: dict = {}
_RENEWAL_MAX = 64


def _renewal(d: pd.DataFrame, horizon: int) -> np.ndarray:
    """The renewal function ``m`` of the lifetime distribution ``d`` on the grid, cells ``0 … horizon``, memoised per
    distribution (by its content) and process. Its first ``k`` cells do not depend on how far it is computed (each
    cell reads only the density and ``m`` below it, and the density of a cell does not depend on the horizon), so a
    longer computation serves every shorter horizon with the same numbers, and a longer horizon continues the cells
    already computed. A spot plan asks for one horizon per candidate."""
    import hashlib

    start, end = _bounds(d)  # what _density reads, as its key
    key = hashlib.sha1(np.concatenate([start, end, d["probability"].to_numpy(float)]).tobytes()
                       + (d["kind"] == "revoked").to_numpy().tobytes()).hexdigest()
    known = _RENEWAL.get(key)
    if known is None or len(known) <= horizon:
        f = _density(d, horizon)
        F = np.cumsum(f)
        m = np.zeros(horizon + 1)
        start = 1 if known is None else len(known)
        if known is not None:
            m[:start] = known  # the cells already computed: the same numbers, continued from there
        for i in range(start, horizon + 1):
            m[i] = F[i] + np.dot(f[1:i + 1], m[i - 1::-1])
        if len(_RENEWAL) >= _RENEWAL_MAX:
            _RENEWAL.clear()
        _RENEWAL[key] = known = m
    return known[:horizon + 1]


def expected_revocations(hours, n_servers: int = 1, *, dist: pd.DataFrame | None = None, gpu: str | None = None,
                         region: str | None = None) -> np.ndarray:
    """Expected number of revocations (including 24-h terminations) of ``n_servers`` slots within ``hours``.

    The renewal function ``m(t) = F(t) + ∫ m(t − u) dF(u)`` on a 3-minute grid, a slot's server being replaced at
    once when revoked (the replacement time is counted in the job's overhead instead). Any horizon (a slot may be
    revoked many times); vectorised over ``hours``.
    """
    if n_servers < 0:
        raise ValueError(f"n_servers must be ≥ 0; got {n_servers}.")
    t = np.atleast_1d(np.asarray(hours, dtype=float))
    if not np.isfinite(t).all() or (t < 0).any():
        raise ValueError("hours must be finite and ≥ 0.")
    d = lifetime_distribution(gpu, region) if dist is None else dist
    horizon = int(np.ceil(t.max() / _STEP)) + 1
    m = _renewal(d, horizon)
    x = t / _STEP
    lo = np.floor(x).astype(int)
    w = x - lo
    return n_servers * (m[lo] * (1 - w) + m[np.minimum(lo + 1, horizon)] * w)


def _sample_lifetimes(rng, d: pd.DataFrame, size: int) -> np.ndarray:
    p = d["probability"].to_numpy(float)
    row = rng.choice(len(d), size=size, p=p / p.sum())
    kind = d["kind"].to_numpy()[row]
    start, end = (b[row] for b in _bounds(d))
    return np.where(kind == "revoked", start + (end - start) * rng.random(size), end)


def simulate_revocations(hours: float, n_servers: int = 1, *, dist: pd.DataFrame | None = None, gpu: str | None = None,
                         region: str | None = None, trials: int = 2000, random_state: int = 0) -> np.ndarray:
    """Monte-Carlo counterpart of :func:`expected_revocations`: revocation counts of ``trials`` simulated jobs
    (lifetimes drawn from the same distribution, uniform within their hour)."""
    d = lifetime_distribution(gpu, region) if dist is None else dist
    rng = np.random.default_rng(random_state)
    counts = np.zeros(trials, dtype=int)
    for _ in range(n_servers):
        clock = np.zeros(trials)
        alive = np.ones(trials, dtype=bool)
        while alive.any():
            clock[alive] += _sample_lifetimes(rng, d, int(alive.sum()))
            hit = alive & (clock <= hours)
            counts += hit
            alive = hit
    return counts


def young_daly_interval(checkpoint_s: float, mtbf_s: float, *, method: str = "daly") -> float:
    """Checkpoint interval (s) minimising expected lost work: Young (1974) ``√(2 C M)`` or Daly (2006).

    Parameters
    ----------
    checkpoint_s : float
        Time to write one checkpoint, ``C`` (e.g. :func:`perfmodel.models.predict_checkpoint_time`).
    mtbf_s : float
        Mean time between failures seen by the job, ``M`` (for a job that any of ``n`` servers can interrupt, the
        slot MTBF / n).
    method : {'daly', 'young'}
    """
    if method not in ("daly", "young"):
        raise ValueError(f"method must be 'daly' or 'young'; got {method!r}.")
    if not (np.isfinite(checkpoint_s) and checkpoint_s > 0 and np.isfinite(mtbf_s) and mtbf_s > 0):
        raise ValueError(f"checkpoint_s and mtbf_s must be positive seconds; got {checkpoint_s!r}, {mtbf_s!r}.")
    young = float(np.sqrt(2 * checkpoint_s * mtbf_s))
    if method == "young" or checkpoint_s >= 2 * mtbf_s:
        return young if checkpoint_s < 2 * mtbf_s else float(mtbf_s)
    r = checkpoint_s / (2 * mtbf_s)
    return float(young * (1 + np.sqrt(r) / 3 + r / 9) - checkpoint_s)


def expected_job_overhead(work_s: float, interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> dict:
    """Expected wall time of ``work_s`` seconds of work checkpointed every ``interval_s`` under exponential failures.

    Each segment is ``τ`` work + ``C`` checkpoint; a failure during a segment loses it and costs ``R`` to restart.
    With rate ``λ = 1/M``, the expected time to complete a segment is ``(e^{λ(τ+C)} − 1)(1/λ + R)`` (the classical
    result for restart-from-checkpoint), so the job takes ``(W/τ)`` times that.

    Returns
    -------
    dict
        ``wall_s``, ``overhead_s`` (wall − work), ``expected_failures``.
    """
    for name, v in (("work_s", work_s), ("interval_s", interval_s), ("mtbf_s", mtbf_s)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be positive seconds; got {v!r}.")
    if checkpoint_s < 0 or restart_s < 0:
        raise ValueError("checkpoint_s and restart_s must be ≥ 0 seconds.")
    lam = 1 / mtbf_s
    seg = (np.expm1(lam * (interval_s + checkpoint_s))) * (1 / lam + restart_s)
    wall = work_s / interval_s * seg
    return {"wall_s": float(wall), "overhead_s": float(wall - work_s), "expected_failures": float(work_s / interval_s * np.expm1(lam * (interval_s + checkpoint_s)))}


def simulate_job(work_s: float, interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float, *,
                 trials: int = 4000, random_state: int = 0) -> pd.DataFrame:
    """Monte Carlo of :func:`expected_job_overhead` (exponential failures): one row per trial with ``wall_s`` and
    ``failures``."""
    rng = np.random.default_rng(random_state)
    n_seg = int(np.ceil(work_s / interval_s))
    last = work_s - (n_seg - 1) * interval_s
    walls = np.zeros(trials)
    fails = np.zeros(trials, dtype=int)
    for i in range(n_seg):
        need = (interval_s if i < n_seg - 1 else last) + checkpoint_s
        todo = np.ones(trials, dtype=bool)
        while todo.any():
            x = rng.exponential(mtbf_s, size=int(todo.sum()))
            ok = x >= need
            idx = np.flatnonzero(todo)
            walls[idx[ok]] += need
            walls[idx[~ok]] += x[~ok] + restart_s
            fails[idx[~ok]] += 1
            todo[idx[ok]] = False
    return pd.DataFrame({"trial": np.arange(trials), "wall_s": walls, "failures": fails})


def optimal_interval_by_simulation(work_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float, intervals_s,
                                   *, trials: int = 2000, random_state: int = 0) -> pd.DataFrame:
    """Mean simulated wall time for each candidate interval (same random stream per interval), with the analytic
    expectation beside it. Returns ``interval_s``, ``simulated_wall_s``, ``stderr_s``, ``expected_wall_s``."""
    rows = []
    for tau in intervals_s:
        sim = simulate_job(work_s, float(tau), checkpoint_s, restart_s, mtbf_s, trials=trials, random_state=random_state)
        rows.append(dict(interval_s=float(tau), simulated_wall_s=float(sim["wall_s"].mean()),
                         stderr_s=float(sim["wall_s"].std(ddof=1) / np.sqrt(trials)),
                         expected_wall_s=expected_job_overhead(work_s, float(tau), checkpoint_s, restart_s, mtbf_s)["wall_s"]))
    return pd.DataFrame(rows)


def tf_restart_s(start_type: str = "warm") -> float:
    """TensorFlow restart time CM-DARE reports (its overall bars, ``datasets/reference/transcribed/tf_restart.csv``):
    ``"warm"`` — a worker joining a running cluster (11.87 s); ``"cold"`` — a cluster starting from a checkpoint (55.08 s)."""
    if start_type not in ("warm", "cold"):
        raise ValueError(f"start_type must be 'warm' (a worker joins a running cluster) or 'cold' (training restarts); got {start_type!r}.")
    t = ds.load_transcribed("tf_restart")
    return float(t[(t["scope"] == "overall") & (t["start_type"] == start_type)]["time_s"].iloc[0])


def estimate_time_after_revocation(rev_step, *, total_steps: int = 64000, speed_steps_per_s: float | None = None,
                                   recovery_s: float | None = None) -> np.ndarray:
    """Training time (s) from a revocation at ``rev_step`` to the end of training: ``recovery_s`` + remaining steps /
    cluster speed.

    Parameters
    ----------
    rev_step : int or array-like of int
        Global step at which the server was revoked, in ``[0, total_steps]``.
    total_steps : int, default 64000
        Steps of the whole training (CM-DARE's ResNet-32 runs: 64K).
    speed_steps_per_s : float, optional
        Cluster speed after the restart. Default: the PS model's speed of a 4-K80 ResNet-32 cluster with 1 PS
        (:func:`perfmodel.models.predict_cluster_speed`, fitted on CM-DARE's cluster runs).
    recovery_s : float, optional
        Time to restart training. Default: the TensorFlow cold start CM-DARE reports (its overall cold-start bar,
        ``datasets/reference/transcribed/tf_restart.csv``).

    Returns
    -------
    ndarray
        Seconds, one per ``rev_step``.
    """
    steps = np.asarray(rev_step, dtype=float)
    if not np.isfinite(steps).all() or (steps < 0).any() or (steps > total_steps).any():
        raise ValueError(f"rev_step must lie in [0, total_steps={total_steps}]; got values from {np.nanmin(steps)} to {np.nanmax(steps)}.")
    if speed_steps_per_s is None:
        from perfmodel.models.cluster import predict_cluster_speed

        speed_steps_per_s = float(predict_cluster_speed("resnet-32", "K80", workers=[4], n_ps=1)["speed_steps_per_s"].iloc[0])
    if not np.isfinite(speed_steps_per_s) or speed_steps_per_s <= 0:
        raise ValueError(f"speed_steps_per_s must be a positive speed (steps/s); got {speed_steps_per_s!r}.")
    if recovery_s is None:
        recovery_s = tf_restart_s("cold")
    if not np.isfinite(recovery_s) or recovery_s < 0:
        raise ValueError(f"recovery_s must be a non-negative time (s); got {recovery_s!r}.")
    return recovery_s + (total_steps - steps) / speed_steps_per_s

"""Expected revocations of transient servers, the work they cost, and the checkpoint interval that minimises it.

A transient (preemptible) server slot is a renewal process: a server lives a random lifetime ``L`` (at most 24 h —
GCE terminates preemptible VMs at 24 h, which counts as a revocation here: the slot needs a new server), is revoked,
and is replaced. Lifetimes come from the CM-DARE per-region CDFs (:func:`perfmodel.models.lifetimes_from_cdf`, hourly
bins), pooled per GPU or per region, or from any lifetime sample.

* :func:`lifetime_distribution` — the hourly probability mass of ``L`` (bin midpoints; censored servers end at 24 h).
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


def lifetime_distribution(gpu: str | None = None, region: str | None = None, *, lifetimes_h=None) -> pd.DataFrame:
    """Probability mass of a transient server's lifetime: revoked within hour ``h``, or terminated at 24 h.

    Parameters
    ----------
    gpu, region : str, optional
        Pool the CM-DARE reconstructed lifetimes of a GPU (all its regions) or of one region.
    lifetimes_h : array-like, optional
        Your own lifetimes in hours instead (values of exactly 24 are the forced termination; none may exceed 24).

    Returns
    -------
    DataFrame
        25 rows: ``kind`` (``"revoked"`` for hours 1..24 — lifetime uniform in ``(hour − 1, hour]``, the resolution of
        the CDF arrays — and ``"terminated_24h"``), ``hour``, ``lifetime_h`` (mean lifetime of the row: ``hour − 0.5``
        or 24), ``probability`` (sums to 1), ``n_servers``.
    """
    if lifetimes_h is None:
        from perfmodel.models.lifetimes import lifetimes_from_cdf

        lt = lifetimes_from_cdf(gpu, region)
        life, revoked = lt["lifetime_h"].to_numpy(float), lt["revoked"].to_numpy(bool)
    else:
        life = np.asarray(lifetimes_h, dtype=float).ravel()
        if life.size == 0 or not np.isfinite(life).all() or (life < 0).any():
            raise ValueError("lifetimes_h must be finite, non-negative hours (at least one); got "
                             f"{life.size} value(s), min {np.nanmin(life) if life.size else 'n/a'}.")
        if (life > _H).any():
            raise ValueError(f"lifetimes_h above {_H} h: preemptible servers are terminated at 24 h; clip them to 24.")
        revoked = life < _H
    hours = np.clip(np.ceil(life[revoked]), 1, _H).astype(int)
    counts = np.bincount(hours, minlength=_H + 1)[1:].astype(float)
    n = len(life)
    return pd.DataFrame({
        "kind": ["revoked"] * _H + ["terminated_24h"], "hour": list(range(1, _H + 1)) + [_H],
        "lifetime_h": list(np.arange(1, _H + 1) - 0.5) + [float(_H)],
        "probability": list(counts / n) + [float((~revoked).sum()) / n], "n_servers": n,
    })


def mean_time_between_failures_h(dist: pd.DataFrame) -> float:
    """Mean lifetime (h) of a :func:`lifetime_distribution` — the mean time between failures of one slot."""
    return float((dist["lifetime_h"] * dist["probability"]).sum())


_STEP = 0.05  # h: the renewal grid (3 minutes)


def _density(dist: pd.DataFrame, horizon: int) -> np.ndarray:
    """Lifetime mass on the grid: revoked mass spread evenly over its hour, termination mass at 24 h."""
    f = np.zeros(horizon + 1)
    per_h = int(round(1 / _STEP))
    for kind, h, pr in dist[["kind", "hour", "probability"]].itertuples(index=False):
        if pr == 0:
            continue
        if kind == "revoked":
            idx = np.arange((h - 1) * per_h + 1, h * per_h + 1)
            idx = idx[idx <= horizon]
            f[idx] += pr / per_h
        elif _H * per_h <= horizon:
            f[_H * per_h] += pr
    return f


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
    f = _density(d, horizon)
    F = np.cumsum(f)
    m = np.zeros(horizon + 1)
    for i in range(1, horizon + 1):
        m[i] = F[i] + np.dot(f[1:i + 1], m[i - 1::-1])
    x = t / _STEP
    lo = np.floor(x).astype(int)
    w = x - lo
    return n_servers * (m[lo] * (1 - w) + m[np.minimum(lo + 1, horizon)] * w)


def _sample_lifetimes(rng, d: pd.DataFrame, size: int) -> np.ndarray:
    p = d["probability"].to_numpy(float)
    row = rng.choice(len(d), size=size, p=p / p.sum())
    kind = d["kind"].to_numpy()[row]
    hour = d["hour"].to_numpy(float)[row]
    return np.where(kind == "revoked", hour - 1 + rng.random(size), float(_H))


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

"""The ICAC'19 cost model: per-second billing; a revoked worker is billed by its uptime; parameter servers by the run.

``cost = Σ_workers price_w · t_w + Σ_PS price_PS · T`` with ``T`` the run's duration and ``t_w = T`` unless the worker
was revoked (then its uptime). Prices are ICAC'19 Table II (2019, :func:`perfmodel.datasets.load_prices`); the authors'
cost code used per-second rates for some of them (K80 transient 0.000071 $/s, K80 on-demand 0.00020083 $/s, PS
on-demand 0.0000397 $/s; the price table's ``*_usd_per_s_in_code`` columns), which reproduce the recorded costs
exactly — ``rates="code"`` (default) uses them where they exist,
``rates="table"`` uses the hourly prices / 3600 throughout.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["price_per_second", "cluster_cost_usd", "icac_run_costs"]


def _code_rate(prices: pd.DataFrame, key: str, transient: bool) -> float | None:
    """The authors' per-second rate of a server (``*_usd_per_s_in_code`` columns of the price table), or None."""
    col = "transient_usd_per_s_in_code" if transient else "on_demand_usd_per_s_in_code"
    if col not in prices.columns:
        return None
    row = prices[prices["server"] == "parameter_server"] if key == "PS" else prices[(prices["server"] == "worker") & (prices["gpu"] == key)]
    if row.empty or pd.isna(row[col].iloc[0]):
        return None
    return float(row[col].iloc[0])


def price_per_second(server: str, *, transient: bool, rates: str = "code", prices: pd.DataFrame | None = None) -> float:
    """Price in $/s of a worker GPU (``"K80"``, ``"P100"``, ``"V100"``) or of a parameter server (``"PS"``)."""
    if rates not in ("code", "table"):
        raise ValueError(f"rates must be 'code' (the authors' per-second rates) or 'table' (Table II hourly / 3600); got {rates!r}.")
    key = "PS" if str(server).upper() == "PS" else ds.canonical_gpu(server)
    p = ds.load_prices() if prices is None else prices
    if rates == "code":
        rate = _code_rate(p, key, transient)
        if rate is not None:
            return rate
    row = p[p["server"] == "parameter_server"] if key == "PS" else p[(p["server"] == "worker") & (p["gpu"] == key)]
    if row.empty:
        raise ValueError(f"No price for {key}; the price table has {sorted(p['gpu'].dropna())} workers and a parameter server.")
    col = "transient_usd_per_h" if transient else "on_demand_usd_per_h"
    return float(row[col].iloc[0]) / 3600


def cluster_cost_usd(duration_s: float, workers, *, n_ps: int = 1, ps_transient: bool = False, rates: str = "code") -> float:
    """Cost of one run.

    Parameters
    ----------
    duration_s : float
        Run duration T (s), > 0.
    workers : iterable of (gpu, transient, uptime_s or None)
        One tuple per worker; ``uptime_s`` for a revoked worker (billed by uptime), ``None`` otherwise (billed T).
    n_ps : int
        Parameter servers, billed for T.
    ps_transient : bool
        Price the PS at the transient rate (ICAC'19 Table I and the heatmaps do) instead of on-demand (Table III).
    """
    if not np.isfinite(duration_s) or duration_s <= 0:
        raise ValueError(f"duration_s must be a positive number of seconds; got {duration_s!r}.")
    if n_ps < 0:
        raise ValueError(f"n_ps must be ≥ 0; got {n_ps}.")
    total = 0.0
    for gpu, transient, uptime in workers:
        t = duration_s if uptime is None or pd.isna(uptime) else min(float(uptime), duration_s)
        if t < 0:
            raise ValueError(f"a worker uptime must be ≥ 0 s; got {uptime}.")
        total += price_per_second(gpu, transient=bool(transient), rates=rates) * t
    total += n_ps * price_per_second("PS", transient=ps_transient, rates=rates) * duration_s
    return total


_RUN_COSTS: dict = {}


def icac_run_costs(*, ps_transient: bool = False, rates: str = "code") -> pd.DataFrame:
    """Every ICAC'19 run with its cost recomputed by the cost model (``cost_usd``) next to the recorded one.

    Runs with VM data (``k80_spot``, ``k80_on_demand/2-demand``, single P100/V100) bill each worker VM (the master is
    a worker) by the run duration, or by its uptime when it was revoked; other runs bill every worker for the run
    duration. Adds ``n_revoked_workers`` (ICAC'19's r: revoked workers, masters excluded), ``master_revoked`` and
    ``cost_usd``; ``cost_usd_file`` is the recorded cost (its 2-spot values charge revoked workers fully, a data bug).

    The result is computed once per (data source, ``ps_transient``, ``rates``) and returned as a copy.
    """
    key = (str(ds.data_source()), bool(ps_transient), rates)
    if key not in _RUN_COSTS:
        _RUN_COSTS[key] = _icac_run_costs(ps_transient, rates)
    return _RUN_COSTS[key].copy()


def _icac_run_costs(ps_transient: bool, rates: str) -> pd.DataFrame:
    runs = ds.load_icac_runs()
    vms = ds.load_icac_vms()
    vm_groups = {k: g for k, g in vms.groupby(["config", "zone", "run"])}
    costs, rs, mrev = [], [], []
    for r in runs.itertuples(index=False):
        gpus = ["K80"] * r.n_k80 + ["P100"] * r.n_p100 + ["V100"] * r.n_v100
        g = vm_groups.get((r.config, r.zone, r.run)) if isinstance(r.zone, str) else None
        if g is not None and len(g) == r.n_workers:
            ups = [u if rev else None for u, rev in zip(g["uptime_s"], g["status"].eq("revoked").fillna(False))]
            n_rev = int(((g["role"] == "worker") & g["status"].eq("revoked").fillna(False)).sum())
            master = bool(((g["role"] == "master") & g["revoked"]).any())
        else:
            ups, n_rev, master = [None] * r.n_workers, 0, False
        workers = [(gpu, r.transient, u) for gpu, u in zip(gpus, ups)]
        costs.append(cluster_cost_usd(r.duration_s, workers, n_ps=r.n_ps, ps_transient=ps_transient, rates=rates))
        rs.append(n_rev)
        mrev.append(master)
    out = runs.copy()
    out["n_revoked_workers"] = rs
    out["master_revoked"] = mrev
    out["cost_usd"] = costs
    return out

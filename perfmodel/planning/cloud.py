"""Which GPUs should I rent today? Time, cost, memory and spot revocations of every candidate, on today's clouds.

:func:`plan_cloud` enumerates GPU type × GPU count × global batch × parallel strategy × spot/on-demand × price row
(provider, region, instance type) for any model :func:`perfmodel.predict_step_time` takes (zoo id, ``nn.Module``,
Hugging Face config), and predicts for each:

* **step time** — :func:`perfmodel.predict_step_time` (per-operator model; ``dp``/``fsdp``/``tp``/``pp`` over the
  GPUs; the GPU's NVLink inside one instance, a network link when the GPUs span instances);
* **steps** — ``steps`` at every batch, or, with the gradient noise scale ``b_simple`` (McCandlish et al.;
  :func:`perfmodel.planning.efficiency.steps_multiplier`), ``steps`` at ``reference_batch`` rescaled to each batch:
  ``steps · (1 + b_simple/B) / (1 + b_simple/B_ref)`` (time to the same target, not a fixed step count);
* **memory per GPU** — :func:`perfmodel.predict_memory`; a candidate that does not fit is never feasible;
* **spot revocations** — the renewal expectation (:func:`perfmodel.planning.revocation.expected_revocations`) over
  the instances, from the lives of the spot traces (:func:`perfmodel.datasets.spot_lifetimes`; Spot VMs have no 24-h
  cap: ``max_lifetime_h=None``); ``p_hold_instances``: the share of the time the provider's availability and preemption
  traces held at least as many spot instances as the row rents (:func:`perfmodel.datasets.spot_availability`; NaN for
  on-demand rows and for counts no trace asked for) — a 0.4 means capacity was there 40 % of the time; synchronous
  training progresses only while all of them are held, so the row waits ``capacity_wait_h`` = run · (1/p − 1) on top
  of its run (``wait_for_capacity=False`` to leave it out; unbilled: no instance is held while waiting);
* **restart overhead** (synchronous training: a revocation stops every GPU) — per revocation, the replacement's
  start-up (mean measured transient VM start-up, :func:`perfmodel.datasets.load_vm_startup`), reading the checkpoint
  back and the work lost since the last checkpoint (half the Young/Daly interval on average,
  :func:`perfmodel.planning.revocation.young_daly_interval`, with the job's MTBF = one instance's mean life / the
  instances); plus writing a checkpoint every interval. The checkpoint time is CM-DARE's Duration ~ Size regression
  (:class:`perfmodel.models.CheckpointTimeRegressor`) at the GPU's state size (parameters + optimizer states);
* **hardware failures** (any GPU's failure stops the synchronous job; default the Llama 3 405B run's published rate,
  :data:`HARDWARE_FAILURES_PER_GPU_H`) — spot rows add them to the revocations (the job's MTBF from both); on-demand
  rows take the cheaper of restarting from scratch and checkpointing every Young/Daly interval;
* **cost** — whole instances (``ceil(n / gpus_per_instance)``) at the row's on-demand or spot price for the run,
  restart overhead included (the wait for capacity is not billed);
* **mixed GPU types** (``mixes=``, as Srifty) — synchronous data parallel over GPUs of several types rented in one
  provider and region, the batch split by speed (:func:`perfmodel.step.hetero.predict_mixed_step_time`).

Then ``feasible`` (fits, within ``deadline_h`` and ``budget_usd``), ``pareto`` (time–cost front among the feasible
rows, :func:`perfmodel.planning.plan.pareto_front`) and ``extrapolated`` (which inputs of the row lie outside what
they were measured on). :func:`cheapest_within_deadline` and :func:`fastest_within_budget` choose, and say why.

Predictions are memoised per (model, batch, GPU count, strategy, precision, optimizer, link): a second plan of the
same model reuses them (``benchmarks/bench_plan_cloud.py``).
"""
from __future__ import annotations

import json
import math
import warnings
import weakref
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import pandas as pd

from perfmodel.datasets._cache import cached_frame

#: Training data planned when neither ``steps`` nor ``samples`` is given, by :func:`plan_cloud`, ``pm.plan`` and the
#: ``perfmodel plan`` / ``plan-cloud`` commands alike: 320,000 samples (10,000 steps of batch 32).
DEFAULT_SAMPLES = 320_000

__all__ = ["DEFAULT_SAMPLES", "plan_cloud", "cheapest_within_deadline", "fastest_within_budget", "check_gpu_prices", "read_gpu_prices", "nothing_fits",
           "clear_plan_cache",
           "CLOUD_PLAN_COLUMNS", "MULTI_INSTANCE_LINK", "HARDWARE_FAILURES_PER_GPU_H", "instance_cluster",
           "failure_overhead"]

#: Columns of :func:`plan_cloud`.
CLOUD_PLAN_COLUMNS = [
    "model", "gpu", "n_gpus", "strategy", "batch_size", "spot", "provider", "region", "instance_type", "n_instances",
    "interconnect", "step_time_s", "mfu", "steps", "compute_time_h", "memory_per_gpu_bytes", "capacity_bytes", "fits",
    "checkpoint_s", "checkpoint_interval_s", "expected_revocations", "expected_failures", "p_hold_instances",
    "restart_overhead_h", "capacity_wait_h", "time_h", "usd_per_h",
    "cost_usd", "price_date", "feasible", "pareto", "extrapolated",
]

#: Hardware failures per GPU-hour that stop a synchronous job, by default: the Llama 3 405B pre-training's 419 unexpected
#: interruptions in a 54-day snapshot on 16,384 H100 (Grattafiori et al., "The Llama 3 Herd of Models",
#: arXiv:2407.21783, §3.3.4 and Table 5; 78 % of them confirmed hardware), i.e. 419 / (54 · 24 · 16,384). A published
#: rate of one large H100 cluster, not fitted here; pass ``failures_per_gpu_h=`` for yours (0: none).
HARDWARE_FAILURES_PER_GPU_H = 419 / (54 * 24 * 16_384)
#: what :data:`HARDWARE_FAILURES_PER_GPU_H` rests on, for a plan's notes
FAILURES_SOURCE = "the Llama 3 405B run's rate (419 unexpected interruptions in 54 days on 16,384 H100)"

#: Link assumed between GPUs of different instances when ``interconnect`` is not given and no network is known for the
#: instance type (:func:`perfmodel.planning.networks.instance_network`).
MULTI_INSTANCE_LINK = "ethernet-100g"

_PRICE_NEED = ("provider", "region", "instance_type", "gpu", "gpus_per_instance", "on_demand_usd_per_h", "spot_usd_per_h")

# memo of predictions: key -> DataFrame; modules are keyed by identity and held weakly.
_MEMO: dict = {}
_MODULE_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def clear_plan_cache() -> None:
    """Forget the memoised step-time and memory predictions of :func:`plan_cloud` and the per-operator traces behind
    them (:func:`perfmodel.step.step_time.clear_trace_cache`): the next plan starts cold."""
    from perfmodel.step.kernels import clear_trace_cache

    _MEMO.clear()
    clear_trace_cache()


def _model_key(model, input_shape):
    if isinstance(model, str):
        k = ("str", model)
    elif isinstance(model, dict):
        k = ("config", json.dumps(model, sort_keys=True, default=str))
    elif type(model).__name__.endswith("Config") and hasattr(model, "to_json_string"):
        k = ("config", model.to_json_string())
    else:
        try:
            k = _MODULE_KEYS.setdefault(model, ("module", id(model), len(_MODULE_KEYS)))
        except TypeError:  # not weak-referenceable: no memo across calls
            k = ("object", id(model))
    return (k, tuple(input_shape) if input_shape is not None else None)


def _memo(key, fn):
    if key not in _MEMO:
        _MEMO[key] = fn()
    return _MEMO[key]


def check_gpu_prices(prices: pd.DataFrame | None = None) -> pd.DataFrame:
    """The price table :func:`plan_cloud` uses: :func:`perfmodel.datasets.reference.load_gpu_prices` or yours, checked.

    Raises
    ------
    ValueError
        Missing columns, a GPU count that is not a positive integer, an on-demand price that is not positive or a spot
        price that is negative.
    """
    from perfmodel import datasets as ds
    from perfmodel.datasets.reference import load_gpu_prices

    p = load_gpu_prices() if prices is None else prices.copy()
    missing = [c for c in _PRICE_NEED if c not in p.columns]
    if missing:
        raise ValueError(f"prices lacks the columns {missing}; it has {list(p.columns)}. Expected a table like "
                         f"perfmodel.datasets.reference.load_gpu_prices(): {', '.join(_PRICE_NEED)} (prices in US dollars "
                         "per instance-hour; spot empty where there is none).")
    if p.empty:
        raise ValueError(f"prices has the columns but no rows: there is nothing to rent. Expected one row per instance type "
                         f"({', '.join(_PRICE_NEED)}); add rows, or leave prices out for the shipped table.")
    n = pd.to_numeric(p["gpus_per_instance"], errors="coerce")
    if not (np.isfinite(n) & (n >= 1) & (n == np.round(n))).all():
        raise ValueError(f"prices: gpus_per_instance must be a positive integer in every row; got {p['gpus_per_instance'].tolist()}.")
    od = pd.to_numeric(p["on_demand_usd_per_h"], errors="coerce")
    spot = pd.to_numeric(p["spot_usd_per_h"], errors="coerce")
    if not (np.isfinite(od) & (od > 0)).all():
        raise ValueError(f"prices: on_demand_usd_per_h must be a positive number of dollars per hour in every row; got "
                         f"{p['on_demand_usd_per_h'].tolist()}.")
    if (spot.notna() & ~(spot > 0)).any():
        raise ValueError(f"prices: spot_usd_per_h must be positive or empty (no spot price); got {p['spot_usd_per_h'].tolist()}.")
    p["gpus_per_instance"], p["on_demand_usd_per_h"], p["spot_usd_per_h"] = n.astype(int), od.astype(float), spot.astype(float)
    p["gpu"] = [ds.canonical_gpu(g) for g in p["gpu"]]
    key = ["provider", "region", "instance_type", "gpu", "gpus_per_instance"]
    seen = p.drop_duplicates(key + ["on_demand_usd_per_h", "spot_usd_per_h"])  # exact repeats are harmless
    clash = seen[seen.duplicated(key, keep=False)]
    if not clash.empty:
        r = clash.iloc[0]
        same = clash[(clash[key] == r[key]).all(axis=1)]
        quotes = ", ".join(f"on-demand ${a:g}/h spot {'none' if pd.isna(b) else f'${b:g}/h'}"
                           for a, b in zip(same["on_demand_usd_per_h"], same["spot_usd_per_h"]))
        raise ValueError(f"prices: {r['provider']} {r['region']} {r['instance_type']} ({r['gpus_per_instance']}x{r['gpu']}) is "
                         f"listed {len(same)} times with different prices ({quotes}). Expected one price per provider, region, "
                         "instance type and GPU; keep the row you mean and remove the others.")
    p = seen
    if "price_date" not in p.columns:
        p["price_date"] = "user prices"
    return p.reset_index(drop=True)


def read_gpu_prices(path) -> pd.DataFrame:
    """A price file for :func:`plan_cloud` (``perfmodel plan-cloud --prices FILE``), read and checked
    (:func:`check_gpu_prices`).

    Raises
    ------
    FileNotFoundError
        No such file.
    perfmodel.NotADataFileError
        Not a UTF-8 CSV file (binary, UTF-16, latin-1, not CSV): the message says which and how to convert it.
    ValueError
        Missing columns, no rows, bad numbers, the same instance listed with different prices.
    """
    from perfmodel.planning.prices import read_price_csv

    return check_gpu_prices(read_price_csv(path, _PRICE_NEED))


def _price_rows(p: pd.DataFrame, gpu: str, regions) -> pd.DataFrame:
    rows = p[p["gpu"] == gpu]
    if rows.empty:
        have = "; ".join(f"{r.provider} {r.region} {r.instance_type} ({r.gpus_per_instance}x{r.gpu})" for r in p.itertuples(index=False))
        raise ValueError(f"No price for GPU {gpu}: the price table has {have or 'no rows'}. Pass prices= (Python) or --prices FILE "
                         "(command line) with a row for it: columns provider, region, instance_type, gpu, gpus_per_instance, "
                         "on_demand_usd_per_h, spot_usd_per_h (perfmodel.datasets.reference.GPU_PRICE_COLUMNS).")
    if regions is not None:
        kept = rows[rows["region"].isin(regions)]
        if kept.empty:
            raise ValueError(f"No price for GPU {gpu} in the regions {list(regions)}: its price rows are in "
                             f"{sorted(set(rows['region']))}. Pass one of those regions, leave regions out, or add price rows "
                             "for the regions you want.")
        rows = kept
    return rows


@lru_cache(maxsize=None)
@cached_frame
def _spot_distribution(provider: str) -> tuple[pd.DataFrame, str]:
    """Lifetime distribution of a spot instance (no cap) and what it was measured on (computed once per provider and
    data source; callers get copies)."""
    from perfmodel.datasets import spot_lifetimes
    from perfmodel.planning.revocation import lifetime_distribution

    if provider == "aws":
        lt, basis = spot_lifetimes(cloud="aws", gpu="V100"), "AWS V100 (p3) spot traces 2022-23"
    elif provider == "gcp":
        lt, basis = spot_lifetimes(cloud="gcp", gpu=None), "GCP c3 CPU spot traces 2022-23"
    else:
        lt, basis = spot_lifetimes(), "all spot traces 2022-23 (AWS, GCP)"
    return lifetime_distribution(lifetimes_h=lt["lifetime_h"], revoked=lt["preempted"], max_lifetime_h=None, bin_h=0.1), basis


@lru_cache(maxsize=None)
def _p_hold(provider: str, k: int) -> tuple[float, str]:
    """Share of the time at least ``k`` spot instances were held in the provider's traces (mean over the traces that
    asked for ``k`` or more), and what it was measured on; NaN when no trace asked for that many."""
    from perfmodel.datasets import spot_availability

    a = spot_availability()
    a = a[(a["n"] == k) & ((a["cloud"] == provider) if provider in ("aws", "gcp") else True)]
    if a.empty:
        return float("nan"), f"no spot trace of {provider} asked for {k} instances: holding them is not estimated"
    kinds = ", ".join(sorted(set(a["instance_type"])))
    whose = provider if provider in ("aws", "gcp") else "AWS and GCP"
    return float(a["p_at_least_n"].mean()), f"P(holding {k} spot instances) from {len(a)} {whose} trace(s) of {kinds}"


@lru_cache(maxsize=None)
def _checkpoint_regressor():
    from perfmodel.datasets import load_checkpoint_samples
    from perfmodel.models.checkpoint import CheckpointTimeRegressor

    train = load_checkpoint_samples("whole")
    return (CheckpointTimeRegressor(method="linear", features="size").fit(train, train["duration_s"]),
            float(train["checkpoint_mb"].min()), float(train["checkpoint_mb"].max()))


#: checkpoint seconds by size (MiB), as the regressor of :func:`_checkpoint_regressor` predicts them.
_CHECKPOINT_MEMO: dict = {}


def _checkpoint_s(state_bytes: float, far: list | None = None) -> tuple[float, str]:
    """Seconds to write a checkpoint of ``state_bytes``, and a note when that extrapolates the fit. The regressor's
    own extrapolation warning is not repeated per candidate: the size goes to ``far`` (one summary per plan)."""
    from perfmodel._extrapolation import ExtrapolationWarning

    est, min_mb, max_mb = _checkpoint_regressor()
    mb = state_bytes / 2**20
    t = _CHECKPOINT_MEMO.get(mb)
    if t is None:  # every candidate of one model checkpoints the same state: predicted once
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = _CHECKPOINT_MEMO[mb] = float(est.predict(pd.DataFrame({"checkpoint_mb": [mb]}))[0])
        for w in caught:
            if not issubclass(w.category, ExtrapolationWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    outside = not min_mb <= mb <= max_mb
    if outside and far is not None:
        far.append(mb)
    note = (f"checkpoint time: CM-DARE's Duration ~ Size fit (TensorFlow to remote storage, {min_mb:.3g}-{max_mb:.0f} MB) at "
            f"{mb:.3g} MB" if outside else "")
    return max(t, 1e-3), note


def _as_tuple(v, name):
    out = [v] if isinstance(v, (str, bool, int, float, np.integer, np.floating, np.bool_)) else list(v)
    if not out:
        raise ValueError(f"{name} must name at least one option.")
    return out


def _positive_ints(values, name: str, what: str) -> list[int]:
    """``values`` as ints, refusing rather than truncating: 4 and 4.0 are 4; 2.5, "4", True and 0 are errors."""
    out = []
    for v in _as_tuple(values, name):
        ok = not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.integer, np.floating))
        if ok and isinstance(v, (float, np.floating)):
            ok = math.isfinite(v) and float(v).is_integer()
        if not ok or int(v) < 1:
            raise ValueError(f"{name} must be positive whole numbers ({what}); got {v!r} in {list(_as_tuple(values, name))}. "
                             f"Pass integers such as {max(1, int(v)) if ok else 1} (fractions are not rounded for you).")
        out.append(int(v))
    return out


def _steps(batch: int, steps, b_simple, reference_batch, samples=None) -> float:
    if samples is not None:  # a fixed amount of data: a bigger batch takes fewer steps
        return float(math.ceil(samples / batch))
    if b_simple is None:
        return float(steps)
    from perfmodel.planning.efficiency import steps_multiplier

    return float(steps * steps_multiplier(batch, b_simple) / steps_multiplier(reference_batch, b_simple))


class _Rental(NamedTuple):
    """What a candidate rents: instances of one price row (or of several, for a mix), prices for all of them."""
    provider: str
    region: str
    instance_type: str
    n_instances: int
    on_demand_usd_per_h: float  # all the instances together
    spot_usd_per_h: float  # NaN where a row has no spot price
    price_date: str
    pools: tuple  # instances asked of each spot pool (one per instance type)


def _gpu_notes(spec, prec: str) -> list[str]:
    """How far the GPU lies outside what the kernel efficiencies were learned on at ``prec`` (the phrases of the step
    predictor's extrapolation warning: at half precision its GEMM peak against the GPUs the half-precision GEMM model
    was fitted on)."""
    from perfmodel.step import kernels as kn

    return kn._extrapolation_notes(spec, prec)


def _p_hold_pools(provider: str, pools: tuple) -> tuple[float, str]:
    """P(holding every pool's instances at once): the product over the pools (independent pools assumed)."""
    ps, notes = [], []
    for k in pools:
        p, note = _p_hold(provider, int(k))
        ps.append(p)
        notes.append(note)
    if len(pools) > 1:
        notes.append("pools of different instance types held independently (product)")
    return float(np.prod(ps)), "; ".join(notes)


def _on_demand_failures(compute_s: float, rate_per_s: float, startup_s: float, checkpoint) -> dict:
    """Hardware failures of an on-demand run of ``compute_s`` seconds whose GPUs fail at ``rate_per_s`` together (a
    failure stops the synchronous job; exponential failures): the cheaper of two policies, each in expected seconds
    added to the run. Without checkpoints a failure restarts the run after ``startup_s``: ``(1/λ + R)(e^{λT} − 1) − T``
    (the restart-from-scratch expectation). With checkpoints every Young/Daly interval ``τ`` (``checkpoint()``: its
    seconds and note): each failure costs ``R + C + τ/2``, and ``T/τ`` checkpoints of ``C`` are written."""
    from perfmodel.planning.revocation import young_daly_interval

    n_fail = rate_per_s * compute_s
    none = dict(failures=n_fail, over_s=0.0, ck=np.nan, tau=np.nan, note="", checkpointed=False)
    if n_fail <= 0:
        return none
    lam_t = min(n_fail, 700.0)  # e^700 is finite: beyond it checkpointing wins anyway
    none["over_s"] = (1 / rate_per_s + startup_s) * math.expm1(lam_t) - compute_s
    ck, note = checkpoint()
    tau = young_daly_interval(ck, 1 / rate_per_s)
    over = n_fail * (startup_s + ck + tau / 2) + compute_s / tau * ck
    if over < none["over_s"]:
        return dict(failures=n_fail, over_s=over, ck=ck, tau=tau, note=note, checkpointed=True)
    return none


def failure_overhead(compute_h: float, n_gpus: int, *, checkpoint_s: float, startup_s: float,
                     failures_per_gpu_h: float = HARDWARE_FAILURES_PER_GPU_H) -> dict:
    """What hardware failures add to an on-demand synchronous run of ``compute_h`` hours on ``n_gpus`` GPUs, as
    :func:`plan_cloud` prices it: the cheaper of restarting from scratch after each failure and checkpointing every
    Young/Daly interval (``checkpoint_s`` to write or read one, ``startup_s`` to replace the failed machine).

    Returns
    -------
    dict
        ``failures`` (expected), ``overhead_h``, ``checkpointed`` (which policy), ``checkpoint_interval_s`` (NaN
        without checkpoints) and ``effective_pct`` (the share of the run's wall time spent on its compute).
    """
    for name, v in (("compute_h", compute_h), ("checkpoint_s", checkpoint_s), ("startup_s", startup_s),
                    ("failures_per_gpu_h", failures_per_gpu_h)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"failure_overhead: {name} must be a finite number, 0 or more; got {v!r}.")
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"failure_overhead: n_gpus must be a positive whole number of GPUs; got {n_gpus!r}.")
    t = float(compute_h) * 3600
    f = _on_demand_failures(t, failures_per_gpu_h * int(n_gpus) / 3600, float(startup_s),
                            lambda: (max(float(checkpoint_s), 1e-3), ""))
    return dict(failures=f["failures"], overhead_h=f["over_s"] / 3600, checkpointed=f["checkpointed"],
                checkpoint_interval_s=f["tau"], effective_pct=100 * t / (t + f["over_s"]) if t > 0 else 100.0)


def _add_rows(cand: dict, rentals, *, spots, wait_for_capacity: bool, checkpoint_s, skipped: list, out: list,
              ck_far: list, failures_per_gpu_h: float = 0.0) -> None:
    """Rows of one candidate (model, GPUs, strategy, batch: step time, memory) for each rental and spot/on-demand."""
    from perfmodel.planning.plan import vm_startup_s
    from perfmodel.planning.revocation import expected_revocations, mean_time_between_failures_h, young_daly_interval

    compute_s = cand["steps"] * cand["step_time_s"]
    fail_rate = failures_per_gpu_h * cand["n_gpus"] / 3600  # hardware failures of the job, per second
    far_here: list = []  # the checkpoint size when it extrapolates the fit: warned about only where a row uses it

    def checkpoint():
        if checkpoint_s is not None:
            return float(checkpoint_s), ""
        return _checkpoint_s(cand["state_bytes"], far_here)

    if any(spots):  # spot rows always checkpoint (on demand only: a checkpoint is timed where failures call for one)
        ck, ck_note = checkpoint()
        ck_far.extend(far_here)
    for r in rentals:
        k = r.n_instances
        for sp in spots:
            usd_h = r.spot_usd_per_h if sp else r.on_demand_usd_per_h
            if not np.isfinite(usd_h):
                skipped.append(dict(n_gpus=cand["n_gpus"], strategy=cand["strategy"], batch_size=cand["batch_size"],
                                    reason=f"no spot price for {r.provider} {r.region} {r.instance_type}"))
                continue
            notes = list(cand["notes"])
            wait_s = 0.0
            if sp:
                dist, basis = _spot_distribution(r.provider)
                # the job stops at a revocation of any of its k instances or a hardware failure of any of its GPUs
                mtbf_s = 1 / (k / (mean_time_between_failures_h(dist) * 3600) + fail_rate)
                tau = young_daly_interval(ck, mtbf_s)
                rev = float(k * expected_revocations(compute_s / 3600, 1, dist=dist)[0])
                fails = fail_rate * compute_s
                restart = vm_startup_s(cand["startup_gpu"], True) + ck + tau / 2
                over_s = (rev + fails) * restart + compute_s / tau * ck
                row_ck = ck
                notes.append(f"spot lifetimes of {basis}")
                p_hold, hold_note = _p_hold_pools(r.provider, r.pools)
                notes.append(hold_note)
                if wait_for_capacity and np.isfinite(p_hold):
                    # synchronous training progresses only while every instance is held: run time / P(held)
                    wait_s = math.inf if p_hold <= 0 else (compute_s + over_s) * (1 / p_hold - 1)
                    if p_hold <= 0:
                        notes.append(f"the traces never held {k} such instances at once: the wait is unbounded")
                notes.append("replacement start-up: CM-DARE's GCE transient VMs (2019)")
                if ck_note:
                    notes.append(ck_note)
            else:
                rev, p_hold = 0.0, np.nan
                f = _on_demand_failures(compute_s, fail_rate, vm_startup_s(cand["startup_gpu"], False), checkpoint)
                fails, over_s, row_ck, tau = f["failures"], f["over_s"], f["ck"], f["tau"]
                if f["checkpointed"]:
                    ck_far.extend(far_here)
                    if f["note"]:
                        notes.append(f["note"])
            if fails and over_s >= 0.01 * compute_s:  # where failures cost a percent of the run: say what they rest on
                notes.append(f"hardware failures: {failures_per_gpu_h:.3g} per GPU-hour ({fails:.2g} expected), " +
                             (FAILURES_SOURCE if failures_per_gpu_h == HARDWARE_FAILURES_PER_GPU_H else "the rate given"))
            run_h = (compute_s + over_s) / 3600
            out.append(dict(model=cand["model"], gpu=cand["gpu"], n_gpus=cand["n_gpus"], strategy=cand["strategy"],
                            batch_size=cand["batch_size"], spot=sp, provider=r.provider, region=r.region,
                            instance_type=r.instance_type, n_instances=k, interconnect=cand["interconnect"],
                            step_time_s=cand["step_time_s"], mfu=cand.get("mfu", np.nan), steps=cand["steps"],
                            compute_time_h=compute_s / 3600,
                            memory_per_gpu_bytes=cand["memory_per_gpu_bytes"], capacity_bytes=cand["capacity_bytes"],
                            fits=cand["fits"], checkpoint_s=row_ck, checkpoint_interval_s=tau,
                            expected_revocations=rev, expected_failures=fails, p_hold_instances=p_hold,
                            restart_overhead_h=over_s / 3600,
                            capacity_wait_h=wait_s / 3600, time_h=run_h + wait_s / 3600, usd_per_h=usd_h,
                            cost_usd=usd_h * run_h, price_date=r.price_date, extrapolated="; ".join(notes) or "none"))


def _instance_rentals(n: int, price_rows) -> list:
    """One rental per price row: as many of its instances as ``n`` GPUs need, at their prices."""
    out = []
    for r in price_rows:
        k = math.ceil(n / int(r.gpus_per_instance))
        out.append(_Rental(str(r.provider), str(r.region), str(r.instance_type), k, k * float(r.on_demand_usd_per_h),
                           k * float(r.spot_usd_per_h), str(getattr(r, "price_date", "")), (k,)))
    return out


def _mixed_candidate(model, mix: dict, B: int, *, input_shape, input_dtype, precision, optimizer, balance, interconnect) -> dict:
    """Step time (:func:`perfmodel.step.hetero.predict_mixed_step_time`) and memory of a mix at global batch ``B``."""
    from perfmodel import datasets as ds
    from perfmodel.step.hetero import MIXED_DEFAULT_LINK, predict_mixed_step_time
    from perfmodel.planning.memory import predict_memory

    st = predict_mixed_step_time(model, mix, batch_size=B, input_shape=input_shape, input_dtype=input_dtype,
                                 precision=precision, optimizer=optimizer, balance=balance, interconnect=interconnect).iloc[0]
    local = dict((g, int(b)) for g, b in (part.split(":") for part in st["local_batches"].split(",")))
    mems = []
    for g, b in local.items():
        m = predict_memory(model, g, batch_size=b, precision=precision, optimizer=optimizer, input_shape=input_shape,
                           input_dtype=input_dtype).iloc[0]
        mems.append(m)
    tight = max(mems, key=lambda m: m["total_bytes"] / m["capacity_bytes"])
    notes = [n for g in mix for n in _gpu_notes(ds.gpu_spec(g), precision)]
    notes = list(dict.fromkeys(notes))
    notes.append(f"mixed GPU types: batch split {balance} ({st['local_batches']}), gradients weighted by local batch")
    if interconnect is None:
        notes.append(f"link between instances assumed {MIXED_DEFAULT_LINK} (pass interconnect=)")
    return dict(model=str(st["model"]), gpu=st["mix"], n_gpus=int(st["n_gpus"]), strategy="dp-mixed", batch_size=B,
                interconnect=str(st["interconnect"]), step_time_s=float(st["step_time_s"]),
                memory_per_gpu_bytes=float(tight["total_bytes"]), capacity_bytes=float(tight["capacity_bytes"]),
                fits=all(bool(m["fits"]) for m in mems), state_bytes=float(tight["params_bytes"] + tight["optimizer_bytes"]),
                startup_gpu=str(st["slowest_gpu"]), notes=notes)


def _mixed_rentals(mix: dict, rows_by_gpu: dict) -> list:
    """Every way of renting the mix from one provider and region: one price row per GPU type."""
    import itertools

    by_place: dict = {}
    for g in mix:
        for r in rows_by_gpu[g].itertuples(index=False):
            by_place.setdefault((str(r.provider), str(r.region)), {}).setdefault(g, []).append(r)
    out = []
    for (provider, region), per in sorted(by_place.items()):
        if set(per) != set(mix):
            continue
        for combo in itertools.product(*(per[g] for g in mix)):
            ks = [math.ceil(mix[g] / int(r.gpus_per_instance)) for g, r in zip(mix, combo)]
            od = sum(k * float(r.on_demand_usd_per_h) for k, r in zip(ks, combo))
            spot = sum(k * float(r.spot_usd_per_h) for k, r in zip(ks, combo))
            out.append(_Rental(provider, region, "+".join(f"{k}x{r.instance_type}" for k, r in zip(ks, combo)), sum(ks), od,
                               spot, "; ".join(dict.fromkeys(str(getattr(r, "price_date", "")) for r in combo)), tuple(ks)))
    return out



def _with_recipe(run: tuple, recipe: str | None) -> tuple:
    """``(workload, clusters, parallelism)`` of :func:`perfmodel._run.keyword_run` with the workload's FP8 recipe set (None:
    the kernel family's default, as the keyword faces run it); the recipe checked against the GPUs where the step
    model reads it."""
    from perfmodel._run import trusted_replace

    w, cs, p = run
    return (w if recipe is None else trusted_replace(w, fp8_recipe=recipe)), cs, p


def _gpus_running(recipe: str, gpus: list, skipped: list) -> list:
    """The GPUs of ``gpus`` that can run the FP8 ``recipe`` (:func:`perfmodel.step.step_time.check_recipe_on`); each
    other one goes to ``skipped`` with the reason (every count, strategy and batch of it). None can: the first GPU's
    refusal is raised."""
    from types import SimpleNamespace

    from perfmodel.datasets import UnsupportedPrecisionError
    from perfmodel.step.step_time import check_recipe_on

    able, refused = [], None
    for g in gpus:
        try:
            check_recipe_on(recipe, (SimpleNamespace(gpu=g),))
            able.append(g)
        except UnsupportedPrecisionError as exc:
            refused = refused or exc
            skipped.append(dict(n_gpus=None, strategy=f"every candidate on {g}", batch_size=None, reason=str(exc)))
    if not able:
        raise refused
    return able


#: the ``strategies`` entry of :func:`plan_cloud` that searches every layout of a run (:func:`search_layouts`)
SEARCH = "search"


def _layout_label(row) -> str:
    """A searched layout as the ``strategy`` column of :func:`plan_cloud` says it: degrees, then how it runs."""
    how = [str(row["framework"]), f"{int(row['micro_batches'])} micro-batches"]
    if int(row["virtual_stages"]) > 1:
        how.append(f"interleaved x{int(row['virtual_stages'])}")
    if str(row["pipeline_layers"]):
        how.append(f"layers {row['pipeline_layers']}")
    how.append("no recomputation" if str(row["activation_checkpointing"]) == "False"
               else f"checkpointing {row['activation_checkpointing']}")
    flat_fsdp = row["framework"] == "pytorch" and "pp" not in str(row["strategy"])
    if bool(row["shard_gradients"]) and not flat_fsdp:  # flat FSDP always shards them: nothing to say
        how.append("gradients sharded (ZeRO-2)")
    if bool(row["async_tp"]):
        how.append("async TP")
    return f"{row['strategy']} ({', '.join(how)})"


def _instance_link(row, interconnect, spans: bool) -> tuple:
    """How a price row's instances are joined: ``(link, gpus_per_node, nics_per_node, note)``. The caller's
    ``interconnect`` when given (a link per level: each instance a node of its GPUs); inside one instance the GPU's own
    link; across instances the instance type's network (the row's ``network_gbit_per_s`` or the shipped table,
    :func:`perfmodel.planning.networks.instance_network`), else :data:`MULTI_INSTANCE_LINK`, said in the note."""
    from perfmodel.planning.networks import instance_network

    per = int(row.gpus_per_instance)
    if interconnect is not None:
        return interconnect, (per if isinstance(interconnect, dict) else None), None, None
    if not spans:
        return None, None, None, None
    net = instance_network(str(row.instance_type), per, network_gbit_per_s=getattr(row, "network_gbit_per_s", None),
                           gpudirect_rdma=getattr(row, "gpudirect_rdma", None))
    if net is None:
        return MULTI_INSTANCE_LINK, None, None, (f"link between instances assumed {MULTI_INSTANCE_LINK}: no network known for "
                                                 f"{row.instance_type} (pass interconnect=, or network_gbit_per_s in prices)")
    return net.links(), per, net.nics_per_node, net.describe()


def _searched_candidate(model, gpu: str, n: int, B: int, *, gpus_per_node: int, link, input_shape, input_dtype,
                        precision: str, optimizer, stack, recipe, frameworks, nics_per_node=None) -> dict:
    """The fastest layout of :func:`perfmodel.planning.search_layouts` that fits on ``n`` ``gpu`` in nodes (instances)
    of ``gpus_per_node``, predicted: the fields :func:`plan_cloud` needs of a candidate. A ``StrategyError`` naming
    the smallest memory when no layout fits."""
    from perfmodel._run import Cluster
    from perfmodel._workload import Workload
    from perfmodel.planning.layouts import search_layouts
    from perfmodel.step.prediction import predict
    from perfmodel.step.strategy import StrategyError

    given = dict(input_shape=input_shape, input_dtype=input_dtype, stack=stack, fp8_recipe=recipe)
    w = Workload(model, batch_size=B, precision=precision, optimizer=optimizer,
                 **{k: v for k, v in given.items() if v is not None})
    c = Cluster(gpu, n_gpus=n, gpus_per_node=min(n, gpus_per_node), interconnect=link, nics_per_node=nics_per_node)
    frame = search_layouts(w, c, frameworks=frameworks)
    fit = frame[frame["fits"].astype(bool)]
    if fit.empty:
        least = frame.loc[frame["memory_per_gpu_bytes"].idxmin()]
        raise StrategyError(f"no layout of the {len(frame)} searched fits: the smallest, {least['strategy']} "
                            f"({least['framework']}, checkpointing {least['activation_checkpointing']}), needs "
                            f"{least['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU of {least['capacity_bytes'] / 2**30:.1f}. "
                            "Plan more GPUs or a GPU with more memory.")
    best = fit.iloc[0]
    pred = predict(w, c, best["parallelism"])
    m = pred.memory
    row = pred.to_frame().iloc[0]
    return dict(model=str(row.get("model", "")), step_time_s=float(pred.step_time_s), mfu=float(pred.mfu),
                strategy=_layout_label(best),
                interconnect=str(row.get("interconnect", "none")), memory_per_gpu_bytes=float(m["total_bytes"]),
                capacity_bytes=float(m["capacity_bytes"]), fits=bool(pred.fits),
                state_bytes=float(m["params_bytes"] + m["optimizer_bytes"]))


def _plan_searched(model, mkey, n: int, B: int, groups: dict, common: dict, specs: dict, nsteps_of: dict,
                   skipped: list, run: dict, interconnect) -> None:
    """:func:`plan_cloud`'s rows of ``strategies="search"`` at ``n`` GPUs and batch ``B``: for each GPU and instance
    size of the price rows (``groups``: (link key, spans instances, node size, NICs, note) -> (link, GPU -> price
    rows)), the fastest that fits (:func:`_searched_candidate`) with each rental; what cannot be searched or fits
    nowhere goes to ``skipped``."""
    from perfmodel.step.parallel import shared_rank_work
    from perfmodel.step.strategy import StrategyError

    with shared_rank_work():  # every GPU's search of these n GPUs tries the same layouts: each rank's work built once
        _plan_searched_groups(model, mkey, n, B, groups, common, specs, nsteps_of, skipped, run, interconnect)


def _plan_searched_groups(model, mkey, n: int, B: int, groups: dict, common: dict, specs: dict, nsteps_of: dict,
                          skipped: list, run: dict, interconnect) -> None:
    """:func:`_plan_searched`'s loop over the price rows' groups."""
    from perfmodel.step.strategy import StrategyError

    for (_, spans, _, nics, note), (group_link, by_gpu) in groups.items():
        for g, price_rows in by_gpu.items():
            by_size: dict = {}
            for r in price_rows:
                by_size.setdefault(int(r.gpus_per_instance), []).append(r)
            for per, rows_ in by_size.items():
                # inside an instance the GPU's own link; between instances the instance's network (or the one assumed)
                link = group_link
                if isinstance(link, str) and interconnect is None:  # the assumed link joins instances only
                    link = {"inter": link}
                key = ("search", mkey, g, n, B, per, repr(link), nics, *(repr(v) for v in run.values()))
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        found = _memo(key, lambda: _searched_candidate(model, g, n, B, gpus_per_node=per, link=link,
                                                                       nics_per_node=nics, **run))
                except (StrategyError, ValueError) as exc:
                    why = (f"plan_cloud(strategies='search') on {n} x {g} in instances of {per}: {exc}" +
                           ("" if isinstance(exc, StrategyError) else
                            " Or name the strategies to plan (e.g. strategies=('dp', 'fsdp'))."))
                    skipped.append(dict(n_gpus=n, strategy=SEARCH, batch_size=B, reason=why,
                                        error=(StrategyError if isinstance(exc, StrategyError) else ValueError)(why)))
                    continue
                notes = _gpu_notes(specs[g], run["precision"]) + ([note] if note else [])
                cand = dict(found, gpu=g, n_gpus=n, batch_size=B, steps=nsteps_of[B], startup_gpu=g, notes=notes)
                _add_rows(cand, _instance_rentals(n, rows_), **common)


def plan_cloud(model, *, gpus=None, n_gpus=(1, 2, 4, 8), batch_sizes=(8, 16, 32), strategies=("dp", "fsdp", "tp", "pp"),
               spot=(True, False), regions=None, prices: pd.DataFrame | None = None, steps: int | None = None,
               samples: int | None = None,
               b_simple: float | None = None, reference_batch: int | None = None, deadline_h: float | None = None,
               budget_usd: float | None = None, input_shape=None, input_dtype=None, precision: str = "bf16",
               optimizer: str = "adam", micro_batches: int | None = None, interconnect=None,
               checkpoint_s: float | None = None, mixes=(), mix_balance: str = "speed",
               wait_for_capacity: bool = True, progress: bool = False, framework: str | None = None,
               stack: str | None = None, fp8_recipe: str | None = None,
               failures_per_gpu_h: float = HARDWARE_FAILURES_PER_GPU_H) -> pd.DataFrame:
    """Candidate GPU rentals with predicted time, cost, memory per GPU, spot revocations, feasibility and Pareto front.

    Parameters
    ----------
    model : str, torch.nn.Module, dict or transformers.PretrainedConfig
        As for :func:`perfmodel.predict_step_time`.
    gpus : sequence of str, optional
        GPU types; default every GPU of the price table. Each needs a row in ``prices``.
    n_gpus : sequence of int
        GPU counts (one instance holds ``gpus_per_instance`` of them; more span instances).
    batch_sizes : sequence of int
        Global batch sizes (samples per step over all GPUs).
    strategies : sequence of str
        Parallel strategies for ``n_gpus > 1`` (one GPU: ``"single"``): ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` or
        combinations with degrees (``"dp2-tp4"``; one whose degrees do not multiply to a count is skipped there). Combinations a strategy cannot split (heads
        not divisible, a batch that does not split) are left out and listed in ``attrs["skipped"]``; when none is left,
        the first :class:`perfmodel.step.parallel.StrategyError` is raised. ``"search"`` (alone or beside others;
        ``--strategies search`` on the command line) searches every layout of a transformer language model instead
        (:func:`perfmodel.planning.search_layouts`: FSDP and Megatron-style data x context x tensor x pipeline
        parallelism, interleaved chunks, the least recomputation and the gradient sharding that fit) on each GPU,
        count and instance size, in nodes of the instance's GPUs, and plans the fastest that fits, its layout in the
        ``strategy`` column (``"dp2-cp2-tp4-pp4 (megatron, 64 micro-batches, interleaved x5, no recomputation)"``);
        ``micro_batches`` does not apply to it. Where no layout fits, the smallest is named in ``attrs["skipped"]``.
    spot : bool or sequence of bool
        Spot (revocable) and/or on-demand instances; spot only where the price row has a spot price.
    regions : sequence of str, optional
        Keep the price rows of these regions.
    prices : DataFrame, optional
        Your own table with the columns of :func:`perfmodel.datasets.reference.load_gpu_prices` (US dollars per
        instance-hour); default the shipped table. Optional columns ``network_gbit_per_s`` (the instance's network
        bandwidth between instances, Gb/s) and ``gpudirect_rdma`` (true: EFA, InfiniBand or RoCE with GPUDirect RDMA)
        give a row's network; a row without them takes its instance type's from the shipped table
        (:func:`perfmodel.datasets.reference.load_instance_networks`).
    steps : int, optional
        Training steps: the same count at every batch size (so batch 32 processes 4x the data of batch 8: compare batch
        sizes with ``samples`` or ``b_simple`` instead; a ``UserWarning`` says so when several batch sizes are planned),
        or the count at ``reference_batch`` when ``b_simple`` is given. Give ``steps`` or ``samples``; neither plans
        :data:`DEFAULT_SAMPLES` samples, as ``perfmodel plan-cloud`` does (the ``steps`` column shows the count).
    samples : int, optional
        Total training data in samples (sequences for a language model; tokens / sequence length): every batch size
        processes the same data, in ``ceil(samples / batch)`` steps (the ``steps`` column). Not with ``b_simple``.
    b_simple, reference_batch : float, int, optional
        Gradient noise scale (:func:`perfmodel.planning.efficiency.gradient_noise_scale`, ``perfmodel measure noise``)
        and the batch ``steps`` were counted at: the plan then needs the same progress at every batch.
    deadline_h, budget_usd : float, optional
        Constraints for ``feasible``.
    input_shape, input_dtype, precision, optimizer, micro_batches, interconnect
        As for :func:`perfmodel.predict_step_time` (``interconnect`` applies to every candidate; a link per level,
        ``{"intra": "nvlink", "inter": "infiniband-ndr"}``, takes each instance as a node of its GPUs). Default: the
        GPU's own link (NVLink or PCIe) inside an instance, and across instances the instance type's network
        (:mod:`perfmodel.planning.networks`: the price row's ``network_gbit_per_s`` or the shipped table's, split over
        the instance's GPUs as rails, at the NDR fit's NCCL efficiency with GPUDirect RDMA and an assumed one
        without); an instance type with no known network is joined by :data:`MULTI_INSTANCE_LINK`, said in the
        row's ``extrapolated`` column.
    checkpoint_s : float, optional
        Seconds to write (and to read back) one checkpoint; default predicted from the GPU's state size.
    failures_per_gpu_h : float, default :data:`HARDWARE_FAILURES_PER_GPU_H`
        Hardware failures per GPU-hour, each stopping the synchronous job (default the Llama 3 405B run's rate on
        16,384 H100: one failure every ~3 hours there, every ~49 hours on 1,024 GPUs). Spot rows add them to their
        revocations; on-demand rows take the cheaper of restarting from scratch and checkpointing every Young/Daly
        interval (``expected_failures``, ``restart_overhead_h``; ``checkpoint_s`` where they checkpoint). 0: none.
    mixes : sequence of dict or str, optional
        Mixes of GPU types to plan as well (Srifty's heterogeneous VM sets), e.g. ``[{"H100": 2, "L4": 4}, "4xA100+4xL4"]``
        (:func:`perfmodel.step.hetero.parse_mix`): synchronous data parallel over all of them
        (:func:`perfmodel.step.hetero.predict_mixed_step_time`), rented from one provider and region (every
        combination of the types' price rows there), strategy ``"dp-mixed"``; memory must fit on every type at its
        local batch. Batches smaller than the mix's GPU count are skipped.
    mix_balance : {"speed", "equal"}
        How a mix splits the global batch (:func:`perfmodel.step.hetero.predict_mixed_step_time`).
    wait_for_capacity : bool
        Spot rows: lengthen the time by the wait for capacity, ``run / p_hold_instances − run`` (synchronous training
        progresses only while all the instances are held; the traces' share of time at least that many were held),
        where the traces asked for that many instances. The wait is not billed. ``False``: report
        ``p_hold_instances`` only.
    progress : bool
        A tqdm progress bar of the (GPU count, strategy, batch) combinations on stderr (the first prediction of a
        process fits the operator model: minutes).
    framework : {"pytorch", "megatron"}, optional
        How every candidate's layout runs (:func:`perfmodel.step.strategy.resolve_execution`): PyTorch DDP / FSDP, or
        Megatron-Core (the distributed optimizer, sequence parallelism; ``"fsdp"`` candidates are then skipped with the
        reason, and combinations such as ``"dp2-tp4-pp2"`` may be listed in ``strategies``). None (default): PyTorch
        for the strategies named, both for ``"search"`` (the framework given: that one only).
    stack : {"eager", "compile", "te"}, optional
        The kernel family every candidate runs (as for :func:`perfmodel.predict_step_time`; default eager PyTorch):
        ``"compile"`` fuses the memory-bound chains as torch.compile does, ``"te"`` runs Transformer Engine's fused
        modules; the memory follows it. Mixes (``mixes=``) are predicted with eager kernels only and are refused with
        another stack.
    fp8_recipe : {"tensorwise", "rowwise", "delayed", "current", "mxfp8", "blockwise", "nvfp4"}, optional
        At ``precision="fp8"``, the scaling recipe every candidate runs (:class:`perfmodel.Workload`'s field; default the
        kernel family's own): each candidate's step and memory are :func:`perfmodel.predict`'s for a Workload that says
        it. The GPUs that cannot run it (MXFP8 or NVFP4 without block-scaled tensor cores, block scaling before Hopper)
        are left out and listed in
        ``attrs["skipped"]`` with the reason (when none can, the refusal is raised); mixes (``mixes=``) take no
        recipe.

    Returns
    -------
    DataFrame
        One row per candidate, :data:`CLOUD_PLAN_COLUMNS`, sorted by time then cost; ``mfu`` is the step's model FLOPs
        utilisation (its FLOPs per GPU over the step time at the GPU's datasheet peak of the precision, BF16's for
        FP8, as :attr:`perfmodel.Prediction.mfu`; NaN for mixes of GPU types), a check of the plan against what large runs
        reach; ``attrs`` hold ``skipped`` (candidates left out: a list of dicts ``n_gpus``, ``strategy``,
        ``batch_size``, ``reason``), ``deadline_h``, ``budget_usd``.

    Raises
    ------
    ValueError
        A GPU without a price (the message lists the table's rows and how to pass ``prices=``), bad counts or
        constraints, ``steps`` missing.
    perfmodel.step.parallel.StrategyError
        No candidate of the grid can be split as asked (the first reason).
    perfmodel.datasets.UnknownNameError
        Unknown GPU, strategy, precision or interconnect.
    """
    from perfmodel import datasets as ds
    from perfmodel.step import step_time as ost
    from perfmodel.step.strategy import StrategyError, check_strategy_name
    from perfmodel.step.collectives import resolve_interconnect
    from perfmodel._run import keyword_run
    from perfmodel.step.hetero import BALANCES, mix_label, parse_mix
    from perfmodel.step.memory import memory_frame
    from perfmodel.planning.plan import mark_feasible
    from perfmodel.planning._inputs import gpu_names, positive_int, positive_number

    if steps is None and samples is None:
        if b_simple is not None:
            raise ValueError("b_simple= needs steps= (the training steps counted at reference_batch); got no steps.")
        samples = DEFAULT_SAMPLES  # the amount perfmodel plan-cloud plans when none is given: one default for both faces
    if steps is not None and samples is not None:
        raise ValueError(f"Give exactly one of steps= (training steps at every batch size) and samples= (total training data, "
                         f"steps = ceil(samples / batch)); got steps={steps!r} and samples={samples!r}.")
    if samples is not None:
        if isinstance(samples, (list, tuple, np.ndarray, pd.Series)):
            raise ValueError(f"samples must be one positive whole number of training samples; got {samples!r}.")
        samples = _positive_ints(samples, "samples", "the total number of training samples")[0]
        if b_simple is not None:
            raise ValueError("samples= and b_simple= do not go together: samples fixes the data every batch size processes, "
                             "b_simple rescales steps counted at reference_batch to the same training progress. Pass one.")
    elif isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive number of training steps (at every batch, or at reference_batch with "
                         f"b_simple); got {steps!r}.")
    if (b_simple is None) != (reference_batch is None):
        raise ValueError("b_simple and reference_batch go together: the noise scale and the batch `steps` were counted at.")
    if b_simple is not None:
        positive_number(b_simple, "b_simple", "number of samples (the gradient noise scale)", "1000.0")
        reference_batch = positive_int(reference_batch, "reference_batch", "samples per step (the batch steps was counted at)", 32)
    positive_number(deadline_h, "deadline_h", "number of hours", "2.0")
    positive_number(budget_usd, "budget_usd", "amount of dollars", "500.0")
    positive_number(checkpoint_s, "checkpoint_s", "number of seconds", "30.0")
    if (isinstance(failures_per_gpu_h, bool) or not isinstance(failures_per_gpu_h, (int, float, np.integer, np.floating))
            or not math.isfinite(failures_per_gpu_h) or failures_per_gpu_h < 0):
        raise ValueError(f"failures_per_gpu_h must be a number of hardware failures per GPU-hour, 0 or more (0: none; "
                         f"default {HARDWARE_FAILURES_PER_GPU_H:.3g}, the Llama 3 405B run's); got {failures_per_gpu_h!r}.")
    counts = _positive_ints(n_gpus, "n_gpus", "GPU counts")
    batches = _positive_ints(batch_sizes, "batch_sizes", "global batch sizes, samples per step")
    strats = [SEARCH if str(s).strip().lower() == SEARCH else check_strategy_name(s)
              for s in _as_tuple(strategies, "strategies")]
    from perfmodel.step.strategy import check_framework

    fw = check_framework("pytorch" if framework is None else framework)
    search_frameworks = ("pytorch", "megatron") if framework is None else (fw,)
    from perfmodel._workload import resolve_stack

    family = resolve_stack(stack, False)
    # the kernels every named strategy runs: the family said, else the framework's own (Megatron-Core's Transformer
    # Engine modules, as predict_step_time and predict_memory run framework="megatron"; eager PyTorch otherwise)
    run_stack = None if stack is None and fw == "megatron" else family
    if mixes and family != "eager":
        raise ValueError(f"mixes= are predicted with eager kernels only (perfmodel.step.hetero.predict_mixed_step_time has "
                         f"no kernel family); got stack={stack!r} with mixes={list(mixes)!r}. Plan the mixes without "
                         "stack=, or the stack without mixes=.")
    from perfmodel._workload import fp8_recipe_of

    recipe = fp8_recipe_of(str(precision).lower(), family, fp8_recipe)  # a recipe of another precision or family: refused
    recipe = None if recipe == fp8_recipe_of(str(precision).lower(), family) else recipe  # the family's default: as before
    if mixes and recipe is not None:
        raise ValueError(f"mixes= take no FP8 recipe (perfmodel.step.hetero.predict_mixed_step_time runs the default "
                         f"one); got fp8_recipe={fp8_recipe!r} with mixes={list(mixes)!r}. Plan the mixes without "
                         "fp8_recipe=, or the recipe without mixes=.")
    spots = [bool(s) for s in _as_tuple(spot, "spot")]
    p = check_gpu_prices(prices)
    gpu_list = (sorted(set(p["gpu"])) if gpus is None else
                [ds.canonical_gpu(g) for g in _as_tuple(gpu_names(gpus, "plan_cloud"), "gpus")])
    regions = None if regions is None else _as_tuple(regions, "regions")
    mixes = [parse_mix(m) for m in ([mixes] if isinstance(mixes, (str, dict)) else list(mixes))]
    if mix_balance not in BALANCES:
        raise ValueError(f"mix_balance must be one of {BALANCES}; got {mix_balance!r}.")
    if not isinstance(wait_for_capacity, (bool, np.bool_)):
        raise TypeError(f"wait_for_capacity must be True or False; got {wait_for_capacity!r}.")
    rows_by_gpu = {g: _price_rows(p, g, regions) for g in dict.fromkeys([*gpu_list, *(g for m in mixes for g in m)])}
    if interconnect is not None:
        from perfmodel.step.strategy import resolve_links

        for g in gpu_list:  # unknown names fail here, before any prediction
            (resolve_links if isinstance(interconnect, dict) else resolve_interconnect)(interconnect, g)
    mkey = _model_key(model, input_shape)
    prec = str(precision).lower()
    specs = {g: ds.gpu_spec(g) for g in rows_by_gpu}
    rows, skipped = [], []
    first_error = None
    if recipe is not None:  # GPUs that cannot run the recipe: listed with the reason, the others planned
        gpu_list = _gpus_running(recipe, gpu_list, skipped)
    if samples is None and b_simple is None and len(set(batches)) > 1:
        warnings.warn(f"steps={steps} at every batch size: batch {max(batches)} processes {max(batches) / min(batches):g}x the "
                      f"data of batch {min(batches)}, so the times and costs compare different amounts of training. Pass "
                      "samples= (a fixed amount of data) or b_simple= with reference_batch= (the same progress) to compare "
                      "batch sizes.", UserWarning, stacklevel=2)
    nsteps_of = {B: _steps(B, None if steps is None else int(steps), b_simple, reference_batch, samples) for B in batches}
    ck_far: list = []  # checkpoint sizes outside the checkpoint fit: one warning for all of them, after the loop
    common = dict(spots=spots, wait_for_capacity=wait_for_capacity, checkpoint_s=checkpoint_s, skipped=skipped, out=rows,
                  ck_far=ck_far, failures_per_gpu_h=float(failures_per_gpu_h))
    import sys

    from tqdm.auto import tqdm

    n_combos = sum(1 if n == 1 else len(strats) for n in counts) * len(batches) + len(mixes) * len(batches)
    bar = tqdm(total=n_combos, desc="perfmodel plan-cloud", unit="combo", disable=not progress, file=sys.stderr)
    for n in counts:
        for strat in (["single"] if n == 1 else strats):
            for B in batches:
                bar.update(1)
                # the link: inside one instance (NVLink / PCIe) or across instances (network); one prediction per link
                groups: dict = {}
                for g in gpu_list:
                    for r in rows_by_gpu[g].itertuples(index=False):
                        spans = n > int(r.gpus_per_instance)
                        joined = _instance_link(r, interconnect, spans)
                        link = joined[0]
                        key = (repr(link) if isinstance(link, dict) else link, spans, *joined[1:])  # dicts do not hash
                        groups.setdefault(key, (link, {}))[1].setdefault(g, []).append(r)
                if strat == SEARCH:
                    _plan_searched(model, mkey, n, B, groups, common, specs, nsteps_of, skipped,
                                   dict(input_shape=input_shape, input_dtype=input_dtype, precision=prec,
                                        optimizer=optimizer, stack=stack, recipe=recipe,
                                        frameworks=search_frameworks),
                                   interconnect)
                    continue
                for (_, spans, per, nics, note), (link, by_gpu) in groups.items():
                    gl = tuple(sorted(by_gpu))
                    s_name = "dp" if strat == "single" else strat
                    link_key = link if isinstance(link, (str, type(None))) else repr(link)
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            run = dict(input_shape=input_shape, batch_size=B, input_dtype=input_dtype, precision=prec,
                                       optimizer=optimizer, n_gpus=n, strategy=s_name, micro_batches=micro_batches,
                                       framework=fw, stack=run_stack,
                                       **({} if per is None else dict(gpus_per_node=per)),
                                       **({} if nics is None else dict(nics_per_node=nics)))
                            step = _memo(("step", mkey, gl, n, s_name, B, prec, optimizer, micro_batches, link_key, input_dtype,
                                          fw, run_stack, recipe, per, nics),
                                         lambda: ost.step_rows(*_with_recipe(keyword_run(model, list(gl), interconnect=link,
                                                                                         **run), recipe)))
                            mem = _memo(("mem", mkey, gl, n, s_name, B, prec, optimizer, micro_batches, input_dtype, fw, run_stack,
                                         recipe, per),
                                        lambda: memory_frame(*_with_recipe(keyword_run(model, list(gl), **run), recipe)))
                    except StrategyError as exc:
                        first_error = first_error or exc
                        skipped.append(dict(n_gpus=n, strategy=strat, batch_size=B, reason=str(exc)))
                        continue
                    step_by = step.set_index("gpu")
                    mem_by = mem.set_index("gpu")
                    for g, price_rows in by_gpu.items():
                        st, mm = step_by.loc[g], mem_by.loc[g]
                        notes = _gpu_notes(specs[g], prec) + ([note] if note else [])
                        cand = dict(model=str(st["model"]), gpu=g, n_gpus=n, strategy=strat, batch_size=B,
                                    interconnect=str(st.get("interconnect", "none")) if n > 1 else "none",
                                    step_time_s=float(st["step_time_s"]), steps=nsteps_of[B],
                                    mfu=float(st["flops"]) / (float(st["step_time_s"]) * ds.mfu_peak_tflops(specs[g], prec) * 1e12),
                                    memory_per_gpu_bytes=float(mm["total_bytes"]), capacity_bytes=float(mm["capacity_bytes"]),
                                    fits=bool(mm["fits"]), state_bytes=float(mm["params_bytes"] + mm["optimizer_bytes"]),
                                    startup_gpu=g, notes=notes)
                        _add_rows(cand, _instance_rentals(n, price_rows), **common)
    for mix in mixes:
        for B in batches:
            bar.update(1)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cand = _memo(("mixed", mkey, mix_label(mix), B, prec, optimizer, mix_balance, repr(interconnect), input_dtype),
                                 lambda: _mixed_candidate(model, mix, B, input_shape=input_shape, input_dtype=input_dtype,
                                                          precision=prec, optimizer=optimizer, balance=mix_balance,
                                                          interconnect=interconnect))
            except ValueError as exc:
                skipped.append(dict(n_gpus=sum(mix.values()), strategy=f"dp-mixed {mix_label(mix)}", batch_size=B, reason=str(exc)))
                continue
            rentals = _mixed_rentals(mix, rows_by_gpu)
            if not rentals:
                skipped.append(dict(n_gpus=sum(mix.values()), strategy=f"dp-mixed {mix_label(mix)}", batch_size=B,
                                    reason=f"no provider and region of the price table rents every GPU of {mix_label(mix)}"))
                continue
            _add_rows(dict(cand, steps=nsteps_of[B]), rentals, **common)
    bar.close()
    if ck_far:
        from perfmodel._extrapolation import ExtrapolationWarning

        _, min_mb, max_mb = _checkpoint_regressor()
        warnings.warn(f"plan_cloud: the checkpoint time of {len(ck_far)} candidates extrapolates CM-DARE's Duration ~ Size fit "
                      f"(fitted on {min_mb:.3g}-{max_mb:.0f} MB; these states are {min(ck_far):.3g}-{max(ck_far):.3g} MB): their "
                      "restart overhead (spot revocations, hardware failures) is not backed by data (see the rows' "
                      "'extrapolated'). Pass checkpoint_s= if you know it.", ExtrapolationWarning, stacklevel=2)
    if not rows:
        if first_error is None:
            first_error = next((s["error"] for s in skipped if "error" in s), None)
        if first_error is not None:
            raise first_error
        raise ValueError("No candidate is left: " + "; ".join(sorted({s["reason"] for s in skipped})[:5]) +
                         ". Allow on-demand (spot=(True, False)) or pass prices= with spot prices.")
    out = pd.DataFrame(rows)
    out = mark_feasible(out, deadline_h=deadline_h, budget_usd=budget_usd, ok=out["fits"])
    out = out[CLOUD_PLAN_COLUMNS].sort_values(["time_h", "cost_usd"], kind="stable").reset_index(drop=True)
    out.attrs.update(skipped=[{k: v for k, v in d.items() if k != "error"} for d in skipped],
                     deadline_h=deadline_h, budget_usd=budget_usd)
    return out


def _describe(r) -> str:
    kind = "spot" if r["spot"] else "on-demand"
    strat = "" if r["strategy"] == "single" else f" {r['strategy']}"
    return (f"{r['n_gpus']}x{r['gpu']}{strat} at batch {r['batch_size']}, {kind} {r['provider']} {r['region']} "
            f"({r['n_instances']}x{r['instance_type']}): {r['time_h']:.3g} h, ${r['cost_usd']:.4g}")


def _choose(frame: pd.DataFrame, ok: pd.Series, by: str, what: str, relax: str) -> pd.Series:
    if frame.empty:
        raise ValueError("The plan has no rows to choose from (an empty frame). Expected the frame plan_cloud returns; pass "
                         "it whole (a filter such as frame[frame['feasible']] can leave nothing).")
    fits = frame[frame["fits"].astype(bool)]
    if fits.empty:
        raise _infeasible(nothing_fits(frame))
    cand = frame[ok & frame["fits"]]
    if cand.empty:
        other = "time_h" if by == "cost_usd" else "cost_usd"
        best = fits.nsmallest(3, other)
        raise _infeasible(f"No candidate that fits in GPU memory would {what}. The closest: "
                          + "; ".join(_describe(r) for _, r in best.iterrows()) + f". {relax}")
    order = cand.sort_values([by, "time_h" if by == "cost_usd" else "cost_usd"], kind="stable")
    chosen = order.iloc[0].copy()
    runner = order.iloc[1] if len(order) > 1 else None
    goal = "cheapest" if by == "cost_usd" else "fastest"
    why = f"{goal} of the {len(cand)} candidates that fit in GPU memory and {what}: {_describe(chosen)}"
    if runner is not None:
        why += f"; next: {_describe(runner)}"
    dropped = int((~frame["fits"]).sum())
    if dropped:
        why += f"; {dropped} candidates do not fit in memory"
    if chosen["spot"]:
        why += (f"; spot: {chosen['expected_revocations']:.2g} expected revocations and {chosen['expected_failures']:.2g} "
                f"hardware failures cost {chosen['restart_overhead_h'] * 60:.3g} min "
                f"(checkpoint every {chosen['checkpoint_interval_s'] / 60:.3g} min)")
        if np.isfinite(chosen["p_hold_instances"]):
            why += f"; the spot traces held {chosen['n_instances']} such instances {chosen['p_hold_instances']:.0%} of the time"
            if chosen["capacity_wait_h"] > 0:
                why += f", so it waits {chosen['capacity_wait_h']:.3g} h for capacity (counted in its time, not billed)"
    elif chosen["restart_overhead_h"] >= 0.01 * chosen["compute_time_h"]:
        ck = chosen["checkpoint_interval_s"]
        why += (f"; on demand: {chosen['expected_failures']:.2g} expected hardware failures cost "
                f"{chosen['restart_overhead_h'] * 60:.3g} min " +
                (f"(checkpoint every {ck / 60:.3g} min)" if np.isfinite(ck) else "(restarts from scratch: no checkpoint)"))
    if chosen["extrapolated"] != "none":
        why += f"; extrapolated: {chosen['extrapolated']}"
    chosen["why"] = why
    return chosen


def nothing_fits(frame: pd.DataFrame) -> str:
    """Why no row of a :func:`plan_cloud` frame fits in GPU memory: the closest row's need against its GPU's memory,
    and the largest need, in GiB."""
    ratio = frame["memory_per_gpu_bytes"] / frame["capacity_bytes"]
    close = frame.loc[ratio.idxmin()]
    big = frame.loc[frame["memory_per_gpu_bytes"].idxmax()]
    strat = "" if close["strategy"] == "single" else f" {close['strategy']}"
    return (f"Nothing fits in GPU memory: every one of the {len(frame)} candidates needs more memory per GPU than its GPU has. "
            f"The closest, {close['n_gpus']}x{close['gpu']}{strat} at batch {close['batch_size']}, needs "
            f"{close['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU of {close['capacity_bytes'] / 2**30:.1f} GiB; the largest need is "
            f"{big['memory_per_gpu_bytes'] / 2**30:.1f} GiB ({big['n_gpus']}x{big['gpu']} at batch {big['batch_size']}, "
            f"{big['capacity_bytes'] / 2**30:.1f} GiB GPU). Allow more GPUs, fsdp/tp/pp, smaller batches or GPUs with more memory.")


def _infeasible(msg):
    from perfmodel.planning.plan import PlanInfeasibleError

    return PlanInfeasibleError(msg)


def cheapest_within_deadline(frame: pd.DataFrame, deadline_h: float) -> pd.Series:
    """The cheapest candidate of a :func:`plan_cloud` frame that fits in memory and finishes within ``deadline_h``,
    with ``why`` (the runner-up, what was left out, the spot overhead, what was extrapolated).

    Raises :class:`perfmodel.planning.PlanInfeasibleError` naming the fastest candidates when none does.
    """
    if not deadline_h > 0:
        raise ValueError(f"deadline_h must be a positive number of hours; got {deadline_h}.")
    return _choose(frame, frame["time_h"] <= deadline_h, "cost_usd", f"finish within {deadline_h:g} h",
                   "Relax the deadline, or allow more or faster GPUs.")


def fastest_within_budget(frame: pd.DataFrame, budget_usd: float) -> pd.Series:
    """The fastest candidate of a :func:`plan_cloud` frame that fits in memory and costs at most ``budget_usd``, with
    ``why``.

    Raises :class:`perfmodel.planning.PlanInfeasibleError` naming the cheapest candidates when none does.
    """
    if not budget_usd > 0:
        raise ValueError(f"budget_usd must be a positive amount of dollars; got {budget_usd}.")
    return _choose(frame, frame["cost_usd"] <= budget_usd, "time_h", f"cost at most ${budget_usd:g}",
                   "Raise the budget, or allow spot instances and cheaper GPUs.")


def instance_cluster(instance_type: str, n_gpus: int = 1, prices: pd.DataFrame | None = None, *,
                     clock: float | None = None):
    """``n_gpus`` GPUs rented as a cloud's ``instance_type`` (``"p5.48xlarge"``, ``"a3-highgpu-8g"``), as a
    :class:`perfmodel.Cluster`: the GPU and GPUs per instance of its price row (``prices``, default the shipped table;
    else the row of :func:`perfmodel.datasets.reference.load_instance_networks`) as the node, and when ``n_gpus`` spans instances the GPU's own link inside one and the type's network between them
    (:func:`perfmodel.planning.networks.instance_network`): the rental :func:`perfmodel.planning.plan_cloud` plans.

    Returns
    -------
    perfmodel.Cluster

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        An instance type neither the price table nor the network table has (the message lists the nearest).
    ValueError
        Rows of that type with different GPUs; a span of instances whose network is not known (the message says how
        to give it).
    """
    import difflib
    import numbers

    from perfmodel._errors import UnknownNameError
    from perfmodel.planning.networks import instance_network

    from perfmodel.datasets import canonical_gpu
    from perfmodel.datasets.reference import load_instance_networks

    p = check_gpu_prices(prices)
    rows = p[p["instance_type"].astype(str) == str(instance_type)]
    if rows.empty:  # a type with a known network but no price (Azure's ND sizes, Google's A3 Ultra and A4)
        nets = load_instance_networks()
        rows = nets[nets["instance_type"].astype(str) == str(instance_type)].assign(
            gpu=lambda d: [canonical_gpu(g) for g in d["gpu"]])[["instance_type", "gpu", "gpus_per_instance"]]
    if rows.empty:
        types = sorted(set(p["instance_type"].astype(str)) | set(load_instance_networks()["instance_type"].astype(str)))
        near = difflib.get_close_matches(str(instance_type), types, n=3, cutoff=0.4)
        raise UnknownNameError(f"Unknown instance type {instance_type!r}; "
                               f"{'the nearest known: ' + ', '.join(near) if near else 'the known ones: ' + ', '.join(types)}"
                               ". Pass prices= with a row for it (columns of perfmodel.datasets.load_gpu_prices, "
                               "optionally network_gbit_per_s and gpudirect_rdma), or build pm.Cluster(gpu, n_gpus, "
                               "gpus_per_node=, interconnect=) yourself.")
    kinds = rows.drop_duplicates(["gpu", "gpus_per_instance"])
    if len(kinds) > 1:
        have = "; ".join(f"{r.gpus_per_instance} x {r.gpu}" for r in kinds.itertuples(index=False))
        raise ValueError(f"The price table lists {instance_type} with different GPUs ({have}); keep one in prices=.")
    r = rows.iloc[0]
    n = int(n_gpus) if not isinstance(n_gpus, bool) and isinstance(n_gpus, numbers.Integral) and n_gpus >= 1 else None
    if n is None:
        raise ValueError(f"n_gpus must be a positive whole number of GPUs; got {n_gpus!r}.")
    per = int(r["gpus_per_instance"])
    out = dict(gpu=str(r["gpu"]), n_gpus=n, gpus_per_node=min(n, per), interconnect=None, nics_per_node=None, clock=clock)
    if n > per:
        net = instance_network(str(instance_type), per, network_gbit_per_s=r.get("network_gbit_per_s"),
                               gpudirect_rdma=r.get("gpudirect_rdma"))
        if net is None:
            raise ValueError(f"{n} GPUs span {math.ceil(n / per)} {instance_type} instances, but no network between them is "
                             f"known (perfmodel.datasets.load_instance_networks() lacks {instance_type}). Add "
                             "network_gbit_per_s (and gpudirect_rdma) to its price row, or build pm.Cluster with "
                             "interconnect={'intra': ..., 'inter': ...}.")
        out.update(interconnect=net.links(), nics_per_node=net.nics_per_node)
    from perfmodel._run import Cluster

    return Cluster(**out)

"""Spot-instance availability and preemption traces of AWS and GCP, 2022–2023 (skypilot-org/spot-traces @ 221da1a).

The traces behind "Can't Be Late: Optimizing Spot Instance Savings under Deadlines" (Wu et al., NSDI'24). The upstream
repository states no licence: perfmodel fetches the files (hash-pinned, like every upstream file) and never
redistributes them.

What a file holds (upstream ``README.md``)
------------------------------------------
``{"metadata": {"gap_seconds": g}, "data": [n_0, n_1, ...]}``: one count per tick of ``g`` seconds, "the number of
available instances at a specific tick". Files live under ``<availability|preemption>/<N>-node/<cloud>-<MM-DD-YYYY>/``
and are named ``<zone>_<instance>_<k>.json`` (``v100_1``: an instance with 1 V100, ``k80_8``: 8 K80s, ``intel_64``:
64 vCPUs, ``c3-88``: GCP ``c3-highcpu-88``).

* **availability** traces probe whether ``N`` spot instances can be obtained: single-node files are 0/1, the 16-node
  files count the instances held (0–16);
* **preemption** traces hold ``N`` instances and record when they are taken away: a run of ticks at 1 (single node)
  is one instance's life, ended by a preemption (a drop to 0) or by the end of the trace (right-censored); the 4-node
  files count the instances still held (0–4).

Reading of the 0/1 values: the README's ("available instances") is used. The authors' simulator reads single-node
values the other way round (``spot_available = not trace[tick]``); the preemption traces' run structure — runs of 1
lasting hours, broken by runs of 0 of a few minutes (a relaunch) — matches the README's reading, and so do the multi-
node counts (a launch ramps up from 0), so perfmodel follows the README and says so here.

Loaders
-------
* :func:`load_spot_traces` — one row per (trace, tick), tidy;
* :func:`spot_lifetimes` — one row per spot instance life in the single-node preemption traces (hours, censored or
  preempted), for :func:`perfmodel.models.fit_lifetimes` (``max_lifetime_h=None``: these Spot VMs have no 24-hour cap);
* :func:`spot_availability` — per trace, the fraction of ticks at which at least ``n`` instances were held.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError
from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets._registry import entry, keys_under, read_bytes
from perfmodel.datasets._spec import DatasetSpec

__all__ = ["load_spot_traces", "spot_lifetimes", "spot_availability", "SPOT_TRACE_COLUMNS", "DATASETS"]

_ROOT = "ST:"
_PATH_RE = re.compile(r"^(?P<kind>availability|preemption)/(?P<nodes>\d+)-node/(?P<cloud>aws|gcp)-(?P<date>\d\d-\d\d-\d{4})/"
                      r"(?P<zone>[a-z0-9-]+?)_(?P<instance>[a-z0-9]+(?:[_-]\d+)?)\.json$")
#: GPU (and GPUs per instance) or CPU of each upstream instance code.
_INSTANCES = {
    "v100_1": ("V100", 1, "p3.2xlarge"), "v100_8": ("V100", 8, "p3.16xlarge"), "k80_1": ("K80", 1, "p2.2xlarge"),
    "k80_8": ("K80", 8, "p2.16xlarge"), "intel_64": (None, 0, "r5.16xlarge"), "c3-88": (None, 0, "c3-highcpu-88"),
}

#: Columns of :func:`load_spot_traces`.
SPOT_TRACE_COLUMNS = ["trace", "kind", "cloud", "zone", "region", "instance", "instance_type", "gpu", "gpus_per_instance", "nodes",
                      "start_date", "gap_s", "tick", "time_h", "available"]


def _trace_keys() -> list[str]:
    return [k for k in keys_under(_ROOT) if k.endswith(".json")]


def _parse(key: str) -> dict:
    rel = entry(key).path
    m = _PATH_RE.match(rel)
    if m is None or m["instance"] not in _INSTANCES:
        raise DataFormatError(f"{key}: the path {rel!r} does not follow <availability|preemption>/<N>-node/<cloud>-<MM-DD-YYYY>/"
                              f"<zone>_<instance>.json with an instance among {sorted(_INSTANCES)}.")
    gpu, per, itype = _INSTANCES[m["instance"]]
    zone = m["zone"]
    region = zone[:-1] if m["cloud"] == "aws" else zone.rsplit("-", 1)[0]
    mm, dd, yyyy = m["date"].split("-")
    return dict(trace=rel[: -len(".json")], kind=m["kind"], cloud=m["cloud"], zone=zone, region=region, instance=m["instance"],
                instance_type=itype, gpu=gpu, gpus_per_instance=per, nodes=int(m["nodes"]), start_date=f"{yyyy}-{mm}-{dd}")


def _read(key: str) -> tuple[float, np.ndarray]:
    try:
        obj = json.loads(read_bytes(key).decode("utf-8"))
        gap = float(obj["metadata"]["gap_seconds"])
        data = np.asarray(obj["data"], dtype=float)
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DataFormatError(f"{entry(key).key}: expected {{'metadata': {{'gap_seconds': ...}}, 'data': [counts]}} ({exc}).") from exc
    if not gap > 0 or data.ndim != 1 or data.size == 0 or not np.isfinite(data).all() or (data < 0).any() or (data != np.round(data)).any():
        raise DataFormatError(f"{entry(key).key}: gap_seconds must be > 0 and data a non-empty list of instance counts (integers >= 0).")
    return gap, data.astype(np.int64)


@cached_frame
def load_spot_traces() -> pd.DataFrame:
    """Every spot trace as one row per tick (34 traces, ~380 000 rows).

    Returns
    -------
    DataFrame
        ``trace`` (upstream path without ``.json``), ``kind`` (``availability``/``preemption``), ``cloud``
        (``aws``/``gcp``), ``zone``, ``region``, ``instance`` (upstream code), ``instance_type`` (the cloud's name, from
        the upstream README), ``gpu`` (``V100``/``K80``, None for CPU instances), ``gpus_per_instance``, ``nodes``
        (instances requested), ``start_date`` (ISO), ``gap_s`` (seconds per tick), ``tick``, ``time_h`` (hours since
        the start), ``available`` (instances held at that tick, 0..``nodes``).
    """
    infos, gaps, counts = [], [], []
    for key in _trace_keys():
        info = _parse(key)
        gap, data = _read(key)
        if data.max() > info["nodes"]:
            raise DataFormatError(f"{key}: counts up to {int(data.max())} in a {info['nodes']}-node trace.")
        infos.append(info)
        gaps.append(gap)
        counts.append(data)
    sizes = [d.size for d in counts]
    which = np.repeat(np.arange(len(infos)), sizes)  # each tick's trace: its description repeated, not rebuilt per tick
    out = pd.DataFrame(infos).iloc[which].reset_index(drop=True)
    out["gap_s"] = np.repeat(np.asarray(gaps), sizes)
    out["tick"] = np.concatenate([np.arange(n) for n in sizes])
    out["time_h"] = out["tick"] * out["gap_s"] / 3600
    out["available"] = np.concatenate(counts)
    out = out[SPOT_TRACE_COLUMNS]
    for c in ("kind", "cloud", "zone", "region", "instance", "instance_type", "trace"):
        out[c] = out[c].astype("category")
    return out


def spot_lifetimes(cloud: str | None = None, gpu: str | None = "any") -> pd.DataFrame:
    """One row per spot-instance life in the single-node **preemption** traces.

    A life is a run of ticks with the instance held (count 1): it ends with a preemption (the next tick is 0) or with
    the trace (right-censored: ``preempted=False``). Its duration is ``ticks × gap_s`` — a tick-resolution measurement
    (30–34 s here); the first life of a trace starts at the trace's first held tick.

    Parameters
    ----------
    cloud : {'aws', 'gcp'}, optional
        Keep one cloud.
    gpu : str or None, default 'any'
        ``'V100'`` for the GPU instances, ``None`` for the CPU instances, ``'any'`` for all.

    Returns
    -------
    DataFrame
        ``trace``, ``cloud``, ``zone``, ``region``, ``instance_type``, ``gpu``, ``start_h`` (hours since the trace
        started), ``lifetime_h``, ``preempted``.
    """
    t = load_spot_traces()
    t = t[(t["kind"] == "preemption") & (t["nodes"] == 1)]
    if cloud is not None:
        if cloud not in ("aws", "gcp"):
            raise ValueError(f"cloud must be 'aws' or 'gcp' (or None for both); got {cloud!r}.")
        t = t[t["cloud"] == cloud]
    if gpu != "any":
        from perfmodel.datasets.names import canonical_gpu

        t = t[t["gpu"].isna()] if gpu is None else t[t["gpu"] == canonical_gpu(gpu)]
    rows = []
    for trace, g in t.groupby("trace", observed=True, sort=True):
        a = g["available"].to_numpy()
        gap = float(g["gap_s"].iloc[0])
        held = np.concatenate([[0], (a > 0).astype(int), [0]])
        d = np.diff(held)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)  # [start, end) tick ranges of lives
        first = g.iloc[0]
        for s, e in zip(starts, ends):
            rows.append(dict(trace=str(trace), cloud=str(first["cloud"]), zone=str(first["zone"]), region=str(first["region"]),
                             instance_type=str(first["instance_type"]), gpu=first["gpu"], start_h=s * gap / 3600,
                             lifetime_h=(e - s) * gap / 3600, preempted=bool(e < a.size)))
    if not rows:
        raise ValueError(f"No single-node preemption trace for cloud={cloud!r}, gpu={gpu!r}; the traces cover AWS V100 and CPU "
                         "instances and GCP c3 CPU instances.")
    return pd.DataFrame(rows)


def spot_availability(n: int | None = None) -> pd.DataFrame:
    """Per trace, the fraction of ticks at which at least ``n`` instances were held.

    Parameters
    ----------
    n : int, optional
        Instances wanted (1..the trace's ``nodes``); default: every ``n`` from 1 to each trace's ``nodes``.

    Returns
    -------
    DataFrame
        ``trace``, ``kind``, ``cloud``, ``zone``, ``region``, ``instance_type``, ``gpu``, ``nodes``, ``n``,
        ``p_at_least_n`` (fraction of ticks), ``hours`` (trace length).
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"n must be a positive number of instances; got {n!r}.")
    t = load_spot_traces()
    rows = []
    for trace, g in t.groupby("trace", observed=True, sort=True):
        first = g.iloc[0]
        nodes = int(first["nodes"])
        a = g["available"].to_numpy()
        for k in ([int(n)] if n is not None else range(1, nodes + 1)):
            if k > nodes:
                continue
            rows.append(dict(trace=str(trace), kind=str(first["kind"]), cloud=str(first["cloud"]), zone=str(first["zone"]),
                             region=str(first["region"]), instance_type=str(first["instance_type"]), gpu=first["gpu"], nodes=nodes, n=k,
                             p_at_least_n=float((a >= k).mean()), hours=float(a.size * first["gap_s"] / 3600)))
    if not rows:
        raise ValueError(f"No trace holds {n} instances: the largest traces request 16.")
    return pd.DataFrame(rows)


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("spot_traces", load_spot_traces, "one tick of a spot availability or preemption trace: instances held",
                ("ST:availability/*", "ST:preemption/*"), "spot lifetimes and availability (beyond the papers)"),
    DatasetSpec("spot_lifetimes", spot_lifetimes, "one spot-instance life in a single-node preemption trace (hours, censored or not)",
                ("ST:preemption/1-node/*",), "spot lifetimes (beyond the papers)", kind="derived"),
    DatasetSpec("spot_availability", spot_availability, "one trace and instance count: fraction of ticks holding at least n",
                ("ST:availability/*", "ST:preemption/*"), "spot availability (beyond the papers)", kind="derived"),
)

"""Loaders for the ICAC'19 measurements (cake-lab/transient-deep-learning ``data/``).

"Speeding up Deep Learning with Transient Servers" (ICAC 2019): ResNet-32 on CIFAR-10, 64K steps, batch 128,
asynchronous parameter-server training on Google Compute Engine with transient (preemptible) and on-demand GPU servers.
Every loader returns a tidy frame (one row per observation, units in column names, canonical GPU / region ids, text
columns as pandas ``string``) and keeps the upstream spelling where it differs (``vm_name``, ``source_name``,
``status_source``). Nothing is read at import time; every file goes through the hash-checked registry.

The experiment folders (``training/<experiment>/<config>/``) and what their names mean:

* ``k80_spot/{2,4,8}-spot`` — N transient K80 workers + 1 on-demand PS, 32 runs over 4 zones;
* ``k80_on_demand/{k80,2,4,8}-demand`` — on-demand K80 (``k80-demand``: one K80, no PS), 10 runs in us-east1-c;
* ``p100_v100_spot/{p100,v100}`` — one transient P100 / V100, no PS; ``4p100``, ``4v100`` — 4 workers + 1 PS;
* ``experiment_1ps_vs_2ps/{1,2}ps<N>{k,v}`` — N K80 / V100 workers with 1 or 2 PS (``1ps_k80/<N>_data.csv``: one
  run per N);
* ``experiment_mixed_gpu/<X>v<Y>p<Z>k`` — X V100 + Y P100 + Z K80 workers;
* ``experiment_cross_region/<X>e<Y>c[<Z>w][-p100]`` — X workers in us-east1, Y in us-central1, Z in us-west1 (K80
  unless ``-p100``).
"""
from __future__ import annotations

import io
import re
from functools import lru_cache

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError, UnknownNameError
from perfmodel.datasets._registry import entry, keys_under, read_bytes, read_csv
from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.names import REGION_IDS, region_of_zone

__all__ = [
    "ICAC_EXPERIMENTS",
    "TARGET_STEPS",
    "load_vm_lifetimes",
    "load_icac_runs",
    "load_icac_vms",
    "load_icac_costs",
    "load_icac_accuracy_curves",
    "load_adaptive_lr",
    "DATASETS",
]

_TR = "TDL:training"
_PREFIX = "cake-lab/transient-deep-learning/data/training/"

#: Training target of every ICAC'19 run (ResNet-32, CIFAR-10).
TARGET_STEPS = 64000

#: Experiment folders of ``training/``, in the paper's order.
ICAC_EXPERIMENTS: tuple[str, ...] = (
    "k80_spot", "k80_on_demand", "p100_v100_spot", "experiment_1ps_vs_2ps", "experiment_mixed_gpu", "experiment_cross_region",
)

_ZONE = rf"(?:{'|'.join(map(re.escape, REGION_IDS))})-[a-z]"
# upstream zone spellings in cost.csv: "us-east1-c", "spot2-us-east1-c", "spot8-...", "demand2-us-east1-c"
_ZONE_SPELLING = re.compile(rf"^(?:[a-z]+\d*-)?(?P<zone>{_ZONE})$")
# VM names: "[spot2-|spot8-|demand2-|p100-spot-|v100-spot-]<zone>-run<k>-{master|worker-i}"
_VM_NAME = re.compile(rf"^(?:(?P<prefix>[a-z0-9]+(?:-spot)?)-)?(?P<zone>{_ZONE})-run(?P<run>\d+)-(?P<role>master|worker-(?P<idx>\d+))$")
_STATUS = {"job completed": "completed", "revoked": "revoked", "manually stopped due to revoked master": "stopped_revoked_master"}


# --------------------------------------------------------------------------------------------------------------------
# experiments, configurations, files


@lru_cache(maxsize=1)
def _configs() -> dict[str, tuple[str, ...]]:
    """Experiment folder → its configuration folders, from the registry (no file is read)."""
    out: dict[str, list[str]] = {e: [] for e in ICAC_EXPERIMENTS}
    for key in keys_under(_TR):
        m = re.fullmatch(re.escape(_PREFIX) + r"([^/]+)/([^/]+)/[^/]+\.csv", key)
        if m and m.group(1) in out and m.group(2) not in out[m.group(1)]:
            out[m.group(1)].append(m.group(2))
    return {e: tuple(sorted(c)) for e, c in out.items()}


def _experiment_configs(experiment: str | None = None, config: str | None = None) -> list[tuple[str, str]]:
    """(experiment, config) pairs, optionally restricted; unknown names raise :class:`UnknownNameError`."""
    configs = _configs()
    if experiment is not None and experiment not in ICAC_EXPERIMENTS:
        raise UnknownNameError(f"Unknown ICAC'19 experiment {experiment!r}. Expected one of: {', '.join(ICAC_EXPERIMENTS)}.")
    pairs = [(e, c) for e in ICAC_EXPERIMENTS if experiment in (None, e) for c in configs[e]]
    if config is not None:
        valid = [c for _, c in pairs]
        if config not in valid:
            where = f" of experiment {experiment!r}" if experiment else ""
            raise UnknownNameError(f"Unknown ICAC'19 configuration {config!r}{where}. Expected one of: {', '.join(valid)}.")
        pairs = [(e, c) for e, c in pairs if c == config]
    return pairs


def _pairs_with(fname: str, experiment: str | None, config: str | None, what: str) -> list[tuple[str, str]]:
    """(experiment, config) pairs whose folder holds ``fname``; a valid name without that file raises UnknownNameError."""
    have = [(e, c) for e, c in _experiment_configs() if fname in _files(e, c)]
    hit = [p for p in _experiment_configs(experiment, config) if p in have]
    if not hit:
        asked = f"configuration {config!r}" if config else f"experiment {experiment!r}"
        raise UnknownNameError(
            f"ICAC'19 {asked} has no {what} ({fname}). Expected one of the configurations that have one: "
            f"{', '.join(c for _, c in have)} (experiments {', '.join(dict.fromkeys(e for e, _ in have))})."
        )
    return hit


def _files(experiment: str, config: str) -> dict[str, str]:
    """File name → registry key of one configuration folder."""
    prefix = f"{_PREFIX}{experiment}/{config}/"
    return {k[len(prefix):]: k for k in keys_under(f"{_TR}/{experiment}/{config}")}


def _config_shape(experiment: str, config: str) -> dict:
    """Cluster composition encoded in an ICAC'19 configuration folder name (training/README.md)."""
    n = dict(n_k80=0, n_p100=0, n_v100=0, n_ps=1, transient=True, region_mix=None)
    bad = DataFormatError(f"ICAC'19 configuration folder {experiment}/{config} has a name perfmodel cannot decode.")
    if experiment == "k80_spot":
        m = re.fullmatch(r"(\d)-spot", config)
        if not m:
            raise bad
        n["n_k80"] = int(m.group(1))
    elif experiment == "k80_on_demand":
        n["transient"] = False
        if config == "k80-demand":
            n.update(n_k80=1, n_ps=0)
        else:
            m = re.fullmatch(r"(\d)-demand", config)
            if not m:
                raise bad
            n["n_k80"] = int(m.group(1))
    elif experiment == "p100_v100_spot":
        m = re.fullmatch(r"(\d*)(p100|v100)", config)
        if not m:
            raise bad
        n[f"n_{m.group(2)}"] = int(m.group(1) or 1)
        n["n_ps"] = 1 if m.group(1) else 0
    elif experiment == "experiment_1ps_vs_2ps":
        m = re.fullmatch(r"([12])ps(\d)([kv])|1ps_k80", config)
        if not m:
            raise bad
        if m.group(1):  # 1ps_k80 holds one run per size: its composition is set per file
            n["n_ps"] = int(m.group(1))
            n["n_k80" if m.group(3) == "k" else "n_v100"] = int(m.group(2))
    elif experiment == "experiment_mixed_gpu":
        m = re.fullmatch(r"(\d)v(\d)p(\d)k", config)
        if not m:
            raise bad
        n.update(n_v100=int(m.group(1)), n_p100=int(m.group(2)), n_k80=int(m.group(3)))
    elif experiment == "experiment_cross_region":
        m = re.fullmatch(r"(\d)e(\d)c(?:(\d)w)?(-p100)?", config)
        if not m:
            raise bad
        e, c, w = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        n["n_p100" if m.group(4) else "n_k80"] = e + c + w
        n["region_mix"] = ";".join(f"{r}:{k}" for r, k in (("us-east1", e), ("us-central1", c), ("us-west1", w)) if k)
    else:  # pragma: no cover - guarded by ICAC_EXPERIMENTS
        raise bad
    return n


def _region(zones: pd.Series) -> pd.Series:
    return zones.map(lambda z: region_of_zone(z) if isinstance(z, str) else pd.NA).astype("string")


def _upstream_zone(values: pd.Series, key: str) -> pd.Series:
    """Zone from an upstream zone spelling (``spot2-us-east1-c`` → ``us-east1-c``)."""
    s = values.astype("string").str.strip()
    z = s.str.extract(_ZONE_SPELLING)["zone"]
    bad = s.notna() & z.isna()
    if bad.any():
        raise DataFormatError(f"{entry(key).key}: zone {s[bad].iloc[0]!r} is not [<prefix>-]<GCE zone> (e.g. 'spot2-us-east1-c').")
    return z.astype("string")


def _zone_col(d: pd.DataFrame) -> pd.Series:
    return d["Zone"].astype("string").str.strip() if "Zone" in d else pd.Series(pd.NA, index=d.index, dtype="string")


# --------------------------------------------------------------------------------------------------------------------
# accuracy curves


def _read_curve(key: str) -> pd.DataFrame:
    d = read_csv(key, required_columns=["Wall Time", "Step", "Accuracy"], numeric_columns=["Wall Time", "Step", "Accuracy"])
    if d[["Wall Time", "Step", "Accuracy"]].isna().any().any():
        raise DataFormatError(f"{entry(key).key}: empty Wall Time / Step / Accuracy cells; every evaluation row needs all three.")
    return d


def _curve_files(experiment: str, config: str) -> list[tuple[str, int | None]]:
    """(key, run) of the accuracy-curve files of a configuration; run is set for ``1ps_k80/<N>_data.csv`` (run = N)."""
    out = []
    for name, key in sorted(_files(experiment, config).items()):
        if config == "1ps_k80":
            m = re.fullmatch(r"(\d)_data\.csv", name)
            if m:
                out.append((key, int(m.group(1))))
        elif name.endswith("train_data.csv"):
            out.append((key, None))
    if not out:
        raise DataFormatError(f"{_PREFIX}{experiment}/{config}/ has no train_data.csv in the registry.")
    return out


def _curves(experiment: str, config: str) -> pd.DataFrame:
    frames = []
    for key, run in _curve_files(experiment, config):
        d = _read_curve(key)
        if run is not None:
            d["Run"] = run
        elif "Run" not in d:
            raise DataFormatError(f"{entry(key).key}: no Run column; expected Wall Time, Step, Accuracy, [Zone,] Run.")
        frames.append(pd.DataFrame({
            "experiment": experiment, "config": config, "zone": _zone_col(d), "run": d["Run"].astype("int64"),
            "wall_time_s": d["Wall Time"], "step": d["Step"].astype("int64"), "accuracy": d["Accuracy"],
        }))
    return pd.concat(frames, ignore_index=True)


_RUN_KEYS = ["experiment", "config", "zone", "run"]


@cached_frame
def load_icac_accuracy_curves(experiment: str | None = None, config: str | None = None) -> pd.DataFrame:
    """Top-1 test accuracy evaluated during training, for every ICAC'19 training run (one row per evaluation).

    Parameters
    ----------
    experiment : str, optional
        One of :data:`ICAC_EXPERIMENTS`; all when omitted.
    config : str, optional
        A configuration folder (``"4-spot"``, ``"2ps5k"``, ``"1v2p1k"``, ``"2e1c1w-p100"`` …); all when omitted.

    Returns
    -------
    DataFrame
        6 586 rows (about 17 evaluations per run, every ≈4 000 steps up to 64 000) with columns

        * ``experiment``, ``config`` (folder), ``zone``, ``region`` (<NA> where the file has no ``Zone`` column),
          ``run`` (int; for ``1ps_k80`` the cluster size N);
        * ``wall_time_s`` (float, Unix time of the evaluation), ``step`` (int), ``accuracy`` (fraction in [0, 1]);
        * ``elapsed_s`` — seconds since the run's **last** Step-0 row (the start rule of the durations, see
          :func:`load_icac_runs`);
        * ``restart_row`` (bool) — a Step-0 row that is not the run's last one (its ``elapsed_s`` is negative).

    Notes
    -----
    Provenance: every ``training/<experiment>/<config>/*train_data.csv`` (``train_data.csv``,
    ``4-spot-train_data.csv``, ``4p100_train_data.csv``, ``1v100-2p100-1k80-_train_data.csv`` …) and
    ``experiment_1ps_vs_2ps/1ps_k80/<N>_data.csv``.

    Quirks handled:

    * ``1ps_k80/<N>_data.csv`` has no ``Run`` column (one run per file): ``run`` = N;
    * ``2ps5k`` run 1 starts with two Step-0 rows (a restart 882 s after the first start): both kept, the first
      flagged ``restart_row``, ``elapsed_s`` counted from the second as the upstream processing does;
    * wall times are whole seconds in ``8-spot``, ``2ps5k`` and ``1v2p1k`` (parsed as floats all the same);
    * the curves include the failed runs: 2-spot us-east1-c run 1 (ends at step 8 002), 4-spot us-east1-c run 7
      (ends at 60 061) and 20 single P100 / V100 runs revoked before 64 000 steps (absent from
      ``train_data_processed.csv``; see ``failed`` in :func:`load_icac_runs`);
    * accuracy is a fraction in the files (the paper prints percent).
    """
    frames = [_curves(e, c) for e, c in _experiment_configs(experiment, config)]
    df = pd.concat(frames, ignore_index=True)
    df["experiment"] = df["experiment"].astype("string")
    df["config"] = df["config"].astype("string")
    df.insert(3, "region", _region(df["zone"]))
    t0 = df["wall_time_s"].where(df["step"] == 0).groupby([df[k] for k in _RUN_KEYS], dropna=False, sort=False).transform("last")
    if t0.isna().any():
        r = df[t0.isna()].iloc[0]
        raise DataFormatError(f"ICAC'19 curve {r['experiment']}/{r['config']} zone {r['zone']} run {r['run']} has no Step-0 row.")
    df["elapsed_s"] = df["wall_time_s"] - t0
    df["restart_row"] = (df["step"] == 0) & (df["elapsed_s"] < 0)
    if not df["accuracy"].between(0, 1).all():
        raise DataFormatError("An ICAC'19 accuracy value lies outside [0, 1]; the files record accuracy as a fraction.")
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------------------------------------------------
# VMs


def _vms(experiment: str, config: str) -> pd.DataFrame | None:
    files = _files(experiment, config)
    if "vm_data.csv" not in files:
        return None
    key = files["vm_data.csv"]
    d = read_csv(key, required_columns=["VM_name", "Uptime"], numeric_columns=["Uptime"])
    names = d["VM_name"].astype("string").str.strip()
    parsed = names.str.extract(_VM_NAME)
    if parsed["zone"].isna().any():
        raise DataFormatError(
            f"{entry(key).key}: VM name {names[parsed['zone'].isna()].iloc[0]!r} is not "
            "[<prefix>-]<zone>-run<k>-<master|worker-i> (e.g. 'spot2-us-east1-c-run1-worker-0')."
        )
    src = d["Revoked"].astype("string").str.strip() if "Revoked" in d else pd.Series(pd.NA, index=d.index, dtype="string")
    status = src.str.lower().map(_STATUS)
    unknown = src.notna() & status.isna()
    if unknown.any():
        raise DataFormatError(f"{entry(key).key}: unknown VM status {src[unknown].iloc[0]!r}; expected one of {sorted(_STATUS)} (any case).")
    return pd.DataFrame({
        "experiment": experiment, "config": config, "zone": parsed["zone"].astype("string"), "run": parsed["run"].astype("int64"),
        "role": np.where(parsed["role"] == "master", "master", "worker"),
        "worker_index": pd.array(parsed["idx"].astype(float), dtype="Int64"),
        "vm_name": names, "uptime_s": d["Uptime"], "status": status.astype("string"), "status_source": src,
    })


@cached_frame
def load_icac_vms(experiment: str | None = None, config: str | None = None) -> pd.DataFrame:
    """One row per worker VM of the ICAC'19 clusters that recorded VM data (``vm_data.csv``).

    Parameters
    ----------
    experiment, config : str, optional
        Restrict to one experiment / configuration folder (as in :func:`load_icac_runs`).

    Returns
    -------
    DataFrame
        546 rows (``k80_spot`` 2/4/8-spot: 64/128/256; ``k80_on_demand/2-demand``: 20; ``p100_v100_spot``
        p100/v100: 35/43, one VM per single-GPU run) with columns

        * ``experiment``, ``config``, ``zone``, ``region``, ``run`` (int);
        * ``role`` — ``master`` (the chief worker, which also trains) or ``worker``; ``worker_index`` (Int64,
          <NA> for the master);
        * ``vm_name`` — upstream name, ``[spot2-|spot8-|demand2-|p100-spot-|v100-spot-]<zone>-run<k>-<master|worker-i>``;
        * ``uptime_s`` (s);
        * ``status`` — ``completed``, ``revoked`` (the VM was preempted), ``stopped_revoked_master`` (stopped by
          the experimenters because the run's master was revoked); <NA> for ``2-demand`` (no status column);
        * ``revoked`` (bool) — the VM itself was revoked: status ``revoked``, or a **master** whose status is
          ``stopped_revoked_master`` (the master is the revoked server; its workers were then stopped and are not
          revoked);
        * ``status_source`` — upstream spelling of the status.

    Notes
    -----
    Provenance: ``training/k80_spot/{2,4,8}-spot/vm_data.csv``, ``k80_on_demand/2-demand/vm_data.csv``,
    ``p100_v100_spot/{p100,v100}/vm_data.csv`` (written by ``data_processor.py::write_file`` from the authors' sqlite
    status database).

    Quirks handled: "Job completed" and "Job Completed" both occur (→ ``completed``); ``2-demand`` has no
    ``Revoked`` column; zone prefixes differ per folder (``spot2-``, ``spot8-``, ``demand2-``, ``p100-spot-``,
    ``v100-spot-``; none in 4-spot). The single-GPU files list the runs that failed (their only VM, the master, was
    revoked) although ``train_data_processed.csv`` does not. ICAC'19 counts a cluster's revocations r as its
    revoked *workers* (status ``revoked``); the 28 revoked K80 servers of Table III are the
    24 ``revoked`` VMs plus the 4 revoked masters.
    """
    df = pd.concat([_vms(e, c) for e, c in _pairs_with("vm_data.csv", experiment, config, "VM data")], ignore_index=True)
    df["experiment"] = df["experiment"].astype("string")
    df["config"] = df["config"].astype("string")
    df["role"] = df["role"].astype("string")
    df.insert(3, "region", _region(df["zone"]))
    master_lost = (df["role"] == "master") & df["status"].eq("stopped_revoked_master").fillna(False)
    df.insert(df.columns.get_loc("status") + 1, "revoked", (df["status"].eq("revoked").fillna(False) | master_lost).astype(bool))
    return df


# --------------------------------------------------------------------------------------------------------------------
# costs


def _costs(experiment: str, config: str) -> pd.DataFrame | None:
    files = _files(experiment, config)
    if "cost.csv" not in files:
        return None
    key = files["cost.csv"]
    d = read_csv(key, required_columns=["Run", "Cost"], numeric_columns=["Run", "Cost"])
    src = _zone_col(d)
    return pd.DataFrame({"experiment": experiment, "config": config, "zone": _upstream_zone(src, key), "run": d["Run"].astype("int64"),
                         "cost_usd": d["Cost"], "source_name": src})


@cached_frame
def load_icac_costs(experiment: str | None = None, config: str | None = None) -> pd.DataFrame:
    """The run costs the authors computed (every ``cost.csv``), tidy: one row per run.

    Parameters
    ----------
    experiment, config : str, optional
        Restrict to one experiment / configuration folder (as in :func:`load_icac_runs`).

    Returns
    -------
    DataFrame
        ``experiment``, ``config``, ``zone``, ``region`` (<NA> where the file has no ``Zone`` column), ``run``,
        ``cost_usd`` (US$ per run), ``source_name`` (the upstream ``Zone`` cell, e.g. ``spot2-us-east1-c``;
        <NA> where the file has none).

    Notes
    -----
    Provenance: ``training/*/*/cost.csv`` (k80_spot, k80_on_demand, p100_v100_spot, experiment_1ps_vs_2ps except
    ``1ps_k80``, experiment_mixed_gpu; cross-region runs have no cost). Costs as ``data_processor.py::process_cost``
    computed them (per-second prices; the PS billed at the on-demand price).

    Quirks handled: the ``Zone`` cell carries a folder prefix in 2-spot (``spot2-``), 8-spot (``spot8-``) and
    2-demand (``demand2-``): stripped into ``zone``, kept in ``source_name``. The cost files also cover the failed
    runs (e.g. 2-spot us-east1-c run 1, $0.215). Kept as recorded: ``cost.csv`` of 2-spot charges the 5 revoked
    workers for the full run (data bug) — recompute with :mod:`perfmodel.planning.cost`.
    """
    df = pd.concat([_costs(e, c) for e, c in _pairs_with("cost.csv", experiment, config, "recorded cost")], ignore_index=True)
    df["experiment"] = df["experiment"].astype("string")
    df["config"] = df["config"].astype("string")
    df.insert(3, "region", _region(df["zone"]))
    return df


# --------------------------------------------------------------------------------------------------------------------
# runs


_NO_ZONE = ""  # merge-key stand-in for "no Zone column" (pandas merges <NA> keys inconsistently across dtypes)


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(zone=df["zone"].astype("string").fillna(_NO_ZONE).astype(object))


def _processed(experiment: str, config: str) -> pd.DataFrame:
    files = _files(experiment, config)
    if "train_data_processed.csv" not in files:
        raise DataFormatError(f"{_PREFIX}{experiment}/{config}/ has no train_data_processed.csv in the registry.")
    key = files["train_data_processed.csv"]
    d = read_csv(key, required_columns=["Run", "Duration", "Accuracy"], numeric_columns=["Run", "Duration", "Accuracy"])
    out = pd.DataFrame({"experiment": experiment, "config": config, "zone": _zone_col(d), "run": d["Run"].astype("int64"),
                        "duration_s": d["Duration"], "accuracy": d["Accuracy"], "_proc_cost": d["Cost"] if "Cost" in d else np.nan})
    if out.duplicated(["zone", "run"]).any():
        raise DataFormatError(f"{entry(key).key}: a (Zone, Run) appears twice.")
    return out


def _agg(experiment: str, config: str) -> pd.DataFrame | None:
    files = _files(experiment, config)
    if "agg_data.csv" not in files:
        return None
    key = files["agg_data.csv"]
    d = read_csv(key, required_columns=["Run", "Cost"], numeric_columns=["Run", "Cost"])
    return pd.DataFrame({"experiment": experiment, "config": config, "zone": _upstream_zone(_zone_col(d), key),
                         "run": d["Run"].astype("int64"), "_agg_cost": d["Cost"]})


def _concat(frames: list, columns: list[str]) -> pd.DataFrame:
    """Concatenate the frames that exist; none → an empty frame with typed key columns (so merges keep their dtypes)."""
    frames = [f for f in frames if f is not None]
    if frames:
        return pd.concat(frames, ignore_index=True)
    types = {"run": "int64", "experiment": object, "config": object, "zone": object, "role": object, "status": object}
    return pd.DataFrame({c: pd.Series(dtype=types.get(c, "float64")) for c in columns})


_RUN_DTYPES = {
    "experiment": "string", "config": "string", "zone": "string", "region": "string", "run": "int64",
    "n_k80": "int64", "n_p100": "int64", "n_v100": "int64", "n_workers": "int64", "n_ps": "int64", "transient": "bool",
    "region_mix": "string", "duration_s": "float64", "duration_h": "float64", "accuracy": "float64", "cost_usd_file": "float64",
    "in_agg_data": "boolean", "in_processed_data": "bool", "failed": "bool", "max_step": "Int64",
    "n_revoked_workers": "Int64", "master_revoked": "boolean", "duration_rule": "string",
}


@cached_frame
def load_icac_runs(experiment: str | None = None, config: str | None = None, *, include_unprocessed: bool = False) -> pd.DataFrame:
    """One row per ICAC'19 training run (cluster), over every experiment.

    Parameters
    ----------
    experiment : str, optional
        One of :data:`ICAC_EXPERIMENTS` (``k80_spot``, ``k80_on_demand``, ``p100_v100_spot``,
        ``experiment_1ps_vs_2ps``, ``experiment_mixed_gpu``, ``experiment_cross_region``); all when omitted.
    config : str, optional
        A configuration folder (``"4-spot"``, ``"k80-demand"``, ``"4p100"``, ``"2ps5k"``, ``"1ps_k80"``,
        ``"1v2p1k"``, ``"2e1c1w-p100"`` …); all when omitted.
    include_unprocessed : bool, default False
        Also return the 21 single P100 / V100 runs whose VM was revoked before 64 000 steps: they are in the accuracy
        curves and ``vm_data.csv`` but not in ``train_data_processed.csv`` (``failed`` True, NaN duration, accuracy
        and cost). Needed for failure counts: the data hold 2 failed of 35 P100 runs and 19 of 43 V100 runs, where
        ICAC'19 Table III reports 2 of 32 and 14 of 32.

    Returns
    -------
    DataFrame
        385 rows (378 runs of the ``train_data_processed.csv`` files and the 7 ``1ps_k80`` runs; 406 with
        ``include_unprocessed``) with columns

        * ``experiment``, ``config`` (folder), ``zone``, ``region`` (<NA> where not recorded), ``run`` (int;
          ``1ps_k80``: the cluster size N);
        * ``n_k80``, ``n_p100``, ``n_v100``, ``n_workers`` (GPU workers, master included), ``n_ps`` (0 for
          single-GPU runs), ``transient`` (bool: the workers are preemptible; the PS is on-demand), ``region_mix``
          (cross-region clusters: ``us-east1:2;us-central1:1;us-west1:1``; <NA> otherwise);
        * ``duration_s``, ``duration_h`` — training time to 64 000 steps (NaN for failed runs absent from the
          processed files); ``accuracy`` — top-1 at the end (fraction; NaN likewise);
        * ``cost_usd_file`` — the cost the upstream files record (US$; NaN where none: cross-region, ``1ps_k80``);
        * ``in_agg_data`` (boolean) — the configuration's ``agg_data.csv`` keeps the run (it drops failed runs);
          <NA> where the configuration has no agg file;
        * ``in_processed_data`` (bool) — the run is in ``train_data_processed.csv``;
        * ``failed`` (bool) — training never reached 64 000 steps (no evaluation with Step ≥ 64 000);
        * ``max_step`` (Int64) — last evaluated step (<NA>: no curve);
        * ``n_revoked_workers`` (Int64) — VMs with status ``revoked`` other than the master (ICAC'19's r);
          ``master_revoked`` (boolean) — the master was revoked; both <NA> without VM data (0 / False for
          ``2-demand``, whose on-demand VMs have no status column);
        * ``duration_rule`` — how ``duration_s`` was obtained.

    Notes
    -----
    Provenance: ``training/<experiment>/<config>/{train_data_processed,agg_data,cost,vm_data,*train_data}.csv`` and
    ``experiment_1ps_vs_2ps/1ps_k80/<N>_data.csv``.

    Durations and accuracies are ``train_data_processed.csv``'s: wall time of the first row with Step ≥ 64 000 minus
    that of the (last) Step-0 row (``data_processor.py::train_data_processor``; checked against the curves to < 1e-5 s).
    ``1ps_k80`` has one run per size without a processed file: duration = last − first wall time, accuracy = last
    evaluation (1.9337 … 0.4927 h for N = 2 … 8).

    Quirks handled or kept:

    * failed runs: 2-spot us-east1-c run 1 (master revoked at step 8 002) and 4-spot us-east1-c run 7 (master revoked
      at step 60 061) are in the processed files with duration = last evaluation − Step-0 and are dropped from
      ``agg_data.csv``; the recorded accuracy 0.0993 of 2-spot run 1 is on no row of its curve (kept). The single
      P100 (us-east1-c runs 5, 15) and V100 (19 runs) runs whose VM was revoked are in neither processed nor agg
      files: ``include_unprocessed=True`` adds them from the curves / ``vm_data.csv`` with ``failed`` True and NaN
      duration, accuracy and cost (v100 us-west1-b run 23 is in ``vm_data.csv`` only);
    * 8-spot us-west1-b run 5 and europe-west1-b run 3 completed before their master was revoked
      (``master_revoked`` True, ``failed`` False; ICAC'19 drops them from the r = 0 row of Tables IV/V only);
    * costs: ``cost.csv`` values (full precision) are preferred over the rounded copies in
      ``train_data_processed.csv``/``agg_data.csv``; the 2-spot costs of the 5 runs with a revoked worker charge that
      worker for the full duration (data bug, kept as recorded: recompute with :mod:`perfmodel.planning.cost`);
    * 8-spot, ``2ps5k`` and ``1v2p1k`` durations are whole seconds; ``cost.csv`` zones carry ``spot2-``/``spot8-``/
      ``demand2-`` prefixes (stripped);
    * ``transient`` is True for 1ps_vs_2ps, mixed-GPU and cross-region clusters (their recorded costs use transient
      GPU prices; cross-region has no cost and is assumed transient like its 4-spot / 4p100 baselines).
    """
    pairs = _experiment_configs(experiment, config)
    k = _RUN_KEYS
    curves = _keyed(pd.concat([_curves(e, c) for e, c in pairs], ignore_index=True))
    runs = curves.groupby(k, sort=False).agg(max_step=("step", "max"), _first=("wall_time_s", "first"), _last=("wall_time_s", "last"),
                                             _acc_last=("accuracy", "last")).reset_index()
    proc = _keyed(_concat([_processed(e, c) for e, c in pairs if c != "1ps_k80"], k + ["duration_s", "accuracy", "_proc_cost"]))
    runs = runs.merge(proc, on=k, how="outer", indicator=True)
    if (runs["_merge"] == "right_only").any():
        r = runs[runs["_merge"] == "right_only"].iloc[0]
        raise DataFormatError(f"ICAC'19 {r['experiment']}/{r['config']}: processed run {r['zone']} {r['run']} has no accuracy curve.")
    runs["in_processed_data"] = runs.pop("_merge").eq("both")
    one = runs["config"] == "1ps_k80"  # one run per size, no processed file: duration = last − first wall time
    runs.loc[one, "duration_s"] = runs.loc[one, "_last"] - runs.loc[one, "_first"]
    runs.loc[one, "accuracy"] = runs.loc[one, "_acc_last"]
    vms = _concat([_vms(e, c) for e, c in pairs], k + ["role", "status"])
    vms = _keyed(vms) if len(vms) else vms
    if include_unprocessed:  # runs recorded only in vm_data (a revoked single GPU that never evaluated)
        only = vms[k].drop_duplicates().merge(runs[k], on=k, how="left", indicator=True)
        runs = pd.concat([runs, only[only["_merge"] == "left_only"].drop(columns="_merge")], ignore_index=True)
        runs["in_processed_data"] = runs["in_processed_data"].eq(True)
    else:
        runs = runs[runs["in_processed_data"] | (runs["config"] == "1ps_k80")]
    agg = _concat([_agg(e, c) for e, c in pairs], k + ["_agg_cost"])
    runs = runs.merge(_keyed(agg) if len(agg) else agg, on=k, how="left", indicator=True)
    runs["in_agg_data"] = pd.array(runs.pop("_merge").eq("both"), dtype="boolean")
    runs.loc[~runs["config"].isin(set(agg["config"])), "in_agg_data"] = pd.NA
    cost = _concat([_costs(e, c) for e, c in pairs], k + ["cost_usd"])
    runs = runs.merge((_keyed(cost) if len(cost) else cost)[k + ["cost_usd"]], on=k, how="left")
    # full-precision cost.csv first; processed Cost (1ps_vs_2ps) and agg Cost are the same values rounded
    runs["cost_usd_file"] = runs.pop("cost_usd").astype(float).fillna(runs["_proc_cost"].astype(float)).fillna(runs["_agg_cost"].astype(float))
    if len(vms):
        v = vms.assign(_rw=(vms["role"] == "worker") & vms["status"].eq("revoked").fillna(False),
                       _rm=(vms["role"] == "master") & vms["status"].isin(["revoked", "stopped_revoked_master"]).fillna(False))
        g = v.groupby(k, sort=False).agg(n_revoked_workers=("_rw", "sum"), master_revoked=("_rm", "any")).reset_index()
        runs = runs.merge(g, on=k, how="left")
    else:
        runs["n_revoked_workers"] = pd.NA
        runs["master_revoked"] = pd.NA
    shapes = pd.DataFrame([{"experiment": e, "config": c, **_config_shape(e, c)} for e, c in pairs])
    runs = runs.merge(shapes, on=["experiment", "config"], how="left", validate="many_to_one")
    one = runs["config"] == "1ps_k80"
    runs.loc[one, "n_k80"] = runs.loc[one, "run"]
    runs["failed"] = ~(runs["max_step"] >= TARGET_STEPS).fillna(False).astype(bool)
    runs["duration_rule"] = np.select(
        [runs["config"] == "1ps_k80", runs["in_processed_data"] & runs["failed"], runs["in_processed_data"]],
        ["last - first", "last evaluation - last step 0 (failed run)", "first step>=64000 - last step 0"], default=None)
    runs["zone"] = runs["zone"].replace(_NO_ZONE, None)
    runs["region"] = _region(runs["zone"].astype("string"))
    runs["n_workers"] = runs["n_k80"] + runs["n_p100"] + runs["n_v100"]
    runs["duration_h"] = runs["duration_s"].astype(float) / 3600
    df = runs[list(_RUN_DTYPES)].astype(_RUN_DTYPES)
    order = {e: i for i, e in enumerate(ICAC_EXPERIMENTS)}
    df = df.sort_values(["experiment", "config", "zone", "run"], key=lambda s: s.map(order) if s.name == "experiment" else s, na_position="first")
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------------------------------------------------
# adaptive learning rate (Fig. 5)

_AL = {"baseline": "lr_baseline.csv", "naive_lr": "lr_case1.csv", "adaptive_lr": "lr_case2.csv"}


@cached_frame
def load_adaptive_lr() -> pd.DataFrame:
    """Accuracy curves of ICAC'19 Fig. 5: a static 1 K80 + 1 PS cluster vs a cluster growing by one K80 every 16k steps.

    Returns
    -------
    DataFrame
        53 rows (17 + 18 + 18) with columns ``case`` (``baseline`` = 1 K80 + 1 PS, ``lr_baseline.csv``;
        ``naive_lr`` = dynamic cluster, unchanged learning rate, ``lr_case1.csv``; ``adaptive_lr`` = dynamic cluster,
        adaptive learning rate, ``lr_case2.csv``), ``source_name`` (file stem), ``wall_time_s`` (Unix time),
        ``step`` (int), ``accuracy`` (fraction), ``elapsed_s`` (since the case's Step-0 row; its maximum is the
        training time: 3.8541 / 2.3963 / 2.3956 h), ``duplicate_step`` (bool).

    Notes
    -----
    Provenance: ``adaptive_lr/lr_{baseline,case1,case2}.csv`` (TensorBoard exports: ``Wall time``, ``Step``,
    ``Value``). Quirk: step 32 002 (case1) and 48 003 (case2) appear twice with the same accuracy and a later wall
    time (493 s / 553 s later, when a worker joined): both rows kept, the second flagged ``duplicate_step``. The
    paper's 2.28 h for the dynamic run and its costs are not reproducible from these files.
    """
    frames = []
    for case, fname in _AL.items():
        key = f"TDL:adaptive_lr/{fname}"
        d = read_csv(key, required_columns=["Wall time", "Step", "Value"], numeric_columns=["Wall time", "Step", "Value"])
        if d.isna().any().any() or (d["Step"] == 0).sum() != 1:
            raise DataFormatError(f"{entry(key).key}: expected complete rows and exactly one Step-0 row.")
        out = pd.DataFrame({"case": case, "source_name": fname[:-4], "wall_time_s": d["Wall time"], "step": d["Step"].astype("int64"),
                            "accuracy": d["Value"]})
        out["elapsed_s"] = out["wall_time_s"] - out.loc[out["step"] == 0, "wall_time_s"].iloc[0]
        out["duplicate_step"] = out["step"].duplicated(keep="first")
        frames.append(out)
    df = pd.concat(frames, ignore_index=True)
    df["case"] = df["case"].astype("string")
    df["source_name"] = df["source_name"].astype("string")
    return df


# --------------------------------------------------------------------------------------------------------------------
# VM lifetimes (Fig. 3)

_LT_HEAD = re.compile(r"^(K80|P100|V100|Previous experiments),*$")
_DAY = re.compile(r"^(\d{1,2})-(May|Jun),")
_PREV_YEAR = 2018  # lifetime/README.md: "the runs from May to June 2018 and in Feburary 2019"
_PREV_CPU_ZONE = "us-east1-b"  # lifetime/README.md: "The older runs are in us-east1-b"


_SHEETS_EPOCH = pd.Timestamp("1899-12-30")  # day 0 of Google Sheets / Excel serial dates


def _offset_in_day_block(text: str, block: pd.Timestamp, where: str) -> pd.Timedelta:
    """Time of a previous-experiments cell as an offset from its day block's midnight.

    ``HH:MM:SS`` is a time of day. ``HHHHHHH:MM:SS`` (37 rows) is a Google Sheets date-time displayed as elapsed hours
    since 1899-12-30: its date must be the day block's (or the next day) in whatever year Sheets assumed.
    """
    m = re.fullmatch(r"(\d+):(\d{2}):(\d{2})", text)
    if not m:
        raise DataFormatError(f"{where}: expected a time HH:MM:SS, got {text!r}.")
    t = pd.Timedelta(hours=int(m.group(1)), minutes=int(m.group(2)), seconds=int(m.group(3)))
    if int(m.group(1)) < 24:
        return t
    stamp = _SHEETS_EPOCH + t
    offset = stamp - pd.Timestamp(year=stamp.year, month=block.month, day=block.day)
    if not pd.Timedelta(0) <= offset < pd.Timedelta(days=2):
        raise DataFormatError(
            f"{where}: {text!r} read as a Google Sheets date-time is {stamp}, not on the day block {block:%d-%b} or the day after."
        )
    return offset


@cached_frame
def load_vm_lifetimes() -> pd.DataFrame:
    """Lifetimes of transient (preemptible) GCE VMs, one row per VM: ``lifetime/lifetime.csv`` parsed from its sections.

    Returns
    -------
    DataFrame
        564 rows: ``feb2019`` K80 64, P100 40, V100 48; ``previous`` CPU 348, K80 64. Columns

        * ``section`` — ``feb2019`` (the K80 / P100 / V100 study of February 2019) or ``previous`` (May–June 2018);
        * ``server_type`` — ``K80``, ``P100``, ``V100`` (GPU servers) or ``CPU`` (n1-standard-4, the PS type);
        * ``vm_name`` (upstream; not unique in ``previous``: names repeat across days);
        * ``zone``, ``region``; ``zone_source`` — ``vm_name`` (Feb 2019: zone in the name), ``zone_block`` (the
          ``us-central1-a,,``/``us-west1-b,,`` sub-block of a June day), ``readme`` (previous CPU VMs: the folder
          README says the older runs were in us-east1-b);
        * ``stress`` (bool) — False when the name contains ``less`` (no ``stress-ng`` load; the others ran it at 90 %
          CPU and 4 GB memory); ``night`` (bool) — previous-section CPU VMs named ``…night`` (started ≈21:37);
        * ``start``, ``end`` (datetime64, time zone not stated), ``lifetime_s``, ``lifetime_h`` = end − start;
        * ``lived_24h`` (bool) — lifetime ≥ 24 h (the VM reached GCE's 24-h limit for preemptible VMs instead of being
          preempted earlier; in ``previous`` many VMs were deleted by the experimenters, so a short lifetime there is
          not necessarily a revocation);
        * ``day_block`` — the ``8-May`` … ``10-Jun`` header of a previous-section row (<NA> in ``feb2019``).

    Notes
    -----
    Provenance: ``lifetime/lifetime.csv`` (593 lines). Structure handled: section rows ``K80,,``
    (followed by a ``VM name,Start,Terminate`` header), ``P100,,`` (header), ``V100,,`` (**no** header row), times
    ``m/d/yy H:MM`` (minute resolution); then ``Previous experiments,,`` with day blocks (``8-May,created,terminated``,
    ``9-May,,`` …) holding ``name,HH:MM:SS,HH:MM:SS`` rows without dates, and in June zone sub-blocks
    (``us-central1-a,,``, ``us-west1-b,,``) of ``gpu*`` K80 VMs. For those rows the date is the day block's and the
    year is 2018 (folder README); an end time earlier than the start time is taken to be on the next day (27 rows).
    The catalog counts 63 ``gpu*`` VMs; the file has 64 (4 June days × 16, none duplicated).

    The 64 Feb-2019 K80 and 40 P100 rows reproduce ``plot.py``'s ``cdf_1`` / ``cdf_2`` with CDF[i] = fraction with
    lifetime < i + 1 h. Feb-2019 lifetimes reach 24.72 h, beyond GCE's 24 h limit: kept as recorded.
    """
    key = "TDL:lifetime/lifetime.csv"
    fname = entry(key).key
    try:
        text = read_bytes(key).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{fname} is not UTF-8 text ({exc}).") from exc
    rows: list[dict] = []
    section = server = day = zone_block = None
    for lineno, raw_line in enumerate(io.StringIO(text), start=1):
        line = raw_line.strip()
        if not line:
            continue
        head = _LT_HEAD.match(line)
        if head:
            section = "previous" if head.group(1) == "Previous experiments" else "feb2019"
            server = None if section == "previous" else head.group(1)
            day = zone_block = None
            continue
        if section is None:
            raise DataFormatError(f"{fname} line {lineno}: data before any section header (K80,, / P100,, / V100,, / Previous experiments,,).")
        parts = [p.strip() for p in line.split(",")]
        if parts[0] == "VM name":
            continue
        if len(parts) != 3:
            raise DataFormatError(f"{fname} line {lineno}: expected 3 comma-separated fields, got {line!r}.")
        if section == "previous":
            m = _DAY.match(line)
            if m:
                day, zone_block = f"{m.group(1)}-{m.group(2)}", None
                continue
            if re.fullmatch(_ZONE, parts[0]) and not any(parts[1:]):
                zone_block = parts[0]
                continue
            if day is None:
                raise DataFormatError(f"{fname} line {lineno}: a VM row before any day block (8-May …) in 'Previous experiments'.")
            date = pd.Timestamp(f"{day}-{_PREV_YEAR}")
            start, end = (date + _offset_in_day_block(t, date, f"{fname} line {lineno}") for t in parts[1:])
            if end < start:
                end += pd.Timedelta(days=1)
            gpu = parts[0].startswith("gpu")
            if gpu and zone_block is None:
                raise DataFormatError(f"{fname} line {lineno}: a gpu* VM outside a zone sub-block (us-central1-a,, / us-west1-b,,).")
            zone, zsrc = (zone_block, "zone_block") if zone_block else (_PREV_CPU_ZONE, "readme")
            rows.append(dict(section=section, server_type="K80" if gpu else "CPU", vm_name=parts[0], zone=zone, zone_source=zsrc,
                             start=start, end=end, day_block=day))
        else:
            zm = re.search(_ZONE, parts[0])
            if not zm:
                raise DataFormatError(f"{fname} line {lineno}: VM name {parts[0]!r} names no GCE zone.")
            try:
                start = pd.to_datetime(parts[1], format="%m/%d/%y %H:%M")
                end = pd.to_datetime(parts[2], format="%m/%d/%y %H:%M")
            except ValueError as exc:
                raise DataFormatError(f"{fname} line {lineno}: bad timestamp in {line!r}; expected m/d/yy H:MM.") from exc
            rows.append(dict(section=section, server_type=server, vm_name=parts[0], zone=zm.group(0), zone_source="vm_name",
                             start=start, end=end, day_block=None))
    if not rows:
        raise DataFormatError(f"{fname}: no VM rows found.")
    df = pd.DataFrame(rows)
    for col in ("section", "server_type", "vm_name", "zone", "zone_source", "day_block"):
        df[col] = df[col].astype("string")
    df["region"] = _region(df["zone"])
    df["stress"] = ~df["vm_name"].str.contains("less").astype(bool)
    df["night"] = df["vm_name"].str.contains("night").astype(bool)
    df["start"] = df["start"].astype("datetime64[ns]")
    df["end"] = df["end"].astype("datetime64[ns]")
    df["lifetime_s"] = (df["end"] - df["start"]).dt.total_seconds()
    if (df["lifetime_s"] < 0).any():
        r = df[df["lifetime_s"] < 0].iloc[0]
        raise DataFormatError(f"{fname}: VM {r['vm_name']!r} terminates before it starts.")
    df["lifetime_h"] = df["lifetime_s"] / 3600
    df["lived_24h"] = df["lifetime_h"] >= 24
    return df[["section", "server_type", "vm_name", "zone", "region", "zone_source", "stress", "night", "start", "end",
               "lifetime_s", "lifetime_h", "lived_24h", "day_block"]]


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("vm_lifetimes", load_vm_lifetimes, "one transient VM: start, end, lifetime (Feb 2019 GPUs; May–June 2018 CPU and K80)",
                ("TDL:lifetime/lifetime.csv",), "ICAC'19 Fig. 3 (§2)"),
    DatasetSpec("icac_runs", load_icac_runs, "one ICAC'19 training run (cluster): composition, duration, accuracy, recorded cost, failure",
                ("TDL:training/*/*/train_data_processed.csv", "TDL:training/*/*/agg_data.csv", "TDL:training/*/*/cost.csv",
                 "TDL:training/*/*/vm_data.csv", "TDL:training/*/*/*train_data.csv", "TDL:training/experiment_1ps_vs_2ps/1ps_k80/*_data.csv"),
                "ICAC'19 Tables I, III–V, Figs. 1, 4, 6–8 (§2)"),
    DatasetSpec("icac_vms", load_icac_vms, "one worker VM of an ICAC'19 cluster: uptime, status, revoked", ("TDL:training/*/*/vm_data.csv",),
                "ICAC'19 Tables I, III, IV, Figs. 1, 4 (§2)"),
    DatasetSpec("icac_costs", load_icac_costs, "one recorded ICAC'19 run cost", ("TDL:training/*/*/cost.csv",), "ICAC'19 cost model (§2)"),
    DatasetSpec("icac_accuracy_curves", load_icac_accuracy_curves, "one accuracy evaluation during an ICAC'19 run",
                ("TDL:training/*/*/*train_data.csv", "TDL:training/experiment_1ps_vs_2ps/1ps_k80/*_data.csv"), "ICAC'19 durations and accuracies (§2)"),
    DatasetSpec("adaptive_lr", load_adaptive_lr, "one accuracy evaluation of the adaptive-LR experiment", ("TDL:adaptive_lr/lr_*.csv",), "ICAC'19 Fig. 5 (§2)"),
)

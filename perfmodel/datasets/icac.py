"""Loaders for the ICAC'19 measurements (cake-lab/transient-deep-learning ``data/``).

"Speeding up Deep Learning with Transient Servers" (ICAC 2019): ResNet-32 on CIFAR-10, 64K steps, batch 128,
asynchronous parameter-server training on Google Compute Engine with transient (preemptible) and on-demand GPU servers.
Every loader returns a tidy frame with canonical GPU / region ids and keeps the upstream spelling where it differs.
"""
from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError, UnknownNameError
from perfmodel.datasets._registry import entry, keys_under, read_bytes, read_csv
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.names import REGION_IDS, canonical_region

__all__ = [
    "ICAC_EXPERIMENTS",
    "load_vm_lifetimes",
    "load_icac_runs",
    "load_icac_vms",
    "load_icac_costs",
    "load_icac_accuracy_curves",
    "load_adaptive_lr",
]

_TR = "TDL:training"
TARGET_STEPS = 64000

_ZONE = rf"(?:{'|'.join(map(re.escape, REGION_IDS))})-[a-z]"


def _config_shape(experiment: str, config: str) -> dict:
    """Cluster composition of an ICAC'19 configuration folder."""
    n = dict(n_k80=0, n_p100=0, n_v100=0, n_ps=1, transient=True, region_mix=None)
    if experiment == "k80_spot":
        n["n_k80"] = int(config.split("-")[0])
    elif experiment == "k80_on_demand":
        n["transient"] = False
        if config == "k80-demand":
            n.update(n_k80=1, n_ps=0)
        else:
            n["n_k80"] = int(config.split("-")[0])
    elif experiment == "p100_v100_spot":
        m = re.fullmatch(r"(\d*)(p100|v100)", config)
        count = int(m.group(1) or 1)
        n[f"n_{m.group(2)}"] = count
        n["n_ps"] = 1 if m.group(1) else 0
    elif experiment == "experiment_1ps_vs_2ps":
        if config == "1ps_k80":
            raise ValueError("1ps_k80 holds one run per cluster size; use _one_run_per_size")
        m = re.fullmatch(r"([12])ps(\d)([kv])", config)
        n["n_ps"] = int(m.group(1))
        n["n_k80" if m.group(3) == "k" else "n_v100"] = int(m.group(2))
    elif experiment == "experiment_mixed_gpu":
        m = re.fullmatch(r"(\d)v(\d)p(\d)k", config)
        n.update(n_v100=int(m.group(1)), n_p100=int(m.group(2)), n_k80=int(m.group(3)))
    elif experiment == "experiment_cross_region":
        m = re.fullmatch(r"(\d)e(\d)c(?:(\d)w)?(-p100)?", config)
        e, c, w = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        n["n_p100" if m.group(4) else "n_k80"] = e + c + w
        n["region_mix"] = ";".join(f"{r}:{k}" for r, k in (("us-east1", e), ("us-central1", c), ("us-west1", w)) if k)
    else:  # pragma: no cover - guarded by ICAC_EXPERIMENTS
        raise UnknownNameError(f"Unknown ICAC'19 experiment {experiment!r}.")
    return n


def _configs() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key in keys_under(_TR):
        m = re.search(r"/data/training/([^/]+)/([^/]+)/[^/]+\.csv$", key)
        if m and m.group(1) != "code":
            out.setdefault(m.group(1), [])
            if m.group(2) not in out[m.group(1)]:
                out[m.group(1)].append(m.group(2))
    return {k: sorted(v) for k, v in sorted(out.items())}


#: Experiment folder → configuration folders (from the registry).
ICAC_EXPERIMENTS: tuple[str, ...] = (
    "k80_spot", "k80_on_demand", "p100_v100_spot", "experiment_1ps_vs_2ps", "experiment_mixed_gpu", "experiment_cross_region",
)


def _check_experiment(experiment: str | None) -> None:
    if experiment is not None and experiment not in ICAC_EXPERIMENTS:
        raise UnknownNameError(f"Unknown ICAC'19 experiment {experiment!r}. Expected one of: {', '.join(ICAC_EXPERIMENTS)}.")


def _experiment_configs(experiment: str | None = None):
    """(experiment, config) pairs of the registry, optionally of one experiment (validated)."""
    _check_experiment(experiment)
    for exp, configs in _configs().items():
        if experiment is None or exp == experiment:
            for cfg in configs:
                yield exp, cfg


def _files(experiment: str, config: str) -> dict[str, str]:
    prefix = f"cake-lab/transient-deep-learning/data/training/{experiment}/{config}/"
    return {k[len(prefix):]: k for k in keys_under(f"{_TR}/{experiment}/{config}")}


def _read_curve(key: str) -> pd.DataFrame:
    d = read_csv(key, required_columns=["Wall Time", "Step", "Accuracy"], numeric_columns=["Wall Time", "Step", "Accuracy"])
    if d[["Wall Time", "Step", "Accuracy"]].isna().any().any():
        raise DataFormatError(f"{key}: empty Wall Time/Step/Accuracy cells.")
    return d


def _duration_from_curve(g: pd.DataFrame, key: str) -> float:
    """Duration rule of ``training/code/data_processor.py``: first row with Step ≥ 64000 minus the last Step-0 row."""
    zero = g.index[g["Step"] == 0]
    done = g.index[g["Step"] >= TARGET_STEPS]
    if len(zero) == 0 or len(done) == 0:
        raise DataFormatError(f"{key}: a run lacks a Step-0 row or a row with Step ≥ {TARGET_STEPS}.")
    return float(g.loc[done[0], "Wall Time"] - g.loc[zero[-1], "Wall Time"])


def load_icac_accuracy_curves(experiment: str | None = None) -> pd.DataFrame:
    """Top-1 accuracy evaluations during training, for every ICAC'19 training run.

    Parameters
    ----------
    experiment : str, optional
        One of :data:`ICAC_EXPERIMENTS`; all when omitted.

    Returns
    -------
    DataFrame
        ``experiment``, ``config`` (folder), ``zone`` (<NA> where the file has none), ``run``, ``wall_time_s``,
        ``step``, ``accuracy`` (fraction), ``elapsed_s`` (since the run's **last** Step-0 row; restart rows before it
        get negative values), ``restart_row`` (a Step-0 row that is not the last one: the duplicated restart row of
        ``2ps5k`` run 1). About 17 evaluations per run (every ≈4k steps to 64k).

    Notes
    -----
    Sources: every ``train_data.csv`` (named ``4-spot-train_data.csv``, ``4p100_train_data.csv``,
    ``<...>_train_data.csv`` in some folders) and ``experiment_1ps_vs_2ps/1ps_k80/<N>_data.csv`` (one run per
    cluster size N, no Run column: ``config`` = ``1ps_k80``, ``run`` = N). Wall times are integers in some files.
    """
    frames = []
    for exp, cfg in _experiment_configs(experiment):
        for name, key in _files(exp, cfg).items():
            if cfg == "1ps_k80":
                m = re.fullmatch(r"(\d)_data\.csv", name)
                if not m:
                    continue
                d = _read_curve(key)
                d["Run"] = int(m.group(1))
            elif name.endswith("train_data.csv"):
                d = _read_curve(key)
                if "Run" not in d:
                    raise DataFormatError(f"{key}: no Run column.")
            else:
                continue
            out = pd.DataFrame({
                "experiment": exp, "config": cfg,
                "zone": d["Zone"].astype("string") if "Zone" in d else pd.Series(pd.NA, index=d.index, dtype="string"),
                "run": d["Run"].astype("int64"), "wall_time_s": d["Wall Time"], "step": d["Step"].astype("int64"), "accuracy": d["Accuracy"],
            })
            frames.append(out)
    df = pd.concat(frames, ignore_index=True)
    keys = ["experiment", "config", "zone", "run"]
    grp = df.groupby(keys, dropna=False, sort=False)
    last_zero = grp["wall_time_s"].transform(lambda s: s[df.loc[s.index, "step"] == 0].iloc[-1] if (df.loc[s.index, "step"] == 0).any() else np.nan)
    df["elapsed_s"] = df["wall_time_s"] - last_zero
    df["restart_row"] = (df["step"] == 0) & (df["elapsed_s"] < 0)
    if not df["accuracy"].between(0, 1).all():
        raise DataFormatError("ICAC'19 accuracy outside [0, 1]")
    return df


def _one_run_per_size() -> pd.DataFrame:
    rows = []
    for name, key in _files("experiment_1ps_vs_2ps", "1ps_k80").items():
        m = re.fullmatch(r"(\d)_data\.csv", name)
        if not m:
            continue
        d = _read_curve(key)
        n = int(m.group(1))
        rows.append(dict(experiment="experiment_1ps_vs_2ps", config="1ps_k80", zone=pd.NA, run=n, n_k80=n, n_p100=0, n_v100=0, n_ps=1,
                         transient=True, region_mix=None, duration_s=float(d["Wall Time"].iloc[-1] - d["Wall Time"].iloc[0]),
                         accuracy=float(d["Accuracy"].iloc[-1]), cost_usd_file=np.nan, in_agg_data=pd.NA, duration_rule="last-first"))
    return pd.DataFrame(rows)


def load_icac_runs(experiment: str | None = None) -> pd.DataFrame:
    """One row per ICAC'19 training run (cluster), over every experiment.

    Parameters
    ----------
    experiment : str, optional
        One of :data:`ICAC_EXPERIMENTS` (``k80_spot``, ``k80_on_demand``, ``p100_v100_spot``,
        ``experiment_1ps_vs_2ps``, ``experiment_mixed_gpu``, ``experiment_cross_region``); all when omitted.

    Returns
    -------
    DataFrame
        ``experiment``, ``config`` (folder: ``4-spot``, ``2ps5k``, ``1v2p1k``, ``2e1c1w-p100`` …), ``zone``, ``region``
        (<NA> where not recorded; for cross-region clusters see ``region_mix``), ``run``, ``n_k80``, ``n_p100``,
        ``n_v100``, ``n_workers``, ``n_ps`` (0 for single-GPU runs without PS), ``transient`` (workers preemptible; the
        PS is on-demand), ``region_mix`` (``us-east1:3;us-central1:1`` …), ``duration_s``, ``duration_h``, ``accuracy``
        (top-1 at 64K steps, fraction), ``cost_usd_file`` (the cost the upstream files record, NaN where none),
        ``in_agg_data`` (the upstream ``agg_data.csv`` keeps the run; failed runs are dropped there; <NA> where the
        configuration has no agg file), ``duration_rule``.

    Notes
    -----
    Durations are ``train_data_processed.csv``'s (first row with Step ≥ 64000 minus the last Step-0 row, see
    :func:`load_icac_accuracy_curves`); ``1ps_k80/<N>_data.csv`` (one run per size) use last − first wall time
    (CATALOG.md §2). Quirks kept as data: the 2-spot ``agg_data.csv`` costs of the 5 runs with a revoked worker charge
    the revoked worker for the full duration (CATALOG.md §2, §7.6) — recompute costs with perfmodel's cost model;
    8-spot durations are integers; 2-spot us-east1-c run 1 failed (accuracy 0.0993) and 4-spot us-east1-c run 7 failed.
    """
    frames = []
    for exp, cfg in _experiment_configs(experiment):
        if cfg == "1ps_k80":
            frames.append(_one_run_per_size())
            continue
        files = _files(exp, cfg)
        if "train_data_processed.csv" not in files:
            raise DataFormatError(f"{exp}/{cfg}: no train_data_processed.csv")
        proc = read_csv(files["train_data_processed.csv"], required_columns=["Run", "Duration", "Accuracy"], numeric_columns=["Run", "Duration", "Accuracy"])
        has_zone = "Zone" in proc
        keys = ["Zone", "Run"] if has_zone else ["Run"]
        proc["Run"] = proc["Run"].astype("int64")
        if "agg_data.csv" in files:
            agg = read_csv(files["agg_data.csv"], required_columns=[*keys, "Cost"], numeric_columns=["Run", "Cost"])
            agg["Run"] = agg["Run"].astype("int64")
            proc = proc.merge(agg[[*keys, "Cost"]].rename(columns={"Cost": "agg_cost"}), on=keys, how="left", indicator=True)
            proc["in_agg_data"] = proc.pop("_merge").eq("both")
        else:
            proc["in_agg_data"] = pd.NA
            proc["agg_cost"] = np.nan
        cost_file = np.nan
        if "cost.csv" in files:
            cost = read_csv(files["cost.csv"], required_columns=[*keys, "Cost"], numeric_columns=["Run", "Cost"])
            cost["Run"] = cost["Run"].astype("int64")
            if has_zone:
                cost["Zone"] = cost["Zone"].str.replace(r"^spot\d-", "", regex=True)
            proc = proc.merge(cost[[*keys, "Cost"]].rename(columns={"Cost": "file_cost"}), on=keys, how="left")
            cost_file = proc["agg_cost"].fillna(proc["file_cost"])
        elif "Cost" in proc:
            cost_file = proc["Cost"]
        else:
            cost_file = proc["agg_cost"]
        shape = _config_shape(exp, cfg)
        out = pd.DataFrame({
            "experiment": exp, "config": cfg, "zone": proc["Zone"] if has_zone else pd.NA, "run": proc["Run"],
            **{k: v for k, v in shape.items()},
            "duration_s": proc["Duration"].astype(float), "accuracy": proc["Accuracy"].astype(float),
            "cost_usd_file": cost_file, "in_agg_data": proc["in_agg_data"], "duration_rule": "first step>=64000 - last step 0",
        })
        frames.append(out)
    df = pd.concat(frames, ignore_index=True)
    df["zone"] = df["zone"].astype("string")
    df["region"] = df["zone"].map(lambda z: canonical_region(z) if isinstance(z, str) else pd.NA).astype("string")
    df["n_workers"] = df[["n_k80", "n_p100", "n_v100"]].sum(axis=1).astype("int64")
    df["duration_h"] = df["duration_s"] / 3600
    df["cost_usd_file"] = df["cost_usd_file"].astype(float)
    df["in_agg_data"] = df["in_agg_data"].astype("boolean")
    df["region_mix"] = df["region_mix"].astype("string")
    cols = ["experiment", "config", "zone", "region", "run", "n_k80", "n_p100", "n_v100", "n_workers", "n_ps", "transient", "region_mix",
            "duration_s", "duration_h", "accuracy", "cost_usd_file", "in_agg_data", "duration_rule"]
    return df[cols].reset_index(drop=True)


_VM_NAME = re.compile(rf"^(?:(?P<prefix>[a-z0-9]+(?:-spot)?)-)?(?P<zone>{_ZONE})-run(?P<run>\d+)-(?P<role>master|worker-(?P<idx>\d+))$")
_STATUS = {"job completed": "completed", "revoked": "revoked", "manually stopped due to revoked master": "stopped_revoked_master"}


def load_icac_vms() -> pd.DataFrame:
    """One row per VM of the ICAC'19 clusters that recorded VM data (``vm_data.csv``).

    Returns
    -------
    DataFrame
        ``experiment``, ``config``, ``zone``, ``region``, ``run``, ``role`` (``master`` = chief worker,
        ``worker``), ``worker_index`` (<NA> for the master), ``vm_name`` (upstream, e.g.
        ``spot2-us-east1-c-run1-worker-0``), ``uptime_s``, ``status`` (``completed``, ``revoked``,
        ``stopped_revoked_master``; <NA> for ``2-demand``, which has no status column), ``revoked`` (the VM was
        revoked: status ``revoked``, or a master whose status is "Manually stopped due to revoked master" — the master
        itself was revoked, its workers were then stopped), ``status_source`` (upstream spelling: "Job completed" and
        "Job Completed" both occur).

    Notes
    -----
    Files: ``k80_spot/{2,4,8}-spot`` (64/128/256 VMs), ``k80_on_demand/2-demand`` (20), ``p100_v100_spot/{p100,v100}``
    (35/44 single-GPU runs: master only). ICAC'19 counts a cluster's revocations r as its revoked *workers*
    (CATALOG.md §2, §7.8); a run whose master was revoked failed unless it had finished.
    """
    frames = []
    for exp, cfg in _experiment_configs():
        files = _files(exp, cfg)
        if "vm_data.csv" not in files:
            continue
        key = files["vm_data.csv"]
        d = read_csv(key, required_columns=["VM_name", "Uptime"], numeric_columns=["Uptime"])
        parsed = d["VM_name"].str.strip().str.extract(_VM_NAME)
        if parsed["zone"].isna().any():
            raise DataFormatError(f"{key}: VM name {d.loc[parsed['zone'].isna(), 'VM_name'].iloc[0]!r} does not look like [prefix-]<zone>-run<k>-<master|worker-i>.")
        src = d["Revoked"].astype("string").str.strip() if "Revoked" in d else pd.Series(pd.NA, index=d.index, dtype="string")
        status = src.str.lower().map(_STATUS)
        unknown = src.notna() & status.isna()
        if unknown.any():
            raise DataFormatError(f"{key}: unknown status {src[unknown].iloc[0]!r}; expected one of {sorted(_STATUS)} (any case).")
        frames.append(pd.DataFrame({
            "experiment": exp, "config": cfg, "zone": parsed["zone"], "run": parsed["run"].astype("int64"),
            "role": np.where(parsed["role"] == "master", "master", "worker"), "worker_index": pd.array(parsed["idx"].astype(float), dtype="Int64"),
            "vm_name": d["VM_name"], "uptime_s": d["Uptime"], "status": status.astype("string"), "status_source": src,
        }))
    df = pd.concat(frames, ignore_index=True)
    df.insert(3, "region", df["zone"].map(canonical_region))
    master_lost = (df["role"] == "master") & df["status"].eq("stopped_revoked_master").fillna(False)
    df.insert(df.columns.get_loc("status") + 1, "revoked", (df["status"].eq("revoked").fillna(False) | master_lost).astype(bool))
    return df


def load_icac_costs() -> pd.DataFrame:
    """The upstream ``cost.csv`` files, tidy: ``experiment``, ``config``, ``zone``, ``run``, ``cost_usd``, ``source_name`` (upstream zone, e.g. ``spot2-us-east1-c``).

    Costs as the authors' code computed them (per-second prices; see CATALOG.md §2 for the model and the 2-spot bug).
    """
    frames = []
    for exp, cfg in _experiment_configs():
        files = _files(exp, cfg)
        if "cost.csv" not in files:
            continue
        d = read_csv(files["cost.csv"], required_columns=["Run", "Cost"], numeric_columns=["Run", "Cost"])
        src = d["Zone"].astype("string") if "Zone" in d else pd.Series(pd.NA, index=d.index, dtype="string")
        frames.append(pd.DataFrame({"experiment": exp, "config": cfg, "zone": src.str.replace(r"^spot\d-", "", regex=True), "run": d["Run"].astype("int64"),
                                    "cost_usd": d["Cost"], "source_name": src}))
    return pd.concat(frames, ignore_index=True)


_AL = {"baseline": "lr_baseline.csv", "naive_lr": "lr_case1.csv", "adaptive_lr": "lr_case2.csv"}


def load_adaptive_lr() -> pd.DataFrame:
    """Accuracy curves of ICAC'19 Fig. 5 (``adaptive_lr/``): static 1 K80 + 1 PS vs a cluster growing by one K80 every 16k steps.

    Returns
    -------
    DataFrame
        ``case`` (``baseline`` = 1 K80 + 1 PS; ``naive_lr`` = dynamic cluster, unchanged learning rate (``lr_case1``);
        ``adaptive_lr`` = dynamic cluster with adaptive learning rate (``lr_case2``)), ``wall_time_s``, ``step``,
        ``accuracy`` (fraction), ``elapsed_s`` (since the first row), ``duplicate_step`` (a repeated step row:
        32002 in case1, 48003 in case2 — kept, flagged). 17 + 18 + 18 rows.
    """
    frames = []
    for case, fname in _AL.items():
        d = read_csv(f"TDL:adaptive_lr/{fname}", required_columns=["Wall time", "Step", "Value"], numeric_columns=["Wall time", "Step", "Value"])
        out = pd.DataFrame({"case": case, "wall_time_s": d["Wall time"], "step": d["Step"].astype("int64"), "accuracy": d["Value"]})
        out["elapsed_s"] = out["wall_time_s"] - out["wall_time_s"].iloc[0]
        out["duplicate_step"] = out["step"].duplicated(keep="first")
        frames.append(out)
    return pd.concat(frames, ignore_index=True)


_LT_HEAD = re.compile(r"^(K80|P100|V100|Previous experiments),*$")
_DAY = re.compile(r"^(\d{1,2})-(May|Jun),")
_PREV_YEAR = 2018


def load_vm_lifetimes() -> pd.DataFrame:
    """Lifetimes of transient (preemptible) VMs: ``lifetime/lifetime.csv`` parsed from its sections into one tidy frame.

    Returns
    -------
    DataFrame
        ``section`` (``feb2019``: the K80/P100/V100 study of Feb 2019; ``previous``: the earlier May–June CPU and
        K80 runs), ``server_type`` (``K80``, ``P100``, ``V100``, ``CPU``), ``vm_name``, ``zone``, ``region`` (<NA> where
        the file does not say), ``stress`` (False when the name contains ``less``: no stress-ng load), ``start``,
        ``end`` (timestamps, time zone not stated), ``lifetime_s``, ``lifetime_h``, ``day_block`` (the ``8-May`` …
        header of the previous experiments).

    Notes
    -----
    Sections: ``K80,,`` (64 VMs, header ``VM name,Start,Terminate``, times ``m/d/yy H:MM``), ``P100,,`` (40),
    ``V100,,`` (48, no header row), ``Previous experiments,,`` with day blocks (``8-May,created,terminated``,
    ``9-May,,`` …) and zone sub-blocks (``us-central1-a,,``) of ``name,HH:MM:SS,HH:MM:SS`` without dates
    (348 ``test*`` CPU VMs, 63 ``gpu*`` K80 VMs). For those, the date is the day block's, the year is assumed
    2018 (the blocks precede the Feb-2019 study; the file does not say), and an end time earlier than the start time
    is taken to be on the next day. Many previous-experiment VMs were stopped by the experimenters, so their
    lifetimes are not revocation times. Lifetime = end − start; a Feb-2019 VM that lived the full 24 h is not
    revoked (preemptible VMs end at 24 h), which the fitters treat as censoring.
    """
    key = "TDL:lifetime/lifetime.csv"
    text = read_bytes(key).decode("utf-8-sig")
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
            raise DataFormatError(f"{entry(key).key} line {lineno}: data before any section header (K80/P100/V100/Previous experiments).")
        parts = [p.strip() for p in line.split(",")]
        if parts[0] == "VM name":
            continue
        if section == "previous":
            m = _DAY.match(line)
            if m:
                day, zone_block = f"{m.group(1)}-{m.group(2)}", None
                continue
            if re.fullmatch(_ZONE, parts[0]) and not any(parts[1:]):
                zone_block = parts[0]
                continue
            if day is None or len(parts) < 3:
                raise DataFormatError(f"{entry(key).key} line {lineno}: expected 'name,HH:MM:SS,HH:MM:SS' inside a day block, got {line!r}.")
            try:
                date = pd.Timestamp(f"{day}-{_PREV_YEAR}")
                start = date + pd.Timedelta(parts[1])
                end = date + pd.Timedelta(parts[2])
            except ValueError as exc:
                raise DataFormatError(f"{entry(key).key} line {lineno}: bad time in {line!r}.") from exc
            if end < start:
                end += pd.Timedelta(days=1)
            stype = "K80" if parts[0].startswith("gpu") else "CPU"
            rows.append(dict(section=section, server_type=stype, vm_name=parts[0], zone=zone_block, start=start, end=end, day_block=day))
        else:
            if len(parts) < 3:
                raise DataFormatError(f"{entry(key).key} line {lineno}: expected 'VM name,Start,Terminate', got {line!r}.")
            zm = re.search(_ZONE, parts[0])
            try:
                start = pd.to_datetime(parts[1], format="%m/%d/%y %H:%M")
                end = pd.to_datetime(parts[2], format="%m/%d/%y %H:%M")
            except ValueError as exc:
                raise DataFormatError(f"{entry(key).key} line {lineno}: bad timestamp in {line!r}; expected m/d/yy H:MM.") from exc
            rows.append(dict(section=section, server_type=server, vm_name=parts[0], zone=zm.group(0) if zm else None, start=start, end=end, day_block=None))
    df = pd.DataFrame(rows)
    df["zone"] = df["zone"].astype("string")
    df["region"] = df["zone"].map(lambda z: canonical_region(z) if isinstance(z, str) else pd.NA).astype("string")
    df["stress"] = ~df["vm_name"].str.contains("less")
    df["lifetime_s"] = (df["end"] - df["start"]).dt.total_seconds()
    if (df["lifetime_s"] < 0).any():
        raise DataFormatError(f"{entry(key).key}: a VM ends before it starts.")
    df["lifetime_h"] = df["lifetime_s"] / 3600
    df["day_block"] = df["day_block"].astype("string")
    return df[["section", "server_type", "vm_name", "zone", "region", "stress", "start", "end", "lifetime_s", "lifetime_h", "day_block"]]


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("vm_lifetimes", load_vm_lifetimes, "one transient VM: start, end, lifetime", ("TDL:lifetime/lifetime.csv",), "ICAC'19 Fig. 3 (§2)"),
    DatasetSpec("icac_runs", load_icac_runs, "one ICAC'19 training run (cluster): composition, duration, accuracy, recorded cost",
                ("TDL:training/*/*/train_data_processed.csv", "agg_data.csv", "cost.csv", "TDL:training/experiment_1ps_vs_2ps/1ps_k80/*"),
                "ICAC'19 Tables I, III–V, Figs. 1, 4, 6–8 (§2)"),
    DatasetSpec("icac_vms", load_icac_vms, "one VM of an ICAC'19 cluster: uptime, revoked", ("TDL:training/*/*/vm_data.csv",), "ICAC'19 Tables I, III, IV, Figs. 1, 4"),
    DatasetSpec("icac_costs", load_icac_costs, "one recorded run cost", ("TDL:training/*/*/cost.csv",), "ICAC'19 cost model (§2)"),
    DatasetSpec("icac_accuracy_curves", load_icac_accuracy_curves, "one accuracy evaluation during an ICAC'19 run", ("TDL:training/*/*/*train_data.csv",),
                "ICAC'19 durations and accuracies (§2)"),
    DatasetSpec("adaptive_lr", load_adaptive_lr, "one accuracy evaluation of the adaptive-LR experiment", ("TDL:adaptive_lr/*",), "ICAC'19 Fig. 5"),
)

"""Loaders for the CM-DARE measurements (cake-lab/CM-DARE ``data/processed_data``, ICDCS'20).

Every loader returns a tidy :class:`pandas.DataFrame` (one row per observation, units in column names, canonical
model / GPU / region ids, the upstream spelling in ``source_name``) and keeps the upstream row order, so that the
paper's ``shuffle(random_state=0)`` splits can be reproduced exactly. Files are read through the hash-checked
registry (:mod:`perfmodel.datasets._registry`).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfmodel._errors import DataFormatError, UnknownNameError
from perfmodel.datasets._registry import keys_under, read_csv
from perfmodel.datasets._cache import cached_frame
from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.names import MODELS, canonical_gpu, canonical_model, model_info

__all__ = [
    "NoSamplesError",
    "SPEED_FILES",
    "load_speed_file",
    "load_speed_samples",
    "load_heldout_speed_samples",
    "load_model_metadata",
    "load_speed_tensorboard",
    "load_speed_timeseries",
    "load_speed_timeseries_summary",
    "load_speed_supertable",
    "load_speed_prediction_errors",
    "load_cluster_runs",
    "load_checkpoint_samples",
    "load_checkpoint_summary",
    "load_vm_startup",
    "load_chief_rejoining",
    "DATASETS",
]

_SPEED = "CM:processed_data/speed_data"

#: The speed-sample CSVs of ``speed_data/`` and what their ambiguous columns mean (verified numerically in the tests).
#: ``model_per_gpu``: meaning of the upstream ``Model/GPU`` column —
#: ``global`` = min-max of Model FLOPs / GPU TFLOPS over both GPUs (ResNet-15 P100 → 0, Shake-Shake big K80 → 1);
#: ``normalized_model`` = a copy of ``Normalized Model``; ``subset`` = min-max within the ResNet (10) or Shake-Shake (6)
#: subset over both GPUs, on the alternative FLOPs. ``flops``: ``main`` (≈ training-step FLOPs per image) or ``alt``
#: (≈ 7 × parameters; convolutions not counted — not a compute measure).
SPEED_FILES: dict[str, dict] = {
    "data": dict(file="0latency_data.csv", rows=416, model_per_gpu="global", gpu_per_model="global", flops="main"),
    "k80": dict(file="0latency_k80.csv", rows=208, model_per_gpu="normalized_model", gpu_per_model="within_file", flops="main"),
    "p100": dict(file="0latency_p100.csv", rows=208, model_per_gpu="normalized_model", gpu_per_model="within_file", flops="main"),
    "k80_new": dict(file="0latency_k80_new.csv", rows=260, model_per_gpu="normalized_model", gpu_per_model="within_file", flops="main"),
    "p100_new": dict(file="0latency_p100_new.csv", rows=208, model_per_gpu="global", gpu_per_model="within_file", flops="main"),
    "p100_new2": dict(file="0latency_p100_new2.csv", rows=260, model_per_gpu="global", gpu_per_model="within_file", flops="main"),
    "k80_test": dict(file="0latency_k80_test.csv", rows=72, model_per_gpu="global", gpu_per_model="global", flops="main"),
    "norm_computation": dict(file="0latency_norm_computation.csv", rows=520, model_per_gpu="global", gpu_per_model="global", flops="main"),
    "resnet": dict(file="0latency_resnet.csv", rows=260, model_per_gpu="subset", gpu_per_model="subset", flops="alt"),
    "shake": dict(file="0latency_shake.csv", rows=156, model_per_gpu="subset", gpu_per_model="subset", flops="alt"),
    "shake_k": dict(file="shake_k.csv", rows=78, model_per_gpu="subset", gpu_per_model="subset", flops="alt"),
    "shake_p": dict(file="shake_p.csv", rows=78, model_per_gpu="subset", gpu_per_model="subset", flops="alt"),
}

_COMMON_RENAME = {
    "Normalized GPU": "normalized_gpu",
    "GPU TFLOPS": "gpu_tflops",
    "Normalized Model": "normalized_model",
    "Latency (ms)": "latency_ms",
    "Average Tensor Size (MB)": "avg_tensor_mib",
    "Max Tensor Size (MB)": "max_tensor_mib",
    "Number of Parameters": "n_params",
    "Speed (steps/sec)": "speed_steps_per_s",
    "Step Time (s)": "step_time_s",
    "Number of Tensors": "n_trainable_tensors",
    "Index File Size": "index_file_kb",
    "Meta File Size": "meta_file_mb",
    "Weight File Size": "weight_file_mb",
    "Graph File Size": "graph_file_mb",
    "Event File Size": "event_file_mb",
}


class NoSamplesError(ValueError):
    """A known name (e.g. a catalog GPU) for which the data hold no measurements."""


def _unknown_choice(what: str, got, valid) -> UnknownNameError:
    return UnknownNameError(f"Unknown {what} {got!r}. Expected one of: {', '.join(map(str, valid))}.")


def _add_ids(df: pd.DataFrame, model_col: str | None, gpu_col: str | None) -> pd.DataFrame:
    """Insert canonical ``model`` (+ ``source_name``) and ``gpu`` columns in front."""
    front = {}
    if model_col is not None:
        names = df[model_col].astype(str).str.strip()
        ids = {n: canonical_model(n) for n in names.unique()}
        front["model"] = names.map(ids)
        front["source_name"] = names
    if gpu_col is not None:
        g = df[gpu_col].astype(str).str.strip()
        front["gpu"] = g.map({x: canonical_gpu(x) for x in g.unique()})
    out = df.drop(columns=[c for c in (model_col, gpu_col) if c is not None])
    for i, (k, v) in enumerate(front.items()):
        out.insert(i, k, v)
    return out


def _categorical_ids(df: pd.DataFrame) -> pd.DataFrame:
    from perfmodel.datasets.names import GPU_IDS, MODEL_IDS

    if "model" in df:
        df["model"] = pd.Categorical(df["model"], categories=list(MODEL_IDS))
    if "gpu" in df:
        df["gpu"] = pd.Categorical(df["gpu"], categories=list(GPU_IDS))
    return df


@cached_frame
def load_speed_file(name: str = "norm_computation") -> pd.DataFrame:
    """One of the twelve single-worker speed-sample CSVs of CM-DARE, tidy, in file order.

    One row = one TensorBoard ``global_step/sec`` sample of one (GPU, CNN) pair, 1 worker + 1 PS in one zone
    ("0 latency"). Use this loader to reproduce the notebooks exactly (their splits depend on file order).

    Parameters
    ----------
    name : str
        Key of :data:`SPEED_FILES`: ``"data"`` (``0latency_data.csv``, 416 rows, 16 CNNs × 2 GPUs × 13),
        ``"k80"``/``"p100"`` (208), ``"k80_new"``/``"p100_new2"`` (260, 20 CNNs), ``"p100_new"`` (208),
        ``"k80_test"`` (72, the 4 held-out CNNs × 18), ``"norm_computation"`` (520, 20 × 2 × 13, default),
        ``"resnet"`` (260), ``"shake"`` (156), ``"shake_k"``/``"shake_p"`` (78).

    Returns
    -------
    DataFrame
        ``row`` (0-based row in the file), ``model`` (canonical id), ``source_name`` (``Model (temp)``), ``gpu``,
        ``sample`` (0-based index of the sample within its (GPU, model) in file order), ``speed_steps_per_s``,
        ``step_time_s`` (s; = 1/speed to 4.5e-9), ``gpu_tflops`` (peak FP32), then the file's feature columns renamed by
        meaning: ``normalized_gpu``, ``normalized_model``, ``model_flops`` (main column: ≈ training-step FLOPs per
        image) or ``model_flops_alt`` (the ≈ 7 FLOPs/parameter column of ``resnet``/``shake*``), ``latency_ms``,
        ``avg_tensor_mib``, ``max_tensor_mib`` (the files say MB; values are MiB), ``n_params``,
        ``n_trainable_tensors``, ``index_file_kb``, ``meta_file_mb``, ``weight_file_mb``, ``graph_file_mb``,
        ``event_file_mb``, and the upstream ``Model/GPU``, ``GPU/Model`` columns as
        ``normalized_computation`` (global min-max of FLOPs/TFLOPS over both GPUs),
        ``model_per_gpu_copy`` (a copy of ``Normalized Model``), ``normalized_computation_subset`` (min-max within
        the ResNet or Shake-Shake subset), and ``gpu_per_model_global`` / ``gpu_per_model_within_file`` /
        ``gpu_per_model_subset`` — the same upstream column name means different things in different files
       .

    Notes
    -----
    Quirks kept as data: in ``data`` Shake-Shake small's ``avg_tensor_mib`` (0.052934) is a copy of ResNet-15's
    (correct 0.051692, as in ``*_new``); in ``resnet``/``shake`` it is 0.040375.
    :func:`load_speed_samples` gives one consistent, complete version.
    """
    if name not in SPEED_FILES:
        raise _unknown_choice("speed file", name, SPEED_FILES)
    spec = SPEED_FILES[name]
    raw = read_csv(f"{_SPEED}/{spec['file']}", required_columns=["GPU TFLOPS", "Speed (steps/sec)", "Step Time (s)", "GPU (temp)", "Model (temp)"])
    if len(raw) != spec["rows"]:
        raise DataFormatError(f"{spec['file']} has {len(raw)} rows, expected {spec['rows']}.")
    rename = dict(_COMMON_RENAME)
    rename["Model FLOPs"] = "model_flops" if spec["flops"] == "main" else "model_flops_alt"
    rename["Model/GPU"] = {"global": "normalized_computation", "normalized_model": "model_per_gpu_copy", "subset": "normalized_computation_subset"}[spec["model_per_gpu"]]
    rename["GPU/Model"] = f"gpu_per_model_{spec['gpu_per_model']}"
    df = raw.rename(columns=rename)
    numeric = [c for c in df.columns if c not in ("GPU (temp)", "Model (temp)")]
    for c in numeric:
        df[c] = pd.to_numeric(df[c], errors="raise").astype(float)
    df = _add_ids(df, "Model (temp)", "GPU (temp)")
    df.insert(0, "row", np.arange(len(df)))
    df.insert(4, "sample", df.groupby(["gpu", "model"], sort=False).cumcount())
    for c in ("n_params", "n_trainable_tensors"):
        if c in df and df[c].notna().all():
            df[c] = df[c].astype("int64")
    # drop columns that are entirely empty in this file (e.g. GPU/Model in norm_computation)
    df = df.loc[:, df.notna().any(axis=0) | df.columns.isin(["row", "model", "source_name", "gpu", "sample"])]
    return _categorical_ids(df)


def _derived_max_tensor_mib(model: str) -> float:
    """Largest trainable variable (MiB, fp32) from the architecture: ResNets 3×3×128×128, Shake-Shakes 3×3×(4·hidden)²."""
    m = model_info(model)
    if m.family == "resnet":
        return 3 * 3 * 128 * 128 * 4 / 2**20
    width = 4 * m.hidden_size
    return 3 * 3 * width * width * 4 / 2**20


@cached_frame
def load_model_metadata() -> pd.DataFrame:
    """Per-model metadata of the twenty CM-DARE CNNs, complete for all twenty (20 rows).

    Returns
    -------
    DataFrame
        ``model``, ``label``, ``family``, ``held_out`` (one of the 4 CNNs held out in the unseen-model test),
        ``layer_sizes`` / ``hidden_size`` / ``num_hidden_layers`` (architecture),
        ``model_flops`` (≈ training-step FLOPs per 32×32×3 image, TF profiler), ``normalized_model`` (min-max of
        ``model_flops``: ResNet-15 0, Shake-Shake big 1), ``model_flops_alt`` (≈ 7 × params; NaN for the 4 held-out
        CNNs, which no alt file has), ``n_params`` (trainable), ``n_trainable_tensors``, ``avg_tensor_mib``
        (params × 4 B / 2^20 / tensors), ``max_tensor_mib`` (largest variable), ``tensor_size_source``
        (``"file"``: ``0latency_p100_new.csv``; ``"derived"``: computed from the definition/architecture for the 4
        held-out CNNs, whose files leave them empty), ``checkpoint_mb`` (= weight + meta file), ``weight_file_mb``
        (≈ 2 × params × 4 B: variables + Momentum slots), ``meta_file_mb``, ``index_file_kb``, ``graph_file_mb``
        (all from ``checkpoint/aggregated.csv``), ``event_file_mb`` (``0latency_k80_new.csv``; NaN for held-out CNNs).

    Notes
    -----
    Sources: ``0latency_k80_new.csv`` (FLOPs, params, tensors), ``0latency_p100_new.csv`` (tensor sizes — the only
    file with them for all 16 training CNNs, and with Shake-Shake small's correct 0.051692),
    ``0latency_resnet.csv``/``0latency_shake.csv`` (alternative FLOPs), ``checkpoint/aggregated.csv`` (files).
    """
    k80 = load_speed_file("k80_new")
    per = k80.groupby("model", observed=True, sort=False).first()
    p100 = load_speed_file("p100_new").groupby("model", observed=True).first()
    alt = pd.concat([load_speed_file("resnet"), load_speed_file("shake")]).groupby("model", observed=True)["model_flops_alt"].first()
    ck = load_checkpoint_summary("aggregated").set_index("model")
    rows = []
    for m in MODELS:
        r = per.loc[m.id]
        if m.id in p100.index and pd.notna(p100.loc[m.id, "avg_tensor_mib"]):
            avg, mx, src = p100.loc[m.id, "avg_tensor_mib"], p100.loc[m.id, "max_tensor_mib"], "file"
        else:
            avg = r["n_params"] * 4 / 2**20 / r["n_trainable_tensors"]
            mx, src = _derived_max_tensor_mib(m.id), "derived"
        rows.append(
            dict(
                model=m.id, label=m.label, family=m.family, held_out=m.held_out,
                layer_sizes=None if m.layer_sizes is None else ",".join(map(str, m.layer_sizes)),
                hidden_size=m.hidden_size, num_hidden_layers=m.num_hidden_layers,
                model_flops=float(r["model_flops"]), normalized_model=float(r["normalized_model"]),
                model_flops_alt=float(alt.get(m.id, np.nan)),
                n_params=int(r["n_params"]), n_trainable_tensors=int(r["n_trainable_tensors"]),
                avg_tensor_mib=float(avg), max_tensor_mib=float(mx), tensor_size_source=src,
                checkpoint_mb=float(ck.loc[m.id, "checkpoint_mb"]), weight_file_mb=float(ck.loc[m.id, "weight_file_mb"]),
                meta_file_mb=float(ck.loc[m.id, "meta_file_mb"]), index_file_kb=float(ck.loc[m.id, "index_file_kb"]),
                graph_file_mb=float(ck.loc[m.id, "graph_file_mb"]), event_file_mb=float(r.get("event_file_mb", np.nan)),
            )
        )
    df = pd.DataFrame(rows)
    df["hidden_size"] = df["hidden_size"].astype("Int64")
    df["num_hidden_layers"] = df["num_hidden_layers"].astype("Int64")
    return _categorical_ids(df)


_METADATA_COLS = [
    "model_flops", "normalized_model", "model_flops_alt", "n_params", "n_trainable_tensors", "avg_tensor_mib", "max_tensor_mib",
    "checkpoint_mb", "weight_file_mb", "meta_file_mb", "index_file_kb", "graph_file_mb", "held_out",
]


@cached_frame
def load_speed_samples(gpu: str | None = None) -> pd.DataFrame:
    """Single-worker training-speed samples of all twenty CNNs on K80 and P100, with per-model metadata joined.

    520 rows (20 CNNs × {K80, P100} × 13 samples; 260 with ``gpu``) from ``0latency_norm_computation.csv``, in file
    order, joined with :func:`load_model_metadata` (complete for all twenty).

    Parameters
    ----------
    gpu : {"K80", "P100"}, optional
        Keep one GPU.

    Returns
    -------
    DataFrame
        ``row``, ``model``, ``source_name``, ``gpu``, ``sample``, ``speed_steps_per_s``, ``step_time_s``,
        ``gpu_tflops``, ``latency_ms`` (0.3 ms for every row: same zone; the file leaves it empty for the 4
        held-out CNNs, filled here because all are ``0lat`` runs), ``normalized_computation`` (file value,
        global min-max of FLOPs/TFLOPS), and the metadata columns (see :func:`load_model_metadata`).

    Notes
    -----
    One sample = one TensorBoard ``global_step/sec`` value logged every 100 steps; the 13 samples are the
    exports' rows minus the first (step 101), with three exceptions (P100 ResNet-32 drops the last;
    K80 Custom ResNet 1 and 3 drop one low outlier each) — the selection is the authors'.
    """
    df = load_speed_file("norm_computation")
    keep = ["row", "model", "source_name", "gpu", "sample", "speed_steps_per_s", "step_time_s", "gpu_tflops", "latency_ms", "normalized_computation"]
    df = df[keep].copy()
    # every sample is a "0lat" run in one zone; the file leaves Latency empty for the 4 held-out CNNs
    df["latency_ms"] = df["latency_ms"].fillna(0.3)
    if gpu is not None:
        g = canonical_gpu(gpu)  # an unknown name is an UnknownNameError with suggestions
        if g not in ("K80", "P100"):
            raise NoSamplesError(f"no speed samples for {g} (samples exist for K80, P100): CM-DARE measured single-worker speed on "
                                 f"K80 and P100 only. Predict {g} with perfmodel.models.predict_cmdare_step_time, which extrapolates "
                                 "through peak TFLOPS.")
        df = df[df["gpu"] == g].reset_index(drop=True)
    meta = load_model_metadata()[["model", *_METADATA_COLS]]
    meta["model"] = meta["model"].astype(str)
    out = df.assign(model=df["model"].astype(str)).merge(meta, on="model", how="left", validate="many_to_one")
    if out[_METADATA_COLS].isna().drop(columns=["model_flops_alt"]).any().any():  # pragma: no cover - data guard
        raise DataFormatError("per-model metadata is incomplete after the join")
    return _categorical_ids(out)


@cached_frame
def load_heldout_speed_samples() -> pd.DataFrame:
    """K80 speed samples of the 4 CNNs held out in CM-DARE's unseen-model test (72 rows = 4 × 18).

    From ``0latency_k80_test.csv`` (steps 201–1901 of the exports: 18 samples each), in file order, metadata joined as
    in :func:`load_speed_samples`. Models: Custom ResNet 9, Custom ResNet 10, Shake-Shake small 32d, Shake-Shake 64 32d.
    """
    df = load_speed_file("k80_test")[["row", "model", "source_name", "gpu", "sample", "speed_steps_per_s", "step_time_s", "gpu_tflops"]]
    meta = load_model_metadata()[["model", *_METADATA_COLS]]
    meta["model"] = meta["model"].astype(str)
    return _categorical_ids(df.assign(model=df["model"].astype(str)).merge(meta, on="model", how="left", validate="many_to_one"))


def _tb_frame(key: str, **ids) -> pd.DataFrame:
    d = read_csv(key, required_columns=["Wall time", "Step", "Value"], numeric_columns=["Wall time", "Step", "Value"])
    out = pd.DataFrame({"wall_time_s": d["Wall time"], "step": d["Step"], "speed_steps_per_s": d["Value"]})
    if out.isna().any().any():
        raise DataFormatError(f"{key} has empty cells in Wall time/Step/Value.")
    out["step"] = out["step"].astype("int64")
    for i, (k, v) in enumerate(ids.items()):
        out.insert(i, k, v)
    return out


@cached_frame
def load_speed_tensorboard() -> pd.DataFrame:
    """The raw TensorBoard exports behind the speed samples (40 files ``speed_data/0lat_<gpu>_<model>/``).

    Returns
    -------
    DataFrame
        ``model``, ``source_name`` (folder model part), ``gpu``, ``wall_time_s`` (unix s), ``step``,
        ``speed_steps_per_s`` (``global_step/sec``). 14 rows (steps 101–1401) per export, 19 for the 4 held-out
        CNNs on K80 (steps 101–1901): 36 × 14 + 4 × 19 = 580 rows.
    """
    frames = []
    for key in keys_under(_SPEED):
        m = re.search(r"/0lat_(k80|p100)_([^/]+)/run_\.-tag-global_step_sec\.csv$", key)
        if not m:
            continue
        folder = m.group(2)
        model = next(x.id for x in MODELS if x.folder == folder)
        frames.append(_tb_frame(key, model=model, source_name=folder, gpu=canonical_gpu(m.group(1))))
    return _categorical_ids(pd.concat(frames, ignore_index=True))


_BASE = "CM:processed_data/speed_data_base"
_BASE_MODELS = {"res15": "resnet-15", "res32": "resnet-32", "shakesmall": "shake-shake-small", "shakebig": "shake-shake-big"}


def _read_base(key: str) -> pd.DataFrame:
    return read_csv(key, required_columns=["Wall time", "Step", "Value", "Step Time"], numeric_columns=["Wall time", "Step", "Value", "Step Time"])


def _base_files():
    for key in keys_under(_BASE):
        m = re.search(r"/(res15|res32|shakesmall|shakebig)(k80|p100|v100)/data\.csv$", key)
        if m:
            yield key, _BASE_MODELS[m.group(1)], canonical_gpu(m.group(2)), f"{m.group(1)}{m.group(2)}"


@cached_frame
def load_speed_timeseries() -> pd.DataFrame:
    """Single-worker speed time series of 4 CNNs on K80, P100 and V100 (``speed_data_base``, 12 files).

    These are the only V100 speed measurements in the data.

    Returns
    -------
    DataFrame
        ``model``, ``source_name``, ``gpu``, ``wall_time_s`` (integer unix s; NaN for the K80 origin row),
        ``step``, ``speed_steps_per_s``, ``step_time_s`` (Δwall/100 steps; NaN for the first sample),
        ``origin_row`` (the K80 files' leading ``,0,0,`` row, kept so plotted lines start at the origin),
        ``first_sample`` (step 101; the paper's P100/V100 means exclude it). 39 samples per file (steps 101–3901)
        + 1 origin row for each K80 file: 12 × 39 + 4 = 472 rows.

    Notes
    -----
    The two summary rows at the end of each file (no Wall time / Step) are not samples: they are in
    :func:`load_speed_timeseries_summary`.
    """
    frames = []
    for key, model, gpu, src in _base_files():
        d = _read_base(key)
        summary = d["Step"].isna() & d["Wall time"].isna()
        if summary.sum() != 2 or not summary.iloc[-2:].all():
            raise DataFormatError(f"{key}: expected exactly two trailing summary rows (mean, std), found {int(summary.sum())}.")
        s = d[~summary]
        out = pd.DataFrame(
            {
                "model": model, "source_name": src, "gpu": gpu,
                "wall_time_s": s["Wall time"].to_numpy(), "step": s["Step"].astype("int64").to_numpy(),
                "speed_steps_per_s": s["Value"].to_numpy(), "step_time_s": s["Step Time"].to_numpy(),
            }
        )
        out["origin_row"] = (out["step"] == 0) & (out["speed_steps_per_s"] == 0)
        first = out.loc[~out["origin_row"], "step"].min()
        out["first_sample"] = out["step"] == first
        frames.append(out)
    return _categorical_ids(pd.concat(frames, ignore_index=True))


@cached_frame
def load_speed_timeseries_summary() -> pd.DataFrame:
    """The summary rows of the ``speed_data_base`` files: 12 rows, one per (model, GPU).

    Returns
    -------
    DataFrame
        ``model``, ``gpu``, ``step_time_mean_s``, ``step_time_std_s`` (ddof=1; the last two rows' ``Step Time``),
        ``speed_mean_steps_per_s`` (mean of ``Value`` as stored: P100/V100 exclude the first sample; NaN for
        ResNet-15 K80, whose row −2 ``Value`` holds only a std and row −1 nothing), ``speed_std_steps_per_s``.
    """
    rows = []
    for key, model, gpu, _ in _base_files():
        d = _read_base(key)
        a, b = d.iloc[-2], d.iloc[-1]
        if pd.isna(b["Value"]):  # res15k80: row -2 holds only the std of Value, row -1 nothing
            mean_v, std_v = np.nan, a["Value"]
        else:
            mean_v, std_v = a["Value"], b["Value"]
        rows.append(dict(model=model, gpu=gpu, step_time_mean_s=a["Step Time"], step_time_std_s=b["Step Time"],
                         speed_mean_steps_per_s=mean_v, speed_std_steps_per_s=std_v))
    return _categorical_ids(pd.DataFrame(rows))


@cached_frame
def load_speed_supertable() -> pd.DataFrame:
    """Speed samples with and without injected latency (``speed_data_supertable.csv``, 208 rows).

    16 groups = {K80, P100} × {ResNet-15, ResNet-32, Shake-Shake small, Shake-Shake big} × latency {0.3, 30.3 ms}
    × 13 samples. The file has no model or GPU column: ``model`` is identified from ``Number of Parameters`` and ``gpu``
    from ``GPU TFLOPS`` (4.113 → K80, 9.526 → P100).

    Returns
    -------
    DataFrame
        ``row``, ``model``, ``gpu``, ``gpu_tflops``, ``model_flops_alt`` (the alternative ≈ 7 × params column),
        ``latency_ms``, ``avg_tensor_mib``, ``max_tensor_mib``, ``n_params``, ``speed_steps_per_s``, ``step_time_s``.
    """
    d = read_csv(f"{_SPEED}/speed_data_supertable.csv", required_columns=["GPU TFLOPS", "Model FLOPs", "Number of Parameters", "Step Time (s)"])
    d = d.rename(columns={**_COMMON_RENAME, "Model FLOPs": "model_flops_alt"}).astype(float)
    by_params = {p: m for m, p in _reference_params().items()}
    unknown = sorted(set(d["n_params"].astype("int64")) - set(by_params))
    if unknown:
        raise DataFormatError(f"speed_data_supertable.csv: parameter counts {unknown} match none of the twenty CNNs.")
    d.insert(0, "model", d["n_params"].astype("int64").map(by_params))
    from perfmodel.datasets.reference import gpu_tflops

    by_tflops = {gpu_tflops(g): g for g in ("K80", "P100")}  # the GPU catalog's values are the data's (4.113, 9.526)
    d.insert(1, "gpu", d["gpu_tflops"].map(by_tflops))
    if d["gpu"].isna().any():
        raise DataFormatError(f"speed_data_supertable.csv: GPU TFLOPS {sorted(set(d.loc[d['gpu'].isna(), 'gpu_tflops']))} match neither "
                              f"K80 nor P100 of the GPU catalog ({by_tflops}).")
    d["n_params"] = d["n_params"].astype("int64")
    d.insert(0, "row", np.arange(len(d)))
    return _categorical_ids(d)


def _reference_params() -> dict[str, int]:
    k = load_speed_file("k80_new").groupby("model", observed=True)["n_params"].first()
    return {str(m): int(p) for m, p in k.items()}


@cached_frame
def load_speed_prediction_errors() -> pd.DataFrame:
    """Per-(GPU, model) step-time prediction errors of the single-feature ``Model/GPU`` LR (``sigmetrics_figure5_comb.csv``).

    31 rows (K80 Custom ResNet 1 is absent upstream: it has no row in the unshuffled test split). Columns: ``gpu``,
    ``model``, ``source_name``, ``step_time_mean_s``, ``step_time_std_s`` (NaN when one test row),
    ``predicted_step_time_s``, ``error_mean_pct``, ``error_std_pct`` (signed % error). No notebook regenerates it;
    it is the data of the per-model error figure.
    """
    d = read_csv(
        f"{_SPEED}/sigmetrics_figure5_comb.csv",
        required_columns=["Step Time (s)", "Step Time STD", "Predicted (s)", "GPU (temp)", "Model (temp)", "Error Mean", "Error STD"],
        numeric_columns=["Step Time (s)", "Step Time STD", "Predicted (s)", "Error Mean", "Error STD"],
    )
    d = d.rename(columns={"Step Time (s)": "step_time_mean_s", "Step Time STD": "step_time_std_s", "Predicted (s)": "predicted_step_time_s",
                          "Error Mean": "error_mean_pct", "Error STD": "error_std_pct"})
    d = _add_ids(d, "Model (temp)", "GPU (temp)")
    return _categorical_ids(d[["gpu", "model", "source_name", "step_time_mean_s", "step_time_std_s", "predicted_step_time_s", "error_mean_pct", "error_std_pct"]])


_CLUSTER = "CM:processed_data/speed_and_cluster_size"


@cached_frame
def load_cluster_runs() -> pd.DataFrame:
    """Cluster training speed vs number of GPU workers: the 96 TensorBoard exports of ``speed_and_cluster_size``.

    12 configurations ({ResNet-15, ResNet-32, Shake-Shake small, Shake-Shake big} × {K80 1 PS, P100 1 PS, P100 2 PS})
    × 1–8 workers; asynchronous parameter-server training.

    Returns
    -------
    DataFrame
        ``model``, ``source_name`` (upstream configuration folder prefix, e.g. ``shakesbigp100ps2`` (sic)), ``gpu``,
        ``n_ps``, ``n_workers``, ``wall_time_s``, ``step``, ``speed_steps_per_s`` (cluster ``global_step/sec``).
        Typically 45–49 samples per run (steps ≈100–5000); exceptions (e.g. ``res15k80worker6``
        141 rows to step 14911; ``shakesbigp100ps2worker3`` starts at step 351).

    Notes
    -----
    Early samples are warm-up (low). The per-run means the paper plots are approximated by the mean over
    ``step >= 2000`` (92 of 96 within 1 %); their row selection is not recoverable.
    """
    frames = []
    for key in keys_under(_CLUSTER):
        m = re.search(r"/(k80|p100|p100ps2)/([a-z0-9]+?)worker(\d+)/run_\.-tag-global_step_sec\.csv$", key)
        if not m:
            continue
        group, cfg, n = m.groups()
        gpu = "K80" if group == "k80" else "P100"
        frames.append(_tb_frame(key, model=canonical_model(cfg), source_name=cfg, gpu=gpu, n_ps=2 if group == "p100ps2" else 1, n_workers=int(n)))
    df = pd.concat(frames, ignore_index=True)
    n_runs = df.groupby(["gpu", "n_ps", "model", "n_workers"]).ngroups
    if n_runs != 96:  # pragma: no cover - registry guard
        raise DataFormatError(f"expected 96 cluster-size runs, found {n_runs}")
    df = df.sort_values(["gpu", "n_ps", "model", "n_workers", "step"], kind="stable").reset_index(drop=True)
    return _categorical_ids(df)


_CKPT = "CM:processed_data/checkpoint"
_CKPT_SAMPLE_FILES = {"whole": "whole_data.csv", "training": "unaggregated_training.csv", "test": "unaggregated_test.csv"}
_CKPT_RENAME = {
    "Local duration": "local_duration_s", "Duration": "duration_s", "Diff": "upload_duration_s",
    "Checkpoint Size (MB)": "checkpoint_mb", "Meta File Size": "meta_file_mb", "Weight File Size": "weight_file_mb",
    "Index File Size": "index_file_kb", "Graph File Size": "graph_file_mb",
}


@cached_frame
def load_checkpoint_samples(source: str = "whole") -> pd.DataFrame:
    """Checkpoint-time measurements, one row per checkpoint (TF Saver, 1 K80 worker + 1 PS).

    Parameters
    ----------
    source : {"whole", "training", "test"}
        ``whole_data.csv`` (100 rows = 20 CNNs × 5), ``unaggregated_training.csv`` (its first 80 rows: 16 training
        CNNs) or ``unaggregated_test.csv`` (last 20 rows: the 4 held-out CNNs).

    Returns
    -------
    DataFrame
        ``row``, ``model``, ``source_name`` (``Shake large``, ``Shake mid 32d`` ...), ``repetition``,
        ``local_duration_s`` (writing the checkpoint locally), ``duration_s`` (total), ``upload_duration_s``
        (upstream ``Diff`` = Duration − Local duration), ``checkpoint_mb`` (= weight + meta file), ``meta_file_mb``,
        ``weight_file_mb`` (≈ 2 × params × 4 B in MiB: variables + Momentum), ``index_file_kb``, ``graph_file_mb``.
    """
    if source not in _CKPT_SAMPLE_FILES:
        raise _unknown_choice("checkpoint sample source", source, _CKPT_SAMPLE_FILES)
    d = read_csv(f"{_CKPT}/{_CKPT_SAMPLE_FILES[source]}", required_columns=["Model", *_CKPT_RENAME], numeric_columns=list(_CKPT_RENAME))
    d = _add_ids(d.rename(columns=_CKPT_RENAME), "Model", None)
    d.insert(0, "row", np.arange(len(d)))
    d.insert(3, "repetition", d.groupby("model", sort=False).cumcount())
    return _categorical_ids(d)


@cached_frame
def load_checkpoint_summary(source: str = "ckpt") -> pd.DataFrame:
    """Per-model checkpoint-time summaries.

    Parameters
    ----------
    source : {"ckpt", "aggregated"}
        ``ckpt.csv`` (16 training CNNs) or ``aggregated.csv`` (20 CNNs).

    Returns
    -------
    DataFrame
        ``model``, ``source_name``, ``local_duration_mean_s``, ``local_duration_std_s``, then

        * ``ckpt``: ``duration_mean_s``, ``duration_std_s`` (of total Duration);
        * ``aggregated``: ``upload_duration_mean_s``, ``upload_duration_std_s`` (the file's "Duration mean/std (s)"
          are of **Diff** = Duration − Local duration — except Shake Large's std, 0.53, which is
          the std of Duration) and ``upload_duration_cv`` (std/mean);

        ``checkpoint_mb``, ``throughput_mean_mb_per_s``, ``throughput_std_mb_per_s`` (the constant quoted string
        "(57.19, 3.44)"), ``checkpoint_speed_mb_per_s``, ``n_trainable_tensors``, ``index_file_kb``,
        ``meta_file_mb``, ``weight_file_mb``, ``graph_file_mb``, ``n_params`` (NaN/<NA> for the 4 held-out CNNs in
        ``aggregated``).
    """
    files = {"ckpt": "ckpt.csv", "aggregated": "aggregated.csv"}
    if source not in files:
        raise _unknown_choice("checkpoint summary source", source, files)
    d = read_csv(f"{_CKPT}/{files[source]}", required_columns=["Model", "Duration mean (s)", "Checkpoint Size (MB)", "Throughput (MB/s)"])
    dur = "duration" if source == "ckpt" else "upload_duration"
    rename = {
        "Local duration mean (s)": "local_duration_mean_s", "Local duration std (s)": "local_duration_std_s",
        "Duration mean (s)": f"{dur}_mean_s", "Duration std (s)": f"{dur}_std_s", "Coefficient of variation": "upload_duration_cv",
        "Checkpoint Size (MB)": "checkpoint_mb", "Checkpoint Speed (MB/s)": "checkpoint_speed_mb_per_s",
        "Number of Tensors": "n_trainable_tensors", "Number of Parameters": "n_params",
        "Index File Size": "index_file_kb", "Meta File Size": "meta_file_mb", "Weight File Size": "weight_file_mb", "Graph File Size": "graph_file_mb",
    }
    d = d.rename(columns=rename)
    thr = d.pop("Throughput (MB/s)")
    parsed = thr.astype("string").str.extract(r"^\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)$")
    bad = thr.notna() & parsed[0].isna()
    if bad.any():
        raise DataFormatError(f"{files[source]}: 'Throughput (MB/s)' must look like '(mean, std)', got {thr[bad].iloc[0]!r}.")
    for c in rename.values():
        if c in d:
            d[c] = pd.to_numeric(d[c], errors="raise").astype(float)
    pos = d.columns.get_loc("checkpoint_mb") + 1
    d.insert(pos, "throughput_mean_mb_per_s", parsed[0].astype(float))
    d.insert(pos + 1, "throughput_std_mb_per_s", parsed[1].astype(float))
    for c in ("n_params", "n_trainable_tensors"):
        d[c] = d[c].round().astype("Int64")
    return _categorical_ids(_add_ids(d, "Model", None))


_STARTUP = "CM:processed_data/startup_time"


@cached_frame
def load_vm_startup() -> pd.DataFrame:
    """VM startup-time phases for GPU servers (``startup_time/``, 8 files, 100 rows).

    Returns
    -------
    DataFrame
        ``gpu`` (K80/P100), ``transient`` (True = preemptible), ``region`` (``us-east1`` for ``*_east``,
        ``us-west1`` for ``*_west`` — the folders say east/west only; the regions are the ones of the experiments),
        ``source_name`` (upstream file), ``sample``, ``provisioning_s`` (insert → STAGING), ``staging_s``
        (STAGING → RUNNING), ``booting_s`` (RUNNING → first successful SSH), ``total_s``.

    Notes
    -----
    **Seconds**, although the paper's plot says ms: the measuring code recorded ms and the CSVs were divided by 1000
   . Rows: pre_east K80/P100 12/15, pre_west 10/8, on_demand_east 14/17, on_demand_west 15/9.
    """
    frames = []
    for key in keys_under(_STARTUP):
        m = re.search(r"/(pre|on_demand)_(east|west)/(vm_time_measure_[a-z0-9_]+)\.csv$", key)
        if not m:
            continue
        kind, side, stem = m.groups()
        gpu = "K80" if "_k80" in stem else "P100" if "_p100" in stem else None
        if gpu is None:  # pragma: no cover - registry guard
            raise DataFormatError(f"{key}: cannot tell the GPU from the file name")
        d = read_csv(key, required_columns=["Provisioning", "Staging", "Booting"], numeric_columns=["Provisioning", "Staging", "Booting"])
        out = pd.DataFrame({"gpu": gpu, "transient": kind == "pre", "region": "us-east1" if side == "east" else "us-west1", "source_name": stem,
                            "sample": np.arange(len(d)), "provisioning_s": d["Provisioning"], "staging_s": d["Staging"], "booting_s": d["Booting"]})
        out["total_s"] = out[["provisioning_s", "staging_s", "booting_s"]].sum(axis=1)
        frames.append(out)
    df = pd.concat(frames, ignore_index=True).sort_values(["region", "transient", "gpu"], ascending=[True, False, True], kind="stable")
    return _categorical_ids(df.reset_index(drop=True))


_CHIEF = "CM:processed_data/chief_rejoining"


@cached_frame
def load_chief_rejoining() -> pd.DataFrame:
    """Accuracy curves of runs in which the chief (master) worker rejoins training (``chief_rejoining/``, 9 files × 7 rows).

    Returns
    -------
    DataFrame
        ``run`` (upstream file stem: ``base``, ``base-1``, ``exp-5500`` …), ``rejoin_step`` (step at which the chief
        rejoins, from the name; <NA> for the baselines), ``repetition`` (the ``-1``/``-2`` suffix, 0 if none),
        ``wall_time_s``, ``step`` (0 … 24002, evaluations every ≈4k steps), ``accuracy`` (top-1, fraction),
        ``elapsed_s`` (since the run's first row; the total training time is its last value).
    """
    frames = []
    for key in keys_under(_CHIEF):
        stem = key.rsplit("/", 1)[-1].removesuffix(".csv")
        m = re.fullmatch(r"(base|exp-(\d+))(?:-(\d+))?", stem)
        if not m:  # pragma: no cover - registry guard
            raise DataFormatError(f"{key}: unexpected chief-rejoining file name")
        d = read_csv(key, required_columns=["Wall time", "Step", "Value"], numeric_columns=["Wall time", "Step", "Value"])
        out = pd.DataFrame({"run": stem, "rejoin_step": int(m.group(2)) if m.group(2) else pd.NA, "repetition": int(m.group(3) or 0),
                            "wall_time_s": d["Wall time"], "step": d["Step"].astype("int64"), "accuracy": d["Value"]})
        out["elapsed_s"] = out["wall_time_s"] - out["wall_time_s"].iloc[0]
        frames.append(out)
    df = pd.concat(frames, ignore_index=True)
    df["rejoin_step"] = df["rejoin_step"].astype("Int64")
    return df


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("speed_samples", load_speed_samples, "single-worker speed sample (20 CNNs × K80/P100 × 13) with per-model metadata",
                (f"{_SPEED}/0latency_norm_computation.csv", f"{_SPEED}/0latency_k80_new.csv", f"{_SPEED}/0latency_p100_new.csv", f"{_CKPT}/aggregated.csv"),
                "ICDCS'20 speed_complexity_correlation, speed_computation_correlation, speed prediction (§1.1, §1.7)"),
    DatasetSpec("heldout_speed_samples", load_heldout_speed_samples, "K80 speed sample of the 4 held-out CNNs", (f"{_SPEED}/0latency_k80_test.csv",),
                "ICDCS'20 unseen-model test (§1.7)"),
    DatasetSpec("model_metadata", load_model_metadata, "one of the twenty CNNs: FLOPs, params, tensors, tensor and checkpoint-file sizes",
                (f"{_SPEED}/0latency_k80_new.csv", f"{_SPEED}/0latency_p100_new.csv", f"{_SPEED}/0latency_resnet.csv", f"{_SPEED}/0latency_shake.csv", f"{_CKPT}/aggregated.csv"),
                "ICDCS'20 §4"),
    *(
        DatasetSpec(f"speed_file:{k}", (lambda k=k: load_speed_file(k)), f"speed sample of {v['file']} (file order, columns renamed by meaning)",
                    (f"{_SPEED}/{v['file']}",), "ICDCS'20 §1.1, §1.7 (exact notebook reproduction)")
        for k, v in SPEED_FILES.items()
    ),
    DatasetSpec("speed_tensorboard", load_speed_tensorboard, "TensorBoard global_step/sec sample of a single-worker run", (f"{_SPEED}/0lat_*",), "ICDCS'20 §3.1"),
    DatasetSpec("speed_timeseries", load_speed_timeseries, "single-worker speed sample over time (4 CNNs × K80/P100/V100)", (f"{_BASE}/*",),
                "ICDCS'20 one_k80_cluster_training_speed_time_series (§1.2)"),
    DatasetSpec("speed_timeseries_summary", load_speed_timeseries_summary, "summary rows (mean/std) of a speed time series", (f"{_BASE}/*",), "ICDCS'20 §1.2"),
    DatasetSpec("speed_supertable", load_speed_supertable, "speed sample with 0.3 or 30.3 ms latency (4 CNNs × 2 GPUs)", (f"{_SPEED}/speed_data_supertable.csv",),
                "ICDCS'20 multi-feature speed model (§1.7, §1.8)"),
    DatasetSpec("speed_prediction_errors", load_speed_prediction_errors, "per-(GPU, model) step-time prediction error", (f"{_SPEED}/sigmetrics_figure5_comb.csv",),
                "ICDCS'20 per-model prediction-error figure (§1.7)"),
    DatasetSpec("cluster_runs", load_cluster_runs, "cluster global_step/sec sample of a 1–8 worker run (96 runs)", (f"{_CLUSTER}/*",),
                "ICDCS'20 cluster_size_training_speed, figure_5, ps_bot_* (§1.3)"),
    DatasetSpec("checkpoint_samples", load_checkpoint_samples, "one checkpoint (20 CNNs × 5)", (f"{_CKPT}/whole_data.csv",), "ICDCS'20 checkpoint models (§1.6, §1.7)"),
    DatasetSpec("checkpoint_samples:training", lambda: load_checkpoint_samples("training"), "one checkpoint of a training CNN (16 × 5)", (f"{_CKPT}/unaggregated_training.csv",), "ICDCS'20 §1.7"),
    DatasetSpec("checkpoint_samples:test", lambda: load_checkpoint_samples("test"), "one checkpoint of a held-out CNN (4 × 5)", (f"{_CKPT}/unaggregated_test.csv",), "ICDCS'20 §1.7"),
    DatasetSpec("checkpoint_summary", load_checkpoint_summary, "per-model checkpoint time summary (16 training CNNs)", (f"{_CKPT}/ckpt.csv",), "ICDCS'20 §1.6, §1.7"),
    DatasetSpec("checkpoint_summary:aggregated", lambda: load_checkpoint_summary("aggregated"), "per-model checkpoint upload-time summary (20 CNNs)",
                (f"{_CKPT}/aggregated.csv",), "ICDCS'20 ckpt_duration_size_correlation (§1.6)"),
    DatasetSpec("vm_startup", load_vm_startup, "one VM start: provisioning/staging/booting seconds", (f"{_STARTUP}/*",), "ICDCS'20 startup_breakdown (§1.5)"),
    DatasetSpec("chief_rejoining", load_chief_rejoining, "accuracy evaluation of a chief-rejoining run", (f"{_CHIEF}/*",), "ICDCS'20 restart_training_overhead (§1.6)"),
)

"""Datasets derived from the upstream files by a fixed rule: per-run cluster speeds, the V100 single-worker samples,
and the zoo feature table that ships with perfmodel.

They are data, not models: each is a pure function of the hash-checked upstream files (or of the shipped table), with
the rule in its docstring, and each is listed by :func:`perfmodel.datasets.list_datasets` with ``kind="derived"``.
"""
from __future__ import annotations

from importlib import resources

import pandas as pd

from perfmodel.datasets._spec import DatasetSpec
from perfmodel.datasets.cmdare import _BASE, _CLUSTER

__all__ = ["cluster_speeds", "v100_samples", "load_zoo_features", "CLUSTER_SPEED_MIN_STEP", "DATASETS"]

#: Samples of a cluster run with ``step >= 2000`` are averaged: the TensorBoard exports start with a warm-up in which
#: workers join one by one; from step 2000 on, the means reproduce 92 of the 96 speeds the authors plotted (their
#: ``cluster_speed`` array, redrawn by the first cell of their cluster notebook) within 1 %.
CLUSTER_SPEED_MIN_STEP = 2000


def cluster_speeds(min_step: int = CLUSTER_SPEED_MIN_STEP) -> pd.DataFrame:
    """Mean and std of cluster speed per run of CM-DARE's ``speed_and_cluster_size`` exports (96 runs), next to the
    speeds the authors plotted.

    Parameters
    ----------
    min_step : int, default 2000
        Samples with ``step >= min_step`` are averaged (see :data:`CLUSTER_SPEED_MIN_STEP`).

    Returns
    -------
    DataFrame
        ``gpu``, ``n_ps``, ``model``, ``n_workers``, ``speed_mean_steps_per_s``, ``speed_std_steps_per_s`` (ddof=1),
        ``n_samples``, ``reported_mean_steps_per_s``, ``reported_std_steps_per_s`` (the authors' plotted array),
        ``rel_diff_pct`` (ours vs reported, signed) and ``within_1pct``.
    """
    from perfmodel.datasets.cmdare import load_cluster_runs
    from perfmodel.datasets.names import canonical_model
    from perfmodel.datasets.reference import load_transcribed

    if isinstance(min_step, bool) or not isinstance(min_step, int) or min_step < 0:
        raise ValueError(f"min_step must be a non-negative int (the first step averaged); got {min_step!r}.")
    runs = load_cluster_runs()
    keep = runs[runs["step"] >= min_step]
    if keep.empty:
        raise ValueError(f"No cluster sample has step >= {min_step} (the runs end at step {int(runs['step'].max())}); lower min_step.")
    g = keep.groupby(["gpu", "n_ps", "model", "n_workers"], observed=True)["speed_steps_per_s"]
    out = g.agg(speed_mean_steps_per_s="mean", speed_std_steps_per_s="std", n_samples="size").reset_index()
    rep = load_transcribed("cluster_speed")
    rep["model"] = rep["model"].map(canonical_model)
    rep = rep.rename(columns={"speed_mean_steps_per_s": "reported_mean_steps_per_s", "speed_std_steps_per_s": "reported_std_steps_per_s"})
    out["model"] = out["model"].astype(str)
    out = out.merge(rep[["gpu", "n_ps", "model", "n_workers", "reported_mean_steps_per_s", "reported_std_steps_per_s"]],
                    on=["gpu", "n_ps", "model", "n_workers"], how="left", validate="one_to_one")
    out["rel_diff_pct"] = (out["speed_mean_steps_per_s"] / out["reported_mean_steps_per_s"] - 1) * 100  # a difference of data, not an error
    out["within_1pct"] = out["rel_diff_pct"].abs() <= 1
    out["gpu"] = out["gpu"].astype(str)
    return out


def v100_samples() -> pd.DataFrame:
    """V100 single-worker samples of CM-DARE's time series (first sample of each run dropped, as in the paper's plots),
    with ``step_time_s`` = 1 / speed, the CNN's ``normalized_model`` and the paper's ``normalized_computation``.

    ``normalized_computation`` is CM-DARE's min-max normalisation of model FLOPs / GPU TFLOPS over K80 and P100:
    ``(F/T − F_min/T_P100) / (F_max/T_K80 − F_min/T_P100)`` with ``F_min``, ``F_max`` the smallest and largest model FLOPs
    of the twenty CNNs (model metadata) and the TFLOPS of the GPU catalog (K80 4.113, P100 9.526, V100 15.667: the V100 is
    not in the paper's data, so its values may leave [0, 1]).
    """
    from perfmodel.datasets.cmdare import load_model_metadata, load_speed_timeseries
    from perfmodel.datasets.reference import gpu_tflops

    ts = load_speed_timeseries()
    v = ts[(ts["gpu"] == "V100") & ~ts["first_sample"] & ~ts["origin_row"]].copy()
    v["step_time_s"] = 1 / v["speed_steps_per_s"]
    meta = load_model_metadata()
    f_min, f_max = float(meta["model_flops"].min()), float(meta["model_flops"].max())
    meta = meta[["model", "normalized_model", "model_flops"]].assign(model=lambda m: m["model"].astype(str))
    v = v.assign(model=v["model"].astype(str)).merge(meta, on="model", how="left")
    v["gpu_tflops"] = gpu_tflops("V100")
    lo, hi = f_min / gpu_tflops("P100"), f_max / gpu_tflops("K80")
    v["normalized_computation"] = (v["model_flops"] / v["gpu_tflops"] - lo) / (hi - lo)
    return v


def load_zoo_features() -> pd.DataFrame:
    """The precomputed graph features of the twenty zoo CNNs (batch 1, 3×32×32), shipped with perfmodel.

    No torch needed. Regenerate with ``python -m perfmodel.features.zoo_table``; the columns are
    :data:`perfmodel.features.FEATURE_COLUMNS`.
    """
    from perfmodel.datasets._io import parse_csv

    res = resources.files("perfmodel._data") / "features" / "zoo_features.csv"
    return parse_csv(res.read_bytes(), source="perfmodel datasets/features/zoo_features.csv", keep_default_na=False)


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("cluster_speeds", cluster_speeds, "one cluster run: mean/std speed over steps >= 2000, next to the authors' plotted speed",
                (f"{_CLUSTER}/*", "reference/transcribed/cluster_speed.csv"), "ICDCS'20 cluster-size, one-PS and PS-bottleneck figures", kind="derived"),
    DatasetSpec("v100_samples", v100_samples, "one V100 single-worker sample: step time, normalized model and computation",
                (f"{_BASE}/*", "model_metadata", "reference/gpus.csv"), "cross-GPU protocol (beyond the paper)", kind="derived"),
    DatasetSpec("zoo_features", load_zoo_features, "one zoo CNN: graph features at batch 1 (FLOPs, bytes, parameters, tensors)",
                ("datasets/features/zoo_features.csv",), "ICDCS'20 §4 (features)", kind="derived"),
)

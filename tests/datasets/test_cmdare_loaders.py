"""CM-DARE loaders: shape, dtypes, units and spot values from CATALOG.md (section cited per test)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError

F_MIN, F_MAX = 630989589, 22864820174  # CATALOG.md §1.1: ResNet-15 and Shake-Shake big Model FLOPs


@pytest.fixture(scope="module")
def speed():
    return ds.load_speed_samples()


@pytest.fixture(scope="module")
def meta():
    return ds.load_model_metadata()


def test_speed_samples_shape_and_dtypes(speed):
    """CATALOG.md §1.1: 20 CNNs × 13 samples per GPU, 520 rows."""
    assert speed.shape[0] == 520
    assert speed.groupby(["gpu", "model"], observed=True).size().eq(13).all()
    assert speed.groupby(["gpu", "model"], observed=True).ngroups == 40
    assert isinstance(speed["model"].dtype, pd.CategoricalDtype) and isinstance(speed["gpu"].dtype, pd.CategoricalDtype)
    for c in ("speed_steps_per_s", "step_time_s", "gpu_tflops", "model_flops", "normalized_model", "avg_tensor_mib", "checkpoint_mb"):
        assert speed[c].dtype == float, c
    assert speed["n_params"].dtype == "int64"
    assert not speed.drop(columns=["model_flops_alt"]).isna().any().any()
    # step time is 1/speed to the files' printed precision (9 decimals; §1.1 quotes 4.5e-9 relative)
    np.testing.assert_allclose(speed["step_time_s"], 1 / speed["speed_steps_per_s"], rtol=5e-9, atol=5e-10)
    assert set(speed["latency_ms"]) == {0.3}
    assert ds.load_speed_samples("k80")["gpu"].eq("K80").all() and len(ds.load_speed_samples("P100")) == 260


def test_speed_samples_per_model_means_match_catalog_table(speed):
    """CATALOG.md §4 table: mean of the 13 samples per (model, GPU), printed to 4 decimals."""
    ref = ds.load_reported_cnns().set_index("model")
    means = speed.groupby(["model", "gpu"], observed=True)["step_time_s"].mean().unstack()
    for m in ds.MODEL_IDS:
        assert means.loc[m, "K80"] == pytest.approx(ref.loc[m, "k80_step_time_s"], abs=5.01e-5), m
        assert means.loc[m, "P100"] == pytest.approx(ref.loc[m, "p100_step_time_s"], abs=5.01e-5), m


def test_unknown_gpu_for_speed_samples():
    # a catalog GPU without samples is not an unknown GPU
    with pytest.raises(ds.NoSamplesError, match=r"^no speed samples for V100 \(samples exist for K80, P100\)") as info:
        ds.load_speed_samples(gpu="V100")
    assert not isinstance(info.value, UnknownNameError) and isinstance(info.value, ValueError)
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'X9'. Expected one of: K80, P4, P100, P100-SXM2, V100, .*, H100, H100-PCIe, H100-NVL, .*, MI100, MI210, MI250, MI300X, MI325X, MI355X\."):
        ds.load_speed_samples("X9")
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'P10'\. .* Did you mean 'P100'"):
        ds.load_speed_samples("P10")


def test_model_metadata_complete_and_defined(meta):
    """CATALOG.md §1.1 (normalisation), §4 (params, tensors, tensor sizes, checkpoint files)."""
    assert meta.shape[0] == 20 and list(meta["model"]) == list(ds.MODEL_IDS)
    ref = ds.load_reported_cnns().set_index("model").loc[list(ds.MODEL_IDS)]
    assert meta["n_params"].tolist() == ref["n_params"].tolist()
    assert meta["n_trainable_tensors"].tolist() == ref["n_trainable_tensors"].tolist()
    assert meta["model_flops"].tolist() == ref["model_flops"].astype(float).tolist()
    np.testing.assert_allclose(meta["normalized_model"], (meta["model_flops"] - F_MIN) / (F_MAX - F_MIN), atol=1e-9)
    np.testing.assert_allclose(meta["max_tensor_mib"], ref["max_tensor_mib"], rtol=0)
    np.testing.assert_allclose(meta["checkpoint_mb"], ref["checkpoint_mb"], rtol=0)
    # avg tensor size = params × 4 B / 2^20 / tensors (§4), to the file's 9 digits
    np.testing.assert_allclose(meta["avg_tensor_mib"], meta["n_params"] * 4 / 2**20 / meta["n_trainable_tensors"], rtol=2e-8)
    assert meta.set_index("model").loc[list(ds.HELD_OUT_MODEL_IDS), "tensor_size_source"].eq("derived").all()
    assert meta["held_out"].sum() == 4
    # checkpoint ≈ weight + meta file (§3.1): within 0.33 % (Shake-Shake 64: 93.33 vs 89.03 + 4.01 = 93.04)
    np.testing.assert_allclose(meta["checkpoint_mb"], meta["weight_file_mb"] + meta["meta_file_mb"], rtol=3.3e-3)
    # alt FLOPs ≈ 7 FLOPs per parameter (§4)
    ratio = (meta["model_flops_alt"] / meta["n_params"]).dropna()
    assert len(ratio) == 16 and ratio.between(6.98, 7.0001).all()


def test_shakesmall_avg_tensor_quirk_kept_in_file_and_fixed_in_metadata(meta):
    """CATALOG.md §3.1: 0latency_data.csv copies ResNet-15's average tensor size into Shake-Shake small."""
    raw = ds.load_speed_file("data")
    small = raw.loc[raw["model"] == "shake-shake-small", "avg_tensor_mib"].unique()
    res15 = raw.loc[raw["model"] == "resnet-15", "avg_tensor_mib"].unique()
    assert small.tolist() == [0.05293411255] and res15.tolist() == [0.052934113]  # the same number, printed differently
    assert meta.set_index("model").loc["shake-shake-small", "avg_tensor_mib"] == pytest.approx(0.051692, abs=5e-7)


@pytest.mark.parametrize("name", list(ds.SPEED_FILES))
def test_speed_files_rows_and_column_meaning(name):
    """CATALOG.md §3.1 row counts; §1.1/§7.1: Model/GPU means different things in different files."""
    df = ds.load_speed_file(name)
    spec = ds.SPEED_FILES[name]
    assert len(df) == spec["rows"]
    assert df["row"].tolist() == list(range(len(df)))
    if "normalized_computation" in df:
        rows = df.dropna(subset=["normalized_computation"])
        expected = (rows["model_flops"] / rows["gpu_tflops"] - F_MIN / 9.526) / (F_MAX / 4.113 - F_MIN / 9.526)
        np.testing.assert_allclose(rows["normalized_computation"], expected, atol=1e-9)
    if "model_per_gpu_copy" in df:
        rows = df.dropna(subset=["model_per_gpu_copy"])
        np.testing.assert_array_equal(rows["model_per_gpu_copy"], rows["normalized_model"])
    if spec["flops"] == "alt":
        assert "model_flops" not in df and df["model_flops_alt"].max() < 2e8


def test_unknown_speed_file():
    with pytest.raises(UnknownNameError, match=r"Unknown speed file 'k80_old'. Expected one of: data, k80, p100"):
        ds.load_speed_file("k80_old")


def test_heldout_samples():
    """CATALOG.md §3.1: 0latency_k80_test.csv, 4 held-out CNNs × 18 samples."""
    df = ds.load_heldout_speed_samples()
    assert df.shape[0] == 72
    assert set(df["model"]) == set(ds.HELD_OUT_MODEL_IDS)
    assert df.groupby("model", observed=True).size().eq(18).all()
    assert df.loc[df["model"] == "custom-resnet-9", "normalized_model"].iloc[0] == 0.06163024382


def test_tensorboard_exports():
    df = ds.load_speed_tensorboard()
    assert len(df) == 580
    n = df.groupby(["gpu", "model"], observed=True).size()
    assert n.loc[("K80", "custom-resnet-9")] == 19 and n.loc[("P100", "custom-resnet-9")] == 14
    # the 13 K80 ResNet-15 samples = rows minus the first (step 101) of the export (§3.1)
    tb = df[(df["model"] == "resnet-15") & (df["gpu"] == "K80")]
    s = ds.load_speed_samples("K80")
    np.testing.assert_allclose(np.sort(tb["speed_steps_per_s"].iloc[1:]), np.sort(s.loc[s["model"] == "resnet-15", "speed_steps_per_s"]), rtol=1e-9)


# CATALOG.md §1.2: mean speed (K80 including the first sample, P100/V100 excluding it) and mean step time (summary rows)
TS_SPEED = {
    "resnet-15": (9.4527, 21.1586, 27.3754), "resnet-32": (4.5564, 12.1919, 15.6150),
    "shake-shake-small": (2.5733, 6.9922, 8.8029), "shake-shake-big": (0.6961, 1.9756, 2.1826),
}
TS_STEP = {
    "K80": (0.105698, 0.219258, 0.387775, 1.435760), "P100": (0.047287, 0.082122, 0.143482, 0.506299),
    "V100": (0.036570, 0.064079, 0.113683, 0.458289),
}


def test_speed_timeseries_means():
    df = ds.load_speed_timeseries()
    assert len(df) == 472 and df["origin_row"].sum() == 4
    assert set(df["gpu"]) == {"K80", "P100", "V100"}
    for (model, gpu), g in df.groupby(["model", "gpu"], observed=True):
        s = g[~g["origin_row"]]
        assert len(s) == 39 and s["step"].min() == 101 and s["step"].max() == 3901
        if gpu != "K80":
            s = s[~s["first_sample"]]
        expected = TS_SPEED[model][["K80", "P100", "V100"].index(gpu)]
        assert s["speed_steps_per_s"].mean() == pytest.approx(expected, abs=5.01e-5), (model, gpu)


def test_speed_timeseries_summary():
    df = ds.load_speed_timeseries_summary().set_index(["model", "gpu"])
    order = ["resnet-15", "resnet-32", "shake-shake-small", "shake-shake-big"]
    for gpu, vals in TS_STEP.items():
        for m, v in zip(order, vals):
            assert df.loc[(m, gpu), "step_time_mean_s"] == pytest.approx(v, abs=5.01e-7)
    assert np.isnan(df.loc[("resnet-15", "K80"), "speed_mean_steps_per_s"])
    assert df.loc[("resnet-15", "K80"), "speed_std_steps_per_s"] == 0.191459936
    assert df.loc[("resnet-15", "P100"), "speed_mean_steps_per_s"] == pytest.approx(21.1586, abs=5e-5)


def test_supertable_ids_and_latency_effect():
    """CATALOG.md §3.1 (16 groups × 13) and §1.8 (0.3 → 30.3 ms latency)."""
    df = ds.load_speed_supertable()
    assert df.shape == (208, 11)
    assert df.groupby(["gpu", "model", "latency_ms"], observed=True).size().eq(13).all()
    means = df.groupby(["gpu", "model", "latency_ms"], observed=True)["step_time_s"].mean()
    assert means.loc[("K80", "resnet-15", 0.3)] == pytest.approx(0.105817, abs=5e-7)
    assert means.loc[("K80", "resnet-15", 30.3)] == pytest.approx(0.177955, abs=5e-7)
    assert means.loc[("P100", "shake-shake-big", 0.3)] == pytest.approx(0.492689, abs=5e-7)
    assert means.loc[("P100", "shake-shake-big", 30.3)] == pytest.approx(2.416941, abs=5e-7)


def test_prediction_errors():
    """CATALOG.md §1.7: 31 rows, K80 custom1 absent; largest errors ResNet-15 P100 +206.4 %, custom1 P100 +123.8 %."""
    df = ds.load_speed_prediction_errors()
    assert df.shape == (31, 8)
    assert not ((df["gpu"] == "K80") & (df["model"] == "custom-resnet-1")).any()
    top = df.nlargest(3, "error_mean_pct")
    assert top["model"].astype(str).tolist() == ["resnet-15", "custom-resnet-1", "custom-resnet-2"]
    assert top["error_mean_pct"].round(1).tolist() == [206.4, 123.8, 99.2]


def test_cluster_runs_reproduce_reported_means_with_step_2000_rule():
    """CATALOG.md §1.3: 96 runs; mean over Step ≥ 2000 is within 1 % of the reported mean for 92/96 configurations,
    the worst being P100 Shake-Shake big 7 workers (−15.3 %)."""
    runs = ds.load_cluster_runs()
    assert runs.groupby(["gpu", "n_ps", "model", "n_workers"], observed=True).ngroups == 96
    assert runs["n_workers"].between(1, 8).all() and set(runs["n_ps"]) == {1, 2}
    assert not ((runs["gpu"] == "K80") & (runs["n_ps"] == 2)).any()
    sizes = runs.groupby(["gpu", "n_ps", "source_name", "n_workers"], observed=True).size()
    assert sizes.loc[("K80", 1, "res15k80", 6)] == 141 and sizes.loc[("P100", 2, "res15p100ps2", 8)] == 139
    first = runs.groupby(["gpu", "n_ps", "source_name", "n_workers"], observed=True)["step"].min()
    assert first.loc[("P100", 2, "shakesbigp100ps2", 3)] == 351
    est = runs[runs["step"] >= 2000].groupby(["gpu", "n_ps", "model", "n_workers"], observed=True)["speed_steps_per_s"].mean()
    rep = ds.load_transcribed("cluster_speed")
    rep["model"] = rep["model"].map(ds.canonical_model)
    rep = rep.set_index(["gpu", "n_ps", "model", "n_workers"])["speed_mean_steps_per_s"]
    err = (est.reindex(rep.index) / rep - 1) * 100
    assert (err.abs() <= 1).sum() == 92
    worst = err.abs().idxmax()
    assert worst == ("P100", 1, "shake-shake-big", 7) and err[worst] == pytest.approx(-15.3, abs=0.05)


def test_checkpoint_samples():
    """CATALOG.md §3.1: whole = training (first 80) + test (last 20); Diff = Duration − Local duration."""
    whole = ds.load_checkpoint_samples()
    tr, te = ds.load_checkpoint_samples("training"), ds.load_checkpoint_samples("test")
    assert whole.shape == (100, 12) and len(tr) == 80 and len(te) == 20
    assert whole.groupby("model", observed=True).size().eq(5).all()
    pd.testing.assert_frame_equal(whole.iloc[:80].reset_index(drop=True), tr, check_categorical=False)
    assert set(te["model"]) == set(ds.HELD_OUT_MODEL_IDS)
    np.testing.assert_allclose(whole["upload_duration_s"], whole["duration_s"] - whole["local_duration_s"], atol=0.0101)
    assert (whole["duration_s"] > 0).all()
    assert set(whole.loc[whole["model"] == "shake-shake-big", "source_name"]) == {"Shake large"}
    with pytest.raises(UnknownNameError, match=r"Unknown checkpoint sample source 'all'. Expected one of: whole, training, test"):
        ds.load_checkpoint_samples("all")


def test_checkpoint_summaries_duration_meaning():
    """CATALOG.md §1.6, §7.1: 'Duration mean (s)' is mean Duration in ckpt.csv, mean Diff in aggregated.csv."""
    ck = ds.load_checkpoint_summary().set_index("model")
    ag = ds.load_checkpoint_summary("aggregated").set_index("model")
    assert len(ck) == 16 and len(ag) == 20
    assert ck.loc["resnet-15", "duration_mean_s"] == 3.79 and ag.loc["resnet-15", "upload_duration_mean_s"] == 3.56
    whole = ds.load_checkpoint_samples()
    assert whole[whole["model"] == "resnet-15"]["upload_duration_s"].mean() == pytest.approx(3.56, abs=0.005)
    assert ag.loc["shake-shake-64-32d", "source_name"] == "Shake 64 32d"
    assert (ck["throughput_mean_mb_per_s"] == 57.19).all() and (ck["throughput_std_mb_per_s"] == 3.44).all()
    assert ag.loc[list(ds.HELD_OUT_MODEL_IDS), "n_params"].isna().all()
    np.testing.assert_allclose(ag["upload_duration_cv"], ag["upload_duration_std_s"] / ag["upload_duration_mean_s"], rtol=0.05)


# CATALOG.md §1.5 table: n and total (s)
STARTUP = {
    ("us-east1", True, "K80"): (12, 80.6518), ("us-east1", True, "P100"): (15, 91.8807),
    ("us-east1", False, "K80"): (14, 75.5630), ("us-east1", False, "P100"): (17, 70.3367),
    ("us-west1", True, "K80"): (10, 85.8184), ("us-west1", True, "P100"): (8, 90.3877),
    ("us-west1", False, "K80"): (15, 68.6242), ("us-west1", False, "P100"): (9, 69.1755),
}


def test_vm_startup_in_seconds():
    df = ds.load_vm_startup()
    assert df.shape == (100, 9)
    g = df.groupby(["region", "transient", "gpu"], observed=True)
    for k, (n, total) in STARTUP.items():
        assert g.size().loc[k] == n
        assert g["total_s"].mean().loc[k] == pytest.approx(total, abs=5e-5)
    assert g["staging_s"].mean().loc[("us-east1", True, "K80")] == pytest.approx(41.346, abs=5e-4)
    # seconds, not ms: every phase is between 0.5 s and 2 minutes
    assert df[["provisioning_s", "staging_s", "booting_s"]].stack().between(0.5, 120).all()


def test_chief_rejoining_totals_and_accuracy():
    """CATALOG.md §1.6: total training time (last − first wall time) and final accuracy of each file."""
    df = ds.load_chief_rejoining()
    assert df.shape == (63, 7)
    last = df.groupby("run").last()
    totals = {"base": 1363.31, "base-1": 1424.06, "exp-5500": 1426.09, "exp-6000": 1485.84, "exp-6500-1": 1365.28,
              "exp-6500-2": 1546.36, "exp-7000-2": 1607.51, "exp-7500": 1547.24, "exp-7500-1": 1608.40}
    acc = {"base": 81.72, "base-1": 81.67, "exp-5500": 81.76, "exp-6000": 79.48, "exp-6500-1": 77.89, "exp-6500-2": 79.07,
           "exp-7000-2": 78.59, "exp-7500": 78.15, "exp-7500-1": 82.73}
    for run, t in totals.items():
        assert last.loc[run, "elapsed_s"] == pytest.approx(t, abs=0.005)
        assert last.loc[run, "accuracy"] * 100 == pytest.approx(acc[run], abs=0.005)
    assert last.loc["exp-6500-2", "rejoin_step"] == 6500 and last.loc["exp-6500-2", "repetition"] == 2
    assert pd.isna(last.loc["base", "rejoin_step"]) and df["accuracy"].between(0, 1).all()

"""Reference data shipped with perfmodel (reported numbers, GPU catalog, prices) and dataset listing."""
from __future__ import annotations

import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError

# transcribed/README.md file table: rows per file
TRANSCRIBED_ROWS = {
    "cluster_speed": 96, "lifetime_cdf": 299, "revocations_by_hour": 147, "revocations_s2020_draft": 151, "tf_restart": 34,
    "restart_overhead": 12, "restart_overhead_drafts": 16, "chief_rejoining_accuracy": 11, "vm_request_time": 8,
    "checkpoint_test_models": 24, "time_between_failures": 128, "training_time_estimates": 11, "latency_step_time": 51,
    "replacement_timings": 108, "vm_startup_phases": 174, "factor_accuracy_curves": 221, "icac19_lifetime_cdf": 150,
}


def test_transcribed_files_shipped_verbatim(mirror):
    for name, rows in TRANSCRIBED_ROWS.items():
        df = ds.load_transcribed(name)
        assert len(df) == rows, name
        assert {"source_file", "source_cell"} <= set(df.columns) or "source_file" in df.columns, name
        shipped = pd.read_csv(mirror / "transcribed" / f"{name}.csv", float_precision="round_trip")
        pd.testing.assert_frame_equal(df, shipped, check_dtype=False)


def test_transcribed_spot_values():
    """CATALOG.md §1.3 table and §1.4."""
    cs = ds.load_transcribed("cluster_speed").set_index(["model", "gpu", "n_ps", "n_workers"])["speed_mean_steps_per_s"]
    assert cs.loc[("ResNet-15", "P100", 2, 8)] == 176.67 and cs.loc[("Shake Shake Big", "K80", 1, 1)] == 0.68
    tbf = ds.load_transcribed("time_between_failures")
    assert tbf["censored_at_24h"].sum() == 84 and tbf["time_between_failures_s"].max() == 86400
    byh = ds.load_transcribed("revocations_by_hour")
    tot = byh[byh["basis"] == "hours_since_start"].groupby("gpu")["revocations"].sum()
    assert tot.to_dict() == {"K80": 72, "P100": 65, "V100": 69}


def test_unknown_transcribed_name():
    with pytest.raises(UnknownNameError, match=r"Unknown transcribed array 'cluster'. Expected one of: cluster_speed, lifetime_cdf"):
        ds.load_transcribed("cluster")


def test_gpu_catalog_matches_the_data():
    """CATALOG.md §6: K80 4.113, P100 9.526 peak FP32 TFLOPS, as the data's GPU TFLOPS column."""
    cat = ds.load_gpu_catalog().set_index("gpu")
    assert list(cat.index) == list(ds.CATALOG_GPU_IDS) and set(ds.GPU_IDS) <= set(cat.index)
    assert cat.loc["K80", "fp32_peak_tflops"] == 4.113 and cat.loc["P100", "fp32_peak_tflops"] == 9.526
    speed = ds.load_speed_samples()
    assert speed.groupby("gpu", observed=True)["gpu_tflops"].unique().map(list).to_dict() == {"K80": [4.113], "P100": [9.526]}
    assert cat.index[cat["in_paper_data"]].tolist() == ["K80", "P100"]
    assert cat["fp32_tflops_source"].str.len().gt(10).all() and cat["bandwidth_source"].str.len().gt(10).all()
    assert (cat["memory_bandwidth_gb_per_s"] > 0).all()
    assert ds.gpu_tflops("k80") == 4.113
    with pytest.raises(UnknownNameError, match=r"Unknown GPU 'GTX 1080'"):
        ds.gpu_tflops("GTX 1080")


def test_prices_icac19_table_ii():
    """CATALOG.md §2/§6: ICAC'19 Table II hourly prices (2019)."""
    p = ds.load_prices()
    w = p[p["server"] == "worker"].set_index("gpu")
    assert w.loc["K80", ["on_demand_usd_per_h", "transient_usd_per_h"]].tolist() == [0.723, 0.256]
    assert w.loc["P100", ["on_demand_usd_per_h", "transient_usd_per_h"]].tolist() == [1.43, 0.551]
    assert w.loc["V100", ["on_demand_usd_per_h", "transient_usd_per_h"]].tolist() == [2.144, 0.861]
    ps = p[p["server"] == "parameter_server"].iloc[0]
    assert (ps["on_demand_usd_per_h"], ps["transient_usd_per_h"]) == (0.143, 0.041)
    assert p["price_date"].str.contains("2019").all() and p["citation"].str.contains("Table II").all()


def test_list_datasets_offline_and_with_shapes():
    names = ds.list_datasets(with_shape=False)
    assert {"name", "kind", "description", "sources", "paper"} <= set(names.columns)
    assert names["name"].is_unique
    full = ds.list_datasets()
    assert (full["rows"] > 0).all() and (full["columns"] > 0).all()
    for name in ("speed_samples", "heldout_speed_samples", "speed_timeseries", "cluster_runs", "checkpoint_samples",
                 "checkpoint_summary:aggregated", "vm_startup", "chief_rejoining", "speed_supertable", "transcribed:cluster_speed", "gpu_catalog", "prices"):
        assert name in set(full["name"]), name
    sizes = full.set_index("name")["rows"]
    assert sizes["speed_samples"] == 520 and sizes["cluster_runs"] == 4979 and sizes["checkpoint_samples"] == 100
    assert ds.load_dataset("vm_startup").shape == (100, 9)
    assert set(full.loc[full["kind"] == "measurements", "name"]) == {"cpu_steps", "cpu_checkpoints"}


def test_unknown_dataset_lists_valid_ones():
    with pytest.raises(UnknownNameError, match=r"Unknown dataset 'speed'. Expected one of: speed_samples, heldout_speed_samples, .*See perfmodel.datasets.list_datasets"):
        ds.load_dataset("speed")


def test_reference_data_cites_nothing_outside_the_project():
    """Citations and reasons name the papers, the upstream files and cells, never a document users do not have."""
    from importlib import resources

    root = resources.files("perfmodel._data") / "reference"
    files = [p for p in root.iterdir() if p.name.endswith((".csv", ".md"))]
    for sub in ("paper_numbers", "transcribed"):
        files += [p for p in (root / sub).iterdir() if p.name.endswith((".csv", ".md"))]
    assert len(files) > 20
    bad = [p.name for p in files if "CATALOG" in p.read_text(encoding="utf-8")]
    assert bad == []

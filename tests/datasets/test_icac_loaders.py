"""ICAC'19 loaders: shape, dtypes, units and spot values from CATALOG.md §2 and §3.2."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel._errors import UnknownNameError


@pytest.fixture(scope="module")
def runs():
    return ds.load_icac_runs()


@pytest.fixture(scope="module")
def vms():
    return ds.load_icac_vms()


def test_lifetimes_sections_and_counts():
    """CATALOG.md §3.2: K80 64, P100 40, V100 48 (Feb 2019); previous experiments 348 CPU test* VMs and the gpu* K80 VMs."""
    lt = ds.load_vm_lifetimes()
    n = lt.groupby(["section", "server_type"]).size()
    assert n.loc[("feb2019", "K80")] == 64 and n.loc[("feb2019", "P100")] == 40 and n.loc[("feb2019", "V100")] == 48
    assert n.loc[("previous", "CPU")] == 348
    # the catalog says 63 gpu* VMs; the file has 64 lines starting with "gpu" (none duplicated)
    assert n.loc[("previous", "K80")] == 64
    assert (lt["lifetime_s"] >= 0).all() and lt["lifetime_h"].max() <= 25
    np.testing.assert_allclose(lt["lifetime_h"], lt["lifetime_s"] / 3600)
    assert set(lt.loc[lt["section"] == "feb2019", "region"]) <= set(ds.REGION_IDS)
    assert lt.loc[lt["vm_name"] == "a-p100-us-west1-b-1less", "stress"].item() is False or not lt.loc[lt["vm_name"] == "a-p100-us-west1-b-1less", "stress"].item()
    assert lt["start"].dtype.kind == "M"


def test_lifetimes_reproduce_plot_py_cdf_1_and_2():
    """CATALOG.md §3.2: CDF[i] = fraction of the Feb-2019 K80 (64) / P100 (40) VMs with lifetime < i+1 h = plot.py cdf_1 / cdf_2."""
    lt = ds.load_vm_lifetimes()
    ref = ds.load_transcribed("icac19_lifetime_cdf")
    for gpu, var in (("K80", "cdf_1"), ("P100", "cdf_2")):
        h = lt[(lt["section"] == "feb2019") & (lt["server_type"] == gpu)]["lifetime_h"].to_numpy()
        r = ref[ref["source_variable"] == var].sort_values("source_index")
        got = [(h < x).mean() for x in r["lifetime_lt_hours"]]
        np.testing.assert_allclose(got[:-1], r["fraction_revoked"].to_numpy()[:-1], atol=5e-11)


def test_runs_every_experiment(runs):
    """CATALOG.md §3.2 run counts per configuration."""
    n = runs.groupby(["experiment", "config"]).size()
    assert n.loc[("k80_spot", "2-spot")] == 32 and n.loc[("k80_spot", "8-spot")] == 32
    assert n.loc[("k80_on_demand", "k80-demand")] == 10 and n.loc[("p100_v100_spot", "p100")] == 33
    assert n.loc[("p100_v100_spot", "v100")] == 24 and n.loc[("experiment_mixed_gpu", "1v2p1k")] == 10
    assert n.loc[("experiment_1ps_vs_2ps", "2ps5k")] == 5 and n.loc[("experiment_cross_region", "2e1c1w-p100")] == 5
    assert set(runs["experiment"]) == set(ds.ICAC_EXPERIMENTS)
    assert (runs["duration_s"] > 0).all() and runs["accuracy"].between(0, 1).all()
    assert (runs["n_workers"] == runs[["n_k80", "n_p100", "n_v100"]].sum(axis=1)).all()
    mixed = runs[runs["config"] == "2v1p1k"].iloc[0]
    assert (mixed["n_v100"], mixed["n_p100"], mixed["n_k80"]) == (2, 1, 1)
    cr = runs[runs["config"] == "2e1c1w"].iloc[0]
    assert cr["region_mix"] == "us-east1:2;us-central1:1;us-west1:1" and cr["n_k80"] == 4
    single = runs[runs["config"] == "k80-demand"].iloc[0]
    assert single["n_ps"] == 0 and not single["transient"]


def test_runs_failed_and_agg(runs):
    """CATALOG.md §2: agg_data drops failed runs (2-spot us-east1-c run 1, accuracy 0.0993; 4-spot us-east1-c run 7)."""
    spot = runs[runs["experiment"] == "k80_spot"]
    dropped = spot[~spot["in_agg_data"].fillna(False)]
    assert sorted(zip(dropped["config"], dropped["zone"], dropped["run"])) == [("2-spot", "us-east1-c", 1), ("4-spot", "us-east1-c", 7)]
    assert spot.loc[(spot["config"] == "2-spot") & (spot["zone"] == "us-east1-c") & (spot["run"] == 1), "accuracy"].item() == 0.0993


def test_runs_spot_values(runs):
    """CATALOG.md §2: 1ps_k80 durations (h), Table III single P100 (1.50 h, $0.83) and Table V on-demand means."""
    one = runs[runs["config"] == "1ps_k80"].sort_values("n_workers")
    assert one["n_workers"].tolist() == [2, 3, 4, 5, 6, 7, 8]
    np.testing.assert_allclose(one["duration_h"].round(4), [1.9337, 1.3140, 0.9621, 0.7607, 0.6439, 0.5431, 0.4927])
    p100 = runs[(runs["config"] == "p100") & runs["in_agg_data"].fillna(False)]
    assert p100["duration_h"].mean() == pytest.approx(1.50, abs=0.005) and p100["cost_usd_file"].mean() == pytest.approx(0.83, abs=0.005)
    od = runs[runs["experiment"] == "k80_on_demand"].groupby("config")[["duration_h", "cost_usd_file", "accuracy"]].mean()
    assert od.loc["8-demand", "duration_h"] == pytest.approx(0.51, abs=0.005) and od.loc["8-demand", "cost_usd_file"] == pytest.approx(3.01, abs=0.005)
    # Table V prints 3.16 for 2 on-demand K80; the recorded costs average 3.1656 (the reconciliation belongs to the cost model)
    assert od.loc["2-demand", "cost_usd_file"] == pytest.approx(3.1656, abs=5e-5) and od.loc["k80-demand", "duration_h"] == pytest.approx(3.91, abs=0.005)
    # 4-spot all-runs accuracy (91.23 %, Table III) and sample std (ddof=1) of duration (0.17 h)
    four = runs[(runs["config"] == "4-spot") & runs["in_agg_data"].fillna(False)]
    assert four["accuracy"].mean() * 100 == pytest.approx(91.23, abs=0.005) and four["duration_h"].std() == pytest.approx(0.17, abs=0.005)


def test_durations_follow_the_processing_rule(runs):
    """train_data_processed Duration = first row with Step ≥ 64000 minus the last Step-0 row (data_processor.py)."""
    curves = ds.load_icac_accuracy_curves()
    for cfg, zone, run in (("4-spot", "us-east1-c", 2), ("2-spot", "us-west1-b", 3), ("8-spot", "europe-west1-b", 1)):
        g = curves[(curves["config"] == cfg) & (curves["zone"] == zone) & (curves["run"] == run)]
        expect = g.loc[g["step"] >= 64000, "elapsed_s"].iloc[0]
        got = runs[(runs["config"] == cfg) & (runs["zone"] == zone) & (runs["run"] == run)]["duration_s"].item()
        assert got == pytest.approx(expect, abs=1.0)


def test_vms_status_and_revocations(vms):
    """CATALOG.md §2: 64/128/256 VMs; 28 of 448 K80 transient servers revoked (24 'Revoked' + 4 revoked masters);
    Fig. 1: 13 of 128 in 11 of 32 4-K80 clusters; 8-spot masters revoked after finishing: us-west1-b run5, europe-west1-b run3."""
    spot = vms[vms["experiment"] == "k80_spot"]
    assert spot.groupby("config").size().to_dict() == {"2-spot": 64, "4-spot": 128, "8-spot": 256}
    assert spot["revoked"].sum() == 28 and spot["status"].eq("revoked").sum() == 24
    four = spot[spot["config"] == "4-spot"]
    assert four["revoked"].sum() == 13 and four[four["revoked"]].groupby(["zone", "run"]).ngroups == 11
    eight_stopped = spot[(spot["config"] == "8-spot") & (spot["role"] == "master") & (spot["status"] == "stopped_revoked_master")]
    assert sorted(zip(eight_stopped["zone"], eight_stopped["run"])) == [("europe-west1-b", 3), ("us-west1-b", 5)]
    assert set(vms["status_source"].dropna()) >= {"Job completed", "Job Completed", "Revoked"}
    assert vms.loc[vms["config"] == "2-demand", "status"].isna().all() and len(vms[vms["config"] == "2-demand"]) == 20
    assert (vms["uptime_s"] > 0).all()
    assert vms.loc[vms["role"] == "master", "worker_index"].isna().all()
    assert vms.loc[vms["vm_name"] == "spot2-us-east1-c-run1-worker-0", "region"].item() == "us-east1"


def test_costs_tidy():
    c = ds.load_icac_costs()
    assert (c["cost_usd"] > 0).all()
    two = c[c["config"] == "2-spot"]
    assert len(two) == 32 and two["source_name"].str.startswith("spot2-").all() and not two["zone"].str.startswith("spot2-").any()


def test_accuracy_curves_and_restart_row():
    """CATALOG.md §3.2: ≈17 evaluations per run; 2ps5k run 1 has a duplicated step-0 restart row."""
    c = ds.load_icac_accuracy_curves()
    assert c["accuracy"].between(0, 1).all()
    restart = c[c["restart_row"]]
    assert restart[["config", "run"]].drop_duplicates().values.tolist() == [["2ps5k", 1]]
    per_run = c.groupby(["experiment", "config", "zone", "run"], dropna=False).size()
    assert per_run.median() == 17
    assert len(ds.load_icac_accuracy_curves("experiment_mixed_gpu")) == 510
    with pytest.raises(UnknownNameError, match=r"Unknown ICAC'19 experiment 'mixed'. Expected one of: k80_spot, k80_on_demand"):
        ds.load_icac_accuracy_curves("mixed")


def test_adaptive_lr():
    """CATALOG.md §2 Fig. 5: baseline 3.8541 h, final 93.01 %; naive 2.3963 h, 91.75 %; adaptive 2.3956 h, 92.85 %."""
    a = ds.load_adaptive_lr()
    assert a.groupby("case").size().to_dict() == {"adaptive_lr": 18, "baseline": 17, "naive_lr": 18}
    g = a.groupby("case")
    hours = (g["elapsed_s"].max() / 3600).round(4).to_dict()
    assert hours == {"adaptive_lr": 2.3956, "baseline": 3.8541, "naive_lr": 2.3963}
    assert (g["accuracy"].last() * 100).round(2).to_dict() == {"adaptive_lr": 92.85, "baseline": 93.01, "naive_lr": 91.75}
    dup = a[a["duplicate_step"]]
    assert sorted(zip(dup["case"], dup["step"])) == [("adaptive_lr", 48003), ("naive_lr", 32002)]
    assert isinstance(a, pd.DataFrame)

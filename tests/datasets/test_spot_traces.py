"""Spot availability and preemption traces (skypilot-org/spot-traces): loaders, lives, availability."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets import spot_traces as st


@pytest.fixture(scope="module")
def traces():
    return pm.datasets.load_spot_traces()


def test_every_trace_is_loaded_with_its_metadata(traces):
    assert traces["trace"].nunique() == 34 and list(traces.columns) == st.SPOT_TRACE_COLUMNS
    by = traces.groupby("trace", observed=True).agg(n=("tick", "size"), gap=("gap_s", "first"), nodes=("nodes", "first"),
                                                     mx=("available", "max"))
    assert by.loc["availability/1-node/aws-02-15-2023/us-east-1a_v100_1"].tolist() == [20158, 195.0, 1, 1]
    assert by.loc["availability/16-node/aws-08-27-2023/us-west-2a_v100_1", ["n", "nodes", "mx"]].tolist() == [4736, 16, 16]
    assert (by["mx"] <= by["nodes"]).all() and (traces["available"] >= 0).all()
    g = traces[traces["trace"] == "preemption/1-node/gcp-04-30-2023/us-east1-b_c3-88"]
    assert set(g["region"]) == {"us-east1"} and g["gpu"].isna().all() and g["instance_type"].iloc[0] == "c3-highcpu-88"
    a = traces[traces["zone"] == "us-west-2a"]
    assert set(a["region"]) == {"us-west-2"}
    listed = pm.datasets.list_datasets(with_shape=False).set_index("name")
    assert {"spot_traces", "spot_lifetimes", "spot_availability"} <= set(listed.index)


def test_lives_are_the_runs_of_held_ticks():
    lt = pm.datasets.spot_lifetimes(cloud="aws", gpu="V100")
    assert set(lt["zone"]) == {"us-east-1c", "us-east-1f", "us-west-2b", "us-west-2c"}
    t = pm.datasets.load_spot_traces()
    for trace, g in lt.groupby("trace"):
        a = t.loc[t["trace"] == trace, "available"].to_numpy()
        gap = float(t.loc[t["trace"] == trace, "gap_s"].iloc[0])
        assert g["lifetime_h"].sum() == pytest.approx(a.sum() * gap / 3600)  # every held tick belongs to one life
        n_runs = int(np.sum(np.diff(np.concatenate([[0], a, [0]])) == 1))
        assert len(g) == n_runs
        assert g["preempted"].sum() == n_runs - int(a[-1] == 1)  # only a life still running at the end is censored
    cpu = pm.datasets.spot_lifetimes(gpu=None)
    assert cpu["gpu"].isna().all() and set(cpu["cloud"]) == {"aws", "gcp"}
    with pytest.raises(ValueError, match="cloud must be 'aws' or 'gcp'"):
        pm.datasets.spot_lifetimes(cloud="azure")
    with pytest.raises(ValueError, match="No single-node preemption trace"):
        pm.datasets.spot_lifetimes(cloud="gcp", gpu="V100")


def test_availability_is_monotone_in_the_instances_wanted():
    a = pm.datasets.spot_availability()
    for _, g in a.groupby("trace"):
        p = g.sort_values("n")["p_at_least_n"].to_numpy()
        assert (np.diff(p) <= 1e-12).all() and ((0 <= p) & (p <= 1)).all()
    one = pm.datasets.spot_availability(1).set_index("trace")["p_at_least_n"]
    t = pm.datasets.load_spot_traces()
    g = t[t["trace"] == "availability/1-node/aws-02-15-2023/us-west-2b_v100_1"]
    assert one["availability/1-node/aws-02-15-2023/us-west-2b_v100_1"] == pytest.approx(g["available"].mean())
    with pytest.raises(ValueError, match="n must be a positive number of instances"):
        pm.datasets.spot_availability(0)
    with pytest.raises(ValueError, match="No trace holds 17 instances"):
        pm.datasets.spot_availability(17)


def test_malformed_trace_files_are_refused(monkeypatch):
    monkeypatch.setattr(st, "read_bytes", lambda key: b'{"metadata": {"gap_seconds": 0}, "data": [1, 0]}')
    with pytest.raises(pm.datasets.DataFormatError, match="gap_seconds must be > 0"):
        st._read("ST:preemption/1-node/aws-04-22-2023/us-east-1c_v100_1.json")
    monkeypatch.setattr(st, "read_bytes", lambda key: b'{"data": [1]}')
    with pytest.raises(pm.datasets.DataFormatError, match="expected \\{'metadata'"):
        st._read("ST:preemption/1-node/aws-04-22-2023/us-east-1c_v100_1.json")


def test_heldout_lifetime_models_beat_the_2019_gce_lifetimes_on_2023_aws_spot():
    """Leave-one-zone-out over the four AWS V100 zones: every family fitted on the other zones predicts the held-out zone
    better than the same family fitted on CM-DARE's GCE V100 lifetimes (2023 spot lives are far shorter)."""
    h = pm.diagnostics.spot_lifetime_heldout()
    assert len(h) == 4 * 4 * 2 and set(h["fitted_on"]) == {"other zones", "GCE 2018-19 V100"}
    w = h.pivot_table(index=["zone", "family"], columns="fitted_on", values="heldout_loglik_per_life")
    assert (w["other zones"] > w["GCE 2018-19 V100"]).all()
    assert np.isfinite(h["heldout_loglik_per_life"]).all()
    with pytest.raises(ValueError, match="needs lives from at least two zones"):
        pm.diagnostics.spot_lifetime_heldout(pd.DataFrame({"zone": ["a"], "lifetime_h": [1.0], "preempted": [True]}))
    with pytest.raises(ValueError, match="Unknown lifetime family \\['gamma'\\]"):
        pm.diagnostics.spot_lifetime_heldout(families=("gamma",))
    with pytest.raises(ValueError, match="lifetimes lacks \\['preempted'\\]"):
        pm.diagnostics.spot_lifetime_heldout(pd.DataFrame({"zone": ["a", "b"], "lifetime_h": [1.0, 2.0]}))

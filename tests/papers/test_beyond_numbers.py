"""perfmodel's own results (the beyond and external items) as numbers: the comparison-table shape with no paper value, a
status that says they are perfmodel's own, the protocol of each value, and values that are what the item's data say."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.diagnostics.metrics import mape
from perfmodel.papers import COMPARISON_COLUMNS
from perfmodel.papers._numbers import OWN_RESULT_STATUS, own_results
from perfmodel.reproduce import ITEMS

OWN = [it for it in ITEMS if it.package in ("beyond", "external")]


@pytest.fixture(scope="module")
def tables():
    return {it.id: it.module.numbers() for it in OWN}


def test_every_beyond_and_external_item_computes_its_own_results():
    assert sorted(it.id for it in OWN) == ["async_staleness", "checkpoint_interval", "cpu_step_time_lomo", "lifetime_models", "llama3_paper_runs", "megatron_recompute_runs", "megatron_runs", "nccl_multinode", "neusight_benchmark", "neusight_distributed_benchmark",
                                           "plan_validation", "revocation_expectations", "step_time_honest_protocols", "torchtitan_runs",
                                           "vidur_h100_ops", "vidur_nccl"]
    assert all(it.computes_numbers and not it.no_numbers and not it.numbers_area for it in OWN)


@pytest.mark.parametrize("item", OWN, ids=lambda it: it.id)
def test_own_results_have_the_comparison_shape_no_paper_value_and_a_protocol(item, tables):
    d = tables[item.id]
    assert list(d.columns) == COMPARISON_COLUMNS and len(d) >= 7
    assert (d["item"] == item.legacy_id).all() and d["quantity"].is_unique
    assert d["paper_value"].isna().all() and d["rtol"].isna().all() and d["atol"].isna().all()
    assert (d["status"] == OWN_RESULT_STATUS).all() and d["within_tolerance"].isna().all()
    assert np.isfinite(d["reproduced"].to_numpy(float)).all()
    assert all(len(p) > 40 for p in d["reason"]), "every value carries the protocol it was computed with"
    assert all(c.startswith("perfmodel's own result on ") for c in d["citation"])
    assert "reproduced" not in set(d["status"]) and "EXACT" not in set(d["status"])


def _value(d, quantity):
    row = d[d["quantity"] == quantity]
    assert len(row) == 1, quantity
    return float(row["reproduced"].iloc[0])


def test_honest_protocol_errors_are_the_protocols_mape(tables):
    from perfmodel.papers.beyond import step_time_honest_protocols as m

    d, data = tables["step_time_honest_protocols"], m.data()
    assert len(d) == len(data)
    for r in data.itertuples(index=False):
        assert _value(d, f"{r.protocol}_{r.gpu.lower()}_mape_pct ({r.config})") == r.mape_pct
    lomo = d[d["quantity"].str.startswith("leave_one_model_out_k80")]
    assert lomo["reason"].str.contains("leave-one-model-out on the K80 speed samples").all()
    assert d.loc[d["quantity"].str.startswith("cross_gpu"), "reason"].str.contains("tested on the 152 V100").all()


def test_cpu_lomo_errors_are_per_configuration(tables):
    from perfmodel.papers.beyond import cpu_step_time_lomo as m

    d, data = tables["cpu_step_time_lomo"], m.data()
    assert len(d) == len(data) == data[["batch_size", "threads", "features", "fit"]].drop_duplicates().shape[0]
    r = data.iloc[0]
    q = f"lomo_mape_pct (batch {r.batch_size}, {r.threads} thread{'s' if r.threads > 1 else ''}, {r.features}, {r.fit})"
    assert _value(d, q) == r.mape_pct


def test_lifetime_model_comparison_is_delta_aic_with_the_best_at_zero(tables):
    from perfmodel.papers.beyond import lifetime_models as m

    d, data = tables["lifetime_models"], m.data()
    pooled = data[(data["region"] == "all") & data["aic"].notna()]
    assert len(d) == len(pooled) == 18
    best = pooled[pooled["best"]]
    assert {f"delta_aic_{r.model} ({r.source}, {r.gpu})" for r in best.itertuples()} == set(d.loc[d["reproduced"] == 0, "quantity"])
    assert (d["reproduced"] >= 0).all()
    # the item's data() takes the variant's gpu (the figure's keyword) and returns that GPU's rows
    assert set(m.data(gpu="k80")["gpu"]) == {"K80"}


def test_plan_validation_mape_comes_from_the_metrics(tables):
    from perfmodel.papers.beyond import plan_validation as m

    d, data = tables["plan_validation"], m.data()
    assert _value(d, "time_mape_pct") == pytest.approx(mape(data["measured_time_h"], data["predicted_time_h"]), rel=1e-12)
    assert _value(d, "time_mape_pct") == pytest.approx(data.attrs["mape"]["time_pct"], rel=1e-9)
    assert _value(d, "cost_mape_pct") == pytest.approx(data.attrs["mape"]["cost_pct"], rel=1e-9)
    r = data.iloc[0]
    assert _value(d, f"cost_ape_pct ({r.config})") == pytest.approx(r.cost_ape_pct, rel=1e-9)
    assert len(d) == 2 + 2 * len(data)


def test_revocation_expectations_are_the_renewal_function_with_the_monte_carlo_in_the_protocol(tables):
    from perfmodel.papers.beyond import revocation_expectations as m

    d, data = tables["revocation_expectations"], m.data()
    r = data.iloc[0]
    row = d[d["quantity"] == f"{r.gpu.lower()}_expected_revocations_{r.hours:g}h"].iloc[0]
    assert row["reproduced"] == r.expected and f"{r.simulated:.4g} ± {r.stderr:.2g}" in row["reason"]
    assert "4 servers" in row["reason"] and "2000 trials, random_state 0" in row["reason"]
    k80 = data[data["gpu"] == "K80"]
    assert _value(d, "k80_monte_carlo_vs_renewal_mape_pct") == mape(k80["expected"], k80["simulated"])


def test_checkpoint_interval_numbers_are_the_data_attributes(tables):
    from perfmodel.papers.beyond import checkpoint_interval as m

    d, data = tables["checkpoint_interval"], m.data()
    for q, k in (("checkpoint_s", "checkpoint_s"), ("cluster_mtbf_s", "mtbf_s"), ("young_interval_s", "young_s"), ("daly_interval_s", "daly_s")):
        assert _value(d, q) == data.attrs[k]
    assert _value(d, "simulated_best_interval_s") == data.loc[data["simulated_wall_s"].idxmin(), "interval_s"]
    assert d.loc[d["quantity"] == "young_interval_s", "reason"].iloc[0].startswith("Young's first-order optimum")
    assert "resnet-32 on 4 transient K80 servers, 10 h of work" in d["reason"].iloc[2]


def test_neusight_benchmark_mape_per_gpu_ours_and_neusights(tables):
    from perfmodel.papers.external import _neusight, neusight_benchmark as m

    d, data = tables["neusight_benchmark"], m.data()
    for mode in ("train", "inf"):
        summary = _neusight.neusight_benchmark_summary(data, mode=mode)
        for r in summary.itertuples(index=False):
            g = str(r.gpu).lower()
            assert _value(d, f"{mode}_{g}_perfmodel_mape_pct") == pytest.approx(r.perfmodel_mape_pct, rel=1e-9)
            assert _value(d, f"{mode}_{g}_neusight_published_mape_pct") == pytest.approx(r.neusight_mape_pct, rel=1e-9)
    train = data[(data["mode"] == "train") & (data["status"] == "predicted")]
    h100 = train[train["gpu"] == "H100"]
    assert _value(d, "train_h100_perfmodel_mape_pct") == mape(h100["measured_ms"], h100["predicted_ms"])
    assert "test data only" in d["reason"].iloc[0]


# --------------------------------------------------------------------------------------------------- the helper
def test_own_results_builds_the_comparison_rows():
    d = own_results("x", [dict(quantity="a_pct", unit="pct", value=np.float64(2.5), protocol="leave-one-out")], citation="data")
    assert list(d.columns) == COMPARISON_COLUMNS
    assert d.iloc[0][["item", "quantity", "unit", "reproduced", "status", "reason", "citation"]].tolist() == \
        ["x", "a_pct", "pct", 2.5, OWN_RESULT_STATUS, "leave-one-out", "data"]
    assert pd.isna(d.iloc[0]["paper_value"]) and d["within_tolerance"].isna().all()
    assert list(own_results("x", [], citation="data").columns) == COMPARISON_COLUMNS


@pytest.mark.parametrize("row, match", [
    (dict(quantity="a", unit="pct", value=1.0), r"A result row of item x lacks \['protocol'\]; every row needs \['quantity', 'unit', "
                                                r"'value', 'protocol'\]\. Got keys \['quantity', 'unit', 'value'\]\."),
    (dict(quantity="a", unit="pct", value=float("nan"), protocol="p"), r"Result 'a' of item x must be a finite number; got nan\. "
                                                                        r"Compute it from the data"),
    (dict(quantity="a", unit="pct", value="3", protocol="p"), r"Result 'a' of item x must be a finite number; got '3'\."),
    (dict(quantity="a", unit="pct", value=True, protocol="p"), r"Result 'a' of item x must be a finite number; got True\."),
    (dict(quantity="a", unit="pct", value=1.0, protocol=" "), r"Result 'a' of item x has no protocol; say how it was computed"),
])
def test_own_results_refuses_a_row_without_a_finite_value_or_protocol(row, match):
    with pytest.raises(ValueError, match=match):
        own_results("x", [row], citation="data")


def test_own_results_refuses_a_repeated_quantity():
    row = dict(quantity="a", unit="pct", value=1.0, protocol="p")
    with pytest.raises(ValueError, match=r"Item x reports the quantities \['a'\] more than once; give each result its own quantity name\."):
        own_results("x", [row, row], citation="data")

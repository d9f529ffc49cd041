"""NeuSight's eleven 4-GPU training labels predicted from the single-GPU operator model: MAPE computed from the rows,
next to NeuSight's own (from its published predictions), and the item's figure."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from perfmodel.datasets import load_neusight_errors, load_neusight_labels  # noqa: E402
from perfmodel.papers.external import neusight_distributed_benchmark as impl  # noqa: E402
from perfmodel.papers.external import neusight_distributed_benchmark as item  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_one_row_per_4gpu_label(data):
    lab = load_neusight_labels()
    lab = lab[lab["parallel"] != "none"]
    assert len(data) == len(lab) == 11
    assert set(data["parallel"]) == {"dp4", "tp4", "pp4_1"} and set(data["gpu"]) == {"A100", "H100"}
    merged = data.merge(lab, on=["device", "model", "seq_len", "batch_size", "parallel"])
    np.testing.assert_allclose(merged["measured_ms"], merged["e2e_latency_ms"], rtol=1e-12)
    assert (data["predicted_ms"] > 0).all() and (data["lower_ms"] < data["predicted_ms"]).all()
    assert (data["predicted_ms"] < data["upper_ms"]).all()
    # the pipeline with one micro-batch idles most of the time; data and tensor parallel have no bubble
    assert (data.loc[data["strategy"] == "pp", "bubble_ms"] > 0.5 * data.loc[data["strategy"] == "pp", "predicted_ms"]).all()
    assert (data.loc[data["strategy"] != "pp", "bubble_ms"] == 0).all()


def test_errors_and_mape_are_computed_from_the_rows(data):
    err = 100 * (data["predicted_ms"] - data["measured_ms"]) / data["measured_ms"]
    np.testing.assert_allclose(data["error_pct"], err, rtol=1e-12)
    s = impl.neusight_distributed_summary(data)
    allrow = s[s["group"] == "all"].iloc[0]
    assert allrow["n_labels"] == 11
    assert allrow["perfmodel_mape_pct"] == pytest.approx(err.abs().mean(), rel=1e-12)
    for strategy, grp in data.groupby("strategy"):
        row = s[(s["group"] == "strategy") & (s["value"] == strategy)].iloc[0]
        assert row["perfmodel_mape_pct"] == pytest.approx(grp["abs_error_pct"].mean(), rel=1e-12)
    # NeuSight's columns come from its published predictions, not from our labels
    ns = load_neusight_errors()
    ns = ns[(ns["parallel"] != "none") & (ns["method"] == "neusight")]
    assert allrow["neusight_mape_pct"] == pytest.approx(ns["e2e_error_pct"].mean(), rel=1e-12)
    # the goal: no worse than NeuSight's own mean error on the same labels
    assert allrow["perfmodel_mape_pct"] <= allrow["neusight_mape_pct"]


def test_figure_draws_three_bars_per_label(data):
    fig = item.figure(data)
    ax = fig.axes[0]
    assert len(ax.patches) == 3 * len(data)
    from matplotlib.container import BarContainer

    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 3
    heights = sorted(p.get_height() for p in bars[1])
    np.testing.assert_allclose(heights, sorted(data["predicted_ms"]), rtol=1e-12)
    assert "MAPE" in ax.get_title()
    plt.close("all")


def test_numbers_are_perfmodel_results_computed_from_the_rows(data):
    from perfmodel.diagnostics.metrics import mape

    n = item.numbers().set_index("quantity")
    assert set(n["status"]) == {"PERFMODEL-RESULT"} and n["paper_value"].isna().all()
    assert n.loc["all_perfmodel_mape_pct", "reproduced"] == pytest.approx(mape(data["measured_ms"], data["predicted_ms"]))
    assert n.loc["all_neusight_published_mape_pct", "reproduced"] == pytest.approx(data["neusight_error_pct"].mean())
    assert {"dp_perfmodel_mape_pct", "tp_perfmodel_mape_pct", "pp_perfmodel_mape_pct"} <= set(n.index)


def test_scaling_efficiency_is_computed_from_the_label_pairs(data):
    """Each 4-GPU label with the single-GPU label of the batch one GPU runs: measured and predicted efficiency from the
    two labels and the two predictions; data parallel weak, tensor and pipeline strong scaling."""
    sc = item.scaling()
    lab = load_neusight_labels()
    single = lab[(lab["parallel"] == "none") & (lab["mode"] == "train")]
    assert len(sc) == 4 and set(sc["gpu"]) == {"H100"} and sorted(sc["parallel"]) == ["dp4", "dp4", "pp4_1", "tp4"]
    for r in sc.itertuples(index=False):
        four = data[(data["model"] == r.model) & (data["batch_size"] == r.batch_size) & (data["parallel"] == r.parallel)
                    & (data["gpu"] == r.gpu)].iloc[0]
        one = single[(single["device"] == four["device"]) & (single["model"] == r.model)
                     & (single["batch_size"] == r.single_batch)]["e2e_latency_ms"].iloc[0]
        share = 1 if r.strategy == "dp" else 4
        assert r.single_batch == (r.batch_size // 4 if r.strategy == "dp" else r.batch_size)
        assert r.measured_efficiency == pytest.approx(one / (share * four["measured_ms"]), rel=1e-12)
        assert r.predicted_efficiency == pytest.approx(r.predicted_single_ms / (share * four["predicted_ms"]), rel=1e-12)
        assert 0 < r.predicted_efficiency <= 1.0 + 1e-9
    n = item.numbers().set_index("quantity")
    dp = sc[sc["strategy"] == "dp"]
    assert n.loc["dp_scaling_efficiency_max_abs_difference", "reproduced"] == pytest.approx(dp["difference"].abs().max())
    # which prediction the difference comes from: each of the two steps in turn as measured
    for r in sc.itertuples(index=False):
        four = data[(data["model"] == r.model) & (data["batch_size"] == r.batch_size) & (data["parallel"] == r.parallel)
                    & (data["gpu"] == r.gpu)].iloc[0]
        share = 1 if r.strategy == "dp" else 4
        assert r.difference_single_measured == pytest.approx(
            r.measured_single_ms / (share * four["predicted_ms"]) - r.measured_efficiency, rel=1e-12)
        assert r.difference_four_measured == pytest.approx(
            r.predicted_single_ms / (share * four["measured_ms"]) - r.measured_efficiency, rel=1e-12)
    for col in ("difference_single_measured", "difference_four_measured"):
        assert n.loc[f"dp_scaling_efficiency_max_abs_{col}", "reproduced"] == pytest.approx(dp[col].abs().max())

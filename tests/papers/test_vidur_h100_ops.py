"""The external benchmark on Vidur's FP16 operators: the H100 scored by a model that never saw it, every number computed
from the rows of data(), the current approach beside it, and the figure's bars."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from perfmodel.papers.external import vidur_h100_ops as item  # noqa: E402


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_protocols_score_a_gpu_never_in_their_training_set(data):
    for (proto, held), g in data.groupby(["protocol", "held_out"]):
        trained = set(g.loc[g["predictor"] == "half_precision", "trained_on"].iloc[0].split("+"))
        assert {"H100": "h100", "A40": "a40", "A100-PCIe-80GB": "a100"}[held] not in trained, proto
    h = data[(data["protocol"] == "leave-h100-out")]
    assert set(h["held_out"]) == {"H100"} and set(h["predictor"]) == {"half_precision", "baseline"}
    assert len(h[h["operator"] != "all"]) == 20  # ten operators, two predictors
    allrows = h[h["operator"] == "all"].set_index("predictor")
    per_op = h[h["operator"] != "all"].groupby("predictor")["n_rows"].sum()
    assert allrows["n_rows"].sort_index().to_dict() == per_op.sort_index().to_dict()
    # the half-precision model beats the current approach on the H100 (time-weighted), matmuls within 10 %
    assert allrows.loc["half_precision", "time_weighted_ape_pct"] < allrows.loc["baseline", "time_weighted_ape_pct"]
    mm = h[(h["predictor"] == "half_precision") & h["operator"].str.endswith("_proj")]
    assert (mm["time_weighted_ape_pct"] < 10).all()


def test_numbers_are_the_rows_of_data_and_say_whether_the_goal_is_met(data):
    n = item.numbers().set_index("quantity")["reproduced"]
    h = data[(data["protocol"] == "leave-h100-out") & (data["predictor"] == "half_precision") & (data["operator"] == "all")].iloc[0]
    assert n["leave_h100_out_half_precision_all_time_weighted_ape_pct"] == pytest.approx(h["time_weighted_ape_pct"], rel=1e-12)
    assert n["h100_goal_met"] == float(h["time_weighted_ape_pct"] <= item.GOAL_PCT)
    assert len(n) == 2 * len(data) + 1


def test_figure_draws_one_bar_per_operator_and_predictor(data):
    fig = item.figure(data)
    ax = fig.axes[0]
    heights = sorted(p.get_height() for p in ax.patches)
    want = sorted(data.loc[data["protocol"] == "leave-h100-out", "time_weighted_ape_pct"])
    np.testing.assert_allclose(heights, want)
    plt.close(fig)

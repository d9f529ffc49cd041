"""Speed figures of CM-DARE (CATALOG.md §1.1, §1.2, §1.7): data functions and the artists they draw."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perfmodel as pm


def _offsets(ax):
    return np.concatenate([c.get_offsets() for c in ax.collections])


@pytest.mark.parametrize(
    "name, n, xcol",
    [("speed_complexity_correlation", 520, "normalized_model"), ("speed_computation_correlation", 520, "normalized_computation"),
     ("figure_4", 416, "normalized_model")],
)
def test_scatter_figures_plot_every_sample(name, n, xcol):
    data = getattr(pm.figures, f"{name}_data")()
    assert len(data) == n and set(data["gpu"]) == {"K80", "P100"}
    fig = getattr(pm.figures, name)()
    ax = fig.axes[0]
    pts = _offsets(ax)
    assert len(pts) == n
    np.testing.assert_allclose(np.sort(pts[:, 1]), np.sort(data["step_time_s"].to_numpy()))
    assert ax.get_ylabel() == "Step Time (s)" and [t.get_text() for t in ax.get_legend().get_texts()] == ["K80", "P100"]
    plt.close(fig)


def test_single_worker_timeseries_means():
    """CATALOG.md §1.2 mean speeds (K80 incl. the first sample; P100/V100 excluding it as plotted)."""
    m = pm.figures.single_worker_mean_speeds().set_index(["model", "gpu"])["speed_mean_steps_per_s"]
    assert m[("resnet-15", "K80")] == pytest.approx(9.4527, abs=5e-5)
    assert m[("shake-shake-big", "V100")] == pytest.approx(2.1826, abs=5e-5)
    assert m[("resnet-32", "P100")] == pytest.approx(12.1919, abs=5e-5)
    fig = pm.figures.single_worker_timeseries("K80")
    ax = fig.axes[0]
    assert len(ax.lines) == 4 and ax.get_ylim() == (0, 11)
    first = ax.lines[0].get_xydata()
    assert tuple(first[0]) == (0.0, 0.0) and len(first) == 40  # origin row + 39 samples
    plt.close(fig)
    fig = pm.figures.single_worker_timeseries("V100")
    assert len(fig.axes[0].lines[0].get_xydata()) == 38  # first sample dropped
    plt.close(fig)
    with pytest.raises(ValueError, match=r"No single-worker time series for T4; the data has K80, P100 and V100"):
        pm.figures.single_worker_timeseries_data("T4")


def test_prediction_error_bars():
    data = pm.figures.prediction_error_data()
    fig = pm.figures.prediction_error()
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert len(heights) == 2 * 16
    assert max(heights) == pytest.approx(data["error_mean_pct"].max())
    plt.close(fig)


def test_predicted_vs_measured():
    fig = pm.figures.speed_prediction(gpu="P100", method="svr")
    assert len(_offsets(fig.axes[0])) == 52
    plt.close(fig)

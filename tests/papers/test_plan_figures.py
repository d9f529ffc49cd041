"""Figures of the planner check and of revocations/checkpointing: numbers first, then artists."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perfmodel as pm


def test_plan_validation_figure_plots_every_configuration():
    d = pm.figures.plan_validation_data()
    fig = pm.figures.plan_validation(d)
    pts = sum(len(c.get_offsets()) for c in fig.axes[0].collections)
    assert pts == len(d) == 14 and fig.axes[0].get_title() == f"MAPE {d['time_ape_pct'].mean():.1f} %"
    plt.close(fig)


def test_revocation_expectations_agree_with_monte_carlo():
    d = pm.figures.revocation_expectations_data(hours=(1, 8, 24), trials=2000)
    assert len(d) == 9 and ((d["expected"] - d["simulated"]).abs() < 3.5 * d["stderr"] + 1e-3).all()
    fig = pm.figures.revocation_expectations(d)
    assert len(fig.axes[0].lines) >= 3
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), d[d["gpu"] == "K80"]["expected"])
    plt.close(fig)


def test_checkpoint_interval_optimum_is_young_daly():
    """ResNet-32 on 4 transient K80: checkpoint ≈ 3.97 s (§1.7 model), slot MTBF 15.8 h / 4 → Daly ≈ 5.6 min, the
    best simulated interval of the grid."""
    d = pm.figures.checkpoint_interval_data(trials=800)
    a = d.attrs
    assert a["checkpoint_s"] == pytest.approx(3.97, abs=0.01) and a["mtbf_s"] == pytest.approx(15.8077 * 3600 / 4, rel=1e-4)
    assert a["daly_s"] < a["young_s"] and d.loc[d["simulated_wall_s"].idxmin(), "interval_s"] == pytest.approx(a["daly_s"])
    fig = pm.figures.checkpoint_interval(d)
    assert fig.axes[0].get_xscale() == "log"
    plt.close(fig)

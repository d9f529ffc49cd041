"""CM-DARE cluster figures (CATALOG.md §1.3): the plotted series and their recomputation from the runs."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perfmodel as pm


def test_cluster_size_training_speed():
    d = pm.figures.cluster_size_training_speed_data()
    assert len(d) == 32 and set(d["n_ps"]) == {2}
    assert d.loc[(d.model == "resnet-15") & (d.n_workers == 8), "speed_mean_steps_per_s"].item() == 176.67
    fig = pm.figures.cluster_size_training_speed()
    lines = fig.axes[0].lines
    assert len(lines) == 4 and list(lines[0].get_ydata()) == d[d.model == "resnet-15"]["speed_mean_steps_per_s"].tolist()
    plt.close(fig)
    data = pm.figures.cluster_size_training_speed_data(source="data")
    np.testing.assert_allclose(data["speed_mean_steps_per_s"], d["speed_mean_steps_per_s"], rtol=0.04)


def test_figure_5_and_ps_bot():
    d = pm.figures.figure_5_data()
    assert len(d) == 64 and set(d["gpu"]) == {"K80", "P100"}
    fig = pm.figures.figure_5()
    assert len(fig.axes) == 2
    plt.close(fig)
    p = pm.figures.ps_bot_p100_data(1)
    best = p.groupby("n_ps")["speed_mean_steps_per_s"].max()
    assert best[2] / best[1] == pytest.approx(176.67 / 103.69)  # CATALOG.md §1.3: a 2nd PS gives 1.70×
    fig = pm.figures.ps_bot_p100(1)
    ax = fig.axes[0]
    assert ax.get_ylim()[1] == 205 and [t.get_text() for t in ax.get_legend().get_texts()] == ["1 PS", "2 PS"]
    plt.close(fig)
    assert set(pm.figures.ps_bot_k80_data(2)["model"]) == {"shake-shake-small", "shake-shake-big"}
    plt.close(pm.figures.ps_bot_k80(2))
    with pytest.raises(ValueError, match=r"k must be one of \[1, 2, 3, 4\]; got 5"):
        pm.figures.ps_bot_p100(5)
    with pytest.raises(ValueError, match=r"source must be 'reported' \(the paper's arrays\) or 'data'"):
        pm.figures.figure_5_data(source="mine")

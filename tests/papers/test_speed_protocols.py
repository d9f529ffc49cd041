"""Beyond the paper: step-time prediction under leave-one-model-out and cross-GPU protocols (issue targets)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

import perfmodel as pm


@pytest.fixture(scope="module")
def table():
    return pm.figures.speed_protocols_data().set_index(["config", "protocol", "gpu"])["mape_pct"]


def test_paper_split_rows_reproduce_the_paper(table):
    """CATALOG.md §1.7: the paper's LR MAPE on its split is 19.06 % (K80) and 22.28 % (P100); SVR-poly 9.96 % (K80)."""
    assert table[("paper: LR", "paper_split", "K80")] == pytest.approx(19.06311939723701, rel=1e-6)
    assert table[("paper: LR", "paper_split", "P100")] == pytest.approx(22.27509452413568, rel=1e-6)
    assert table[("paper: SVR-poly", "paper_split", "K80")] == pytest.approx(9.958391599038196, rel=1e-6)


def test_graph_features_reach_the_leave_one_model_out_target(table):
    """Target: leave-one-model-out MAPE ≤ 8 % on K80 and on P100 (reached: 4.08 % and 7.52 %)."""
    cfg = "graph: LR on ideal compute time + trainable tensors"
    assert table[(cfg, "leave_one_model_out", "K80")] <= 8
    assert table[(cfg, "leave_one_model_out", "P100")] <= 8
    # the paper's model is much worse once the test CNN is unseen
    assert table[("paper: LR", "leave_one_model_out", "K80")] > 20


def test_cross_gpu_v100_is_reported(table):
    """Target ≤ 10 % on V100: graph features alone reach 12.0 % (log-log on ideal compute time); transferring from the
    CNN's measured K80 step time with the ideal compute time on the target GPU reaches 9.4 %."""
    cg = table.xs(("cross_gpu", "V100"), level=("protocol", "gpu"))
    assert cg["graph: log-log LR on ideal compute time"] == pytest.approx(12.02, abs=0.01)
    assert cg["transfer: log-log LR on measured K80 step time + ideal compute time"] == pytest.approx(9.36, abs=0.01)


def test_protocol_figure():
    fig = pm.figures.speed_protocols()
    ax = fig.axes[0]
    assert len(ax.collections) == 3 and ax.get_xscale() == "log"
    plt.close(fig)


def test_campaign_floor_bounds_the_cross_gpu_error():
    """The 0-latency samples predict the time-series campaign of the same GPU and CNN with 0.94 % (K80) and 4.6 %
    (P100) MAPE — ResNet-15 on P100 differs by 14 % between the two campaigns (CATALOG.md §1.1, §1.2 data)."""
    import perfmodel as pm

    f = pm.figures.campaign_floor().set_index(["gpu", "model"])["ape_pct"]
    assert f[("K80", "all")] == pytest.approx(0.943, abs=0.01)
    assert f[("P100", "all")] == pytest.approx(4.607, abs=0.01)
    assert f[("P100", "resnet-15")] == pytest.approx(14.09, abs=0.01)

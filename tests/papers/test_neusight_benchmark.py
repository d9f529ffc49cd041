"""The external benchmark on NeuSight's labels: every single-GPU training label of the four test GPUs predicted, the
published errors of the other methods read from NeuSight's own summary, the MAPEs computed from the rows."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perfmodel as pm


@pytest.fixture(scope="module")
def bench():
    return pm.figures.neusight_benchmark_data()


def test_every_label_is_predicted(bench):
    train, inf = bench[bench["mode"] == "train"], bench[bench["mode"] == "inf"]
    assert len(train) == 26 and (train["status"] == "predicted").all()
    assert train.groupby("gpu").size().to_dict() == {"A100-PCIe-80GB": 10, "H100": 10, "L4": 3, "V100-PCIe-32GB": 3}
    # one inference label (switch4 on L4) has no model config upstream: kept, with the reason, never predicted from nothing
    assert len(inf) == 30 and (inf["status"] != "predicted").sum() == 1
    assert inf.loc[inf["status"] != "predicted", "status"].item().startswith("not predicted: no model config upstream")
    p = bench[bench["status"] == "predicted"]
    assert (p["predicted_ms"] > 0).all() and (p["lower_ms"] < p["predicted_ms"]).all()
    assert (p["predicted_ms"] < p["upper_ms"]).all()
    np.testing.assert_allclose(p["error_pct"], (p["predicted_ms"] / p["measured_ms"] - 1) * 100)


def test_published_errors_are_neusights_own(bench):
    """NeuSight's paper: 7.3 % for NeuSight on these rows, 58 % Li et al., 32 % roofline, 726 % Habitat."""
    s = pm.figures.neusight_benchmark_summary(bench).set_index("gpu")
    assert s.loc["all", "neusight_mape_pct"] == pytest.approx(7.3, abs=0.05)
    assert s.loc["all", "li_et_al_mape_pct"] == pytest.approx(58.3, abs=0.05)
    assert s.loc["all", "roofline_mape_pct"] == pytest.approx(31.9, abs=0.05)
    assert s.loc["all", "habitat_mape_pct"] == pytest.approx(725.8, abs=0.05)
    train = bench[bench["mode"] == "train"]
    assert s.loc["all", "perfmodel_mape_pct"] == pytest.approx(train["abs_error_pct"].mean())
    assert s["n_labels"].to_dict() == {"A100-PCIe-80GB": 10, "H100": 10, "L4": 3, "V100-PCIe-32GB": 3, "all": 26}
    assert ((s["interval_coverage"] >= 0) & (s["interval_coverage"] <= 1)).all()
    i = pm.figures.neusight_benchmark_summary(bench, mode="inf").set_index("gpu")
    assert i.loc["all", "n_labels"] == 29 and i.loc["all", "neusight_mape_pct"] == pytest.approx(8.07, abs=0.01)
    with pytest.raises(ValueError, match="mode must be 'train' or 'inf'"):
        pm.figures.neusight_benchmark_summary(bench, mode="both")


def test_the_predictor_never_saw_a_benchmark_gpu():
    from perfmodel.models.op_latency import default_op_model

    assert not set(pm.figures.BENCHMARK_GPUS) - {"V100-PCIe-32GB"} & set(default_op_model().training_devices_)


def test_figure_plots_every_label(bench):
    fig = pm.figures.neusight_benchmark(bench)
    ax = fig.axes[0]
    pts = sum(len(line.get_xdata()) for line in ax.lines if line.get_linestyle() == "None")
    assert pts == 26 and ax.get_title().startswith("MAPE ")
    plt.close(fig)


def test_the_per_operator_predictor_on_cmdares_cnns():
    """Twenty CNNs x K80/P100 at batch 128: one row each, positive predictions, the MAPE computed from the rows."""
    d = pm.figures.cmdare_op_model_data()
    assert len(d) == 40 and set(d["gpu"]) == {"K80", "P100"} and (d["n_samples"] == 13).all()
    assert (d["predicted_s"] > 0).all() and ((d["lower_s"] < d["predicted_s"]) & (d["predicted_s"] < d["upper_s"])).all()
    mape = d.attrs["mape_pct"]
    assert mape["all"] == pytest.approx(((d["predicted_s"] / d["measured_s"] - 1).abs() * 100).mean())
    assert set(mape) == {"K80", "P100", "all"}

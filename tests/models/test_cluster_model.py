"""Cluster speeds from the 96 runs (perfmodel.datasets.cluster_speeds) and the parameter-server throughput model."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from perfmodel.datasets import cluster_speeds
from perfmodel.models.cluster import ClusterSpeedModel


@pytest.fixture(scope="module")
def speeds():
    return cluster_speeds()


def test_step_2000_rule_reproduces_92_of_96(speeds):
    """The step-2000 rule: 92/96 within 1 % of the reported means; the four that are not: P100 Shake-Shake big 7 workers
    (−15.3 %), 2 PS Shake-Shake big 7 (−3.1 %), P100 ResNet-15 8 (+3.2 %), P100 ResNet-32 1 (+1.1 %)."""
    assert len(speeds) == 96 and speeds["within_1pct"].sum() == 92
    off = speeds[~speeds["within_1pct"]].set_index(["gpu", "n_ps", "model", "n_workers"])["rel_diff_pct"].round(1).to_dict()
    assert off == {("P100", 1, "resnet-15", 8): 3.2, ("P100", 1, "resnet-32", 1): 1.1, ("P100", 1, "shake-shake-big", 7): -15.3,
                   ("P100", 2, "shake-shake-big", 7): -3.1}
    assert speeds["n_samples"].min() == 19  # K80 ResNet-32 with 5 workers ends at step ~3900


def _fit_eval(g, train_sizes):
    X = g[["n_workers", "n_ps"]].to_numpy()
    y = g["speed_mean_steps_per_s"].to_numpy()
    m = ClusterSpeedModel(random_state=0).fit(X[np.isin(X[:, 0], train_sizes)], y[np.isin(X[:, 0], train_sizes)])
    return np.abs(m.predict(X) - y) / y * 100


def test_ps_model_predicts_1_to_8_workers_from_four_sizes(speeds):
    """Fitted per configuration on 1, 2, 4 and 8 workers, predicting 1..8: MAPE ≤ 5 % pooled per (GPU, #PS)
    (K80 ≈ 0.8 %, P100 1 PS ≈ 4.8 %, P100 2 PS ≈ 4.5 %), including the P100 plateau; worst configuration 6.9 %."""
    errs = {k: _fit_eval(g, [1, 2, 4, 8]) for k, g in speeds.groupby(["gpu", "n_ps", "model"])}
    pooled = pd.Series({k: np.mean(np.concatenate([v for kk, v in errs.items() if kk[:2] == k])) for k in {kk[:2] for kk in errs}})
    assert (pooled <= 5).all(), pooled
    assert max(np.mean(v) for v in errs.values()) < 7


def test_leave_one_size_out(speeds):
    """Each size predicted from the other seven: mean 4.3 % over the 12 configurations, worst configuration < 9 %."""
    per = []
    for _, g in speeds.groupby(["gpu", "n_ps", "model"]):
        sizes = g["n_workers"].to_numpy()
        held_out_errors = [_fit_eval(g, [x for x in range(1, 9) if x != n])[sizes == n][0] for n in range(1, 9)]
        per.append(np.mean(held_out_errors))
    assert np.mean(per) < 5 and max(per) < 9


def test_linear_baseline_k80_near_linear(speeds):
    """CATALOG.md §1.3: 'speed(n) = n·speed(1)' is within a few % on K80 and far off on P100 with 1 PS."""
    k = speeds[(speeds.gpu == "K80")]
    for _, g in k.groupby("model"):
        one = g[g.n_workers == 1]
        m = ClusterSpeedModel(kind="linear").fit(one[["n_workers", "n_ps"]], one["speed_mean_steps_per_s"])
        assert np.mean(np.abs(m.predict(g[["n_workers", "n_ps"]]) / g["speed_mean_steps_per_s"] - 1)) < 0.05
    p = speeds[(speeds.gpu == "P100") & (speeds.n_ps == 1) & (speeds.model == "resnet-32")]
    one = p[p.n_workers == 1]
    lin = ClusterSpeedModel(kind="linear").fit(one[["n_workers", "n_ps"]], one["speed_mean_steps_per_s"]).predict(p[["n_workers", "n_ps"]])
    assert np.mean(np.abs(lin / p["speed_mean_steps_per_s"] - 1)) > 0.3


def test_second_ps_and_saturation_on_synthetic_ps_bound_cluster():
    """Synthetic cluster with known terms: compute 0.1 s, PS transfer 0.01 s, contention 0.004 s per worker per PS."""
    n = np.repeat(np.arange(1, 9), 2).astype(float)
    p = np.tile([1.0, 2.0], 8)
    s = 1 / (0.1 / n + 0.01 / p + 0.004 * n / p)
    m = ClusterSpeedModel(random_state=0).fit(np.column_stack([n, p]), s)
    np.testing.assert_allclose(m.coef_, [0.1, 0.01, 0.004, 0.0], atol=1e-9)
    assert m.saturation_speed(1) == pytest.approx(250) and m.saturation_speed(2) == pytest.approx(500)
    assert m.saturation_workers(1) < m.saturation_workers(2)
    par = m.parameters()
    assert list(par["term"]) == ["compute_s", "ps_transfer_s", "ps_contention_s", "overhead_s"]
    assert (par["lower"] <= par["estimate"] + 1e-12).all() and (par["estimate"] <= par["upper"] + 1e-12).all()
    assert set(par["unit"]) >= {"s/step"}


def test_bad_input():
    with pytest.raises(ValueError, match=r"the PS model needs at least two cluster sizes; got n_workers = \[4.0\]"):
        ClusterSpeedModel().fit([[4, 1], [4, 1]], [1.0, 1.1])
    with pytest.raises(ValueError, match=r"cluster speeds must be positive steps/s"):
        ClusterSpeedModel().fit([[1, 1], [2, 1]], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"X must have two columns \(n_workers, n_ps\); got 1 feature\(s\) \(shape \(2, 1\)\)"):
        ClusterSpeedModel().fit([[1], [2]], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"worker and PS counts must be finite and ≥ 1"):
        ClusterSpeedModel().fit([[0, 1], [2, 1]], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"The 'kind' parameter of ClusterSpeedModel must be one of \{'ps','linear'\}. Got 'optimus'"):
        ClusterSpeedModel(kind="optimus").fit([[1, 1], [2, 1]], [1.0, 2.0])
    with pytest.raises(NotFittedError):
        ClusterSpeedModel().predict([[1, 1]])


def test_fit_cluster_speed_model_helper(speeds):
    m = __import__("perfmodel").models.fit_cluster_speed_model(speeds, gpu="p100", model="Res15", train_sizes=[1, 2, 4, 8])
    assert m.predict([[8, 2]])[0] > m.predict([[8, 1]])[0]  # a second PS helps ResNet-15 on P100
    with pytest.raises(ValueError, match=r"No cluster runs for V100 / resnet-15"):
        __import__("perfmodel").models.fit_cluster_speed_model(speeds, gpu="V100", model="resnet-15")


def test_heterogeneous_prediction_of_the_icac_mixed_gpu_clusters():
    """Mixed-GPU clusters (ICAC'19 Fig. 7 runs) predicted from CM-DARE measurements only: PS terms from the P100
    ResNet-32 runs, per-worker speeds from the single-worker samples (K80, P100) and time series (V100). Cross-study
    errors: −11.4 % … +0.7 % (MAPE ≈ 7 %); a homogeneous cluster is the special case."""
    import perfmodel as pm
    from perfmodel import datasets as ds

    m = pm.models.fit_cluster_speed_model(gpu="P100", model="resnet-32")
    s = ds.load_speed_samples()
    v1 = s[s.model == "resnet-32"].groupby("gpu", observed=True)["speed_steps_per_s"].mean().to_dict()
    v1["V100"] = pm.figures.single_worker_mean_speeds().set_index(["model", "gpu"]).loc[("resnet-32", "V100"), "speed_mean_steps_per_s"]
    runs = ds.load_icac_runs()
    errs = []
    for cfg, (k, p, v) in {"1v1p2k": (2, 1, 1), "1v2p1k": (1, 2, 1), "2v1p1k": (1, 1, 2), "4p100": (0, 4, 0), "4v100": (0, 0, 4)}.items():
        pred = m.predict_heterogeneous([v1["K80"]] * k + [v1["P100"]] * p + [v1["V100"]] * v, n_ps=1)
        measured = (64000 / runs[runs.config == cfg]["duration_s"]).mean()
        errs.append(abs(pred / measured - 1) * 100)
    assert np.mean(errs) < 8 and max(errs) < 12
    # homogeneous special case: four workers of the model's own compute speed 1/θc
    assert m.predict_heterogeneous([1 / m.coef_[0]] * 4, 1) == pytest.approx(m.predict([[4, 1]])[0], rel=1e-12)
    with pytest.raises(ValueError, match=r"worker_speeds must be one positive speed \(steps/s\) per worker"):
        m.predict_heterogeneous([1.0, -2.0])


def test_cluster_model_errors_table(speeds):
    e = __import__("perfmodel").diagnostics.cluster_model_errors(speeds)
    assert len(e) == 36 and set(e["protocol"]) == {"fit_sizes", "leave_one_size_out", "linear_baseline"}
    fit = e[e.protocol == "fit_sizes"].groupby(["gpu", "n_ps"])["mape_pct"].mean()
    assert (fit <= 5).all()
    lin = e[e.protocol == "linear_baseline"].set_index(["gpu", "n_ps", "model"])["mape_pct"]
    assert lin[("P100", 1, "shake-shake-big")] > 50 and lin[("K80", 1, "resnet-32")] < 1


def test_shared_ps_terms_and_prediction_for_a_cnn_never_run_on_a_cluster():
    """Size-scaled PS terms (one compute term per CNN, PS terms shared per MiB of parameters): leave-one-CNN-out
    MAPE 0.7–2.9 % on K80 and 6.6–12.8 % on P100."""
    import perfmodel as pm

    t = pm.models.fit_shared_ps_terms("P100")
    assert t["n_runs"] == 64 and t["mape_pct"] < 9 and (t[list(pm.models.SHARED_PS_TERMS)] >= 0).all()
    e = pm.diagnostics.shared_ps_terms_errors().set_index(["gpu", "model"])["mape_pct"]
    assert e.loc["K80"].max() < 3 and e.loc["P100"].max() < 13 and len(e) == 8
    own = pm.models.predict_cluster_speed("resnet-32", "P100")
    assert own["basis"].iloc[0].startswith("PS model fitted on the 16 CM-DARE cluster runs")
    new = pm.models.predict_cluster_speed("custom-resnet-5", "P100", n_ps=(1, 2))
    assert len(new) == 16 and new["basis"].iloc[0].startswith("size-scaled PS terms of P100")
    s = new.set_index(["n_ps", "n_workers"])["speed_steps_per_s"]
    assert (np.diff(s.loc[2].to_numpy()) > 0).all() and (s.loc[2] >= s.loc[1] - 1e-9).all()  # more workers, more PS: faster
    v = pm.models.predict_cluster_speed("resnet-32", "V100", workers=[1, 4])
    assert v["basis"].iloc[0].startswith("size-scaled PS terms of P100")
    with pytest.raises(ValueError, match="positive counts"):
        pm.models.predict_cluster_speed("resnet-32", "P100", workers=[0])
    with pytest.raises(ValueError, match="single_worker_step_s must be a positive"):
        pm.models.predict_cluster_speed("resnet-32", "T4", single_worker_step_s=-1.0)


def test_cluster_protocols_refuse_frames_without_the_run_columns():
    import perfmodel as pm

    bad = pd.DataFrame({"gpu": ["K80"], "n_workers": [1]})
    with pytest.raises(ValueError, match=r"cluster_model_errors: speeds lacks \['n_ps', 'model', 'speed_mean_steps_per_s'\]"):
        pm.diagnostics.cluster_model_errors(bad)
    with pytest.raises(ValueError, match="shared_ps_terms_errors: speeds lacks"):
        pm.diagnostics.shared_ps_terms_errors(bad)
    assert not hasattr(pm.models, "cluster_model_errors")  # protocols live in diagnostics


def test_cluster_speeds_is_a_listed_derived_dataset():
    import perfmodel as pm

    listed = pm.datasets.list_datasets(with_shape=False).set_index("name")
    assert {"cluster_speeds", "v100_samples", "zoo_features"} <= set(listed.index)
    assert set(listed.loc[["cluster_speeds", "v100_samples", "zoo_features"], "kind"]) == {"derived"}
    assert pm.models.cluster_speeds is pm.datasets.cluster_speeds
    with pytest.raises(ValueError, match="min_step must be a non-negative int"):
        pm.datasets.cluster_speeds(min_step=-1)
    with pytest.raises(ValueError, match="No cluster sample has step >= 1000000"):
        pm.datasets.cluster_speeds(min_step=10**6)

"""Predictors and estimators never silently wrong: positive times, ordered intervals, consistency across the GPU
catalog, warnings that say how far outside the fitted data a prediction lies, columns read by name."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel.models import ClusterSpeedModel, ExtrapolationWarning, StepTimeRegressor
from perfmodel.models.checkpoint import CheckpointTimeRegressor

GPUS = ["K80", "P100", "T4", "V100", "A100", "L4", "H100"]


# -- StepTimeRegressor / CheckpointTimeRegressor ----------------------------------------------------------------------
def _line():
    """y = -0.4 + 0.5 x on x in [1, 3]: below x = 0.8 the raw line is negative."""
    x = np.linspace(1, 3, 30)
    return pd.DataFrame({"normalized_model": x}), -0.4 + 0.5 * x + np.tile([0.01, -0.01], 15)


@pytest.mark.parametrize("cls", [StepTimeRegressor, CheckpointTimeRegressor])
def test_raw_scale_prediction_below_the_range_is_floored_with_a_warning(cls):
    X, y = _line()
    est = cls().fit(X, y)
    assert est.prediction_floor_s_ == pytest.approx(0.01 * y.min())
    low = pd.DataFrame({"normalized_model": [0.1]})
    with pytest.warns(ExtrapolationWarning, match=r"normalized_model 0.1 is 10x below the smallest fitted value 1"):
        with pytest.warns(ExtrapolationWarning, match=r"gives 1 prediction\(s\) ≤ 0 s \(min -0.348 s\): replaced by the floor "
                                                      r"0.0011 s .*fit with log_transform=True"):
            p = est.predict(low)
    assert p[0] == pytest.approx(est.prediction_floor_s_) and p[0] > 0
    with warnings.catch_warnings():  # inside the range: no warning, unchanged linear prediction
        warnings.simplefilter("error")
        assert est.predict(pd.DataFrame({"normalized_model": [2.0]}))[0] == pytest.approx(0.6, abs=0.02)


def test_interval_is_positive_and_ordered_on_the_raw_scale_and_alpha_is_validated():
    X, y = _line()
    est = StepTimeRegressor().fit(X, y)
    Xq = pd.DataFrame({"normalized_model": [0.1, 0.9, 2.0, 5.0]})
    with pytest.warns(ExtrapolationWarning, match="interval bound"):
        iv = est.predict_interval(Xq)
    assert (iv.to_numpy() > 0).all()
    assert (iv["lower_s"] <= iv["predicted_s"]).all() and (iv["predicted_s"] <= iv["upper_s"]).all()
    assert (iv["mean_lower_s"] <= iv["predicted_s"]).all() and (iv["predicted_s"] <= iv["mean_upper_s"]).all()
    for bad in (2, 0, 1, -0.1, np.nan, "0.05", True):
        with pytest.raises(ValueError, match=r"StepTimeRegressor.predict_interval: alpha must be a number in \(0, 1\)"):
            est.predict_interval(Xq, alpha=bad)


def test_log_transform_predictions_are_positive_without_truncation():
    X, y = _line()
    X, y = X.assign(normalized_model=X["normalized_model"]), y + 0.5  # positive power-law-ish data
    est = StepTimeRegressor(log_transform=True).fit(X, y)
    with pytest.warns(ExtrapolationWarning, match=r"normalized_model 0.001 is 1e\+03x below"):
        iv = est.predict_interval(pd.DataFrame({"normalized_model": [0.001]}))
    assert (iv.to_numpy() > 0).all() and iv["lower_s"].iloc[0] < iv["predicted_s"].iloc[0] < iv["upper_s"].iloc[0]


# -- predict_step_time ------------------------------------------------------------------------------------------------
def _tiny_mlp():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))


def _wide_conv():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 512, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(512, 512, 3, padding=1),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(512, 10))


def _check_prediction(out):
    t = out[["lower_s", "step_time_s", "upper_s"]].to_numpy()
    assert np.isfinite(t).all() and (t > 0).all(), out
    assert (t[:, 0] <= t[:, 1] * (1 + 1e-12)).all() and (t[:, 1] <= t[:, 2] * (1 + 1e-12)).all(), out
    rates = out["gpu"].map(pm.datasets.load_gpu_catalog().set_index("gpu")["fp32_peak_tflops"])
    o = out.assign(rate=rates).sort_values("rate")
    assert (np.diff(o["step_time_s"].to_numpy()) <= 1e-12 * o["step_time_s"].max()).all(), o  # faster GPU never slower
    np.testing.assert_allclose(out["speed_steps_per_s"], 1 / out["step_time_s"])


def test_tiny_mlp_has_positive_intervals_and_a_warning_that_says_how_far_outside():
    with pytest.warns(ExtrapolationWarning) as rec:
        out = pm.models.predict_cmdare_step_time(_tiny_mlp(), GPUS)
    _check_prediction(out)
    msg = str(rec[0].message)
    assert rec[0].filename.endswith("test_never_silently_wrong.py")  # points at the caller
    assert "train_step_flops 1.23e+05 is 4.99e+03x below the smallest fitted model 6.14e+08 (per sample)" in msg
    assert "trainable_tensors 2 is 25x below the smallest fitted model 50" in msg
    assert "Sequential has no convolution layers, the fits saw only CNNs (20 of them)" in msg
    assert "GPU H100 has no measurements, predicted through peak TFLOPS from K80+P100: its peak TFLOPS 66.9 is 7.02x above" in msg
    assert "GPU T4 has no measurements, predicted through peak TFLOPS from K80+P100: its peak TFLOPS 8.1 is within" in msg


def test_wide_conv_is_not_predicted_slower_on_v100_than_on_p100():
    with pytest.warns(ExtrapolationWarning, match="trainable_tensors 6 is 8.33x below"):
        out = pm.models.predict_cmdare_step_time(_wide_conv(), ["P100", "V100", "H100"]).set_index("gpu")
    assert out.loc["V100", "step_time_s"] < out.loc["P100", "step_time_s"]
    assert out.loc["V100", "basis"].startswith("P100 prediction x (peak TFLOPS P100/V100)^0.718")
    _check_prediction(out.reset_index())


def test_a_training_cnn_on_measured_gpus_does_not_warn_and_alpha_is_validated():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pm.models.predict_cmdare_step_time("resnet-32", ["K80", "P100"])
    _check_prediction(out)
    with pytest.raises(ValueError, match=r"predict_cmdare_step_time: alpha must be a number in \(0, 1\).*got 2"):
        pm.models.predict_cmdare_step_time("resnet-32", "K80", alpha=2)


def _row(flops, act, params, tensors, n_conv):
    return pd.DataFrame([dict(model="random", batch_size=1, train_step_flops=flops, activation_bytes=act, params=params,
                              param_bytes=4 * params, trainable_tensors=tensors, n_conv=n_conv)])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flops=st.floats(1e3, 1e12), act=st.floats(1e3, 1e10), params=st.integers(10, 10**9), tensors=st.integers(1, 2000),
       n_conv=st.integers(0, 200), gpus=st.lists(st.sampled_from(GPUS), min_size=1, max_size=7, unique=True),
       alpha=st.floats(0.001, 0.5))
def test_property_random_feature_rows_give_positive_ordered_consistent_predictions(flops, act, params, tensors, n_conv, gpus, alpha):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = pm.models.predict_cmdare_step_time(_row(flops, act, params, tensors, n_conv), gpus, alpha=alpha)
    assert list(out["gpu"]) == gpus
    _check_prediction(out)


@st.composite
def _random_net(draw):
    import torch

    layers, c = [], 3
    for _ in range(draw(st.integers(0, 3))):
        k = draw(st.sampled_from([1, 3]))
        out = draw(st.integers(1, 64))
        layers += [torch.nn.Conv2d(c, out, k, padding=k // 2), torch.nn.ReLU()]
        c = out
    layers += [torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten()]
    width = 4 * c
    for _ in range(draw(st.integers(0, 2))):
        out = draw(st.integers(1, 256))
        layers += [torch.nn.Linear(width, out), torch.nn.ReLU()]
        width = out
    layers.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*layers)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(net=_random_net(), gpus=st.lists(st.sampled_from(GPUS), min_size=1, max_size=7, unique=True))
def test_property_random_small_networks(net, gpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = pm.models.predict_cmdare_step_time(net, gpus)
    _check_prediction(out)


# -- ClusterSpeedModel --------------------------------------------------------------------------------------------------
def _synthetic_runs():
    n = np.repeat(np.arange(1, 9), 2).astype(float)
    p = np.tile([1.0, 2.0], 8)
    return pd.DataFrame({"n_workers": n, "n_ps": p}), 1 / (0.1 / n + 0.01 / p + 0.004 * n / p)


def test_columns_are_taken_by_name_not_by_position():
    X, y = _synthetic_runs()
    m = ClusterSpeedModel(n_bootstrap=0).fit(X, y)
    assert list(m.feature_names_in_) == ["n_workers", "n_ps"] and m.n_features_in_ == 2
    q = pd.DataFrame({"n_workers": [8], "n_ps": [1]})
    a = m.predict(q)[0]
    assert m.predict(q[["n_ps", "n_workers"]])[0] == pytest.approx(a)
    assert a == pytest.approx(1 / (0.1 / 8 + 0.01 + 0.004 * 8))
    # fitted on swapped columns, same model
    m2 = ClusterSpeedModel(n_bootstrap=0).fit(X[["n_ps", "n_workers"]], y)
    np.testing.assert_allclose(m2.coef_, m.coef_, atol=1e-12)
    assert list(m2.feature_names_in_) == ["n_workers", "n_ps"]
    with pytest.raises(ValueError, match="feature names"):
        m.predict(pd.DataFrame({"workers": [8], "servers": [1]}))


def test_cm_dare_runs_8_workers_1_ps_with_swapped_columns():
    """ResNet-32 on P100, 8 workers / 1 PS: 52.9 steps/s whichever order the frame's columns are in (was 14.8 swapped)."""
    runs = pm.models.cluster_speeds()
    r = runs[(runs.gpu == "P100") & (runs.model == "resnet-32")]
    m = ClusterSpeedModel(n_bootstrap=0).fit(r[["n_workers", "n_ps"]], r["speed_mean_steps_per_s"])
    q = pd.DataFrame({"n_workers": [8], "n_ps": [1]})
    assert m.predict(q)[0] == pytest.approx(52.94, abs=0.01)
    assert m.predict(q[["n_ps", "n_workers"]])[0] == pytest.approx(52.94, abs=0.01)
    assert pm.models.fit_cluster_speed_model(runs, gpu="P100", model="resnet-32").predict(q[["n_ps", "n_workers"]])[0] == pytest.approx(52.94, abs=0.01)


@settings(max_examples=20, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(1, 64), st.integers(1, 8)), min_size=1, max_size=20), extra=st.booleans())
def test_property_predictions_invariant_to_column_order(rows, extra):
    X, y = _synthetic_runs()
    m = ClusterSpeedModel(n_bootstrap=0).fit(X, y)
    q = pd.DataFrame(rows, columns=["n_workers", "n_ps"])
    if extra:
        q["note"] = 1.0
    n, p = q["n_workers"].to_numpy(float), q["n_ps"].to_numpy(float)
    ref = 1 / (0.1 / n + 0.01 / p + 0.004 * n / p)
    for cols in (list(q.columns), list(q.columns)[::-1]):
        np.testing.assert_allclose(m.predict(q[cols]), ref, rtol=1e-6)


def _expected_failed_checks(est):
    """Checks whose random data is not a cluster: other than two columns, or counts below 1 (the positive-only tag
    shifts X to start at 0). Each raises the model's documented error (see the test below)."""
    return {name: "X must be two columns of counts ≥ 1 (n_workers, n_ps)" for name in _SHAPE_OR_COUNT_CHECKS}


_SHAPE_OR_COUNT_CHECKS = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_estimators_dtypes", "check_dtype_object", "check_pipeline_consistency", "check_estimators_nan_inf",
    "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_regressors_train", "check_regressor_data_not_an_array",
    "check_regressors_no_decision_function", "check_supervised_y_2d", "check_regressors_int", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
    "check_fit2d_predict1d",
]


def test_check_estimator_passes_and_the_expected_failures_are_the_documented_errors():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(ClusterSpeedModel(n_bootstrap=3, random_state=0), on_fail=None,
                              expected_failed_checks=_expected_failed_checks(None))
    failed = [(r["check_name"], str(r["exception"])[:150]) for r in res if r["status"] == "failed"]
    assert failed == []
    passed = {r["check_name"] for r in res if r["status"] == "passed"}
    assert {"check_fit2d_1feature", "check_fit2d_1sample", "check_positive_only_tag_during_fit", "check_get_params_invariance",
            "check_parameters_default_constructible", "check_no_attributes_set_in_init", "check_estimators_unfitted",
            "check_estimators_empty_data_messages", "check_complex_data", "check_fit_non_negative", "check_supervised_y_no_nan"} <= passed
    xfail = [r for r in res if r["status"] == "xfail"]
    assert {r["check_name"] for r in xfail} == set(_SHAPE_OR_COUNT_CHECKS)
    for r in xfail:  # each fails on the model's clear error, nothing else
        assert isinstance(r["exception"], ValueError), r
        assert ("X must have two columns (n_workers, n_ps)" in str(r["exception"])
                or "worker and PS counts must be finite and ≥ 1" in str(r["exception"])), r


def test_what_the_generic_checks_cannot_run_holds_on_cluster_data():
    """Pickle round trip, idempotent fit, sample-order invariance, params untouched — on valid runs."""
    import pickle

    from sklearn.base import clone

    X, y = _synthetic_runs()
    m = ClusterSpeedModel(n_bootstrap=5, random_state=0)
    params = m.get_params()
    m.fit(X, y)
    assert m.get_params() == params
    p = m.predict(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(X), p)
    np.testing.assert_array_equal(clone(m).fit(X, y).predict(X), p)
    perm = np.random.default_rng(0).permutation(len(X))
    np.testing.assert_allclose(clone(m).fit(X.iloc[perm], y[perm]).predict(X), p, rtol=1e-9)
    np.testing.assert_allclose(m.predict(X.iloc[perm]), p[perm])


def test_parameters_after_linear_or_without_bootstrap():
    X, y = _synthetic_runs()
    lin = ClusterSpeedModel(kind="linear", random_state=0).fit(X, y).parameters()
    assert list(lin["term"]) == ["single_worker_speed"] and lin["unit"].iloc[0] == "steps/s"
    assert lin["lower"].iloc[0] <= lin["estimate"].iloc[0] <= lin["upper"].iloc[0] and lin["n_bootstrap"].iloc[0] == 200
    none = ClusterSpeedModel(n_bootstrap=0).fit(X, y).parameters()
    assert list(none["term"]) == ["compute_s", "ps_transfer_s", "ps_contention_s", "overhead_s"]
    assert none["lower"].isna().all() and none["upper"].isna().all() and (none["n_bootstrap"] == 0).all()
    np.testing.assert_allclose(none["estimate"], [0.1, 0.01, 0.004, 0.0], atol=1e-9)
    with pytest.raises(ValueError, match=r"ClusterSpeedModel.saturation_speed needs the PS terms of kind='ps'; this model is kind='linear'"):
        ClusterSpeedModel(kind="linear").fit(X, y).saturation_speed(1)
    with pytest.raises(ValueError, match=r"The 'n_bootstrap' parameter of ClusterSpeedModel must be an int ≥ 0. Got -1"):
        ClusterSpeedModel(n_bootstrap=-1).fit(X, y)
    with pytest.raises(ValueError, match=r"ClusterSpeedModel.parameters: alpha must be a number in \(0, 1\)"):
        ClusterSpeedModel().fit(X, y).parameters(alpha=2)


def test_predict_cluster_speed_warns_beyond_measured_and_explains_the_one_worker_speed():
    with pytest.warns(ExtrapolationWarning, match=r"predict_cluster_speed extrapolates for resnet-32 on P100: 16 workers 16 is 2x "
                                                  r"above the largest measured count \(1-8\) 8; 3 parameter servers 3 is 1.5x above"):
        pm.models.predict_cluster_speed("resnet-32", "P100", workers=[1, 16], n_ps=[1, 2, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = pm.models.predict_cluster_speed("resnet-32", "P100", workers=[1, 8], n_ps=1)
    step = pm.models.predict_cmdare_step_time("resnet-32", "P100")
    assert c["single_worker_speed_steps_per_s"].iloc[0] == pytest.approx(step["speed_steps_per_s"].iloc[0])
    one = c[c.n_workers == 1].iloc[0]
    assert one["measured_speed_steps_per_s"] == pytest.approx(11.48, abs=0.01)
    assert "its 1 worker / 1 PS speed (13.71 steps/s) is that fit's over 1-8 workers (the 1-worker run measured 11.48 steps/s" in one["basis"]
    assert "differs by +21 % from the single-worker prediction (11.31 steps/s" in one["basis"]
    # without own runs the cluster model is anchored on the single-worker prediction: they agree at 1 worker / 1 PS
    with pytest.warns(ExtrapolationWarning, match="GPU V100 has no measurements"):
        v = pm.models.predict_cluster_speed("resnet-32", "V100", workers=[1], n_ps=1)
    assert v["speed_steps_per_s"].iloc[0] == pytest.approx(v["single_worker_speed_steps_per_s"].iloc[0], rel=1e-9)
    assert np.isnan(v["measured_speed_steps_per_s"].iloc[0])


# -- lifetimes ----------------------------------------------------------------------------------------------------------
def test_lifetime_edge_cases_are_errors_or_explicit_flags():
    with pytest.raises(ValueError, match=r"all 3 lifetimes are 0 h: nothing can be fitted. Check the unit"):
        pm.models.fit_lifetimes([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"1 lifetime\(s\) above the 24 h cap of preemptible VMs \(max 30 h\).*max_lifetime_h=None"):
        pm.models.fit_lifetimes([30.0, 2.0, 3.0])
    free = pm.models.fit_lifetimes([30.0, 2.0, 3.0], max_lifetime_h=None).set_index("model")
    assert free["n_revoked"].iloc[0] == 3 and np.isfinite(free.loc["exponential", "aic"])
    for t in ([5.0], [5.0, 5.0, 5.0]):
        d = pm.models.fit_lifetimes(t).set_index("model")
        assert d.loc[["exponential", "weibull", "bathtub"], "params"].str.startswith(
            f"not identifiable: all {len(t)} lifetime(s) equal 5 h; a parametric fit needs at least two distinct lifetimes").all()
        assert d.loc["kaplan_meier", "p_revoked_24h"] == 1.0


def test_string_booleans_are_read_as_booleans():
    s = pm.models.fit_lifetimes([1.0, 2.0, 3.0, 24.0], ["False", "True", "true", "FALSE"])
    b = pm.models.fit_lifetimes([1.0, 2.0, 3.0, 24.0], [False, True, True, False])
    assert s["n_revoked"].iloc[0] == 2
    pd.testing.assert_frame_equal(s, b)
    with pytest.raises(ValueError, match=r"revoked must be booleans \(True/False, 1/0 or the strings 'True'/'False'\); got 1 other"):
        pm.models.fit_lifetimes([1.0, 2.0], ["yes please", "True"])
    with pytest.raises(ValueError, match=r"revoked must be booleans"):
        pm.models.fit_lifetimes([1.0, 2.0], [np.nan, True])


def test_time_between_failures_refuses_equal_times():
    with pytest.raises(ValueError, match=r"all 3 inter-failure times equal 0 s; .* not identifiable"):
        pm.models.time_between_failures_fit([0, 0, 0])
    with pytest.raises(ValueError, match=r"all 2 inter-failure times equal 60 s"):
        pm.models.time_between_failures_fit([60, 60])


def test_bathtub_fitter_checks_its_data():
    from perfmodel.models import BathtubFitter

    with pytest.raises(ValueError, match=r"BathtubFitter: 1 lifetime\(s\) above the deadline 24 h \(max 30 h\)"):
        BathtubFitter().fit([30.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"BathtubFitter: all 2 lifetime\(s\) equal 5 h"):
        BathtubFitter().fit([5.0, 5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = BathtubFitter().fit([1.0, 2.0, 3.0, 24.0], ["False", "True", "True", "False"])
    assert list(f.event_observed) == [0, 1, 1, 0]


def test_a_linear_fit_crossing_zero_falls_back_to_the_log_log_fit():
    """Training samples whose per-GPU line has a negative intercept: a tiny model gets the log-log prediction, said so."""
    s = pm.datasets.load_speed_samples()
    s = s[s["gpu"].astype(str) == "K80"].copy()
    s["step_time_s"] = s["step_time_s"] ** 2 * 5  # convex in the features: the fitted line's intercept is negative
    with pytest.warns(ExtrapolationWarning, match="train_step_flops"):
        out = pm.models.predict_cmdare_step_time(_row(1e4, 1e4, 100, 2, 1), ["K80", "P100"], samples=s)
    _check_prediction(out)
    assert out.loc[0, "basis"].startswith("log-log on graph features, fitted on 260 K80 samples (the linear fit is ≤ 0 s")


# -- Hugging Face heads: a training step always has a backward and an optimizer step ---------------------------------
@pytest.mark.parametrize("arch", ["BertForQuestionAnswering", "BertForSequenceClassification", "BertModel"])
def test_every_hf_head_traces_backward_and_optimizer_ops(arch):
    """BertForQuestionAnswering gave a loss of None (no backward, no optimizer step: a forward labelled as training),
    BertForSequenceClassification a label-shape error; every head now traces all three phases."""
    import torch

    pytest.importorskip("transformers")
    from perfmodel.features import extract
    from perfmodel.zoo import hf

    cfg = {"model_type": "bert", "architectures": [arch], "num_hidden_layers": 2, "hidden_size": 32,
           "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 100}
    ops = extract(hf.build(cfg), (16,), batch_size=4, input_dtype=torch.long, input_high=100, per_op=True, optimizer="adam")
    flops = ops.groupby("phase", observed=False)["flops"].sum()
    assert flops["backward"] > flops["forward"] > 0
    assert ops.loc[ops["phase"] == "optimizer", "bytes_written"].sum() > 0


def test_predict_memory_refuses_a_value_dependent_loop_clearly():
    """A loop count read with .item() cannot be traced on meta: predict_memory says so, naming the read, instead of a
    raw meta-tensor RuntimeError."""
    import torch

    import perfmodel as pm
    from perfmodel.features import DataDependentOpsError

    class Loopy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(64, 64)

        def forward(self, x):
            for _ in range(int(x.abs().sum().item()) % 3 + 1):
                x = self.lin(x)
            return x.sum()

    with pytest.raises(DataDependentOpsError, match=r"Loopy reads the value of a tensor in Python \(Tensor.item\(\)\) at .*make the loop"):
        pm.predict_memory(Loopy(), "H100", batch_size=8, input_shape=(64,))


def test_a_step_that_does_not_fit_says_so_in_its_row_and_on_the_screen():
    """A step time for a run that would stop with out-of-memory is flagged: ``fits`` False with the bytes per GPU, and
    an OutOfMemoryWarning naming the GPU (predict_memory's numbers)."""
    import perfmodel as pm
    from perfmodel.step.step_time import OutOfMemoryWarning

    cfg = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024}
    with pytest.warns(OutOfMemoryWarning, match=r"does not fit in GPU memory on T4 \([0-9.]+ GiB of 15\.[0-9] GiB\)|does not fit in GPU memory on T4 \([0-9.]+ GiB of 1[0-9]\.[0-9]\)"):
        r = pm.predict_step_time(cfg, ["T4", "H100"], input_shape=(1024,), batch_size=64, optimizer="adam")
    mem = pm.predict_memory(cfg, "T4", batch_size=64, input_shape=(1024,), optimizer="adam", precision="fp32")
    assert r["fits"].tolist() == [False, bool(pm.predict_memory(cfg, "H100", batch_size=64, input_shape=(1024,)).iloc[0]["fits"])]
    assert r["memory_per_gpu_bytes"].iloc[0] == mem["total_bytes"].iloc[0]
    small = pm.predict_step_time(cfg, "H100", input_shape=(128,), batch_size=1, optimizer="adam")
    assert small["fits"].all()

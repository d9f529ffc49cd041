"""StepTimeRegressor: scikit-learn contract, errors, intervals, curve fits."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_estimator

from perfmodel.models.step_time import StepTimeRegressor, exponential_speed_fit, quadratic_fit


@pytest.mark.parametrize(
    "est",
    [StepTimeRegressor(), StepTimeRegressor(method="svr", svr_params={"kernel": "rbf", "C": 10.0}),
     StepTimeRegressor(method="gbm", gbm_params={"n_estimators": 10}, random_state=0)],
    ids=["linear", "svr", "gbm"],
)
def test_check_estimator(est):
    """scikit-learn's estimator checks. (log_transform=True is left out: the checks' "positive" X includes zeros, and a
    power law needs strictly positive features, which it enforces with a clear error — see test_bad_input_errors.)"""
    failed = [r for r in check_estimator(est, on_fail=None) if r["status"] == "failed"]
    assert failed == [], [(r["check_name"], str(r["exception"])[:200]) for r in failed]


def test_linear_recovers_a_known_line_and_intervals():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 200)
    y = 0.2 + 1.5 * x + rng.normal(0, 0.01, 200)
    X = pd.DataFrame({"normalized_model": x, "junk": rng.normal(size=200)})
    est = StepTimeRegressor(features="paper_model").fit(X, y)
    assert est.coef_[0] == pytest.approx(1.5, abs=0.01) and est.intercept_ == pytest.approx(0.2, abs=0.01)
    assert est.feature_names_used_ == ["normalized_model"]
    iv = est.predict_interval(X.iloc[:5])
    assert (iv["lower_s"] < iv["predicted_s"]).all() and (iv["predicted_s"] < iv["upper_s"]).all()
    assert ((iv["upper_s"] - iv["lower_s"]).between(0.03, 0.05)).all()  # ≈ 2 × 1.96 × 0.01


def test_log_transform_recovers_a_power_law():
    x = np.linspace(1, 100, 50)
    y = 0.01 * x**0.8
    est = StepTimeRegressor(log_transform=True).fit(x.reshape(-1, 1), y)
    assert est.coef_[0] == pytest.approx(0.8) and np.allclose(est.predict(x.reshape(-1, 1)), y)


def test_gbm_is_deterministic():
    rng = np.random.default_rng(1)
    X, y = rng.uniform(size=(80, 3)), rng.uniform(0.1, 1, 80)
    a = StepTimeRegressor(method="gbm", random_state=3, gbm_params={"n_estimators": 20}).fit(X, y).predict(X)
    b = StepTimeRegressor(method="gbm", random_state=3, gbm_params={"n_estimators": 20}).fit(X, y).predict(X)
    assert np.array_equal(a, b)


def test_bad_input_errors():
    X = pd.DataFrame({"normalized_model": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match=r"The 'method' parameter of StepTimeRegressor must be one of \{'linear','svr','gbm'\}. Got 'xgb'."):
        StepTimeRegressor(method="xgb").fit(X, [1, 2, 3])
    with pytest.raises(NotFittedError):
        StepTimeRegressor().predict(X)
    with pytest.raises(ValueError, match=r"step times must be positive seconds; got 1 value\(s\) <= 0"):
        StepTimeRegressor().fit(X, [0.1, 0.0, 0.3])
    with pytest.raises(ValueError, match=r"Input (y )?contains NaN"):
        StepTimeRegressor().fit(X, [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match=r"X lacks the feature column\(s\) \['gpu_tflops'\]; it has \['normalized_model'\]"):
        StepTimeRegressor(features="paper_two_feature").fit(X, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"The 'features' parameter of StepTimeRegressor must be one of .* Got 'nope'"):
        StepTimeRegressor(features="nope").fit(X, [0.1, 0.2, 0.3])
    fitted = StepTimeRegressor().fit(X, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"X has 2 features, but StepTimeRegressor is expecting 1 features"):
        fitted.predict(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"predict_interval needs method='linear' \(OLS\); this model uses 'svr'"):
        StepTimeRegressor(method="svr").fit(X, [0.1, 0.2, 0.3]).predict_interval(X)
    with pytest.raises(ValueError, match=r"log_transform=True\) needs positive features"):
        StepTimeRegressor(log_transform=True).fit(pd.DataFrame({"a": [0.0, 1.0, 2.0]}), [0.1, 0.2, 0.3])


def test_curve_fits_on_exact_curves():
    x = np.linspace(0, 1, 30)
    np.testing.assert_allclose(quadratic_fit(x, 0.1 + 2 * x - 0.5 * x**2), [0.1, 2, -0.5], atol=1e-6)
    np.testing.assert_allclose(exponential_speed_fit(x, 2 + 14 * np.exp(-30 * x)), [2, 14, 30], rtol=1e-4)
    with pytest.raises(ValueError, match=r"curve fits need x and y of the same length ≥ 3; got 2 and 2"):
        quadratic_fit([0, 1], [1, 2])
    with pytest.raises(ValueError, match=r"curve fits need finite x and y"):
        quadratic_fit([0, 1, np.nan], [1, 2, 3])


def test_predict_step_time_for_a_zoo_id_a_module_and_a_features_row():
    """Measured GPUs use the per-GPU graph model; others the log-log extrapolation; the three model inputs agree."""
    import torch

    import perfmodel as pm

    a = pm.models.predict_cmdare_step_time("resnet-32", ["K80", "P100", "V100"])
    assert list(a["gpu"]) == ["K80", "P100", "V100"] and (a["lower_s"] < a["step_time_s"]).all() and (a["step_time_s"] < a["upper_s"]).all()
    assert a["basis"].str.startswith("linear on graph features").tolist() == [True, True, False]
    measured = pm.datasets.load_speed_samples().groupby(["gpu", "model"], observed=True)["step_time_s"].mean()
    assert a.loc[0, "step_time_s"] == pytest.approx(measured[("K80", "resnet-32")], rel=0.05)
    assert a.loc[1, "step_time_s"] == pytest.approx(measured[("P100", "resnet-32")], rel=0.10)
    np.testing.assert_allclose(a["speed_steps_per_s"], 1 / a["step_time_s"])
    torch.manual_seed(0)
    b = pm.models.predict_cmdare_step_time(pm.zoo.build("resnet-32"), ["K80", "P100", "V100"])
    row = pm.features.extract("resnet-32", (3, 32, 32))
    c = pm.models.predict_cmdare_step_time(row, ["K80", "P100", "V100"])
    np.testing.assert_allclose(b["step_time_s"], a["step_time_s"], rtol=1e-9)
    np.testing.assert_allclose(c["step_time_s"], a["step_time_s"], rtol=1e-9)


def test_predict_step_time_errors():
    import perfmodel as pm

    with pytest.raises(pm.datasets.UnknownNameError, match="GPU"):
        pm.models.predict_cmdare_step_time("resnet-32", ["X99"])
    with pytest.raises(ValueError, match="at least one GPU"):
        pm.models.predict_cmdare_step_time("resnet-32", [])
    row = pm.features.extract("resnet-32", (3, 32, 32), batch_size=4)
    with pytest.raises(ValueError, match="batch_size=1"):
        pm.models.predict_cmdare_step_time(row, "K80")
    with pytest.raises(ValueError, match="one-row frame"):
        pm.models.predict_cmdare_step_time(pd.concat([row, row]), "K80")


def test_the_old_name_of_cmdare_s_regressor_warns_and_answers_as_the_new_one():
    import warnings

    import perfmodel as pm

    from perfmodel.models.step_time import predict_cmdare_step_time, predict_step_time

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.models.ExtrapolationWarning)
        new = predict_cmdare_step_time("resnet-32", ["K80", "P100"])
        with pytest.warns(DeprecationWarning, match="predict_cmdare_step_time"):
            old = pm.models.predict_step_time("resnet-32", ["K80", "P100"])
    pd.testing.assert_frame_equal(old, new)

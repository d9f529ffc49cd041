"""CheckpointTimeRegressor and the checkpoint-size estimate for torch models."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import check_estimator

from perfmodel import datasets as ds
from perfmodel.features import load_zoo_features
from perfmodel.models.checkpoint import CheckpointTimeRegressor, checkpoint_size_mb


def test_check_estimator():
    failed = [r for r in check_estimator(CheckpointTimeRegressor(), on_fail=None) if r["status"] == "failed"]
    assert failed == []


def test_paper_fit_and_svr_default():
    """CATALOG.md §1.7: LR on ckpt.csv slope 0.02000607 s/MB, intercept 3.75119232 s; SVR default = the paper's rbf SVR."""
    ck = ds.load_checkpoint_summary()
    m = CheckpointTimeRegressor(features="size").fit(ck, ck["duration_mean_s"])
    assert m.coef_[0] == pytest.approx(0.02000607, rel=1e-6) and m.intercept_ == pytest.approx(3.75119232, rel=1e-6)
    svr = CheckpointTimeRegressor(method="svr").fit(ck[["checkpoint_mb"]], ck["duration_mean_s"])
    assert svr.estimator_.get_params()["C"] == 10 and svr.estimator_.get_params()["epsilon"] == 0.14


def test_errors_name_the_class():
    X = pd.DataFrame({"checkpoint_mb": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"The 'method' parameter of CheckpointTimeRegressor must be one of \{'linear','svr','gbm'\}. Got 'tree'"):
        CheckpointTimeRegressor(method="tree").fit(X, [1, 2, 3])
    with pytest.raises(ValueError, match=r"CheckpointTimeRegressor: checkpoint durations must be positive seconds; got 1 value\(s\) <= 0"):
        CheckpointTimeRegressor().fit(X, [1, -2, 3])
    with pytest.raises(ValueError, match=r"CheckpointTimeRegressor: X lacks the feature column\(s\) \['meta_file_mb', 'weight_file_mb'\]"):
        CheckpointTimeRegressor(features="files").fit(X, [1, 2, 3])


def test_checkpoint_size_estimate_from_graph_features():
    """Weight file from the features (variables + momentum) + a meta file predicted from the tensor count: within 5 %
    of the data's Checkpoint Size for all twenty CNNs."""
    est = checkpoint_size_mb(load_zoo_features()).to_numpy()
    meta = ds.load_model_metadata()
    rel = np.abs(est / meta["checkpoint_mb"].to_numpy() - 1)
    assert rel.max() < 0.05, rel
    with pytest.raises(ValueError, match=r"checkpoint_size_mb needs the \['checkpoint_bytes_estimate', 'trainable_tensors'\] column"):
        checkpoint_size_mb(pd.DataFrame({"x": [1]}))


def test_predict_checkpoint_time_uses_the_paper_model_at_the_estimated_size():
    """ResNet-32's estimated checkpoint (≈ 16 MB) through the paper's LR refitted on all 100 rows of whole_data.csv
    gives ≈ 3.97 s, within 0.3 % of the paper's prediction at 15.99 MB (3.96029145 s from its 80 % split)."""
    import perfmodel as pm

    r = pm.models.predict_checkpoint_time("resnet-32").iloc[0]
    assert r["checkpoint_mb"] == pytest.approx(15.99, rel=0.03)
    d = pm.datasets.load_checkpoint_samples("whole")
    slope, intercept = np.polyfit(d["checkpoint_mb"], d["duration_s"], 1)
    assert r["checkpoint_time_s"] == pytest.approx(slope * r["checkpoint_mb"] + intercept, rel=1e-9)
    assert r["checkpoint_time_s"] == pytest.approx(3.96029145, rel=0.003)
    s = pm.models.predict_checkpoint_time("shake-shake-big", method="svr").iloc[0]
    assert s["method"] == "svr" and 6 < s["checkpoint_time_s"] < 9

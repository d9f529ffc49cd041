"""Evaluation protocols on synthetic data where the right answer is known."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import KNeighborsRegressor

from perfmodel.diagnostics.evaluation import cross_gpu, kfold_cv, leave_one_model_out, paper_split, unseen_model_test
from perfmodel.models.step_time import StepTimeRegressor


@pytest.fixture
def synthetic():
    """10 models × 2 GPUs × 5 samples; step = 0.05 + flops / tflops exactly, plus a per-model offset known to the test."""
    rows = []
    for i in range(10):
        for gpu, tf in (("A", 4.0), ("B", 8.0)):
            for s in range(5):
                flops = 1 + i
                rows.append(dict(model=f"m{i}", gpu=gpu, x=flops / tf, memo=float(i), step_time_s=0.05 + flops / tf))
    return pd.DataFrame(rows)


def test_exact_linear_data_gives_zero_error_under_every_protocol(synthetic):
    est = StepTimeRegressor()
    assert paper_split(synthetic, est, ["x"]).loc[0, "mape_pct"] == pytest.approx(0, abs=1e-10)
    assert kfold_cv(synthetic, est, ["x"]).query("fold == 'all'")["mape_pct"].item() == pytest.approx(0, abs=1e-10)
    assert leave_one_model_out(synthetic, est, ["x"]).query("model == 'all'")["mape_pct"].item() == pytest.approx(0, abs=1e-10)
    tr, te = synthetic[synthetic.gpu == "A"], synthetic[synthetic.gpu == "B"]
    assert cross_gpu(tr, te, est, ["x"]).query("gpu == 'all'")["mape_pct"].item() == pytest.approx(0, abs=1e-10)
    seen = synthetic[synthetic.model.isin([f"m{i}" for i in range(8)])]
    unseen = synthetic[~synthetic.model.isin([f"m{i}" for i in range(8)])]
    res = unseen_model_test(seen, unseen, est, ["x"])
    assert set(res["model"]) == {"m8", "m9", "all"} and res["mape_pct"].max() == pytest.approx(0, abs=1e-10)


def test_leave_one_model_out_exposes_the_leak_of_row_splits(synthetic):
    """A 1-nearest-neighbour on a model-identifying feature is perfect when rows of a model are in training (paper
    split) and wrong when the model is held out: the protocols must tell the two apart."""
    knn = KNeighborsRegressor(n_neighbors=1)
    assert paper_split(synthetic.assign(x=synthetic.memo * 10 + (synthetic.gpu == "B")), knn, ["x"], cv=0).loc[0, "mape_pct"] == pytest.approx(0)
    lomo = leave_one_model_out(synthetic.assign(x=synthetic.memo * 10 + (synthetic.gpu == "B")), knn, ["x"])
    assert lomo.query("model == 'all'")["mape_pct"].item() > 5


def test_paper_split_sizes_and_cv(synthetic):
    res = paper_split(synthetic, StepTimeRegressor(), ["x"])
    assert res.loc[0, "n_test"] == 20 and res.loc[0, "n_train"] == 80 and res.loc[0, "cv_r2_mean"] == pytest.approx(1)
    assert res.attrs["estimator"].coef_[0] == pytest.approx(1)


def test_protocol_errors(synthetic):
    est = StepTimeRegressor()
    with pytest.raises(ValueError, match=r"data lacks the column\(s\) \['y'\]"):
        paper_split(synthetic, est, ["x"], target="y")
    with pytest.raises(ValueError, match=r"data has NaN in \['x'\]; drop or impute those rows first"):
        leave_one_model_out(synthetic.assign(x=np.where(synthetic.index == 3, np.nan, synthetic.x)), est, ["x"])
    with pytest.raises(ValueError, match=r"step_time_s must be positive \(times in seconds\); 1 value\(s\) are <= 0"):
        kfold_cv(synthetic.assign(step_time_s=np.where(synthetic.index == 0, -1.0, synthetic.step_time_s)), est, ["x"])
    with pytest.raises(ValueError, match=r"cross_gpu: GPU\(s\) \['A'\] are in both train and test"):
        cross_gpu(synthetic, synthetic[synthetic.gpu == "A"], est, ["x"])
    with pytest.raises(ValueError, match=r"unseen_model_test: models \['m0'\] are in both train and test"):
        unseen_model_test(synthetic, synthetic[synthetic.model == "m0"], est, ["x"])
    with pytest.raises(ValueError, match=r"leave_one_model_out needs at least two distinct values of 'model'; got 1"):
        leave_one_model_out(synthetic[synthetic.model == "m0"], est, ["x"])
    with pytest.raises(TypeError, match=r"evaluation protocols take a pandas DataFrame; got ndarray"):
        kfold_cv(np.ones((3, 2)), est, ["x"])

"""Scaling features counted at batch 1 to a batch: one helper for every caller."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.features import BATCH_SCALED_COLUMNS, scale_to_batch


def test_scales_batch_columns_and_keeps_the_rest():
    z = pm.features.load_zoo_features()
    one = z[z["model"] == "resnet-32"]
    s = scale_to_batch(one, 128)
    for c in BATCH_SCALED_COLUMNS:
        assert s[c].iloc[0] == pytest.approx(float(one[c].iloc[0]) * 128)
    assert s["params"].iloc[0] == one["params"].iloc[0] and s["batch_size"].iloc[0] == 128
    per_row = scale_to_batch(z.iloc[:3], np.array([1, 2, 4]))
    np.testing.assert_allclose(per_row["train_step_flops"], z["train_step_flops"].iloc[:3].to_numpy(float) * [1, 2, 4])


def test_graph_feature_frame_uses_the_same_scaling():
    f = pm.models.graph_feature_frame(pd.DataFrame({"model": ["resnet-32"], "gpu": ["K80"]}), batch_size=64)
    z = pm.features.load_zoo_features().set_index("model").loc["resnet-32"]
    assert f["train_step_gflops"].iloc[0] == pytest.approx(z["train_step_flops"] * 64 / 1e9)


@pytest.mark.parametrize("b, msg", [(0, "batch_size must be a positive int"), (2.5, "batch_size must be a positive int"),
                                    (True, "batch_size must be a positive int"), ([1, 2], r"one positive int per row \(1 rows\)")])
def test_bad_batch_is_refused(b, msg):
    one = pm.features.load_zoo_features().iloc[:1]
    with pytest.raises(ValueError, match=msg):
        scale_to_batch(one, b)


def test_rows_counted_at_another_batch_are_refused():
    one = pm.features.load_zoo_features().iloc[:1].assign(batch_size=8)
    with pytest.raises(ValueError, match=r"scales counts made at batch 1; these rows were counted at batch \[8\]"):
        scale_to_batch(one, 2)
    with pytest.raises(ValueError, match="found none of the batch-dependent columns"):
        scale_to_batch(pd.DataFrame({"params": [1]}), 2)
    with pytest.raises(TypeError, match="needs a DataFrame"):
        scale_to_batch([1, 2], 2)

"""A bigger batch is never predicted faster: the property over zoo CNNs, GPUs and batch sizes, and the projection that
makes each convolution's time non-decreasing in its rows."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.step import kernels as kn
MODELS = ("resnet-15", "resnet-32", "custom-resnet-5", "shake-shake-16", "shake-shake-big")
GPUS = ("V100", "A100", "H100")
BATCHES = (16, 32, 48, 64, 96, 128, 192, 256, 384)


@pytest.mark.parametrize("model", MODELS)
def test_a_bigger_batch_is_never_predicted_faster(model):
    """Over 5 zoo CNNs x V100/A100/H100 x 9 batch sizes (120 neighbouring pairs): shake-shake-16 on H100 with Adam was
    19.42 / 13.66 / 16.09 / 15.38 ms at batch 64 / 96 / 128 / 256, and the planner picks batches from such numbers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in GPUS:
            t = [pm.predict_step_time(model, g, batch_size=b, optimizer="adam")["step_time_s"].iloc[0] for b in BATCHES]
            assert np.all(np.diff(t) >= 0), (model, g, dict(zip(BATCHES, np.round(np.array(t) * 1e3, 3))))


class _Dipping:
    """An operator model whose convolution time dips at mid sizes: 100 µs below 2**12 rows, 10 µs to 2**16, then linear."""

    def predict_in_stream(self, X):
        m = X["dim_m"].to_numpy(float)
        return np.where(m < 2**12, 100e-6, np.where(m < 2**16, 10e-6, m * 2e-10))


def test_the_projection_raises_a_dip_to_the_time_of_fewer_rows_and_keeps_a_monotone_curve():
    rows = 2.0 ** np.arange(8, 22, 0.5)
    X = pd.DataFrame({"op_class": "conv", "dim_m": rows, "dim_n": 144.0, "dim_k": 32.0, "dim_b": 1.0,
                      "flops": 2 * rows * 144 * 32, "bytes": 4 * (rows * 144 + 144 * 32 + rows * 32),
                      "tiles": np.ceil(rows / 128)})
    raw = _Dipping().predict_in_stream(X)
    out = kn._monotone_in_batch(X, raw, _Dipping(), "fp32")
    assert np.all(np.diff(out) >= 0)
    assert np.all(out >= raw * (1 - 1e-12))  # only raised, never lowered
    assert out[rows < 2**12] == pytest.approx(100e-6)  # already monotone where nothing smaller is slower
    big = rows >= 2**20
    assert out[big] == pytest.approx(raw[big])  # a linear regime above the dip's level is left as predicted

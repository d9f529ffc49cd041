"""Checkpoint time: CM-DARE's regressions of checkpoint duration on checkpoint size.

:class:`CheckpointTimeRegressor` is :class:`~perfmodel.models.step_time.StepTimeRegressor`'s estimator with the
checkpoint feature sets and CM-DARE's checkpoint SVR (rbf, C = 10, γ = 'auto', ε = 0.14) as the SVR default.
:func:`checkpoint_size_mb` estimates the size CM-DARE's features use for any torch model from its graph features.
"""
from __future__ import annotations

import pandas as pd

from perfmodel.models.step_time import StepTimeRegressor

__all__ = ["CheckpointTimeRegressor", "CHECKPOINT_FEATURE_SETS", "PAPER_CKPT_SVR", "checkpoint_size_mb", "predict_checkpoint_time"]

#: Feature sets (columns of :func:`perfmodel.datasets.load_checkpoint_samples` / ``load_checkpoint_summary``).
CHECKPOINT_FEATURE_SETS = {
    "size": ["checkpoint_mb"],
    "files": ["meta_file_mb", "weight_file_mb"],
    "all_files": ["weight_file_mb", "meta_file_mb", "index_file_kb", "graph_file_mb"],
}

#: CM-DARE's final checkpoint SVR (ckpt notebook): SVR(kernel='rbf', C=10, gamma='auto', epsilon=0.14).
PAPER_CKPT_SVR = dict(kernel="rbf", C=10.0, gamma="auto", epsilon=0.14)


class CheckpointTimeRegressor(StepTimeRegressor):
    """Checkpoint duration (s) from checkpoint size and file features (methods 'linear', 'svr', 'gbm').

    Same parameters and contract as :class:`~perfmodel.models.step_time.StepTimeRegressor`; ``features`` may name a
    key of :data:`CHECKPOINT_FEATURE_SETS`; ``svr_params`` defaults to :data:`PAPER_CKPT_SVR`.
    """

    _feature_sets = CHECKPOINT_FEATURE_SETS
    _target = "checkpoint durations"
    _default_svr = PAPER_CKPT_SVR


def checkpoint_size_mb(features: pd.DataFrame, *, meta_file_mb: float | None = None) -> pd.Series:
    """CM-DARE's ``Checkpoint Size (MB)`` (= weight file + meta file, MiB) estimated from graph features.

    The weight file is the variables plus their Momentum slots: ``checkpoint_bytes_estimate`` of
    :func:`perfmodel.features.extract` (equal to CM-DARE's Weight File Size to 0.01 MiB for the twenty CNNs). The meta
    file (TensorFlow's graph definition, 0.97–5.18 MB in the data) has no torch counterpart; it grows with the graph, so
    by default it is predicted from the number of trainable tensors with a line fitted on the twenty CNNs
    (``meta_file_mb`` overrides it with a constant).
    """
    need = ["checkpoint_bytes_estimate", "trainable_tensors"]
    missing = [c for c in need if c not in features]
    if missing:
        raise ValueError(f"checkpoint_size_mb needs the {missing} column(s) of perfmodel.features.extract().")
    if meta_file_mb is None:
        import numpy as np

        from perfmodel.datasets import load_model_metadata

        meta = load_model_metadata()
        slope, intercept = np.polyfit(meta["n_trainable_tensors"].astype(float), meta["meta_file_mb"], 1)
        meta_file_mb = intercept + slope * features["trainable_tensors"].astype(float)
    return features["checkpoint_bytes_estimate"] / 2**20 + meta_file_mb


def predict_checkpoint_time(model, *, method: str = "linear", input_shape=(3, 32, 32), samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predicted checkpoint duration (s) of a model, CM-DARE's final checkpoint model applied to its estimated size.

    Fits :class:`CheckpointTimeRegressor` (``method``; ``'linear'`` = the paper's Duration ~ Size, ``'svr'`` = its
    SVR) on the 100 checkpoints of ``whole_data.csv`` (TensorFlow Saver to remote storage from a K80 worker)
    or ``samples``, and predicts at :func:`checkpoint_size_mb` of the model's graph features.

    Parameters
    ----------
    model : str, torch.nn.Module or DataFrame
        A zoo id, a module or a features row (see :func:`perfmodel.models.model_features`).

    Returns
    -------
    DataFrame
        One row: ``model``, ``checkpoint_mb`` (estimated), ``checkpoint_time_s``, ``method``.
    """
    from perfmodel.datasets import load_checkpoint_samples
    from perfmodel.models.step_time import model_features

    feats = model_features(model, input_shape=input_shape)
    train = load_checkpoint_samples("whole") if samples is None else samples
    est = CheckpointTimeRegressor(method=method, features="size").fit(train, train["duration_s"])
    size = float(checkpoint_size_mb(feats).iloc[0])
    t = float(est.predict(pd.DataFrame({"checkpoint_mb": [size]}))[0])
    return pd.DataFrame([dict(model=str(feats["model"].iloc[0]), checkpoint_mb=size, checkpoint_time_s=t, method=method)])

"""Speed-prediction results: LR / SVR per GPU, GPU-agnostic, unseen models, sp1, supertable.

K80 LinearRegression MAPE 19.063 %, SVR(poly, degree 2, C=100, epsilon 0.01, coef0 1) 9.958 %; P100 LinearRegression 22.275 %.
The supertable design matrix is rank-deficient (4 model-level columns take only 4 distinct rows), so its coefficients are not unique:
``numpy.linalg.lstsq`` reproduces R2 0.80104, scikit-learn's LinearRegression does not. Stale stored outputs (the supertable split MAE,
``0latency_p100.csv`` after the file changed) are reported as differing with that reason. The README's "as low as 3.4 % MAPE" is
found in no notebook output. The figure is drawn from a fit, so it takes no ``data``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _speed_prediction as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources (results likely a table)",
    title="Speed-prediction results: LR / SVR per GPU, GPU-agnostic, unseen models, sp1, supertable",
    upstream="sp2 cells 5-38, sp1 (Sigmetrics2020_speed_prediction.ipynb)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_new.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_p100_new2.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_norm_computation.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_data.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_test.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/speed_data_supertable.csv"),
    procedure=("Shuffle with random_state=0, then train_test_split(test_size=0.2, random_state=0); X = Normalized "
               "Model (per GPU) or Model/GPU (GPU-agnostic), y = Step Time (s); MAPE = mean(|(y - y_hat)/y|)*100; "
               "10-fold unshuffled KFold CV R2 on the training part. Unseen models: fit on the 16 K80 CNNs, test "
               "on the 4 held-out CNNs."),
    status="EXACT-DATA (one SVR grid result differs)",
    numbers_area="speed",
    legacy_id="speed_prediction",
    variants=({"gpu": "K80", "method": "linear"}, {"gpu": "P100", "method": "linear"}),
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_prediction_numbers.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(gpu="K80", method="linear") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_prediction_data``)."""
    return _impl.speed_prediction_data(gpu=gpu, method=method)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``speed`` area (rows of other items name them in ``item``)."""
    return _impl.speed_prediction_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80", method="linear"):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.speed_prediction(gpu=gpu, method=method, ax=ax)

"""Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split.

The figure refits one configuration, so it takes no ``data``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _speed_protocols as _impl

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE prediction models",
    title="Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split",
    upstream="-",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)",
             "cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)"),
    procedure=("The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out "
               "(K80, P100) and cross-GPU (train K80+P100, test V100), per feature configuration."),
    status="perfmodel analysis",
    legacy_id="speed_protocols",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_protocols.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_protocols_data``)."""
    return _impl.speed_protocols_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the MAPE of every configuration under each protocol (``COMPARISON_COLUMNS``, no paper
    value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    protocols = {
        "paper_split": "the paper's random 80/20 row split of the {gpu} speed samples ({n} test rows; every CNN has samples on both sides)",
        "leave_one_model_out": "leave-one-model-out on the {gpu} speed samples: each CNN held out entirely and predicted by a fit on the "
                               "others ({n} predictions)",
        "cross_gpu": "cross-GPU: fitted on the K80 + P100 speed samples, tested on the {n} V100 single-worker samples (a GPU the fit never saw)",
    }
    rows = [dict(quantity=f"{r.protocol}_{r.gpu.lower()}_mape_pct ({r.config})", unit="pct", value=r.mape_pct,
                 protocol=protocols[r.protocol].format(gpu=r.gpu, n=r.n_test) + f"; StepTimeRegressor on {r.features}; "
                          "MAPE from perfmodel.diagnostics.metrics")
            for r in data().itertuples(index=False)]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.speed_protocols(ax=ax)

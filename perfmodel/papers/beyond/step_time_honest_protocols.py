"""Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split.

The figure refits one configuration, so it takes no ``data``.

Paper: perfmodel, beyond CM-DARE prediction models. Upstream: -.

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)
* cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)

Procedure
---------
The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out (K80, P100) and cross-GPU (train
K80+P100, test V100), per feature configuration.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _speed_protocols as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "beyond CM-DARE prediction models"
#: title
TITLE = "Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = (
    "cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)",
    "cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)",
)
#: procedure
PROCEDURE = "The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out (K80, P100) and cross-GPU (train K80+P100, test V100), per feature configuration."
#: tolerance rule of its numbers
TOLERANCE = "none: perfmodel's own results, no paper value to hold them against (deterministic: a rerun gives the same values)"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "speed_protocols"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/02-speed-prediction.ipynb"
#: test checking it
TEST = "tests/papers/test_speed_protocols.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


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
    return _item.own_results(LEGACY_ID, rows, citation="perfmodel's own result on " + " and ".join(SOURCES))


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.speed_protocols(ax=ax)

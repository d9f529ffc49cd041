"""Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU.

The per-server lifetimes are reconstructed from the CDF arrays (the only lifetime data of CM-DARE). The figure is drawn from the
fits, so it takes no ``data``; ``data()`` is the AIC table.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _lifetime_models as _impl

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE section on lifetimes",
    title="Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU",
    upstream="-",
    sources=("CM-DARE lifetime CDF arrays (per-server lifetimes reconstructed from them, censored at 24 h)",),
    procedure=("Kaplan-Meier estimate of the pooled per-GPU lifetimes with fitted exponential, Weibull and "
               "bathtub CDFs (lifelines); AIC per model and GPU."),
    status="perfmodel analysis",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/06-lifetimes.ipynb",
    test="tests/models/test_bathtub.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(gpu=None) -> pd.DataFrame:
    """The AIC table (``perfmodel.figures.lifetime_models_data``), only the rows of ``gpu`` when given."""
    d = _impl.lifetime_models_data()
    if gpu is None:
        return d
    from perfmodel.datasets import canonical_gpu

    return d[d["gpu"] == canonical_gpu(gpu)].reset_index(drop=True)


def numbers() -> pd.DataFrame:
    """perfmodel's own results: ΔAIC of each parametric lifetime model to the best one, per source and GPU (all regions
    pooled) (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``)."""
    import warnings

    from lifelines.exceptions import ApproximationWarning

    with warnings.catch_warnings():  # the bathtub fit's variance estimate (the AIC does not use it), and the optimiser's
        warnings.simplefilter("ignore", ApproximationWarning)  # overflowing trial steps (as figure() draws the same fits)
        warnings.filterwarnings("ignore", message="overflow encountered in exp", category=RuntimeWarning)
        d = _impl.lifetime_models_data()
    d = d[(d["region"] == "all") & d["aic"].notna()]
    rows = [dict(quantity=f"delta_aic_{r.model} ({r.source}, {r.gpu})", unit="1", value=r.delta_aic,
                 protocol=f"AIC of the {r.model} fit (lifelines, maximum likelihood, right-censored) minus the lowest AIC of "
                          f"exponential / Weibull / bathtub on the {r.n} pooled {r.gpu} lifetimes ({r.n_revoked} revoked) of {r.source}; "
                          "0 = the best model")
            for r in d.itertuples(index=False)]
    return _item.item_results(__name__, rows, citation="perfmodel's own result on the CM-DARE lifetime CDF arrays and ICAC'19 lifetime.csv")


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.lifetime_models(gpu=gpu, ax=ax)

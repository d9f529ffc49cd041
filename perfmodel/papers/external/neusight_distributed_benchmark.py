"""Cluster step time (data, tensor, pipeline parallel) on NeuSight's eleven 4-GPU training labels (A100-SXM4-40GB and H100, Megatron-LM) vs NeuSight.

Predicted from the single-GPU operator model and the alpha-beta communication model; the labels are test data only.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.external import _neusight_distributed as _impl

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (NeuSight's 4-GPU labels)",
    title=("Cluster step time (data, tensor, pipeline parallel) on NeuSight's eleven 4-GPU training labels "
           "(A100-SXM4-40GB and H100, Megatron-LM) vs NeuSight"),
    upstream="sitar-lab/NeuSight 4-GPU labels and summary/distributed.csv",
    sources=(("sitar-lab/NeuSight: the 4-GPU training labels (dp4, tp4, pp4_1) and NeuSight's published "
              "predictions of them"),),
    procedure=("predict_step_time(n_gpus=4, strategy=dp|tp|pp, optimizer='adam-fused', overlap_grad_reduce=False) "
               "for every 4-GPU label (Megatron-LM's train_step as NeuSight's harness times it); absolute % error "
               "per label and MAPE per strategy, per GPU and overall next to NeuSight's."),
    status="perfmodel analysis",
    notebook="notebooks/12-neusight-distributed.ipynb",
    test="tests/papers/test_neusight_distributed.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """One row per 4-GPU label: measured, predicted and NeuSight's prediction (:func:`_impl.neusight_distributed_data`)."""
    return _impl.neusight_distributed_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: MAPE per strategy, per GPU and over the eleven 4-GPU labels, next to the MAPE of
    NeuSight's published errors on the same labels (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``,
    the protocol in ``reason``), from :func:`data`."""
    from perfmodel.diagnostics.metrics import mape

    d = data()
    rows = []
    groups = [*(("strategy", v, g) for v, g in d.groupby("strategy", sort=True)), *(("gpu", v, g) for v, g in d.groupby("gpu", sort=True)),
              ("all", "all", d)]
    for kind, v, grp in groups:
        on = "all eleven labels" if kind == "all" else f"the {len(grp)} labels of {kind} {v}"
        rows.append(dict(quantity=f"{str(v).lower()}_perfmodel_mape_pct", unit="pct", value=mape(grp["measured_ms"], grp["predicted_ms"]),
                         protocol=f"predict_step_time(n_gpus=4, strategy=...) from the single-GPU operator model (never fitted on a "
                                  f"multi-GPU measurement) on {on}; MAPE from perfmodel.diagnostics.metrics"))
        rows.append(dict(quantity=f"{str(v).lower()}_neusight_published_mape_pct", unit="pct", value=float(grp["neusight_error_pct"].mean()),
                         protocol=f"mean of the absolute errors NeuSight publishes for its own predictor on {on} (sitar-lab/NeuSight)"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.neusight_distributed(data=data, ax=ax)

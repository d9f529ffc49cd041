"""Per-operator step-time predictor on NeuSight's single-GPU training and inference labels (V100, A100-80GB, L4, H100) vs NeuSight, Li et al., roofline, Habitat.

The labels are test data only. NeuSight's AMD labels (MI100, MI210, MI250) are scored apart (the ``amd_`` quantities of
:func:`numbers`, from ``perfmodel.figures.neusight_amd_benchmark_data``).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.external import _neusight as _impl

ITEM = Item(
    paper="perfmodel",
    number="external benchmark (NeuSight's published labels)",
    title=("Per-operator step-time predictor on NeuSight's single-GPU training and inference labels (V100, "
           "A100-80GB, L4, H100) vs NeuSight, Li et al., roofline, Habitat"),
    upstream="sitar-lab/NeuSight labels and reported errors",
    sources=(("sitar-lab/NeuSight: the single-GPU training and inference labels (NVIDIA and AMD) and the "
              "published per-predictor errors"),),
    procedure=("predict_step_time for every eager single-GPU label (a GPU is never in the training set of the "
               "model scored on it); absolute % error per label next to NeuSight's own and its baselines'; "
               "NeuSight's AMD GPUs (MI100, MI210, MI250) scored apart, from their catalog rows alone."),
    status="perfmodel analysis",
    notebook="notebooks/11-neusight-benchmark.ipynb",
    test="tests/papers/test_neusight_benchmark.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.neusight_benchmark_data``)."""
    return _impl.neusight_benchmark_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: perfmodel's MAPE per GPU (and over all) on NeuSight's training and inference labels,
    next to the MAPE of NeuSight's published errors on the same labels (``COMPARISON_COLUMNS``, no paper value, status
    ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`; then the same for NeuSight's AMD GPUs, scored
    apart (``perfmodel.figures.neusight_amd_benchmark_data``; test data only: the operator model is fitted on NVIDIA
    microbenchmarks), their quantities prefixed ``amd_`` (``amd_train_all_perfmodel_mape_pct`` ...)."""
    rows = [*_mape_rows(data(), "", "all benchmark GPUs"),
            *_mape_rows(_impl.neusight_amd_benchmark_data(), "amd_", "all AMD GPUs (MI100, MI210, MI250)")]
    return _item.item_results(__name__, rows)


def _mape_rows(d: pd.DataFrame, prefix: str, everything: str) -> list[dict]:
    from perfmodel.diagnostics.metrics import mape

    rows = []
    for mode, what in (("train", "training steps (forward + backward, FP32, eager)"), ("inf", "inference passes (FP32, eager)")):
        m = d[d["mode"] == mode]
        ok = m[m["status"] == "predicted"]
        skipped = f"; {len(m) - len(ok)} label(s) not predicted: {', '.join(sorted(set(m.loc[m['status'] != 'predicted', 'status'])))}" \
            if len(ok) < len(m) else ""
        for g, grp in [*ok.groupby("gpu", sort=True), ("all", ok)]:
            on = everything if g == "all" else g
            rows.append(dict(quantity=f"{prefix}{mode}_{str(g).lower()}_perfmodel_mape_pct", unit="pct",
                             value=mape(grp["measured_ms"], grp["predicted_ms"]),
                             protocol=f"predict_step_time on NeuSight's {len(grp)} single-GPU {what} labels of {on} (test data only: no "
                                      f"measurement of a scored GPU in the operator model's training set){skipped}; MAPE from "
                                      "perfmodel.diagnostics.metrics"))
            rows.append(dict(quantity=f"{prefix}{mode}_{str(g).lower()}_rule_of_thumb_mape_pct", unit="pct",
                             value=float(grp["rule_of_thumb_abs_error_pct"].mean()),
                             protocol=f"the baseline on the same {len(grp)} labels of {on}: mean absolute % error of the rule "
                                      "of thumb, (6N + 12·L·h·s) FLOPs per token (2N + 4·L·h·s for inference) at 40 % of "
                                      "the dense FP32 peak (perfmodel.step.baselines.rule_of_thumb_step_time)"))
            pub = grp["neusight_error_pct"].dropna()
            if len(pub):
                rows.append(dict(quantity=f"{prefix}{mode}_{str(g).lower()}_neusight_published_mape_pct", unit="pct", value=float(pub.mean()),
                                 protocol=f"mean of the absolute errors NeuSight publishes for its own predictor on the same {len(pub)} "
                                          f"labels of {on} (sitar-lab/NeuSight)"))
    return rows


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.neusight_benchmark(data=data, ax=ax)

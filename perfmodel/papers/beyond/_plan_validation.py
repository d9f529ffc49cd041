"""The planner against what was measured: ICAC'19 clusters (ResNet-32, 64000 steps) predicted from CM-DARE's
measurements vs their measured time and cost (beyond the papers)."""
from __future__ import annotations

from perfmodel.plotting import subplots

import pandas as pd

from perfmodel.planning.plan import validate_against_icac

__all__ = ["plan_validation_data", "plan_validation"]


def plan_validation_data() -> pd.DataFrame:
    """:func:`perfmodel.planning.validate_against_icac` — per configuration, measured and predicted time and cost."""
    return validate_against_icac()


def plan_validation(data: pd.DataFrame | None = None, *, ax=None):
    """Two panels: predicted vs measured training time (h) and cost (USD), one point per ICAC'19 configuration."""
    import matplotlib.pyplot as plt

    d = plan_validation_data() if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=(6.6, 3.0))
    for ax, (m, p, unit) in zip(axes, (("measured_time_h", "predicted_time_h", "time (h)"), ("measured_cost_usd", "predicted_cost_usd", "cost (USD)"))):
        for g, sub in d.groupby("gpu"):
            ax.scatter(sub[m], sub[p], s=14, label=g)
        hi = float(max(d[m].max(), d[p].max())) * 1.1
        ax.plot([0, hi], [0, hi], color="grey", lw=0.8)
        ax.set(xlabel=f"Measured {unit}", ylabel=f"Predicted {unit}", xlim=(0, hi), ylim=(0, hi))
    mape = d.attrs.get("mape", {})
    if mape:
        axes[0].set_title(f"MAPE {mape['time_pct']:.1f} %", fontsize=8)
        axes[1].set_title(f"MAPE {mape['cost_pct']:.1f} %", fontsize=8)
    axes[0].legend(frameon=False, fontsize=6)
    if own:
        fig.tight_layout()
    return fig

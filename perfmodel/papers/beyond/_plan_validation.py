"""The planner against what was measured: ICAC'19 clusters (ResNet-32, 64000 steps) predicted from CM-DARE's
measurements vs their measured time and cost (beyond the papers)."""
from __future__ import annotations

from perfmodel.plotting import figure_size, legend_outside, paper_figure, plot_parity, subplots

import pandas as pd

from perfmodel.planning.plan import validate_against_icac

__all__ = ["plan_validation_data", "plan_validation"]


def plan_validation_data() -> pd.DataFrame:
    """:func:`perfmodel.planning.validate_against_icac` — per configuration, measured and predicted time and cost."""
    return validate_against_icac()


@paper_figure
def plan_validation(data: pd.DataFrame | None = None, *, ax=None):
    """Two panels: predicted vs measured training time (h) and cost (USD), one point per ICAC'19 configuration (the
    GPUs' legend right of the cost panel)."""
    d = plan_validation_data() if data is None else data
    frame = d.assign(gpu=d["gpu"].astype(str))
    gpus = sorted(frame["gpu"].unique())
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.8))
    for ax, (m, p, unit) in zip(axes, (("measured_time_h", "predicted_time_h", "time (h)"), ("measured_cost_usd", "predicted_cost_usd", "cost (USD)"))):
        plot_parity(frame, x=m, y=p, hue="gpu", hue_order=gpus, s=14, alpha=1.0, ax=ax, legend=False)
        ax.set(xlabel=f"Measured {unit}", ylabel=f"Predicted {unit}")
    mape = d.attrs.get("mape", {})
    if mape:
        axes[0].set_title(f"MAPE {mape['time_pct']:.1f} %")
        axes[1].set_title(f"MAPE {mape['cost_pct']:.1f} %")
    legend_outside(axes[1], where="right")
    if own:
        fig.tight_layout()
    return fig

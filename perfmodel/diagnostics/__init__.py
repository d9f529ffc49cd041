"""perfmodel.diagnostics — metrics, evaluation protocols, bottleneck detection.

Each section below is owned by one work item; add exports only inside your section.
"""
from __future__ import annotations

from perfmodel.diagnostics.metrics import mae, mape, r2, regression_report, rmse

__all__: list[str] = ["mape", "mae", "rmse", "r2", "regression_report"]

# -- evaluation protocols (issue 4) --
# -- end evaluation protocols --

# -- cluster diagnostics (issue 5) --
# -- end cluster diagnostics --

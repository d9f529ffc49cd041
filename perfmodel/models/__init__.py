"""perfmodel.models — estimators (scikit-learn contract): step time, cluster speed, checkpoint/restart overhead, lifetimes.

Each section below is owned by one work item; add exports only inside your section.
"""
from __future__ import annotations

__all__: list[str] = []

# -- step time (issue 4) --
# -- end step time --

# -- cluster speed (issue 5) --
# -- end cluster speed --

# -- transient servers (issue 6) --
# -- end transient servers --

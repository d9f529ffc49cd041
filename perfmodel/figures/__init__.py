"""perfmodel.figures — one module per paper figure or table: ``<slug>_data()`` → tidy frame, ``<slug>()`` → Figure.

Only the CLI, notebooks and tests import this package. Each section below is owned by one work item; add exports only
inside your section.
"""
from __future__ import annotations

__all__: list[str] = []

# -- speed prediction figures (issue 4) --
# -- end speed prediction figures --

# -- cluster figures (issue 5) --
# -- end cluster figures --

# -- transient-server figures and ICAC'19 tables (issue 6) --
# -- end transient-server figures --

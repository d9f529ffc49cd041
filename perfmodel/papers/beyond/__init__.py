"""perfmodel's own results beyond the papers: honest evaluation protocols, lifetime models, the planner's validation and
perfmodel's CPU measurements — one module per item (see :mod:`perfmodel.papers`)."""

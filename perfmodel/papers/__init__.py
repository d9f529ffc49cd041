"""perfmodel.papers — every figure and table of the reproduced papers, one module per item.

Packages
--------
* :mod:`perfmodel.papers.cmdare` — CM-DARE (Li, Walls, Guo, ICDCS 2020), from ``cake-lab/CM-DARE``.
* :mod:`perfmodel.papers.icac19` — "Speeding up Deep Learning with Transient Servers" (ICAC 2019), from
  ``cake-lab/transient-deep-learning``.
* :mod:`perfmodel.papers.beyond` — perfmodel's own analyses beyond the papers (honest protocols, lifetime models,
  the planner's validation, the CPU measurements).
* :mod:`perfmodel.papers.external` — benchmarks on measurements nobody here made (NeuSight's labels, Vidur's profiles,
  torchtitan's published runs).

Every public module of these packages is one item with the same shape:

* ``ITEM = Item(paper=..., number=..., title=..., upstream=..., sources=..., procedure=..., status=..., ...)``: its
  declaration (:class:`Item` documents every field once); the module docstring holds the title and what a reviewer
  needs beyond it (quirks, choices, where the data disagree);
* ``data()`` → tidy frame, ``numbers()`` → the quoted numbers with paper value and tolerance
  (:data:`COMPARISON_COLUMNS`), ``figure(data=None, ax=None)`` → matplotlib Figure;
* the code specific to the item; private modules (``_name``) hold the procedures several items share, named for
  what they compute.

The item id is the module name (unique over the packages). :mod:`perfmodel.reproduce` discovers the items with
:mod:`pkgutil`; nothing else in the library imports this package except the :mod:`perfmodel.figures` alias. """
from __future__ import annotations

from perfmodel.papers._item import COMPARISON_COLUMNS, ITEM_METADATA, Item, NoFigureError

__all__ = ["COMPARISON_COLUMNS", "ITEM_METADATA", "Item", "NoFigureError", "PACKAGES"]

#: The item packages, in report order.
PACKAGES = ("cmdare", "icac19", "beyond", "external")

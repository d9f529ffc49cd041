"""``perfmodel reproduce``: every figure and table of both papers, with paper and reproduced numbers side by side.

The items are the modules of :mod:`perfmodel.papers` (one per figure or table, discovered, not listed here). The
runner (:mod:`perfmodel.reproduce._runner`) draws their figures (PNG and PDF) and collects their numbers; the report
writer (:mod:`perfmodel.reproduce._report`) writes

* ``figures/<stem>.png`` and ``.pdf``;
* ``authors/<repository>/<file>``: the authors' own image of a figure (an item's ``authors_image``, fetched and
  hash-verified through the registry), shown beside the reproduced figure;
* ``numbers.json``: one record per reported quantity, byte-identical across runs (sorted, no timestamps);
* ``report.md`` and a self-contained ``report.html`` (figures inline) with a status per number, citing each item's
  module and docstring; perfmodel's own results (beyond the papers) as numbers with their protocol.

Only the CLI, notebooks and tests import this package (it imports :mod:`perfmodel.papers`).
"""
from __future__ import annotations

from perfmodel.reproduce._items import Item, discover_items
from perfmodel.reproduce._report import items_markdown_table, list_items, write_numbers_json, write_report
from perfmodel.reproduce._runner import (
    ALIASES,
    ITEMS,
    NUMBERS_AREAS,
    CatalogItem,
    EmptySelectionError,
    ReproduceOutputError,
    ReproductionResult,
    number_status,
    reproduce,
    select_items,
)

__all__ = ["Item", "CatalogItem", "ITEMS", "ALIASES", "NUMBERS_AREAS", "discover_items", "list_items", "items_markdown_table", "reproduce",
           "ReproductionResult", "number_status", "ReproduceOutputError", "EmptySelectionError", "select_items", "write_numbers_json", "write_report"]

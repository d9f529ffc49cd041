"""What every item module shares: the metadata names, and the answers of an item without data, numbers or figure."""
from __future__ import annotations

import importlib
import sys

import pandas as pd

from perfmodel.papers._numbers import COMPARISON_COLUMNS, OWN_RESULT_STATUS, own_results

__all__ = ["COMPARISON_COLUMNS", "OWN_RESULT_STATUS", "own_results", "ITEM_METADATA", "NoFigureError", "item_module", "no_data", "no_numbers", "no_figure", "numbers_from",
           "check_no_data"]

#: Module-level metadata every item module defines (see :mod:`perfmodel.papers`).
ITEM_METADATA = ("PAPER", "NUMBER", "TITLE", "UPSTREAM", "SOURCES", "PROCEDURE", "TOLERANCE", "STATUS", "UNAVAILABLE", "NO_FIGURE",
                 "NO_NUMBERS", "NUMBERS_AREA", "NUMBERS_FROM", "LEGACY_ID", "VARIANTS", "NOTEBOOK", "TEST", "AUTHORS_IMAGE")


class NoFigureError(ValueError):
    """The item has no figure (a table, or a diagram with no data behind it); its ``NO_FIGURE`` says why."""


def _id(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def item_module(item_id: str):
    """The item module of ``item_id`` (a module name in one of :data:`perfmodel.papers.PACKAGES`)."""
    from perfmodel.papers import PACKAGES

    for pkg in PACKAGES:
        try:
            return importlib.import_module(f"perfmodel.papers.{pkg}.{item_id}")
        except ModuleNotFoundError as exc:
            if exc.name != f"perfmodel.papers.{pkg}.{item_id}":
                raise
    from perfmodel._errors import UnknownNameError

    raise UnknownNameError(f"No item module {item_id!r} in perfmodel.papers.{{{', '.join(PACKAGES)}}}. "
                           "Expected an id from `perfmodel reproduce --list`.")


def no_data(name: str) -> pd.DataFrame:
    """The empty frame ``data()`` of an item without data returns."""
    return pd.DataFrame()


def no_numbers(name: str) -> pd.DataFrame:
    """The empty comparison table of an item that quotes no number (its ``NO_NUMBERS`` says why)."""
    return pd.DataFrame(columns=COMPARISON_COLUMNS)


def no_figure(name: str):
    """Raise :class:`NoFigureError` with the item's ``NO_FIGURE`` reason."""
    mod = sys.modules[name]
    raise NoFigureError(f"Item {_id(name)} has no figure: {mod.NO_FIGURE} Use its data() and numbers() instead.")


def check_no_data(name: str, data) -> None:
    """Refuse a ``data`` frame for a figure drawn from a fit (not from a frame)."""
    if data is not None:
        raise ValueError(f"The figure of item {_id(name)} is drawn from a fit, not from a data frame; got data of type "
                         f"{type(data).__name__}. Pass data=None (the figure refits on the published data).")


def numbers_from(name: str) -> pd.DataFrame:
    """This item's rows of the comparison table computed by the item named in its ``NUMBERS_FROM`` (rows whose ``item``
    is this item's ``LEGACY_ID``, the name ``datasets/reference/paper_numbers`` uses)."""
    mod = sys.modules[name]
    table = item_module(mod.NUMBERS_FROM).numbers()
    return table[table["item"] == mod.LEGACY_ID].reset_index(drop=True)

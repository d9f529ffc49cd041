"""What every item module shares: its declaration (:class:`Item`), and the answers of an item without data,
numbers or figure."""
from __future__ import annotations

import dataclasses
import importlib
import sys

import pandas as pd

from perfmodel.papers._numbers import COMPARISON_COLUMNS, OWN_RESULT_STATUS, own_results

__all__ = ["COMPARISON_COLUMNS", "OWN_RESULT_STATUS", "own_results", "Item", "ITEM_METADATA", "PAPERS", "NoFigureError",
           "item_module", "item_results", "no_data", "no_numbers", "no_figure", "numbers_from", "check_no_data"]

#: The papers an item belongs to ("perfmodel": beyond the papers), in report order.
PAPERS = ("CM-DARE", "ICAC'19", "perfmodel")

#: Tolerance rule of a paper's numbers, and of perfmodel's own results (the default of :attr:`Item.tolerance`).
PAPER_TOLERANCE = ("EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of "
                   "their row in datasets/reference/paper_numbers")
OWN_TOLERANCE = ("none: perfmodel's own results, no paper value to hold them against (deterministic: a rerun gives the "
                 "same values)")


@dataclasses.dataclass(frozen=True)
class Item:
    """The declaration of one item of the reproduction: a figure or table of a paper, or one of perfmodel's own
    results. Each item module of :mod:`perfmodel.papers` declares one, as ``ITEM``; the runner, the report,
    ``perfmodel reproduce --list`` and the tests read it.

    Attributes
    ----------
    paper : {"CM-DARE", "ICAC'19", "perfmodel"}
        The paper it belongs to; ``"perfmodel"``: beyond the papers.
    number : str
        The figure or table number as the paper prints it.
    title : str
        One line; the item module's docstring starts with it.
    upstream : str
        The upstream file or notebook cell it redraws (``"-"`` when none).
    sources : tuple of str
        The upstream data files it reads.
    procedure : str
        How it is computed, precisely enough to redo it by hand.
    status : str
        Reproduction status of the data behind it (``EXACT-DATA``, ``INLINE``, ``perfmodel analysis``, …).
    tolerance : str
        The tolerance rule of its numbers (default: the papers' rule, or "none" for perfmodel's own results).
    unavailable : str
        Non-empty: why the item cannot be reproduced at all.
    no_figure : str
        Non-empty: why ``figure()`` draws nothing.
    no_numbers : str
        Non-empty: why ``numbers()`` is empty.
    numbers_area : str
        The ``datasets/reference/paper_numbers`` area its ``numbers()`` compares (the whole area).
    numbers_from : str
        The item whose ``numbers()`` computes this item's numbers.
    legacy_id : str
        The id before the papers were packages (``--only`` still takes it; the reference tables file its numbers
        under it). Default: the module name.
    variants : tuple of dict
        Keyword arguments of each figure the runner draws (``({},)``: one figure without arguments; ``()`` with
        ``no_figure``).
    notebook, test : str
        The notebook showing it and the test checking it (paths from the repository root).
    authors_image : str
        The authors' own image of the figure (a registry key of kind ``"image"``; the report shows it beside ours),
        ``""`` when none.
    """

    paper: str
    number: str
    title: str
    upstream: str
    sources: tuple
    procedure: str
    status: str
    tolerance: str = ""
    unavailable: str = ""
    no_figure: str = ""
    no_numbers: str = ""
    numbers_area: str = ""
    numbers_from: str = ""
    legacy_id: str = ""
    variants: tuple = ({},)
    notebook: str = ""
    test: str = ""
    authors_image: str = ""

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"Item paper must be one of {PAPERS}; got {self.paper!r}.")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("sources", "variants"):
                if not isinstance(v, tuple):
                    raise TypeError(f"Item {f.name} must be a tuple; got {type(v).__name__} {v!r}.")
            elif not isinstance(v, str):
                raise TypeError(f"Item {f.name} must be a str; got {type(v).__name__} {v!r}.")
        if not all(isinstance(kw, dict) for kw in self.variants):
            raise TypeError(f"Item variants must be a tuple of keyword dicts; got {self.variants!r}.")
        if not self.title or not self.number:
            raise ValueError("Item needs a title and a number (the number as the paper prints it, or what perfmodel calls it).")
        if self.no_figure and self.variants:
            raise ValueError(f"Item {self.title!r} says it has no figure ({self.no_figure!r}) but lists variants "
                             f"{self.variants!r}: pass variants=() with no_figure.")
        if not self.tolerance:
            object.__setattr__(self, "tolerance", OWN_TOLERANCE if self.paper == "perfmodel" else PAPER_TOLERANCE)


#: The declaration's fields, in order (the metadata every item module declares through :class:`Item`).
ITEM_METADATA = tuple(f.name for f in dataclasses.fields(Item))


def declaration(module) -> Item:
    """The :class:`Item` an item module declares (its ``ITEM``), with ``legacy_id`` defaulting to the module name."""
    item = module.ITEM
    if not isinstance(item, Item):
        raise TypeError(f"{module.__name__}.ITEM must be a perfmodel.papers.Item; got {type(item).__name__}.")
    return item if item.legacy_id else dataclasses.replace(item, legacy_id=_id(module.__name__))


class NoFigureError(ValueError):
    """The item has no figure (a table, or a diagram with no data behind it); its ``no_figure`` says why."""


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
    """The empty comparison table of an item that quotes no number (its ``no_numbers`` says why)."""
    return pd.DataFrame(columns=COMPARISON_COLUMNS)


def no_figure(name: str):
    """Raise :class:`NoFigureError` with the item's ``no_figure`` reason."""
    raise NoFigureError(f"Item {_id(name)} has no figure: {sys.modules[name].ITEM.no_figure} Use its data() and numbers() instead.")


def check_no_data(name: str, data) -> None:
    """Refuse a ``data`` frame for a figure drawn from a fit (not from a frame)."""
    if data is not None:
        raise ValueError(f"The figure of item {_id(name)} is drawn from a fit, not from a data frame; got data of type "
                         f"{type(data).__name__}. Pass data=None (the figure refits on the published data).")


def numbers_from(name: str) -> pd.DataFrame:
    """This item's rows of the comparison table computed by the item named in its ``numbers_from`` (rows whose ``item``
    is this item's ``legacy_id``, the name ``datasets/reference/paper_numbers`` uses)."""
    item = declaration(sys.modules[name])
    table = item_module(item.numbers_from).numbers()
    return table[table["item"] == item.legacy_id].reset_index(drop=True)


def item_results(name: str, rows, *, citation: str | None = None) -> pd.DataFrame:
    """perfmodel's own results of the item module ``name`` (:func:`perfmodel.papers._numbers.own_results`), filed
    under its ``legacy_id``; the citation defaults to its ``sources``."""
    item = declaration(sys.modules[name])
    return own_results(item.legacy_id, rows, citation=citation or "perfmodel's own result on " + " and ".join(item.sources))

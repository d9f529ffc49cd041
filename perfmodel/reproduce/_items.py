"""The items of the reproduction, discovered (``pkgutil``) from the item modules of :mod:`perfmodel.papers`."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass, field
from types import ModuleType

from perfmodel.papers._item import ITEM_METADATA, declaration
from perfmodel.papers._item import Item as Declaration

__all__ = ["Item", "discover_items", "ITEMS", "CatalogItem", "ALIASES", "NUMBERS_AREAS"]

_PAPER_ORDER = ("CM-DARE", "ICAC'19", "perfmodel")


@dataclass(frozen=True)
class Item:
    """One item of the reproduction: a figure or table of a paper, or one of perfmodel's own results.

    A view of its module in :mod:`perfmodel.papers`: the module holds the code and declares the metadata (its ``ITEM``, a
    :class:`perfmodel.papers.Item`); ``it.paper``, ``it.procedure``, … read that declaration.

    Attributes
    ----------
    id : str
        The module name (``--only`` takes it, or ``legacy_id``).
    package : str
        ``"cmdare"``, ``"icac19"``, ``"beyond"`` or ``"external"``.
    module : module
        The item module: ``data()``, ``numbers()``, ``figure(data=None, ax=None)`` and its declaration ``ITEM``.
    """

    id: str
    package: str
    module: ModuleType = field(compare=False, repr=False)

    def __getattr__(self, name: str):  # metadata: it.paper -> the module's ITEM.paper ...
        if name in ITEM_METADATA:
            return getattr(self.declaration, name)
        raise AttributeError(f"Item has no attribute {name!r}")

    @property
    def declaration(self) -> Declaration:
        """The module's ``ITEM`` (``legacy_id`` defaulting to the id)."""
        return declaration(self.module)

    @property
    def module_name(self) -> str:
        return self.module.__name__

    @property
    def has_figure(self) -> bool:
        return not self.no_figure and bool(self.variants)

    @property
    def computes_numbers(self) -> bool:
        """Whether the runner calls its ``numbers()``: it compares a ``datasets/reference/paper_numbers`` area, or
        computes perfmodel's own results (no area, no ``numbers_from``, no ``no_numbers`` reason)."""
        return bool(self.numbers_area) or not (self.numbers_from or self.no_numbers or self.unavailable)

    @property
    def docstring(self) -> str:
        """The module's docstring (title, then what a reviewer needs: quirks, choices), followed by the declared
        sources and procedure as numpydoc sections."""
        doc = inspect.getdoc(self.module) or ""
        sources = "\n".join(f"* {s}" for s in self.sources)
        return f"{doc}\n\nSources\n-------\n{sources}\n\nProcedure\n---------\n{self.procedure}"

    def stems(self) -> list[str]:
        """Output file stems of the figures: ``<id>``, or ``<id>_<variant values>`` for an item with several."""
        variants = self.variants if self.has_figure else ()
        if len(variants) == 1:
            return [self.id]
        return [self.id + "_" + "_".join(str(v).lower() for v in kw.values()) for kw in variants]

    def authors_image_stem(self) -> str | None:
        """The figure stem the authors' image (``authors_image``) goes beside: the first variant whose values all
        appear among the words of the image's file name (``k80_cdf.png`` → the ``gpu="K80"`` variant,
        ``cluster_8_spots_heatmap.png`` → ``n_workers=8``), else the first figure. None without an image or figure."""
        if not self.authors_image or not self.has_figure:
            return None
        words = set(re.split(r"[^a-z0-9]+", self.authors_image.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()))
        for kw, stem in zip(self.variants, self.stems()):
            if {str(v).lower() for v in kw.values()} <= words:
                return stem
        return self.stems()[0]


def discover_items(packages=None) -> tuple[Item, ...]:
    """Every item module of ``perfmodel.papers.<package>`` (public modules; ``_private`` ones are shared code), in
    report order: CM-DARE, ICAC'19, perfmodel's own; by module name within a package."""
    from perfmodel.papers import PACKAGES

    items = []
    for pkg in packages or PACKAGES:
        pkgmod = importlib.import_module(f"perfmodel.papers.{pkg}")
        for info in sorted(pkgutil.iter_modules(pkgmod.__path__), key=lambda i: i.name):
            if info.name.startswith("_") or info.ispkg:
                continue
            items.append(Item(info.name, pkg, importlib.import_module(f"perfmodel.papers.{pkg}.{info.name}")))
    order = {p: i for i, p in enumerate(packages or PACKAGES)}
    return tuple(sorted(items, key=lambda it: (order[it.package], it.id)))


#: Every item, discovered from :mod:`perfmodel.papers` (report order).
ITEMS: tuple[Item, ...] = discover_items()
#: Former name of :class:`Item`.
CatalogItem = Item
_BY_ID = {it.id: it for it in ITEMS}
if len(_BY_ID) != len(ITEMS):  # pragma: no cover - a test checks the ids are unique
    raise RuntimeError(f"duplicate item ids in perfmodel.papers: {sorted(i.id for i in ITEMS if sum(j.id == i.id for j in ITEMS) > 1)}")
#: Former item ids (before the papers were packages) -> item id; ``--only`` accepts both.
ALIASES: dict[str, str] = {it.legacy_id: it.id for it in ITEMS if it.legacy_id and it.legacy_id != it.id}
#: The name ``datasets/reference/paper_numbers`` gives an item (its ``item`` column) -> item id.
_BY_REFERENCE = {it.legacy_id or it.id: it.id for it in ITEMS}
#: Item id -> the ``datasets/reference/paper_numbers`` area its ``numbers()`` compares. When ``numbers()`` fails, the
#: quantities of its area are reported as not reproduced, and every item owning some of them as failed.
NUMBERS_AREAS: dict[str, str] = {it.id: it.numbers_area for it in ITEMS if it.numbers_area}


def _owner(item, runner: str) -> str:
    """Item that owns a comparison row: the one named in its ``item`` column, else the item that computed it."""
    return _BY_REFERENCE.get(item, runner) if isinstance(item, str) else runner

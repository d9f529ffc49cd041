"""The items of the reproduction, discovered (``pkgutil``) from the item modules of :mod:`perfmodel.papers`."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass, field
from types import ModuleType

__all__ = ["Item", "discover_items"]

_PAPER_ORDER = ("CM-DARE", "ICAC'19", "perfmodel")


@dataclass(frozen=True)
class Item:
    """One item of the reproduction: a figure or table of a paper, or one of perfmodel's own results.

    A view of its module in :mod:`perfmodel.papers` (the module holds the metadata and the code; see there).

    Attributes
    ----------
    id : str
        The module name (``--only`` takes it, or ``legacy_id``).
    package : str
        ``"cmdare"``, ``"icac19"``, ``"beyond"`` or ``"external"``.
    module : module
        The item module: ``data()``, ``numbers()``, ``figure(data=None, ax=None)`` and the metadata.
    """

    id: str
    package: str
    module: ModuleType = field(compare=False, repr=False)

    def __getattr__(self, name: str):  # metadata: it.paper -> module.PAPER ...
        if name.isidentifier() and name.islower() and hasattr(self.module, name.upper()):
            return getattr(self.module, name.upper())
        raise AttributeError(f"Item has no attribute {name!r}")

    @property
    def module_name(self) -> str:
        return self.module.__name__

    @property
    def has_figure(self) -> bool:
        return not self.module.NO_FIGURE and bool(self.module.VARIANTS)

    @property
    def computes_numbers(self) -> bool:
        """Whether the runner calls its ``numbers()``: it compares a ``datasets/reference/paper_numbers`` area, or
        computes perfmodel's own results (no area, no ``NUMBERS_FROM``, no ``NO_NUMBERS`` reason)."""
        m = self.module
        return bool(m.NUMBERS_AREA) or not (m.NUMBERS_FROM or m.NO_NUMBERS or m.UNAVAILABLE)

    @property
    def docstring(self) -> str:
        return inspect.getdoc(self.module) or ""

    def stems(self) -> list[str]:
        """Output file stems of the figures: ``<id>``, or ``<id>_<variant values>`` for an item with several."""
        variants = self.module.VARIANTS if self.has_figure else ()
        if len(variants) == 1:
            return [self.id]
        return [self.id + "_" + "_".join(str(v).lower() for v in kw.values()) for kw in variants]

    def authors_image_stem(self) -> str | None:
        """The figure stem the authors' image (``AUTHORS_IMAGE``) goes beside: the first variant whose values all
        appear among the words of the image's file name (``k80_cdf.png`` → the ``gpu="K80"`` variant,
        ``cluster_8_spots_heatmap.png`` → ``n_workers=8``), else the first figure. None without an image or figure."""
        if not self.module.AUTHORS_IMAGE or not self.has_figure:
            return None
        words = set(re.split(r"[^a-z0-9]+", self.module.AUTHORS_IMAGE.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()))
        for kw, stem in zip(self.module.VARIANTS, self.stems()):
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

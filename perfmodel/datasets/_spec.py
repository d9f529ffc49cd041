"""Declaration of a dataset for :func:`perfmodel.datasets.list_datasets`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

__all__ = ["DatasetSpec"]


@dataclass(frozen=True)
class DatasetSpec:
    """A loadable dataset.

    Attributes
    ----------
    name : str
        Name accepted by :func:`perfmodel.datasets.load_dataset`.
    loader : callable
        ``loader() -> DataFrame`` with default arguments.
    description : str
        One line: what one row is.
    sources : tuple of str
        Upstream files (``CM:``/``TDL:`` short keys or folders) or ``reference/...`` files it is built from.
    paper : str
        Which paper items use it (``"ICDCS'20 §1.1"``, ``"ICAC'19 Table III"``...).
    kind : str
        ``"upstream"`` (measurements fetched and hash-checked), ``"reference"`` (reported numbers shipped with perfmodel),
        ``"catalog"`` (perfmodel's own curated tables, e.g. GPU specs), ``"measurements"`` (perfmodel's own
        measurements, ``datasets/measurements/``), ``"derived"`` (computed from the others by the fixed rule its loader
        documents, :mod:`perfmodel.datasets.derived`).
    """

    name: str
    loader: Callable[[], pd.DataFrame]
    description: str
    sources: tuple[str, ...]
    paper: str = ""
    kind: str = "upstream"
    extra: dict = field(default_factory=dict)

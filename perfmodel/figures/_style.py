"""Shared plotting helpers (axes-level, seaborn-style signatures)."""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_scatter", "scatter_figure", "GPU_MARKERS"]

#: CM-DARE's markers: K80 'x', P100 '^' (sp2 cells 31–32); V100 's'.
GPU_MARKERS = {"K80": "x", "P100": "^", "V100": "s"}


def plot_scatter(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax=None, alpha: float = 0.1, markers=None):
    """Scatter ``y`` vs ``x``, one series per ``hue`` value (markers by GPU when ``hue='gpu'``); returns the Axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    missing = [c for c in (x, y, hue) if c is not None and c not in data.columns]
    if missing:
        raise ValueError(f"plot_scatter: data lacks the column(s) {missing}; it has {list(map(str, data.columns))}.")
    groups = data.groupby(data[hue].astype(str), sort=False) if hue else [(None, data)]
    markers = markers or GPU_MARKERS
    for key, g in groups:
        ax.scatter(g[x], g[y], marker=markers.get(key, "o") if key else "o", alpha=alpha, label=key)
    if hue:
        ax.legend(frameon=False)
    return ax


def scatter_figure(data: pd.DataFrame, *, x: str, y: str, xlabel: str, ylabel: str = "Step Time (s)", hue: str = "gpu", size=(2, 2)):
    """A paper-size figure with one :func:`plot_scatter` panel (CM-DARE's 2×2 in speed scatter plots)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    plot_scatter(data, x=x, y=y, hue=hue, ax=ax)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    fig.tight_layout()
    return fig

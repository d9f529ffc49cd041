"""Axes-level plots in the seaborn style, from which the paper figures (:mod:`perfmodel.papers`) are built.

``plot_<what>(data, *, x, y, hue=None, ax=None) -> Axes`` draws into the caller's axes (a new figure when ``ax`` is
None). :func:`subplots` is how every paper figure gets its axes: new ones of the paper's size, or the caller's.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["plot_scatter", "scatter_figure", "subplots", "GPU_MARKERS"]

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


def scatter_figure(data: pd.DataFrame, *, x: str, y: str, xlabel: str, ylabel: str = "Step Time (s)", hue: str = "gpu", size=(2, 2), ax=None):
    """A paper-size figure with one :func:`plot_scatter` panel (CM-DARE's 2×2 in speed scatter plots)."""
    fig, ax, own = subplots(ax, figsize=size)
    plot_scatter(data, x=x, y=y, hue=hue, ax=ax)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    if own:
        fig.tight_layout()
    return fig


def subplots(ax=None, nrows: int = 1, ncols: int = 1, *, figsize=None, **kw):
    """The axes a figure draws into: new ones (``plt.subplots(nrows, ncols, figsize=..., **kw)``), or the caller's.

    Parameters
    ----------
    ax : matplotlib Axes, sequence of Axes, or None
        None: a new figure of ``figsize`` inches. Otherwise one Axes for a one-panel figure, or ``nrows * ncols``
        Axes (any nesting) for a multi-panel one; they must belong to one figure.
    nrows, ncols : int
        Panels of the figure.
    figsize : (float, float), optional
        Size in inches of a new figure (the paper's column width).

    Returns
    -------
    (Figure, Axes or ndarray of Axes, bool)
        The figure, the axes shaped as ``plt.subplots`` returns them, and whether they were created here (the
        caller then owns the layout: ``tight_layout`` only runs on a figure created here).

    Raises
    ------
    ValueError
        ``ax`` does not hold exactly ``nrows * ncols`` Axes, or they belong to different figures.
    """
    import numpy as np

    if ax is None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **kw)
        return fig, axes, True
    n = nrows * ncols
    flat = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(flat) != n:
        raise ValueError(f"This figure has {n} panel(s) ({nrows}×{ncols}); got {len(flat)} Axes in ax. Pass ax=None for a new "
                         f"figure, or exactly {n} Axes" + (" (e.g. fig.subplots(" + f"{nrows}, {ncols}))." if n > 1 else "."))
    figs = {id(a.figure) for a in flat}
    if len(figs) != 1:
        raise ValueError(f"The {n} Axes in ax belong to {len(figs)} different figures; pass Axes of one figure.")
    if n == 1:
        return flat[0].figure, flat[0], False
    axes = np.empty(n, dtype=object)
    axes[:] = flat
    return flat[0].figure, (axes if nrows == 1 or ncols == 1 else axes.reshape(nrows, ncols)), False

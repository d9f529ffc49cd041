"""Axes-level plots in the seaborn style, the print style of the paper figures, and how figures are saved.

``plot_<what>(data, *, x, y, hue=None, ax=None) -> Axes`` draws one kind of plot from a tidy frame into the caller's
Axes (a new figure when ``ax`` is None); the paper figures of :mod:`perfmodel.papers` are built from them, so any of
them can be drawn into a user's own axes:

* :func:`plot_lines` — a series per ``hue`` value, optionally with error bars (speed vs number of workers, time
  series, a tabulated CDF, expected revocations vs job length);
* :func:`plot_bars` — bars, grouped (side by side) or stacked by ``hue``, with error bars;
* :func:`plot_scatter` — points, markers by GPU, marker area from a column;
* :func:`plot_parity` — predicted vs measured with the identity line;
* :func:`plot_ecdf` — the empirical CDF of observations, Kaplan–Meier when some are right-censored;
* :func:`plot_heatmap` — one coloured, annotated cell per (``x``, ``y``).

Print style: :data:`PAPER_RC` (IEEE two-column sizes, embedded TrueType fonts), :func:`paper_style`,
:func:`figure_size` (the papers' 3.5-in column and 7.16-in text widths), :func:`legend_outside` (legends off the data)
and :func:`save_figure` (a vector PDF with TrueType fonts and a 300-dpi PNG, byte-identical across runs).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "COLUMN_WIDTH_IN", "TEXT_WIDTH_IN", "PAPER_RC", "GPU_MARKERS", "paper_style", "paper_figure", "figure_size", "subplots",
    "legend_outside", "save_figure", "plot_lines", "plot_bars", "plot_scatter", "plot_parity", "plot_ecdf", "plot_heatmap",
    "scatter_figure",
]

#: Width (in) of one column of an IEEE two-column paper (CM-DARE ICDCS'20, ICAC'19): ``\columnwidth``.
COLUMN_WIDTH_IN = 3.5
#: Width (in) of the text block of an IEEE two-column paper (a ``figure*`` spanning both columns): ``\textwidth``.
TEXT_WIDTH_IN = 7.16

#: CM-DARE's markers: K80 'x', P100 '^' (sp2 cells 31–32); V100 's'.
GPU_MARKERS = {"K80": "x", "P100": "^", "V100": "s"}

#: The print style of every paper figure. Fonts: DejaVu Sans (shipped with matplotlib, so every machine draws the same
#: glyphs) embedded as TrueType (``fonttype`` 42) in PDF and PS — never Type 3, which IEEE's PDF checker rejects; 8-pt
#: text and 7-pt legends at the printed size (IEEE asks for 8–10 pt in figures; these figures are printed at 100 %
#: of :data:`COLUMN_WIDTH_IN` or :data:`TEXT_WIDTH_IN`); thin lines; frameless legends; 300-dpi raster output.
PAPER_RC = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "mathtext.fontset": "dejavusans",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 8,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 3,
    "ytick.major.size": 3,
    "lines.linewidth": 1.0,
    "lines.markersize": 4,
    "errorbar.capsize": 2,
    "legend.frameon": False,
    "legend.handlelength": 1.5,
    "legend.columnspacing": 1.0,
    "legend.borderaxespad": 0.2,
    "savefig.dpi": 300,
    "savefig.pad_inches": 0.02,
    "svg.hashsalt": "perfmodel",
}

#: What :func:`save_figure` fixes whatever the caller's rcParams: TrueType fonts, and no per-run randomness.
_SAVE_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "perfmodel"}
#: Metadata that would differ between runs (timestamps, versions) left out, so a rerun writes identical bytes.
_PDF_METADATA = {"Creator": None, "Producer": None, "CreationDate": None}
_PNG_METADATA = {"Software": None}
_WIDTHS = {"column": COLUMN_WIDTH_IN, "text": TEXT_WIDTH_IN}


# --------------------------------------------------------------------------------------------------------------- style
def paper_style():
    """A context (also usable as a decorator) in which matplotlib draws with :data:`PAPER_RC`.

    Returns
    -------
    contextlib.AbstractContextManager
        ``matplotlib.rc_context(PAPER_RC)``: the caller's rcParams are restored on exit.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> with paper_style():
    ...     fig, ax = plt.subplots(figsize=figure_size("column", 2.0))
    """
    import matplotlib as mpl

    return mpl.rc_context(PAPER_RC)


def paper_figure(func: Callable) -> Callable:
    """Decorate a figure-level function so that everything it creates and draws uses :func:`paper_style`.

    The signature, name and docstring of ``func`` are kept (``functools.wraps``).
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with paper_style():
            return func(*args, **kwargs)

    return wrapper


def figure_size(width: str | float = "column", height_in: float | None = None, *, fraction: float = 1.0) -> tuple[float, float]:
    """The size (in) of a figure printed at one of the papers' widths.

    Parameters
    ----------
    width : {'column', 'text'} or float, default 'column'
        ``'column'``: :data:`COLUMN_WIDTH_IN` (3.5 in, one column); ``'text'``: :data:`TEXT_WIDTH_IN` (7.16 in, a
        figure spanning both columns); a float: a width in inches.
    height_in : float, optional
        Height in inches; default ``0.62 ×`` the width (the golden ratio).
    fraction : float, default 1.0
        Share of the width, in (0, 1]: ``1/3`` for one of three sub-figures side by side across the text.

    Returns
    -------
    (float, float)
        ``(width_in, height_in)``, for ``figsize``.

    Raises
    ------
    ValueError
        ``width`` is neither 'column', 'text' nor a positive number, or ``fraction`` is outside (0, 1].
    """
    if isinstance(width, str):
        if width not in _WIDTHS:
            raise ValueError(f"width must be 'column' ({COLUMN_WIDTH_IN} in), 'text' ({TEXT_WIDTH_IN} in) or a number of inches; "
                             f"got {width!r}.")
        w = _WIDTHS[width]
    elif isinstance(width, (int, float)) and not isinstance(width, bool) and width > 0:
        w = float(width)
    else:
        raise ValueError(f"width must be 'column', 'text' or a positive number of inches; got {width!r}.")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1] (the share of the width the figure takes); got {fraction!r}.")
    w = round(w * fraction, 4)
    return w, (round(0.62 * w, 4) if height_in is None else float(height_in))


def _is_axes(a) -> bool:
    from matplotlib.axes import Axes

    return isinstance(a, Axes)


def subplots(ax=None, nrows: int = 1, ncols: int = 1, *, figsize=None, **kw):
    """The axes a figure draws into: new ones (``plt.subplots(nrows, ncols, figsize=..., **kw)``), or the caller's.

    Parameters
    ----------
    ax : matplotlib Axes, sequence of Axes, or None
        None: a new figure of ``figsize`` inches, drawn in :func:`paper_style`. Otherwise one Axes for a one-panel
        figure, or ``nrows * ncols`` Axes (any nesting) for a multi-panel one; they must belong to one figure.
    nrows, ncols : int
        Panels of the figure.
    figsize : (float, float), optional
        Size in inches of a new figure (see :func:`figure_size`).

    Returns
    -------
    (Figure, Axes or ndarray of Axes, bool)
        The figure, the axes shaped as ``plt.subplots`` returns them, and whether they were created here (the
        caller then owns the layout: ``tight_layout`` only runs on a figure created here).

    Raises
    ------
    TypeError
        Something in ``ax`` is not a matplotlib Axes.
    ValueError
        ``ax`` does not hold exactly ``nrows * ncols`` Axes, or they belong to different figures.
    """
    if ax is None:
        import matplotlib.pyplot as plt

        with paper_style():
            fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **kw)
            for a in np.ravel(axes):  # ticks are created lazily at draw time: fix their style now
                a.tick_params(labelsize=PAPER_RC["xtick.labelsize"], width=PAPER_RC["xtick.major.width"], length=PAPER_RC["xtick.major.size"])
        return fig, axes, True
    n = nrows * ncols
    flat = [ax] if _is_axes(ax) else list(np.ravel(np.asarray(ax, dtype=object)))
    bad = [a for a in flat if not _is_axes(a)]
    if bad:
        raise TypeError(f"ax must be a matplotlib Axes, a sequence of Axes (one per panel) or None for a new figure; got "
                        f"{type(bad[0]).__name__}. Pass e.g. the ax of `fig, ax = plt.subplots()`.")
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


def legend_outside(ax, *, where: str = "above", ncol: int | None = None, **kw):
    """Place the legend of ``ax`` off the data: above the axes (centred, in columns) or to their right.

    ``tight_layout`` and ``savefig(bbox_inches='tight')`` count the legend, so a figure keeps its width and shrinks
    the axes to make room.

    Parameters
    ----------
    ax : matplotlib Axes
        The axes whose labelled artists the legend lists.
    where : {'above', 'right'}, default 'above'
        'above' for axes without a title; 'right' when a title takes the space above.
    ncol : int, optional
        Columns of the legend; default all entries in one row above when there are at most 3, else 2 columns
        ('above'), one column ('right').
    **kw
        Passed to ``ax.legend``.

    Returns
    -------
    matplotlib.legend.Legend or None
        None when ``ax`` has no labelled artist (no legend is drawn).

    Raises
    ------
    TypeError
        ``ax`` is not a matplotlib Axes.
    ValueError
        ``where`` is not 'above' or 'right'.
    """
    _check_ax("legend_outside", ax)
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if where == "above":
        place = dict(loc="lower center", bbox_to_anchor=(0.5, 1.01), ncol=ncol or (len(handles) if len(handles) <= 3 else 2))
    elif where == "right":
        place = dict(loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=ncol or 1)
    else:
        raise ValueError(f"where must be 'above' or 'right' (legends go off the data); got {where!r}.")
    import matplotlib as mpl

    style = dict(frameon=False, fontsize=mpl.rcParams["legend.fontsize"], borderaxespad=0.2, handlelength=1.5, columnspacing=1.0)
    leg = ax.legend(handles, labels, **{**style, **place, **kw})
    for h in leg.legend_handles:  # translucent markers (alpha 0.1 scatter) stay readable in the legend
        if h is not None and hasattr(h, "set_alpha"):
            h.set_alpha(1)
    return leg


def save_figure(fig, path_stem, *, dpi: int = 300) -> list[Path]:
    """Write ``fig`` as ``<path_stem>.pdf`` (vector, TrueType fonts) and ``<path_stem>.png`` (raster, ``dpi``).

    Fonts are embedded as TrueType (``pdf.fonttype`` 42), never Type 3, whatever the caller's rcParams. Metadata
    that changes between runs (creation date, software versions) is left out, so saving the same figure again writes
    byte-identical files. Both files are cropped to the drawn artists (``bbox_inches='tight'``, 0.02-in pad). The
    figure stays open (close it with ``plt.close(fig)``).

    Parameters
    ----------
    fig : matplotlib Figure
        The figure to save.
    path_stem : str or path-like
        The path without extension; a trailing ``.pdf`` or ``.png`` is dropped. Its folder must exist.
    dpi : int, default 300
        Resolution of the PNG, at least 300 (print).

    Returns
    -------
    list of Path
        The PDF and the PNG written.

    Raises
    ------
    TypeError
        ``fig`` is not a matplotlib Figure.
    ValueError
        ``dpi`` is below 300.
    FileNotFoundError
        The folder of ``path_stem`` does not exist.
    """
    import matplotlib as mpl
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"save_figure needs a matplotlib Figure; got {type(fig).__name__}. Pass the Figure a paper figure() "
                        "returns (or ax.figure).")
    if not dpi >= 300:
        raise ValueError(f"dpi must be at least 300 for print; got {dpi!r}. Pass dpi=300 (the default) or more.")
    stem = Path(path_stem)
    if stem.suffix.lower() in (".pdf", ".png"):
        stem = stem.with_suffix("")
    if not stem.parent.is_dir():
        raise FileNotFoundError(f"Cannot save figure {stem.name}: the folder {stem.parent} does not exist. Create it first or "
                                "pass a path_stem in an existing folder.")
    pdf, png = stem.parent / f"{stem.name}.pdf", stem.parent / f"{stem.name}.png"
    common = dict(bbox_inches="tight", pad_inches=0.02)
    with mpl.rc_context(_SAVE_RC):
        fig.savefig(pdf, format="pdf", metadata=_PDF_METADATA, **common)
        fig.savefig(png, format="png", dpi=dpi, metadata=_PNG_METADATA, **common)
    return [pdf, png]


# ----------------------------------------------------------------------------------------------------- shared checks
def _check_ax(func: str, ax):
    if not _is_axes(ax):
        raise TypeError(f"{func}: ax must be a matplotlib Axes or None (a new figure); got {type(ax).__name__}. For a figure "
                        "with several panels pass one of its Axes, e.g. axes[0].")
    return ax


def _axes(func: str, ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
        return ax
    return _check_ax(func, ax)


def _check_data(func: str, data, **cols) -> None:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{func}: data must be a pandas DataFrame (one row per observation); got {type(data).__name__}.")
    missing = [f"{role}={c!r}" for role, c in cols.items() if c is not None and c not in data.columns]
    if missing:
        raise ValueError(f"{func}: data has no column {', '.join(missing)}; its columns are {list(map(str, data.columns))}. "
                         "Pass the name of a column of data.")


def _levels(data: pd.DataFrame, col: str, order) -> list:
    """The values of ``col`` in ``order`` (those present), else in order of appearance."""
    present = list(pd.unique(data[col].dropna()))
    if order is None:
        return present
    return [v for v in order if v in set(present)]


def _first_duplicate(data: pd.DataFrame, cols: list) -> dict:
    """The first key of ``cols`` that several rows share (plain Python values, for messages), else {}."""
    dup = data.duplicated(cols)
    if not dup.any():
        return {}
    return {c: (v.item() if isinstance(v, np.generic) else v) for c, v in data.loc[dup, cols].iloc[0].items()}


def _label(key, labels) -> str:
    if labels is None:
        return str(key)
    if callable(labels):
        return str(labels(key))
    return str(labels.get(key, key))


def _colors(levels: Sequence, palette) -> dict:
    """One colour per hue level, by its position (so two layers with the same hue share colours)."""
    import matplotlib as mpl

    if isinstance(palette, Mapping):
        return {k: palette.get(k) for k in levels}
    cycle = list(palette) if palette is not None else mpl.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    return {k: cycle[i % len(cycle)] for i, k in enumerate(levels)}


def _groups(func, data, hue, hue_order, palette):
    if hue is None:
        return [(None, data, {})]
    levels = _levels(data, hue, hue_order)
    colors = _colors(levels, palette)
    return [(k, data[data[hue] == k], {"color": colors[k]}) for k in levels]


# ---------------------------------------------------------------------------------------------------------- plots
def plot_lines(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax=None, yerr: str | None = None,
               hue_order: Sequence | None = None, labels: Mapping | Callable | None = None, palette=None, legend: bool = True,
               **kwargs):
    """One line of ``y`` vs ``x`` per ``hue`` value, with ``±yerr`` error bars when given.

    Draws speed vs number of workers (with the std as error bars), time series, tabulated CDFs.

    Parameters
    ----------
    data : DataFrame
        Tidy frame, one row per point; rows are drawn in their order.
    x, y : str
        Columns on the horizontal and vertical axes.
    hue : str, optional
        Column whose values split the rows into lines (one colour and legend entry each).
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    yerr : str, optional
        Column of symmetric error-bar half-lengths, in ``y``'s unit.
    hue_order : sequence, optional
        Order of the lines (and legend); default order of appearance.
    labels : mapping or callable, optional
        Legend label of a ``hue`` value (default ``str(value)``).
    palette : sequence or mapping of colours, optional
        Colours by hue position (or value); default the rcParams colour cycle.
    legend : bool, default True
        Add a legend off the data (:func:`legend_outside`) when there are labelled lines.
    **kwargs
        Passed to ``Axes.plot`` (``Axes.errorbar`` with ``yerr``): ``marker``, ``linestyle``, ``label`` (no ``hue``)…

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``.
    """
    _check_data("plot_lines", data, x=x, y=y, hue=hue, yerr=yerr)
    ax = _axes("plot_lines", ax)
    for key, g, style in _groups("plot_lines", data, hue, hue_order, palette):
        kw = {**style, **({"label": _label(key, labels)} if hue is not None else {}), **kwargs}
        if yerr is not None:
            ax.errorbar(g[x].to_numpy(), g[y].to_numpy(), yerr=g[yerr].fillna(0).to_numpy(), **kw)
        else:
            ax.plot(g[x].to_numpy(), g[y].to_numpy(), **kw)
    if legend:
        legend_outside(ax)
    return ax


def plot_bars(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax=None, yerr: str | None = None,
              order: Sequence | None = None, hue_order: Sequence | None = None, labels: Mapping | Callable | None = None,
              palette=None, stacked: bool = False, width: float = 0.8, legend: bool = True, **kwargs):
    """Bars of ``y`` per category ``x``; with ``hue``, grouped side by side (or stacked) with one colour per value.

    Parameters
    ----------
    data : DataFrame
        Tidy frame, at most one row per (``x``, ``hue``).
    x : str
        Category column; one slot per category, tick-labelled with its value.
    y : str
        Bar height column.
    hue : str, optional
        Column splitting each slot into bars (grouped) or segments (``stacked=True``).
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    yerr : str, optional
        Column of error-bar half-lengths (missing → 0).
    order, hue_order : sequence, optional
        Categories and hue values in drawing order; default order of appearance. A category a hue value lacks is
        drawn as an empty (NaN) bar, so every group has the same bars.
    labels : mapping or callable, optional
        Legend label of a ``hue`` value.
    palette : sequence or mapping of colours, optional
        Colours by hue position (or value).
    stacked : bool, default False
        Stack the ``hue`` bars of a category instead of placing them side by side.
    width : float, default 0.8
        Width of a category's slot (shared by its grouped bars).
    legend : bool, default True
        Add a legend off the data when ``hue`` is given.
    **kwargs
        Passed to ``Axes.bar`` (``capsize``, ``color`` without ``hue``…).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``, or a (``x``, ``hue``) pair has several rows.
    """
    _check_data("plot_bars", data, x=x, y=y, hue=hue, yerr=yerr)
    ax = _axes("plot_bars", ax)
    key_cols = [x] if hue is None else [x, hue]
    first = _first_duplicate(data, key_cols)
    if first:
        raise ValueError(f"plot_bars: data has several rows for {first}; one bar needs one row per "
                         f"({', '.join(key_cols)}). Aggregate first (e.g. data.groupby({key_cols})[{y!r}].mean().reset_index()).")
    cats = _levels(data, x, order)
    pos = np.arange(len(cats), dtype=float)
    groups = _groups("plot_bars", data, hue, hue_order, palette)
    n = 1 if (stacked or hue is None) else len(groups)
    w = width / n
    bottom = np.zeros(len(cats))
    kwargs.setdefault("capsize", 2)
    for i, (key, g, style) in enumerate(groups):
        g = g.set_index(x).reindex(cats)
        h = g[y].to_numpy(float)
        err = None if yerr is None else g[yerr].fillna(0).to_numpy(float)
        off = 0.0 if n == 1 else (i - (n - 1) / 2) * w
        kw = {**style, **({"label": _label(key, labels)} if hue is not None else {}), **kwargs}
        ax.bar(pos + off, h, w, yerr=err, bottom=bottom if stacked else None, **kw)
        if stacked:
            bottom = bottom + np.nan_to_num(h)
    ax.set_xticks(pos, [str(c) for c in cats])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if legend and hue is not None:
        legend_outside(ax)
    return ax


def plot_scatter(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax=None, alpha: float = 0.1, markers=None,
                 size: str | None = None, size_scale: float = 1.0, hue_order: Sequence | None = None,
                 labels: Mapping | Callable | None = None, palette=None, legend: bool = True, **kwargs):
    """Scatter ``y`` vs ``x``, one series per ``hue`` value (markers by GPU when ``hue='gpu'``).

    Parameters
    ----------
    data : DataFrame
        Tidy frame, one row per point.
    x, y : str
        Columns on the horizontal and vertical axes.
    hue : str, optional
        Column splitting the points into series (colour, marker and legend entry each).
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    alpha : float, default 0.1
        Opacity (CM-DARE's scatter plots overlay hundreds of repeated measurements).
    markers : mapping, optional
        Marker per ``hue`` value; default :data:`GPU_MARKERS`, ``'o'`` for other values.
    size : str, optional
        Column giving each marker's area (points², times ``size_scale``).
    size_scale : float, default 1.0
        Factor from ``size`` values to marker areas in points².
    hue_order, labels, palette, legend
        As in :func:`plot_lines`.
    **kwargs
        Passed to ``Axes.scatter`` (``s``, ``marker`` without ``hue``…).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``.
    """
    _check_data("plot_scatter", data, x=x, y=y, hue=hue, size=size)
    ax = _axes("plot_scatter", ax)
    markers = GPU_MARKERS if markers is None else markers
    for key, g, style in _groups("plot_scatter", data, hue, hue_order, palette):
        kw = {"alpha": alpha, **style}
        if hue is not None:
            kw.update(label=_label(key, labels), marker=markers.get(str(key), markers.get(key, "o")))
        if size is not None:
            kw["s"] = g[size].to_numpy(float) * size_scale
        ax.scatter(g[x].to_numpy(), g[y].to_numpy(), **{**kw, **kwargs})
    if legend and hue is not None:
        legend_outside(ax)
    return ax


def plot_parity(data: pd.DataFrame, *, x: str, y: str, hue: str | None = None, ax=None, log: bool = False,
                hue_order: Sequence | None = None, labels: Mapping | Callable | None = None, palette=None, legend: bool = True,
                **kwargs):
    """Predicted (``y``) vs measured (``x``) with the identity line; equal axis limits so distance from the line reads
    as error.

    Parameters
    ----------
    data : DataFrame
        One row per prediction.
    x : str
        Measured values.
    y : str
        Predicted values, same unit.
    hue : str, optional
        Column splitting the points into series.
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    log : bool, default False
        Log-log axes, limits ``[min / 1.3, max × 1.3]`` of the positive values (a value ≤ 0 cannot be shown on log
        axes and is left out); else linear from 0 to ``1.05 × max``.
    hue_order, labels, palette, legend
        As in :func:`plot_lines`.
    **kwargs
        Passed to ``Axes.scatter`` (default ``s=10``, ``alpha=0.7``).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``, or no value can be plotted (none finite; none positive with ``log``).
    """
    _check_data("plot_parity", data, x=x, y=y, hue=hue)
    ax = _axes("plot_parity", ax)
    vals = np.concatenate([data[x].to_numpy(float), data[y].to_numpy(float)])
    vals = vals[np.isfinite(vals) & ((vals > 0) if log else True)]
    if not len(vals):
        raise ValueError(f"plot_parity: no finite{' positive' if log else ''} value in {x!r} and {y!r} to plot"
                         f"{' on log axes' if log else ''}. Pass rows with measured and predicted values"
                         f"{', or log=False' if log else ''}.")
    kw = {"s": 10, "alpha": 0.7, **kwargs}
    plot_scatter(data, x=x, y=y, hue=hue, ax=ax, markers={}, hue_order=hue_order, labels=labels, palette=palette, legend=False, **kw)
    lim = (float(vals.min()) / 1.3, float(vals.max()) * 1.3) if log else (0.0, float(vals.max()) * 1.05)
    ax.plot(lim, lim, color="grey", lw=0.8, zorder=0)
    if log:
        ax.set(xscale="log", yscale="log")
    ax.set(xlim=lim, ylim=lim, xlabel=x, ylabel=y)
    if legend and hue is not None:
        legend_outside(ax)
    return ax


def plot_ecdf(data: pd.DataFrame, *, x: str, hue: str | None = None, ax=None, event: str | None = None,
              hue_order: Sequence | None = None, labels: Mapping | Callable | None = None, palette=None, legend: bool = True,
              **kwargs):
    """Cumulative distribution of the observations ``x``: the empirical CDF, or with ``event`` (right-censored data)
    the Kaplan–Meier estimate ``1 − S(t)`` (lifelines), drawn as a step function.

    Parameters
    ----------
    data : DataFrame
        One row per observation (e.g. one server and its lifetime).
    x : str
        The observed durations or values.
    hue : str, optional
        Column splitting the observations into curves.
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    event : str, optional
        Boolean column: True where the event was observed (a revocation), False where the observation is censored
        (a server still running at the end). Default: every observation is an event.
    hue_order, labels, palette, legend
        As in :func:`plot_lines`.
    **kwargs
        Passed to ``Axes.step`` (``color``, ``label`` without ``hue``…).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``.
    """
    from lifelines import KaplanMeierFitter

    _check_data("plot_ecdf", data, x=x, hue=hue, event=event)
    ax = _axes("plot_ecdf", ax)
    for key, g, style in _groups("plot_ecdf", data, hue, hue_order, palette):
        t = g[x].to_numpy(float)
        e = np.ones(len(t), bool) if event is None else g[event].to_numpy(bool)
        sf = KaplanMeierFitter().fit(t, e).survival_function_
        kw = {**style, **({"label": _label(key, labels)} if hue is not None else {}), **kwargs}
        ax.step(sf.index.to_numpy(float), 1 - sf.iloc[:, 0].to_numpy(float), where="post", **kw)
    ax.set(xlabel=x, ylabel="CDF")
    if legend:
        legend_outside(ax)
    return ax


def plot_heatmap(data: pd.DataFrame, *, x: str, y: str, hue: str, ax=None, x_order: Sequence | None = None,
                 y_order: Sequence | None = None, annot: bool = True, fmt: str = ".2g", cmap: str = "viridis",
                 colorbar: bool = True, **kwargs):
    """One cell per (``x``, ``y``) coloured (and annotated) by ``hue`` (seaborn's ``heatmap`` of the pivoted frame).

    Parameters
    ----------
    data : DataFrame
        Tidy frame, exactly one row per (``x``, ``y``).
    x, y : str
        Columns naming the cell's column and row.
    hue : str
        Numeric column giving the cell's colour (and annotation).
    ax : matplotlib Axes, optional
        Axes to draw into; default a new figure.
    x_order, y_order : sequence, optional
        Columns and rows in drawing order; default order of appearance.
    annot : bool, default True
        Print each value in its cell (``fmt``).
    fmt : str, default '.2g'
        Format of the annotations.
    cmap : str, default 'viridis'
        Colour map.
    colorbar : bool, default True
        Draw a colour bar beside the axes.
    **kwargs
        Passed to ``seaborn.heatmap`` (``vmin``, ``vmax``, ``linewidths``…).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    TypeError
        ``data`` is not a DataFrame, or ``ax`` not an Axes.
    ValueError
        A named column is not in ``data``, or a (``x``, ``y``) cell has several rows.
    """
    import seaborn as sns

    _check_data("plot_heatmap", data, x=x, y=y, hue=hue)
    ax = _axes("plot_heatmap", ax)
    first = _first_duplicate(data, [x, y])
    if first:
        raise ValueError(f"plot_heatmap: data has several rows for the cell {first}; a heatmap needs one row "
                         f"per ({x}, {y}). Aggregate first (e.g. data.groupby([{x!r}, {y!r}])[{hue!r}].mean().reset_index()).")
    m = data.pivot(index=y, columns=x, values=hue).reindex(index=_levels(data, y, y_order), columns=_levels(data, x, x_order))
    sns.heatmap(m, ax=ax, annot=annot, fmt=fmt, cmap=cmap, cbar=colorbar, annot_kws={"fontsize": 6}, **kwargs)
    return ax


# -------------------------------------------------------------------------------------------- figure-level helpers
def scatter_figure(data: pd.DataFrame, *, x: str, y: str, xlabel: str, ylabel: str = "Step Time (s)", hue: str = "gpu",
                   size=None, ax=None):
    """A paper figure with one :func:`plot_scatter` panel (CM-DARE's speed scatter plots: K80 'x', P100 '^', alpha 0.1).

    ``size`` defaults to a third of the text width by 2 in (three sub-figures side by side across both columns, as the
    authors' 2×2-in figures). Returns the Figure.
    """
    with paper_style():
        fig, ax, own = subplots(ax, figsize=size or figure_size("text", 2.0, fraction=1 / 3))
        plot_scatter(data, x=x, y=y, hue=hue, ax=ax)
        ax.set(xlabel=xlabel, ylabel=ylabel)
        if own:
            fig.tight_layout()
    return fig

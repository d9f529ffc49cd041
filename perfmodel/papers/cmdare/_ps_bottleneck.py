"""CM-DARE ``ps_bot_p100_{1,2,3,4}.pdf`` (README "Fig 3" = ``_1``) and ``ps_bot_k80_{1,2}.pdf``: the parameter-server
bottleneck (redraws cells 5–11).

``ps_bot_p100(k)``: 1 PS vs 2 PS speed vs number of P100 workers for CNN k (1 = ResNet-15, 2 = ResNet-32, 3 = Shake-Shake
small, 4 = Shake-Shake big), error bars = std arrays, 2×2 in, y-limits 205 / auto / 42 / 8.1 as in the notebook.
``ps_bot_k80(k)``: K80 speed vs workers, 1 = the ResNets, 2 = the Shake-Shakes.
"""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, subplots

from perfmodel.papers.cmdare._cluster_common import ORDER, cluster_series, plot_speed_vs_workers

__all__ = ["ps_bot_p100_data", "ps_bot_p100", "ps_bot_k80_data", "ps_bot_k80"]

_YLIM = {1: 205, 2: None, 3: 42, 4: 8.1}


def _check(k, valid):
    if k not in valid:
        raise ValueError(f"k must be one of {sorted(valid)}; got {k!r}.")


def ps_bot_p100_data(k: int = 1, source: str = "reported"):
    """16 rows: P100, CNN ``k``, 1 and 2 PS × 1–8 workers."""
    _check(k, _YLIM)
    d = cluster_series(source)
    return d[(d["gpu"] == "P100") & (d["model"] == ORDER[k - 1])].reset_index(drop=True)


#: One of three sub-figures side by side across the text (the authors drew 2×2 in).
_SIZE = figure_size("text", 2.2, fraction=1 / 3)


@paper_figure
def ps_bot_p100(k: int = 1, source: str = "reported", *, data=None, ax=None):
    """1 PS vs 2 PS: speed vs number of P100 workers for CNN ``k``, std error bars."""
    fig, ax, own = subplots(ax, figsize=_SIZE)
    plot_speed_vs_workers(ps_bot_p100_data(k, source) if data is None else data, hue="n_ps", ax=ax)
    ax.set_xlabel("Number of P100 workers")
    if _YLIM[k] is not None:
        ax.set_ylim(0, _YLIM[k])
    if own:
        fig.tight_layout()
    return fig


def ps_bot_k80_data(k: int = 1, source: str = "reported"):
    """16 rows: K80, 1 PS; k = 1 → ResNet-15/32, k = 2 → Shake-Shake small/big."""
    _check(k, {1, 2})
    d = cluster_series(source)
    models = ORDER[:2] if k == 1 else ORDER[2:]
    return d[(d["gpu"] == "K80") & d["model"].isin(models)].reset_index(drop=True)


@paper_figure
def ps_bot_k80(k: int = 1, source: str = "reported", *, data=None, ax=None):
    """Speed vs number of K80 workers (1 PS), two CNNs, std error bars."""
    fig, ax, own = subplots(ax, figsize=_SIZE)
    plot_speed_vs_workers(ps_bot_k80_data(k, source) if data is None else data, ax=ax)
    ax.set_xlabel("Number of K80 workers")
    if own:
        fig.tight_layout()
    return fig

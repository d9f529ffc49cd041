"""Steps/s vs step, one worker, 4 CNNs (K80 saved; P100, V100 panels).

Only the K80 panel is saved upstream; the P100 and V100 panels are drawn but not saved. Mean speeds (steps/s) K80 / P100 / V100:
ResNet-15 9.4527 / 21.1586 / 27.3754, ResNet-32 4.5564 / 12.1919 / 15.6150, Shake-Shake small 2.5733 / 6.9922 / 8.8029, Shake-Shake big
0.6961 / 1.9756 / 2.1826 (the P100/V100 numbers equal the summary row "mean" of the files). These are the only V100 speed
measurements in the data.

CM-DARE ``one_k80_cluster_training_speed_time_series.pdf`` and its P100/V100 panels: steps/s vs step, one worker,
4 CNNs. Source: ``speed_data_base/*/data.csv``, ``sigmetrics2020_figure3`` cells 1–2.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers._item import Item
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.plotting import figure_size, paper_figure, plot_lines, subplots

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Steps/s vs step, one worker, 4 CNNs (K80 saved; P100, V100 panels)",
    upstream="one_k80_cluster_training_speed_time_series.pdf (sigmetrics2020_figure3 cells 1-2)",
    sources=(("cake-lab/CM-DARE: "
              "data/processed_data/speed_data_base/{res15,res32,shakesmall,shakebig}{k80,p100,v100}/data.csv"),),
    procedure=("Drop rows 40, 41 for K80 (two summary rows; the K80 files keep a leading 0,0 row so the line "
               "starts at the origin) and rows 0, 39, 40 for P100/V100 (first sample at step 101 plus the summary "
               "rows); plot Value (steps/s) vs Step, x 0-4000, y 0-11, 3.3x1.5 in. Mean speed over the plotted "
               "samples."),
    status="EXACT-DATA",
    numbers_area="timeseries",
    legacy_id="single_worker_timeseries",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


_LABELS = {"resnet-15": "ResNet-15", "resnet-32": "ResNet-32", "shake-shake-small": "Shake Shake Small", "shake-shake-big": "Shake Shake Big"}


def single_worker_timeseries_data(gpu: str = "K80") -> pd.DataFrame:
    """The plotted rows: K80 keeps its leading (0, 0) origin row and every sample; P100/V100 drop the first sample
    (step 101), as the notebook's ``drop(index[[40, 41]])`` / ``drop(index[[0, 39, 40]])`` do."""
    g = ds.canonical_gpu(gpu)
    ts = ds.load_speed_timeseries()
    ts = ts[ts["gpu"] == g]
    if g != "K80":
        ts = ts[~ts["first_sample"]]
    if ts.empty:
        raise ValueError(f"No single-worker time series for {g}; the data has K80, P100 and V100.")
    return ts[["gpu", "model", "step", "speed_steps_per_s", "origin_row", "first_sample"]].reset_index(drop=True)


def single_worker_mean_speeds() -> pd.DataFrame:
    """Mean speed (steps/s) per (model, GPU) over the plotted samples, without the K80 origin row."""
    frames = [single_worker_timeseries_data(g) for g in ("K80", "P100", "V100")]
    d = pd.concat(frames)
    d = d[~d["origin_row"]]
    return d.groupby(["model", "gpu"], observed=True)["speed_steps_per_s"].mean().rename("speed_mean_steps_per_s").reset_index()


def single_worker_numbers_data() -> pd.DataFrame:
    """The 12 mean speeds quoted by the paper (paper) next to :func:`single_worker_mean_speeds` (reproduced)."""
    m = single_worker_mean_speeds()
    return compare_with_paper("timeseries", {f"{g.lower()}_{mod}_mean_speed_steps_per_s": float(v)
                                             for mod, g, v in m[["model", "gpu", "speed_mean_steps_per_s"]].itertuples(index=False)})


@paper_figure
def single_worker_timeseries(gpu: str = "K80", data: pd.DataFrame | None = None, *, ax=None):
    """The figure: one column wide, x 0–4000 steps, y 0–11 steps/s for K80 (auto for the faster GPUs)."""
    data = single_worker_timeseries_data(gpu) if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.0))
    plot_lines(data, x="step", y="speed_steps_per_s", hue="model", ax=ax, labels=lambda m: _LABELS.get(str(m), str(m)))
    ax.set(xlabel="Step", ylabel="Speed (steps/s)", xlim=(0, 4000))
    if ds.canonical_gpu(gpu) == "K80":
        ax.set_ylim(0, 11)
    if own:
        fig.tight_layout()
    return fig


def data(gpu="K80") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.single_worker_timeseries_data``)."""
    return single_worker_timeseries_data(gpu=gpu)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``timeseries`` area (rows of other items name them in ``item``)."""
    return single_worker_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return single_worker_timeseries(gpu=gpu, data=data, ax=ax)

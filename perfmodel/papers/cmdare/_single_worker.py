"""CM-DARE ``one_k80_cluster_training_speed_time_series.pdf`` and its P100/V100 panels: steps/s vs step, one worker,
4 CNNs. Source: ``speed_data_base/*/data.csv``, ``sigmetrics2020_figure3`` cells 1–2."""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, plot_lines, subplots

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers._numbers import compare_with_paper

__all__ = ["single_worker_timeseries_data", "single_worker_timeseries", "single_worker_mean_speeds", "single_worker_numbers_data"]

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

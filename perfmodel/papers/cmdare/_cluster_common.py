"""Cluster-speed series shared by the CM-DARE cluster figures."""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.models.cluster import cluster_speeds

LABELS = {"resnet-15": "ResNet-15", "resnet-32": "ResNet-32", "shake-shake-small": "Shake Shake Small", "shake-shake-big": "Shake Shake Big"}
ORDER = ["resnet-15", "resnet-32", "shake-shake-small", "shake-shake-big"]


def cluster_series(source: str = "reported") -> pd.DataFrame:
    """Tidy speeds per (gpu, n_ps, model, n_workers): ``speed_mean_steps_per_s``, ``speed_std_steps_per_s``, ``source``.

    ``source="reported"``: the arrays the authors plotted (redraws cell 1); ``"data"``: recomputed from the 96 runs with
    the step ≥ 2000 rule (92 of 96 within 1 %).
    """
    if source == "reported":
        d = ds.load_transcribed("cluster_speed")
        d["model"] = d["model"].map(ds.canonical_model)
        d = d[["gpu", "n_ps", "model", "n_workers", "speed_mean_steps_per_s", "speed_std_steps_per_s"]]
    elif source == "data":
        d = cluster_speeds()[["gpu", "n_ps", "model", "n_workers", "speed_mean_steps_per_s", "speed_std_steps_per_s"]]
    else:
        raise ValueError(f"source must be 'reported' (the paper's arrays) or 'data' (recomputed from the runs); got {source!r}.")
    return d.assign(source=source).sort_values(["gpu", "n_ps", "model", "n_workers"]).reset_index(drop=True)


def plot_speed_vs_workers(data: pd.DataFrame, *, hue: str = "model", ax=None, errorbars: bool = True):
    """Speed (steps/s) vs number of workers, one line per ``hue`` value (:func:`perfmodel.plotting.plot_lines`, the
    std as error bars); returns the Axes."""
    from perfmodel.plotting import plot_lines

    ax = plot_lines(data, x="n_workers", y="speed_mean_steps_per_s", hue=hue, ax=ax, yerr="speed_std_steps_per_s" if errorbars else None,
                    labels=lambda key: LABELS.get(key, f"{key} PS" if hue == "n_ps" else str(key)), marker="o", ms=3)
    ax.set(xlabel="Number of workers", ylabel="Speed (steps/second)", xticks=range(1, 9))
    return ax

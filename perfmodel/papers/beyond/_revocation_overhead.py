"""Revocations and checkpointing of transient clusters: expected revocations vs job length (renewal function vs Monte
Carlo) per GPU, and expected wall time vs checkpoint interval with the Young/Daly optimum (beyond the
papers; lifetimes from CM-DARE's per-region CDFs; checkpoint time from CM-DARE's checkpoint model)."""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, plot_lines, subplots

import numpy as np
import pandas as pd

from perfmodel.planning import revocation as R

__all__ = ["revocation_expectations_data", "revocation_expectations", "checkpoint_interval_data", "checkpoint_interval"]


def revocation_expectations_data(hours=(0.5, 1, 2, 4, 8, 16, 24, 48), n_servers: int = 4, trials: int = 2000,
                                 random_state: int = 0) -> pd.DataFrame:
    """Per GPU and job length: expected revocations of ``n_servers`` slots (renewal function) and the Monte-Carlo
    mean with its standard error. Columns ``gpu``, ``hours``, ``expected``, ``simulated``, ``stderr``."""
    rows = []
    for g in ("K80", "P100", "V100"):
        d = R.lifetime_distribution(g)
        e = R.expected_revocations(list(hours), n_servers, dist=d)
        for h, ev in zip(hours, e):
            s = R.simulate_revocations(h, n_servers, dist=d, trials=trials, random_state=random_state)
            rows.append(dict(gpu=g, hours=float(h), expected=float(ev), simulated=float(s.mean()), stderr=float(s.std(ddof=1) / np.sqrt(trials))))
    return pd.DataFrame(rows)


@paper_figure
def revocation_expectations(data: pd.DataFrame | None = None, *, ax=None):
    """Expected revocations of a 4-server cluster vs job length: lines = renewal function, points = Monte Carlo
    (± 2 standard errors), one colour per GPU."""
    d = revocation_expectations_data() if data is None else data
    d = d.assign(gpu=d["gpu"].astype(str), two_stderr=2 * d["stderr"])
    gpus = sorted(d["gpu"].unique())
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.4))
    plot_lines(d, x="hours", y="expected", hue="gpu", hue_order=gpus, ax=ax, legend=False)
    plot_lines(d, x="hours", y="simulated", hue="gpu", hue_order=gpus, yerr="two_stderr", ax=ax, linestyle="none", marker="o", ms=3,
               label="_nolegend_")
    ax.set(xlabel="Job length (h)", ylabel="Expected revocations (4 servers)")
    if own:
        fig.tight_layout()
    return fig


def checkpoint_interval_data(model: str = "resnet-32", gpu: str = "K80", n_servers: int = 4, work_h: float = 10.0,
                             restart_s: float | None = None, trials: int = 1500, random_state: int = 0) -> pd.DataFrame:
    """Expected and simulated wall time of ``work_h`` hours of work vs checkpoint interval, for a job that any of
    ``n_servers`` transient ``gpu`` servers interrupts (MTBF = slot MTBF / n, exponential approximation), with the
    model's predicted checkpoint time. ``restart_s`` defaults to CM-DARE's TensorFlow warm restart
    (:func:`perfmodel.planning.tf_restart_s`). ``attrs`` hold ``young_s``, ``daly_s``, ``checkpoint_s``, ``mtbf_s``."""
    from perfmodel.models.checkpoint import predict_checkpoint_time

    if restart_s is None:
        restart_s = R.tf_restart_s("warm")

    c = float(predict_checkpoint_time(model)["checkpoint_time_s"].iloc[0])
    mtbf = R.mean_time_between_failures_h(R.lifetime_distribution(gpu)) * 3600 / n_servers
    daly = R.young_daly_interval(c, mtbf)
    grid = R.optimal_interval_by_simulation(work_h * 3600, c, restart_s, mtbf, daly * np.array([0.125, 0.25, 0.5, 1, 2, 4, 8]),
                                            trials=trials, random_state=random_state)
    grid.attrs.update(young_s=R.young_daly_interval(c, mtbf, method="young"), daly_s=daly, checkpoint_s=c, mtbf_s=mtbf)
    return grid


@paper_figure
def checkpoint_interval(data: pd.DataFrame | None = None, *, ax=None):
    """Wall time vs checkpoint interval (log x): analytic line, simulated points (± 2 standard errors), the Daly
    interval marked."""
    from perfmodel.plotting import legend_outside

    d = checkpoint_interval_data() if data is None else data
    h = pd.DataFrame({"interval_min": d["interval_s"] / 60, "expected_wall_h": d["expected_wall_s"] / 3600,
                      "simulated_wall_h": d["simulated_wall_s"] / 3600, "two_stderr_h": 2 * d["stderr_s"] / 3600})
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.4))
    plot_lines(h, x="interval_min", y="expected_wall_h", ax=ax, label="expected", legend=False)
    plot_lines(h, x="interval_min", y="simulated_wall_h", yerr="two_stderr_h", ax=ax, linestyle="none", marker="o", ms=3,
               label="Monte Carlo", legend=False)
    ax.axvline(d.attrs["daly_s"] / 60, color="grey", ls="--", lw=0.8, label="Young/Daly")
    ax.set(xscale="log", xlabel="Checkpoint interval (min)", ylabel="Wall time (h)")
    legend_outside(ax)
    if own:
        fig.tight_layout()
    return fig

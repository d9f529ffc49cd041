"""Wall time vs checkpoint interval, Young/Daly optimum vs simulation.

Default job: ResNet-32 on 4 K80 servers, 10 h of work.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _revocation_overhead as _impl

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE section on checkpoints",
    title="Wall time vs checkpoint interval, Young/Daly optimum vs simulation",
    upstream="-",
    sources=("CM-DARE checkpoint data (predicted checkpoint time)", "CM-DARE lifetime CDF arrays"),
    procedure=("Expected wall time of a job vs checkpoint interval, simulated and by the Young/Daly first-order "
               "formula, with the optimum marked."),
    status="perfmodel analysis",
    notebook="notebooks/07-planner-and-revocations.ipynb",
    test="tests/papers/test_plan_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.checkpoint_interval_data``)."""
    return _impl.checkpoint_interval_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the checkpoint time, the cluster's MTBF, the Young and Daly intervals, the simulated
    optimum and the wall time at the Daly interval (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``,
    the protocol in ``reason``), from :func:`data`."""
    import inspect

    from perfmodel.planning import tf_restart_s

    p = {k: v.default for k, v in inspect.signature(_impl.checkpoint_interval_data).parameters.items()}
    if p["restart_s"] is None:  # the data function's default: CM-DARE's TensorFlow warm restart
        p["restart_s"] = tf_restart_s("warm")
    d = data()
    a = d.attrs
    job = (f"{p['model']} on {p['n_servers']} transient {p['gpu']} servers, {p['work_h']:g} h of work, restart {p['restart_s']:g} s "
           "(CM-DARE's TensorFlow warm restart)")
    mc = f"seeded Monte Carlo ({p['trials']} trials, random_state {p['random_state']})"
    best = d.loc[d["simulated_wall_s"].idxmin()]
    daly = d.loc[(d["interval_s"] - a["daly_s"]).abs().idxmin()]
    lo, hi = d["interval_s"].min() / a["daly_s"], d["interval_s"].max() / a["daly_s"]
    rows = [
        dict(quantity="checkpoint_s", unit="s", value=a["checkpoint_s"],
             protocol=f"perfmodel.models.checkpoint.predict_checkpoint_time of {p['model']} (fitted on CM-DARE's checkpoint data)"),
        dict(quantity="cluster_mtbf_s", unit="s", value=a["mtbf_s"],
             protocol=f"mean time between failures of one {p['gpu']} slot (CM-DARE lifetime CDFs) / {p['n_servers']} servers"),
        dict(quantity="young_interval_s", unit="s", value=a["young_s"], protocol="Young's first-order optimum sqrt(2 C M) of " + job),
        dict(quantity="daly_interval_s", unit="s", value=a["daly_s"], protocol="Daly's higher-order optimum of " + job),
        dict(quantity="simulated_best_interval_s", unit="s", value=best["interval_s"],
             protocol=f"the interval of least simulated wall time on a grid of {len(d)} intervals from {lo:.3g} to {hi:.3g} × the Daly "
                      f"interval, {mc}, " + job),
        dict(quantity="expected_wall_h_at_daly", unit="h", value=daly["expected_wall_s"] / 3600,
             protocol="expected wall time at the Daly interval (perfmodel.planning.revocation.expected_job_overhead: restart from the "
                      "last checkpoint under exponential failures), " + job),
        dict(quantity="simulated_wall_h_at_daly", unit="h", value=daly["simulated_wall_s"] / 3600,
             protocol=f"{mc} wall time at the Daly interval (± {daly['stderr_s'] / 3600:.2g} h standard error), " + job),
    ]
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.checkpoint_interval(data=data, ax=ax)

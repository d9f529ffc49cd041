"""Expected revocations vs job length: renewal function vs Monte Carlo.

Deterministic: the simulation takes a fixed ``random_state``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _revocation_overhead as _impl

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE section on lifetimes",
    title="Expected revocations vs job length: renewal function vs Monte Carlo",
    upstream="-",
    sources=("CM-DARE lifetime CDF arrays",),
    procedure=("Expected number of revocations of n servers over a job of given hours: the renewal function of "
               "the fitted lifetime model vs a seeded Monte Carlo simulation."),
    status="perfmodel analysis",
    notebook="notebooks/07-planner-and-revocations.ipynb",
    test="tests/papers/test_plan_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.revocation_expectations_data``)."""
    return _impl.revocation_expectations_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: expected revocations per GPU and job length (renewal function, with the Monte-Carlo
    mean in the protocol) and the Monte Carlo's MAPE to the renewal function per GPU (``COMPARISON_COLUMNS``, no paper
    value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    import inspect

    from perfmodel.diagnostics.metrics import mape

    p = {k: v.default for k, v in inspect.signature(_impl.revocation_expectations_data).parameters.items()}
    d = data()
    mc = f"seeded Monte Carlo ({p['trials']} trials, random_state {p['random_state']})"
    rows = []
    for r in d.itertuples(index=False):
        rows.append(dict(quantity=f"{r.gpu.lower()}_expected_revocations_{r.hours:g}h", unit="1", value=r.expected,
                         protocol=f"renewal function of the lifetime distribution of CM-DARE's {r.gpu} CDF arrays: revocations (24-h "
                                  f"terminations included) of {p['n_servers']} servers kept running for {r.hours:g} h (a revoked "
                                  "server replaced at once); "
                                  f"{mc}: {r.simulated:.4g} ± {r.stderr:.2g} (standard error)"))
    for g, sub in d.groupby("gpu", sort=True):
        rows.append(dict(quantity=f"{str(g).lower()}_monte_carlo_vs_renewal_mape_pct", unit="pct", value=mape(sub["expected"], sub["simulated"]),
                         protocol=f"{mc} against the renewal function over the {len(sub)} job lengths of {g}; MAPE from "
                                  "perfmodel.diagnostics.metrics"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.revocation_expectations(data=data, ax=ax)

"""A user's own price table (``perfmodel plan --prices FILE``, ``plan(prices=...)``), validated before it is used."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["read_prices", "PRICE_COLUMNS"]

#: Columns a price table needs (the schema of :func:`perfmodel.datasets.load_prices`); others are kept.
PRICE_COLUMNS = ("server", "gpu", "on_demand_usd_per_h", "transient_usd_per_h")


def read_prices(path) -> pd.DataFrame:
    """Read and check a CSV price table: one row per worker GPU (``server=worker``, ``gpu``) and one for the parameter
    server (``server=parameter_server``), with hourly prices in US dollars.

    Parameters
    ----------
    path : str or Path
        CSV file with at least the columns :data:`PRICE_COLUMNS`; ``gpu`` names are canonicalised
        (``"Tesla V100"`` → ``V100``), a ``price_date`` column is added (``"user prices (<file name>)"``) when missing.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a CSV with those columns, a price that is missing, not a number or not positive, a worker row without a GPU,
        a GPU listed twice, or no parameter-server row.
    """
    from perfmodel import datasets as ds

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Price file {path} not found (or not a file). Expected a CSV with the columns "
                                f"{', '.join(PRICE_COLUMNS)}, like perfmodel.datasets.load_prices().")
    try:
        p = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"Price file {path} is not a readable CSV ({exc}). Expected the columns {', '.join(PRICE_COLUMNS)}.") from exc
    missing = [c for c in PRICE_COLUMNS if c not in p.columns]
    if missing:
        raise ValueError(f"Price file {path} lacks the columns {missing}; it has {list(p.columns)}. Expected {', '.join(PRICE_COLUMNS)} "
                         "(server is 'worker' or 'parameter_server'; prices in US dollars per hour).")
    bad_server = sorted(set(p["server"].astype(str)) - {"worker", "parameter_server"})
    if bad_server:
        raise ValueError(f"Price file {path}: server must be 'worker' or 'parameter_server'; got {bad_server}.")
    for col in ("on_demand_usd_per_h", "transient_usd_per_h"):
        v = pd.to_numeric(p[col], errors="coerce")
        bad = ~(np.isfinite(v) & (v > 0))
        if bad.any():
            raise ValueError(f"Price file {path}: {col} must be a positive number of dollars per hour in every row; rows "
                             f"{(p.index[bad] + 2).tolist()} (file lines) hold {p.loc[bad, col].tolist()}.")
        p[col] = v.astype(float)
    workers = p["server"] == "worker"
    if p.loc[workers, "gpu"].isna().any():
        raise ValueError(f"Price file {path}: every worker row needs a gpu (e.g. V100).")
    p.loc[workers, "gpu"] = [ds.canonical_gpu(g) for g in p.loc[workers, "gpu"]]
    dup = p.loc[workers, "gpu"][p.loc[workers, "gpu"].duplicated()].tolist()
    if dup:
        raise ValueError(f"Price file {path}: {sorted(set(dup))} listed more than once; give one row per worker GPU.")
    if not (p["server"] == "parameter_server").any():
        raise ValueError(f"Price file {path} has no parameter_server row: the planner prices the parameter servers too.")
    if "price_date" not in p.columns:
        p["price_date"] = f"user prices ({path.name})"
    return p

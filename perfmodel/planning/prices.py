"""A user's own price table (``perfmodel plan --prices FILE``, ``plan(prices=...)``), validated before it is used."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["read_prices", "read_price_csv", "PRICE_COLUMNS"]

#: Columns a price table needs (the schema of :func:`perfmodel.datasets.load_prices`); others are kept.
PRICE_COLUMNS = ("server", "gpu", "on_demand_usd_per_h", "transient_usd_per_h")


def read_price_csv(path, columns) -> pd.DataFrame:
    """A UTF-8 CSV price file as a frame, or one clear error: a binary, UTF-16 or latin-1 file, or one that is not CSV.

    Parameters
    ----------
    path : str or Path
        The file (a UTF-8 byte-order mark is accepted).
    columns : sequence of str
        The columns the caller needs (named in the messages only; the caller checks them).

    Raises
    ------
    FileNotFoundError
        No such file (or a folder).
    perfmodel.NotADataFileError
        Not UTF-8 text (NUL bytes: binary or UTF-16; another encoding such as latin-1), or not parseable as CSV.
    """
    from perfmodel._errors import NotADataFileError

    path = Path(path)
    expected = f"Expected a UTF-8 CSV file with the columns {', '.join(columns)}"
    if not path.is_file():
        raise FileNotFoundError(f"Price file {path} not found (or not a file). {expected}.")
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw[:4096]:
        kind = "UTF-16 text" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "binary data (NUL bytes; or UTF-16 without a mark)"
        raise NotADataFileError(f"Price file {path} holds {kind}, not a UTF-8 CSV. {expected}; save it as UTF-8 CSV "
                                "(spreadsheets: 'CSV UTF-8'; or iconv -f UTF-16 -t UTF-8).")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotADataFileError(f"Price file {path} is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}; latin-1 or "
                                f"cp1252?). {expected}; convert it, e.g. iconv -f latin1 -t UTF-8 {path.name}.") from None
    import io

    try:
        return pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NotADataFileError(f"Price file {path} is not a readable CSV ({first}). {expected}.") from None


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
    p = read_price_csv(path, PRICE_COLUMNS)
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

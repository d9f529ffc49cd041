"""Appending measurements to a CSV dataset file without ever losing a row.

:func:`append_rows` writes the existing bytes plus the new rows to a temporary file in the same folder, flushes and
fsyncs it, and atomically renames it over the file (``os.replace``). A process killed at any moment leaves either the
old file or the new one — never a truncated file — and existing rows are copied byte for byte, never rewritten.
"""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pandas as pd

__all__ = ["append_rows", "read_rows", "MeasurementFileError"]


class MeasurementFileError(ValueError):
    """The measurement file exists but does not have the columns of the rows being appended (or is not a CSV)."""


def _header(path: Path) -> list[str]:
    with open(path, "rb") as f:
        first = f.readline().decode("utf-8").rstrip("\r\n")
    return first.split(",") if first else []


def read_rows(path) -> pd.DataFrame:
    """The rows of a measurement file (empty frame when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return pd.DataFrame()
    return pd.read_csv(path, float_precision="round_trip")


def append_rows(df: pd.DataFrame, path) -> Path:
    """Append ``df`` to the CSV file ``path`` atomically (the file is created with a header if missing).

    Raises
    ------
    MeasurementFileError
        The file exists with other columns (in another order) than ``df``: the rows would not line up. Write to a new
        file, or select/reorder the columns to the file's header.
    """
    path = Path(path)
    if df.empty:
        return path
    cols = [str(c) for c in df.columns]
    old = b""
    if path.exists() and path.stat().st_size > 0:
        have = _header(path)
        if have != cols:
            raise MeasurementFileError(
                f"{path} has the columns {have}, the new rows have {cols}. Expected the same columns in the same order; "
                "write to a new file or reorder the rows' columns to the file's header.")
        old = path.read_bytes()
        if not old.endswith(b"\n"):
            old += b"\n"
    buf = io.StringIO()
    df.to_csv(buf, index=False, header=not old, lineterminator="\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        mode = path.stat().st_mode & 0o777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(old)
            f.write(buf.getvalue().encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # mkstemp creates 0600; keep the file's own mode (or the umask's default for a new file)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path

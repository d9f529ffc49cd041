"""Parsing layer: bytes of a CSV file → DataFrame, refusing what is not a CSV table.

Every failure is one of two documented errors:

* :class:`~perfmodel._errors.NotADataFileError` — empty file, an HTML page saved as ``.csv``, binary content;
* :class:`~perfmodel._errors.DataFormatError` — not decodable as UTF-8 text, not parseable as CSV, missing columns,
  a column that should be numeric holding text.

Upstream quirks handled here: CRLF line endings, no trailing newline, a UTF-8 BOM.
"""
from __future__ import annotations

import io
import re
import warnings
from collections.abc import Iterable

import pandas as pd

from perfmodel._errors import DataFormatError, NotADataFileError

__all__ = ["parse_csv", "to_numeric"]

_HTML = re.compile(rb"^\s*(<!doctype\s+html|<html|<head|<body|<\?xml|<!--)", re.IGNORECASE)


def _check_is_text_table(data: bytes, source: str) -> str:
    if not data.strip():
        raise NotADataFileError(f"{source} is empty (0 data bytes); expected a CSV table with a header row.")
    head = data[:2048].lstrip(b"\xef\xbb\xbf")
    if _HTML.match(head) or b"<html" in head.lower():
        raise NotADataFileError(
            f"{source} is an HTML page, not a CSV table (it starts with {head[:40]!r}). It was probably saved from a web "
            "page instead of downloaded raw; get the raw file (or do not use it: the upstream bar_chunks_fraction files are such pages)."
        )
    if b"\x00" in head:
        raise NotADataFileError(f"{source} holds binary data (NUL bytes), not a CSV table.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{source} is not UTF-8 text ({exc}); expected a UTF-8 CSV table.") from exc


def parse_csv(
    data: bytes | str,
    *,
    source: str,
    required_columns: Iterable[str] = (),
    numeric_columns: Iterable[str] = (),
    **read_csv_kwargs,
) -> pd.DataFrame:
    """Parse CSV bytes into a DataFrame, with clear errors.

    Parameters
    ----------
    data : bytes or str
        File content.
    source : str
        Name of the file, used in error messages.
    required_columns : iterable of str
        Columns that must be present (after ``read_csv_kwargs`` such as ``names=``).
    numeric_columns : iterable of str
        Columns converted to float; a non-numeric, non-empty cell raises :class:`DataFormatError`.
    **read_csv_kwargs
        Passed to :func:`pandas.read_csv` (default ``float_precision="round_trip"``: numbers parse exactly as Python's
        ``float(text)``).
    """
    text = _check_is_text_table(data if isinstance(data, bytes) else data.encode("utf-8"), source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            # round_trip: every number is the float closest to its decimal text (pandas' default C parser is not)
            df = pd.read_csv(io.StringIO(text), **{"float_precision": "round_trip", **read_csv_kwargs})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, pd.errors.ParserWarning, ValueError, TypeError, IndexError) as exc:
        raise DataFormatError(f"{source} could not be parsed as CSV: {exc}") from exc
    req = list(required_columns)
    missing = [c for c in req if c not in df.columns]
    if missing:
        raise DataFormatError(
            f"{source} lacks the column(s) {missing}; expected at least {req}, found {list(map(str, df.columns))}."
        )
    for col in numeric_columns:
        df[col] = to_numeric(df[col], column=col, source=source)
    return df


def to_numeric(values: pd.Series, *, column: str, source: str) -> pd.Series:
    """Convert a column to float; empty cells become NaN, any other non-number raises :class:`DataFormatError`."""
    try:
        return pd.to_numeric(values, errors="raise").astype(float)
    except (ValueError, TypeError) as exc:
        raise DataFormatError(f"{source}: column {column!r} must be numeric but holds {exc}.") from exc

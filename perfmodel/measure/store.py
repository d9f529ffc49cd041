"""Appending measurements to a CSV dataset file without ever losing a row.

:func:`append_rows` takes an exclusive lock on a hidden sibling file ``.<name>.lock`` (``filelock``; left in place
after release: deleting a lock file breaks mutual exclusion), writes the existing bytes plus the new rows to a hidden
temporary file ``.<name>.<random>.tmp`` in the same folder, flushes and fsyncs it, and atomically renames it over the
file (``os.replace``). So:

* any number of processes may append to one file at once: writers take turns and every row is kept;
* a process killed at any moment leaves either the old file or the new one — never a truncated file — and the
  temporary file it may leave behind is removed by the next append (under the lock no other writer can own it);
* existing rows are copied byte for byte, never rewritten, and the file keeps its permission bits;
* a symbolic link is written through: the rows go to the file it points at (resolved, locked and replaced there), and
  the link stays a link;
* the temporary file is removed whenever the append fails (full disk, a folder at the file's path, ...);
* an append the file refuses (read-only file or folder, other columns, unreadable or non-CSV file) raises, and the new
  rows are first written to a new sibling file ``<stem>.unsaved-<UTC time>-<pid>.csv`` (in the system's temporary folder
  when the file's own folder is not writable) whose path is in the message and in the exception's ``saved_to``.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import os
import re
import tempfile
from pathlib import Path

import pandas as pd

__all__ = ["append_rows", "read_rows", "check_appendable", "MeasurementFileError", "LOCK_TIMEOUT_S"]

#: Seconds :func:`append_rows` waits for another writer's lock before giving up (``TimeoutError``).
LOCK_TIMEOUT_S = 300.0


class MeasurementFileError(ValueError):
    """The measurement file exists but does not have the columns of the rows being appended (or is not a CSV)."""


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _tmp_pattern(path: Path) -> re.Pattern:
    # tempfile.mkstemp(prefix=".<name>.", suffix=".tmp") inserts 8 characters of [a-z0-9_]: this matches the temporary
    # files of exactly this file (not those of "<name>.other.csv").
    return re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp")


def _remove_stale_tmp(path: Path) -> list[Path]:
    """Remove the temporary files a killed writer of ``path`` left behind (call with the lock held)."""
    pat = _tmp_pattern(path)
    removed = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if pat.fullmatch(name):
            p = path.parent / name
            try:
                p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass
    return removed


def _quoting(df: pd.DataFrame) -> int:
    """``csv.QUOTE_MINIMAL``, or ``csv.QUOTE_NONNUMERIC`` when a column name or text value holds a carriage return:
    Python < 3.12's csv writer quotes only the characters of the line terminator ("\\n"), and an unquoted "\\r" would
    end the record for every reader."""
    def has_cr(values) -> bool:
        return any(isinstance(v, str) and "\r" in v for v in values)

    texts = (df.iloc[:, i] for i in range(df.shape[1]))
    if has_cr(df.columns) or any(has_cr(c.array) for c in texts if c.dtype == object or pd.api.types.is_string_dtype(c.dtype)):
        return csv.QUOTE_NONNUMERIC
    return csv.QUOTE_MINIMAL


def _header(path: Path) -> list[str]:
    """The column names of the CSV file ``path`` (its first record, parsed with :mod:`csv`: a name may hold commas,
    quotes or line breaks). Raises :class:`MeasurementFileError` when the file is not UTF-8 CSV."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return next(csv.reader(f), [])
    except (UnicodeDecodeError, csv.Error) as exc:
        raise MeasurementFileError(
            f"{path} is not a UTF-8 CSV file ({type(exc).__name__}: {exc}). Expected a measurement file written by "
            "perfmodel; append to a new file, or move this one away.") from exc


def read_rows(path) -> pd.DataFrame:
    """The rows of a measurement file (empty frame when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return pd.DataFrame()
    return pd.read_csv(path, float_precision="round_trip")


def _unsaved_name(path: Path) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{path.stem}.unsaved-{stamp}-{os.getpid()}.csv"


def _save_elsewhere(df: pd.DataFrame, path: Path) -> Path | None:
    """Write ``df`` (with a header) to a new file next to ``path``, or in the system's temporary folder when that
    fails; never overwrite anything (``open(..., 'x')``). None when no folder takes it."""
    data = df.to_csv(index=False, lineterminator="\n", quoting=_quoting(df))
    for folder in (path.parent, Path(tempfile.gettempdir())):
        for _ in range(3):
            target = folder / _unsaved_name(path)
            try:
                with open(target, "x", encoding="utf-8", newline="") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                return target
            except FileExistsError:
                continue
            except OSError:
                break
    return None


def _with_rescue(exc: BaseException, df: pd.DataFrame, path: Path) -> BaseException:
    """``exc`` again (same type, errno and file name), its message saying where the rows went."""
    saved = _save_elsewhere(df, path)
    where = (f"the {len(df)} new rows were saved to {saved} instead" if saved is not None else
             f"the {len(df)} new rows could not be saved anywhere else either (no writable folder)")
    try:
        if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
            new = type(exc)(exc.errno, f"{exc.strerror}; {where}", exc.filename)
        else:
            new = type(exc)(f"{exc} {where[0].upper()}{where[1:]}.")
    except Exception:  # an exception type with another constructor: keep it, with the path as an attribute
        new = exc
    new.saved_to = saved
    return new


def check_appendable(path, columns=None) -> Path:
    """Raise now the error :func:`append_rows` would raise later (before a long measurement, not after it).

    Checks (for a symbolic link: on the file it points at) that ``path`` is not a folder, that an existing file can be opened for appending (``open(path, 'a')``) and
    has the header ``columns`` (when given), and that its folder exists or can be created and is writable (the
    append writes a temporary file and a lock file there). Nothing is written.
    """
    path = Path(os.path.realpath(path))  # a symbolic link is appended through: check the file and folder it points at
    if path.is_dir():
        raise IsADirectoryError(21, f"Is a directory (expected a CSV file path to append rows to; name a file inside it, "
                                    f"e.g. {path / 'measurements.csv'})", str(path))
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise NotADirectoryError(20, "Not a directory (the measurement file's folder is a file)", str(folder))
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise PermissionError(13, "Permission denied (the folder is not writable: appending writes a temporary file and "
                                  "a lock file next to the measurement file; choose a writable folder)", str(folder))
    if path.exists():
        with open(path, "a"):
            pass
        if columns is not None and path.stat().st_size > 0:
            have, cols = _header(path), [str(c) for c in columns]
            if have != cols:
                raise _columns_error(path, have, cols)
    return path


def _columns_error(path: Path, have: list, cols: list) -> MeasurementFileError:
    return MeasurementFileError(
        f"{path} has the columns {have}, the new rows have {cols}. Expected the same columns in the same order; "
        "write to a new file or reorder the rows' columns to the file's header.")


def append_rows(df: pd.DataFrame, path, *, timeout_s: float | None = None) -> Path:
    """Append ``df`` to the CSV file ``path`` atomically (the file is created with a header if missing).

    Safe with concurrent writers (other processes appending to the same file wait for an exclusive lock on
    ``.<name>.lock`` in the same folder) and against a writer killed mid-append (see the module's docstring).

    Parameters
    ----------
    df : DataFrame
        The rows; its column names become the header of a new file.
    path : path
        The CSV file. Missing folders are created.
    timeout_s : float, optional
        Seconds to wait for another writer's lock (default :data:`LOCK_TIMEOUT_S`).

    Raises
    ------
    MeasurementFileError
        The file exists with other columns (in another order) than ``df`` (the rows would not line up), or is not a
        UTF-8 CSV file. Write to a new file, or select/reorder the columns to the file's header.
    PermissionError, IsADirectoryError, OSError
        The file or its folder refuses the append, exactly as ``open(path, 'a')`` would (a read-only file is refused).
    TimeoutError
        Another writer held the lock for longer than ``timeout_s``.

    In each case the new rows are not lost: they are written to a new file ``<stem>.unsaved-<UTC time>-<pid>.csv``
    next to ``path`` (or in the system's temporary folder), named in the message and in the exception's ``saved_to``.
    """
    from filelock import FileLock, Timeout

    given = path = Path(path)
    if df.empty:
        return given
    # a symbolic link (or a chain of them) is written through: lock, write and replace the file it points at, never
    # the link itself (os.replace over a link would turn it into a regular file and leave its target without the rows)
    path = Path(os.path.realpath(path))
    timeout_s = LOCK_TIMEOUT_S if timeout_s is None else float(timeout_s)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(_lock_path(path), timeout=timeout_s)
        try:
            with lock:
                _append_locked(df, path)
        except Timeout as exc:
            raise TimeoutError(
                f"another process has held the lock {exc.lock_file} on {path} for more than {timeout_s:g} s. Expected it to be "
                "released after each append; if no perfmodel process is running, the lock is not held (a killed writer's lock "
                "is released by the kernel) and this is a file system without working locks: use a local folder.") from None
    except (MeasurementFileError, OSError) as exc:
        new = _with_rescue(exc, df, path)
        if new is exc:
            raise
        raise new from exc
    return given


def _append_locked(df: pd.DataFrame, path: Path) -> None:
    cols = [str(c) for c in df.columns]
    _remove_stale_tmp(path)
    if path.is_dir():
        raise IsADirectoryError(21, f"Is a directory (expected a CSV file path to append rows to; name a file inside it, "
                                    f"e.g. {path / 'measurements.csv'}, or move the folder away)", str(path))
    old = b""
    if path.exists():
        with open(path, "ab"):  # refuse exactly as an append would (read-only file, a folder, ...)
            pass
        if path.stat().st_size > 0:
            have = _header(path)
            if have != cols:
                raise _columns_error(path, have, cols)
            old = path.read_bytes()
            if not old.endswith(b"\n"):
                old += b"\n"
    buf = io.StringIO()
    df.to_csv(buf, index=False, header=not old, lineterminator="\n", quoting=_quoting(df))
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
    finally:  # failed anywhere (full disk, a folder raced into the path, interrupted): no temporary file is left
        if os.path.lexists(tmp):
            os.unlink(tmp)
    try:  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)

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
* the existing file must parse, with the :mod:`csv` module's strict rules, to records of its header's width and end
  cleanly: a file missing only its final newline gets one, a file ending inside an open quoted field (a writer cut
  off mid-row) or holding a row of another width is refused naming the line (appended rows would be swallowed by the
  open quote, or misaligned);
* anything at the path that is not a regular file (a FIFO, ``/dev/stdout`` into a pipe, a device, a socket) is refused
  before it is opened: such a file cannot be replaced atomically, and opening a FIFO blocks until a reader comes;
* an append the file refuses (read-only file or folder, other columns, unreadable, unparseable or non-CSV file, not a
  regular file) raises, and the new rows are first written to a new sibling file
  ``<stem>.unsaved-<UTC time>-<pid>.csv`` (in the system's temporary folder when the file's own folder is not writable
  or is ``/dev`` or ``/proc``) whose path is in the message and in the exception's ``saved_to``. That file is complete or
  absent: it is written to a hidden temporary file, flushed and fsynced, then linked under its name (a full disk leaves
  no rescue file cut mid-row). When no folder takes it, the message says so, ends with the rows as CSV, and the
  exception keeps them (``rows``, ``saved_to`` None).
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import os
import re
import stat
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
    """``csv.QUOTE_MINIMAL``, or ``csv.QUOTE_NONNUMERIC`` when a column name or text value holds a carriage return
    (Python < 3.12's csv writer quotes only the characters of the line terminator ("\\n"), and an unquoted "\\r" would
    end the record for every reader), or when a one-column file would have a line of spaces alone (a reader that
    skips blank lines would lose that header or row)."""
    def has_cr(values) -> bool:
        return any(isinstance(v, str) and "\r" in v for v in values)

    def blank(values) -> bool:  # a field of spaces alone on its line: readers (pandas by default) skip it as blank
        return any(isinstance(v, str) and not v.strip() for v in values)

    texts = [df.iloc[:, i] for i in range(df.shape[1])]
    texts = [c for c in texts if c.dtype == object or pd.api.types.is_string_dtype(c.dtype)]
    if has_cr(df.columns) or any(has_cr(c.array) for c in texts):
        return csv.QUOTE_NONNUMERIC
    if df.shape[1] == 1 and (blank(df.columns) or any(blank(c.array) for c in texts)):
        return csv.QUOTE_NONNUMERIC
    return csv.QUOTE_MINIMAL


def _not_utf8(path: Path, exc: Exception, line: int | None = None) -> MeasurementFileError:
    where = f" at line {line}" if line is not None else ""
    return MeasurementFileError(
        f"{path} is not a UTF-8 CSV file ({type(exc).__name__}{where}: {exc}). Expected a measurement file written by "
        "perfmodel; append to a new file, or move this one away.")


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(path, mode: int) -> MeasurementFileError | None:
    """The error for a path whose ``st_mode`` is not a regular file (None for a regular file or a folder, which is
    refused with its own message)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return MeasurementFileError(
        f"{path} is {kind}, not a regular file. Expected a CSV file to append measurement rows to (rows are appended by "
        "atomically replacing the file, which a pipe or a device cannot be, and opening a pipe blocks until a reader "
        "comes); write to a regular file (e.g. measurements.csv) and copy or pipe it from there.")


def _refuse_not_regular(path) -> None:
    """Raise when something at ``path`` (followed through links) exists and is not a regular file (or a folder);
    nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent (created by the append), a dangling link, or refused later with the open's own error
        return
    err = _not_regular(path, mode)
    if err is not None:
        raise err


def _read_regular(path: Path) -> bytes:
    """The bytes of the regular file ``path``, opened without blocking (a FIFO swapped in after the check is refused,
    not waited on)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        err = _not_regular(path, os.fstat(fd).st_mode)
        if err is not None:
            raise err
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def _probe_append(path: Path) -> None:
    """Refuse exactly as ``open(path, 'a')`` would (read-only file, ...), without blocking on a FIFO."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NONBLOCK", 0))
    try:
        err = _not_regular(path, os.fstat(fd).st_mode)
        if err is not None:
            raise err
    finally:
        os.close(fd)


def _check_content(path: Path, data: bytes, cols: list[str] | None) -> None:
    """Raise :class:`MeasurementFileError` unless the non-empty file content ``data`` is UTF-8 CSV (strict quoting)
    whose header is ``cols`` (when given), whose records all have the header's width (blank lines aside) and that does
    not end inside a quoted field."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc, data[:exc.start].count(b"\n") + 1) from exc
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header, end = None, 0
    try:
        for rec in reader:
            start, end = end + 1, reader.line_num
            if header is None:
                header = rec
                if cols is not None and header != cols:
                    raise _columns_error(path, header, cols)
            elif rec and len(rec) != len(header):
                raise MeasurementFileError(
                    f"{path} line {start} has {len(rec)} fields, its header {len(header)}: the file does not parse to its "
                    "columns (a row cut short by an interrupted writer, or edited by hand). Expected every row to have "
                    f"the header's fields; fix or delete line {start}, then append again (or write to a new file).")
    except csv.Error as exc:
        start = end + 1
        if "unexpected end of data" in str(exc):
            raise MeasurementFileError(
                f"{path} line {start}: a quoted field opened there is never closed (the file ends inside it, e.g. a "
                "writer was cut off mid-row), so rows appended now would be swallowed by it and the file would not "
                f"parse. Fix the file first: close the quote, or delete line {start} and everything after it; then "
                "append again (or write to a new file).") from None
        raise MeasurementFileError(
            f"{path} line {start} is not valid CSV ({exc}). Expected a measurement file written by perfmodel; fix "
            f"line {start}, or append to a new file.") from None


def read_rows(path) -> pd.DataFrame:
    """The rows of a measurement file (empty frame when it does not exist)."""
    path = Path(path)
    if not path.exists():
        return pd.DataFrame()
    return pd.read_csv(path, float_precision="round_trip")


def _unsaved_name(path: Path) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{path.stem}.unsaved-{stamp}-{os.getpid()}.csv"


def _write_fully(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write is continued; a full disk raises)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view[:1 << 20])
        view = view[n:]


def _fsync_folder(folder: Path) -> None:
    """Make a rename or link in ``folder`` durable (best effort: some file systems cannot open or fsync a folder)."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _rescue_folders(path: Path) -> list[Path]:
    """Beside ``path``, then the system's temporary folder; never ``/dev`` or ``/proc`` (``/dev/stdout``, a device)."""
    folders = []
    for folder in (path.parent, Path(tempfile.gettempdir())):
        real = os.path.realpath(folder)
        if real in ("/dev", "/proc") or real.startswith(("/dev/", "/proc/")) or folder in folders:
            continue
        folders.append(folder)
    return folders


def _save_to(folder: Path, path: Path, data: bytes) -> Path:
    """Write ``data`` to a hidden temporary file in ``folder``, flush and fsync it, then link it under a new
    ``<stem>.unsaved-...csv`` name (never overwriting): the named file is complete or absent."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.unsaved-", suffix=".tmp", dir=folder)
    try:
        try:
            _write_fully(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a rescue file gets a new file's usual mode
        for _ in range(5):
            target = folder / _unsaved_name(path)
            try:
                os.link(tmp, target)  # fails when the name exists: never overwrites
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links: rename, after checking the name is free
                if os.path.lexists(target):
                    continue
                os.rename(tmp, target)
            _fsync_folder(folder)
            return target
        raise FileExistsError(17, "File exists (five rescue file names taken)", str(folder))
    finally:  # failed anywhere (full disk, fsync error, ...): no partial file is left; linked: the temporary name goes
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _save_elsewhere(df: pd.DataFrame, path: Path) -> tuple[Path | None, list[str]]:
    """Write ``df`` (with a header) to a new file next to ``path``, or in the system's temporary folder when that
    fails, complete or not at all (:func:`_save_to`). Returns the file (None when no folder takes it) and why each
    folder tried did not."""
    data = df.to_csv(index=False, lineterminator="\n", quoting=_quoting(df)).encode("utf-8")
    failures = []
    for folder in _rescue_folders(path):
        try:
            return _save_to(folder, path, data), failures
        except OSError as exc:
            failures.append(f"{folder}: {exc.strerror or exc}")
    return None, failures


def _with_rescue(exc: BaseException, df: pd.DataFrame, path: Path) -> BaseException:
    """``exc`` again (same type, errno and file name), its message saying where the rows went (or, when no folder took
    them, the rows themselves as CSV; also in the exception's ``rows``)."""
    saved, failures = _save_elsewhere(df, path)
    if saved is not None:
        where = f"the {len(df)} new rows were saved to {saved} instead"
    else:
        rows = df.to_csv(index=False, lineterminator="\n", quoting=_quoting(df))
        where = (f"the {len(df)} new rows could not be saved anywhere ({'; '.join(failures) or 'no folder to try'}); "
                 f"copy them from here, as CSV:\n{rows}")
    try:
        if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
            new = type(exc)(exc.errno, f"{exc.strerror}; {where}", exc.filename)
        else:
            new = type(exc)(f"{exc} {where[0].upper()}{where[1:]}.")
    except Exception:  # an exception type with another constructor: keep it, with the path as an attribute
        new = exc
    new.saved_to = saved
    new.rows = df
    return new


def check_appendable(path, columns=None) -> Path:
    """Raise now the error :func:`append_rows` would raise later (before a long measurement, not after it).

    Checks (for a symbolic link: on the file it points at) that ``path`` is not a folder, a FIFO, a device or anything
    else than a regular file, that an existing file can be opened for appending (``open(path, 'a')``), has the header
    ``columns`` (when given), parses (every row of its header's width, no quoted field left open at its end), and that
    its folder exists or can be created and is writable (the append writes a temporary file and a lock file there).
    Nothing is written.
    """
    _refuse_not_regular(path)
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
        _probe_append(path)
        data = _read_regular(path)
        if data:
            _check_content(path, data, None if columns is None else [str(c) for c in columns])
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
        The file exists with other columns (in another order) than ``df`` (the rows would not line up), is not a
        UTF-8 CSV file, does not parse (a row of another width, a quoted field left open at its end: the message names
        the line), or is not a regular file (a FIFO, a device). Write to a new file, select/reorder the columns to the
        file's header, or fix the line named.
    PermissionError, IsADirectoryError, OSError
        The file or its folder refuses the append, exactly as ``open(path, 'a')`` would (a read-only file is refused).
    TimeoutError
        Another writer held the lock for longer than ``timeout_s``.

    In each case the new rows are not lost: they are written to a new file ``<stem>.unsaved-<UTC time>-<pid>.csv``
    next to ``path`` (or in the system's temporary folder), complete or not at all, named in the message and in the
    exception's ``saved_to``; when no folder takes them (a full disk everywhere) the message ends with them as CSV and
    the exception keeps them in ``rows``.
    """
    from filelock import FileLock, Timeout

    given = path = Path(path)
    if df.empty:
        return given
    timeout_s = LOCK_TIMEOUT_S if timeout_s is None else float(timeout_s)
    try:
        _refuse_not_regular(given)  # a FIFO or a device: refused before anything opens it (opening a FIFO blocks)
        # a symbolic link (or a chain of them) is written through: lock, write and replace the file it points at, never
        # the link itself (os.replace over a link would turn it into a regular file and leave its target without the rows)
        path = Path(os.path.realpath(path))
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
        _probe_append(path)  # refuse exactly as an append would (read-only file, a folder, ...); never blocks
        old = _read_regular(path)
        if old:
            _check_content(path, old, cols)
            if not old.endswith(b"\n"):  # the last row is complete (checked above), only its line break is missing
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
        try:
            _write_fully(fd, old + buf.getvalue().encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)  # mkstemp creates 0600; keep the file's own mode (or the umask's default for a new file)
        os.replace(tmp, path)
    finally:  # failed anywhere (full disk, a folder raced into the path, interrupted): no temporary file is left
        if os.path.lexists(tmp):
            os.unlink(tmp)
    _fsync_folder(path.parent)  # make the rename itself durable

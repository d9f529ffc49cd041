"""append_rows never loses a row: concurrent writers, read-only files and folders, refused appends, stale temporary
files of killed writers, header names with commas, quotes and line breaks."""
from __future__ import annotations

import csv
import io
import multiprocessing as mp
import os
import tempfile

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import perfmodel.measure as M


def _writer(path: str, worker: int, appends: int, rows: int) -> None:
    for batch in range(appends):
        M.append_rows(pd.DataFrame({"worker": [worker] * rows, "batch": [batch] * rows, "row": range(rows)}), path)


def _run_writers(path, processes: int, appends: int, rows: int) -> pd.DataFrame:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), w, appends, rows)) for w in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * processes
    return pd.read_csv(path)


def _assert_every_batch(df: pd.DataFrame, processes: int, appends: int, rows: int) -> None:
    assert list(df.columns) == ["worker", "batch", "row"]
    sizes = df.groupby(["worker", "batch"]).size()
    assert set(sizes.index) == {(w, b) for w in range(processes) for b in range(appends)}
    assert (sizes == rows).all() and len(df) == processes * appends * rows
    for _, g in df.groupby("worker", sort=False):  # each writer's batches in its own order, each batch contiguous
        assert g["batch"].tolist() == [b for b in range(appends) for _ in range(rows)]
        assert g["row"].tolist() == list(range(rows)) * appends


def test_concurrent_writers_keep_every_batch(tmp_path):
    f = tmp_path / "c.csv"
    _assert_every_batch(_run_writers(f, 3, 50, 4), 3, 50, 4)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(processes=st.integers(2, 4), appends=st.integers(1, 8), rows=st.integers(1, 5))
def test_concurrent_writers_property(tmp_path_factory, processes, appends, rows):
    f = tmp_path_factory.mktemp("mp") / "p.csv"
    _assert_every_batch(_run_writers(f, processes, appends, rows), processes, appends, rows)


def _unsaved(folder, stem):
    return sorted(p for p in os.listdir(folder) if p.startswith(f"{stem}.unsaved-") and p.endswith(".csv"))


def test_read_only_file_is_refused_like_open_and_the_rows_are_saved(open_dir, unprivileged):
    f = open_dir / "ro.csv"
    a = pd.DataFrame({"x": [1, 2], "y": ["p", "q"]})
    new = pd.DataFrame({"x": [3], "y": ["r"]})
    with unprivileged():
        M.append_rows(a, f)
        os.chmod(f, 0o444)
        before = f.read_bytes()
        with pytest.raises(PermissionError) as by_open:
            open(f, "a")
        with pytest.raises(PermissionError, match=r"Permission denied; the 1 new rows were saved to .*ro\.unsaved-.*\.csv instead") as e:
            M.append_rows(new, f)
        with pytest.raises(PermissionError, match="Permission denied"):
            M.check_appendable(f)
    assert (e.value.errno, e.value.filename) == (by_open.value.errno, by_open.value.filename)
    assert f.read_bytes() == before and f.stat().st_mode & 0o777 == 0o444
    [saved] = _unsaved(open_dir, "ro")
    assert e.value.saved_to == open_dir / saved and str(open_dir / saved) in str(e.value)
    pd.testing.assert_frame_equal(pd.read_csv(open_dir / saved), new)


def test_read_only_folder_saves_the_rows_in_the_temp_folder(open_dir, unprivileged, monkeypatch):
    folder, spare = open_dir / "data", open_dir / "spare"
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    new = pd.DataFrame({"x": [7, 8]})
    with unprivileged():
        folder.mkdir()
        spare.mkdir()
        M.append_rows(pd.DataFrame({"x": [1]}), folder / "r.csv")
        os.chmod(folder, 0o555)
        with pytest.raises(PermissionError, match=r"folder is not writable"):
            M.check_appendable(folder / "r.csv")
        with pytest.raises(PermissionError, match=r"the 2 new rows were saved to .*spare/r\.unsaved-.*\.csv instead"):
            M.append_rows(new, folder / "r.csv")
        with pytest.raises(PermissionError, match=r"the 2 new rows were saved to .*spare/n\.unsaved-.*\.csv instead"):
            M.append_rows(new, folder / "n.csv")  # a new file in a read-only folder
    assert M.read_rows(folder / "r.csv")["x"].tolist() == [1] and not (folder / "n.csv").exists()
    assert len(_unsaved(spare, "r")) == 1 and len(_unsaved(spare, "n")) == 1
    pd.testing.assert_frame_equal(pd.read_csv(spare / _unsaved(spare, "r")[0]), new)


def test_unreadable_file_is_refused_and_the_rows_are_saved(open_dir, unprivileged):
    f = open_dir / "wo.csv"
    with unprivileged():
        M.append_rows(pd.DataFrame({"x": [1]}), f)
        os.chmod(f, 0o200)  # writable, not readable: the header cannot be checked
        with pytest.raises(PermissionError, match=r"Permission denied; the 1 new rows were saved to .*wo\.unsaved-"):
            M.append_rows(pd.DataFrame({"x": [2]}), f)
    assert len(_unsaved(open_dir, "wo")) == 1


def test_other_columns_and_non_csv_files_are_refused_and_the_rows_are_saved(tmp_path):
    f = tmp_path / "m.csv"
    M.append_rows(pd.DataFrame({"x": [1], "y": [2]}), f)
    new = pd.DataFrame({"y": [5], "x": [6]})
    with pytest.raises(M.MeasurementFileError, match=r"has the columns \['x', 'y'\], the new rows have \['y', 'x'\].*"
                                                     r"The 1 new rows were saved to .*m\.unsaved-.*\.csv instead\.") as e:
        M.append_rows(new, f)
    pd.testing.assert_frame_equal(pd.read_csv(e.value.saved_to), new)
    with pytest.raises(M.MeasurementFileError, match=r"has the columns"):
        M.check_appendable(f, ["y", "x"])
    b = tmp_path / "b.csv"
    b.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    with pytest.raises(M.MeasurementFileError, match=r"b\.csv is not a UTF-8 CSV file \(UnicodeDecodeError.*The 1 new rows were saved to "
                                                     r".*b\.unsaved-.*\.csv instead\.") as e:
        M.append_rows(new, b)
    assert b.read_bytes().startswith(b"\x89PNG") and e.value.saved_to.parent == tmp_path
    # two refusals within the same second never overwrite each other's rescue file
    with pytest.raises(M.MeasurementFileError):
        M.append_rows(new.assign(y=[9]), f)
    assert len(_unsaved(tmp_path, "m")) == 2


def test_a_folder_is_refused_with_the_fix(tmp_path):
    with pytest.raises(IsADirectoryError, match=r"Is a directory \(expected a CSV file path.*measurements\.csv"):
        M.check_appendable(tmp_path)
    with pytest.raises(IsADirectoryError, match=r"the 1 new rows were saved to"):
        M.append_rows(pd.DataFrame({"x": [1]}), tmp_path)


def test_stale_temporary_files_are_removed(tmp_path):
    f = tmp_path / "k.csv"
    M.append_rows(pd.DataFrame({"x": [1]}), f)
    stale = tmp_path / ".k.csv.ab12cd_9.tmp"  # what a writer killed between mkstemp and os.replace leaves
    other = tmp_path / ".k.csv.x.csv.ab12cd_9.tmp"  # the temporary file of another file, k.csv.x.csv: not ours
    stale.write_text("x\n1\n2\n")
    other.write_text("x\n")
    M.append_rows(pd.DataFrame({"x": [2]}), f)
    assert not stale.exists() and other.exists()
    assert M.read_rows(f)["x"].tolist() == [1, 2]


def test_header_names_with_commas_quotes_and_line_breaks(tmp_path):
    f = tmp_path / "h.csv"
    cols = ["a,b", 'say "hi"', "two\nlines", "plain"]
    a = pd.DataFrame([[1, 2, 3, 4]], columns=cols)
    M.append_rows(a, f)
    M.append_rows(a + 10, f)
    d = M.read_rows(f)
    assert list(d.columns) == cols and d["plain"].tolist() == [4, 14]
    with pytest.raises(M.MeasurementFileError, match=r"has the columns \['a,b', 'say \"hi\"', 'two\\nlines', 'plain'\]"):
        M.append_rows(a[cols[::-1]], f)


_names = st.text(min_size=1, max_size=8).filter(lambda s: "\x00" not in s)
_values = st.text(max_size=8).filter(lambda s: "\x00" not in s)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cols=st.lists(_names, min_size=1, max_size=4, unique=True), data=st.data())
def test_round_trip_property(tmp_path_factory, cols, data):
    """Any column names and text values survive two appends exactly (read back with the csv module), and the
    header check accepts the file's own header."""
    n1, n2 = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    rows = [[data.draw(_values) for _ in cols] for _ in range(n1 + n2)]
    f = tmp_path_factory.mktemp("rt") / "r.csv"
    M.append_rows(pd.DataFrame(rows[:n1], columns=cols), f)
    M.check_appendable(f, cols)
    M.append_rows(pd.DataFrame(rows[n1:], columns=cols), f)
    with open(f, encoding="utf-8", newline="") as fh:
        back = list(csv.reader(fh))
    assert back == [cols] + rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cols=st.lists(_names, min_size=1, max_size=3, unique=True), data=st.data())
def test_numbers_round_trip_property(tmp_path_factory, cols, data):
    """Integer and float columns read back equal with read_rows (round-trip float precision)."""
    n = data.draw(st.integers(1, 4))
    frame = pd.DataFrame({c: (data.draw(st.lists(st.integers(-2**53, 2**53), min_size=n, max_size=n)) if i % 2 == 0 else
                              data.draw(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=n, max_size=n)))
                          for i, c in enumerate(cols)})
    f = tmp_path_factory.mktemp("num") / "n.csv"
    M.append_rows(frame, f)
    M.append_rows(frame, f)
    back = pd.read_csv(f, float_precision="round_trip", header=0, names=cols)  # names: pandas renames e.g. "Unnamed: 0"
    expected = pd.concat([frame, frame], ignore_index=True)
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)
    with open(f, encoding="utf-8", newline="") as fh:
        assert next(csv.reader(io.StringIO(fh.read()))) == cols


def test_lock_timeout_names_the_lock_and_keeps_the_rows(tmp_path):
    from filelock import FileLock

    f = tmp_path / "t.csv"
    with FileLock(tmp_path / ".t.csv.lock"):  # another writer holds the lock
        with pytest.raises(TimeoutError, match=r"another process has held the lock .*\.t\.csv\.lock on .*t\.csv for more than 0\.2 s.*"
                                               r"The 1 new rows were saved to .*t\.unsaved-.*\.csv instead\."):
            M.append_rows(pd.DataFrame({"x": [1]}), f, timeout_s=0.2)
    assert not f.exists() and len(_unsaved(tmp_path, "t")) == 1
    M.append_rows(pd.DataFrame({"x": [2]}), f)  # released: appends again
    assert M.read_rows(f)["x"].tolist() == [2]


def test_a_symbolic_link_is_written_through_to_its_target(tmp_path):
    """Appending through a link adds the rows to the linked file and keeps the link (it was replaced by a regular file,
    and the real file never got the rows)."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "m.csv"
    M.append_rows(pd.DataFrame({"a": [1]}), real)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    chain = tmp_path / "chain.csv"
    chain.symlink_to(link)
    assert M.append_rows(pd.DataFrame({"a": [2]}), link) == link
    M.append_rows(pd.DataFrame({"a": [3]}), chain)
    assert link.is_symlink() and chain.is_symlink()
    assert pd.read_csv(real)["a"].tolist() == [1, 2, 3]
    # the lock and the temporary files live next to the target, not next to the link
    assert (real_dir / ".m.csv.lock").exists() and not (tmp_path / ".link.csv.lock").exists()
    assert not [p for p in os.listdir(real_dir) if p.endswith(".tmp")]


def test_a_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "new.csv")
    M.append_rows(pd.DataFrame({"a": [1]}), link)
    assert link.is_symlink() and pd.read_csv(tmp_path / "new.csv")["a"].tolist() == [1]


def test_appending_to_a_folder_names_the_fix_and_leaves_no_temporary_file(tmp_path):
    folder = tmp_path / "m.csv"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=r"Is a directory \(expected a CSV file path to append rows to; name a file "
                                                r"inside it, e\.g\. .*measurements\.csv") as ei:
        M.append_rows(pd.DataFrame({"a": [1]}), folder)
    assert ei.value.saved_to is not None and ei.value.saved_to.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_failed_write_removes_its_temporary_file(tmp_path, monkeypatch):
    """A full disk (ENOSPC at fsync) raises, keeps the old file and leaves no temporary file behind."""
    import errno

    f = tmp_path / "m.csv"
    M.append_rows(pd.DataFrame({"a": [1]}), f)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        M.append_rows(pd.DataFrame({"a": [2]}), f)
    monkeypatch.undo()
    assert pd.read_csv(f)["a"].tolist() == [1]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_check_appendable_looks_through_a_link_at_the_target_folder(open_dir, unprivileged):
    """The append writes next to the link's target: a read-only target folder is refused before measuring."""
    folder, here = open_dir / "data", open_dir / "here"
    with unprivileged():
        folder.mkdir()
        here.mkdir()
        M.append_rows(pd.DataFrame({"x": [1]}), folder / "r.csv")
        (here / "r.csv").symlink_to(folder / "r.csv")
        os.chmod(folder, 0o555)
        with pytest.raises(PermissionError, match=r"folder is not writable") as ei:
            M.check_appendable(here / "r.csv", ["x"])
        assert ei.value.filename == str(folder)


def test_a_one_column_file_with_a_blank_looking_name_or_value_keeps_every_line(tmp_path):
    """A column named ' ' (or a value of spaces) on a line alone looks blank to a reader that skips blank lines:
    pandas read the header as data and lost a row. Such fields are written quoted."""
    f = tmp_path / "b.csv"
    M.append_rows(pd.DataFrame({" ": [0]}), f)
    M.append_rows(pd.DataFrame({" ": [1]}), f)
    assert M.read_rows(f)[" "].tolist() == [0, 1]
    assert pd.read_csv(f, header=0, names=[" "])[" "].tolist() == [0, 1]
    g = tmp_path / "v.csv"
    M.append_rows(pd.DataFrame({"a": ["x", " ", "", "y"]}), g)
    back = M.read_rows(g)["a"].tolist()
    assert back[0] == "x" and back[1] == " " and pd.isna(back[2]) and back[3] == "y"
    assert len(pd.read_csv(g)) == 4

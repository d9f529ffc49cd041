"""append_rows reports success only for rows durably and parseably stored: a file ending inside an open quoted field
(or with rows of other widths) is refused naming the line; a FIFO, a device or anything else that is not a regular file
is refused before it is opened (never blocks); a rescue file is complete or absent, even on a full disk."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import threading

import pandas as pd
import pytest

import perfmodel.measure as M
from perfmodel.measure import store


def _unsaved(folder, stem):
    return sorted(p for p in os.listdir(folder) if p.startswith(f"{stem}.unsaved-") and p.endswith(".csv"))


def _hidden_tmp(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".tmp"))


# -- a file that does not end cleanly -------------------------------------------------------------------------------

@pytest.mark.parametrize("tail, line", [
    ('2,"unterminated', 3),  # the file ends inside the quoted field
    ('2,"opened\n3,b\n', 3),  # a quote opened on line 3 runs to the end of the file, over the lines after it
])
def test_a_file_ending_inside_a_quoted_field_is_refused_and_the_rows_are_saved(tmp_path, tail, line):
    f = tmp_path / "q.csv"
    f.write_text("x,y\n1,a\n" + tail)
    before = f.read_bytes()
    new = pd.DataFrame({"x": [7, 8], "y": ["c", "d"]})
    with pytest.raises(M.MeasurementFileError, match=rf"{f}.* line {line}: a quoted field opened there is never closed.*"
                                                     rf"close the quote.*The 2 new rows were saved to .*q\.unsaved-.*\.csv instead\.") as e:
        M.append_rows(new, f)
    assert f.read_bytes() == before  # nothing appended into the open field
    assert e.value.saved_to.parent == tmp_path
    pd.testing.assert_frame_equal(pd.read_csv(e.value.saved_to), new)
    with pytest.raises(M.MeasurementFileError, match=rf"line {line}: a quoted field opened there is never closed"):
        M.check_appendable(f, ["x", "y"])  # refused before a long measurement too
    with pytest.raises(M.MeasurementFileError, match="never closed"):
        M.check_appendable(f)
    # fixed as the message says: the append goes through and every row parses
    f.write_text("x,y\n1,a\n2,\"closed\"\n")
    M.append_rows(new, f)
    assert M.read_rows(f)["x"].tolist() == [1, 2, 7, 8]


@pytest.mark.parametrize("text", ["x,y\n1,a", 'x,y\n1,"a,b"', "x,y\r\n1,a", "x,y"])
def test_a_file_missing_only_its_final_newline_gets_one(tmp_path, text):
    f = tmp_path / "n.csv"
    f.write_text(text, newline="")
    M.check_appendable(f, ["x", "y"])
    M.append_rows(pd.DataFrame({"x": [2], "y": ["z"]}), f)
    assert f.read_bytes().startswith(text.encode())  # existing bytes kept as they were
    back = M.read_rows(f)
    assert back["x"].tolist()[-1] == 2 and back["y"].tolist()[-1] == "z"
    assert not _unsaved(tmp_path, "n")


@pytest.mark.parametrize("body, line, fields", [("1\n", 2, 1), ("1,a\n2,b,c\n", 3, 3)])
def test_a_row_of_another_width_is_refused_naming_its_line(tmp_path, body, line, fields):
    f = tmp_path / "w.csv"
    f.write_text("x,y\n" + body)
    before = f.read_bytes()
    with pytest.raises(M.MeasurementFileError, match=rf"line {line} has {fields} fields, its header 2.*"
                                                     r"The 1 new rows were saved to .*w\.unsaved-"):
        M.append_rows(pd.DataFrame({"x": [9], "y": ["q"]}), f)
    assert f.read_bytes() == before


def test_a_file_not_utf8_after_its_header_is_refused(tmp_path):
    f = tmp_path / "u.csv"
    f.write_bytes(b"x\n1\n\xff\xfe\n")
    with pytest.raises(M.MeasurementFileError, match=r"u\.csv is not a UTF-8 CSV file"):
        M.append_rows(pd.DataFrame({"x": [2]}), f)
    assert f.read_bytes() == b"x\n1\n\xff\xfe\n"


def test_blank_lines_and_quoted_line_breaks_are_accepted(tmp_path):
    f = tmp_path / "b.csv"
    f.write_text('x,y\n1,"two\nlines"\n\n2,b\n')
    M.append_rows(pd.DataFrame({"x": [3], "y": ["c"]}), f)
    assert M.read_rows(f)["x"].tolist() == [1, 2, 3]


# -- not a regular file -----------------------------------------------------------------------------------------------

def _append_in_thread(df, path):
    """Run append_rows in a thread; a call that blocks is unblocked (a reader and a writer open the FIFO) and fails."""
    out = {}

    def run():
        try:
            out["result"] = M.append_rows(df, path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():
        r = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        w = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(w)
        t.join(10)
        os.close(r)
        pytest.fail(f"append_rows blocked on the FIFO {path}")
    return out


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    new = pd.DataFrame({"x": [1, 2]})
    out = _append_in_thread(new, fifo)
    err = out.get("error")
    assert isinstance(err, M.MeasurementFileError), out
    assert f"{fifo} is a FIFO (named pipe), not a regular file" in str(err) and "The 2 new rows were saved to" in str(err)
    pd.testing.assert_frame_equal(pd.read_csv(err.saved_to), new)
    with pytest.raises(M.MeasurementFileError, match="is a FIFO"):
        M.check_appendable(fifo, ["x"])
    # through a symbolic link too
    link = tmp_path / "l.csv"
    link.symlink_to(fifo)
    err = _append_in_thread(new, link).get("error")
    assert isinstance(err, M.MeasurementFileError) and "is a FIFO (named pipe), not a regular file" in str(err)
    assert fifo.exists() and not fifo.is_file() and link.is_symlink()  # nothing replaced
    assert not _hidden_tmp(tmp_path)


def test_a_device_is_refused(tmp_path):
    """A character device (a null device made in a test folder: never the system's /dev/null, which an append that
    wrongly accepted it would replace) is refused and left alone."""
    import stat

    dev = tmp_path / "d.csv"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    with pytest.raises(M.MeasurementFileError, match=rf"{dev} is a character device, not a regular file") as e:
        M.append_rows(pd.DataFrame({"x": [1]}), dev)
    assert e.value.saved_to is not None and e.value.saved_to.parent == tmp_path
    assert stat.S_ISCHR(os.stat(dev).st_mode)
    with pytest.raises(M.MeasurementFileError, match="character device"):
        M.check_appendable(dev, ["x"])


def test_the_rescue_never_goes_to_dev_or_proc(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert store._rescue_folders(store.Path("/dev/null")) == [tmp_path]
    assert store._rescue_folders(store.Path("/proc/self/fd/1")) == [tmp_path]


def test_dev_stdout_into_a_pipe_is_refused_without_blocking(tmp_path):
    code = ("import pandas as pd, perfmodel.measure as M\n"
            "M.append_rows(pd.DataFrame({'x': [1]}), '/dev/stdout')\n")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                       env=env)
    assert p.returncode != 0 and p.stdout == ""
    assert "/dev/stdout is a FIFO (named pipe), not a regular file" in p.stderr
    assert len(_unsaved(tmp_path, "stdout")) == 1


# -- a full disk: the rescue file is complete or absent ---------------------------------------------------------------

def _full_disk(monkeypatch, room: int, full_in=None):
    """os.write writes at most ``room`` bytes in all to files in the folder ``full_in`` (every folder when None), then
    raises ENOSPC, like a disk that fills up partway."""
    real = os.write
    left = {"n": room}

    def write(fd, data):
        if full_in is not None and not os.readlink(f"/proc/self/fd/{fd}").startswith(str(full_in) + os.sep):
            return real(fd, data)
        if left["n"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real(fd, bytes(data[:left["n"]]))
        left["n"] -= n
        return n

    monkeypatch.setattr(os, "write", write)


def _rows(n=400):
    return pd.DataFrame({"model": [f"resnet{i}" for i in range(n)], "step_time_s": [0.123456789 + i for i in range(n)]})


def test_disk_full_rescue_goes_elsewhere_complete(tmp_path, monkeypatch):
    data, spare = tmp_path / "data", tmp_path / "spare"
    data.mkdir()
    spare.mkdir()
    f = data / "m.csv"
    M.append_rows(_rows(3), f)
    before = f.read_bytes()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    new = _rows()
    assert len(new.to_csv(index=False)) > 8192
    _full_disk(monkeypatch, 4096, full_in=data)
    with pytest.raises(OSError, match=r"No space left on device; the 400 new rows were saved to .*spare/m\.unsaved-") as e:
        M.append_rows(new, f)
    monkeypatch.undo()
    assert e.value.errno == errno.ENOSPC
    assert f.read_bytes() == before
    assert not _unsaved(data, "m") and not _hidden_tmp(data)  # no truncated rescue beside the file
    [saved] = _unsaved(spare, "m")
    assert e.value.saved_to == spare / saved and not _hidden_tmp(spare)
    pd.testing.assert_frame_equal(pd.read_csv(spare / saved), new)


def test_disk_full_everywhere_keeps_the_rows_in_the_exception(tmp_path, monkeypatch):
    spare = tmp_path / "spare"
    spare.mkdir()
    f = tmp_path / "m.csv"
    M.append_rows(_rows(3), f)
    before = f.read_bytes()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    new = _rows()
    _full_disk(monkeypatch, 4096)
    with pytest.raises(OSError) as e:
        M.append_rows(new, f)
    monkeypatch.undo()
    msg = str(e.value)
    assert e.value.errno == errno.ENOSPC and e.value.saved_to is None
    assert "the 400 new rows could not be saved anywhere" in msg and str(spare) in msg and str(tmp_path) in msg
    assert new.to_csv(index=False, lineterminator="\n") in msg  # the rows themselves, as CSV, in the message
    pd.testing.assert_frame_equal(e.value.rows, new)
    assert f.read_bytes() == before
    for folder in (tmp_path, spare):
        assert not _unsaved(folder, "m") and not _hidden_tmp(folder)


def test_a_rescue_is_never_partial_when_fsync_fails(tmp_path, monkeypatch):
    """fsync failing (the data may not be on disk): the rescue file is removed, not left unsynced."""
    spare = tmp_path / "spare"
    spare.mkdir()
    f = tmp_path / "m.csv"
    M.append_rows(_rows(1), f)
    monkeypatch.setattr(tempfile, "tempdir", str(spare))

    def broken(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="could not be saved anywhere") as e:
        M.append_rows(_rows(2), f)
    monkeypatch.undo()
    assert e.value.saved_to is None and len(e.value.rows) == 2
    for folder in (tmp_path, spare):
        assert not _unsaved(folder, "m") and not _hidden_tmp(folder)


def test_rescue_names_never_collide(tmp_path):
    f = tmp_path / "c.csv"
    M.append_rows(pd.DataFrame({"x": [1]}), f)
    saved = {store._save_elsewhere(pd.DataFrame({"y": [i]}), f)[0] for i in range(5)}
    assert len(saved) == 5 and len(_unsaved(tmp_path, "c")) == 5
    assert [pd.read_csv(p)["y"].tolist() for p in sorted(saved)] != [] and not _hidden_tmp(tmp_path)

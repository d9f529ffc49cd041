"""A fitted model is written to a file, never into a pipe, a device or a link to one."""
from __future__ import annotations

import os

import pytest

from perfmodel.step import op_fit as of
def test_a_fitted_model_is_never_written_into_a_pipe_or_a_link_to_one(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "stdout"
    link.symlink_to(fifo)
    for out in (fifo, link):
        with pytest.raises(ValueError, match="not a regular file"):
            of.fit_op_model(out=out, progress=False)
    assert fifo.exists() and link.is_symlink()  # nothing replaced

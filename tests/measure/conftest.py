"""Fixtures of the measurement tests: folders a non-root user can use, and running a block as that user.

File permissions do not bind root, so when the tests run as root (containers) the permission cases run with the
effective user and group ids of ``nobody`` (``os.seteuid``; the real id stays root, so they are restored afterwards).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534


@contextlib.contextmanager
def _as_unprivileged():
    if os.geteuid() != 0:
        yield
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.fixture
def unprivileged():
    """``with unprivileged(): ...`` runs the block where file permissions apply (as ``nobody`` when root)."""
    return _as_unprivileged


@pytest.fixture
def open_dir():
    """A fresh folder in the system's temporary folder that the unprivileged user may write to (mode 0777);
    removed afterwards whatever its content's modes."""
    d = Path(tempfile.mkdtemp(prefix="perfmodel-test-"))
    os.chmod(d, 0o777)
    yield d

    def writable(func, path, _exc):
        os.chmod(os.path.dirname(path), 0o777)
        os.chmod(path, stat.S_IRWXU) if os.path.exists(path) else None
        func(path)

    for root, dirs, _files in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o777)
    shutil.rmtree(d, onerror=writable)

"""Test set-up: the upstream data come from the local mirror, never from the network.

``PERFMODEL_DATA`` is taken from the environment (CI: ``../shared/datasets`` through ``.ci/run``); when unset it
defaults to ``<repo>/../shared/datasets``. The download path is exercised with a fake URL in
tests/datasets/test_registry.py, never against the real host.
"""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

# Property tests draw the same examples on every run ("ci"), so that a red run is a change, not a draw; explore new
# examples with HYPOTHESIS_PROFILE=explore (a failure prints the example to add with @example).
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True)
    _hypothesis_settings.register_profile("explore", derandomize=False)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis comes with the tests extra
    pass

REPO = Path(__file__).resolve().parents[1]
_default = REPO.parent / "shared" / "datasets"
os.environ.setdefault("PERFMODEL_DATA", str(_default))
# absolute, so that notebook kernels (cwd notebooks/) and subprocesses inherit a path that still resolves
os.environ["PERFMODEL_DATA"] = str(Path(os.environ["PERFMODEL_DATA"]).expanduser().resolve())
if not (Path(os.environ["PERFMODEL_DATA"]) / "SHA256SUMS").is_file():
    raise pytest.UsageError(
        f"PERFMODEL_DATA={os.environ['PERFMODEL_DATA']!r} is not a data mirror (no SHA256SUMS there). "
        "Point it at the shared datasets folder, e.g. PERFMODEL_DATA=../shared/datasets."
    )


@pytest.fixture
def mirror() -> Path:
    """The local mirror of the upstream data."""
    return Path(os.environ["PERFMODEL_DATA"])

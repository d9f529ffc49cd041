"""perfmodel's own measurements, shipped with the package (``datasets/measurements/``): the twenty zoo CNNs timed on a
CPU with :mod:`perfmodel.measure` (provenance in ``datasets/measurements/README.md``)."""
from __future__ import annotations

from importlib import resources

import pandas as pd

from perfmodel._errors import DataNotAvailableError, UnknownNameError
from perfmodel.datasets._spec import DatasetSpec

__all__ = ["load_cpu_measurements", "DATASETS"]

_FILES = {"steps": "cpu_steps.csv", "checkpoints": "cpu_checkpoints.csv"}


def load_cpu_measurements(kind: str = "steps") -> pd.DataFrame:
    """The bundled CPU measurements.

    Parameters
    ----------
    kind : {'steps', 'checkpoints'}
        ``steps``: one row per timed training step (columns :data:`perfmodel.measure.STEP_COLUMNS`: model,
        batch_size, threads, step, warmup, step_time_s, outlier, environment ...); ``checkpoints``: one row per
        checkpoint (:data:`perfmodel.measure.CHECKPOINT_COLUMNS`).
    """
    if kind not in _FILES:
        raise UnknownNameError(f"Unknown measurement kind {kind!r}. Expected one of: {', '.join(_FILES)}.")
    res = resources.files("perfmodel._data") / "measurements" / _FILES[kind]
    if not res.is_file():
        raise DataNotAvailableError(f"datasets/measurements/{_FILES[kind]} is not in this installation. Create it with "
                                    "`python -m perfmodel.measure.bundle --folder datasets/measurements` from a source checkout.")
    from perfmodel.datasets._io import parse_csv

    return parse_csv(res.read_bytes(), source=f"perfmodel datasets/measurements/{_FILES[kind]}")


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec("cpu_steps", lambda: load_cpu_measurements("steps"), "one timed training step of a zoo CNN on a CPU (perfmodel.measure)",
                ("measurements/cpu_steps.csv",), "perfmodel (beyond the papers): the paper's method on a device it never saw", kind="measurements"),
    DatasetSpec("cpu_checkpoints", lambda: load_cpu_measurements("checkpoints"), "one local checkpoint of a zoo CNN (perfmodel.measure)",
                ("measurements/cpu_checkpoints.csv",), "perfmodel (beyond the papers): checkpoint time on a CPU", kind="measurements"),
)

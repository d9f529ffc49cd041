"""Project exceptions. Each subclasses the builtin a user would naturally catch."""
from __future__ import annotations

__all__ = [
    "DataNotAvailableError",
    "DataIntegrityError",
    "NotADataFileError",
    "DataFormatError",
    "UnknownNameError",
    "ModelConfigError",
]


class DataNotAvailableError(FileNotFoundError):
    """An upstream data file is neither in ``PERFMODEL_DATA`` nor in the cache, and could not be downloaded."""


class DataIntegrityError(ValueError):
    """A data file's sha256 does not match the registry (truncated, edited or wrong file)."""


class NotADataFileError(ValueError):
    """A file that should hold data holds something else (an HTML page saved as CSV, an empty file)."""


class DataFormatError(ValueError):
    """A data file could be read but does not have the expected structure (columns, types, sections)."""


class UnknownNameError(ValueError):
    """A dataset, model, GPU or region name is not known; the message lists the valid ones."""


class ModelConfigError(ValueError, TypeError):
    """A model description (a Hugging Face config, a config JSON, an input shape for it) cannot describe a model to train.

    Subclasses both ``ValueError`` (bad values: ``n_layer: -2``, a sequence longer than the position table) and
    ``TypeError`` (a config of the wrong type: ``[]``, ``null``), so that either ``except`` catches it.
    """

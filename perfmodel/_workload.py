"""A training step said once (:class:`Workload`), and the decorator by which the functions that take a model take one.

It imports nothing of perfmodel and nothing heavy: the planner's modules import it when they are imported.
:mod:`perfmodel.models.workload` (the trace of a workload) re-exports both.
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Workload", "accepts_workload"]


# -- a workload described once --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Workload:
    """One training (or inference) step described once: what :func:`perfmodel.predict_step_time`,
    :func:`perfmodel.predict_memory`, :func:`perfmodel.planning.explore_strategies` and :func:`perfmodel.plan` share.

    Pass it where those functions take ``model``; the GPUs and the parallel layout stay their own arguments::

        w = pm.Workload(cfg, input_shape=(8192,), batch_size=16, precision="bf16", optimizer="adam-fused",
                        compile=True, activation_checkpointing="selective")
        pm.predict_step_time(w, "H100", n_gpus=8, strategy="fsdp")
        pm.predict_memory(w, "H100", n_gpus=8, strategy="fsdp")

    A keyword a function is also given must agree with the workload (a different value is an error that names both);
    a workload field a function has no use for must be left at its default.

    Attributes
    ----------
    model : str, torch.nn.Module, dict or transformers.PretrainedConfig
        A zoo id, a module or a Hugging Face config (as ``predict_step_time`` takes it).
    input_shape : tuple of int, optional
        One sample without the batch dimension (``(seq_len,)`` for token models).
    batch_size : int
        Samples per step (the global batch over all GPUs).
    input_dtype : torch.dtype, optional
        ``torch.long`` for token models (set for Hugging Face configs).
    input_high : int, optional
        Exclusive upper bound of token ids.
    precision : {"fp32", "tf32", "bf16", "fp16", "fp8"}
    optimizer : {"sgd-momentum", "adam", "adam-fused", None}
    inference : bool
    compile : bool
    activation_checkpointing : bool or {"full", "selective", "layer", "layer:N"}
    """

    model: object
    input_shape: tuple | None = None
    batch_size: int = 1
    input_dtype: object = None
    input_high: int | None = None
    precision: str = "fp32"
    optimizer: str | None = "sgd-momentum"
    inference: bool = False
    compile: bool = False
    activation_checkpointing: bool | str = False

    def __post_init__(self):
        if isinstance(self.model, Workload):
            raise TypeError("Workload(model=...) takes a model (zoo id, module or config), not another Workload.")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, (int, np.integer)) or self.batch_size < 1:
            raise ValueError(f"Workload batch_size must be a positive int; got {self.batch_size!r}.")
        if self.input_shape is not None:
            object.__setattr__(self, "input_shape", tuple(int(d) for d in self.input_shape))

    def values(self) -> dict:
        """The step's fields (every field but ``model``) as keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "model"}


def accepts_workload(*fields: str, rename: dict | None = None):
    """Decorator: the wrapped function's first argument may be a :class:`Workload`. Its ``fields`` (the ones the
    function takes; ``rename`` maps a field to the function's own keyword and a conversion, e.g. ``batch_size`` to
    ``batch_sizes=(b,)``) fill the keywords the caller left out; a keyword given with another value, or a workload
    field the function has no use for set to other than its default, raises a ``ValueError`` naming it."""
    import functools
    import inspect

    rename = dict(rename or {})

    def wrap(fn):
        params = inspect.signature(fn).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        keys = {name: rename.get(name, (name, None)) for name in fields}
        wrong = sorted(k for k, _ in keys.values() if k not in params and not takes_any)
        if wrong:  # checked once, when the function is defined
            raise TypeError(f"accepts_workload: {fn.__name__} takes no {wrong}.")
        defaults = {f.name: f.default for f in dataclasses.fields(Workload)}

        @functools.wraps(fn)
        def inner(model, *args, **kwargs):
            if not isinstance(model, Workload):
                return fn(model, *args, **kwargs)
            for name, value in model.values().items():  # the workload's fields are keyword-only in every function
                if name not in keys:
                    if value != defaults[name]:
                        raise ValueError(f"{fn.__name__} has no use for the workload's {name}={value!r}; leave it at its "
                                         f"default ({defaults[name]!r}) in the Workload, or call a function that takes it.")
                    continue
                key, conv = keys[name]
                value = conv(value) if conv else value
                if key in kwargs and kwargs[key] != value:
                    raise ValueError(f"{fn.__name__} was given {key}={kwargs[key]!r} and a Workload with {key}={value!r}; "
                                     "say it once: in the Workload, or as the keyword with a plain model.")
                kwargs.setdefault(key, value)
            return fn(model.model, *args, **kwargs)

        return inner

    return wrap

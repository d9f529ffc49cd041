"""perfmodel — model the training performance of deep networks on (transient) cloud GPU clusters.

Reproduces CM-DARE (Li, Walls, Guo, ICDCS 2020) and "Speeding up Deep Learning with Transient Servers" (ICAC 2019)
from their published measurements, and goes beyond them.

Importing perfmodel reads nothing from disk or network; heavy dependencies (torch, xgboost) load lazily.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0.dev0"

_SUBMODULES = ("datasets", "zoo", "features", "models", "step", "diagnostics", "planning", "measure", "figures")

_LAZY = {
    # data layer
    "list_datasets": "perfmodel.datasets",
    "load_dataset": "perfmodel.datasets",
    "verify": "perfmodel.datasets",
    "load_gpu_catalog": "perfmodel.datasets",
    "load_prices": "perfmodel.datasets",
    "canonical_model": "perfmodel.datasets",
    "canonical_gpu": "perfmodel.datasets",
    "canonical_region": "perfmodel.datasets",
    # prediction for any model and GPU
    "predict_step_time": "perfmodel.step.step_time",
    "predict_memory": "perfmodel.step.memory",
    "Workload": "perfmodel._workload",
    # a run in three objects (what is trained, on what, how) and the step model's one answer for it
    "Cluster": "perfmodel._run",
    "Parallelism": "perfmodel._run",
    "predict": "perfmodel.step.prediction",
    "Prediction": "perfmodel.step.prediction",
    # the baselines every score is printed beside: (6N + 12·L·h·s) FLOPs per token at 40 % of peak, and the roofline
    "rule_of_thumb_step_time": "perfmodel.step.baselines",
    "roofline_step_time": "perfmodel.step.baselines",
    # one planner for every model and GPU (CM-DARE's measured world or today's clouds)
    "plan": "perfmodel.planning.unified",
}

__all__ = ["__version__", *_SUBMODULES, *_LAZY]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"perfmodel.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)

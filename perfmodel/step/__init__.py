"""perfmodel.step — the per-operator step model: one training step of any PyTorch model on any GPU and parallel layout,
from spec sheets. Its layers, each importing only the ones before it:

1. operator models, read from shipped artifacts in ``fitted/``: :mod:`~perfmodel.step.op_latency` (FP32-learned
   operators), :mod:`~perfmodel.step.half_precision` (half-precision GEMMs), :mod:`~perfmodel.step.bandwidth`
   (memory-bound kernels); :mod:`~perfmodel.step.op_fit` rebuilds them, :mod:`~perfmodel.step._artifact` reads and
   writes them;
2. :mod:`~perfmodel.step.trace` — the trace of a step (model, input, batch, precision, optimizer, kernel family);
3. :mod:`~perfmodel.step.kernels` — each kernel's time on a GPU, and the interval;
4. :mod:`~perfmodel.step.one_gpu` — one step on one GPU, and the recompute of activation checkpointing;
5. :mod:`~perfmodel.step.collectives` (links and collective times), :mod:`~perfmodel.step.strategy` (layouts by name)
   and :mod:`~perfmodel.step.memory` (memory per GPU of a layout);
6. :mod:`~perfmodel.step.parallel` — one step of a parallel layout; :mod:`~perfmodel.step.hetero` — data parallel over
   a mix of GPU types;
7. the faces: :mod:`~perfmodel.step.prediction` (``predict``: a run as :class:`perfmodel.Workload`,
   :class:`perfmodel.Cluster` and :class:`perfmodel.Parallelism`, answered by one :class:`Prediction`) and
   :mod:`~perfmodel.step.step_time` (``predict_step_time``, keywords, one row per GPU).

A run travels down the layers as those three objects: what is trained (the workload, every field set:
:meth:`perfmodel.Workload.filled`), on what (one :class:`~perfmodel.Cluster` per GPU compared, the same GPU count,
nodes and links on each) and how (the :class:`~perfmodel.Parallelism`, the checkpointing said in it). Each layer
reads the fields it needs: :func:`~perfmodel.step.step_time.step_rows`, :func:`~perfmodel.step.one_gpu.single_gpu_rows`,
:func:`~perfmodel.step.parallel.parallel_rows` and :func:`~perfmodel.step.parallel.rank_work` (the trace of a
layout's rank: the workload and the parallelism, not the GPU), :func:`~perfmodel.step.memory.memory_frame`. The
keyword faces (``predict_step_time``, ``predict_memory``, ``predict_parallel_step_time``) check their keywords as
they always have and make the objects (:func:`~perfmodel.step.step_time.keyword_run`); a new option of a run is a
field of one object and the code of the layer that reads it.

:mod:`~perfmodel.step.baselines` gives the two baselines every external score is printed beside (the rule of thumb and
the roofline); :mod:`~perfmodel.step.half_precision_scores` scores the half-precision model on Vidur's held-out H100.
The papers' estimators (CM-DARE's regressors, cluster speed with parameter servers, checkpoints, lifetimes) live in
:mod:`perfmodel.models`; the plans (:mod:`perfmodel.planning`) sit above both. Importing this package loads nothing
heavy: the names below are read from their modules on first use.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "predict": "prediction", "Prediction": "prediction", "predict_step_time": "step_time",
    "predict_memory": "memory", "rule_of_thumb_step_time": "baselines", "roofline_step_time": "baselines",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"perfmodel.step.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'perfmodel.step' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)

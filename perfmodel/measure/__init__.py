"""perfmodel.measure — time training steps, checkpoints and data-parallel clusters of your own models on your own
devices, in the schemas of the published data, appended atomically to dataset files.

* :func:`measure_step_time`, :func:`measure_checkpoint_time` — one device (CPU or GPU, synchronised timing);
* :func:`measure_cluster_speed` — ``torch.distributed`` data parallelism (gloo on CPU, nccl on GPU; ``torchrun`` for
  real clusters: ``python -m perfmodel.measure.ddp``);
* :func:`measure_gradient_noise` — the gradient noise scale of a model on your data (statistical efficiency);
* :func:`measure_llm_step` — the training step of a Hugging Face config on your GPU, with the SM clock and power it
  ran at; :func:`measure_sustained_gemms` — GEMMs held for seconds, the rows that give the clock a part sustains
  (:func:`perfmodel.step.kernels.sustained_clock`); :class:`ClockSampler` — NVML / nvidia-smi samples of the clock;
* :func:`measure_ops` — operator microbenchmarks in NeuSight's schema on your GPU, the rows that calibrate the
  operator model (``perfmodel fit --with``);
* :func:`measure_campaign` — many combinations, resumable, with a progress bar; :func:`append_rows` — atomic, locked
  append that never loses rows; :func:`summarize_steps` — median, spread, outliers and busy-machine warnings;
* ``perfmodel measure ...`` on the command line; ``python -m perfmodel.measure.bundle --folder datasets/measurements``
  rebuilds the bundled CPU data (the folder must be named: a bare run writes nothing).
"""
from __future__ import annotations

from perfmodel.measure.campaign import measure_campaign
from perfmodel.measure.ddp import CLUSTER_COLUMNS, measure_cluster_speed
from perfmodel.measure.gpu_clock import ClockSampler
from perfmodel.measure.llm import GEMM_COLUMNS, LLM_STEP_COLUMNS, measure_llm_step, measure_sustained_gemms
from perfmodel.measure.noise import NOISE_COLUMNS, measure_gradient_noise
from perfmodel.measure.ops import OP_COLUMNS, measure_ops
from perfmodel.measure.store import MeasurementFileError, append_rows, check_appendable, read_rows
from perfmodel.measure.summary import SPREAD_LIMIT, StepSummary, summarize_steps
from perfmodel.measure.timing import (
    CHECKPOINT_COLUMNS,
    STEP_COLUMNS,
    check_checkpoint_path,
    check_device,
    check_input_shape,
    environment,
    flag_outliers,
    measure_checkpoint_time,
    measure_step_time,
)

__all__ = ["measure_step_time", "measure_checkpoint_time", "measure_cluster_speed", "measure_campaign", "append_rows", "read_rows",
           "MeasurementFileError", "environment", "flag_outliers", "STEP_COLUMNS", "CHECKPOINT_COLUMNS", "CLUSTER_COLUMNS",
           "summarize_steps", "StepSummary", "SPREAD_LIMIT", "check_appendable", "check_checkpoint_path", "check_device",
           "check_input_shape", "measure_gradient_noise", "NOISE_COLUMNS", "measure_ops", "OP_COLUMNS", "measure_llm_step",
           "measure_sustained_gemms", "LLM_STEP_COLUMNS", "GEMM_COLUMNS", "ClockSampler"]

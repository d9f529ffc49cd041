"""perfmodel.models — estimators (scikit-learn contract): step time, cluster speed, checkpoint/restart overhead, lifetimes.

The step-time model of any model on any GPU (:func:`perfmodel.predict_step_time`) is layered; each layer imports only
the ones before it:

1. :mod:`~perfmodel.models.op_latency`, :mod:`~perfmodel.models.half_precision` (half-precision GEMMs) and
   :mod:`~perfmodel.models.bandwidth` (memory-bound kernels in half precision) — operator models, read from shipped
   artifacts (:mod:`~perfmodel.models.op_fit`, ``half_precision.fit_half_bundle`` and
   ``bandwidth.fit_bandwidth_bundle`` rebuild them);
2. :mod:`~perfmodel.models.workload` — the trace of a workload (model, input, batch, precision, optimizer, fusions);
3. :mod:`~perfmodel.models.kernels` — each kernel's time on a GPU;
4. :mod:`~perfmodel.models.one_step` — one step on one GPU, and the recompute of activation checkpointing;
5. :mod:`~perfmodel.models.collectives` and :mod:`~perfmodel.models.strategy` — links, collectives, layouts by name;
   :mod:`~perfmodel.models.memory` — memory per GPU of a layout;
6. :mod:`~perfmodel.models.parallel` — one step of a parallel layout;
7. :mod:`~perfmodel.models.op_step_time` — the face: ``predict_step_time`` checks its arguments and hands over.

The plans (:mod:`perfmodel.planning`) sit above them. :mod:`~perfmodel.models.baselines` gives the two baselines every
external score is printed beside: the rule of thumb ((6N + 12·L·h·s) FLOPs per token at 40 % of peak) and the roofline.
"""
from __future__ import annotations

__all__: list[str] = []

from perfmodel.models._extrapolation import ExtrapolationWarning

__all__ += ["ExtrapolationWarning"]

# -- CM-DARE's step-time regressors (the paper's CNNs on K80/P100) --
from perfmodel.models.step_time import (
    FEATURE_SETS,
    PAPER_SVR_POLY,
    StepTimeRegressor,
    exponential_speed_fit,
    graph_feature_frame,
    model_features,
    predict_step_time,
    quadratic_fit,
)

__all__ += ["StepTimeRegressor", "FEATURE_SETS", "PAPER_SVR_POLY", "graph_feature_frame", "quadratic_fit", "exponential_speed_fit",
            "model_features", "predict_step_time"]

# -- cluster speed (parameter servers) --
from perfmodel.models.cluster import (
    PS_TERMS,
    SHARED_PS_TERMS,
    ClusterSpeedModel,
    cluster_speeds,
    fit_cluster_speed_model,
    fit_shared_ps_terms,
    predict_cluster_speed,
)

__all__ += ["ClusterSpeedModel", "cluster_speeds", "PS_TERMS", "fit_cluster_speed_model",
            "SHARED_PS_TERMS", "fit_shared_ps_terms", "predict_cluster_speed"]

# -- links, collectives and parallel layouts --
from perfmodel.models.collectives import (INTERCONNECTS, Interconnect, allgather_time, allreduce_time, p2p_time,
                                          reduce_scatter_time, resolve_interconnect)
from perfmodel.models.strategy import STRATEGIES, StrategyError, parse_strategy, resolve_links, strategy_combinations

__all__ += ["Interconnect", "INTERCONNECTS", "STRATEGIES", "StrategyError", "allreduce_time", "allgather_time", "reduce_scatter_time",
            "p2p_time", "resolve_interconnect", "parse_strategy", "resolve_links", "strategy_combinations"]
from perfmodel.models.collectives import fitted_link  # noqa: E402  (NCCL efficiency and latency fitted on Vidur's curves)

__all__ += ["fitted_link"]

# -- transient servers: checkpoints and lifetimes --
from perfmodel.models.checkpoint import CHECKPOINT_FEATURE_SETS, PAPER_CKPT_SVR, CheckpointTimeRegressor, checkpoint_size_mb, predict_checkpoint_time

from perfmodel.models.lifetimes import (
    MAX_LIFETIME_H,
    as_flags,
    fit_cdf_lifetimes,
    fit_icac_lifetimes,
    fit_lifetimes,
    lifetimes_from_cdf,
    time_between_failures_fit,
)

__all__ += ["CheckpointTimeRegressor", "CHECKPOINT_FEATURE_SETS", "PAPER_CKPT_SVR", "checkpoint_size_mb", "predict_checkpoint_time",
            "MAX_LIFETIME_H", "BathtubFitter", "fit_icac_lifetimes", "fit_lifetimes", "fit_cdf_lifetimes", "lifetimes_from_cdf", "time_between_failures_fit",
            "as_flags"]


def __getattr__(name: str):
    if name == "BathtubFitter":  # lifelines' fitters take 0.1-0.2 s to import: only when asked for
        from perfmodel.models.bathtub import BathtubFitter

        return BathtubFitter
    raise AttributeError(f"module 'perfmodel.models' has no attribute {name!r}")

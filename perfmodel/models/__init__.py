"""perfmodel.models — estimators (scikit-learn contract): step time, cluster speed, checkpoint/restart overhead, lifetimes.

Each section below is owned by one work item; add exports only inside your section.
"""
from __future__ import annotations

__all__: list[str] = []

from perfmodel.models._extrapolation import ExtrapolationWarning

__all__ += ["ExtrapolationWarning"]

# -- step time --
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
# -- end step time --

# -- cluster speed --
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
# -- end cluster speed --

# -- multi-GPU step time --
from perfmodel.models.parallel import (
    INTERCONNECTS,
    STRATEGIES,
    Interconnect,
    StrategyError,
    allgather_time,
    allreduce_time,
    p2p_time,
    parse_strategy,
    reduce_scatter_time,
    resolve_interconnect,
    resolve_links,
    strategy_combinations,
)

__all__ += ["Interconnect", "INTERCONNECTS", "STRATEGIES", "StrategyError", "allreduce_time", "allgather_time", "reduce_scatter_time",
            "p2p_time", "resolve_interconnect", "parse_strategy", "resolve_links", "strategy_combinations"]
from perfmodel.models.collectives import fitted_link  # noqa: E402  (NCCL efficiency and latency fitted on Vidur's curves)

__all__ += ["fitted_link"]
# -- end multi-GPU step time --

# -- transient servers --
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
# -- end transient servers --


def __getattr__(name: str):
    if name == "BathtubFitter":  # lifelines' fitters take 0.1-0.2 s to import: only when asked for
        from perfmodel.models.bathtub import BathtubFitter

        return BathtubFitter
    raise AttributeError(f"module 'perfmodel.models' has no attribute {name!r}")

"""perfmodel.models — the papers' estimators (scikit-learn contract): CM-DARE's step-time regressors of its CNNs on
K80/P100 (:func:`predict_cmdare_step_time`), cluster speed with parameter servers, checkpoint time, server lifetimes
and the bathtub hazard.

The per-operator step model of any model on any GPU and layout (``pm.predict``, ``pm.predict_step_time``,
``pm.predict_memory``) lives in :mod:`perfmodel.step`. Its modules were here before; their old names
(``perfmodel.models.op_latency``, ``perfmodel.models.parallel``, …) stay aliases of the moved modules, and the
collective and layout names below stay re-exported.
"""
from __future__ import annotations

__all__: list[str] = []

from perfmodel._extrapolation import ExtrapolationWarning

__all__ += ["ExtrapolationWarning"]

# -- CM-DARE's step-time regressors (the paper's CNNs on K80/P100) --
from perfmodel.models.step_time import (
    FEATURE_SETS,
    PAPER_SVR_POLY,
    StepTimeRegressor,
    exponential_speed_fit,
    graph_feature_frame,
    model_features,
    predict_cmdare_step_time,
    quadratic_fit,
)

__all__ += ["StepTimeRegressor", "FEATURE_SETS", "PAPER_SVR_POLY", "graph_feature_frame", "quadratic_fit", "exponential_speed_fit",
            "model_features", "predict_cmdare_step_time"]

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

# -- links, collectives and parallel layouts (the step model's, perfmodel.step; re-exported under their old home) --
from perfmodel.step.collectives import (INTERCONNECTS, Interconnect, allgather_time, allreduce_time, p2p_time,
                                          reduce_scatter_time, resolve_interconnect)
from perfmodel.step.strategy import STRATEGIES, StrategyError, parse_strategy, resolve_links, strategy_combinations

__all__ += ["Interconnect", "INTERCONNECTS", "STRATEGIES", "StrategyError", "allreduce_time", "allgather_time", "reduce_scatter_time",
            "p2p_time", "resolve_interconnect", "parse_strategy", "resolve_links", "strategy_combinations"]
from perfmodel.step.collectives import fitted_link  # noqa: E402  (NCCL efficiency and latency fitted on Vidur's curves)

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


#: the step model's modules that lived here, by their old name: ``perfmodel.models.<old>`` is ``perfmodel.step.<new>``.
MOVED_TO_STEP = {"op_latency": "op_latency", "half_precision": "half_precision",
                 "half_precision_scores": "half_precision_scores", "bandwidth": "bandwidth", "op_fit": "op_fit",
                 "_artifact": "_artifact", "workload": "trace", "kernels": "kernels", "one_step": "one_gpu",
                 "collectives": "collectives", "strategy": "strategy", "parallel": "parallel", "memory": "memory",
                 "op_step_time": "step_time", "prediction": "prediction", "baselines": "baselines", "hetero": "hetero"}


def __getattr__(name: str):
    if name in MOVED_TO_STEP:  # pm.models.parallel and the like: the moved module
        import importlib

        return importlib.import_module(f"perfmodel.models.{name}")
    if name == "predict_step_time":  # the old name of CM-DARE's regressor: warns (perfmodel.models.step_time)
        from perfmodel.models.step_time import predict_step_time

        return predict_step_time
    if name == "BathtubFitter":  # lifelines' fitters take 0.1-0.2 s to import: only when asked for
        from perfmodel.models.bathtub import BathtubFitter

        return BathtubFitter
    raise AttributeError(f"module 'perfmodel.models' has no attribute {name!r}")

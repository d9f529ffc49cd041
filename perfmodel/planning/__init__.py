"""perfmodel.planning — cost model, expected revocations, cost/time planning."""
from __future__ import annotations

from perfmodel.planning.cost import cluster_cost_usd, icac_run_costs, price_per_second
from perfmodel.planning.efficiency import (
    ICAC_LR_STEP,
    fit_staleness_multiplier,
    gradient_noise_scale,
    icac_staleness_curves,
    staleness_cost,
    staleness_multiplier,
    statistical_efficiency,
    steps_multiplier,
)
from perfmodel.planning.plan import (
    PlanInfeasibleError,
    cheapest_under_deadline,
    fastest_under_budget,
    pareto_front,
    plan_cmdare,
    plot_pareto,
    validate_against_icac,
)
from perfmodel.planning.cloud import cheapest_within_deadline, fastest_within_budget, plan_cloud
from perfmodel.planning.unified import choose_world, plan
from perfmodel.planning.prices import read_prices
from perfmodel.planning.revocation import (
    estimate_time_after_revocation,
    tf_restart_s,
    expected_job_overhead,
    expected_revocations,
    lifetime_distribution,
    mean_time_between_failures_h,
    optimal_interval_by_simulation,
    simulate_job,
    simulate_revocations,
    young_daly_interval,
)

__all__ = [
    "cluster_cost_usd", "icac_run_costs", "price_per_second", "read_prices", "predict_memory",
    "plan", "plan_cmdare", "choose_world", "plan_cloud", "cheapest_within_deadline", "fastest_within_budget", "pareto_front", "cheapest_under_deadline", "fastest_under_budget", "plot_pareto", "PlanInfeasibleError", "validate_against_icac",
    "lifetime_distribution", "expected_revocations", "simulate_revocations", "mean_time_between_failures_h", "young_daly_interval",
    "expected_job_overhead", "simulate_job", "optimal_interval_by_simulation", "estimate_time_after_revocation", "tf_restart_s", "gradient_noise_scale", "steps_multiplier", "statistical_efficiency",
    "icac_staleness_curves", "staleness_cost", "fit_staleness_multiplier", "staleness_multiplier", "ICAC_LR_STEP",
]

from perfmodel.planning.strategies import explore_strategies, pareto_mask, plot_strategies

__all__ += ["explore_strategies", "pareto_mask", "plot_strategies"]

from perfmodel.planning.layouts import LAYOUT_COLUMNS, layout_candidates, search_layouts

__all__ += ["search_layouts", "layout_candidates", "LAYOUT_COLUMNS"]


def __getattr__(name: str):
    if name == "predict_memory":  # the memory model lives with the models; loaded on first use, not with the planner
        from perfmodel.step.memory import predict_memory

        return predict_memory
    raise AttributeError(f"module 'perfmodel.planning' has no attribute {name!r}")

from perfmodel.planning.cloud import instance_cluster
from perfmodel.planning.networks import instance_network

__all__ += ["instance_cluster", "instance_network"]

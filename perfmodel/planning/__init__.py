"""perfmodel.planning — cost model, expected revocations, cost/time planning."""
from __future__ import annotations

from perfmodel.planning.cost import cluster_cost_usd, icac_run_costs, price_per_second

__all__ = ["cluster_cost_usd", "icac_run_costs", "price_per_second"]

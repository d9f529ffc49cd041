"""perfmodel.figures — a thin alias of :mod:`perfmodel.papers` under the names notebooks and users already call.

``<slug>_data()`` → tidy frame, ``<slug>()`` → Figure, ``*_numbers_data()`` → paper-vs-reproduced table: each name is
re-exported from the private module of the paper package that implements it. New code uses the item modules of
:mod:`perfmodel.papers` (one per figure or table, with ``data()``, ``numbers()``, ``figure()``). This alias is the one
exception to "nothing imports papers but the runner, the CLI, notebooks and tests" (DESIGN.md): it imports them so
that ``pm.figures.*`` keeps working.
"""
from __future__ import annotations

__all__: list[str] = []

# -- speed prediction figures --
from perfmodel.papers.cmdare.step_time_vs_model_gflops_training_cnns import figure_4, figure_4_data
from perfmodel.papers.cmdare.per_model_prediction_error import prediction_error, prediction_error_data
from perfmodel.papers.cmdare.single_worker_speed_timeseries import (
    single_worker_mean_speeds,
    single_worker_numbers_data,
    single_worker_timeseries,
    single_worker_timeseries_data,
)
from perfmodel.papers.cmdare.step_time_vs_model_gflops import speed_complexity_correlation, speed_complexity_correlation_data
from perfmodel.papers.cmdare.step_time_vs_computation import speed_computation_correlation, speed_computation_correlation_data
from perfmodel.papers.cmdare.step_time_prediction import reproduce_speed_numbers, speed_prediction, speed_prediction_data
from perfmodel.papers.beyond.step_time_honest_protocols import campaign_floor, speed_protocols, speed_protocols_data, v100_samples

__all__ += [
    "figure_4", "figure_4_data", "prediction_error", "prediction_error_data", "single_worker_mean_speeds", "single_worker_numbers_data", "single_worker_timeseries",
    "single_worker_timeseries_data", "speed_complexity_correlation", "speed_complexity_correlation_data", "speed_computation_correlation",
    "speed_computation_correlation_data", "reproduce_speed_numbers", "speed_prediction", "speed_prediction_data",
    "speed_protocols", "speed_protocols_data", "v100_samples", "campaign_floor",
]
# -- end speed prediction figures --

# -- cluster figures --
from perfmodel.papers.cmdare.cluster_speed_vs_p100_workers import (
    cluster_size_training_speed,
    cluster_size_training_speed_data,
    cluster_speed_numbers_data,
    cluster_speed_observations,
)
from perfmodel.papers.cmdare.cluster_speed_vs_workers_one_ps import figure_5, figure_5_data
from perfmodel.papers.cmdare._ps_bottleneck import ps_bot_k80, ps_bot_k80_data, ps_bot_p100, ps_bot_p100_data

from perfmodel.papers.icac19._clusters import (
    icac_cluster_numbers_data,
    icac_fig6,
    icac_fig6_data,
    icac_fig7,
    icac_fig7_data,
    icac_fig8,
    icac_fig8_data,
)

__all__ += ["cluster_size_training_speed", "cluster_size_training_speed_data", "cluster_speed_numbers_data", "cluster_speed_observations",
            "icac_cluster_numbers_data", "figure_5", "figure_5_data", "ps_bot_k80", "ps_bot_k80_data",
            "ps_bot_p100", "ps_bot_p100_data", "icac_fig6", "icac_fig6_data", "icac_fig7", "icac_fig7_data", "icac_fig8", "icac_fig8_data"]
# -- end cluster figures --

# -- transient-server figures and ICAC'19 tables --
from perfmodel.papers.cmdare._checkpoint import (
    checkpoint_prediction_data,
    ckpt_duration_size_correlation,
    ckpt_duration_size_correlation_data,
    figure_12,
    figure_12_data,
    reproduce_checkpoint_numbers,
)

from perfmodel.papers.cmdare.server_lifetime_cdf import lifetime_cdf, lifetime_cdf_data, lifetime_numbers_data

__all__ += ["checkpoint_prediction_data", "ckpt_duration_size_correlation", "ckpt_duration_size_correlation_data", "figure_12", "figure_12_data",
            "reproduce_checkpoint_numbers", "lifetime_cdf", "lifetime_cdf_data", "lifetime_numbers_data"]
# -- end transient-server figures --

# -- restart, start-up, revocations by hour, ICAC'19 Figs. 3 and 5 --
from perfmodel.papers._transient import (
    chief_rejoining,
    chief_rejoining_data,
    estimate_time_after_revocation,
    icac_fig3,
    icac_fig3_data,
    icac_fig5,
    icac_fig5_data,
    restart_training_overhead,
    restart_training_overhead_data,
    revocations_by_hour,
    revocations_by_hour_data,
    startup_breakdown,
    startup_breakdown_data,
    tf_restart,
    tf_restart_data,
    training_time_estimates,
    training_time_estimates_data,
    transient_numbers_data,
    vm_startup_exp,
    vm_startup_exp_data,
)

__all__ += ["startup_breakdown_data", "startup_breakdown", "vm_startup_exp_data", "vm_startup_exp", "tf_restart_data", "tf_restart", "restart_training_overhead_data", "restart_training_overhead", "chief_rejoining_data", "chief_rejoining", "revocations_by_hour_data", "revocations_by_hour", "estimate_time_after_revocation", "training_time_estimates_data", "training_time_estimates", "icac_fig3_data", "icac_fig3", "icac_fig5_data", "icac_fig5", "transient_numbers_data"]
# -- end restart --

# -- lifetime models --
from perfmodel.papers.beyond.lifetime_models import lifetime_models, lifetime_models_data

__all__ += ["lifetime_models", "lifetime_models_data"]
# -- end lifetime models --

# -- ICAC'19 tables and heatmaps --
from perfmodel.papers.icac19._cost_tables import (
    icac_fig1,
    icac_fig4,
    icac_heatmap,
    icac_heatmap_data,
    icac_table_i_data,
    icac_table_iii_data,
    icac_table_iv_data,
    icac_table_numbers_data,
    icac_table_v_data,
)

__all__ += ["icac_fig1", "icac_fig4", "icac_heatmap", "icac_heatmap_data", "icac_table_i_data", "icac_table_iii_data", "icac_table_iv_data",
            "icac_table_numbers_data", "icac_table_v_data"]
# -- end ICAC'19 tables --

# -- planner and revocations --
from perfmodel.papers.beyond.plan_validation import plan_validation, plan_validation_data
from perfmodel.papers.beyond._revocation_overhead import (
    checkpoint_interval,
    checkpoint_interval_data,
    revocation_expectations,
    revocation_expectations_data,
)

__all__ += ["plan_validation", "plan_validation_data", "checkpoint_interval", "checkpoint_interval_data", "revocation_expectations",
            "revocation_expectations_data"]
# -- end planner and revocations --

# -- CPU measurements --
from perfmodel.papers.beyond.cpu_step_time_lomo import CPU_FEATURE_SETS, cpu_lomo, cpu_lomo_data, cpu_step_times

__all__ += ["CPU_FEATURE_SETS", "cpu_lomo", "cpu_lomo_data", "cpu_step_times"]
# -- end CPU measurements --

# -- external benchmark: NeuSight's labels --
from perfmodel.papers.external._neusight import (
    AMD_BENCHMARK_GPUS,
    BENCHMARK_GPUS,
    cmdare_op_model_data,
    neusight_amd_benchmark_data,
    neusight_benchmark,
    neusight_benchmark_data,
    neusight_benchmark_summary,
)

__all__ += ["BENCHMARK_GPUS", "AMD_BENCHMARK_GPUS", "cmdare_op_model_data", "neusight_benchmark", "neusight_benchmark_data",
            "neusight_amd_benchmark_data", "neusight_benchmark_summary"]

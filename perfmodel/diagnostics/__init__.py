"""perfmodel.diagnostics — metrics, evaluation protocols, bottleneck detection."""
from __future__ import annotations

from perfmodel.diagnostics.metrics import ape, mae, mape, percent_error, r2, regression_report, rmse

__all__: list[str] = ["mape", "mae", "rmse", "r2", "regression_report", "ape", "percent_error"]

# -- evaluation protocols --
from perfmodel.diagnostics.evaluation import (
    cross_gpu,
    kfold_cv,
    leave_one_model_out,
    paper_split,
    predictions_frame,
    unseen_model_test,
)

__all__ += ["paper_split", "kfold_cv", "unseen_model_test", "leave_one_model_out", "cross_gpu", "predictions_frame"]

# -- cluster diagnostics --
from perfmodel.diagnostics.cluster import diagnose_cluster, diagnose_timeseries

__all__ += ["diagnose_cluster", "diagnose_timeseries"]

from perfmodel.diagnostics.cluster_errors import cluster_model_errors, shared_ps_terms_errors

__all__ += ["cluster_model_errors", "shared_ps_terms_errors"]

from perfmodel.diagnostics.lifetime_protocols import spot_lifetime_heldout

__all__ += ["spot_lifetime_heldout"]

from perfmodel.diagnostics.ddp_overlap import check_ddp_overlap

__all__ += ["check_ddp_overlap"]

# -- operator latency model --
from perfmodel.diagnostics.op_model import op_model_errors

__all__ += ["op_model_errors"]

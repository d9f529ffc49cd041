"""Every speed-prediction number of CATALOG.md §1.7 recomputed from the data and checked against the paper's value."""
from __future__ import annotations

import pytest

from perfmodel.figures import speed_prediction_data


@pytest.fixture(scope="module")
def numbers():
    return speed_prediction_data().set_index("quantity")


def test_every_exact_number_reproduced(numbers):
    """EXACT rows: within rtol 1e-6 (catalog rule; 2-decimal CV R² within 0.005), CATALOG.md §1.7 / §5."""
    exact = numbers[numbers["status"] == "EXACT"]
    assert len(exact) == 49
    bad = exact[exact["within_tolerance"] != True]  # noqa: E712
    assert bad.empty, bad[["paper_value", "reproduced"]]


def test_solver_and_stale_numbers_are_recorded_with_reasons(numbers):
    """CATALOG.md §1.7, §7.2–7.3: the unseen-model SVR MAE (libsvm), the supertable R² (rank-deficient: lstsq
    reproduces it, scikit-learn 1.9 does not), 0latency_p100.csv results and the supertable MAE (stale)."""
    assert numbers.loc["unseen_svr_rbf_mae_s", "reproduced"] == pytest.approx(0.027623510, rel=1e-6)
    assert numbers.loc["unseen_svr_rbf_mape_pct", "reproduced"] == pytest.approx(7.45, abs=0.005)
    assert numbers.loc["supertable_r2", "within_tolerance"] == True  # noqa: E712
    assert numbers.loc["supertable_sklearn_r2", "reproduced"] == pytest.approx(0.6807, abs=5e-5)
    assert numbers.loc["supertable_rank", "reproduced"] == 6
    assert numbers.loc["sp1_p100_r2", "reproduced"] == pytest.approx(0.9109, abs=5e-5)
    assert numbers.loc["sp1_p100_mae_s", "reproduced"] == pytest.approx(0.03565, abs=5e-6)
    for q in ("unseen_svr_rbf_mae_s", "supertable_r2", "sp1_p100_r2", "sp1_p100_mae_s", "supertable_split_mae"):
        assert numbers.loc[q, "status"] in ("SOLVER", "STALE") and len(str(numbers.loc[q, "reason"])) > 20


def test_rerun_values_the_catalog_quotes(numbers):
    """CATALOG.md §1.7 bracketed re-run values: quadratic unseen-model MAPE 9.21 %, sp1 absolute MAPE 38.36 %."""
    assert numbers.loc["unseen_quadratic_mape_pct", "reproduced"] == pytest.approx(9.21, abs=0.005)
    assert numbers.loc["sp1_abs_mape_pct", "reproduced"] == pytest.approx(38.36, abs=0.005)
    assert numbers.loc["p100_svr_cv_r2", "within_tolerance"] == True  # noqa: E712

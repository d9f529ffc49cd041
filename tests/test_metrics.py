import numpy as np
import pytest

from perfmodel.diagnostics.metrics import mae, mape, r2, regression_report, rmse


def test_values_by_hand():
    t, p = [1.0, 2.0, 4.0], [1.5, 2.0, 3.0]
    assert mape(t, p) == pytest.approx((0.5 + 0 + 0.25) / 3 * 100)
    assert mae(t, p) == pytest.approx(0.5)
    assert rmse(t, p) == pytest.approx(np.sqrt((0.25 + 0 + 1) / 3))
    assert r2(t, t) == 1.0
    rep = regression_report(t, p)
    assert rep["n"] == 3 and rep["mape_pct"] == pytest.approx(25.0)


def test_bad_input():
    with pytest.raises(ValueError, match=r"mape: y_true holds 1 zero\(s\); a percentage error is undefined there"):
        mape([0, 1], [1, 1])
    with pytest.raises(ValueError, match=r"mae: y_pred holds 1 NaN/inf value\(s\) \(first at position 1\)"):
        mae([1, 2], [1, np.nan])
    with pytest.raises(ValueError, match=r"rmse: y_true and y_pred must have the same length; got 2 and 3"):
        rmse([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"r2: got empty input"):
        r2([], [])
    with pytest.raises(ValueError, match=r"r2: y_true is constant"):
        r2([1, 1], [1, 2])

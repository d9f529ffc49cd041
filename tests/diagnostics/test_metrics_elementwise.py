"""Element-wise percentage errors: the building block every table of errors uses."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.diagnostics import ape, mape, percent_error


def test_signed_and_absolute_percentage_errors():
    t, p = [2.0, 4.0, 10.0], [3.0, 3.0, 10.0]
    np.testing.assert_allclose(percent_error(t, p), [50.0, -25.0, 0.0])
    np.testing.assert_allclose(ape(t, p), [50.0, 25.0, 0.0])
    assert mape(t, p) == pytest.approx(ape(t, p).mean())


@pytest.mark.parametrize("t, p, msg", [([0.0, 1.0], [1.0, 1.0], r"percent_error: y_true holds 1 zero\(s\) \(first at position 0\)"),
                                      ([1.0, np.nan], [1.0, 1.0], "NaN/inf"), ([1.0], [1.0, 2.0], "same length"), ([], [], "empty")])
def test_percentage_errors_refuse_bad_input(t, p, msg):
    with pytest.raises(ValueError, match=msg):
        percent_error(t, p)
    with pytest.raises(ValueError, match=msg):
        ape(t, p)

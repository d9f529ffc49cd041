"""ICAC'19 cost model: the per-second rates come from the price table, not from code."""
from __future__ import annotations

import pytest

import perfmodel as pm
from perfmodel.planning.cost import price_per_second


def test_code_rates_are_read_from_the_price_table():
    p = pm.datasets.load_prices()
    ps = p[p["server"] == "parameter_server"].iloc[0]
    assert price_per_second("PS", transient=False) == ps["on_demand_usd_per_s_in_code"] == pytest.approx(ps["on_demand_usd_per_h"] / 3600, rel=1e-3)
    assert price_per_second("PS", transient=True) == pytest.approx(ps["transient_usd_per_h"] / 3600)  # no code rate: the table's
    assert price_per_second("K80", transient=True) == 0.000071
    assert price_per_second("K80", transient=True, rates="table") == pytest.approx(0.256 / 3600)
    changed = p.copy()
    changed.loc[changed["gpu"] == "K80", "transient_usd_per_s_in_code"] = 1e-4
    assert price_per_second("K80", transient=True, prices=changed) == 1e-4
    with pytest.raises(ValueError, match="rates must be 'code'"):
        price_per_second("K80", transient=True, rates="hourly")

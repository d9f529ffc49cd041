"""The shipped GPU price table (datasets/reference/gpu_prices.csv): every row cited, dated and sane."""
import re

import numpy as np
import pandas as pd
import pytest

from perfmodel import datasets as ds
from perfmodel.datasets.reference import GPU_PRICE_COLUMNS, load_gpu_prices

# A row whose spot price is not below its on-demand price is kept only if its note says why, with this wording.
SPOT_EXCEPTION = "spot not below on-demand in the source"


def _unexplained_spot_above_on_demand(p: pd.DataFrame) -> pd.DataFrame:
    """Rows with a spot price not below their on-demand price whose note does not carry :data:`SPOT_EXCEPTION`."""
    od = pd.to_numeric(p["on_demand_usd_per_h"])
    spot = pd.to_numeric(p["spot_usd_per_h"])
    above = spot.notna() & ~(spot < od)
    return p[above & ~p["note"].str.contains(SPOT_EXCEPTION, regex=False)]


@pytest.fixture(scope="module")
def prices():
    return load_gpu_prices()


def test_columns_and_every_row_cited_and_dated(prices):
    assert tuple(prices.columns) == GPU_PRICE_COLUMNS
    assert 10 <= len(prices) <= 40
    for col in ("provider", "region", "instance_type", "price_date", "source_url", "note"):
        assert prices[col].notna().all() and prices[col].astype(str).str.strip().str.len().gt(0).all(), col
    assert prices["source_url"].str.match(r"https://\S+$").all()
    # a date the source states, written as a year-month-day first
    assert prices["price_date"].str.match(r"20\d\d-\d\d-\d\d\b").all()
    # the note names the instance's GPUs: "<count> x <model>" with the same count as gpus_per_instance
    for r in prices.itertuples(index=False):
        m = re.search(r"\b(\d+) x (A100|H100|H200|B200|B300|A10G|L40S|L4)\b", r.note)
        assert m is not None and int(m.group(1)) == r.gpus_per_instance and r.gpu.startswith(m.group(2)), r.note


def test_one_row_per_provider_region_instance(prices):
    assert not prices.duplicated(["provider", "region", "instance_type"]).any()


def test_prices_positive_and_spot_below_on_demand(prices):
    od = pd.to_numeric(prices["on_demand_usd_per_h"])
    spot = pd.to_numeric(prices["spot_usd_per_h"])
    assert np.isfinite(od).all() and (od > 0).all()
    assert (spot.dropna() > 0).all()
    # spot below on-demand, except where the source prints otherwise and the note says so
    assert _unexplained_spot_above_on_demand(prices).empty


def test_gpu_ids_are_catalog_ids(prices):
    assert set(prices["gpu"]) <= set(ds.CATALOG_GPU_IDS)
    assert all(ds.canonical_gpu(g) == g for g in prices["gpu"])
    assert pd.api.types.is_integer_dtype(prices["gpus_per_instance"]) and (prices["gpus_per_instance"] >= 1).all()


@pytest.mark.parametrize("gpu", ["A100", "H100", "L4"])
def test_planner_gpus_have_on_demand_and_spot_rows(prices, gpu):
    rows = prices[prices["gpu"] == gpu]
    assert len(rows) >= 2
    assert rows["spot_usd_per_h"].notna().sum() >= 1


def test_aws_and_gcp_both_present(prices):
    assert {"aws", "gcp"} <= set(prices["provider"])
    assert prices.loc[prices["provider"] == "gcp", "spot_usd_per_h"].notna().all()


def test_planner_check_accepts_the_shipped_table(prices):
    from perfmodel.planning.cloud import check_gpu_prices

    checked = check_gpu_prices()
    pd.testing.assert_frame_equal(checked[["gpu", "gpus_per_instance", "on_demand_usd_per_h"]],
                                  prices[["gpu", "gpus_per_instance", "on_demand_usd_per_h"]].astype({"gpus_per_instance": int}))


def test_spot_exception_check_can_fail():
    t = pd.DataFrame(dict(on_demand_usd_per_h=[1.0, 1.0, 1.0, 1.0], spot_usd_per_h=[2.0, 1.0, 0.5, np.nan],
                          note=["no reason", f"{SPOT_EXCEPTION}: the page prints it so", "ok", "no spot"]))
    assert _unexplained_spot_above_on_demand(t).index.tolist() == [0]

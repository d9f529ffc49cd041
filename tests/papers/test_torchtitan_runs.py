"""torchtitan's published Llama runs: every row is either predicted by one perfmodel call or listed with its reason,
and the scores are computed from the rows."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.papers.external import torchtitan_runs as item


@pytest.fixture(scope="module")
def data():
    return item.data()


def test_every_published_row_is_predicted_or_says_why(data):
    from perfmodel.datasets import load_torchtitan_runs

    assert len(data) == len(load_torchtitan_runs())
    done = data["skipped"] == ""
    assert data.loc[done, "predicted_tokens_per_s"].gt(0).all()
    assert data.loc[~done, "predicted_tokens_per_s"].isna().all() and data.loc[~done, "skipped"].str.len().gt(10).all()
    # the FSDP-only H100 runs of Table 1 (8 GPUs) and Table 3 (128 GPUs) are all stated, and FSDP x TP without async TP
    fsdp_h100 = data[(data["gpu"] == "H100") & data["table"].str.startswith(("Table 1", "Table 3"))]
    assert len(fsdp_h100) == 6 and (fsdp_h100["skipped"] == "").all()
    from perfmodel.datasets import load_torchtitan_runs

    raw = load_torchtitan_runs()
    two_d = (raw["tp"] > 1) & (raw["pp"] == 1) & (raw["cp"] == 1) & ~raw["async_tp"].fillna(False).astype(bool) \
        & (raw["float8_recipe"].fillna("") != "rowwise")
    assert two_d.sum() >= 4 and (data.loc[two_d.to_numpy(), "skipped"] == "").all()
    async_only = (raw["async_tp"].fillna(False).astype(bool) & (raw["pp"] == 1) & (raw["cp"] == 1)).to_numpy()
    assert async_only.sum() >= 4 and data.loc[async_only, "skipped"].str.contains("asynchronous").all()


def test_numbers_are_computed_from_the_rows(data):
    n = item.summary(data).set_index("quantity")["value"]
    t = data["tokens_abs_error_pct"].dropna()
    assert n["tokens_mape_pct"] == pytest.approx(t.mean()) and n["tokens_worst_pct"] == pytest.approx(t.max())
    assert n["rows_predicted"] + n["rows_skipped"] == n["rows"] == len(data)
    m = data["memory_abs_error_pct"].dropna()
    assert n["memory_mape_pct"] == pytest.approx(m.mean()) and n["memory_rows"] == len(m)
    assert np.isfinite(n.to_numpy()).all()
    own = item.numbers().set_index("quantity")["reproduced"]
    assert own["tokens_mape_pct"] == pytest.approx(n["tokens_mape_pct"])


def test_more_gpus_never_raise_tokens_per_gpu(data):
    """Table 1 (8 GPUs) against Table 3 (128 GPUs), same per-GPU configuration: FSDP's collectives leave the node."""
    a = data[data["table"].str.startswith("Table 1")].reset_index(drop=True)
    b = data[data["table"].str.startswith("Table 3")].reset_index(drop=True)
    assert (b["predicted_tokens_per_s"] <= a["predicted_tokens_per_s"]).all()


def test_figure(data):
    import matplotlib

    matplotlib.use("Agg")
    fig = item.figure(data)
    assert fig.axes[0].get_xlabel().startswith("measured tokens/s")

"""The memory-bound FP16 operators Vidur measured on the A100 80GB PCIe and the H100: the share of the spec-sheet
bandwidth each reaches, measured and predicted, computed from the rows."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.diagnostics.op_model import SIZE_BANDS, bandwidth_shares


@pytest.fixture(scope="module")
def shares():
    return bandwidth_shares()


def test_shares_are_bytes_over_time_over_the_spec_bandwidth(shares):
    from perfmodel.step.half_precision import VIDUR_SPECS, vidur_rows
    from perfmodel.step.kernels import kernel_seconds
    from perfmodel.step.op_latency import WORK_COLUMNS

    assert set(shares["gpu"]) == {"A100-PCIe-80GB", "H100"}
    assert set(shares["band"]) == {b[0] for b in SIZE_BANDS}
    assert {"add", "emb", "input_layernorm", "mlp_act", "attn_rope"} <= set(shares["operator"])
    X = vidur_rows(("h100",))
    X = X[(X["operator"] == "add") & (X["bytes"] >= 32e6)].reset_index(drop=True)
    meas = X["bytes"] / X["kernel_s"] / X["bandwidth_bytes_per_s"]
    pred = X["bytes"] / kernel_seconds(X[WORK_COLUMNS], VIDUR_SPECS["h100"], "bf16") / X["bandwidth_bytes_per_s"]
    row = shares[(shares["gpu"] == "H100") & (shares["operator"] == "add") & (shares["band"] == ">= 32 MB")].iloc[0]
    assert row["n_rows"] == len(X)
    assert row["measured_share"] == pytest.approx(float(np.median(meas)), rel=1e-12)
    assert row["predicted_share"] == pytest.approx(float(np.median(pred)), rel=1e-12)


def test_each_operator_reaches_the_same_share_of_either_hbm_gpu(shares):
    """The property of the data the diagnostic rests on: at 32 MB and more, each operator's measured share of the
    bandwidth on the A100 80GB PCIe and on the H100 differ by less than 0.1 (the kernel sets it, not the GPU)."""
    big = shares[shares["band"] == ">= 32 MB"].pivot(index="operator", columns="gpu", values="measured_share")
    assert (big["A100-PCIe-80GB"] - big["H100"]).abs().max() < 0.1


def test_pytorchs_add_is_predicted_at_its_measured_share(shares):
    """The elementwise class learned on Vidur's FP16 adds of the A40 and A100 (bandwidth model version 2): PyTorch's
    add at 32 MB and more predicted within 20 % of its measured share on the A100 80GB PCIe (a training GPU) and on the
    held-out H100 (version 1, learned on NeuSight's FP32 rows: 0.69 and 0.59 against 0.93 and 1.01 measured)."""
    add = shares[(shares["operator"] == "add") & (shares["band"] == ">= 32 MB")].set_index("gpu")
    ratio = add["predicted_share"] / add["measured_share"]
    assert set(ratio.index) == {"A100-PCIe-80GB", "H100"}
    assert ((ratio > 0.8) & (ratio < 1.2)).all(), ratio.to_dict()

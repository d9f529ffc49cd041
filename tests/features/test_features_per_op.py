"""features.extract(per_op=True): one row per aten op of the training step, summing to the per-model totals."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from perfmodel.features import PER_OP_COLUMNS, DataDependentOpsError, FeatureExtractionError, extract


def per_op(*args, **kwargs):
    return extract(*args, per_op=True, **kwargs)


@pytest.mark.parametrize("model_id", ["resnet-15", "resnet-32", "shake-shake-small"])
@pytest.mark.parametrize("batch", [1, 7, 128])
def test_per_op_flops_sum_to_the_per_model_totals_on_zoo_cnns(model_id, batch):
    ops = per_op(model_id, (3, 32, 32), batch_size=batch)
    row = extract(model_id, (3, 32, 32), batch_size=batch).iloc[0]
    by_phase = ops.groupby("phase", observed=False)["flops"].sum()
    assert list(ops.columns) == list(PER_OP_COLUMNS)
    assert by_phase["forward"] == row["forward_flops"] and by_phase["backward"] == row["backward_flops"]
    assert by_phase["optimizer"] == 0 and ops["flops"].sum() == row["train_step_flops"]
    assert (ops["batch_size"] == batch).all() and ops["index"].is_monotonic_increasing


def test_hand_counted_linear_rows_bytes_shapes_and_modules():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3))
    ops = per_op(net, (6,), batch_size=5, device="cpu")
    mm = ops[ops["op_class"] == "matmul"]
    fwd = mm[mm["phase"] == "forward"]
    assert list(fwd["op"]) == ["aten.addmm", "aten.addmm"] and list(fwd["module"]) == ["0", "2"]
    # torch's convention: 2 FLOPs per multiply-add
    assert list(fwd["flops"]) == [2 * 5 * 6 * 4, 2 * 5 * 4 * 3]
    first = fwd.iloc[0]
    assert first["input_shapes"] == "4;5x6;6x4" and first["output_shapes"] == "5x4" and first["dtype"] == "float32"
    assert first["bytes_read"] == 4 * (4 + 5 * 6 + 6 * 4) and first["bytes_written"] == 4 * 5 * 4
    bwd = mm[mm["phase"] == "backward"]
    # layer 2: grad input + grad weight; layer 0 (its input needs no grad): grad weight only
    assert sorted(bwd.groupby("module")["flops"].sum().items()) == [("0", 2 * 5 * 6 * 4), ("2", 2 * 2 * 5 * 4 * 3)]
    assert (ops.loc[ops["op_class"] == "view", ["bytes_read", "bytes_written"]] == 0).all().all()
    relu = ops[(ops["op"] == "aten.relu") & (ops["phase"] == "forward")].iloc[0]
    assert (relu["module"], relu["op_class"], relu["bytes_read"], relu["bytes_written"]) == ("1", "elementwise", 80, 80)


@pytest.mark.parametrize("optimizer, n_ops", [("sgd-momentum", 3), ("adam", 7)])
def test_optimizer_step_rows(optimizer, n_ops):
    net = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3))
    before = [p.detach().clone() for p in net.parameters()]
    ops = per_op(net, (6,), batch_size=5, optimizer=optimizer, device="cpu")
    opt = ops[ops["phase"] == "optimizer"]
    n_param_bytes = 4 * sum(p.numel() for p in net.parameters())
    assert len(opt) == n_ops and (opt["op"].str.startswith("aten._foreach_")).all() and (opt["module"] == "").all()
    # each multi-tensor op writes every parameter-sized state once (in place or fresh)
    assert (opt["bytes_written"] == n_param_bytes).all() and (opt["bytes_read"] >= n_param_bytes).all()
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters())), "the optimizer step touched the module"
    assert ops.loc[ops["phase"] != "optimizer", "flops"].sum() == extract(net, (6,), batch_size=5).iloc[0]["train_step_flops"]


def test_token_inputs_any_batch_embedding_and_meta_default():
    with torch.device("meta"):
        net = nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(8 * 12, 50))
    for batch in (1, 3, 64):
        ops = per_op(net, (12,), batch_size=batch, input_dtype=torch.long, input_high=50)
        assert ops.attrs["device"] == "meta"
        emb = ops[(ops["op"] == "aten.embedding") & (ops["phase"] == "forward")].iloc[0]
        assert emb["input_shapes"] == f"50x8;{batch}x12" and emb["output_shapes"] == f"{batch}x12x8"
        # forward addmm + grad input + grad weight (the embedding's output needs a gradient)
        assert ops.loc[ops["op_class"] == "matmul", "flops"].sum() == 3 * 2 * batch * 96 * 50
    row = extract(net, (12,), batch_size=64, input_dtype=torch.long, input_high=50)
    assert row.attrs["device"] == "meta"  # a module on meta is counted on meta by default


def test_per_op_errors_say_what_and_how():
    net = nn.Linear(3, 2)
    with pytest.raises(FeatureExtractionError, match=r"optimizer must be one of 'sgd-momentum', 'adam' or None .*got 'lamb'"):
        per_op(net, (3,), optimizer="lamb")
    with pytest.raises(FeatureExtractionError, match=r"optimizer='adam' adds the optimizer step's ops .* pass per_op=True"):
        extract(net, (3,), optimizer="adam")
    with pytest.raises(FeatureExtractionError, match="per_layer and per_op cannot both be True"):
        extract(net, (3,), per_op=True, per_layer=True)


class Router(nn.Module):
    """Sends the rows with a positive first feature to an expert (data-dependent shapes: nonzero)."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 1)
        self.expert = nn.Linear(4, 4)

    def forward(self, x):
        idx = (self.gate(x)[:, 0] > 0).nonzero()[:, 0]
        return x.index_add(0, idx, self.expert(x[idx]))


def test_data_dependent_ops_are_refused_not_undercounted():
    with pytest.raises(DataDependentOpsError, match=r"output shape depends on the values .*aten.nonzero.*skip_compute=False"):
        extract(Router(), (4,), batch_size=8)
    with pytest.raises(DataDependentOpsError, match=r"aten.nonzero"):
        per_op(Router(), (4,), batch_size=8)  # meta cannot run it, the CPU stand-ins are zeros: refused either way
    with pytest.raises(FeatureExtractionError, match=r"meta device does not have.*static form"):
        extract(Router(), (4,), batch_size=8, device="meta")
    torch.manual_seed(0)
    net = Router()
    row = extract(net, (4,), batch_size=8, skip_compute=False).iloc[0]  # real values: counted as computed
    assert row["forward_flops"] >= 2 * 8 * 4


def test_scans_are_free_not_unsupported():
    class Cum(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).cumsum(-1)

    ops = per_op(Cum(), (4,), batch_size=2)
    assert ops.attrs["unsupported_ops"] == [] and "reduction" in set(ops.loc[ops["op"] == "aten.cumsum", "op_class"])


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 40), hidden=st.integers(1, 24), cin=st.integers(1, 4), k=st.sampled_from([1, 3]),
       optimizer=st.sampled_from([None, "sgd-momentum", "adam"]))
def test_random_stacks_rows_sum_to_totals_on_cpu_and_meta(batch, hidden, cin, k, optimizer):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(cin, hidden, k, padding=k // 2), nn.BatchNorm2d(hidden), nn.ReLU(), nn.Flatten(),
                        nn.Linear(hidden * 36, 5))
    total = extract(net, (cin, 6, 6), batch_size=max(batch, 2)).iloc[0]
    for device in ("cpu", "meta"):
        ops = per_op(net, (cin, 6, 6), batch_size=max(batch, 2), device=device, optimizer=optimizer)
        by = ops.groupby("phase", observed=False)["flops"].sum()
        assert (by["forward"], by["backward"], by["optimizer"]) == (total["forward_flops"], total["backward_flops"], 0)
        assert (ops["phase"] == "optimizer").any() == (optimizer is not None)
        assert (ops[["bytes_read", "bytes_written", "flops"]] >= 0).all().all()

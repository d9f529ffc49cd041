"""The twenty CM-DARE CNNs rebuilt in torch: exact trainable parameter and tensor counts (CATALOG.md §4)."""
from __future__ import annotations

import pytest
import torch

from perfmodel import datasets as ds
from perfmodel import zoo
from perfmodel._errors import UnknownNameError

REPORTED = ds.load_reported_cnns().set_index("model")


@pytest.mark.parametrize("model_id", zoo.list_models())
def test_exact_params_and_tensors_for_all_twenty(model_id):
    """CATALOG.md §4: trainable parameters and trainable tensors equal the data's `Number of Parameters`/`Number of Tensors`."""
    net = zoo.build(model_id, device="meta")
    trainable = [p for p in net.parameters() if p.requires_grad]
    assert sum(p.numel() for p in trainable) == REPORTED.loc[model_id, "n_params"]
    assert len(trainable) == REPORTED.loc[model_id, "n_trainable_tensors"]


def test_counts_agree_with_the_loaded_data():
    meta = ds.load_model_metadata().set_index("model")
    for m in zoo.list_models():
        net = zoo.build(m, device="meta")
        assert sum(p.numel() for p in net.parameters()) == meta.loc[m, "n_params"]


@pytest.mark.parametrize("model_id", ["resnet-15", "shake-shake-16", "shake-shake-small-32d"])
def test_forward_backward_shapes(model_id):
    torch.manual_seed(0)
    net = zoo.build(model_id)
    x = torch.randn(2, *zoo.INPUT_SHAPE)
    y = net(x)
    assert y.shape == (2, 10) and torch.isfinite(y).all()
    y.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.eval()
    with torch.no_grad():
        a, b = net(x), net(x)
    assert torch.equal(a, b)  # evaluation is deterministic (Shake-Shake α = 0.5)


def test_upstream_spellings_and_unknown_ids():
    assert sum(p.numel() for p in zoo.build("Shake Large", device="meta").parameters()) == 26204362
    with pytest.raises(UnknownNameError, match=r"Unknown model 'resnet-50'. Expected one of: resnet-15, resnet-32"):
        zoo.build("resnet-50")
    with pytest.raises(ValueError, match=r"num_hidden_layers must be 6 n \+ 2 with n ≥ 1 \(e.g. 26 or 32\); got 27"):
        zoo.CifarShakeShake(32, 27)
    with pytest.raises(ValueError, match=r"layer_sizes must be three positive block counts"):
        zoo.CifarResNet((2, 2))

"""The twenty CM-DARE CNNs rebuilt in torch: exact trainable parameter and tensor counts."""
from __future__ import annotations

import pytest
import torch

from perfmodel import datasets as ds
from perfmodel import zoo
from perfmodel._errors import UnknownNameError
from perfmodel.datasets.names import MODEL_IDS
from perfmodel.zoo.shake_shake import _Shortcut, shake_mix

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


def test_shake_mix_forward_and_backward_weights():
    """tensor2tensor's shake_shake_block: forward α = u₁/(u₁+u₂) per sample, an independent backward β (straight-through),
    1/2 each in evaluation."""
    torch.manual_seed(0)
    b1 = torch.randn(64, 3, 2, 2, requires_grad=True)
    b2 = torch.randn(64, 3, 2, 2, requires_grad=True)
    out = shake_mix(b1, b2, training=True)
    alpha = ((out - b2) / (b1 - b2)).detach()  # per-sample forward weight of branch 1
    assert torch.allclose(alpha, alpha[:, :1, :1, :1].expand_as(alpha), atol=1e-4)
    out.sum().backward()
    beta = b1.grad[:, 0, 0, 0]
    assert torch.allclose(b1.grad + b2.grad, torch.ones_like(b1.grad))
    assert torch.allclose(b1.grad, beta.view(-1, 1, 1, 1).expand_as(b1.grad))
    assert ((0 < beta) & (beta < 1)).all() and not torch.allclose(beta, alpha[:, 0, 0, 0], atol=1e-3)
    # u₁/(u₁+u₂) is not uniform: P(α < 1/4) = (1/4)/(2·3/4) = 1/6 (uniform: 1/4)
    alpha = shake_mix(torch.ones(20000, 1, 1, 1), torch.zeros(20000, 1, 1, 1), training=True)
    assert abs((alpha < 0.25).float().mean().item() - 1 / 6) < 0.01
    assert torch.equal(shake_mix(b1, b2, training=False), 0.5 * b1 + 0.5 * b2)


def test_shake_shake_skip_path_is_tensor2tensor_s():
    """shake_shake_skip_connection: path 1 = x[::s, ::s] → 1×1 conv; path 2 = x shifted by one pixel (pad bottom/right,
    crop top/left) then [::s, ::s] → 1×1 conv; concatenated, BN; no ReLU."""
    torch.manual_seed(0)
    sc = _Shortcut(2, 4, 2).eval()
    with torch.no_grad():
        for conv in (sc.conv1, sc.conv2):
            conv.weight.copy_(torch.eye(2).view(2, 2, 1, 1))
            conv.bias.zero_()
    x = torch.randn(1, 2, 4, 4)
    shifted = torch.zeros_like(x)
    shifted[..., :-1, :-1] = x[..., 1:, 1:]
    expected = torch.cat([x[..., ::2, ::2], shifted[..., ::2, ::2]], dim=1) / (1 + 1e-3) ** 0.5
    torch.testing.assert_close(sc(x), expected)
    bn = zoo.build("shake-shake-16").stem_bn
    assert (bn.eps, bn.momentum) == (1e-3, 0.01)  # tf.layers.batch_normalization defaults
    bn = zoo.build("resnet-15").stem_bn
    assert (bn.eps, bn.momentum) == (1e-5, 0.1)  # t2t resnet: decay 0.9, epsilon 1e-5


def test_build_on_a_device_and_dtype():
    net = zoo.build("resnet-15", dtype=torch.float64, num_classes=3)
    assert net.fc.out_features == 3 and all(p.dtype == torch.float64 for p in net.parameters())
    assert all(p.device.type == "meta" for p in zoo.build("shake-shake-big", device="meta").parameters())
    assert zoo.list_models() == MODEL_IDS and len(MODEL_IDS) == 20
    with pytest.raises(ValueError, match=r"hidden_size must be a positive multiple of 16 \(e.g. 32 or 96\); got 40"):
        zoo.CifarShakeShake(40, 26)

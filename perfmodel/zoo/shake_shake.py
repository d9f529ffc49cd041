"""CIFAR Shake-Shake networks of CM-DARE (tensor2tensor ``ShakeShake`` with ``shakeshake_small`` hyper-parameters).

Re-implemented in PyTorch from tensor2tensor's description (``models/shake_shake.py`` of CM-DARE's fork, matched to the
published parameter and tensor counts); the code is our own:

* an initial 3×3 convolution with 16 filters (with bias) + BN;
* three stages of n = (num_hidden_layers − 2)/6 blocks with ``hidden_size`` × (1, 2, 4) filters and strides 1/2/2;
* each block: two branches ReLU-conv3×3-BN-ReLU-conv3×3-BN (convolutions with bias), summed with the skip path;
  where the channel count changes the skip path is two average-pool(1×1, stride) + 1×1-conv paths to half the
  channels each (the second on the input shifted by one pixel: pad bottom/right, crop top/left), concatenated, + BN —
  no ReLU on the skip path; otherwise the identity;
* ReLU, global average pooling and a dense layer (tensor2tensor's class-label "top").

Branch mixing ("Shake-Shake-Batch" of tensor2tensor, :func:`shake_mix`): in training, per sample, the forward pass
uses ``α = u₁/(u₁+u₂)`` and the backward pass an independent ``β = v₁/(v₁+v₂)`` (u, v uniform on [0, 1)), by a
straight-through ``b·β + stop_grad(b·α − b·β)``; in evaluation both branches are scaled by 1/2. BatchNorm uses
TensorFlow's ``tf.layers.batch_normalization`` defaults (ε = 1e-3, decay 0.99 → torch ``momentum=0.01``).

Trainable tensors: 4 + 16·3n + 6·(#projections) + 2; parameters match CM-DARE's ``Number of Parameters`` exactly
(tested for all eight Shake-Shakes).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CifarShakeShake", "shake_mix"]

#: tf.layers.batch_normalization defaults: epsilon 1e-3, decay 0.99 (= torch momentum 0.01).
_BN = dict(eps=1e-3, momentum=0.01)


def _bn(ch: int, factory: dict) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(ch, **_BN, **factory)


def _normalised_uniform(n: int, like: torch.Tensor) -> torch.Tensor:
    """Per-sample weight ``u₁/(u₁+u₂)`` of the first of two branches, shape (n, 1, 1, 1)."""
    u = torch.rand(2, n, 1, 1, 1, dtype=like.dtype, device=like.device)
    return u[0] / (u[0] + u[1])


class _ShakeShake(torch.autograd.Function):
    """``α·b1 + (1−α)·b2`` forward; gradients ``β·g`` and ``(1−β)·g`` backward."""

    @staticmethod
    def forward(ctx, b1, b2, alpha, beta):
        ctx.save_for_backward(beta)
        return alpha * b1 + (1 - alpha) * b2

    @staticmethod
    def backward(ctx, grad):
        (beta,) = ctx.saved_tensors
        return beta * grad, (1 - beta) * grad, None, None


def shake_mix(b1: torch.Tensor, b2: torch.Tensor, training: bool) -> torch.Tensor:
    """Mix the two branch outputs of a Shake-Shake block (tensor2tensor's ``shake_shake_block``, 2 branches).

    Parameters
    ----------
    b1, b2 : Tensor
        Branch outputs, shape (N, C, H, W).
    training : bool
        Random per-sample weights (forward α, an independent backward β, each ``u₁/(u₁+u₂)``); otherwise 1/2 each.

    Returns
    -------
    Tensor
        ``α·b1 + (1−α)·b2`` in value, with gradients ``β`` and ``1−β`` to the branches in training (tensor2tensor's
        straight-through ``b·β + stop_gradient(b·α − b·β)``).
    """
    if not training:
        return 0.5 * b1 + 0.5 * b2
    alpha = _normalised_uniform(b1.shape[0], b1)
    beta = _normalised_uniform(b1.shape[0], b1)
    return _ShakeShake.apply(b1, b2, alpha, beta)


class _Branch(nn.Sequential):
    def __init__(self, in_ch: int, out_ch: int, stride: int, factory: dict):
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=True, **factory),
            _bn(out_ch, factory),
            nn.ReLU(),
            nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=True, **factory),
            _bn(out_ch, factory),
        )


class _Shortcut(nn.Module):
    """Two average-pool + 1×1-conv paths to half the output channels each, concatenated, + BN."""

    def __init__(self, in_ch: int, out_ch: int, stride: int, factory: dict | None = None):
        super().__init__()
        factory = factory or {}
        self.stride = stride
        self.conv1 = nn.Conv2d(in_ch, out_ch // 2, 1, bias=True, **factory)
        self.conv2 = nn.Conv2d(in_ch, out_ch // 2, 1, bias=True, **factory)
        self.bn = _bn(2 * (out_ch // 2), factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.avg_pool2d(x, 1, self.stride)
        b = F.avg_pool2d(F.pad(x, (-1, 1, -1, 1)), 1, self.stride)  # shift by one pixel: crop top/left, pad bottom/right
        return self.bn(torch.cat([self.conv1(a), self.conv2(b)], dim=1))


class _ShakeBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int, factory: dict):
        super().__init__()
        self.branch1 = _Branch(in_ch, out_ch, stride, factory)
        self.branch2 = _Branch(in_ch, out_ch, stride, factory)
        self.shortcut = _Shortcut(in_ch, out_ch, stride, factory) if in_ch != out_ch else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = shake_mix(self.branch1(x), self.branch2(x), self.training)
        skip = self.shortcut(x) if self.shortcut is not None else x
        return mixed + skip


class CifarShakeShake(nn.Module):
    """Shake-Shake (2 branches, no concat) for 32×32 CIFAR images.

    Parameters
    ----------
    hidden_size : int
        Width of the first stage (stages use 1×, 2×, 4×): 16, 32, 48, 64, 80, 96 in CM-DARE; a multiple of 16.
    num_hidden_layers : int
        Depth 6 n + 2 (26 → n = 4 blocks per stage, 32 → n = 5).
    num_classes : int
        Output classes.
    device, dtype : optional
        Where and in which dtype to create the parameters (torch's factory keywords; ``device="meta"`` allocates
        nothing).
    """

    def __init__(self, hidden_size: int = 32, num_hidden_layers: int = 26, num_classes: int = 10, *, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        if (num_hidden_layers - 2) % 6 or num_hidden_layers < 8:
            raise ValueError(f"num_hidden_layers must be 6 n + 2 with n ≥ 1 (e.g. 26 or 32); got {num_hidden_layers}.")
        if hidden_size < 16 or hidden_size % 16:
            raise ValueError(f"hidden_size must be a positive multiple of 16 (e.g. 32 or 96); got {hidden_size}.")
        n = (num_hidden_layers - 2) // 6
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=True, **factory)
        self.stem_bn = _bn(16, factory)
        stages, in_ch = [], 16
        for mult, stride in ((1, 1), (2, 2), (4, 2)):
            out_ch = hidden_size * mult
            blocks = [_ShakeBlock(in_ch, out_ch, stride, factory)] + [_ShakeBlock(out_ch, out_ch, 1, factory) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            in_ch = out_ch
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_bn(self.stem(x))
        x = torch.relu(self.stages(x))
        return self.fc(torch.flatten(self.pool(x), 1))

"""CIFAR Shake-Shake networks of CM-DARE (tensor2tensor ``ShakeShake`` with ``shakeshake_small`` hyper-parameters).

Re-implemented in PyTorch from the architecture description (CATALOG.md §4): an initial 3×3 convolution with 16 filters
(with bias) + BN; three stages of n = (num_hidden_layers − 2)/6 blocks with ``hidden_size`` × (1, 2, 4) filters and
strides 1/2/2; each block has two branches ReLU-conv3×3-BN-ReLU-conv3×3-BN (convolutions with bias) mixed by a random
per-sample α in training (0.5 in evaluation), and, where the channel count changes, a shortcut of two
average-pool + 1×1 convolution paths to half the channels each (the second shifted by one pixel), concatenated, + BN;
then ReLU, global average pooling and a dense layer.

Trainable tensors: 4 + 16·3n + 6·(#projections) + 2; parameters match CM-DARE's ``Number of Parameters`` exactly
(tested for all eight Shake-Shakes).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CifarShakeShake"]


class _Branch(nn.Sequential):
    def __init__(self, in_ch: int, out_ch: int, stride: int):
        super().__init__(
            nn.ReLU(),
            nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=True),
            nn.BatchNorm2d(out_ch),
            nn.ReLU(),
            nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=True),
            nn.BatchNorm2d(out_ch),
        )


class _Shortcut(nn.Module):
    """Two average-pool + 1×1-conv paths to half the output channels, concatenated, + BN."""

    def __init__(self, in_ch: int, out_ch: int, stride: int):
        super().__init__()
        self.stride = stride
        self.conv1 = nn.Conv2d(in_ch, out_ch // 2, 1, bias=True)
        self.conv2 = nn.Conv2d(in_ch, out_ch - out_ch // 2, 1, bias=True)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(x)
        a = F.avg_pool2d(x, 1, self.stride)
        b = F.avg_pool2d(F.pad(x, (-1, 1, -1, 1)), 1, self.stride)  # shift by one pixel
        return self.bn(torch.cat([self.conv1(a), self.conv2(b)], dim=1))


class _ShakeBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int):
        super().__init__()
        self.branch1 = _Branch(in_ch, out_ch, stride)
        self.branch2 = _Branch(in_ch, out_ch, stride)
        self.shortcut = _Shortcut(in_ch, out_ch, stride) if in_ch != out_ch else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b1, b2 = self.branch1(x), self.branch2(x)
        if self.training:
            alpha = torch.rand(x.shape[0], 1, 1, 1, dtype=b1.dtype, device=b1.device)
        else:
            alpha = torch.full((1, 1, 1, 1), 0.5, dtype=b1.dtype, device=b1.device)
        mixed = alpha * b1 + (1 - alpha) * b2
        skip = self.shortcut(x) if self.shortcut is not None else x
        return mixed + skip


class CifarShakeShake(nn.Module):
    """Shake-Shake (2 branches, no concat) for 32×32 CIFAR images.

    Parameters
    ----------
    hidden_size : int
        Width of the first stage (stages use 1×, 2×, 4×): 16, 32, 48, 64, 80, 96 in CM-DARE.
    num_hidden_layers : int
        Depth 6 n + 2 (26 → n = 4 blocks per stage, 32 → n = 5).
    num_classes : int
        Output classes.
    """

    def __init__(self, hidden_size: int = 32, num_hidden_layers: int = 26, num_classes: int = 10):
        super().__init__()
        if (num_hidden_layers - 2) % 6 or num_hidden_layers < 8:
            raise ValueError(f"num_hidden_layers must be 6 n + 2 with n ≥ 1 (e.g. 26 or 32); got {num_hidden_layers}.")
        n = (num_hidden_layers - 2) // 6
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=True)
        self.stem_bn = nn.BatchNorm2d(16)
        stages, in_ch = [], 16
        for mult, stride in ((1, 1), (2, 2), (4, 2)):
            out_ch = hidden_size * mult
            blocks = [_ShakeBlock(in_ch, out_ch, stride)] + [_ShakeBlock(out_ch, out_ch, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            in_ch = out_ch
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_bn(self.stem(x))
        x = torch.relu(self.stages(x))
        return self.fc(torch.flatten(self.pool(x), 1))

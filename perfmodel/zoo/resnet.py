"""CIFAR ResNets of CM-DARE (tensor2tensor ``Resnet`` with ``resnet_cifar_15`` hyper-parameters).

Re-implemented in PyTorch from the architecture description: pre-activation residual blocks
(BN-ReLU-conv3×3, BN-ReLU-conv3×3), ``filter_sizes = [16, 32, 64, 128]``: an initial 7×7 stride-1 convolution with 16
filters and no bias followed by BN-ReLU, three block layers with 32/64/128 filters and strides 1/2/2 whose first block
has a 1×1 projection shortcut (+ BN) applied to the block's pre-activated input, no final BN, global average pooling
and a dense 128→10 layer. Convolutions have no bias. tensor2tensor's ``conv2d_fixed_padding`` (explicit symmetric
padding, then VALID, for strided convolutions; SAME otherwise) gives the same shapes as torch's ``padding=k // 2``;
its BatchNorm (decay 0.9, ε = 1e-5) is torch's default (``momentum=0.1``, ``eps=1e-5``).

Trainable tensors: 14 + 6·(a + b + c) for ``layer_sizes = (a, b, c)``; parameters match CM-DARE's
``Number of Parameters`` exactly (tested for all ten ResNets).
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["CifarResNet"]


class _PreActBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int, project: bool, factory: dict):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_ch, **factory)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False, **factory)
        self.bn2 = nn.BatchNorm2d(out_ch, **factory)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=False, **factory)
        self.projection = (
            nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False, **factory), nn.BatchNorm2d(out_ch, **factory))
            if project else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = torch.relu(self.bn1(x))
        shortcut = self.projection(pre) if self.projection is not None else x
        out = self.conv1(pre)
        out = self.conv2(torch.relu(self.bn2(out)))
        return out + shortcut


class CifarResNet(nn.Module):
    """Pre-activation CIFAR ResNet with three block layers.

    Parameters
    ----------
    layer_sizes : tuple of 3 ints
        Residual blocks per layer (ResNet-15: (2, 2, 2); ResNet-32: (5, 5, 5)).
    num_classes : int
        Output classes (10 for CIFAR-10).
    filter_sizes : tuple of 4 ints
        Initial filters and the filters of the three layers.
    device, dtype : optional
        Where and in which dtype to create the parameters (torch's factory keywords; ``device="meta"`` allocates
        nothing).
    """

    def __init__(self, layer_sizes=(2, 2, 2), num_classes: int = 10, filter_sizes=(16, 32, 64, 128), *, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        if len(layer_sizes) != 3 or any(int(n) < 1 for n in layer_sizes):
            raise ValueError(f"layer_sizes must be three positive block counts, e.g. (2, 2, 2); got {layer_sizes!r}.")
        f0, *fs = filter_sizes
        self.stem = nn.Conv2d(3, f0, 7, stride=1, padding=3, bias=False, **factory)
        self.stem_bn = nn.BatchNorm2d(f0, **factory)
        layers = []
        in_ch = f0
        for n, out_ch, stride in zip(layer_sizes, fs, (1, 2, 2)):
            blocks = [_PreActBlock(in_ch, out_ch, stride, project=True, factory=factory)]
            blocks += [_PreActBlock(out_ch, out_ch, 1, project=False, factory=factory) for _ in range(int(n) - 1)]
            layers.append(nn.Sequential(*blocks))
            in_ch = out_ch
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem_bn(self.stem(x)))
        x = self.layers(x)
        return self.fc(torch.flatten(self.pool(x), 1))

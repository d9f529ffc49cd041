"""Benchmark of perfmodel.features.extract (issue 3 targets).

Run: ``python benchmarks/bench_features.py`` (prints a table; ``--quick`` skips the slow FlopCounterMode baseline).

Targets: all twenty zoo CNNs (forward + backward features) in < 5 s wall in one warm process; ≥ 10× faster than
torch's FlopCounterMode on a real batch of 128; peak memory < 1 GB. Also: a ResNet-50-sized model at 224×224 and the
meta-device mode on a model too large for this machine's memory.
"""
from __future__ import annotations

import argparse
import platform
import resource
import time

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from perfmodel import zoo
from perfmodel.features import extract


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.down = None if (stride == 1 and cin == cout) else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    """ResNet-50 (v1.5 strides) for 224×224 ImageNet: 25.6 M parameters, ≈4.1 GMACs per image."""

    def __init__(self, num_classes=1000):
        super().__init__()
        layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = 4 * width
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def huge_mlp():
    """4 × Linear(65536, 65536): 17.2 G parameters, 68.7 GB in float32 — only the meta device can hold it."""
    with torch.device("meta"):
        return nn.Sequential(*[nn.Linear(65536, 65536) for _ in range(4)])


def flopcounter_real(model_id, batch):
    torch.manual_seed(0)
    net = zoo.build(model_id)
    x = torch.randn(batch, *zoo.INPUT_SHAPE)
    t = time.perf_counter()
    with FlopCounterMode(display=False) as f:
        y = net(x)
        y.sum().backward()
    return time.perf_counter() - t, f.get_total_flops()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the FlopCounterMode batch-128 baseline")
    args = ap.parse_args()
    torch.set_num_threads(2)
    print(f"python {platform.python_version()}, torch {torch.__version__}, threads {torch.get_num_threads()}, {platform.machine()}")
    extract("resnet-15", zoo.INPUT_SHAPE)  # warm-up (first dispatch of every op)

    t0 = time.perf_counter()
    per = {}
    for m in zoo.list_models():
        t = time.perf_counter()
        extract(m, zoo.INPUT_SHAPE, batch_size=1)
        per[m] = time.perf_counter() - t
    total = time.perf_counter() - t0
    print(f"all 20 zoo CNNs, batch 1:   {total:6.2f} s  (slowest {max(per, key=per.get)} {max(per.values()):.2f} s)  target < 5 s")
    t = time.perf_counter()
    for m in zoo.list_models():
        extract(m, zoo.INPUT_SHAPE, batch_size=128)
    print(f"all 20 zoo CNNs, batch 128: {time.perf_counter() - t:6.2f} s  (counting at batch 1 and 2, extrapolated exactly)")

    if not args.quick:
        tot_ref = tot_ours = 0.0
        for m in zoo.list_models():
            t_ref, flops = flopcounter_real(m, 128)
            t = time.perf_counter()
            row = extract(m, zoo.INPUT_SHAPE, batch_size=128).iloc[0]
            t_ours = time.perf_counter() - t
            assert row["train_step_flops"] == flops
            tot_ref += t_ref
            tot_ours += t_ours
            print(f"{m:22s} batch 128: FlopCounterMode on real tensors {t_ref:6.2f} s, perfmodel {t_ours:5.2f} s -> {t_ref / t_ours:5.1f}x (same FLOPs)")
        print(f"all 20 at batch 128: FlopCounterMode {tot_ref:6.1f} s, perfmodel {tot_ours:5.2f} s -> {tot_ref / tot_ours:5.1f}x")

    net = ResNet50()
    t = time.perf_counter()
    row = extract(net, (3, 224, 224), batch_size=256).iloc[0]
    print(f"ResNet-50 224x224 batch 256: {time.perf_counter() - t:5.2f} s, {row['params'] / 1e6:.1f} M params, "
          f"{row['forward_macs'] / 256 / 1e9:.2f} GMACs/image, train step {row['train_step_flops'] / 1e12:.2f} TFLOPs")
    t = time.perf_counter()
    row = extract(huge_mlp(), (65536,), batch_size=1024, device="meta").iloc[0]
    print(f"meta device, 4x Linear(65536,65536) ({row['param_bytes'] / 1e9:.1f} GB of float32), batch 1024: {time.perf_counter() - t:5.2f} s, "
          f"train step {row['train_step_flops'] / 1e15:.1f} PFLOPs")
    t = time.perf_counter()
    extract("shake-shake-big", zoo.INPUT_SHAPE, batch_size=128, device="meta")
    print(f"meta device, shake-shake-big batch 128: {time.perf_counter() - t:5.2f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:.0f} MiB (includes the FlopCounterMode baseline unless --quick)  target < 1 GB")


if __name__ == "__main__":
    main()

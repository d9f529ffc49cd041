"""Benchmark of perfmodel.features.extract.

Run: ``python benchmarks/bench_features.py`` (prints a table; ``--quick`` skips the slow FlopCounterMode baseline).
Peak memory is the process's maximum resident set size (``resource.getrusage``), read before the baseline runs.

Targets: all twenty zoo CNNs (forward + backward features) in < 5 s wall in one warm process; ≥ 10× faster than
torch's FlopCounterMode on a real batch of 128; peak memory < 1 GB. Also: a ResNet-50-sized model at 224×224 and the
meta-device mode on a model too large for this machine's memory, and GPT-2-large (774 M parameters, built on meta from
its config by ``perfmodel.zoo.hf``) counted op by op at batch 1 and 32 in a fresh process: target a few seconds and
< 1 GB peak RSS (the CPU path took 36 s and 10.5 GiB at batch 1).
"""
from __future__ import annotations

import argparse
import platform
import resource
import subprocess
import sys
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


def huge_mlp(width=65536, depth=8):
    """8 × Linear(65536, 65536): 34.4 G parameters, 137 GB in float32 — only the meta device can hold it."""
    with torch.device("meta"):
        return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])


def flopcounter_real(model_id, batch):
    """torch's FlopCounterMode on a real training step (forward + backward) at ``batch``: (seconds, FLOPs)."""
    torch.manual_seed(0)
    net = zoo.build(model_id)
    x = torch.randn(batch, *zoo.INPUT_SHAPE)
    t = time.perf_counter()
    with FlopCounterMode(display=False) as f:
        net(x).sum().backward()
    return time.perf_counter() - t, f.get_total_flops()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


_FIRST_CALL = """
import sys, time, torch
from perfmodel.features import extract
t = time.perf_counter()
extract("resnet-15", (3, 32, 32))
print(time.perf_counter() - t, "torch._dynamo" in sys.modules)
"""


_GPT2_LARGE = """
import resource, sys, time, warnings
t0 = time.perf_counter()
import torch, transformers
from perfmodel.features import extract
from perfmodel.zoo import hf
warnings.simplefilter("ignore")
t1 = time.perf_counter()
step = hf.build(transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20))
t2 = time.perf_counter()
batch = int(sys.argv[1])
kw = dict(batch_size=batch, input_dtype=torch.long, input_high=50257)
ops = extract(step, (1024,), per_op=True, optimizer="adam", **kw)
t3 = time.perf_counter()
row = extract(step, (1024,), **kw).iloc[0]
assert ops.loc[ops["phase"] != "optimizer", "flops"].sum() == row["train_step_flops"]
print(t1 - t0, t2 - t1, t3 - t2, len(ops), ops.attrs["device"], row["train_step_flops"],
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def gpt2_large_fresh_process(batch: int):
    """(import s, build s, per-op extraction s, rows, device, train-step FLOPs, peak RSS MiB) of GPT-2-large, new process."""
    out = subprocess.run([sys.executable, "-c", _GPT2_LARGE, str(batch)], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3]), out[4], int(out[5]), float(out[6])


def first_extraction_fresh_process() -> tuple[float, bool]:
    """Seconds of the first ``extract`` in a new process (imports excluded), and whether it imported torch._dynamo."""
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), out[1] == "True"


def zoo_batch1_seconds() -> float:
    t = time.perf_counter()
    for m in zoo.list_models():
        extract(m, zoo.INPUT_SHAPE)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the FlopCounterMode batch-128 baseline (minutes)")
    args = ap.parse_args()
    print(f"python {platform.python_version()}, torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.machine()}")
    rows = []

    def report(what, seconds, note="", target=""):
        rows.append((what, seconds, note, target))
        print(f"{what:52s} {seconds:8.2f} s  {note:58s} {target}", flush=True)

    firsts = [first_extraction_fresh_process() for _ in range(3)]
    report("first extraction in a fresh process (median of 3)", sorted(f for f, _ in firsts)[1],
           f"imports torch._dynamo: {firsts[0][1]}", "was 1.0-1.6 s")
    t_warm, _ = timed(lambda: extract("resnet-15", zoo.INPUT_SHAPE))  # first dispatch of every op
    report("warm-up (first call: resnet-15, batch 1)", t_warm)
    report("all 20 zoo CNNs, batch 1 (extract pins 1 thread)", min(zoo_batch1_seconds() for _ in range(3)),
           f"caller's setting: {torch.get_num_threads()} threads")
    for batch in (1, 128):
        per = {}
        t0 = time.perf_counter()
        for m in zoo.list_models():
            per[m], _ = timed(lambda m=m: extract(m, zoo.INPUT_SHAPE, batch_size=batch))
        slow = max(per, key=per.get)
        report(f"all 20 zoo CNNs, forward + backward, batch {batch}", time.perf_counter() - t0,
               f"slowest {slow} {per[slow]:.2f} s", "target < 5 s")
    t, _ = timed(lambda: [extract(m, zoo.INPUT_SHAPE, batch_size=128, per_layer=True) for m in zoo.list_models()])
    report("all 20 zoo CNNs, per layer, batch 128", t)
    t, row = timed(lambda: extract(ResNet50(), (3, 224, 224), batch_size=256).iloc[0])
    report("ResNet-50 at 224x224, batch 256 (cpu, incl. building it)", t,
           f"{row['params'] / 1e6:.1f} M params, {row['forward_macs'] / 256 / 1e9:.2f} GMACs/img, {row['train_step_flops'] / 1e12:.2f} TFLOP/step")
    t, row = timed(lambda: extract(huge_mlp(), (65536,), batch_size=1024, device="meta").iloc[0])
    report("meta: 8 x Linear(65536, 65536), batch 1024", t,
           f"{row['params'] / 1e9:.1f} G params = {row['param_bytes'] / 1e9:.0f} GB fp32, {row['train_step_flops'] / 1e15:.2f} PFLOP/step")
    t, _ = timed(lambda: extract("shake-shake-big", zoo.INPUT_SHAPE, batch_size=128, device="meta"))
    report("meta: shake-shake-big, batch 128", t)
    try:
        import transformers  # noqa: F401  (the optional extra perfmodel[hf])
    except ImportError:
        print("GPT-2-large: skipped (pip install 'perfmodel[hf]')")
    else:
        for batch in (1, 32):
            imp, build, t, n, dev, flops, rss = gpt2_large_fresh_process(batch)
            report(f"GPT-2-large per op + Adam, batch {batch} ({dev}, fresh process)", t,
                   f"build {build:.1f} s, {n} ops, {flops / 1e12:.1f} TFLOP, peak RSS {rss:.0f} MiB", "target few s, < 1 GB")
    ours_peak = peak_rss_mib()
    print(f"peak RSS after all of the above: {ours_peak:.0f} MiB (target < 1 GB)", flush=True)

    if not args.quick:
        tot_ref = tot_ours = 0.0
        for m in zoo.list_models():
            t_ref, flops = flopcounter_real(m, 128)
            t_ours, row = timed(lambda m=m: extract(m, zoo.INPUT_SHAPE, batch_size=128).iloc[0])
            assert row["train_step_flops"] == flops, m
            tot_ref += t_ref
            tot_ours += t_ours
            print(f"  {m:22s} batch 128: FlopCounterMode on real tensors {t_ref:6.2f} s, perfmodel {t_ours:5.2f} s "
                  f"-> {t_ref / t_ours:6.1f}x (same FLOPs)", flush=True)
        report("FlopCounterMode, real batch 128, all 20", tot_ref, f"perfmodel {tot_ours:.2f} s -> {tot_ref / tot_ours:.0f}x faster, equal FLOPs",
               "target >= 10x")
        print(f"peak RSS incl. the FlopCounterMode baseline: {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()

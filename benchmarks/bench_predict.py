"""Benchmark of ``pm.predict_step_time`` (the per-operator predictor for any model and GPU).

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_predict.py``. Each measurement runs in a fresh process
(import time included, as a user feels it) and prints its wall time and peak RSS:

* ``fit``: the first call ever — fits the operator model and its five leave-one-GPU-out calibration fits on NeuSight's
  microbenchmarks and caches them on disk (a private, empty cache folder is used here);
* ``gpt2-large``: one GPT-2-large training step (batch 1, sequence 1024) on H100 with the cached model
  (targets: < 3 s and < 1 GB);
* ``all labels``: the 26 NeuSight benchmark labels (target < 60 s).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

SNIPPETS = {
    "fit": "import perfmodel.models.op_latency as o; o.fitted_bundle()",
    "gpt2-large": ("import perfmodel as pm; from transformers import GPT2Config; "
                   "pm.predict_step_time(GPT2Config(n_layer=36, n_embd=1280, n_head=20), 'H100', input_shape=(1024,), "
                   "batch_size=1, optimizer=None)"),
    "all labels": "import perfmodel as pm; pm.figures.neusight_benchmark_data()",
}

WRAP = """
import resource, time, warnings
warnings.simplefilter("ignore")
t = time.perf_counter()
{code}
print(f"{{time.perf_counter() - t:.2f}} {{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}}")
"""


def main() -> int:
    cache = tempfile.mkdtemp(prefix="perfmodel-bench-")
    env = {**os.environ, "PERFMODEL_CACHE": cache}
    print(f"{'case':12s} {'wall s (after imports start)':>28s} {'peak RSS MiB':>13s} {'process s':>10s}")
    for name, code in SNIPPETS.items():
        import time

        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", WRAP.format(code=code)], env=env, capture_output=True, text=True)
        total = time.perf_counter() - t
        if out.returncode != 0:
            print(f"{name}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            return 1
        wall, rss = out.stdout.split()[-2:]
        print(f"{name:12s} {float(wall):28.2f} {float(rss):13.0f} {total:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

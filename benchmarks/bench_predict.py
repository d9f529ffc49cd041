"""Benchmark of ``pm.predict_step_time`` (the per-operator predictor for any model and GPU).

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_predict.py [--cache DIR] [--only CASE ...]``. Each
case runs in a fresh process and prints wall times and peak RSS (``ru_maxrss``, MiB):

* ``load``: reading the operator model shipped in the package (``fitted_bundle()``: the pinned artifact, its sha256
  checked, no fit) in a fresh process;
* ``gpt2-large cold``: one GPT-2-large training step (batch 1, sequence 1024, forward + backward) on H100 in a fresh
  process with an empty cache folder, as a new user's first ``python -c`` feels it: ``process s`` is the whole process
  (interpreter start and imports of perfmodel, torch and transformers included), ``call s`` the ``predict_step_time``
  call alone. Goal: ≤ 5 s on an idle machine — nothing is fitted any more;
* ``gpt2-large warm``: the same call in a process that has already imported perfmodel, torch and transformers and
  loaded the operator model (``perfmodel.step.op_latency.default_op_model()``): ``call s`` is the first call in that
  process (it still imports transformers' GPT-2 modelling code), ``again s`` a second identical call; ``RSS before``
  is the process before the first call, ``peak RSS`` the peak after both. Goal: < 3 s and < 1 GB (1024 MiB);
* ``all labels``: the 26 NeuSight benchmark labels (goal < 60 s).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

GPT2_LARGE = ("pm.predict_step_time(GPT2Config(n_layer=36, n_embd=1280, n_head=20), 'H100', input_shape=(1024,), "
              "batch_size=1, optimizer=None)")

PRELUDE = """
import resource, time, warnings
warnings.simplefilter("ignore")
def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20
def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

CASES = {
    "load": PRELUDE + """
t = time.perf_counter()
import perfmodel.step.op_latency as o; o.fitted_bundle()
print("RESULT", f"call={time.perf_counter() - t:.2f}", f"peak={peak_mib():.0f}")
""",
    "gpt2-large cold": PRELUDE + f"""
t = time.perf_counter()
import perfmodel as pm
from transformers import GPT2Config
c = time.perf_counter()
{GPT2_LARGE}
print("RESULT", f"call={{time.perf_counter() - c:.2f}}", f"peak={{peak_mib():.0f}}")
""",
    "gpt2-large warm": PRELUDE + f"""
import perfmodel as pm, torch, transformers
from transformers import GPT2Config
import perfmodel.step.op_latency as o
o.default_op_model()
before = rss_mib()
c = time.perf_counter()
{GPT2_LARGE}
first = time.perf_counter() - c
c = time.perf_counter()
{GPT2_LARGE}
again = time.perf_counter() - c
print("RESULT", f"call={{first:.2f}}", f"again={{again:.2f}}", f"before={{before:.0f}}", f"peak={{peak_mib():.0f}}")
""",
    "all labels": PRELUDE + """
t = time.perf_counter()
import perfmodel as pm; pm.figures.neusight_benchmark_data()
print("RESULT", f"call={time.perf_counter() - t:.2f}", f"peak={peak_mib():.0f}")
""",
}


def run_case(code: str, env: dict) -> dict:
    """Run ``code`` in a fresh interpreter; its RESULT fields plus ``process`` (the whole process, seconds)."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    total = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    line = next(ln for ln in reversed(out.stdout.splitlines()) if ln.startswith("RESULT"))
    fields = dict(kv.split("=") for kv in line.split()[1:])
    return {"process": total, **{k: float(v) for k, v in fields.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", help="PERFMODEL_CACHE to use (default: a new empty folder)")
    parser.add_argument("--only", nargs="+", choices=list(CASES), help="cases to run (default: all)")
    args = parser.parse_args(argv)
    cache = args.cache or tempfile.mkdtemp(prefix="perfmodel-bench-")
    env = {**os.environ, "PERFMODEL_CACHE": cache}
    cases = args.only or list(CASES)
    print(f"{'case':16s} {'process s':>9s} {'call s':>7s} {'again s':>8s} {'RSS before MiB':>15s} {'peak RSS MiB':>13s}")
    for name in cases:
        try:
            r = run_case(CASES[name], env)
        except RuntimeError as exc:
            print(f"{name}: failed\n{exc}", file=sys.stderr)
            return 1
        again = f"{r['again']:8.2f}" if "again" in r else f"{'':8s}"
        before = f"{r['before']:15.0f}" if "before" in r else f"{'':15s}"
        print(f"{name:16s} {r['process']:9.2f} {r['call']:7.2f} {again} {before} {r['peak']:13.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of ``perfmodel reproduce``, of the data layer's per-process cache, of import time and of the planner at scale.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_reproduce.py [--out DIR] [--no-figures] [--jobs N]
[--plan-workers N]``.
Prints

* the import time of ``perfmodel.planning`` (``python -X importtime``, a fresh process: cumulative µs of the package);
* the total wall time of the reproduction (import included), the time per item sorted (what dominates), the number of
  upstream files read and hash-checked (each file once per process with the frame cache), and the split between
  computing numbers and drawing figures (a second run with ``figures=False``);
* ``plan(..., max_workers=N)`` wall time and rows (default 10000: 120000 candidates; this took 3.5 min and then died
  building 120000×120000 arrays in the Pareto front before the front became O(n log n)).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import warnings

t_start = time.perf_counter()


def import_time_us(module: str) -> int:
    """Cumulative import time (µs) of ``module`` in a fresh interpreter (``-X importtime``)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, check=True)
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", line)
        if m and m.group(2) == module:
            return int(m.group(1))
    raise RuntimeError(f"no importtime line for {module}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None, help="output folder (default: a temporary folder)")
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--plan-workers", type=int, default=10000, help="max_workers of the planner benchmark (0: skip)")
    ap.add_argument("--jobs", type=int, default=None, help="reproduce's worker processes (default: the CPUs, at most 4; 1: "
                                                           "in this process, which also gives the time per item without "
                                                           "contention)")
    args = ap.parse_args()

    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}; data: {os.environ.get('PERFMODEL_DATA', 'cache')}")
    imp = sorted(import_time_us("perfmodel.planning") for _ in range(3))[1]
    print(f"import perfmodel.planning (fresh process, median of 3): {imp / 1e6:.2f} s")

    from perfmodel.datasets import _registry
    from perfmodel.reproduce import reproduce

    reads = []
    real = _registry.read_bytes
    _registry.read_bytes = lambda name: reads.append(name) or real(name)
    t_import = time.perf_counter() - t_start
    out = args.out or tempfile.mkdtemp(prefix="perfmodel-bench-")
    t0 = time.perf_counter()
    res = reproduce(out, figures=not args.no_figures, progress=False, jobs=args.jobs)
    wall = time.perf_counter() - t0
    _registry.read_bytes = real
    print(f"import {t_import:6.2f} s   reproduce{' --no-figures' if args.no_figures else ''} {wall:6.2f} s   total {t_import + wall:6.2f} s"
          f"   (target < 90 s)   ok={res.ok}")
    print(f"{len(res.seconds)} items, {len(res.numbers)} numbers, {sum(len(v) for v in res.figures.values())} figures -> {out}")
    print(f"upstream files read and hash-checked: {len(reads)} reads of {len(set(reads))} distinct files")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print("\nslowest items (s):")
    for item, s in sorted(res.seconds.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {item:34s} {s:6.2f}")
    if not args.no_figures:
        t1 = time.perf_counter()
        reproduce(tempfile.mkdtemp(prefix="perfmodel-bench-nofig-"), figures=False, progress=False, jobs=args.jobs)
        numbers_only = time.perf_counter() - t1
        caches = "warm caches" if args.jobs == 1 else "fresh worker processes: cold caches"
        print(f"\nnumbers only (second run, {caches}): {numbers_only:.2f} s; figures ≈ {wall - numbers_only:.2f} s of the first run")
    if args.plan_workers:
        from perfmodel.planning import plan

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t2 = time.perf_counter()
            p = plan("resnet-32", max_workers=args.plan_workers)
            dt = time.perf_counter() - t2
        print(f"\nplan('resnet-32', max_workers={args.plan_workers}): {dt:.2f} s, {len(p)} candidates, {int(p['pareto'].sum())} on the front")


if __name__ == "__main__":
    main()

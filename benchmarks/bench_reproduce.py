"""Benchmark of ``perfmodel reproduce`` (issue 7 target: the whole reproduction under 90 s once the data is cached).

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_reproduce.py [--out DIR] [--no-figures]``.
Prints the total wall time (import included), the time per item sorted (what dominates) and the split between
computing numbers and drawing figures (a second run with ``figures=False``).
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time

t_start = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=None, help="output folder (default: a temporary folder)")
    ap.add_argument("--no-figures", action="store_true")
    args = ap.parse_args()

    from perfmodel.reproduce import reproduce

    t_import = time.perf_counter() - t_start
    out = args.out or tempfile.mkdtemp(prefix="perfmodel-bench-")
    t0 = time.perf_counter()
    res = reproduce(out, figures=not args.no_figures, progress=False)
    wall = time.perf_counter() - t0
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}; data: {os.environ.get('PERFMODEL_DATA', 'cache')}")
    print(f"import {t_import:6.2f} s   reproduce {wall:6.2f} s   total {t_import + wall:6.2f} s   (target < 90 s)   ok={res.ok}")
    print(f"{len(res.seconds)} items, {len(res.numbers)} numbers, {sum(len(v) for v in res.figures.values())} figures -> {out}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print("\nslowest items (s):")
    for item, s in sorted(res.seconds.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {item:34s} {s:6.2f}")
    if not args.no_figures:
        t1 = time.perf_counter()
        reproduce(tempfile.mkdtemp(prefix="perfmodel-bench-nofig-"), figures=False, progress=False)
        numbers_only = time.perf_counter() - t1
        print(f"\nnumbers only (second run, warm caches): {numbers_only:.2f} s; figures ≈ {wall - numbers_only:.2f} s of the first run")


if __name__ == "__main__":
    main()

"""Benchmark of perfmodel.measure.append_rows under concurrent writers: nothing may be lost.

Run: ``python benchmarks/bench_append.py [--processes 8] [--appends 100] [--rows 10]``.

Each of ``--processes`` processes (multiprocessing, spawn) appends ``--appends`` batches of ``--rows`` rows to one
CSV file; every row carries its writer and batch number. Prints the rows kept against the rows expected, the batches
that are missing or duplicated, and the wall time; exits with status 1 when any row is lost or duplicated.

Target: 8 processes × 100 appends keep all 800 batches.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
from pathlib import Path


def writer(path: str, worker: int, appends: int, rows: int) -> None:
    import pandas as pd

    from perfmodel.measure import append_rows

    for batch in range(appends):
        append_rows(pd.DataFrame({"worker": [worker] * rows, "batch": [batch] * rows, "row": range(rows)}), path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=8, help="concurrent writer processes (default 8)")
    ap.add_argument("--appends", type=int, default=100, help="appends per process (default 100)")
    ap.add_argument("--rows", type=int, default=10, help="rows per append (default 10)")
    a = ap.parse_args(argv)
    import pandas as pd

    load = f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    print(f"python {platform.python_version()}, {os.cpu_count()} logical cores, {platform.machine()}{load}")
    with tempfile.TemporaryDirectory(prefix="perfmodel-bench-append-") as d:
        path = str(Path(d) / "rows.csv")
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=writer, args=(path, w, a.appends, a.rows)) for w in range(a.processes)]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        wall = time.perf_counter() - t0
        failed = [p.exitcode for p in procs if p.exitcode != 0]
        df = pd.read_csv(path)
        leftovers = sorted(n for n in os.listdir(d) if n not in ("rows.csv", ".rows.csv.lock"))  # the lock file stays by design
    expected = a.processes * a.appends * a.rows
    batches = df.groupby(["worker", "batch"]).size()
    want = {(w, b) for w in range(a.processes) for b in range(a.appends)}
    missing = sorted(want - set(batches.index))
    duplicated = sorted(batches.index[batches != a.rows])
    print(f"{a.processes} processes x {a.appends} appends x {a.rows} rows: {len(df)} rows kept / {expected} expected, "
          f"{len(batches)} batches / {len(want)}, {wall:.1f} s wall ({wall / (a.processes * a.appends) * 1e3:.1f} ms per append)")
    print(f"files left in the folder besides rows.csv and its lock file: {leftovers or 'none'}")
    if failed:
        print(f"FAILED: {len(failed)} writer processes exited with {failed}", file=sys.stderr)
    if missing or duplicated or len(df) != expected:
        print(f"FAILED: {len(missing)} batches missing (e.g. {missing[:5]}), {len(duplicated)} incomplete or duplicated "
              f"(e.g. {duplicated[:5]})", file=sys.stderr)
        return 1
    return 1 if failed or leftovers else 0


if __name__ == "__main__":
    sys.exit(main())

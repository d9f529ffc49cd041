"""Is the shipped row-wise float8 calibration the one the code fits today?

Run: ``python benchmarks/bench_rowwise_calibration.py [--write]``. The calibration of torchao's row-wise float8 recipe
(:mod:`perfmodel.step.float8_rowwise`, ``perfmodel/step/fitted/float8_rowwise.json``) is fitted on perfmodel's own
uncalibrated predictions of torchao's microbenchmark (216 shapes, about 8 minutes on 2 cores). Any change to the GEMM,
cast or elementwise models moves those predictions, and the shipped file then rests on a model the code no longer has:
until December 2026 it recorded 68.4 % uncalibrated error where the code gave 72.7 %. This refits in memory, prints the
shipped and refitted numbers side by side, and exits 1 when they differ by more than ``--rtol`` (``--write`` writes the
refit instead, as ``python -m perfmodel.step.float8_rowwise`` does). No test runs it: it is too slow for one.
"""
from __future__ import annotations

import argparse
import sys
import time

KEYS = ("uncalibrated_speedup_mape_pct", "speedup_mape_pct", "speedup_mape_m_ge_8192_pct", "speedup_worst_pct")
PER_ELEMENT = ("input", "grad_output", "weight")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-6, help="relative difference taken as the same (default 1e-6)")
    ap.add_argument("--write", action="store_true", help="write the refit to the shipped file")
    a = ap.parse_args(argv)
    from perfmodel.step import float8_rowwise as fr

    if a.write:
        fr.rebuild()
        print(f"wrote {fr.FITTED_PATH}")
        return 0
    shipped = fr.overheads()
    t0 = time.perf_counter()
    frame = fr.calibration_frame()
    fit = fr.fit(frame)
    s = fr.scores(frame, fit)
    big = s["m"] >= 8192
    now = {"uncalibrated_speedup_mape_pct": float(100 * (s["uncalibrated_speedup"] / s["speedup"] - 1).abs().mean()),
           "speedup_mape_pct": float(s["error_pct"].abs().mean()),
           "speedup_mape_m_ge_8192_pct": float(s.loc[big, "error_pct"].abs().mean()),
           "speedup_worst_pct": float(s["error_pct"].abs().max())}
    rows = [(k, float(shipped[k]), now[k]) for k in KEYS]
    rows += [(f"bytes_per_element.{k}", float(shipped["bytes_per_element"][k]), float(fit["bytes_per_element"][k]))
             for k in PER_ELEMENT]
    print(f"refit on {len(frame)} shapes in {time.perf_counter() - t0:.0f} s")
    print(f"{'quantity':34s} {'shipped':>12s} {'refit':>12s}")
    stale = False
    for name, old, new in rows:
        differs = abs(new - old) > a.rtol * max(abs(old), abs(new), 1e-300)
        stale |= differs
        print(f"{name:34s} {old:12.6g} {new:12.6g}{'  <- differs' if differs else ''}")
    print("stale: refit with --write (or python -m perfmodel.step.float8_rowwise) and re-record what it moves"
          if stale else "the shipped calibration is the code's")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())

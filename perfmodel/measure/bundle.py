"""Rebuild perfmodel's bundled CPU measurements: the twenty zoo CNNs on this machine's CPU, batch 32 and 128, 1 and 2
threads, plus checkpoint times — ``python -m perfmodel.measure.bundle --folder DIR [--budget-s 1800]``.

Appends to ``DIR/cpu_steps.csv`` and ``DIR/cpu_checkpoints.csv`` (resumable: done combinations are skipped) and, when
it measured something, a provenance entry (machine, command, wall time) to ``DIR/README.md``. The folder is required:
the bundled data of a source checkout (``datasets/measurements``, tracked files) change only when you name that folder
(``--folder datasets/measurements``), never by running the module bare. Measuring is a command, never a test.
"""
from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

__all__ = ["main"]


#: The bundled measurements of a source checkout (tracked files: written only when named explicitly with --folder).
SOURCE_FOLDER = Path(__file__).resolve().parents[2] / "datasets" / "measurements"


def main(argv=None) -> int:
    import os

    ap = argparse.ArgumentParser(prog="python -m perfmodel.measure.bundle", description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=1680.0,
                    help="wall-time budget of the step-time campaign (default 1680 s, so the whole run stays under 30 min)")
    ap.add_argument("--folder", default=None, metavar="DIR",
                    help="folder of cpu_steps.csv, cpu_checkpoints.csv and README.md (required; the source checkout's "
                         f"bundled data: {SOURCE_FOLDER})")
    ap.add_argument("--models", default="", help="comma-separated zoo ids (default: all twenty)")
    a = ap.parse_args(argv)
    if a.folder is None:
        ap.error("--folder DIR is required: the measurements and a provenance entry are appended there. Pass a new folder, "
                 f"or --folder {SOURCE_FOLDER} to rebuild the bundled data (tracked files) on purpose.")

    import torch

    from perfmodel.measure.campaign import measure_campaign
    from perfmodel.measure.timing import _cpu_name
    from perfmodel.zoo import list_models

    folder = Path(a.folder)
    folder.mkdir(parents=True, exist_ok=True)
    models = [m for m in a.models.split(",") if m] or list(list_models())
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    res = measure_campaign(models, out=folder / "cpu_steps.csv", batch_sizes=(32, 128), threads=(1, 2), budget_s=a.budget_s,
                           checkpoint_out=folder / "cpu_checkpoints.csv", checkpoint_repeats=3)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if not res["measured"]:  # nothing new: the provenance (and the README, a tracked file in a checkout) stay as they are
        print(f"nothing measured: {res['skipped']} combinations already in {folder / 'cpu_steps.csv'}; README.md unchanged")
        return 0
    shown = "datasets/measurements" if folder.resolve() == SOURCE_FOLDER else str(folder)
    entry = (f"\n* {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — `python -m perfmodel.measure.bundle --folder {shown} --budget-s {a.budget_s:g}`: "
             f"{res['measured']} combinations measured, {res['skipped']} already present, {wall / 60:.1f} min wall. CPU: {_cpu_name()}, "
             f"{os.cpu_count()} logical cores; torch {torch.__version__}, Python {platform.python_version()}; load average "
             f"{load0:.2f} at start, {load1:.2f} at the end.\n")
    readme = folder / "README.md"
    if not readme.exists():
        readme.write_text("# perfmodel's own measurements\n\nProvenance of each campaign (appended by `python -m perfmodel.measure.bundle`):\n")
    with open(readme, "a") as f:
        f.write(entry)
    print(entry.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``perfmodel reproduce``: every figure and table of both papers, with a paper-vs-reproduced report."""
from __future__ import annotations

import argparse
import sys

from perfmodel.cli._common import _print_frame, _UsageError


def _workers(text: str) -> int:
    """``--jobs``: a positive whole number of worker processes."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of worker processes (1: run every item in this "
                                         f"process), got {text!r}")
    return n


def _cmd_reproduce(args) -> int:
    from perfmodel.reproduce import EmptySelectionError, ReproduceOutputError, list_items, reproduce, select_items

    if args.list:
        _print_frame(list_items()[["id", "paper", "number", "title"]])
        return 0
    if args.only is not None:  # `--only ''` selects nothing: a usage error before anything in --out is touched
        try:
            select_items(args.only)
        except EmptySelectionError:
            raise _UsageError(str(EmptySelectionError(",".join(args.only), "--only"))) from None
    try:
        res = reproduce(args.out, only=args.only, figures=not args.no_figures, progress=not args.quiet, jobs=args.jobs)
    except ReproduceOutputError as exc:
        print(f"perfmodel: {exc}", file=sys.stderr)
        return 1
    counts = res.numbers["report_status"].value_counts() if len(res.numbers) else {}
    print(f"perfmodel reproduce: {len(res.seconds)} items, {len(res.numbers)} numbers -> {res.out}/ (report.md, report.html, numbers.json, figures/)")
    for status in ("reproduced", "within tolerance", "differs", "not reproducible", "computed", "perfmodel result"):
        print(f"  {status:17s} {int(counts.get(status, 0))}")
    # missing upstream data (offline, empty cache): one message per folder of files, not one per item
    for group, g in sorted(res.missing_data.items()):
        print(f"MISSING DATA {group}/ (needed by {', '.join(sorted(g['items']))}): not cached and the download failed ({g['cause']}). "
              "Connect once to fill the cache, or set PERFMODEL_DATA to a local copy of the data.", file=sys.stderr)
    offline_only = {i for g in res.missing_data.values() for i in g["items"]}
    for item, msg in res.errors.items():
        if item not in offline_only:
            print(f"FAILED item {item}: {msg}", file=sys.stderr)
    for r in res.failed.itertuples(index=False):  # numbers lost with a failed function are counted, their item is listed above
        if not str(r.reason).startswith("not computed:"):
            print(f"FAILED number {r.figure_table}/{r.quantity}: paper {r.paper_value}, reproduced {r.reproduced} ({r.status})", file=sys.stderr)
    print(res.summary())
    return 0 if res.ok else 1


def add_parser(sub, fmt) -> None:
    rep = sub.add_parser("reproduce", help="every figure and table of both papers, with a paper-vs-reproduced report")
    rep.add_argument("--only", action="append", metavar="IDS", help="comma-separated item ids (see --list); repeatable")
    rep.add_argument("--out", default="reproduction", metavar="DIR",
                     help="output folder, created if needed; its report and figures are replaced (default ./reproduction)")
    rep.add_argument("--no-figures", action="store_true", help="numbers only")
    rep.add_argument("--list", action="store_true", help="list the items and exit")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.add_argument("--jobs", type=_workers, default=None, metavar="N",
                     help="worker processes running the items side by side (default: the CPUs, at most 4; 1: all in "
                          "this process); the report is the same whatever N")
    rep.set_defaults(func=_cmd_reproduce)

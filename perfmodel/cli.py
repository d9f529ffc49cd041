"""Command line: ``perfmodel reproduce | predict | plan | measure | features | data``.

Exit status: 0 on success, 1 when a check fails (e.g. a file whose hash does not match), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def _print_frame(df, *, max_colwidth: int = 60) -> None:
    import pandas as pd

    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200, "display.max_colwidth", max_colwidth):
        print(df.to_string(index=False))


def _cmd_data_verify(args) -> int:
    from perfmodel import datasets

    datasets.data_root()  # a PERFMODEL_DATA naming no folder: one error line, before anything else
    print(f"perfmodel: verifying upstream files from {datasets.data_source()}")
    res = datasets.verify()
    counts = res["status"].value_counts()
    for status, n in counts.items():
        print(f"  {status:14s} {n}")
    bad = res[~res["status"].isin(["ok", "not-checked"])]
    skipped = res[res["status"] == "not-checked"]
    if len(skipped):  # the network failed: one line for it, not one per file
        print(f"perfmodel: {bad['detail'].iloc[-1]} ({len(skipped)} files not checked after this network failure: connect and rerun, "
              "or set PERFMODEL_DATA to a local copy of the data)", file=sys.stderr)
        bad = bad.iloc[:-1]
    for _, r in bad.iterrows():
        print(f"FAILED {r['key']}: {r['detail']}", file=sys.stderr)
    if len(bad) or len(skipped):
        return 1
    print(f"all {len(res)} registered data files present with the registered sha256")
    return 0


def _cmd_data_list(args) -> int:
    from perfmodel import datasets

    df = datasets.list_datasets(with_shape=not args.offline)
    cols = ["name", "kind", "rows", "columns", "description"] if not args.offline else ["name", "kind", "description"]
    _print_frame(df[cols])
    return 0


def _cmd_data_summary(args) -> int:
    from perfmodel import datasets

    df = datasets.list_datasets(with_shape=True)
    print(f"perfmodel datasets (data from {datasets.data_source()})")
    for kind, g in df.groupby("kind", sort=False):
        print(f"  {kind:9s} {len(g):3d} datasets, {int(g['rows'].sum()):6d} rows")
    print()
    _print_frame(df[["name", "kind", "rows", "columns", "paper"]], max_colwidth=70)
    return 0


def _cmd_data_registry(args) -> int:
    from perfmodel import datasets

    _print_frame(datasets.registry()[["key", "kind", "sha256", "size_bytes"]], max_colwidth=100)
    return 0


def _cmd_features(args) -> int:
    from perfmodel.features import features_table

    try:
        shape = tuple(int(x) for x in args.input_shape.split(","))
    except ValueError:
        print(f"perfmodel features: --input-shape must be comma-separated integers like 3,32,32; got {args.input_shape!r}", file=sys.stderr)
        return 2
    df = features_table(args.target, shape, batch_size=args.batch_size, per_layer=args.per_layer)
    _print_frame(df.T.reset_index().rename(columns={"index": "feature", 0: "value"}) if not args.per_layer else df)
    return 0


def _cmd_reproduce(args) -> int:
    from perfmodel.reproduce import ReproduceOutputError, list_items, reproduce

    if args.list:
        _print_frame(list_items()[["id", "paper", "section", "title"]])
        return 0
    try:
        res = reproduce(args.out, only=args.only, figures=not args.no_figures, progress=not args.quiet)
    except ReproduceOutputError as exc:
        print(f"perfmodel: {exc}", file=sys.stderr)
        return 1
    counts = res.numbers["report_status"].value_counts() if len(res.numbers) else {}
    print(f"perfmodel reproduce: {len(res.seconds)} items, {len(res.numbers)} numbers -> {res.out}/ (report.md, report.html, numbers.json, figures/)")
    for status in ("reproduced", "within tolerance", "differs", "not reproducible", "computed"):
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


def _cmd_predict(args) -> int:
    from perfmodel.models import predict_checkpoint_time, predict_cluster_speed, predict_step_time

    gpus = [g for g in args.gpus.split(",") if g]
    print("single-worker step time:")
    _print_frame(predict_step_time(args.model, gpus))
    print("\ncluster speed (steps/s):")
    for g in gpus:
        c = predict_cluster_speed(args.model, g, workers=range(1, args.max_workers + 1), n_ps=(1, 2))
        print(f"{g} ({c['basis'].iloc[0]})")
        _print_frame(c.pivot(index="n_workers", columns="n_ps", values="speed_steps_per_s").rename(columns=lambda p: f"{p} PS").reset_index())
    print("\ncheckpoint:")
    _print_frame(predict_checkpoint_time(args.model))
    return 0


def _cmd_plan(args) -> int:
    from perfmodel.planning import cheapest_under_deadline, fastest_under_budget, plan

    f = plan(args.model, gpus=args.gpus.split(","), max_workers=args.max_workers, steps=args.steps, deadline_h=args.deadline_h,
             budget_usd=args.budget_usd)
    cols = ["gpu", "n_workers", "n_ps", "transient", "time_h", "cost_usd", "expected_revocations", "feasible"]
    print(f"Pareto front of {len(f)} configurations ({args.steps} steps, prices of {f['price_date'].iloc[0]}):")
    _print_frame(f.loc[f["pareto"], cols])
    if args.deadline_h is not None:
        print("\ncheapest within the deadline:")
        _print_frame(cheapest_under_deadline(f, args.deadline_h)[cols].to_frame().T)
    if args.budget_usd is not None:
        print("\nfastest within the budget:")
        _print_frame(fastest_under_budget(f, args.budget_usd)[cols].to_frame().T)
    return 0


def _cmd_measure(args) -> int:
    import pandas as pd

    from perfmodel.measure import append_rows, measure_campaign, measure_checkpoint_time, measure_cluster_speed, measure_step_time

    shape = tuple(int(x) for x in args.input_shape.split(","))
    if args.measure_command == "step":
        df = measure_step_time(args.model, shape, batch_size=args.batch_size, device=args.device, steps=args.steps, warmup=args.warmup,
                               threads=args.threads)
    elif args.measure_command == "checkpoint":
        df = measure_checkpoint_time(args.model, args.path, repeats=args.repeats)
    elif args.measure_command == "cluster":
        df = measure_cluster_speed(args.model, shape, world_sizes=[int(w) for w in args.world_sizes.split(",")], batch_size=args.batch_size,
                                   steps=args.steps, warmup=args.warmup, backend=args.backend, threads=args.threads or 1)
    else:
        if not args.out:
            print("perfmodel measure campaign: --out FILE is required (the campaign appends to it and resumes from it)", file=sys.stderr)
            return 2
        res = measure_campaign(args.models.split(","), out=args.out, batch_sizes=[int(b) for b in args.batch_sizes.split(",")],
                               threads=[int(t) for t in args.thread_counts.split(",")], input_shape=shape, budget_s=args.budget_s,
                               progress=not args.quiet)
        print(f"perfmodel measure campaign: {res['measured']} measured, {res['skipped']} already in {args.out}, {res['seconds']:.0f} s")
        return 0
    if args.out:
        append_rows(df, args.out)
        print(f"perfmodel measure {args.measure_command}: {len(df)} rows appended to {args.out}")
    else:
        _print_frame(pd.DataFrame(df))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="perfmodel", description="Training-performance models of deep networks on cloud GPU clusters.")
    sub = p.add_subparsers(dest="command", required=True)

    rep = sub.add_parser("reproduce", help="every figure and table of both papers, with a paper-vs-reproduced report")
    rep.add_argument("--only", action="append", metavar="IDS", help="comma-separated item ids (see --list); repeatable")
    rep.add_argument("--out", default="reproduction", metavar="DIR",
                     help="output folder, created if needed; its report and figures are replaced (default ./reproduction)")
    rep.add_argument("--no-figures", action="store_true", help="numbers only")
    rep.add_argument("--list", action="store_true", help="list the items and exit")
    rep.add_argument("--quiet", action="store_true", help="no progress bar")
    rep.set_defaults(func=_cmd_reproduce)

    pred = sub.add_parser("predict", help="step time, cluster speed and checkpoint time of a model on GPUs")
    pred.add_argument("model", help="a zoo id")
    pred.add_argument("--gpus", default="K80,P100,V100")
    pred.add_argument("--max-workers", type=int, default=8)
    pred.set_defaults(func=_cmd_predict)
    pl = sub.add_parser("plan", help="which cluster to rent: time, cost, revocations, Pareto front")
    pl.add_argument("model", help="a zoo id")
    pl.add_argument("--gpus", default="K80,P100,V100")
    pl.add_argument("--max-workers", type=int, default=8)
    pl.add_argument("--steps", type=int, default=64000)
    pl.add_argument("--deadline-h", type=float, default=None)
    pl.add_argument("--budget-usd", type=float, default=None)
    pl.set_defaults(func=_cmd_plan)

    meas = sub.add_parser("measure", help="time training steps, checkpoints or data-parallel clusters on this machine")
    msub = meas.add_subparsers(dest="measure_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--input-shape", default="3,32,32")
    common.add_argument("--out", default=None, help="CSV file to append the rows to (atomically); default: print them")
    st = msub.add_parser("step", parents=[common], help="per-step training time of one model")
    st.add_argument("model", help="a zoo id")
    st.add_argument("--batch-size", type=int, default=128)
    st.add_argument("--device", default="cpu")
    st.add_argument("--steps", type=int, default=20)
    st.add_argument("--warmup", type=int, default=3)
    st.add_argument("--threads", type=int, default=None)
    ck = msub.add_parser("checkpoint", parents=[common], help="checkpoint (state dict + momentum) save time")
    ck.add_argument("model")
    ck.add_argument("--path", default="perfmodel-checkpoint.pt", help="file written (and removed) by each repetition")
    ck.add_argument("--repeats", type=int, default=5)
    cl = msub.add_parser("cluster", parents=[common], help="DDP speed vs number of local worker processes")
    cl.add_argument("model")
    cl.add_argument("--world-sizes", default="1,2")
    cl.add_argument("--batch-size", type=int, default=32)
    cl.add_argument("--steps", type=int, default=5)
    cl.add_argument("--warmup", type=int, default=2)
    cl.add_argument("--backend", default="gloo")
    cl.add_argument("--threads", type=int, default=1)
    ca = msub.add_parser("campaign", parents=[common], help="many models x batch sizes x threads, resumable")
    ca.add_argument("models", help="comma-separated zoo ids")
    ca.add_argument("--batch-sizes", default="32,128")
    ca.add_argument("--thread-counts", default="1,2")
    ca.add_argument("--budget-s", type=float, default=1800.0)
    ca.add_argument("--quiet", action="store_true")
    meas.set_defaults(func=_cmd_measure)

    data = sub.add_parser("data", help="the published measurements: verify, list, summarise")
    dsub = data.add_subparsers(dest="data_command", required=True)
    dsub.add_parser("verify", help="check every registered upstream file (presence, sha256); offline, stops at the first failed "
                    "download (5 s connect timeout)").set_defaults(func=_cmd_data_verify)
    lst = dsub.add_parser("list", help="list the loadable datasets")
    lst.add_argument("--offline", action="store_true", help="do not load the data (no shapes)")
    lst.set_defaults(func=_cmd_data_list)
    dsub.add_parser("summary", help="every dataset with its shape and the paper items using it").set_defaults(func=_cmd_data_summary)
    dsub.add_parser("registry", help="the registry of upstream files with their sha256").set_defaults(func=_cmd_data_registry)

    feat = sub.add_parser("features", help="graph features of a zoo CNN or any torch module")
    feat.add_argument("target", help="a zoo id (e.g. resnet-32) or package.module:ClassName (instantiated without arguments)")
    feat.add_argument("--input-shape", default="3,32,32", help="input shape without the batch dimension (default 3,32,32)")
    feat.add_argument("--batch-size", type=int, default=1)
    feat.add_argument("--per-layer", action="store_true", help="one row per module")
    feat.set_defaults(func=_cmd_features)
    return p


def main(argv: list[str] | None = None) -> int:
    from perfmodel._errors import (
        DataFormatError,
        DataIntegrityError,
        DataNotAvailableError,
        NotADataFileError,
        UnknownNameError,
    )

    args = build_parser().parse_args(argv)
    errors: tuple = (DataNotAvailableError, DataIntegrityError, NotADataFileError, DataFormatError, UnknownNameError)
    if args.command in ("predict", "plan"):
        errors += (ValueError,)
    if args.command == "measure":
        from perfmodel.measure import MeasurementFileError

        errors += (MeasurementFileError, ValueError)
    if args.command == "features":
        from perfmodel.features import FeatureExtractionError

        errors += (FeatureExtractionError,)
    try:
        return int(args.func(args) or 0)
    except errors as exc:
        print(f"perfmodel: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

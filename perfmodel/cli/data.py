"""``perfmodel data`` (the published measurements: verify, list, summarise, registry), ``perfmodel zoo`` (the zoo ids)
and ``perfmodel features`` (graph features of a model)."""
from __future__ import annotations

import sys

from perfmodel.cli._common import _print_frame, _shape


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

    df = features_table(args.target, _shape(args.input_shape), batch_size=args.batch_size, per_layer=args.per_layer)
    _print_frame(df.T.reset_index().rename(columns={"index": "feature", 0: "value"}) if not args.per_layer else df)
    return 0


def _cmd_zoo(args) -> int:
    import pandas as pd

    from perfmodel.datasets.names import MODEL_IDS, model_info
    from perfmodel.features import load_zoo_features

    z = load_zoo_features().set_index("model")
    rows = []
    for m in MODEL_IDS:
        info = model_info(m)
        rows.append(dict(model=m, label=info.label, params_m=round(float(z.loc[m, "params"]) / 1e6, 3),
                         train_step_gflops=round(float(z.loc[m, "train_step_flops"]) / 1e9, 3), held_out=info.held_out,
                         also_accepted=", ".join(dict.fromkeys(a for a in info.aliases if a != m))))
    _print_frame(pd.DataFrame(rows), max_colwidth=80)
    print("\n(any of these, or 'package.module:ClassName' for your own torch module, is a MODEL for predict, plan, features, measure)")
    return 0


def add_zoo_parser(sub, fmt) -> None:
    zoo = sub.add_parser("zoo", help="list the zoo ids (the twenty CM-DARE CNNs) with their size and accepted spellings")
    zoo.set_defaults(func=_cmd_zoo)


def add_parser(sub, fmt) -> None:
    data = sub.add_parser("data", help="the published measurements: verify, list, summarise")
    dsub = data.add_subparsers(dest="data_command", required=True)
    dsub.add_parser("verify", help="check every registered upstream file (presence, sha256); offline, stops at the first failed "
                    "download (5 s connect timeout)").set_defaults(func=_cmd_data_verify)
    lst = dsub.add_parser("list", help="list the loadable datasets")
    lst.add_argument("--offline", action="store_true", help="do not load the data (no shapes)")
    lst.set_defaults(func=_cmd_data_list)
    dsub.add_parser("summary", help="every dataset with its shape and the paper items using it").set_defaults(func=_cmd_data_summary)
    dsub.add_parser("registry", help="the registry of upstream files with their sha256").set_defaults(func=_cmd_data_registry)


def add_features_parser(sub, fmt) -> None:
    feat = sub.add_parser("features", help="graph features of a zoo CNN or any torch module", formatter_class=fmt)
    feat.add_argument("target", help="a zoo id (e.g. resnet-32) or package.module:ClassName (instantiated without arguments)")
    feat.add_argument("--input-shape", default="3,32,32", help="shape of one input sample, without the batch dimension")
    feat.add_argument("--batch-size", type=int, default=1, help="samples per step (counts scale with it)")
    feat.add_argument("--per-layer", action="store_true", help="one row per module")
    feat.set_defaults(func=_cmd_features)

"""Command line: ``perfmodel reproduce | predict | plan | plan-cloud | fit | measure | features | data``.

Exit status: 0 on success, 1 when a check fails (e.g. a file whose hash does not match), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that ends each option with its default, except options whose default is 'none' (their help says so)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


class _UsageError(ValueError):
    """A command-line value that cannot be used (exit status 2, one line)."""


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

    df = features_table(args.target, _shape(args.input_shape), batch_size=args.batch_size, per_layer=args.per_layer)
    _print_frame(df.T.reset_index().rename(columns={"index": "feature", 0: "value"}) if not args.per_layer else df)
    return 0


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


def _shape(text: str, option: str = "--input-shape") -> tuple[int, ...]:
    """``"3,32,32"`` → ``(3, 32, 32)``, or a one-line usage error. Only the syntax is checked here; the values (positive,
    the rank a model needs) are checked by the library functions that use them."""
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        shape = ()
    if not shape:
        raise _UsageError(f"{option} must be comma-separated integers like 3,32,32 (one sample, without the batch "
                          f"dimension); got {text!r}.")
    return shape


def _names(text: str, option: str) -> list[str]:
    names = [g.strip() for g in text.split(",") if g.strip()]
    if not names:
        raise _UsageError(f"{option} must name at least one item, comma-separated; got {text!r}.")
    return names


def _positive(value: float | None, option: str) -> None:
    if value is not None and not value > 0:
        raise _UsageError(f"{option} must be a positive number; got {value}.")


def _model_arg(text: str):
    """A zoo id, 'package.module:Class' (a module built without arguments), or a Hugging Face config.json."""
    if text.endswith(".json"):
        from perfmodel.zoo.hf import read_config

        return read_config(text)
    from perfmodel.zoo import load_model

    return load_model(text)


def _interconnect(text: str | None):
    """``nvlink`` or ``tp=nvlink,dp=infiniband`` (a link per group)."""
    if not text:
        return None
    if "=" not in text:
        return text
    out = {}
    for part in text.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise _UsageError(f"--interconnect takes a link (nvlink) or group=link pairs (tp=nvlink,dp=infiniband); got {text!r}.")
        out[k.strip()] = v.strip()
    return out


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _cmd_predict(args) -> int:
    import warnings

    import perfmodel as pm
    from perfmodel.datasets import canonical_gpu, gpu_spec
    from perfmodel.planning.unified import CMDARE_GPUS

    gpus = _names(args.gpus, "--gpus")
    if args.max_workers < 1 or args.batch_size < 1 or args.n_gpus < 1:
        raise _UsageError(f"--max-workers, --batch-size and --n-gpus must be ≥ 1; got {args.max_workers}, {args.batch_size} "
                          f"and {args.n_gpus}.")
    model = _model_arg(args.model)
    shape = _shape(args.input_shape) if args.input_shape else None
    optimizer = None if args.optimizer == "none" else args.optimizer
    kw = dict(input_shape=shape, batch_size=args.batch_size, precision=args.precision, optimizer=optimizer, n_gpus=args.n_gpus,
              strategy=args.strategy, micro_batches=args.micro_batches, interconnect=_interconnect(args.interconnect),
              activation_checkpointing=args.activation_checkpointing, compile=args.compile,
              gpus_per_node=args.gpus_per_node, async_tp=args.async_tp, pipeline_schedule=args.pipeline_schedule)
    step = pm.predict_step_time(model, gpus, stack=args.stack, **kw)
    where = f"{args.n_gpus} x GPU, {args.strategy}" if args.n_gpus > 1 else "one GPU"
    print(f"training step ({where}, global batch {args.batch_size}, {args.precision}, optimizer {args.optimizer}); "
          "spec-sheet prediction by perfmodel's per-operator model:")
    cols = [c for c in ("gpu", "step_time_s", "lower_s", "upper_s", "forward_s", "backward_s", "optimizer_s", "comm_s")
            if c in step.columns]
    out = step[cols].copy()  # a training step's rows carry its memory per GPU (pm.predict_memory) and whether it fits
    out["memory_per_gpu"] = [_gib(v) for v in step["memory_per_gpu_bytes"]]
    out["gpu_memory"] = [_gib(gpu_spec(g).memory_gib * 2**30) for g in out["gpu"]]
    out["fits"] = step["fits"].to_numpy()
    _print_frame(out)
    if not out["fits"].all():
        print("\nDOES NOT FIT on " + ", ".join(out.loc[~out["fits"], "gpu"]) + ": the step time above is for a run that "
              "would stop with out-of-memory; use more GPUs, fsdp/tp/pp, activation checkpointing or a smaller batch.")
    print(f"\nbasis: {step['basis'].iloc[0]}")
    if args.breakdown:
        _print_breakdown(model, gpus, kw, args.stack)
    cmdare = (not isinstance(model, dict) and args.n_gpus == 1 and args.precision == "fp32"
              and all(canonical_gpu(g) in CMDARE_GPUS for g in gpus))
    if cmdare:  # CM-DARE's measured world answers too: parameter-server clusters and checkpoints of 2019
        from perfmodel.models import predict_checkpoint_time, predict_cluster_speed

        cshape = shape or (3, 32, 32)
        print("\nCM-DARE's measured world (ICDCS'20): cluster speed (steps/s; asynchronous training with parameter servers):")
        with warnings.catch_warnings():
            for g in gpus:
                c = predict_cluster_speed(model, g, workers=range(1, args.max_workers + 1), n_ps=(1, 2), input_shape=cshape,
                                          batch_size=args.batch_size)
                print(f"{g} ({c['basis'].iloc[0]})")
                _print_frame(c.pivot(index="n_workers", columns="n_ps", values="speed_steps_per_s")
                             .rename(columns=lambda p: f"{p} PS").reset_index())
        print("\ncheckpoint (size in MiB; CM-DARE's 'MB' columns are 2^20 bytes):")
        ck = predict_checkpoint_time(model, input_shape=cshape)
        _print_frame(ck.rename(columns={"checkpoint_mb": "checkpoint_mib"}))
    return 0


def _print_breakdown(model, gpus, kw: dict, stack) -> None:
    """Each GPU's :class:`perfmodel.Prediction` of the run the keywords ``kw`` say (the same numbers as the table)."""
    import warnings

    import perfmodel as pm

    wkeys = ("input_shape", "batch_size", "precision", "optimizer", "compile")
    work = pm.Workload(model, **{k: kw[k] for k in wkeys if kw[k] is not None or k == "optimizer"},
                       **({"stack": stack} if stack else {}))
    how = pm.Parallelism(kw["strategy"], micro_batches=kw["micro_batches"], pipeline_schedule=kw["pipeline_schedule"],
                         activation_checkpointing=kw["activation_checkpointing"], async_tp=kw["async_tp"])
    for g in gpus:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said once above, by the table's prediction
            res = pm.predict(work, pm.Cluster(g, n_gpus=kw["n_gpus"], gpus_per_node=kw["gpus_per_node"],
                                              interconnect=kw["interconnect"]), how)
        print(f"\n{res!r}")


class _Given(argparse.Action):
    """Store an option's value and remember that it was given (``args.given``): `perfmodel plan` passes on to today's-cloud
    planner only the --steps / --batch-size a user typed, not CM-DARE's defaults."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, "given", set(getattr(namespace, "given", ())) | {self.dest})


def _cmd_plan(args) -> int:
    from perfmodel.planning import cheapest_under_deadline, choose_world, fastest_under_budget, plan

    _positive(args.deadline_h, "--deadline-h")
    _positive(args.budget_usd, "--budget-usd")
    if args.steps < 1 or args.max_workers < 1 or args.batch_size < 1:
        raise _UsageError(f"--steps, --max-workers and --batch-size must be ≥ 1; got {args.steps}, {args.max_workers} and "
                          f"{args.batch_size}.")
    model = _model_arg(args.model)
    gpus = _names(args.gpus, "--gpus")
    world = choose_world(model, gpus) if args.world == "auto" else args.world
    if world == "cloud":  # today's GPUs or a transformer: the spec-sheet planner (plan-cloud has every option)
        print("This question is answered by today's-cloud planner (spec-sheet prediction); see `perfmodel plan-cloud --help` "
              "for its options (GPU counts, batches, strategies, spot, precision).\n")
        cloud = _cloud_args_from_plan(args)
        if cloud.steps is not None:
            print(f"Planning {cloud.steps} steps of batch {cloud.batch_sizes} (--steps x --batch-size), the batch fixed.\n")
        elif "batch_size" in getattr(args, "given", set()):
            print(f"Planning batch {cloud.batch_sizes} (--batch-size), the batch fixed; pass --steps for the amount of "
                  f"training (default {_default_samples()} samples).\n")
        return _cmd_plan_cloud(cloud)
    prices = None
    if args.prices:
        from perfmodel.planning import read_prices

        prices = read_prices(args.prices)
    f = plan(model, gpus=gpus, world="cmdare", max_workers=args.max_workers, steps=args.steps,
             deadline_h=args.deadline_h, budget_usd=args.budget_usd, prices=prices, input_shape=_shape(args.input_shape or "3,32,32"),
             batch_size=args.batch_size)
    cols = ["gpu", "n_workers", "n_ps", "transient", "time_h", "cost_usd", "expected_revocations", "feasible"]
    print(f"basis: {f.attrs['basis']}")
    print(f"Pareto front of {len(f)} configurations ({args.steps} steps, prices of {f['price_date'].iloc[0]}):")
    _print_frame(f.loc[f["pareto"], cols])
    if args.deadline_h is not None:
        print("\ncheapest within the deadline:")
        _print_frame(cheapest_under_deadline(f, args.deadline_h)[cols].to_frame().T)
    if args.budget_usd is not None:
        print("\nfastest within the budget:")
        _print_frame(fastest_under_budget(f, args.budget_usd)[cols].to_frame().T)
    return 0


def _cloud_args_from_plan(args):
    """`perfmodel plan`'s arguments as `perfmodel plan-cloud` would parse them (its defaults for the rest).

    --steps and --batch-size, when typed, are honoured with the batch fixed: ``--steps S --batch-size B`` plans S steps
    of batch B (S x B samples); ``--steps S`` alone plans S steps of plan's --batch-size default (a step count means
    steps of one batch); ``--batch-size B`` alone plans plan-cloud's default amount of data at batch B. Neither typed:
    plan-cloud's defaults (--samples 320000 at batches 8, 16 and 32), not CM-DARE's 64000 steps of 128 images."""
    argv = ["plan-cloud", args.model, "--gpus", args.gpus]
    given = getattr(args, "given", set())
    if "steps" in given or "batch_size" in given:
        argv += ["--batch-sizes", str(args.batch_size)]
    if "steps" in given:
        argv += ["--steps", str(args.steps)]
    if args.input_shape:
        argv += ["--input-shape", args.input_shape]
    if args.prices:
        argv += ["--prices", args.prices]
    if args.deadline_h is not None:
        argv += ["--deadline-h", str(args.deadline_h)]
    if args.budget_usd is not None:
        argv += ["--budget-usd", str(args.budget_usd)]
    return build_parser().parse_args(argv)


def _cloud_model(text: str):
    """A zoo id / 'package.module:Class' (as for plan), or a Hugging Face config as a JSON file."""
    if text.endswith(".json"):
        import json
        from pathlib import Path

        path = Path(text)
        if not path.is_file():
            raise _UsageError(f"model {text!r}: no such JSON file (a Hugging Face config.json, e.g. of GPT-2-large).")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise _UsageError(f"model {text!r} is not valid JSON ({exc}); expected a Hugging Face config.json.") from None
    from perfmodel.zoo import load_model

    return load_model(text)


def _ints(text: str, option: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]``, or a one-line usage error naming the option and the value (``2.5`` is refused, not
    truncated)."""
    names = _names(text, option)
    try:
        values = [int(x) for x in names]
    except ValueError:
        raise _UsageError(f"{option} must be comma-separated whole numbers like 1,2,4; got {text!r}.") from None
    if min(values) < 1:
        raise _UsageError(f"{option} must be positive whole numbers; got {text!r}.")
    return values


def _show_progress(quiet: bool) -> bool:
    """Progress bars go to stderr, and only to a terminal (a log file or a pipe gets none), unless --quiet."""
    return not quiet and sys.stderr.isatty()


def _default_samples() -> int:
    """The training data planned when none is given: the planner's own default, one value for both faces."""
    from perfmodel.planning.cloud import DEFAULT_SAMPLES

    return DEFAULT_SAMPLES


def _cloud_table(frame):
    """The printed columns of a plan-cloud frame: memory in GiB, a 'fits' mark that reads as a verdict."""
    t = frame.copy().infer_objects()  # a chosen row comes back as a one-row frame of objects
    t["mem_gib_per_gpu"] = (t["memory_per_gpu_bytes"] / 2**30).round(2)
    t["gpu_gib"] = (t["capacity_bytes"] / 2**30).round(1)
    t["fits"] = ["yes" if ok else "NO (out of memory)" for ok in t["fits"]]
    t["steps"] = t["steps"].astype(int)
    cols = ["gpu", "n_gpus", "strategy", "batch_size", "steps", "spot", "provider", "region", "instance_type", "time_h", "cost_usd",
            "mem_gib_per_gpu", "gpu_gib", "fits", "expected_revocations", "capacity_wait_h", "feasible"]
    return t[cols]


def _cmd_plan_cloud(args) -> int:
    import math
    import warnings

    from perfmodel.planning import cheapest_within_deadline, fastest_within_budget, plan_cloud
    from perfmodel.planning.cloud import nothing_fits, read_gpu_prices

    _positive(args.deadline_h, "--deadline-h")
    _positive(args.budget_usd, "--budget-usd")
    counts = _ints(args.n_gpus, "--n-gpus")
    batches = _ints(args.batch_sizes, "--batch-sizes")
    shape = _shape(args.input_shape)
    given = [o for o, v in (("--steps", args.steps), ("--samples", args.samples), ("--tokens", args.tokens)) if v is not None]
    if len(given) > 1:
        raise _UsageError(f"give one of --steps, --samples and --tokens (the amount of training); got {' and '.join(given)}.")
    for option, v in (("--steps", args.steps), ("--samples", args.samples), ("--tokens", args.tokens),
                      ("--reference-batch", args.reference_batch)):
        if v is not None and v < 1:
            raise _UsageError(f"{option} must be ≥ 1; got {v}.")
    _positive(args.b_simple, "--b-simple")
    if (args.b_simple is None) != (args.reference_batch is None) or (args.b_simple is not None and args.steps is None):
        raise _UsageError("--b-simple needs --steps and --reference-batch (the steps counted at that batch are rescaled to "
                          "the same training progress at every batch size); got "
                          f"--b-simple {args.b_simple}, --reference-batch {args.reference_batch}, --steps {args.steps}.")
    steps, samples = args.steps, args.samples
    if args.tokens is not None:
        if len(shape) != 1:
            raise _UsageError(f"--tokens needs a sequence model, whose --input-shape is one number (the sequence length); got "
                              f"--input-shape {args.input_shape}. Use --samples for other inputs.")
        samples = math.ceil(args.tokens / shape[0])
    if steps is None and samples is None:
        samples = _default_samples()
    if steps is not None and args.b_simple is None and len(set(batches)) > 1:
        print(f"perfmodel plan-cloud: warning: --steps {steps} is the same step count at every batch size, so batch {max(batches)} "
              f"trains on {max(batches) / min(batches):g}x the data of batch {min(batches)} and smaller batches always look "
              "cheaper. Use --samples or --tokens (a fixed amount of data), or --b-simple with --reference-batch.",
              file=sys.stderr)
    spot = {"both": (True, False), "spot": (True,), "on-demand": (False,)}[args.spot]
    prices = None
    if args.prices:
        from pathlib import Path

        if not Path(args.prices).is_file():
            raise _UsageError(f"--prices {args.prices}: no such file. Expected a UTF-8 CSV with the columns of "
                              "perfmodel.datasets.reference.load_gpu_prices().")
        prices = read_gpu_prices(args.prices)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"steps=\d+ at every batch size")  # said above, in the CLI's words
        f = plan_cloud(_cloud_model(args.model), gpus=_names(args.gpus, "--gpus") if args.gpus else None, n_gpus=counts,
                       batch_sizes=batches, strategies=_names(args.strategies, "--strategies"), spot=spot, prices=prices,
                       steps=steps, samples=samples, b_simple=args.b_simple, reference_batch=args.reference_batch,
                       deadline_h=args.deadline_h, budget_usd=args.budget_usd, input_shape=shape,
                       precision=args.precision, optimizer=args.optimizer,
                       mixes=_names(args.mixes, "--mixes") if args.mixes else (),
                       wait_for_capacity=not args.no_capacity_wait, progress=_show_progress(args.quiet))
    if steps is None:
        amount = (f"{args.tokens} tokens = {samples} sequences of {shape[0]}" if args.tokens is not None else f"{samples} samples")
        what = f"{amount}; steps = ceil(samples / batch)"
    elif args.b_simple is not None:
        what = f"{steps} steps at batch {args.reference_batch}, rescaled by B_simple = {args.b_simple:g}"
    else:
        what = f"{steps} steps"
    if not f["fits"].any():
        print(f"perfmodel plan-cloud: {nothing_fits(f)}", file=sys.stderr)
        return 1
    print(f"Pareto front of {len(f)} candidates ({what}):")
    if f["pareto"].any():
        _print_frame(_cloud_table(f.loc[f["pareto"]]))
    else:
        print("(no candidate fits in memory and meets the deadline and the budget)")
    out_of_memory = f[~f["fits"]]
    if len(out_of_memory):
        worst = out_of_memory.loc[(out_of_memory["memory_per_gpu_bytes"] / out_of_memory["capacity_bytes"]).idxmax()]
        print(f"\n{len(out_of_memory)} of {len(f)} candidates do not fit in GPU memory (fits = NO; never feasible, never chosen): "
              f"up to {worst['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU on a {worst['capacity_bytes'] / 2**30:.1f} GiB "
              f"{worst['gpu']}.")
    if args.deadline_h is not None:
        c = cheapest_within_deadline(f, args.deadline_h)
        print("\ncheapest within the deadline:")
        _print_frame(_cloud_table(c.to_frame().T))
        print(f"why: {c['why']}")
    if args.budget_usd is not None:
        c = fastest_within_budget(f, args.budget_usd)
        print("\nfastest within the budget:")
        _print_frame(_cloud_table(c.to_frame().T))
        print(f"why: {c['why']}")
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


def _measure_noise(args, cmd: str) -> int:
    import torch

    from perfmodel.measure import measure_gradient_noise
    from perfmodel.measure.noise import _check_data

    expected = "expected a file written by torch.save({'x': inputs, 'y': targets}) (or a tuple (inputs, targets))"
    try:
        data = torch.load(args.data, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - junk, truncated, a pickle of other objects, a folder: one line, not a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise _UsageError(f"cannot read --data {args.data!r} ({type(exc).__name__}: {first[:200]}); {expected}.") from None
    try:
        _check_data(data)
    except (TypeError, ValueError) as exc:
        raise _UsageError(f"--data {args.data!r} does not hold training data ({exc})") from None
    df = measure_gradient_noise(args.model, data, batch_small=args.batch_small, batch_big=args.batch_big, draws=args.draws,
                                device=args.device, random_state=args.seed, out=args.out, progress=_show_progress(args.quiet))
    ns = df.attrs["noise_scale"]
    if args.out:
        print(f"{cmd}: {len(df)} rows appended to {args.out}")
    print(f"{cmd}: B_simple = {ns['b_simple']:.4g} samples (|G|^2 = {ns['grad_sq_norm']:.4g}, tr(Sigma) = {ns['trace_cov']:.4g}; "
          f"{args.draws} gradients at batch {args.batch_small} and at {args.batch_big})")
    return 0


def _sky_measure_ops(args, cmd: str) -> int:
    """``perfmodel measure ops --sky``: write (never launch) a SkyPilot task that measures on a rented GPU."""
    import shlex
    from pathlib import Path

    from perfmodel.measure.ops import _canonical, _select_ops
    from perfmodel.planning.skypilot import write_task_yaml

    acc = args.sky.strip()
    if not acc or any(c.isspace() for c in acc):
        raise _UsageError(f"--sky takes a SkyPilot accelerator such as H100, A100-80GB:1 or L4; got {args.sky!r}")
    prec = _canonical(args.precision)
    if args.classes:
        _select_ops(_names(args.classes, "classes"))
    gpu = acc.split(":")[0]
    remote = "~/perfmodel-ops/ops.csv"
    local = Path(args.out) if args.out else Path(f"ops-{gpu}-{prec}.csv")
    stem, i = local, 2
    while local.exists():  # rsync replaces a file of the name it is given: suggest a new one
        local = stem.with_name(f"{stem.stem}-{i}{stem.suffix}")
        i += 1
    yaml_path = Path(args.yaml) if args.yaml else Path(f"perfmodel-measure-ops-{gpu}-{prec}.yaml")
    argv = ["perfmodel", "measure", "ops", "--device", "cuda", "--precision", prec, "--out", remote, "--quiet"]
    argv += ["--quick"] if args.quick else []
    argv += ["--classes", args.classes] if args.classes else []
    argv += ["--repeats", str(args.repeats)] if args.repeats is not None else []
    argv += ["--warmup", str(args.warmup)] if args.warmup is not None else []
    measure = " ".join(a if a == remote else shlex.quote(a) for a in argv)  # ~ must stay unquoted to expand
    cluster = "perfmodel-ops"
    steps = (f"sky launch -c {cluster} {shlex.quote(str(yaml_path))}\n"
             f"rsync -Pavz {cluster}:{remote} {shlex.quote(str(local))}\n"
             f"sky down {cluster}\n"
             f"perfmodel fit --with {shlex.quote(str(local))}")
    write_task_yaml(yaml_path, name="perfmodel-measure-ops", accelerators=acc,
                    setup=f"pip install {shlex.quote(args.install)}",
                    run=f"nvidia-smi --query-gpu=name,driver_version --format=csv\nmkdir -p ~/perfmodel-ops\n{measure}",
                    comment=f"perfmodel measure ops on a rented {acc} ({prec}), written by `{cmd} --sky`. Run:\n" + steps)
    print(f"{cmd}: wrote the SkyPilot task {yaml_path} (nothing launched): on one {acc} it installs {args.install} and runs\n"
          f"  {measure}\nThen, on this machine:\n" + "".join(f"  {line}\n" for line in steps.split("\n")), end="")
    print("(the first line rents the GPU, the second copies the CSV back over SSH, the third stops paying for it; "
          f"the last refits the operator model with your rows: export PERFMODEL_OP_MODEL=<the path it prints> to use it)")
    return 0


def _measure_ops(args, cmd: str) -> int:
    import time

    from perfmodel.measure.ops import measure_ops

    if args.sky is not None:
        return _sky_measure_ops(args, cmd)
    classes = _names(args.classes, "classes") if args.classes else None
    repeats = args.repeats if args.repeats is not None else (5 if args.quick else 25)
    warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    t0 = time.perf_counter()
    kw = {"classes": classes} if classes else {}
    df = measure_ops(args.device, args.precision, sizes="quick" if args.quick else "default", repeats=repeats, warmup=warmup,
                     out=args.out, progress=_show_progress(args.quiet), **kw)
    took = time.perf_counter() - t0
    where = f"{df['device'].iloc[0]} ({df['precision'].iloc[0]})" if len(df) else args.device
    if args.out:
        print(f"{cmd}: {len(df)} operator shapes timed on {where} in {took:.1f} s, appended to {args.out}")
        print(f"refit the operator model with them: perfmodel fit --with {args.out}")
    else:
        _print_frame(df[["op", "b", "m", "n", "k", "h", "in_channels", "out_channels", "kernel_size", "input_size", "stride",
                         "padding", "latency_ms"]])
        print(f"{cmd}: {len(df)} operator shapes timed on {where} in {took:.1f} s (--out FILE to keep them for "
              "`perfmodel fit --with FILE`)")
    return 0


def _cmd_measure(args) -> int:
    import pandas as pd

    from perfmodel.measure import (
        CHECKPOINT_COLUMNS,
        CLUSTER_COLUMNS,
        STEP_COLUMNS,
        append_rows,
        check_appendable,
        check_checkpoint_path,
        check_device,
        measure_campaign,
        measure_checkpoint_time,
        measure_cluster_speed,
        measure_step_time,
        summarize_steps,
    )
    from perfmodel.measure.noise import NOISE_COLUMNS

    cmd = f"perfmodel measure {args.measure_command}"
    if args.measure_command == "ops":
        return _measure_ops(args, cmd)
    shape = _shape(args.input_shape)
    if args.out:  # refuse a folder, a read-only file or folder, other columns now, not after measuring
        columns = {"step": STEP_COLUMNS, "campaign": STEP_COLUMNS, "checkpoint": CHECKPOINT_COLUMNS, "cluster": CLUSTER_COLUMNS,
                   "noise": NOISE_COLUMNS}
        check_appendable(args.out, columns[args.measure_command])
    if args.measure_command == "campaign":  # malformed lists: one line now, not a traceback (or an hour) later
        batch_sizes = _ints(args.batch_sizes, "--batch-sizes")
        thread_counts = _ints(args.thread_counts, "--thread-counts")
    elif args.measure_command == "cluster":
        _ints(args.world_sizes, "--world-sizes")
    if args.measure_command == "step":
        check_device(args.device)
        df = measure_step_time(args.model, shape, batch_size=args.batch_size, device=args.device, steps=args.steps, warmup=args.warmup,
                               threads=args.threads, progress=not args.quiet)
    elif args.measure_command == "checkpoint":
        if args.path is not None:
            check_checkpoint_path(args.path, overwrite=args.overwrite)
        df = measure_checkpoint_time(args.model, args.path, repeats=args.repeats, overwrite=args.overwrite)
    elif args.measure_command == "noise":
        return _measure_noise(args, cmd)
    elif args.measure_command == "cluster":
        df = measure_cluster_speed(args.model, shape, world_sizes=_ints(args.world_sizes, "--world-sizes"), batch_size=args.batch_size,
                                   steps=args.steps, warmup=args.warmup, backend=args.backend, threads=args.threads or 1,
                                   progress=_show_progress(args.quiet))
    else:
        if not args.out:
            print(f"{cmd}: --out FILE is required (the campaign appends to it and resumes from it)", file=sys.stderr)
            return 2
        res = measure_campaign(_names(args.models, "models"), out=args.out, batch_sizes=batch_sizes,
                               threads=thread_counts, input_shape=shape, budget_s=args.budget_s,
                               device=args.device, progress=not args.quiet)
        print(f"{cmd}: {res['measured']} measured, {res['skipped']} already in {args.out}, {res['seconds']:.0f} s")
        return 0
    if args.out:
        append_rows(df, args.out)
        print(f"{cmd}: {len(df)} rows appended to {args.out}")
    else:
        _print_frame(pd.DataFrame(df))
    if args.measure_command == "step":
        summary = summarize_steps(df)
        print(f"{cmd}: {df['model'].iloc[0]} batch {args.batch_size}: {summary}")
        for w in summary.warnings:
            print(f"perfmodel: warning: {w}", file=sys.stderr)
    return 0


def _cmd_fit(args) -> int:
    from pathlib import Path

    import perfmodel.step.op_latency as ol
    from perfmodel.step import op_fit as of
    extra = None
    if args.with_:
        import pandas as pd

        extra = pd.concat([ol.load_op_rows(p) for p in args.with_], ignore_index=True)
    out = Path(args.out) if args.out else None
    b = of.fit_op_model(extra, out=out, progress=not args.quiet, force=args.force,
                        extra_name=", ".join(args.with_) if args.with_ else None)
    verb = "fitted and wrote" if b["fitted"] else "already up to date:"
    print(f"{verb} {b['path']} (sha256 {b['sha256']})")
    print(f"fitted on: {b['model'].provenance_}")
    half = b.get("half") or {}
    if half.get("half_gemm") or half.get("half_memory"):
        from perfmodel.step.bandwidth import MIN_OWN_ROWS

        mem = (f"{half['half_memory']} memory-bound rows give " + ", ".join(half["own_bandwidth"]) + " a bandwidth "
               "efficiency of its own" if half.get("own_bandwidth") else
               f"{half['half_memory']} memory-bound rows refit nothing (fewer than {MIN_OWN_ROWS} of a class on one GPU)")
        print(f"half precision: {half['half_gemm']} BF16/FP16 GEMM rows refit the GEMM model; {mem}"
              + (": written beside it: " + ", ".join(str(p) for p in half["paths"]) if half["paths"] else ""))
    if half.get("half_unused"):
        print(f"{half['half_unused']} half-precision convolution rows refit nothing: convolutions in half precision are "
              "predicted from the FP32/TF32-learned model at the half-precision peak")
    print("leave-one-GPU-out calibration |log(sum predicted / sum measured)|:")
    _print_frame(b["scores"].rename_axis("gpu").reset_index())
    if extra is None:
        shipped = ol.load_bundle(ol.shipped_artifact_path(), sha256=ol.SHIPPED_SHA256)
        same = b["sha256"] == ol.SHIPPED_SHA256
        print("identical to the shipped model (same bytes)" if same else
              "differs from the shipped model: largest relative difference of the training rows' predictions "
              f"{_max_rel(shipped, b, ol):.3g}")
    else:
        print(f"use it: export {ol.ENV_OP_MODEL}={b['path']}")
    return 0


def _max_rel(a, b, ol) -> float:
    import numpy as np

    X = ol.neusight_op_frame("train", devices=ol.TRAINING_GPUS)
    pa, pb = a["model"].predict_in_stream(X), b["model"].predict_in_stream(X)
    return float(np.max(np.abs(pb / pa - 1)))


def build_parser() -> argparse.ArgumentParser:
    from perfmodel import __version__

    fmt = _DefaultsFormatter
    p = argparse.ArgumentParser(prog="perfmodel", description="Training-performance models of deep networks on cloud GPU clusters.")
    p.add_argument("--version", action="version", version=f"perfmodel {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

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

    fit = sub.add_parser("fit", formatter_class=fmt,
                         help="rebuild the shipped operator model from the data, or refit it with your own measurements")
    fit.add_argument("--with", dest="with_", action="append", metavar="CSV",
                     help="operator measurements in NeuSight's microbenchmark schema (device, op, latency_ms, shape columns; what `perfmodel measure ops --out` writes); repeatable")
    fit.add_argument("--out", default=None, metavar="FILE",
                     help="where to write the fitted model (default: <cache>/fitted/op_latency-user.npz); "
                          "point PERFMODEL_OP_MODEL at it to predict with it")
    fit.add_argument("--force", action="store_true", help="refit even when the file already holds this fit, and replace a "
                     "file at --out that holds something else")
    fit.add_argument("--quiet", action="store_true", help="no progress bar")
    fit.set_defaults(func=_cmd_fit)

    def model_arguments(parser, gpus_help: str) -> None:
        """The arguments predict and plan share: the model, the GPUs, one sample's shape, the batch."""
        parser.add_argument("model", help="a zoo id (see `perfmodel zoo`; any upstream spelling such as Res32), "
                                          "package.module:ClassName (a torch module class importable from the current folder "
                                          "and built without arguments), or a Hugging Face config.json")
        parser.add_argument("--gpus", default="K80,P100,V100", help=gpus_help)
        parser.add_argument("--input-shape", default=None,
                            help="shape of one input sample, without the batch dimension (3,32,32 for the zoo CNNs; "
                                 "the sequence length, e.g. 1024, for a config.json)")
        parser.add_argument("--batch-size", type=int, default=128, action=_Given, help="samples per step (global over all GPUs)")

    pred = sub.add_parser("predict", formatter_class=fmt,
                          help="step time and memory of a model on any GPU (pm.predict_step_time); on CM-DARE's GPUs also "
                               "its cluster speed and checkpoint time")
    model_arguments(pred, "comma-separated GPU names (catalog ids or the names clouds and nvidia-smi print)")
    pred.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "bf16", "fp16", "fp8"],
                      help="tensor precision (bf16/fp16: mixed precision; fp8: Float8 linears, Hopper/Ada only)")
    pred.add_argument("--optimizer", default="sgd-momentum", choices=["sgd-momentum", "adam", "adam-fused", "none"],
                      help="optimizer step included (none: forward + backward only)")
    pred.add_argument("--n-gpus", type=int, default=1, help="GPUs the step runs on")
    pred.add_argument("--strategy", default="dp", help="parallel strategy for --n-gpus > 1: dp, fsdp, tp, pp or a "
                                                         "combination such as dp2-tp2-pp2, fsdp8-tp8-pp8 or fsdp4-cp2 "
                                                         "(cp: context parallel)")
    pred.add_argument("--micro-batches", type=int, default=None, help="pipeline micro-batches (pp)")
    pred.add_argument("--pipeline-schedule", default="1f1b", choices=["1f1b", "interleaved-1f1b"],
                      help="pipeline schedule (interleaved: two model chunks per rank)")
    pred.add_argument("--async-tp", action="store_true",
                      help="asynchronous tensor parallelism: tp collectives overlapped with their matmuls")
    pred.add_argument("--interconnect", default=None,
                      help="link between GPUs: nvlink, pcie4, infiniband-ndr ..., a link per level "
                           "(intra=nvlink,inter=infiniband-ndr) or a link per group (tp=nvlink,dp=infiniband-ndr)")
    pred.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (for intra=/inter= links)")
    pred.add_argument("--activation-checkpointing", nargs="?", const="full", default=False,
                      help="recompute activations in the backward pass: full (the flag alone), selective "
                           "(torchtitan's per-operator policy) or layer / layer:N (every N-th layer, default 2)")
    pred.add_argument("--compile", action="store_true", help="torch.compile: memory-bound operator chains fused")
    pred.add_argument("--stack", choices=["eager", "compile", "te"], default=None,
                      help="kernel family the run uses: eager PyTorch (the default), torch.compile (as --compile) or "
                           "NVIDIA Transformer Engine's fused modules (te)")
    pred.add_argument("--breakdown", action="store_true",
                      help="also print each GPU's whole result (pm.predict): compute by pass, recompute, each process "
                           "group's exposed and total communication, bubble, memory by part, throughput, MFU")
    pred.add_argument("--max-workers", type=int, default=8, help="largest cluster (workers) in CM-DARE's cluster-speed table")
    pred.set_defaults(func=_cmd_predict)
    pl = sub.add_parser("plan", help="which cluster to rent: time, cost, revocations, Pareto front (CM-DARE's measured "
                                     "world for its CNNs and GPUs, today's clouds otherwise)", formatter_class=fmt)
    model_arguments(pl, "comma-separated worker GPU names, each with a price")
    pl.add_argument("--world", default="auto", choices=["auto", "cmdare", "cloud"],
                    help="which planner answers (auto: CM-DARE's for its CNNs on K80/P100/V100, today's clouds otherwise)")
    pl.add_argument("--max-workers", type=int, default=8, help="clusters of 1..N workers (measured: 1-8)")
    pl.add_argument("--steps", type=int, default=64000, action=_Given,
                    help="training steps (global steps; ICAC'19 trains ResNet-32 for 64000). When today's-cloud planner "
                         "answers, --steps and --batch-size as typed: steps of that one batch (without them: plan-cloud's "
                         "default amount of training at its batches)")
    pl.add_argument("--deadline-h", type=float, default=None, help="deadline in hours (none: unconstrained)")
    pl.add_argument("--budget-usd", type=float, default=None, help="budget in US dollars (none: unconstrained)")
    pl.add_argument("--prices", default=None, metavar="FILE",
                    help="CSV of prices in $/h with the columns of perfmodel.datasets.load_prices (none: ICAC'19's 2019 GCE prices)")
    pl.set_defaults(func=_cmd_plan)
    pc = sub.add_parser("plan-cloud", help="which GPUs to rent today: GPU x count x batch x strategy x spot, time, cost, "
                        "memory, revocations, Pareto front", formatter_class=fmt)
    pc.add_argument("model", help="a zoo id, package.module:ClassName, or a Hugging Face config as a JSON file (config.json)")
    pc.add_argument("--gpus", default=None, help="comma-separated GPU ids, each with a price (none: every GPU of the price table)")
    pc.add_argument("--n-gpus", default="1,2,4,8", help="comma-separated GPU counts")
    pc.add_argument("--batch-sizes", default="8,16,32", help="comma-separated global batch sizes")
    pc.add_argument("--strategies", default="dp,fsdp,tp,pp", help="comma-separated parallel strategies for more than one GPU, "
                    "combinations too (dp2-tp2-pp2)")
    pc.add_argument("--mixes", default=None, help="comma-separated mixes of GPU types to plan as well, data parallel with the "
                    "batch split by speed (e.g. 2xH100+6xL4,4xA100+4xL4; none: no mixes)")
    pc.add_argument("--no-capacity-wait", action="store_true", help="spot rows: do not add the wait for capacity the spot "
                    "traces predict (only report p_hold_instances)")
    pc.add_argument("--spot", choices=("both", "spot", "on-demand"), default="both", help="purchase options to plan")
    pc.add_argument("--input-shape", default="1024", help="shape of one input sample, without the batch dimension")
    amount = pc.add_argument_group("amount of training (one of; default: --samples 320000, i.e. 10,000 steps of batch 32)")
    amount.add_argument("--samples", type=int, default=None,
                        help="total training data in samples (sequences): every batch size trains on the same data, in "
                             "ceil(samples / batch) steps")
    amount.add_argument("--tokens", type=int, default=None,
                        help="total training data in tokens (a sequence model: --input-shape is the sequence length); "
                             "samples = ceil(tokens / sequence length)")
    amount.add_argument("--steps", type=int, default=None,
                        help="training steps, the SAME count at every batch size (a bigger batch then trains on more data: "
                             "a warning says so when several batch sizes are planned); with --b-simple, the steps at "
                             "--reference-batch")
    amount.add_argument("--b-simple", type=float, default=None,
                        help="gradient noise scale (`perfmodel measure noise`): rescale --steps counted at --reference-batch "
                             "to the same training progress at every batch (McCandlish et al.)")
    amount.add_argument("--reference-batch", type=int, default=None, help="the batch --steps was counted at (with --b-simple)")
    pc.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    pc.add_argument("--precision", default="bf16", help="fp32, tf32, bf16 or fp16")
    pc.add_argument("--optimizer", default="adam", help="adam, adam-fused or sgd-momentum")
    pc.add_argument("--deadline-h", type=float, default=None, help="deadline in hours (none: unconstrained)")
    pc.add_argument("--budget-usd", type=float, default=None, help="budget in US dollars (none: unconstrained)")
    pc.add_argument("--prices", default=None, metavar="FILE",
                    help="CSV of GPU VM prices with the columns of perfmodel.datasets.reference.load_gpu_prices "
                         "(none: the shipped, dated table)")
    pc.set_defaults(func=_cmd_plan_cloud)
    zoo = sub.add_parser("zoo", help="list the zoo ids (the twenty CM-DARE CNNs) with their size and accepted spellings")
    zoo.set_defaults(func=_cmd_zoo)

    meas = sub.add_parser("measure", help="time training steps, checkpoints, data-parallel clusters or operators on this machine")
    msub = meas.add_subparsers(dest="measure_command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--input-shape", default="3,32,32", help="one sample's shape without the batch dimension")
    common.add_argument("--out", default=None, metavar="FILE",
                        help="CSV file to append the rows to (atomically, locked: concurrent runs keep every row); default: print them")
    st = msub.add_parser("step", parents=[common], formatter_class=fmt, help="per-step training time of one model, with a summary and busy-machine warnings")
    st.add_argument("model", help="a zoo id")
    st.add_argument("--batch-size", type=int, default=128, help="images per step")
    st.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 ...")
    st.add_argument("--steps", type=int, default=20, help="timed steps")
    st.add_argument("--warmup", type=int, default=3, help="untimed warm-up steps before them")
    st.add_argument("--threads", type=int, default=None, help="torch CPU threads (none: torch's own setting)")
    st.add_argument("--quiet", action="store_true", help="no progress bar")
    ck = msub.add_parser("checkpoint", parents=[common], formatter_class=fmt, help="checkpoint (state dict + momentum) save time")
    ck.add_argument("model", help="a zoo id")
    ck.add_argument("--path", default=None, metavar="FILE",
                    help="checkpoint file written by each repetition and removed at the end; must not exist (see --overwrite) and "
                         "must not be a symbolic link (default: a private temporary folder)")
    ck.add_argument("--overwrite", action="store_true", help="replace (and remove at the end) an existing --path file")
    ck.add_argument("--repeats", type=int, default=5, help="repetitions")
    cl = msub.add_parser("cluster", parents=[common], formatter_class=fmt, help="DDP speed vs number of local worker processes")
    cl.add_argument("model", help="a zoo id")
    cl.add_argument("--world-sizes", default="1,2", help="comma-separated numbers of local worker processes")
    cl.add_argument("--batch-size", type=int, default=32, help="images per step per worker")
    cl.add_argument("--steps", type=int, default=5, help="timed steps per world size")
    cl.add_argument("--warmup", type=int, default=2, help="untimed warm-up steps before them")
    cl.add_argument("--backend", default="gloo", help="torch.distributed backend: gloo (CPU) or nccl (GPU)")
    cl.add_argument("--threads", type=int, default=1, help="torch CPU threads per worker process")
    cl.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    no = msub.add_parser("noise", parents=[common], formatter_class=fmt,
                         help="gradient noise scale of a model on your data (two batch sizes; statistical efficiency)")
    no.add_argument("model", help="a zoo id")
    no.add_argument("--data", required=True, metavar="FILE", help="torch.save({'x': inputs, 'y': targets}) of your training data")
    no.add_argument("--batch-small", type=int, default=8, help="the smaller batch size")
    no.add_argument("--batch-big", type=int, default=64, help="the larger batch size")
    no.add_argument("--draws", type=int, default=20, help="gradients per batch size")
    no.add_argument("--device", default="cpu", help="torch device")
    no.add_argument("--seed", type=int, default=0, help="seed of the mini-batch draws")
    no.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    ca = msub.add_parser("campaign", parents=[common], formatter_class=fmt, help="many models x batch sizes x threads, resumable")
    ca.add_argument("models", help="comma-separated zoo ids (any upstream spelling)")
    ca.add_argument("--batch-sizes", default="32,128", help="comma-separated batch sizes (images per step)")
    ca.add_argument("--thread-counts", default="1,2", help="comma-separated torch CPU threads")
    ca.add_argument("--device", default="cpu", help="torch device")
    ca.add_argument("--budget-s", type=float, default=1800.0, help="wall-time budget of the campaign, s")
    ca.add_argument("--quiet", action="store_true", help="no progress bar")
    op = msub.add_parser("ops", formatter_class=fmt,
                         help="operator microbenchmarks (NeuSight's schema) that calibrate the operator model to your GPU")
    op.add_argument("--device", default="cuda", help="torch device: cuda, cuda:1, cpu (a CPU run tests the harness only: "
                    "the operator model is calibrated with GPU rows)")
    op.add_argument("--precision", default="fp32", help="fp32 (TF32 off), tf32, bf16 or fp16")
    op.add_argument("--quick", action="store_true", help="21 small shapes, 5 repeats: seconds on a CPU (a smoke test)")
    op.add_argument("--classes", default=None, help="comma-separated operator classes (matmul, conv, layernorm, softmax, "
                    "elementwise) or NeuSight ops (bmm, linear, gelu ...); default all")
    op.add_argument("--repeats", type=int, default=None, help="timed calls per shape, median kept (default 25; 5 with --quick)")
    op.add_argument("--warmup", type=int, default=None, help="untimed calls before them (default 5; 2 with --quick)")
    op.add_argument("--out", default=None, metavar="FILE",
                    help="CSV file to append the rows to (atomically, locked; never overwritten; an existing file must have "
                         "the same columns); default: print them. With --sky: the local name to copy the CSV back to")
    op.add_argument("--sky", nargs="?", const="H100:1", default=None, metavar="ACCELERATOR",
                    help="write (do not launch) a SkyPilot task YAML that runs this on a rented GPU (default H100:1) and "
                         "print how to launch it, copy the CSV back and refit")
    op.add_argument("--yaml", default=None, metavar="FILE", help="with --sky: the task file to write (never overwritten; "
                    "default perfmodel-measure-ops-<GPU>-<precision>.yaml)")
    op.add_argument("--install", default="perfmodel[torch]", help="with --sky: what the VM pip-installs (a version, a wheel "
                    "URL or git+https://...)")
    op.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
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

    feat = sub.add_parser("features", help="graph features of a zoo CNN or any torch module", formatter_class=fmt)
    feat.add_argument("target", help="a zoo id (e.g. resnet-32) or package.module:ClassName (instantiated without arguments)")
    feat.add_argument("--input-shape", default="3,32,32", help="shape of one input sample, without the batch dimension")
    feat.add_argument("--batch-size", type=int, default=1, help="samples per step (counts scale with it)")
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
    if args.command in ("predict", "plan", "plan-cloud", "fit"):
        errors += (ValueError,)
    if args.command == "fit":
        errors += (OSError,)
    if args.command == "measure":
        from perfmodel.measure import MeasurementFileError

        errors += (MeasurementFileError, ValueError, OSError)  # OSError: a file or folder that refuses (message names it)
    if args.command in ("features", "predict", "plan", "plan-cloud"):  # a model that cannot run on the input asked for
        from perfmodel.features import FeatureExtractionError

        errors += (FeatureExtractionError,)
    import warnings

    seen: set = set()

    def one_line(message, category, filename, lineno, file=None, line=None):
        text = f"perfmodel: warning ({category.__name__}): {message}"
        if text not in seen:  # the same warning from several call sites once
            seen.add(text)
            print(text, file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `perfmodel zoo | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
    except _UsageError as exc:
        sub = getattr(args, f"{args.command}_command", None)  # measure step, data verify ...
        print(f"perfmodel {args.command}{' ' + sub if sub else ''}: {exc}", file=sys.stderr)
        return 2
    except errors as exc:
        print(f"perfmodel: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

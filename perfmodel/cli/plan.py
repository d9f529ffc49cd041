"""``perfmodel plan`` (which cluster to rent, in CM-DARE's measured world or today's clouds) and ``perfmodel
plan-cloud`` (which GPUs to rent today)."""
from __future__ import annotations

import argparse
import math
import sys

from perfmodel.cli._common import (
    add_fp8_recipe,
    add_stack,
    _DefaultsFormatter,
    _Given,
    _interconnect,
    _ints,
    _model_arg,
    _names,
    _positive,
    _print_frame,
    _shape,
    _show_progress,
    _UsageError,
    model_arguments,
)


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
    return _parser().parse_args(argv)


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
    t["mfu"] = t["mfu"].astype(float).round(3)
    cols = ["gpu", "n_gpus", "strategy", "batch_size", "steps", "spot", "provider", "region", "instance_type", "time_h", "cost_usd", "mfu",
            "mem_gib_per_gpu", "gpu_gib", "fits", "expected_revocations", "expected_failures", "capacity_wait_h", "feasible"]
    return t[cols]


def _failures(rate) -> dict:
    """--failures-per-gpu-h as plan_cloud's keyword (none given: plan_cloud's default rate)."""
    if rate is None:
        return {}
    if not (math.isfinite(rate) and rate >= 0):
        raise _UsageError(f"--failures-per-gpu-h must be a number of hardware failures per GPU-hour, 0 or more (0: none); "
                          f"got {rate}.")
    return dict(failures_per_gpu_h=rate)


def _cmd_plan_cloud(args) -> int:
    import warnings

    from perfmodel.planning import plan_cloud
    from perfmodel.planning.cloud import read_gpu_prices

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
    if args.mixes and args.stack not in (None, "eager"):
        raise _UsageError(f"--mixes are predicted with eager PyTorch kernels only; got --stack {args.stack}. Plan the mixes "
                          "without --stack, or the stack without --mixes.")
    if args.mixes and args.fp8_recipe is not None:
        raise _UsageError(f"--mixes take no FP8 recipe (they run the default one); got --fp8-recipe {args.fp8_recipe}. Plan "
                          "the mixes without --fp8-recipe, or the recipe without --mixes.")
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
                       wait_for_capacity=not args.no_capacity_wait, progress=_show_progress(args.quiet),
                       framework=args.framework, stack=args.stack, fp8_recipe=args.fp8_recipe,
                       interconnect=_interconnect(args.interconnect), **_failures(args.failures_per_gpu_h))
    if steps is None:
        amount = (f"{args.tokens} tokens = {samples} sequences of {shape[0]}" if args.tokens is not None else f"{samples} samples")
        what = f"{amount}; steps = ceil(samples / batch)"
    elif args.b_simple is not None:
        what = f"{steps} steps at batch {args.reference_batch}, rescaled by B_simple = {args.b_simple:g}"
    else:
        what = f"{steps} steps"
    return _print_cloud_plan(f, what, args)


def _print_cloud_plan(f, what: str, args) -> int:
    """The plan as `perfmodel plan-cloud` prints it: the Pareto front, the candidates that do not fit, and the answers
    to --deadline-h and --budget-usd; 1 when nothing fits."""
    from perfmodel.planning import cheapest_within_deadline, fastest_within_budget
    from perfmodel.planning.cloud import nothing_fits

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


def add_parser(sub, fmt) -> None:
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
    pc.add_argument("--gpus", "--gpu", dest="gpus", default=None, help="comma-separated GPU ids, each with a price (none: every GPU of the price table)")
    pc.add_argument("--n-gpus", default="1,2,4,8", help="comma-separated GPU counts")
    pc.add_argument("--batch-sizes", default="8,16,32", help="comma-separated global batch sizes")
    pc.add_argument("--strategies", default="dp,fsdp,tp,pp", help="comma-separated parallel strategies for more than one GPU, "
                    "combinations too (dp2-tp2-pp2), or search: every FSDP and Megatron layout of a transformer (data x "
                    "context x tensor x pipeline, interleaved chunks, recomputation, gradient sharding) tried on each "
                    "GPU and count, the fastest that fits planned (as `perfmodel layouts` searches one cluster)")
    pc.add_argument("--framework", default=None, choices=["pytorch", "megatron"],
                    help="how the layouts run: pytorch (DDP, FSDP) or megatron (distributed optimizer, sequence parallelism; "
                         "fsdp candidates are skipped); none: pytorch, and both for --strategies search")
    pc.add_argument("--interconnect", default=None,
                    help="links of every candidate: one link (nvlink), one per group (tp=nvlink,dp=infiniband-ndr) or a "
                         "link per level (intra=nvlink,inter=infiniband-ndr: each instance a node of its GPUs); none: the "
                         "GPU's own inside an instance, the instance type's own network between instances "
                         "(perfmodel.datasets.load_instance_networks, or the prices' network_gbit_per_s column), "
                         "ethernet-100g where none is known")
    pc.add_argument("--failures-per-gpu-h", type=float, default=None, metavar="RATE",
                    help="hardware failures per GPU-hour, each stopping the job (none: the Llama 3 405B run's, 419 "
                         "unexpected interruptions in 54 days on 16,384 H100; 0: none)")
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
    pc.add_argument("--precision", default="bf16", help="fp32, tf32, bf16, fp16 or fp8")
    pc.add_argument("--optimizer", default="adam", help="adam, adam-fused or sgd-momentum")
    add_stack(pc, "every candidate runs (not with --mixes)")
    add_fp8_recipe(pc, ", every candidate; not with --mixes")
    pc.add_argument("--deadline-h", type=float, default=None, help="deadline in hours (none: unconstrained)")
    pc.add_argument("--budget-usd", type=float, default=None, help="budget in US dollars (none: unconstrained)")
    pc.add_argument("--prices", default=None, metavar="FILE",
                    help="CSV of GPU VM prices with the columns of perfmodel.datasets.reference.load_gpu_prices, "
                         "optionally network_gbit_per_s and gpudirect_rdma (the network between instances) "
                         "(none: the shipped, dated table)")
    pc.set_defaults(func=_cmd_plan_cloud)


def _parser() -> argparse.ArgumentParser:
    """The sub-commands of this module under `perfmodel`, as the full parser builds them: what `perfmodel plan`
    hands on to plan-cloud is parsed as `perfmodel plan-cloud` would parse it."""
    p = argparse.ArgumentParser(prog="perfmodel")
    add_parser(p.add_subparsers(dest="command", required=True), _DefaultsFormatter)
    return p

"""``perfmodel measure``: time training steps, checkpoints, data-parallel clusters, the gradient noise scale or operators
on this machine (or write a SkyPilot task that measures operators on a rented GPU)."""
from __future__ import annotations

import argparse
import sys

from perfmodel.cli._common import _ints, _names, _print_frame, _shape, _show_progress, _UsageError


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


def _measure_llm(args, cmd: str) -> int:
    """``perfmodel measure llm``: a Hugging Face config's training step on this machine's GPU, with its clock."""
    from pathlib import Path

    from perfmodel.measure.llm import measure_llm_step
    from perfmodel.measure.summary import summarize_steps

    if not Path(args.config).is_file():
        raise _UsageError(f"{args.config!r} is not a file: expected the path of a Hugging Face config.json (e.g. "
                          "examples/llama-3-8b.json); the model is built from it, nothing is downloaded.")
    df = measure_llm_step(args.config, seq_len=args.seq_len, batch_size=args.batch_size, precision=args.precision,
                          optimizer=args.optimizer, attention=args.attention, device=args.device, steps=args.steps,
                          warmup=args.warmup, out=args.out, progress=not args.quiet)
    if args.out:
        print(f"{cmd}: {len(df)} rows appended to {args.out}")
    else:
        _print_frame(df[["step", "warmup", "step_time_s", "tokens_per_s", "outlier", "sm_clock_mhz", "power_w"]])
    timed = df[~df["warmup"]]
    r = df.iloc[0]
    clock = (f"SM clock {timed['sm_clock_mhz'].median():.0f} MHz, {timed['power_w'].median():.0f} W of "
             f"{r['power_limit_w']:.0f} W ({r['clock_source']})" if timed["clock_samples"].sum() else f"clock: {r['clock_source']}")
    mem = (f", peak {r['peak_reserved_gib']:.1f} GiB reserved" if r["peak_reserved_gib"] == r["peak_reserved_gib"] else "")
    summary = summarize_steps(df.assign(images_per_s=df["tokens_per_s"]))
    print(f"{cmd}: {r['model']} ({r['n_params'] / 1e6:.1f}M parameters) {r['precision']} {r['attention']} batch "
          f"{r['batch_size']} x {r['seq_len']} tokens, optimizer {r['optimizer']} on {r['device_name']}: median step "
          f"{timed['step_time_s'].median():.4g} s, {timed['tokens_per_s'].median():,.0f} tokens/s{mem}; {clock}")
    for w in summary.warnings:
        print(f"perfmodel: warning: {w}", file=sys.stderr)
    return 0


def _measure_gemms(args, cmd: str) -> int:
    """``perfmodel measure gemms``: GEMMs held for seconds, the clock a part sustains under them."""
    from perfmodel.measure.llm import DEFAULT_GEMM_SHAPES, measure_sustained_gemms, parse_gemm_shapes

    try:
        shapes = parse_gemm_shapes(args.shapes) if args.shapes else DEFAULT_GEMM_SHAPES
    except ValueError as exc:
        raise _UsageError(f"--shapes: {exc}") from None
    df = measure_sustained_gemms(shapes, precision=args.precision, seconds=args.seconds, device=args.device, out=args.out,
                                 progress=not args.quiet)
    _print_frame(df[["m", "n", "k", "precision", "ms", "ms_first", "tflops", "sm_clock_mhz", "power_w", "power_limit_w"]])
    if args.out:
        print(f"{cmd}: {len(df)} GEMMs appended to {args.out}; the share of its datasheet clock the part sustained under "
              f"them: perfmodel predict ... --gpu <its catalog id> --sustained-clock {args.out}")
    print(f"{cmd}: clock source: {df['clock_source'].iloc[0]}")
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
    if args.measure_command == "llm":
        return _measure_llm(args, cmd)
    if args.measure_command == "gemms":
        return _measure_gemms(args, cmd)
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


def add_parser(sub, fmt) -> None:
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
    lm = msub.add_parser("llm", formatter_class=fmt,
                         help="training step of a Hugging Face config.json (built, never downloaded) on your GPU, with the SM "
                              "clock and power it ran at: the step perfmodel's prediction is checked against")
    lm.add_argument("config", help="a Hugging Face config.json (e.g. examples/llama-3-8b.json)")
    lm.add_argument("--seq-len", type=int, required=True, help="tokens per sequence")
    lm.add_argument("--batch-size", type=int, default=1, help="sequences per step")
    lm.add_argument("--precision", default="bf16", help="fp32 (TF32 off), tf32, bf16 or fp16: the model's dtype (not autocast; "
                    "bf16/fp16 keep FP32 master weights and optimizer states beside an optimizer)")
    lm.add_argument("--optimizer", default="adam-fused", choices=["none", "sgd-momentum", "adam", "adam-fused"],
                    help="optimizer step timed with the step (none: forward and backward only)")
    lm.add_argument("--attention", default=None, choices=["sdpa", "eager"],
                    help="attention kernel (default: the config's attn_implementation, else sdpa)")
    lm.add_argument("--device", default="cuda", help="torch device: cuda, cuda:1, cpu (a CPU run tests the harness only)")
    lm.add_argument("--steps", type=int, default=10, help="timed steps")
    lm.add_argument("--warmup", type=int, default=3, help="untimed warm-up steps before them")
    lm.add_argument("--out", default=None, metavar="FILE",
                    help="CSV file to append the rows to (atomically, locked; never overwritten); default: print them")
    lm.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    gm = msub.add_parser("gemms", formatter_class=fmt,
                         help="GEMMs run back to back for seconds, with the SM clock and power the part held: the rows "
                              "`perfmodel predict --sustained-clock FILE` reads")
    gm.add_argument("--shapes", default=None, help="comma-separated m x n x k (an m x k input times a k x n weight), e.g. "
                    "8192x14336x4096,4096x4096x4096; default: a Llama 3 8B layer's GEMMs at 8,192 tokens and two square ones")
    gm.add_argument("--precision", default="bf16", help="fp32 (TF32 off), tf32, bf16, fp16, fp8 (E4M3, fast accumulation: "
                    "the forward GEMMs of FP8 training) or fp8-split (split accumulation: its backward GEMMs)")
    gm.add_argument("--seconds", type=float, default=10.0, help="loop length per shape, s (the part reaches its power limit)")
    gm.add_argument("--device", default="cuda", help="torch device: cuda, cuda:1, cpu (a CPU run tests the harness only)")
    gm.add_argument("--out", default=None, metavar="FILE",
                    help="CSV file to append the rows to (atomically, locked; never overwritten); default: print them")
    gm.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    meas.set_defaults(func=_cmd_measure)

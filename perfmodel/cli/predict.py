"""``perfmodel predict``: step time and memory of a model on any GPU; on CM-DARE's GPUs also its cluster speed and
checkpoint time."""
from __future__ import annotations

import argparse

from perfmodel.cli._common import (
    DEFAULT_GPUS,
    instance_cluster_arg,
    add_compile_scope,
    add_fp8_recipe,
    add_moe_options,
    add_stack,
    _gib,
    rule_of_thumb_steps,
    _interconnect,
    _model_arg,
    _names,
    _print_frame,
    _shape,
    _UsageError,
    model_arguments,
)


def _cmd_predict(args) -> int:
    import warnings

    from perfmodel.datasets import canonical_gpu, gpu_spec
    from perfmodel.planning.unified import CMDARE_GPUS

    gpus = _names(args.gpus, "--gpus")
    links = dict(interconnect=_interconnect(args.interconnect), gpus_per_node=args.gpus_per_node,
                 nics_per_node=args.nics_per_node)
    if args.instance is not None:
        c = instance_cluster_arg(args, gpu_option="--gpus", given_gpus=args.gpus, default_gpus=DEFAULT_GPUS)
        gpus, links = [c.gpu], dict(interconnect=c.interconnect, gpus_per_node=c.gpus_per_node,
                                    nics_per_node=c.nics_per_node)
    names = list(gpus)
    if args.max_workers < 1 or args.batch_size < 1 or args.n_gpus < 1:
        raise _UsageError(f"--max-workers, --batch-size and --n-gpus must be ≥ 1; got {args.max_workers}, {args.batch_size} "
                          f"and {args.n_gpus}.")
    clocks = None if args.sustained_clock is None else _clocks(gpus, args.sustained_clock, args.n_gpus)
    model = _model_arg(args.model)
    shape = _shape(args.input_shape) if args.input_shape else None
    optimizer = None if args.optimizer == "none" else args.optimizer
    kw = dict(input_shape=shape, batch_size=args.batch_size, precision=args.precision, optimizer=optimizer, n_gpus=args.n_gpus,
              strategy=args.strategy, micro_batches=args.micro_batches, **links,
              activation_checkpointing=args.activation_checkpointing, compile=args.compile,
              async_tp=args.async_tp, pipeline_schedule=args.pipeline_schedule,
              framework=args.framework, virtual_stages=args.virtual_stages,
              distributed_optimizer=args.distributed_optimizer, sequence_parallel=args.sequence_parallel,
              **({} if args.overlap_grad_reduce is None else {"overlap_grad_reduce": args.overlap_grad_reduce}))
    from perfmodel._run import trusted_replace
    from perfmodel.step.step_time import keyword_run, predict_frame

    # the run in its three objects: the keywords checked as pm.predict_step_time checks them, and the options only
    # the objects take (the FP8 recipe, the FP8 parameter gather)
    w, cs, how = keyword_run(model, gpus, stack=args.stack, **kw)
    if clocks is not None:  # each GPU at the clock --sustained-clock gives, as pm.Cluster(..., clock=) says it
        cs = tuple(trusted_replace(c, clock=f) for c, f in zip(cs, clocks))
    w = trusted_replace(w, fp8_recipe=args.fp8_recipe)
    if args.compile_scope is not None:  # checked against the kernel family where the step model reads it
        w = trusted_replace(w, compile_scope=args.compile_scope)
    how = trusted_replace(how, fp8_param_gather=args.fp8_param_gather, overlap_tp_backward=args.overlap_tp_backward,
                          shard_gradients=args.shard_gradients)
    if args.context_parallel_kv != "grouped":  # checked as Parallelism checks it
        import dataclasses

        how = dataclasses.replace(how, context_parallel_kv=args.context_parallel_kv)
    if (args.expert_load_imbalance != 1.0 or args.overlap_moe_dispatch or args.expert_tensor_parallel is not None
            or args.moe_dispatcher != "alltoall"):
        import dataclasses  # checked as Parallelism checks them

        how = dataclasses.replace(how, expert_load_imbalance=args.expert_load_imbalance,
                                  overlap_moe_dispatch=args.overlap_moe_dispatch,
                                  expert_tensor_parallel=args.expert_tensor_parallel, moe_dispatcher=args.moe_dispatcher)
    if args.micro_batch_size is not None:  # checked as Parallelism checks it (one of the two ways to cut the batch)
        import dataclasses

        how = dataclasses.replace(how, micro_batch_size=args.micro_batch_size)
    pipeline_layers = _pipeline_layers(args.pipeline_layers)
    if pipeline_layers is not None:
        import dataclasses

        how = dataclasses.replace(how, pipeline_layers=pipeline_layers)
    step = predict_frame(w, cs, how)
    where = f"{args.n_gpus} x GPU, {args.strategy}" if args.n_gpus > 1 else "one GPU"
    if args.instance is not None:
        where += f", on {args.instance} instances"
    print(f"training step ({where}, global batch {args.batch_size}, {args.precision}, optimizer {args.optimizer}); "
          "spec-sheet prediction by perfmodel's per-operator model:")
    cols = [c for c in ("gpu", "step_time_s", "lower_s", "upper_s", "forward_s", "backward_s", "optimizer_s", "comm_s")
            if c in step.columns]
    out = step[cols].copy()  # a training step's rows carry its memory per GPU (pm.predict_memory) and whether it fits
    out["memory_per_gpu"] = [_gib(v) for v in step["memory_per_gpu_bytes"]]
    out["gpu_memory"] = [_gib(gpu_spec(g).memory_gib * 2**30) for g in gpus]
    out["fits"] = step["fits"].to_numpy()
    rule = rule_of_thumb_steps(model, gpus, shape, args) if isinstance(model, dict) else None
    if rule is not None:  # a transformer's config: the one-line estimate beside perfmodel's
        out["rule_of_thumb_s"] = rule
    _print_frame(out)
    if rule is not None:
        print("rule_of_thumb_s: the one-line estimate practitioners size runs with, (6·N + 12·L·h·s) FLOPs per token at "
              "40 % of the dense peak (BF16's for FP8) over all the GPUs (perfmodel.step.baselines.rule_of_thumb_step_time)")
    if not out["fits"].all():
        print("\nDOES NOT FIT on " + ", ".join(out.loc[~out["fits"], "gpu"]) + ": the step time above is for a run that "
              "would stop with out-of-memory; use more GPUs, fsdp/tp/pp, activation checkpointing or a smaller batch.")
    print(f"\nbasis: {step['basis'].iloc[0]}")
    if args.breakdown:
        _print_breakdown(w, cs, how)
    cmdare = (not isinstance(model, dict) and args.n_gpus == 1 and args.precision == "fp32" and args.sustained_clock is None
              and all(canonical_gpu(g) in CMDARE_GPUS for g in names))
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


def _pipeline_layers(text):
    """``--pipeline-layers`` as :attr:`perfmodel.Parallelism.pipeline_layers` (None when not given)."""
    if text is None:
        return None
    from perfmodel.step.strategy import parse_pipeline_layers

    try:
        return parse_pipeline_layers(text)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


def _clocks(gpus: list, value: str, n_gpus: int = 1) -> list:
    """The share of its datasheet clock each GPU runs at by ``--sustained-clock`` (:attr:`perfmodel.Cluster.clock`): a
    share in (0, 2], or a CSV of GEMMs measured on the part (columns m, n, k and ms or tflops; an optional precision
    column, BF16 rows used) from which :func:`perfmodel.step.kernels.sustained_clock` finds it, GPU by GPU — one
    chip's clock, so that a run of ``n_gpus`` runs at the expected slowest of its chips'
    (:func:`perfmodel.step.kernels.slowest_chip_clock`, where the part's chip-to-chip spread is published)."""
    from pathlib import Path

    import pandas as pd

    from perfmodel.datasets import gpu_spec
    from perfmodel.step.kernels import MAX_CLOCK_SHARE, slowest_chip_clock, sustained_clock

    try:
        factor = float(value)
    except ValueError:
        factor = None
    if factor is not None:
        if not 0 < factor <= MAX_CLOCK_SHARE:
            raise _UsageError(f"--sustained-clock must be a share of the datasheet clock in (0, {MAX_CLOCK_SHARE:g}] or a "
                              f"CSV of measured GEMMs; got {value}.")
        return [factor] * len(gpus)
    path = Path(value)
    if not path.is_file():
        raise _UsageError(f"--sustained-clock {value!r} is neither a number in (0, {MAX_CLOCK_SHARE:g}] nor a CSV file "
                          "of measured GEMMs (columns m, n, k and ms or tflops).")
    gemms = pd.read_csv(path)
    try:
        out = []
        for g in gpus:
            f = sustained_clock(g, gemms)
            name = gpu_spec(g).gpu
            said = f"{name}: the GEMMs of {path.name} ran at {f:.3f} of its datasheet clock"
            run = slowest_chip_clock(f, name, n_gpus)
            if run != f:  # one chip measured: a synchronous step of n waits on the slowest of them
                said += f"; the slowest of {n_gpus} chips is expected at {run:.3f} (the part's chip-to-chip spread)"
            print(said)
            out.append(run)
        return out
    except ValueError as exc:
        raise _UsageError(f"--sustained-clock {path.name}: {exc}") from exc


def _print_breakdown(work, clusters, how) -> None:
    """Each cluster's :class:`perfmodel.Prediction` of the run the table predicted (its three objects: the same
    numbers as the table)."""
    import warnings

    import perfmodel as pm

    for c in clusters:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said once above, by the table's prediction
            res = pm.predict(work, c, how)
        print(f"\n{res!r}")


def add_parser(sub, fmt) -> None:
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
                                                         "(cp: context parallel); a mixture of experts may add ep, "
                                                         "expert parallel over the data-parallel ranks (dp64-ep8)")
    pred.add_argument("--micro-batches", type=int, default=None,
                      help="micro-batches per step (pp; default with a pipeline: one sequence each)")
    pred.add_argument("--micro-batch-size", type=int, default=None,
                      help="sequences per micro-batch on one data-parallel rank (Megatron's --micro-batch-size); "
                           "instead of --micro-batches")
    pred.add_argument("--pipeline-schedule", default="1f1b", choices=["1f1b", "interleaved-1f1b"],
                      help="pipeline schedule (interleaved: --virtual-stages model chunks per rank, default 2)")
    pred.add_argument("--virtual-stages", type=int, default=None,
                      help="model chunks per pipeline rank with --pipeline-schedule interleaved-1f1b (Megatron's recipes: 2-8)")
    pred.add_argument("--pipeline-layers", default=None,
                      help="transformer layers per pipeline rank: 7,8,8,7 (each rank's), first=7,last=7 (Megatron's "
                           "--decoder-first/last-pipeline-num-layers, the rest evenly over the middle ranks) or "
                           "embedding,loss (each counted as a layer, Megatron's --account-for-*-in-pipeline-split); "
                           "default: as evenly as they go")
    pred.add_argument("--async-tp", action="store_true",
                      help="tp collectives overlapped with their matmuls (torchtitan's async TP, a torch.compile pass: with "
                           "--compile; Megatron's --tp-comm-overlap)")
    pred.add_argument("--framework", default="pytorch", choices=["pytorch", "megatron"],
                      help="how the layout runs: pytorch (DDP, FSDP2 as torchtitan runs it) or megatron (Megatron-Core: "
                           "distributed optimizer, sequence parallelism with tp, FP32 main gradients); spell megatron's "
                           "data-parallel factor dp, e.g. --strategy dp2-tp4-pp8")
    pred.add_argument("--distributed-optimizer", action=argparse.BooleanOptionalAction, default=None,
                      help="Megatron's distributed optimizer (default: on with --framework megatron)")
    pred.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=None,
                      help="split norms, dropouts and activations along the sequence over the tp ranks (default: on with "
                           "--framework megatron and tp, and with fsdp and tp)")
    pred.add_argument("--interconnect", default=None,
                      help="link between GPUs: nvlink, pcie4, infiniband-ndr ..., a link per level "
                           "(intra=nvlink,inter=infiniband-ndr; without intra= each GPU's own) or a link per group "
                           "(tp=nvlink,dp=infiniband-ndr), also as JSON; default each GPU's own link in a node and, "
                           "across nodes, its reference system's network (said in basis)")
    pred.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (for intra=/inter= links)")
    pred.add_argument("--instance", default=None, metavar="TYPE",
                      help="a cloud instance type of the price table (p5.48xlarge, a3-highgpu-8g, ...): its GPU, its GPUs "
                           "per node, and its network between instances (perfmodel.datasets.load_instance_networks)")
    pred.add_argument("--nics-per-node", type=int, default=None,
                      help="NICs per node, each on its own rail, for intra=/inter= links: a group that leaves its node gets "
                           "its share of them (8 on an HGX/DGX H100 node; default: one per GPU with an InfiniBand inter link, "
                           "else one NIC per group)")
    pred.add_argument("--activation-checkpointing", nargs="?", const="full", default=False,
                      help="recompute activations in the backward pass: full (the flag alone), selective "
                           "(torchtitan's per-operator policy; Megatron's core attention with --framework megatron), "
                           "attention (Megatron's selective recomputation of the core attention) or layer / layer:N "
                           "(every N-th layer, default 2)")
    pred.add_argument("--compile", action="store_true", help="torch.compile: memory-bound operator chains fused")
    add_compile_scope(pred)
    add_stack(pred)
    add_fp8_recipe(pred)
    pred.add_argument("--fp8-param-gather", action=argparse.BooleanOptionalAction, default=None,
                      help="with --precision fp8: keep and all-gather the FP8 linears' weights in FP8 (Megatron's "
                           "--fp8-param-gather with its distributed optimizer; FSDP's FP8 all-gather). Default: the "
                           "framework's (on under fsdp with --compile, off with --framework megatron)")
    pred.add_argument("--overlap-tp-backward", action=argparse.BooleanOptionalAction, default=None,
                      help="with a tp factor: the column-parallel linears' backward collectives under their own GEMMs, "
                           "as Megatron-Core's and Transformer Engine's layers run them (default: on with --framework "
                           "megatron, off otherwise; --no-overlap-tp-backward for Megatron-LM before August 2021)")
    pred.add_argument("--overlap-grad-reduce", action=argparse.BooleanOptionalAction, default=None,
                      help="dp: gradient buckets all-reduced under the backward pass, as PyTorch DDP runs them (the "
                           "default); --no-overlap-grad-reduce after it (Megatron-LM's default without "
                           "--overlap-grad-reduce)")
    pred.add_argument("--shard-gradients", action=argparse.BooleanOptionalAction, default=None,
                      help="ZeRO-2: every micro-batch's gradients reduce-scattered into the rank's shard (Megatron's "
                           "--data-parallel-sharding-strategy optim_grads; FSDP synchronising every micro-batch). Needs "
                           "fsdp or --framework megatron's distributed optimizer. Default: the framework's (whole "
                           "gradients reduced once per step, but under fsdp without a pipeline)")
    pred.add_argument("--context-parallel-kv", choices=("grouped", "repeated"), default="grouped",
                      help="with a cp factor: K and V exchanged at their own heads (default) or at every query head, "
                           "for a model that repeats them before the attention kernel (torchtitan's Llama until "
                           "mid-2025)")
    add_moe_options(pred)
    pred.add_argument("--sustained-clock", default=None, metavar="SHARE_OR_CSV",
                      help="run the GPUs at this share of their datasheet clock (a part held at its power limit by "
                           "continuous GEMM load sustains less), or at the share found from a CSV of GEMMs measured on "
                           "one GPU of the part (columns m, n, k and ms or tflops; perfmodel.step.kernels."
                           "sustained_clock), less the expected shortfall of the slowest of --n-gpus chips where the "
                           "part's chip-to-chip spread is published (perfmodel.step.kernels.slowest_chip_clock); "
                           "pm.Cluster's clock. Default: the share the slowest of the run's chips is expected to "
                           "sustain where it is published (700 W Hopper, B200; BF16, FP16, FP8), else the datasheet's")
    pred.add_argument("--breakdown", action="store_true",
                      help="also print each GPU's whole result (pm.predict): compute by pass, recompute, each process "
                           "group's exposed and total communication, bubble, memory by part, throughput, MFU")
    pred.add_argument("--max-workers", type=int, default=8, help="largest cluster (workers) in CM-DARE's cluster-speed table")
    pred.set_defaults(func=_cmd_predict)

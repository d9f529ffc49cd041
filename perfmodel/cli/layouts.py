"""``perfmodel layouts``: every FSDP and Megatron-Core layout of one large run on one cluster, checked for memory and
the ones that fit predicted, fastest first (:func:`perfmodel.planning.search_layouts`)."""
from __future__ import annotations

from perfmodel.cli._common import (
    add_compile_scope,
    add_fp8_recipe,
    add_moe_options,
    add_stack,
    _gib,
    rule_of_thumb_steps,
    _ints,
    _interconnect,
    _model_arg,
    _names,
    _positive,
    _print_frame,
    _shape,
    _show_progress,
    _UsageError,
    instance_cluster_arg,
)

#: the GPU ``--gpu`` names when left out
_DEFAULT_GPU = "H100"

#: activation-checkpointing policies by their command-line names
_POLICIES = {"none": False, "selective": "selective", "full": "full"}


def _policies(text: str) -> list:
    names = _names(text, "--activation-checkpointing")
    bad = [n for n in names if n not in _POLICIES and not n.startswith("layer") and n != "attention"]
    if bad:
        raise _UsageError(f"--activation-checkpointing takes policies among none, selective, attention, full, layer, "
                          f"layer:N, least recomputation first; got {', '.join(map(repr, bad))}.")
    return [_POLICIES.get(n, n) for n in names]


def _cmd_layouts(args) -> int:
    import warnings

    import perfmodel as pm
    from perfmodel.planning import search_layouts

    if args.n_gpus < 1 or args.batch_size < 1 or args.gpus_per_node < 1 or args.top < 1:
        raise _UsageError(f"--n-gpus, --batch-size, --gpus-per-node and --top must be ≥ 1; got {args.n_gpus}, "
                          f"{args.batch_size}, {args.gpus_per_node} and {args.top}.")
    _positive(args.usd_per_gpu_h, "--usd-per-gpu-h")
    if "," in args.gpu:
        raise _UsageError(f"perfmodel layouts searches the layouts of one GPU; got --gpu {args.gpu!r}. Run it once per GPU "
                          "(or compare GPUs with `perfmodel predict --gpus A,B --strategy ...`).")
    model = _model_arg(args.model)
    if not isinstance(model, dict):
        raise _UsageError(f"perfmodel layouts searches the layouts of a transformer language model: give its Hugging Face "
                          f"config.json (e.g. examples/llama-3-8b.json); got {args.model!r}. For other models use "
                          "`perfmodel predict --strategy ...`.")
    if args.input_shape is None:
        raise _UsageError("--input-shape is required: the sequence length of one sample, e.g. --input-shape 8192.")
    shape = _shape(args.input_shape)
    if args.instance is not None:  # the instance's GPU, node and network; its cheapest on-demand GPU-hour for the cost
        cluster = instance_cluster_arg(args, gpu_option="--gpu", given_gpus=args.gpu, default_gpus=_DEFAULT_GPU)
        if args.usd_per_gpu_h is None:
            from perfmodel.planning.cloud import check_gpu_prices

            p = check_gpu_prices()
            rows = p[p["instance_type"] == args.instance]
            if rows.empty:
                print(f"note: the shipped price table has no price for {args.instance}: give --usd-per-gpu-h for the cost "
                      "per step.")
            else:
                args.usd_per_gpu_h = float((rows["on_demand_usd_per_h"] / rows["gpus_per_instance"]).min())
                print(f"note: cost per step at {args.instance}'s cheapest on-demand GPU-hour in the shipped price table, "
                      f"${args.usd_per_gpu_h:.3g} (--usd-per-gpu-h for yours).")
        args.gpu, args.gpus_per_node = cluster.gpu, cluster.gpus_per_node
    elif args.interconnect is None:
        from perfmodel.step.strategy import default_network

        net = default_network(args.gpu, {"dp": args.n_gpus}, args.gpus_per_node, args.nics_per_node)
        if net is not None:  # a layout may span nodes: which network joins them
            print(f"note: no --interconnect for {args.n_gpus} GPUs: inside a node the GPU's own link; {net.note}.")
    work = pm.Workload(model, input_shape=shape, batch_size=args.batch_size, precision=args.precision,
                       optimizer=None if args.optimizer == "none" else args.optimizer,
                       **({"stack": args.stack} if args.stack else {}),
                       **({"fp8_recipe": args.fp8_recipe} if args.fp8_recipe else {}),
                       **({"compile_scope": args.compile_scope} if args.compile_scope else {}))
    if args.instance is None:
        cluster = pm.Cluster(args.gpu, n_gpus=args.n_gpus, gpus_per_node=args.gpus_per_node,
                             interconnect=_interconnect(args.interconnect), nics_per_node=args.nics_per_node)
    options = dict(frameworks=_names(args.frameworks, "--frameworks"),
                   activation_checkpointing=_policies(args.activation_checkpointing),
                   shard_gradients=(None, True) if args.shard_gradients == "when-needed" else (None,),
                   expert_load_imbalance=args.expert_load_imbalance, overlap_moe_dispatch=args.overlap_moe_dispatch,
                   expert_tensor_parallel={"1": 1, "tp": "tp"}.get(args.expert_tensor_parallel),
                   moe_dispatcher=None if args.moe_dispatcher == "both" else args.moe_dispatcher)
    for flag, key in (("tp", "tensor_parallel"), ("pp", "pipeline_parallel"), ("cp", "context_parallel"),
                      ("ep", "expert_parallel"), ("virtual_stages", "virtual_stages"),
                      ("micro_batch_size", "micro_batch_size")):
        text = getattr(args, flag)
        if text is not None:
            options[key] = _ints(text, f"--{flag.replace('_', '-')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # each layout's extrapolation note is the same: said once below
        found = search_layouts(work, cluster, usd_per_gpu_h=args.usd_per_gpu_h, progress=_show_progress(args.quiet),
                               **options)
    fits = found[found["fits"]]
    print(f"layouts of {args.model} on {args.n_gpus} x {cluster.gpu} ({args.gpus_per_node} per node), global batch "
          f"{args.batch_size} x {shape[0]} tokens, {args.precision}{', ' + args.stack if args.stack else ''}: "
          f"{len(found)} layouts, {len(fits)} fit in memory; fastest first")
    top = found.head(args.top)
    cols = ["framework", "strategy", "micro_batches", "virtual_stages"] + (
        ["pipeline_layers"] if top["pipeline_layers"].astype(bool).any() else []) + [
        "activation_checkpointing"] + (["shard_gradients"] if top["shard_gradients"].any() else []) + (
        ["expert_tensor_parallel"] if (top["expert_tensor_parallel"] > 1).any() else []) + (
        ["moe_dispatcher"] if (top["moe_dispatcher"] != "alltoall").any() else []) + [
        "step_time_s", "tokens_per_s", "mfu", "comm_s", "bubble_s"]
    out = top[cols].copy()
    out["tokens_per_s"] = out["tokens_per_s"].round(0)
    for c in ("step_time_s", "comm_s", "bubble_s"):
        out[c] = [float(f"{v:.4g}") for v in out[c]]
    out["mfu"] = out["mfu"].round(3)
    out["memory_per_gpu"] = [_gib(v) for v in top["memory_per_gpu_bytes"]]
    out["fits"] = top["fits"].to_numpy()
    if args.usd_per_gpu_h is not None:
        out["cost_per_step_usd"] = top["cost_per_step_usd"].to_numpy()
    _print_frame(out)
    if len(found) > args.top:
        print(f"({len(found) - args.top} more layouts: --top N shows more)")
    refused = found.attrs.get("refused", [])
    if refused:
        print(f"\n{len(refused)} layouts the model refuses, e.g. {refused[0]['strategy']} ({refused[0]['framework']}): "
              f"{refused[0]['reason']}")
    if len(fits):
        best = fits.iloc[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pm.predict(work, cluster, best["parallelism"])
        print(f"\nfastest that fits: {best['framework']} {best['strategy']}, {best['step_time_s']:.4g} s per step, "
              f"{_gib(best['memory_per_gpu_bytes'])} of {_gib(best['capacity_bytes'])} per GPU")
        print(f"rule of thumb: {rule_of_thumb_steps(model, [cluster.gpu], shape, args)[0]:.4g} s per step, whatever the layout ((6·N + "
              "12·L·h·s) FLOPs per token at 40 % of the dense peak, BF16's for FP8: "
              "perfmodel.step.baselines.rule_of_thumb_step_time)")
        print(f"basis: {res.basis}")
    else:
        print("\nno layout fits in GPU memory: use more GPUs, a smaller global batch or a GPU with more memory.")
    return 0


def add_parser(sub, fmt) -> None:
    p = sub.add_parser("layouts", formatter_class=fmt,
                       help="every FSDP and Megatron-Core layout of a large language-model run on one cluster, checked "
                            "for memory, the ones that fit predicted fastest first (pm.planning.search_layouts)")
    p.add_argument("model", help="a Hugging Face config.json of a transformer language model (e.g. examples/llama-3-8b.json)")
    p.add_argument("--gpu", "--gpus", dest="gpu", default=_DEFAULT_GPU,
                   help="the GPU (a catalog id or the name clouds and nvidia-smi print); one GPU per search")
    p.add_argument("--n-gpus", type=int, required=True, help="GPUs of the run")
    p.add_argument("--input-shape", default=None, help="sequence length of one sample, e.g. 8192")
    p.add_argument("--batch-size", type=int, default=128, help="global batch, in sequences")
    p.add_argument("--precision", default="bf16", choices=["fp32", "tf32", "bf16", "fp16", "fp8"],
                   help="tensor precision (fp8 with --stack te: Transformer Engine's recipe)")
    p.add_argument("--optimizer", default="adam", choices=["adam", "adam-fused", "sgd-momentum", "none"],
                   help="optimizer step included")
    add_stack(p)
    add_compile_scope(p, "--stack compile")
    add_fp8_recipe(p)
    p.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node")
    p.add_argument("--instance", default=None, metavar="TYPE",
                   help="a cloud instance type of the price table (p5.48xlarge, a3-highgpu-8g, ...): its GPU, GPUs per "
                        "node and network between instances, and (without --usd-per-gpu-h) its cheapest on-demand "
                        "GPU-hour for the cost per step")
    p.add_argument("--interconnect", default=None,
                   help="links: a link per level (intra=nvlink,inter=infiniband-ndr), one link (nvlink) or one per group, "
                        "also as JSON; default the GPU's own link in a node and, across nodes, its reference system's "
                        "network (said in basis)")
    p.add_argument("--nics-per-node", type=int, default=None,
                   help="NICs per node, each on its own rail (default: one per GPU with an InfiniBand inter link)")
    p.add_argument("--frameworks", default="pytorch,megatron",
                   help="execution families to search: pytorch (FSDP with tp/pp, as torchtitan) and/or megatron "
                        "(dp x cp x tp x pp, distributed optimizer, sequence parallel, interleaved chunks)")
    p.add_argument("--tp", default=None, help="tensor-parallel degrees to try, e.g. 1,2,4,8 (default: those of a node "
                                              "that divide the heads)")
    p.add_argument("--pp", default=None, help="pipeline degrees to try (default 1,2,4,8,16, at most one stage per layer)")
    p.add_argument("--cp", default=None, help="context-parallel degrees to try (default 1, and 2 from 8192 tokens)")
    p.add_argument("--ep", default=None, help="expert-parallel degrees to try, a mixture of experts only (default 1, the "
                                              "widest within a node and the widest, each dividing the experts and the "
                                              "tensor- and data-parallel ranks)")
    p.add_argument("--virtual-stages", default=None,
                   help="model chunks per pipeline rank to try on Megatron layouts, each as a layout, e.g. 1,2,4,5,8 "
                        "(1: plain 1F1B; a count is tried where the layers divide into pp x chunks, with or without "
                        "the embedding and the loss counted as a layer; default: the most of 5,4,3,2 that divides)")
    p.add_argument("--micro-batch-size", default=None,
                   help="samples per micro-batch to try on Megatron layouts, e.g. 1,2 (default 1)")
    add_moe_options(p, "layouts with ep", search=True)
    p.add_argument("--activation-checkpointing", default="none,selective,full",
                   help="policies to try, least recomputation first; each layout keeps the first that fits "
                        "(selective: torchtitan's per-operator policy on FSDP layouts, Megatron's core-attention "
                        "recomputation on Megatron layouts; attention: the latter on both)")
    p.add_argument("--shard-gradients", default="when-needed", choices=["when-needed", "never"],
                   help="when-needed: at each policy, a layout whose own gradients are whole (Megatron's distributed "
                        "optimizer, FSDP with a pipeline) that does not fit tries them reduce-scattered every "
                        "micro-batch into the shard (ZeRO-2); never: whole gradients only")
    p.add_argument("--usd-per-gpu-h", type=float, default=None, help="price of one GPU-hour: adds the cost per step")
    p.add_argument("--top", type=int, default=15, help="layouts to print")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_layouts)

"""Helpers the ``perfmodel`` sub-commands share: the help formatter, the one-line usage error, the printed tables and
the parsing of comma-separated option values."""
from __future__ import annotations

import argparse
import sys


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that ends each option with its default, except options whose default is 'none' (their help says so)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def add_stack(parser, what: str = "the run uses") -> None:
    """``--stack``, one option for every command that says a run (:data:`perfmodel._workload.STACKS`)."""
    from perfmodel._workload import STACKS

    parser.add_argument("--stack", choices=list(STACKS), default=None,
                        help=f"kernel family {what}: eager PyTorch (the default), torch.compile (compile), NVIDIA "
                             "Transformer Engine's fused modules (te), or eager PyTorch with Liger Kernel's fused "
                             "modules (liger)")


def add_compile_scope(parser, flag: str = "--compile") -> None:
    """``--compile-scope``, one option for every command that says a run (:data:`perfmodel._workload.COMPILE_SCOPES`)."""
    from perfmodel._workload import COMPILE_SCOPES

    parser.add_argument("--compile-scope", choices=COMPILE_SCOPES, default=None,
                        help=f"with {flag}: what torch.compile compiles: the whole step (model, the default), each "
                             "transformer layer on its own with the embedding, head and loss eager (layers: torchtitan "
                             "until April 2025), or the layers and the loss (layers+loss: torchtitan since)")


def add_fp8_recipe(parser, what: str = "") -> None:
    """``--fp8-recipe``, one option for every command that says a run (:data:`perfmodel._workload.FP8_RECIPES`)."""
    from perfmodel._workload import FP8_RECIPES

    parser.add_argument("--fp8-recipe", choices=list(FP8_RECIPES), default=None,
                        help=f"with --precision fp8{what}: torchao's tensorwise (default) or rowwise scaling; with --stack "
                             "te, Transformer Engine's delayed (default), current or mxfp8 (Blackwell-class GPUs) scaling, "
                             "blockwise (DeepSeek-V3's 1x128 and 128x128 blocks, NVIDIA Hopper and Blackwell GPUs), or "
                             "nvfp4 (its 4-bit recipe, NVIDIA Blackwell GPUs)")


def add_moe_options(parser, where: str = "with an ep factor", *, search: bool = False) -> None:
    """``--expert-load-imbalance``, ``--moe-dispatcher``, ``--overlap-moe-dispatch`` and ``--expert-tensor-parallel``,
    for every command that says a layout of a mixture of experts (:attr:`perfmodel.Parallelism.expert_load_imbalance`,
    :attr:`perfmodel.Parallelism.moe_dispatcher`, :attr:`perfmodel.Parallelism.overlap_moe_dispatch`,
    :attr:`perfmodel.Parallelism.expert_tensor_parallel`; with ``search``, the expert tensor parallelism a layout
    search tries: ``1`` or ``tp``)."""
    if search:
        parser.add_argument("--expert-tensor-parallel", choices=["1", "tp"], default=None,
                            help="a mixture of experts' layouts with tp: try each routed expert whole on its rank (1) "
                                 "or split over the tensor-parallel ranks (tp, Megatron layouts) only (default: both "
                                 "where the layout allows)")
    else:
        parser.add_argument("--expert-tensor-parallel", type=int, default=None, metavar="N",
                            help="a mixture of experts with a tp factor: the tensor-parallel ranks each routed expert is "
                                 "split over, 1 (whole on its rank) or the layout's tp (default: the framework's; "
                                 "Megatron-Core's is tp, torchtitan's 1)")
    parser.add_argument("--expert-load-imbalance", type=float, default=1.0, metavar="F",
                        help=f"{where}: the routed tokens the busiest expert-parallel rank receives over the mean, at "
                             "least 1 (default 1: even routing; e.g. 1.25 for a capacity factor of 1.25)")
    parser.add_argument("--moe-dispatcher", choices=["alltoall", "deepep"] + (["both"] if search else []),
                        default="alltoall",
                        help=f"{where}, Megatron layouts: how the routed tokens reach their experts, NCCL all-to-alls "
                             "(default) or DeepEP's kernels (each token once per node over RDMA, then over NVLink)"
                             + ("; both: try each" if search else ""))
    parser.add_argument("--overlap-moe-dispatch", action="store_true",
                        help=f"{where}, Megatron layouts: Megatron-Core's EP overlap (--overlap-moe-expert-parallel-"
                             "comm), each MoE layer's all-to-alls beside another micro-batch's opposite pass")


class _UsageError(ValueError):
    """A command-line value that cannot be used (exit status 2, one line)."""


def _print_frame(df, *, max_colwidth: int = 60) -> None:
    import pandas as pd

    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200, "display.max_colwidth", max_colwidth):
        print(df.to_string(index=False))



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

        try:
            return read_config(text)
        except FileNotFoundError as exc:  # a usage error: the path given is not a file
            raise _UsageError(f"{exc} Paths are relative to the directory the command runs in.") from None
    from perfmodel.zoo import load_model

    return load_model(text)


def _interconnect(text: str | None):
    """``nvlink``, ``tp=nvlink,dp=infiniband-ndr`` (a link per group), ``intra=nvlink,inter=infiniband-ndr`` (a link per
    level) or either as a JSON object (``{"intra": "nvlink", "inter": "infiniband-ndr"}``)."""
    if not text:
        return None
    if text.lstrip().startswith("{"):
        import json

        try:
            out = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _UsageError(f"--interconnect: {text!r} is not a JSON object ({exc.msg}); write intra=nvlink,inter=infiniband-ndr "
                              "or '{\"intra\": \"nvlink\", \"inter\": \"infiniband-ndr\"}'.") from None
        if not isinstance(out, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in out.items()):
            raise _UsageError(f"--interconnect: a JSON object maps levels or groups to link names, such as "
                              f"{{\"intra\": \"nvlink\", \"inter\": \"infiniband-ndr\"}}; got {text!r}.")
        return out
    if "=" not in text:
        return text
    out = {}
    for part in text.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k.strip() or not v.strip():
            raise _UsageError(f"--interconnect takes a link (nvlink) or group=link pairs (tp=nvlink,dp=infiniband); got {text!r}.")
        out[k.strip()] = v.strip()
    return out


def rule_of_thumb_steps(model, gpus, shape, args):
    """The rule of thumb's step of the command's run on each GPU of ``gpus``
    (:func:`perfmodel.step.baselines.rule_of_thumb_step_time` at ``args.batch_size``, ``args.precision`` and
    ``args.n_gpus``), or None where it does not apply (no sequence length: not a language model)."""
    import warnings

    from perfmodel.step.baselines import rule_of_thumb_step_time

    if shape is None or len(shape) != 1:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said once, by the command's own prediction
        r = rule_of_thumb_step_time(model, gpus, input_shape=shape, batch_size=args.batch_size, precision=args.precision,
                                    n_gpus=args.n_gpus)
    return r["step_time_s"].to_numpy()


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


class _Given(argparse.Action):
    """Store an option's value and remember that it was given (``args.given``): `perfmodel plan` passes on to today's-cloud
    planner only the --steps / --batch-size a user typed, not CM-DARE's defaults."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, "given", set(getattr(namespace, "given", ())) | {self.dest})


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


#: the GPUs ``--gpus`` names when left out (CM-DARE's)
DEFAULT_GPUS = "K80,P100,V100"


def model_arguments(parser, gpus_help: str) -> None:
    """The arguments predict and plan share: the model, the GPUs, one sample's shape, the batch."""
    parser.add_argument("model", help="a zoo id (see `perfmodel zoo`; any upstream spelling such as Res32), "
                                      "package.module:ClassName (a torch module class importable from the current folder "
                                      "and built without arguments), or a Hugging Face config.json")
    parser.add_argument("--gpus", "--gpu", dest="gpus", default=DEFAULT_GPUS, help=gpus_help)
    parser.add_argument("--input-shape", default=None,
                        help="shape of one input sample, without the batch dimension (3,32,32 for the zoo CNNs; "
                             "the sequence length, e.g. 1024, for a config.json)")
    parser.add_argument("--batch-size", type=int, default=128, action=_Given, help="samples per step (global over all GPUs)")


def instance_cluster_arg(args, *, gpu_option: str, given_gpus: str, default_gpus: str):
    """``--instance``: the :class:`perfmodel.Cluster` of ``--n-gpus`` GPUs on that cloud instance type
    (:func:`perfmodel.planning.instance_cluster`: its GPU, GPUs per node and network); the options it sets may not be
    given beside it (``gpu_option`` naming another GPU than the instance's, ``--interconnect``, ``--nics-per-node``)."""
    from perfmodel.datasets import canonical_gpu
    from perfmodel.planning.cloud import instance_cluster

    clash = [o for o, v in (("--interconnect", args.interconnect), ("--nics-per-node", args.nics_per_node)) if v is not None]
    if clash:
        raise _UsageError(f"--instance {args.instance} sets the links between GPUs (its GPU's own inside an instance, its "
                          f"network between instances); leave out {' and '.join(clash)}, or --instance.")
    try:
        c = instance_cluster(args.instance, args.n_gpus)
    except ValueError as exc:  # UnknownNameError included: the message names the types and the fix
        raise _UsageError(f"--instance {args.instance}: {exc}") from None
    if given_gpus != default_gpus and [canonical_gpu(g) for g in _names(given_gpus, gpu_option)] != [c.gpu]:
        raise _UsageError(f"--instance {args.instance} has {c.gpu} GPUs; got {gpu_option} {given_gpus}. Leave "
                          f"{gpu_option} out.")
    return c

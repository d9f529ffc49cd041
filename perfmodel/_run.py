"""On what a run is trained (:class:`Cluster`) and how (:class:`Parallelism`): the two objects that, with
:class:`perfmodel.Workload` (what is trained), say a run to :func:`perfmodel.predict`.

Both are frozen and checked when made, by the rules the keyword functions apply to the same arguments (a
``TypeError``/``ValueError`` that names the field, what it got and what to pass). Importing this module imports
nothing heavy; the checks read the GPU catalog and the strategy grammar when an object is made.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from perfmodel._workload import checkpointing_mode, check_flag, framework_stack

__all__ = ["Cluster", "Parallelism", "trusted", "trusted_replace", "keyword_run"]


def trusted(cls, **fields):
    """An instance of one of the run's frozen dataclasses (:class:`perfmodel.Workload`, :class:`Cluster`,
    :class:`Parallelism`) made from values a keyword face (``pm.predict_step_time``, ``pm.predict_memory``) has
    checked already, in its own order and with its own messages: ``__post_init__`` is not run, so the values reach the
    step model's layers as the caller wrote them (a checked object of the same values gives the same numbers). Fields
    not given keep their defaults."""
    obj = object.__new__(cls)
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        object.__setattr__(obj, f.name, fields.pop(f.name, default))
    if fields:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(fields)}.")
    return obj


def trusted_replace(obj, **changes):
    """:func:`trusted` of ``obj``'s class with its fields and ``changes`` (the step model's layers check the changed
    values where they read them)."""
    return trusted(type(obj), **{**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, **changes})


def _positive_int(owner: str, name: str, value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{owner} {name} must be a positive int ({what}); got {value!r}.")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The GPUs a run trains on: which GPU, how many, how many share a node, and the links between them.

    Attributes
    ----------
    gpu : str or GPUSpec
        A catalog id or a device name as ``nvidia-smi`` or a cloud catalog spells it (``"H100"``,
        ``"NVIDIA H100 80GB HBM3"``, ``"A100 80GB PCIe"``), or a :class:`perfmodel.datasets.GPUSpec` for a GPU the
        catalog lacks. An unknown name is refused with the nearest ids.
    n_gpus : int, default 1
        GPUs training together.
    gpus_per_node : int, default 8
        GPUs that share a node's fast link (NVLink / Infinity Fabric); a process group larger than a node uses the
        ``"inter"`` link of ``interconnect``.
    interconnect : str, Interconnect or dict, optional
        One link for every process group (``"nvlink"``, ``"pcie4"``, ``"infiniband-ndr"``, …), a link per level
        (``{"intra": "nvlink", "inter": "infiniband-ndr"}``) or per group (``{"tp": ..., "pp": ..., "dp": ...}``);
        default the GPU's own (NVLink or Infinity Fabric from the catalog, else its PCIe) inside a node and, for a layout
        whose groups span nodes, the network of the GPU's reference system between them (a NIC per GPU on its own rail:
        HDR for the A100, NDR for Hopper, B200 and the MI300 series; GB200/GB300 NVL72 racks as nodes of 72 GPUs; one
        100 Gb/s Ethernet NIC per node for GPUs without one), said in ``basis``
        (:func:`perfmodel.step.strategy.default_network`). See :func:`perfmodel.step.strategy.resolve_links`.
    nics_per_node : int, optional
        NICs of a node, each on its own rail (8 on an HGX / DGX H100 node, AWS p5.48xlarge, GCP a3-megagpu-8g): with a
        per-level ``interconnect``, a process group that spans nodes carries its collectives over its share of them,
        never faster than the node's own link (:func:`perfmodel.step.strategy.rail_link`). None (default): one per
        GPU when the ``"inter"`` link is InfiniBand (``"infiniband-hdr"``, ``"infiniband-ndr"``: the rail-optimised
        HGX / DGX fabrics, :data:`perfmodel.step.strategy.RAIL_FABRICS`); on other links one NIC carries each group
        that leaves its node.
    clock : float, optional
        The share of its datasheet clock the GPU runs at (every compute rate scaled, the memory bandwidth kept:
        :func:`perfmodel.step.kernels.at_sustained_clock`). None (default): at BF16, FP16 and FP8, the share the part
        sustains under training's continuous GEMM load where it is published
        (:func:`perfmodel.step.kernels.training_clock`: the slowest of the cluster's chips, which a synchronous step
        waits on: H100, H800 and H200 0.887 on one GPU, 0.874 on 8, 0.859 on 1,024; B200 0.823, 0.814, 0.801); for the
        AMD Instinct parts, whose fastest published matmul is slower than the GEMM model at their datasheet clock, the
        share that reaches it (:func:`perfmodel.step.kernels.burst_clock_share`: MI300X 0.675, MI325X 0.804, MI355X
        0.829); else 1 (the datasheet clock). ``1.0``: the datasheet clock, as a kernel benchmarked alone runs; a share from a part's own
        measured GEMMs: :func:`perfmodel.step.kernels.sustained_clock`. A given clock is every chip's: for one measured
        on one GPU, pass :func:`perfmodel.step.kernels.slowest_chip_clock` of it, the expected slowest of ``n_gpus``.
    """

    gpu: object
    n_gpus: int = 1
    gpus_per_node: int = 8
    interconnect: object = None
    nics_per_node: int | None = None
    clock: float | None = None

    def __post_init__(self):
        from perfmodel.datasets import gpu_spec

        if isinstance(self.gpu, (list, tuple)):
            raise TypeError(f"Cluster gpu is one GPU; got {self.gpu!r}. Make one Cluster per GPU "
                            "(pm.predict answers for one cluster; pm.predict_step_time takes a list of GPUs).")
        gpu_spec(self.gpu)  # UnknownNameError with the nearest ids
        _positive_int("Cluster", "n_gpus", self.n_gpus, "GPUs training together")
        _positive_int("Cluster", "gpus_per_node", self.gpus_per_node, "GPUs sharing a node's fast link, e.g. 8 for a DGX")
        if self.nics_per_node is not None:
            _positive_int("Cluster", "nics_per_node", self.nics_per_node, "a node's NICs, each on its own rail, e.g. 8 on a "
                          "DGX H100; or None for the default")
        if self.clock is not None:
            from perfmodel.step.kernels import MAX_CLOCK_SHARE

            if (isinstance(self.clock, bool) or not isinstance(self.clock, (int, float, np.floating))
                    or not 0 < float(self.clock) <= MAX_CLOCK_SHARE):
                raise ValueError(f"Cluster clock must be a share of the GPU's datasheet clock in (0, {MAX_CLOCK_SHARE:g}] "
                                 f"(1.0: the datasheet clock), or None for the sustained share where published; got "
                                 f"{self.clock!r}.")
        if isinstance(self.interconnect, dict):
            object.__setattr__(self, "interconnect", dict(self.interconnect))
        self._check_links()

    def _check_links(self) -> None:
        from perfmodel.step.strategy import LINK_GROUPS, LINK_LEVELS, resolve_interconnect

        links = self.interconnect
        if links is None:
            return
        if isinstance(links, dict):
            known = set(LINK_GROUPS) | set(LINK_LEVELS)
            bad = sorted(k for k in links if k not in known)
            if bad:
                from perfmodel._errors import UnknownNameError

                raise UnknownNameError(f"Cluster interconnect has unknown key(s) {bad}; expected the levels 'intra' and "
                                       f"'inter', or process groups among {list(LINK_GROUPS)}.")
            for link in links.values():
                resolve_interconnect(link, self.spec)
        else:
            resolve_interconnect(links, self.spec)

    @property
    def spec(self):
        """The GPU's :class:`perfmodel.datasets.GPUSpec`."""
        from perfmodel.datasets import gpu_spec

        return gpu_spec(self.gpu)

    @property
    def nodes(self) -> int:
        """Nodes the GPUs fill (the last one may be partly used)."""
        return -(-int(self.n_gpus) // int(self.gpus_per_node))


#: how a mixture of experts' routed tokens reach their experts (:attr:`Parallelism.moe_dispatcher`)
MOE_DISPATCHERS = ("alltoall", "deepep")

#: what context parallelism exchanges of K and V (:attr:`Parallelism.context_parallel_kv`)
CONTEXT_PARALLEL_KV = ("grouped", "repeated")


@dataclasses.dataclass(frozen=True)
class Parallelism:
    """How a run spreads its step over the GPUs of a :class:`Cluster`.

    Attributes
    ----------
    strategy : str or dict, default "dp"
        ``"dp"``, ``"fsdp"``, ``"tp"``, ``"pp"`` over all the GPUs, or a combination with its degrees
        (``"dp2-tp2-pp2"``, ``"fsdp32-tp8"``, ``"fsdp4-cp2"``, ``{"dp": 2, "tp": 2}``; a factor without a degree
        takes the GPUs the others leave). A mixture of experts may add ``ep`` with a degree, expert parallel over the
        ``tp·dp·cp`` ranks, which it divides and adds no GPUs to (``"dp64-ep8"``, ``"fsdp16-ep8-pp4"``,
        ``"dp8-ep8-tp2-pp4"``); with ``tp`` each expert stays whole on its rank (expert tensor parallelism 1).
        :meth:`degrees` gives them for a number of GPUs.
    micro_batches : int, optional
        Micro-batches per step: the pipeline's ``m``, else gradient-accumulation steps. Default: with a pipeline
        (``pp > 1``), one sequence per micro-batch — each data-parallel rank's batch in micro-batches of one, the
        micro-batch size Megatron's recipes and torchtitan's ``pipeline_parallel_microbatch_size`` default to;
        without one, 1 (the rank's whole batch in one pass).
    pipeline_schedule : {"1f1b", "interleaved-1f1b"}
    activation_checkpointing : bool or {"full", "selective", "attention", "layer", "layer:N"}, default False
        What the backward pass recomputes (:func:`perfmodel.step.trace.checkpointing_mode`). A
        :class:`~perfmodel.Workload` may say it instead; saying it in both with different values is an error.
    overlap_grad_reduce : bool, default True
        ``"dp"``: gradient buckets all-reduced under the backward pass (PyTorch DDP); False after it (Megatron-LM's
        default).
    async_tp : bool, default False
        Tensor-parallel collectives overlapped with their matmuls (torchtitan's asynchronous TP with
        ``torch.compile``, Megatron's ``--tp-comm-overlap``); needs a ``tp`` factor, and under ``framework="pytorch"``
        a compiled workload (``compile=True``): the overlap is a torch.compile pass, and torchtitan refuses it without.
    framework : {"pytorch", "megatron"}, default "pytorch"
        How the layout runs: PyTorch DDP / FSDP2 as torchtitan runs them, or Megatron-Core (the distributed optimizer,
        sequence parallelism with tensor parallelism, FP32 main gradients;
        :func:`perfmodel.step.strategy.resolve_execution`), whose layers are Transformer Engine's modules (its
        default ``--transformer-impl``: ``stack="te"``, and TE's FP8 at ``precision="fp8"``) unless the
        :class:`~perfmodel.Workload` names another kernel family. Said in the prediction's ``basis``.
    virtual_stages : int, optional
        Model chunks per pipeline rank with ``pipeline_schedule="interleaved-1f1b"`` (default 2).
    pipeline_layers : sequence or dict, optional
        How the transformer layers split over the pipeline ranks (:func:`perfmodel.step.strategy.pipeline_chunks`).
        None: as evenly as they go. The layers of each rank (``(7, 8, 8, 7)``: Llama 3 405B's first and last stages
        a layer shorter, torchtitan's split points), of each rank's model chunks (``((3, 4), (4, 4), ...)``, Megatron's
        ``--pipeline-model-parallel-layout`` in counts), or Megatron's flags: ``{"first": 7, "last": 7}``
        (``--decoder-first/last-pipeline-num-layers``, the rest evenly over the middle ranks) or ``{"embedding": True,
        "loss": True}`` (``--account-for-embedding/loss-in-pipeline-split``: each counted as a layer). The slowest
        rank sets the pipeline's pace, the rank holding the most sets its memory.
    distributed_optimizer, sequence_parallel : bool, optional
        Override the framework's defaults (Megatron: both on, sequence parallelism where ``tp > 1``; PyTorch: no
        distributed optimizer, sequence parallelism with ``fsdp`` and ``tp``).
    micro_batch_size : int, optional
        Sequences per micro-batch on one data-parallel rank, as Megatron's ``--micro-batch-size`` and torchtitan's
        ``pipeline_parallel_microbatch_size`` say it: ``micro_batches`` = the rank's batch (``batch_size / dp``) over
        it, which it must divide. Say this or ``micro_batches``, not both.
    fp8_param_gather : bool, optional
        At ``precision="fp8"``: the FP8 linears' weights kept and all-gathered in FP8 (one byte each) by the ranks
        that shard them — Megatron-Core's ``--fp8-param-gather`` with its distributed optimizer, or FSDP's FP8
        all-gather (torchao). None: the framework's default (PyTorch: on under FSDP with ``torch.compile``, as
        torchtitan's FP8 recipes run; Megatron: off). :func:`perfmodel.step.strategy.resolve_fp8_param_gather`.
    context_parallel_kv : {"grouped", "repeated"}, default "grouped"
        With a ``cp`` factor: the K and V context parallelism exchanges. ``"grouped"``: at their own heads (the
        attention kernel takes grouped-query K and V as they are: transformers' SDPA with ``enable_gqa``,
        Transformer Engine, torchtitan since mid-2025). ``"repeated"``: expanded to every query head before the
        kernel, as torchtitan's Llama did up to mid-2025 (``repeat_kv`` before ``scaled_dot_product_attention``), so
        each exchange moves ``heads / kv_heads`` times the bytes.
    overlap_tp_backward : bool, optional
        With a ``tp`` factor and without ``async_tp``: the column-parallel linears' backward collectives issued under
        their own GEMMs, as Megatron-Core's and Transformer Engine's linear layers do — the input gradient's
        reduce-scatter (all-reduce without sequence parallelism) under the weight-gradient GEMM, and with sequence
        parallelism the input shard gathered again under the input-gradient GEMM. None: the framework's default
        (Megatron: on; PyTorch, whose tensor parallelism runs them in order: off, and True is refused). False:
        Megatron-LM before August 2021 (:data:`perfmodel.step.strategy.TP_BACKWARD_OVERLAP` cites the commits).
    shard_gradients : bool, optional
        ZeRO-2: each micro-batch's gradients reduce-scattered, bucket by bucket under its backward pass, into the
        rank's ``1/(dp·cp)`` shard, where they accumulate — the gradients kept sharded at the price of one
        reduce-scatter per micro-batch instead of one per step. Megatron-Core's sharding of optimizer states and
        gradients (``--data-parallel-sharding-strategy optim_grads``), the FSDP of the Llama 3 paper (§3.3.2: optimizer
        states and gradients sharded, parameters not resharded after the forward pass). Needs a sharded optimizer
        (``fsdp``, or ``framework="megatron"`` with its distributed optimizer). None: the framework's default —
        whole gradients accumulated over the micro-batches and reduced once (Megatron's distributed optimizer, FSDP
        with a pipeline as torchtitan runs it), sharded under FSDP without a pipeline.
    expert_load_imbalance : float, default 1.0
        With an ``ep`` factor: the routed tokens the busiest expert-parallel rank receives over the mean, at least 1
        (1: even routing). Routing is never perfectly even — a load-balancing loss keeps it near the mean, a capacity
        factor (Megatron's ``--moe-expert-capacity-factor``, dropping the tokens beyond it) bounds it — and every rank
        waits at the all-to-alls for the busiest one: its experts' grouped GEMMs, the tokens it receives and the
        activations its experts keep are this much larger. No effect without ``ep`` (a rank holding every expert
        computes every routed token).
    overlap_moe_dispatch : bool, default False
        With an ``ep`` factor under ``framework="megatron"``: Megatron-Core's ``--overlap-moe-expert-parallel-comm``,
        which pairs one micro-batch's forward with another's backward, layer by layer, so that each MoE layer's
        all-to-alls run under the other micro-batch's compute of a layer (the 1F1B overlap DeepSeek-V3's DualPipe
        made known). The micro-batch passes without a partner — the first forward and the last backward, a pipeline
        rank's warm-up and cool-down — keep theirs exposed; the hidden ones slow the compute beside them. No effect
        without ``ep``.
    expert_tensor_parallel : int, optional
        With a ``tp`` factor, of a mixture of experts: how many tensor-parallel ranks split each routed expert, 1 or the
        layout's ``tp`` (Megatron-Core's ``--expert-tensor-parallel-size``, torchtitan's
        ``expert_tensor_parallel_degree``). 1: each expert whole on its rank, the MoE block on the rank's sequence
        shard, ``ep`` carved from the ``tp·dp·cp`` ranks. ``tp``: each expert's linears split over the
        tensor-parallel ranks as a dense MLP's are, ``ep`` carved from the ``dp·cp`` ranks, and in each MoE layer and
        pass the dispatched tokens all-gathered over the tensor-parallel ranks and the experts' outputs
        reduce-scattered back, exposed (they run inside the token dispatcher). None: the framework's default —
        Megatron-Core's is ``tp`` (the flag unset takes the tensor-parallel size), torchtitan's 1.
    moe_dispatcher : {"alltoall", "deepep"}, default "alltoall"
        With an ``ep`` factor: how a MoE layer's routed tokens reach their experts. ``"alltoall"``: an NCCL all-to-all
        of every (token, expert) copy (Megatron-Core's ``alltoall`` dispatcher, torchtitan's). ``"deepep"``: DeepEP's
        kernels (Megatron-Core's ``--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep``), which send
        each token once per destination node over RDMA, at DeepEP's published rate, and forward it over NVLink to the
        ranks holding its experts (once per rank) — with the group-limited routing a config names (DeepSeek's
        ``n_group`` / ``topk_group``) each token reaches fewer nodes. Megatron layouts with ``ep`` and each expert
        whole on its rank.
    """

    strategy: object = "dp"
    micro_batches: int | None = None
    pipeline_schedule: str = "1f1b"
    activation_checkpointing: object = False
    overlap_grad_reduce: bool = True
    async_tp: bool = False
    framework: str = "pytorch"
    virtual_stages: int | None = None
    pipeline_layers: object = None
    distributed_optimizer: bool | None = None
    sequence_parallel: bool | None = None
    fp8_param_gather: bool | None = None
    micro_batch_size: int | None = None
    context_parallel_kv: str = "grouped"
    overlap_tp_backward: bool | None = None
    shard_gradients: bool | None = None
    expert_load_imbalance: float = 1.0
    overlap_moe_dispatch: bool = False
    expert_tensor_parallel: int | None = None
    moe_dispatcher: str = "alltoall"

    def __post_init__(self):
        from perfmodel.step.strategy import (_flag_or_none, check_framework, check_pipeline_layers, check_strategy_name,
                                               pipeline_virtual_stages)

        try:
            if isinstance(self.strategy, dict):
                object.__setattr__(self, "strategy", dict(self.strategy))
            check_strategy_name(self.strategy)
            if self.micro_batches is not None:
                _positive_int("Parallelism", "micro_batches", self.micro_batches, "or None for 1")
            if self.micro_batch_size is not None:
                _positive_int("Parallelism", "micro_batch_size", self.micro_batch_size,
                              "sequences per micro-batch, or None")
                if self.micro_batches is not None:
                    raise ValueError(f"Parallelism: micro_batches={self.micro_batches} and micro_batch_size="
                                     f"{self.micro_batch_size} both say how the batch is cut; say one of them "
                                     "(micro_batch_size: sequences per micro-batch on one data-parallel rank).")
            pipeline_virtual_stages(self.pipeline_schedule, self.virtual_stages)
            object.__setattr__(self, "pipeline_layers", check_pipeline_layers(self.pipeline_layers))
            object.__setattr__(self, "framework", check_framework(self.framework))
            _flag_or_none("distributed_optimizer", self.distributed_optimizer, "Megatron's distributed optimizer")
            _flag_or_none("sequence_parallel", self.sequence_parallel, "sequence parallelism with tensor parallelism")
            _flag_or_none("fp8_param_gather", self.fp8_param_gather, "the FP8 linears' weights kept and gathered in FP8")
            _flag_or_none("overlap_tp_backward", self.overlap_tp_backward,
                          "the backward tensor-parallel collectives under the column-parallel linears' GEMMs")
            _flag_or_none("shard_gradients", self.shard_gradients,
                          "gradients reduce-scattered every micro-batch into the rank's shard, ZeRO-2")
            checkpointing_mode(self.activation_checkpointing)
            check_flag("overlap_grad_reduce", self.overlap_grad_reduce, "gradient all-reduce under the backward pass")
            check_flag("async_tp", self.async_tp, "asynchronous tensor parallelism")
            check_flag("overlap_moe_dispatch", self.overlap_moe_dispatch,
                       "MoE all-to-alls under another micro-batch's compute, Megatron-Core's EP overlap")
            f = self.expert_load_imbalance
            if isinstance(f, bool) or not isinstance(f, (int, float, np.integer, np.floating)) or not np.isfinite(f) or f < 1:
                raise ValueError(f"Parallelism: expert_load_imbalance must be a finite number of at least 1 (the routed "
                                 f"tokens the busiest expert-parallel rank receives over the mean; 1 for even routing, "
                                 f"e.g. 1.25 for a capacity factor of 1.25); got {f!r}.")
            object.__setattr__(self, "expert_load_imbalance", float(f))
            if self.moe_dispatcher not in MOE_DISPATCHERS:
                raise ValueError(f"Parallelism: moe_dispatcher must be one of {', '.join(MOE_DISPATCHERS)} (an NCCL "
                                 f"all-to-all of the routed tokens, or DeepEP's kernels); got {self.moe_dispatcher!r}.")
            if self.expert_tensor_parallel is not None:
                _positive_int("Parallelism", "expert_tensor_parallel", self.expert_tensor_parallel,
                              "(the tensor-parallel ranks that split each routed expert: 1, or the layout's tp), or None "
                              "for the framework's default")
                object.__setattr__(self, "expert_tensor_parallel", int(self.expert_tensor_parallel))
            if self.context_parallel_kv not in CONTEXT_PARALLEL_KV:
                raise ValueError(f"Parallelism: context_parallel_kv must be one of {', '.join(CONTEXT_PARALLEL_KV)} "
                                 f"(the K and V context parallelism exchanges: at their own heads, or expanded to every "
                                 f"query head before the attention kernel); got {self.context_parallel_kv!r}.")
        except (TypeError, ValueError) as exc:
            msg = str(exc)
            raise type(exc)(msg if msg.startswith("Parallelism") else f"Parallelism: {msg}") from None

    def degrees(self, n_gpus: int) -> dict:
        """``{"dp", "tp", "pp", "cp", "fsdp", "name"}`` of the strategy over ``n_gpus`` GPUs
        (:func:`perfmodel.step.strategy.parse_strategy`); a ``StrategyError`` where they do not multiply to it."""
        from perfmodel.step.strategy import parse_strategy

        return parse_strategy(self.strategy, int(n_gpus))

    def execution(self, n_gpus: int, degrees: dict | None = None) -> dict:
        """``{"framework", "distributed_optimizer", "sequence_parallel", "overlap_tp_backward", "shard_gradients",
        "expert_tensor_parallel"}`` over ``n_gpus`` GPUs (:func:`perfmodel.step.strategy.resolve_execution`), or over ``degrees`` where the caller
        has already parsed them (a one-GPU step's); a ``StrategyError`` where the layout cannot run so."""
        from perfmodel.step.strategy import resolve_execution

        deg = self.degrees(n_gpus) if degrees is None else degrees
        return resolve_execution(self.framework, deg, distributed_optimizer=self.distributed_optimizer,
                                 sequence_parallel=self.sequence_parallel, overlap_tp_backward=self.overlap_tp_backward,
                                 shard_gradients=self.shard_gradients,
                                 expert_tensor_parallel=self.expert_tensor_parallel)

    def with_micro_batches(self, batch_size: int, n_gpus: int) -> "Parallelism":
        """This parallelism with ``micro_batches`` said for a global batch of ``batch_size`` over ``n_gpus`` GPUs:
        from ``micro_batch_size`` (the data-parallel rank's batch over it), or for a pipeline that says neither, one
        sequence per micro-batch (the frameworks' default). Otherwise itself. A rank's batch that
        ``micro_batch_size`` does not divide is a ``StrategyError`` naming the sizes that do."""
        from perfmodel.step.strategy import StrategyError

        if self.micro_batches is not None:
            return self
        deg = self.degrees(n_gpus)
        d, B = int(deg["dp"]), int(batch_size)
        if self.micro_batch_size is None and deg["pp"] == 1:
            return self
        if B % d:  # the layout's own check says what is wrong with the batch
            return self
        local, mbs = B // d, int(self.micro_batch_size or 1)
        if local % mbs:
            fits = [k for k in range(1, local + 1) if local % k == 0]
            raise StrategyError(f"micro_batch_size={mbs} does not divide the data-parallel rank's batch {local} "
                                f"(batch_size {B} / dp {d}). Use one of {fits}, or a batch_size that is a multiple of "
                                f"{d * mbs}.")
        return dataclasses.replace(self, micro_batches=local // mbs, micro_batch_size=None)

    @property
    def checkpointing(self) -> str | None:
        """The checkpointing mode: None, ``"full"``, ``"selective"``, ``"attention"`` or ``"layer:N"``
        (:func:`perfmodel._workload.checkpointing_mode`; ``"selective"`` with Megatron is its core attention)."""
        return checkpointing_mode(self.activation_checkpointing, self.framework)


def keyword_run(model, gpus, *, input_shape=None, batch_size: int = 1, input_dtype=None, input_high: int | None = None,
                precision: str = "fp32", optimizer: str | None = "sgd-momentum", inference: bool = False, n_gpus: int = 1,
                strategy: str = "dp", micro_batches: int | None = None, interconnect=None, overlap_grad_reduce: bool = True,
                activation_checkpointing: bool | str = False, gpus_per_node: int = 8, compile: bool = False,
                async_tp: bool = False, pipeline_schedule: str = "1f1b", stack: str | None = None,
                nics_per_node: int | None = None, framework: str = "pytorch", distributed_optimizer: bool | None = None,
                sequence_parallel: bool | None = None, virtual_stages: int | None = None):
    """:func:`perfmodel.predict_step_time`'s keywords as the three objects the layers take: ``(workload, clusters, parallelism)``,
    one :class:`~perfmodel.Cluster` per GPU of ``gpus`` (the same GPU count, nodes and links on each). The keywords are
    checked here as the keyword face always checked them (in that order, with those messages); the objects are made
    from the checked values (:func:`perfmodel._run.trusted`), so the layers read what the caller wrote."""
    from perfmodel._workload import Workload, check_step_args, resolve_stack, stack_of
    from perfmodel.step.strategy import _check_gpus_per_node, _check_nics

    check_step_args(0.2, optimizer, inference, precision, batch_size)
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a positive int; got {n_gpus!r}.")
    stack = framework_stack(stack, compile, framework)  # Megatron-Core's default --transformer-impl: TE's modules
    family = resolve_stack(stack, compile) if not isinstance(compile, str) else stack_of(compile)
    _check_gpus_per_node(gpus_per_node)
    if nics_per_node is not None:
        _check_nics(nics_per_node)
    w = trusted(Workload, model=model, input_shape=input_shape, batch_size=batch_size, input_dtype=input_dtype,
                input_high=input_high, precision=str(precision).lower(), optimizer=optimizer, inference=inference,
                compile=family == "compile", stack=family)
    gpu_list = [gpus] if isinstance(gpus, str) or not hasattr(gpus, "__iter__") else list(gpus)
    cs = tuple(trusted(Cluster, gpu=g, n_gpus=n_gpus, gpus_per_node=gpus_per_node, interconnect=interconnect,
                       nics_per_node=nics_per_node) for g in gpu_list)
    p = trusted(Parallelism, strategy=strategy, micro_batches=micro_batches, pipeline_schedule=pipeline_schedule,
                activation_checkpointing=activation_checkpointing, overlap_grad_reduce=overlap_grad_reduce,
                async_tp=async_tp, framework=framework, virtual_stages=virtual_stages,
                distributed_optimizer=distributed_optimizer, sequence_parallel=sequence_parallel)
    return w, cs, p

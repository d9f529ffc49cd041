"""A training step said once (:class:`Workload`), the decorator by which the functions that take a model take one, and
the checks of the step's arguments that the functions' keywords and a workload's fields share (so that a workload
refuses, when it is made, what the functions refuse).

It imports nothing of perfmodel and nothing heavy when imported (the planner's modules import it when they are
imported); the shape and dtype checks read :mod:`perfmodel.features`' rules when they run.
:mod:`perfmodel.step.trace` (the trace of a workload) re-exports it all.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

__all__ = ["Workload", "UNSET", "accepts_workload", "PRECISION_DTYPES", "OPTIMIZERS", "CHECKPOINTING_MODES", "check_step_args",
           "check_optimizer", "check_precision", "check_batch_size", "check_flag", "check_input_shape", "checkpointing_mode", "STACKS", "MEGATRON_STACK", "framework_stack", "stack_of", "resolve_stack", "FP8_RECIPES",
           "fp8_recipe_of", "COMPILE_SCOPES", "compile_scope_of"]


# -- the checks of a step's arguments (the functions' keywords and a Workload's fields share them) --------------------

#: torch dtype of the tensors at each precision (TF32 keeps FP32 tensors; only the matmul units differ).
PRECISION_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}


#: optimizers :func:`predict_step_time` models (``None``: forward + backward only).
OPTIMIZERS = ("sgd-momentum", "adam", "adam-fused", None)


def check_step_args(alpha, optimizer, inference, precision, batch_size) -> str:
    """The step's arguments checked (:func:`check_optimizer`, :func:`check_flag`, :func:`check_precision`,
    :func:`check_batch_size`); the precision, lower-cased."""
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
    check_flag("inference", inference, "a forward pass in evaluation mode instead of a training step")
    check_optimizer(optimizer, inference)
    prec = check_precision(precision)
    check_batch_size(batch_size)
    return prec


def check_optimizer(optimizer, inference=False) -> None:
    """``optimizer`` one of :data:`OPTIMIZERS`, and None for an inference pass; a ``ValueError`` otherwise."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'sgd-momentum', 'adam' or None (forward + backward only), or 'adam-fused' (one "
                         f"fused kernel, as apex / Megatron-LM); got {optimizer!r}.")
    if inference and optimizer is not None:
        raise ValueError(f"inference=True predicts a forward pass: pass optimizer=None (got optimizer={optimizer!r}).")


def check_precision(precision) -> str:
    """``precision`` lower-cased, one of :data:`PRECISION_DTYPES`; an ``UnknownNameError`` (a ``ValueError``) otherwise."""
    prec = str(precision).lower()
    if not isinstance(precision, str) or prec not in PRECISION_DTYPES:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"Unknown precision {precision!r}. Expected one of: {', '.join(PRECISION_DTYPES)}.")
    return prec


def check_batch_size(batch_size) -> None:
    """``batch_size`` a positive int (not a bool); a ``ValueError`` otherwise."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int; got {batch_size!r}.")


def check_flag(name: str, value, meaning: str = "") -> None:
    """``value`` a real boolean (``True``/``False`` or a numpy bool): the string ``"False"`` and the int ``1`` are a
    ``TypeError``, not a truth value."""
    if not isinstance(value, (bool, np.bool_)):
        what = f" ({meaning})" if meaning else ""
        raise TypeError(f"{name} must be True or False{what}; got {value!r}. Pass {name}=True or {name}=False.")


def check_input_shape(input_shape) -> tuple[int, ...]:
    """One sample's shape as the trace takes it (:func:`perfmodel.features.extract`'s rule): a non-empty tuple or list
    of positive ints without the batch dimension; an int is one dimension (``512`` is ``(512,)``), a numpy array its
    list. A string (``"512"`` would read as ``(5, 1, 2)``), a float or a non-positive size raise
    :class:`perfmodel.features.FeatureExtractionError`, with the tuple to pass where a string holds numbers."""
    from perfmodel.features._extract import _check_shape

    return _check_shape(input_shape.tolist() if isinstance(input_shape, np.ndarray) else input_shape)


#: Kernel families a training step can run on (``stack=`` of :func:`perfmodel.predict_step_time`, :class:`Workload`'s ``stack``): ``"eager"``
#: (PyTorch's own kernels, one per operator; attention through ``scaled_dot_product_attention``), ``"compile"``
#: (``torch.compile``: :func:`perfmodel.step.trace.compiled_work`), ``"te"`` (NVIDIA Transformer Engine's fused modules:
#: :func:`perfmodel.step.trace.te_ops`) and ``"liger"`` (eager PyTorch with Liger Kernel's fused RMSNorm/LayerNorm,
#: rotary embedding, SwiGLU/GeGLU and fused linear cross-entropy, as ``transformers``' ``use_liger_kernel=True`` patches
#: a model: :func:`perfmodel.step.trace.te_ops` with ``family="liger"``).
STACKS = ("eager", "compile", "te", "liger")
#: the kernel family of ``framework="megatron"`` when the workload does not say one: Megatron-Core's default
#: ``--transformer-impl transformer_engine`` (its layers are Transformer Engine's modules, and its FP8 is TE's)
MEGATRON_STACK = "te"


def framework_stack(stack, compile, framework: str):
    """The kernel family the keyword faces pass on: ``stack`` as said, else :data:`MEGATRON_STACK` for
    ``framework="megatron"`` without torch.compile (Megatron-Core's default modules), else None (eager)."""
    if stack is None and compile is False and framework == "megatron":
        return MEGATRON_STACK
    return stack


def stack_of(value) -> str:
    """The kernel family of ``value``: a name of :data:`STACKS`, or the ``compile`` flag (False -> ``"eager"``,
    True -> ``"compile"``)."""
    if value is None or value is False:
        return "eager"
    if value is True:
        return "compile"
    if isinstance(value, str) and value in STACKS:
        return value
    raise ValueError(f"stack must be one of {', '.join(map(repr, STACKS))}; got {value!r}. 'eager' is PyTorch's own "
                     "kernels, 'compile' torch.compile's fused kernels, 'te' NVIDIA Transformer Engine's fused modules, "
                     "'liger' PyTorch with Liger Kernel's fused modules.")


def resolve_stack(stack, compile) -> str:
    """The kernel family of a call: ``stack`` (a name of :data:`STACKS`) or, without it, the
    ``compile`` flag; both given and disagreeing is an error."""
    check_flag("compile", compile, "torch.compile: memory-bound operator chains fused")
    if stack is None:
        return "compile" if compile else "eager"
    if not isinstance(stack, str):
        raise TypeError(f"stack must be a name, one of {', '.join(map(repr, STACKS))}; got {type(stack).__name__} {stack!r}.")
    family = stack_of(stack.strip().lower())
    if compile and family != "compile":
        raise ValueError(f"compile=True and stack={stack!r} ask for two kernel families; pass one: stack='compile' (the "
                         f"same as compile=True) or stack={family!r} without compile.")
    return family


#: FP8 training recipes (``fp8_recipe=`` of :class:`Workload`), by the kernel family that runs them: torchao's Float8
#: (``stack="eager"`` or ``"compile"``, as torchtitan trains) with ``"tensorwise"`` scaling (the default) or
#: ``"rowwise"`` scaling; Transformer Engine's (``stack="te"``, as Megatron-Core trains) with ``"delayed"`` scaling
#: (the default; amax history), ``"current"`` per-tensor scaling, ``"mxfp8"`` block scaling (32-element blocks,
#: Blackwell-class GPUs only), ``"blockwise"`` (TE's ``Float8BlockScaling``, DeepSeek-V3's recipe: an FP32 scale per
#: 1x128 block of the activations and gradients and per 128x128 block of the weights, every GEMM with split
#: accumulation; NVIDIA Hopper and Blackwell GPUs) or ``"nvfp4"`` (TE's ``NVFP4BlockScaling``: the linears' GEMMs in
#: 4-bit E2M1 with a scale per 16 elements; NVIDIA Blackwell GPUs only). How each is modelled:
#: :func:`perfmodel.step.trace.fp8_work` and :func:`perfmodel.step.trace.te_fp8_work`.
FP8_RECIPES = {"tensorwise": ("eager", "compile", "liger"), "rowwise": ("eager", "compile", "liger"), "delayed": ("te",),
               "current": ("te",), "mxfp8": ("te",), "blockwise": ("te",), "nvfp4": ("te",)}


def _check_recipe_name(recipe) -> str:
    key = recipe.strip().lower() if isinstance(recipe, str) else None
    if key not in FP8_RECIPES:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"fp8_recipe must be one of {', '.join(map(repr, FP8_RECIPES))} (torchao: 'tensorwise', "
                               f"'rowwise'; Transformer Engine: 'delayed', 'current', 'mxfp8', 'blockwise', 'nvfp4'), or None for the kernel "
                               f"family's default; got {recipe!r}.")
    return key


def fp8_recipe_of(precision: str, stack: str, recipe=None) -> str | None:
    """The FP8 recipe a step runs: None below FP8; at ``precision="fp8"`` the ``recipe`` given (checked against the
    kernel family ``stack``) or the family's default (``"tensorwise"`` for torchao's eager and compiled Float8,
    ``"delayed"`` for Transformer Engine). A recipe at another precision, or of another family, is a ``ValueError``
    that names both."""
    given = recipe is not None and recipe is not UNSET
    if precision != "fp8":
        if given:
            raise ValueError(f"fp8_recipe={recipe!r} is a recipe of FP8 training; the step runs at precision={precision!r}. "
                             "Pass precision='fp8', or leave fp8_recipe unset.")
        return None
    if not given:
        return "delayed" if stack == "te" else "tensorwise"
    key = _check_recipe_name(recipe)
    if stack not in FP8_RECIPES[key]:
        family = ("Transformer Engine's (stack='te')" if FP8_RECIPES[key] == ("te",)
                  else "torchao's (stack='eager', 'compile' or 'liger')")
        mine = "'delayed', 'current', 'mxfp8', 'blockwise' or 'nvfp4'" if stack == "te" else "'tensorwise' or 'rowwise'"
        raise ValueError(f"fp8_recipe={key!r} is {family}; the step runs stack={stack!r}, whose recipes are {mine}. Pass "
                         f"one of those, or the stack of the recipe.")
    return key


#: what ``torch.compile`` compiles of a step (``compile_scope=`` of :class:`Workload`, read by :func:`perfmodel.predict`;
#: the ``"compile"`` kernel family only). ``"model"``: the whole step, one graph per pass (``torch.compile(model)`` on a
#: model that computes its loss in its forward, as transformers' do). ``"layers"``: each transformer layer its own
#: graph — no kernel fuses across two layers — and the embedding, final norm, output projection and loss eager
#: (torchtitan's per-block ``apply_compile``; its loss compile was turned off on 2024-12-18, commit e8977b0, and turned
#: back on on 2025-04-02, bbb1b61). ``"layers+loss"``: the layers as ``"layers"`` and the loss function its own graph
#: (torchtitan since April 2025). A compiled loss also saves less: :func:`perfmodel.step.memory.predict_memory`.
COMPILE_SCOPES = ("model", "layers", "layers+loss")


def _check_scope_name(scope) -> str:
    key = scope.strip().lower() if isinstance(scope, str) else None
    if key not in COMPILE_SCOPES:
        from perfmodel._errors import UnknownNameError

        raise UnknownNameError(f"compile_scope must be one of {', '.join(map(repr, COMPILE_SCOPES))} ('model': the whole "
                               "step compiled; 'layers': each transformer layer compiled on its own, the rest eager, as "
                               "torchtitan until April 2025; 'layers+loss': the layers and the loss, as torchtitan since); "
                               f"got {scope!r}.")
    return key


def compile_scope_of(stack: str, scope=None) -> str | None:
    """What ``torch.compile`` compiles of a step run on the kernel family ``stack``: the ``scope`` given (checked, one of
    :data:`COMPILE_SCOPES`) or ``"model"`` under ``"compile"``; None under the other families, where a scope given is a
    ``ValueError`` that says so."""
    given = scope is not None and scope is not UNSET
    if stack != "compile":
        if given:
            raise ValueError(f"compile_scope={scope!r} says what torch.compile compiles; the step runs stack={stack!r}, "
                             "which is not compiled. Pass compile=True (or stack='compile'), or leave compile_scope unset.")
        return None
    return _check_scope_name(scope) if given else "model"


#: activation checkpointing modes: ``"full"`` (every layer's forward recomputed: ``torch.utils.checkpoint`` per layer,
#: Megatron's full recompute), ``"selective"`` (torchtitan's per-operator policy) and ``"layer"`` (torchtitan's
#: per-layer selective policy: every ``N``-th layer fully checkpointed, ``"layer:N"``, default every other one) and
#: ``"attention"`` (Megatron-LM's ``--recompute-granularity selective``: the core attention recomputed, Korthikanti et
#: al. 2022).
CHECKPOINTING_MODES = ("full", "selective", "layer", "attention")

_ATTENTION_MODE = ("attention", "core-attention", "core_attention", "core_attn")


_LAYER_MODE = re.compile(r"^(?:selective-)?layer(?::(\d+))?$")


def checkpointing_mode(value, framework: str | None = None) -> str | None:
    """``None`` (no checkpointing), ``"full"``, ``"selective"``, ``"attention"`` or ``"layer:N"`` from what a caller
    passes as ``activation_checkpointing``: ``False``/``None`` → ``None``; ``True``/``"full"`` → ``"full"``;
    ``"selective"`` (or ``"op"``, torchtitan's name) → ``"selective"``; ``"attention"`` (or ``"core-attention"``,
    ``"core_attn"``) → ``"attention"``; ``"layer"`` / ``"layer:N"`` (or ``"selective-layer[:N]"``) → ``"layer:N"``
    (``N`` = 2 when not given; ``"layer:1"`` is ``"full"``).

    ``"selective"`` is torchtitan's per-operator selective checkpointing (``selective_ac_option = "op"``): inside each
    transformer layer the outputs of the fused attention kernel and of every other matmul (the first, third, …
    ``aten.mm`` of the layer's forward pass) are kept; every other operator of the layer (norms, activations, rotary
    embeddings, casts, the remaining matmuls) is recomputed in the backward pass from the layer's input.

    ``"attention"`` is Megatron-LM's selective recomputation (``--recompute-granularity selective``, Korthikanti et
    al. 2022, §5): the core attention of each layer — the query-key product, the scaling, mask and softmax, the
    attention dropout and the product with the values — is recomputed in the backward pass from its kept inputs (the
    query, key and value); everything else is kept. With ``framework="megatron"`` a ``"selective"`` means this (the
    name Megatron gives it).

    ``"layer:N"`` is torchtitan's per-layer selective checkpointing (``selective_ac_option = "N"``, its default
    ``"2"``): the ``N``-th, ``2N``-th, … transformer layers are checkpointed whole (keep their input, recompute their
    forward pass), the others keep every activation.

    Raises
    ------
    ValueError
        Anything else, with the accepted values.
    """
    if value is None or value is False or (isinstance(value, np.bool_) and not value):
        return None
    if value is True or (isinstance(value, np.bool_) and value):
        return "full"
    if isinstance(value, str) and value.lower() in ("full", "selective", "op", *_ATTENTION_MODE):
        key = value.lower()
        if key in _ATTENTION_MODE or (key == "selective" and framework == "megatron"):
            return "attention"
        return "selective" if key in ("selective", "op") else "full"
    hit = _LAYER_MODE.match(value.strip().lower()) if isinstance(value, str) else None
    if hit and (hit.group(1) is None or int(hit.group(1)) >= 1):
        every = int(hit.group(1) or 2)
        return "full" if every == 1 else f"layer:{every}"
    raise ValueError(f"activation_checkpointing must be False, True (= 'full'), 'full', 'selective' (torchtitan's "
                     f"per-operator policy; Megatron's core attention with framework='megatron'), 'attention' "
                     f"(Megatron's selective recomputation of the core attention) or 'layer' / 'layer:N' (every N-th "
                     f"layer checkpointed, N >= 1; torchtitan's per-layer policy); got {value!r}.")


# -- a workload described once --------------------------------------------------------------------------------------

class _Unset:
    """The value of a :class:`Workload` field left unset: the function the workload is passed to uses its own default."""

    _one = None

    def __new__(cls):
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return "UNSET"


#: a :class:`Workload` field left unset (``Workload.UNSET`` too).
UNSET = _Unset()


@dataclasses.dataclass(frozen=True, repr=False)
class Workload:
    """One training (or inference) step described once: what :func:`perfmodel.predict_step_time`,
    :func:`perfmodel.predict_memory`, :func:`perfmodel.planning.explore_strategies` and :func:`perfmodel.plan` share.

    Pass it where those functions take ``model``; the GPUs and the parallel layout stay their own arguments::

        w = pm.Workload(cfg, input_shape=(8192,), batch_size=16, precision="bf16", optimizer="adam-fused",
                        compile=True, activation_checkpointing="selective")
        pm.predict_step_time(w, "H100", n_gpus=8, strategy="fsdp")
        pm.predict_memory(w, "H100", n_gpus=8, strategy="fsdp")

    Only the fields you set are passed on: a field left unset is :data:`UNSET` and means **the default of the function
    the workload is passed to** (``predict_step_time`` defaults to FP32 and SGD with momentum, ``predict_memory`` and
    ``explore_strategies`` to Adam, ``pm.plan`` to BF16 and Adam), exactly as if the keyword had not been written.
    ``Workload(model, batch_size=8, input_shape=(64,))`` answers what ``batch_size=8, input_shape=(64,)`` as keywords
    answer, in every function. :meth:`values` holds the fields set; ``repr`` shows only those.

    A keyword a function is also given must agree with the workload (a different value is an error that names both);
    a workload field a function has no use for must be left unset.

    Each field is checked when the workload is made, by the rule the functions apply to the same keyword
    (:func:`perfmodel.step.trace.check_input_shape`, ``check_batch_size``, ``check_precision``,
    ``check_optimizer``, ``check_flag``, :func:`~perfmodel.step.trace.checkpointing_mode`): a ``TypeError`` or
    ``ValueError`` names the field, what it got and what to pass.

    Attributes
    ----------
    model : str, torch.nn.Module, dict or transformers.PretrainedConfig
        A zoo id, a module or a Hugging Face config (as ``predict_step_time`` takes it).
    input_shape : tuple of int, optional
        One sample without the batch dimension (``(seq_len,)`` for token models): a tuple or list of positive ints.
        An int is one dimension (``512`` is ``(512,)``, as ``predict_step_time`` reads it); a string is refused
        (``"512"`` is not ``(512,)``: pass ``input_shape=(512,)``), and so are floats, bools and sizes below 1.
    batch_size : int, optional
        Samples per step (the global batch over all GPUs; in CM-DARE's asynchronous world of :func:`perfmodel.plan`,
        one worker's step).
    input_dtype : torch.dtype or its name, optional
        ``torch.long`` for token models (set for Hugging Face configs).
    input_high : int, optional
        Exclusive upper bound of token ids.
    precision : {"fp32", "tf32", "bf16", "fp16", "fp8"}, optional
    optimizer : {"sgd-momentum", "adam", "adam-fused", None}, optional
        ``None`` (forward + backward only) is a value, not unset.
    inference : bool, optional
        ``True`` or ``False`` (the string ``"False"`` is refused).
    compile : bool, optional
    compile_scope : {"model", "layers", "layers+loss"}, optional
        What ``torch.compile`` compiles (stack ``"compile"`` only; :data:`COMPILE_SCOPES`): the whole step (``"model"``,
        the default: ``torch.compile(model)``), each transformer layer on its own with the embedding, final norm,
        output projection and loss eager (``"layers"``: torchtitan's per-block compile until April 2025), or the
        layers and the loss function (``"layers+loss"``: torchtitan since April 2025). Read by :func:`perfmodel.predict`.
    activation_checkpointing : bool or {"full", "selective", "attention", "layer", "layer:N"}, optional
    stack : {"eager", "compile", "te", "liger"}, optional
        The kernel family the run uses (``predict_step_time``'s ``stack=``); ``"compile"`` is ``compile=True``.
    fp8_recipe : {"tensorwise", "rowwise", "delayed", "current", "mxfp8", "blockwise", "nvfp4"}, optional
        At ``precision="fp8"``: the scaling recipe (:data:`FP8_RECIPES`); unset, the kernel family's default (torchao's
        tensorwise, Transformer Engine's delayed scaling). ``"nvfp4"`` is Transformer Engine's 4-bit recipe (TE runs
        it under its FP8 autocast, hence ``precision="fp8"``): the linears' GEMMs at the GPU's FP4 rate. Read by
        :func:`perfmodel.predict`.
    """

    #: the value of a field left unset.
    UNSET = UNSET

    model: object
    input_shape: tuple | None = UNSET
    batch_size: int = UNSET
    input_dtype: object = UNSET
    input_high: int | None = UNSET
    precision: str = UNSET
    optimizer: str | None = UNSET
    inference: bool = UNSET
    compile: bool = UNSET
    compile_scope: str = UNSET
    activation_checkpointing: bool | str = UNSET
    stack: str = UNSET
    fp8_recipe: str | None = UNSET

    def __post_init__(self):
        if isinstance(self.model, Workload):
            raise TypeError("Workload(model=...) takes a model (zoo id, module or config), not another Workload.")
        given = self.values()
        for name in sorted(given, key=lambda k: k not in _FLAGS):  # the flags first: optimizer's check reads inference
            value = given[name]
            try:
                if name == "input_shape":
                    if value is not None:
                        object.__setattr__(self, "input_shape", _workload_shape(value))
                elif name == "batch_size":
                    check_batch_size(value)
                elif name == "input_dtype":
                    _workload_dtype(value)
                elif name == "input_high":
                    if value is not None:
                        _check_positive_int("input_high", value)
                elif name == "precision":
                    check_precision(value)
                elif name == "optimizer":
                    check_optimizer(value, isinstance(self.inference, (bool, np.bool_)) and bool(self.inference))
                elif name in ("inference", "compile"):
                    check_flag(name, value, _FLAGS[name])
                elif name == "activation_checkpointing":
                    checkpointing_mode(value)
                elif name == "stack":
                    resolve_stack(value, bool(self.compile) if isinstance(self.compile, (bool, np.bool_)) else False)
                elif name == "fp8_recipe":
                    if value is not None:
                        object.__setattr__(self, "fp8_recipe", _check_recipe_name(value))
                        self._check_recipe()
                elif name == "compile_scope" and value is not None:
                    object.__setattr__(self, "compile_scope", _check_scope_name(value))
                    if self.is_set("stack") or self.is_set("compile"):
                        compile = bool(self.compile) if isinstance(self.compile, (bool, np.bool_)) else False
                        compile_scope_of(resolve_stack(self.stack if self.is_set("stack") else None, compile),
                                         self.compile_scope)
            except (TypeError, ValueError) as exc:
                msg = str(exc)
                raise type(exc)(f"Workload {msg}" if msg.startswith(name) else f"Workload {name}: {msg}") from None

    def _check_recipe(self) -> None:
        """A recipe with a precision or a kernel family said beside it must agree with them."""
        prec = self.precision.lower() if isinstance(self.precision, str) else None
        if prec is not None and prec != "fp8":
            fp8_recipe_of(prec, "eager", self.fp8_recipe)  # the error that names both
        if self.is_set("stack") or self.is_set("compile"):
            compile = bool(self.compile) if isinstance(self.compile, (bool, np.bool_)) else False
            fp8_recipe_of("fp8", resolve_stack(self.stack if self.is_set("stack") else None, compile), self.fp8_recipe)

    def values(self) -> dict:
        """The fields set (every field but ``model`` that is not :data:`UNSET`) as keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "model" and getattr(self, f.name) is not UNSET}

    def filled(self, **defaults) -> "Workload":
        """This workload with the fields left unset given ``defaults`` (a function's defaults): what the step model's
        layers read, every field they use set. The precision is lower-cased and ``stack`` is the kernel family
        (``compile`` True exactly when it is ``"compile"``)."""
        values = {**defaults, **self.values()}
        family = resolve_stack(values.get("stack"), bool(values.get("compile", False)))
        values.update(stack=family, compile=family == "compile")
        prec = values.get("precision")
        if isinstance(prec, str):
            values["fp8_recipe"] = fp8_recipe_of(prec.lower(), family, values.get("fp8_recipe"))
        if isinstance(values.get("precision"), str):
            values["precision"] = values["precision"].lower()
        values["compile_scope"] = compile_scope_of(family, values.get("compile_scope"))
        return dataclasses.replace(self, **values)

    def is_set(self, name: str) -> bool:
        """Whether the field ``name`` was given (a field left unset is the function's default)."""
        if name not in {f.name for f in dataclasses.fields(self)}:
            raise AttributeError(f"Workload has no field {name!r}.")
        return getattr(self, name) is not UNSET

    def __repr__(self) -> str:
        shown = repr(self.model)
        if "\n" in shown or len(shown) > 120:  # a module prints its whole tree
            shown = f"<{type(self.model).__name__}>"
        return "Workload(" + ", ".join([shown, *(f"{k}={v!r}" for k, v in self.values().items())]) + ")"


_FLAGS = {"inference": "a forward pass instead of a training step", "compile": "torch.compile"}


def _workload_shape(value) -> tuple:
    from perfmodel.features import FeatureExtractionError
    try:
        return check_input_shape(value)
    except FeatureExtractionError as exc:
        kind = TypeError if isinstance(value, str) or not hasattr(value, "__len__") and not isinstance(value, (int, np.integer)) else ValueError
        raise kind(str(exc)) from None


def _workload_dtype(value) -> None:
    if value is None:
        return
    from perfmodel.features import FeatureExtractionError
    from perfmodel.features._extract import _check_dtype as check

    try:
        check(value, "input_dtype")
    except FeatureExtractionError as exc:
        raise ValueError(str(exc)) from None


def _check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, or None; got {value!r}.")


#: the fields only :func:`perfmodel.predict` reads (the keyword functions have no keyword for them), and where to go.
_OBJECT_ONLY = {name: ", or pass the run to pm.predict(workload, pm.Cluster(...), pm.Parallelism(...)), which reads it"
                for name in ("fp8_recipe", "compile_scope")}


def _merge(fn_name: str, workload: Workload, kwargs: dict, keys: dict, hint: str = "") -> dict:
    """``kwargs`` with the fields ``workload`` sets filled in under the function's keywords (``keys``: field →
    (keyword, conversion or None)); a keyword given with another value, or a set field the function has no use for,
    raises a ``ValueError`` naming it (``hint``: what else the caller may do)."""
    kwargs = dict(kwargs)
    for name, value in workload.values().items():
        if name not in keys:
            where = _OBJECT_ONLY.get(name, ", or call a function that takes it")
            raise ValueError(f"{fn_name} has no use for the workload's {name}={value!r}; leave it unset in the Workload"
                             f"{hint or where}.")
        key, conv = keys[name]
        value = conv(value) if conv else value
        if key in kwargs and kwargs[key] != value:
            raise ValueError(f"{fn_name} was given {key}={kwargs[key]!r} and a Workload with {key}={value!r}; "
                             "say it once: in the Workload, or as the keyword with a plain model.")
        kwargs.setdefault(key, value)
    return kwargs


def accepts_workload(*fields: str, rename: dict | None = None):
    """Decorator: the wrapped function's first argument may be a :class:`Workload`. The fields the workload sets that
    are among ``fields`` (the ones the function takes; ``rename`` maps a field to the function's own keyword and a
    conversion, e.g. ``batch_size`` to ``batch_sizes=(b,)``) fill the keywords the caller left out; fields left unset
    are not passed, so the function's own defaults hold. A keyword given with another value, or a workload field the
    function has no use for that is set, raises a ``ValueError`` naming it."""
    import functools
    import inspect

    rename = dict(rename or {})

    def wrap(fn):
        params = inspect.signature(fn).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
        keys = {name: rename.get(name, (name, None)) for name in fields}
        wrong = sorted(k for k, _ in keys.values() if k not in params and not takes_any)
        if wrong:  # checked once, when the function is defined
            raise TypeError(f"accepts_workload: {fn.__name__} takes no {wrong}.")

        @functools.wraps(fn)
        def inner(model, *args, **kwargs):
            if not isinstance(model, Workload):
                return fn(model, *args, **kwargs)
            return fn(model.model, *args, **_merge(fn.__name__, model, kwargs, keys))

        return inner

    return wrap

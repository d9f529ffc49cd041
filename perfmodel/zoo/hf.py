"""Hugging Face models from their configs, built on the meta device: no weights downloaded, no memory allocated.

>>> from perfmodel.zoo import hf
>>> import transformers                                                       # doctest: +SKIP
>>> step = hf.build(transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20))   # GPT-2-large  # doctest: +SKIP
>>> pm.features.extract(step, (1024,), batch_size=1, input_dtype=torch.long, per_op=True)     # doctest: +SKIP

:func:`build` returns a :class:`TrainingStep`: a module whose forward takes token ids of shape ``(batch, seq_len)``
and returns the loss of one training step — for a causal (or masked, or encoder–decoder) language model the loss on
``labels = input_ids``, computed by the model itself. Needs the optional extra ``perfmodel[hf]`` (``transformers``).

How it stays meta-compatible (tested with GPT-2, BERT, OPT and Switch Transformers configs):

* **No attention mask is passed.** Every token is real, which is what an all-ones mask says; transformers then takes
  the same attention kernel (causal ``scaled_dot_product_attention`` or the eager softmax path) without its mask
  helpers, which inspect the mask's values (``Tensor.item()``) and so cannot run on meta.
* **Mixture-of-experts routing is made static.** A router sends each token to the expert its (data-dependent)
  logits choose, and transformers gathers each expert's tokens with ``nonzero``; on meta that cannot run, and on
  zero-valued stand-ins every token would go to expert 0 (a silent undercount of the others). With
  ``moe_routing="uniform"`` (the default) the Switch Transformers sparse MLPs route round-robin: in each sequence of
  ``S`` tokens expert ``e`` receives the tokens ``e, e + E, e + 2E, …`` — ⌈S/E⌉ or ⌊S/E⌋ of them, at most the
  config's ``expert_capacity`` (tokens beyond it are dropped, as Switch does) — the expected load of a balanced
  router. The router itself (linear, softmax, argmax, one-hot, cumsum) still runs, and the parameters and module
  names are those of the model. ``moe_routing="model"`` keeps transformers' own routing (then
  :func:`perfmodel.features.extract` refuses the step with a message naming the data-dependent op).
"""
from __future__ import annotations

import torch

__all__ = ["build", "TrainingStep", "MOE_ROUTINGS"]

#: Routing treatments for mixture-of-experts layers (see the module docstring).
MOE_ROUTINGS = ("uniform", "model")


def _transformers():
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - transformers is a test dependency
        raise ImportError(
            "perfmodel.zoo.hf needs the optional dependency transformers (>= 4.40). Install it with "
            "pip install 'perfmodel[hf]'."
        ) from exc
    return transformers


class TrainingStep(torch.nn.Module):
    """One training step of a Hugging Face language model: ``forward(input_ids) -> loss`` with ``labels = input_ids``.

    The model is the child ``model`` (module paths ``model.transformer.h.0.attn…``). No attention mask is passed
    (every token is real; see :mod:`perfmodel.zoo.hf`).
    """

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, labels=input_ids).loss


def _uniform_sparse_mlp_class(base):
    """A subclass of transformers' Switch Transformers sparse MLP whose tokens are routed round-robin (static)."""
    returns_router_outputs = _transformers_major() < 5

    class UniformRoutingSparseMLP(base):
        """Switch Transformers' sparse MLP with static round-robin routing (see :mod:`perfmodel.zoo.hf`)."""

        def forward(self, hidden_states):
            batch, seq, hidden = hidden_states.shape
            expert_index, routing_weights, router_logits = self.router(hidden_states)
            n_experts = self.router.num_experts
            capacity = int(self.router.expert_capacity)
            flat = hidden_states.reshape(-1, hidden)
            weights = routing_weights.reshape(-1, 1)
            out = torch.zeros_like(flat)
            dev = hidden_states.device
            for e in range(n_experts):
                per_seq = min(len(range(e, seq, n_experts)), capacity)
                if per_seq == 0:
                    continue
                pos = torch.arange(per_seq, device=dev) * n_experts + e
                idx = (torch.arange(batch, device=dev)[:, None] * seq + pos[None, :]).reshape(-1)
                y = self.experts[f"expert_{e}"](flat.index_select(0, idx)) * weights.index_select(0, idx)
                out.index_add_(0, idx, y.to(flat.dtype))
            out = out.reshape(batch, seq, hidden)
            if returns_router_outputs:  # transformers 4.x returns the router's outputs for the auxiliary losses
                return out, (router_logits, expert_index)
            return out

    UniformRoutingSparseMLP.__name__ = UniformRoutingSparseMLP.__qualname__ = f"UniformRouting{base.__name__}"
    return UniformRoutingSparseMLP


def _transformers_major() -> int:
    return int(_transformers().__version__.split(".")[0])


def _config(config):
    transformers = _transformers()
    if isinstance(config, transformers.PretrainedConfig):
        return config.__class__.from_dict(config.to_dict())  # a copy: the caller's config is not modified
    if isinstance(config, dict):
        d = dict(config)
        model_type = d.pop("model_type", None)
        if model_type is None:
            raise ValueError(
                "A Hugging Face config given as a dict needs its 'model_type' (e.g. 'gpt2', 'bert', 'opt', "
                f"'switch_transformers'); got the keys {sorted(d)[:8]}. Add model_type, or pass a PretrainedConfig."
            )
        try:
            return transformers.AutoConfig.for_model(model_type, **d)
        except ValueError as exc:
            raise ValueError(
                f"Unknown Hugging Face model_type {model_type!r} for the installed transformers "
                f"{transformers.__version__}. Expected one of transformers' model types (e.g. 'gpt2', 'bert', 'opt'); "
                "fix the config or upgrade transformers."
            ) from exc
    raise TypeError(
        f"build() needs a Hugging Face config: a dict with 'model_type' or a transformers.PretrainedConfig; got "
        f"{type(config).__name__}. E.g. perfmodel.zoo.hf.build(transformers.GPT2Config(n_layer=12))."
    )


def _model_class(cfg):
    transformers = _transformers()
    for arch in getattr(cfg, "architectures", None) or ():
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    for auto in ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM"):
        mapping = getattr(transformers, auto)._model_mapping
        if type(cfg) in mapping:
            return mapping[type(cfg)]
    raise ValueError(
        f"No language-model head for model_type {cfg.model_type!r}: expected a config with 'architectures' naming a "
        "transformers class, or a model type with a causal, seq2seq or masked LM head."
    )


def build(config, *, moe_routing: str = "uniform", attn_implementation: str | None = None):
    """One training step of a Hugging Face model built from its config on the meta device (nothing downloaded).

    Parameters
    ----------
    config : dict or transformers.PretrainedConfig
        E.g. ``transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20)``, or a ``config.json`` read as a dict
        (it needs ``model_type``; ``architectures`` picks the head, e.g. ``"BertLMHeadModel"``, else the causal-LM,
        then seq2seq, then masked-LM head of the model type). Not modified.
    moe_routing : {"uniform", "model"}, default "uniform"
        Static round-robin routing for mixture-of-experts layers (Switch Transformers), or transformers' own
        data-dependent routing; see :mod:`perfmodel.zoo.hf`.
    attn_implementation : {"sdpa", "eager", ...}, optional
        Passed to transformers; default: transformers' own choice (``"sdpa"`` where the model supports it).

    Returns
    -------
    TrainingStep
        A ``torch.nn.Module`` on the meta device, in training mode: ``forward(input_ids) -> loss``. Use it with
        :func:`perfmodel.features.extract` and ``input_dtype=torch.long`` (it runs on meta by default).

    Raises
    ------
    ValueError
        ``moe_routing`` is not one of :data:`MOE_ROUTINGS`, a dict config lacks ``model_type`` or names an unknown one,
        or the model type has no language-model head.
    TypeError
        ``config`` is neither a dict nor a ``PretrainedConfig``.
    ImportError
        ``transformers`` is not installed (``pip install 'perfmodel[hf]'``).
    """
    if moe_routing not in MOE_ROUTINGS:
        raise ValueError(f"moe_routing must be one of {', '.join(map(repr, MOE_ROUTINGS))}; got {moe_routing!r}.")
    cfg = _config(config)
    if getattr(cfg, "is_encoder_decoder", False) and getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = cfg.pad_token_id if cfg.pad_token_id is not None else 0  # T5's convention
    cls = _model_class(cfg)
    kwargs = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    with torch.device("meta"), _SkipMetaInit():
        model = cls._from_config(cfg, **kwargs)
    if moe_routing == "uniform":
        _static_routing(model)
    step = TrainingStep(model)
    step.train()
    return step


class _SkipMetaInit(torch.overrides.TorchFunctionMode):
    """Skip the value-only in-place ops of weight initialisation (``normal_``, ``uniform_``, ``fill_`` …) on meta tensors.

    A meta tensor has no values, yet torch runs these ops through its Python reference kernels to check their shapes:
    ~1 s for GPT-2-large's 146 ``Conv1D.__init__`` calls to ``nn.init.normal_``. Only ops on meta tensors under
    ``no_grad`` (as ``torch.nn.init`` and transformers' ``_init_weights`` run them) are skipped, and only while the
    model is built (the mode is thread-local); parameters, buffers, shapes, dtypes and weight tying are unchanged.
    """

    #: torch.nn.init functions (they run under no_grad themselves) and Tensor methods (skipped under no_grad only)
    _INIT = frozenset({
        "normal_", "uniform_", "zeros_", "ones_", "constant_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
        "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "eye_", "dirac_", "sparse_",
    })
    _VALUE_ONLY = frozenset({
        "normal_", "uniform_", "fill_", "zero_", "erfinv_", "mul_", "add_", "clamp_", "exponential_", "copy_",
    })

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes it by keyword
        if isinstance(first, torch.Tensor) and first.device.type == "meta":
            name = getattr(func, "__name__", None)
            if name in self._INIT and getattr(func, "__module__", None) == "torch.nn.init":
                return first
            if name in self._VALUE_ONLY and args and not torch.is_grad_enabled() and all(
                    not isinstance(a, torch.Tensor) or a.device.type == "meta" for a in (*args[1:], *kwargs.values())):
                return first
        return func(*args, **kwargs)


def _static_routing(model) -> None:
    """Give the Switch Transformers sparse MLPs of ``model`` uniform static routing (class swap, same parameters)."""
    try:
        from transformers.models.switch_transformers import modeling_switch_transformers as sw
    except ImportError:  # pragma: no cover - old transformers without Switch
        return
    base = sw.SwitchTransformersSparseMLP
    uniform = None
    for mod in model.modules():
        if type(mod) is base:
            uniform = uniform or _uniform_sparse_mlp_class(base)
            mod.__class__ = uniform


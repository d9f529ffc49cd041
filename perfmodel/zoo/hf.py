"""Hugging Face models from their configs, built on the meta device: no weights downloaded, no memory allocated.

>>> from perfmodel.zoo import hf
>>> import transformers                                                       # doctest: +SKIP
>>> step = hf.build(transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20))   # GPT-2-large  # doctest: +SKIP
>>> pm.features.extract(step, (1024,), batch_size=1, input_dtype=torch.long, per_op=True)     # doctest: +SKIP

:func:`build` returns a :class:`TrainingStep`: a module whose forward takes token ids of shape ``(batch, seq_len)``
and returns the loss of one training step, computed by the model's own head on labels made from the input's shape —
for a causal (or masked, or encoder–decoder) language model ``labels = input_ids``; for classification, question
answering, multiple choice and pre-training heads labels of their shapes and dtypes; for a base model without a head a
documented surrogate (the mean of its last hidden state). See :class:`TrainingStep` for each kind (:data:`HEAD_KINDS`).
A sequence longer than the config's position table, or a config that cannot build a model, raises
:class:`perfmodel._errors.ModelConfigError`. Needs the optional extra ``perfmodel[hf]`` (``transformers``).

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

import re

import torch

__all__ = ["build", "read_config", "config_dict", "TrainingStep", "MOE_ROUTINGS", "HEAD_KINDS", "head_kind", "max_positions"]

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


#: The training objectives :class:`TrainingStep` builds, one per kind of head (see :func:`head_kind`).
HEAD_KINDS = (
    "causal-lm", "masked-lm", "seq2seq-lm", "pretraining", "sequence-classification", "next-sentence",
    "token-classification", "question-answering", "multiple-choice", "base",
)

# transformers' auto-model mappings, most specific first: a class in several (BartForConditionalGeneration is a
# seq2seq, masked-LM and pre-training model) takes the first kind that lists it.
_MAPPINGS = (
    ("MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "question-answering"),
    ("MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES", "multiple-choice"),
    ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "token-classification"),
    ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "sequence-classification"),
    ("MODEL_FOR_NEXT_SENTENCE_PREDICTION_MAPPING_NAMES", "next-sentence"),
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "seq2seq-lm"),
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "causal-lm"),
    ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "masked-lm"),
    ("MODEL_FOR_PRETRAINING_MAPPING_NAMES", "causal-lm"),  # what is left there: LM heads (GPT2LMHeadModel, ...)
    ("MODEL_MAPPING_NAMES", "base"),
    ("MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES", "base"),
)


def _class_names(mapping) -> set:
    out = set()
    for v in mapping.values():
        out.update(v if isinstance(v, (tuple, list)) else (v,))
    return out


def head_kind(model_class) -> str:
    """The training objective of a transformers model class: one of :data:`HEAD_KINDS`.

    Parameters
    ----------
    model_class : type
        A transformers model class, e.g. ``transformers.BertForQuestionAnswering``.

    Returns
    -------
    str
        From transformers' auto-model mappings (most specific first); a model whose ``forward`` takes
        ``next_sentence_label`` (``BertForPreTraining``) is ``"pretraining"``.

    Raises
    ------
    perfmodel._errors.ModelConfigError
        The class is in none of the mappings, so no loss can be built for it (it would be a forward-only step).
    """
    import inspect

    from transformers.models.auto import modeling_auto

    params = inspect.signature(model_class.forward).parameters
    if "next_sentence_label" in params and "labels" in params:
        return "pretraining"
    name = model_class.__name__
    for attr, kind in _MAPPINGS:
        if name in _class_names(getattr(modeling_auto, attr, {})):
            return kind
    from perfmodel._errors import ModelConfigError

    raise ModelConfigError(
        f"perfmodel.zoo.hf cannot build a training loss for {name}: it is in none of transformers' auto-model mappings "
        f"(causal / masked / seq2seq LM, pre-training, sequence / token classification, question answering, multiple "
        f"choice, base model), so its outputs cannot be reduced to a loss (its forward takes {', '.join(params)}). "
        "Expected 'architectures' naming such a class; pick one, or wrap the model in a module whose forward returns "
        "the loss and pass that module instead."
    )


def max_positions(config) -> int | None:
    """The longest sequence a config's position table holds (``max_position_embeddings`` / ``n_positions``), or None.

    Models with relative positions (T5) have none."""
    n = getattr(config, "max_position_embeddings", None)
    return int(n) if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _has_position_table(model, limit: int) -> bool:
    """Whether ``model`` looks positions up in a learned table of ``limit`` rows (GPT-2's ``wpe``, BERT's
    ``position_embeddings``, OPT's ``embed_positions`` with its offset of 2), which a longer sequence indexes out of
    range. Rotary models (Llama, Mistral, Qwen) compute their positions: ``max_position_embeddings`` is the context
    they were trained for, not a table, and longer sequences run (torchtitan trains Llama 3 8B at 262,144 tokens)."""
    try:
        tokens = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        tokens = None
    return any(isinstance(m, torch.nn.Embedding) and m is not tokens and limit <= m.num_embeddings <= limit + 2
               for m in model.modules())


class TrainingStep(torch.nn.Module):
    """One training step of a Hugging Face model: ``forward(input_ids) -> loss``, the loss its head trains with.

    The model is the child ``model`` (module paths ``model.transformer.h.0.attn…``). No attention mask is passed
    (every token is real; see :mod:`perfmodel.zoo.hf`). The labels are made from the shape of ``input_ids`` (no
    values are read, so the step runs on the meta device), deterministic, with the shapes and dtypes of the head:

    ========================  ================================================================================
    ``kind``                  what the model is called with
    ========================  ================================================================================
    causal-lm, masked-lm,     ``labels = input_ids`` (seq2seq: the model shifts them right into the decoder's
    seq2seq-lm                input; masked LM: the loss on every token)
    pretraining               ``labels = input_ids`` and ``next_sentence_label = arange(batch) % 2``
    sequence-classification   ``labels`` of shape ``(batch,)``: ``arange(batch) % num_labels`` (long) for
                              single-label; floats for ``problem_type="regression"`` (or ``num_labels == 1``;
                              shape ``(batch, num_labels)`` when ``num_labels > 1``) and of shape
                              ``(batch, num_labels)`` in {0, 1} for ``"multi_label_classification"``
    next-sentence             ``labels = arange(batch) % 2``
    token-classification      ``labels`` of shape ``(batch, seq)``: ``arange(seq) % num_labels``
    question-answering        ``start_positions = 0`` and ``end_positions = seq - 1``, shape ``(batch,)``
    multiple-choice           ``input_ids`` of shape ``(batch, num_choices, seq)`` (a 2-D input is one choice
                              each), ``labels = arange(batch) % num_choices``
    base                      no head and no loss of its own: the surrogate loss is the **mean** of
                              ``last_hidden_state`` plus the mean of ``pooler_output`` where the model has a
                              pooler (so that every parameter gets a gradient); encoder–decoder base models get
                              ``decoder_input_ids = input_ids``. The cost of a real head and loss is not in it.
    ========================  ================================================================================

    Parameters
    ----------
    model : transformers.PreTrainedModel
    kind : str, optional
        One of :data:`HEAD_KINDS`; default :func:`head_kind` of the model's class.

    Raises
    ------
    perfmodel._errors.ModelConfigError
        (in ``forward``) ``input_ids`` is longer than the config's learned position table (:func:`max_positions`;
        rotary models have none and take longer sequences), or the
        model returned no loss (never a forward-only step counted as a training step).
    """

    def __init__(self, model, kind: str | None = None):
        super().__init__()
        self.model = model
        self.kind = head_kind(type(model)) if kind is None else kind
        if self.kind not in HEAD_KINDS:
            from perfmodel._errors import ModelConfigError

            raise ModelConfigError(f"kind must be one of {', '.join(map(repr, HEAD_KINDS))}; got {kind!r}.")

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}"

    def _float_dtype(self):
        return next((p.dtype for p in self.model.parameters() if p.is_floating_point()), torch.get_default_dtype())

    def _check_length(self, input_ids) -> None:
        from perfmodel._errors import ModelConfigError

        if input_ids.dim() < 2:
            raise ModelConfigError(
                f"{type(self.model).__name__} takes token ids of shape (batch, seq_len); got shape {tuple(input_ids.shape)}. "
                "Pass input_shape=(seq_len,) (the batch is added)."
            )
        limit = max_positions(self.model.config)
        seq = int(input_ids.shape[-1])
        if limit is not None and seq > limit and _has_position_table(self.model, limit):
            raise ModelConfigError(
                f"{type(self.model).__name__} was given sequences of {seq} tokens, but its config holds positions for "
                f"{limit} (max_position_embeddings / n_positions = {limit}); the position table would be indexed out of "
                f"range. Expected seq_len <= {limit}: shorten the input, or raise max_position_embeddings "
                "(n_positions for GPT-2) in the config to the length you train at."
            )

    def forward(self, input_ids):
        self._check_length(input_ids)
        cfg = self.model.config
        kind, dev = self.kind, input_ids.device
        batch, seq = int(input_ids.shape[0]), int(input_ids.shape[-1])
        kw: dict = {}
        if kind in ("causal-lm", "masked-lm", "seq2seq-lm"):
            kw["labels"] = input_ids
        elif kind == "pretraining":
            kw["labels"] = input_ids
            kw["next_sentence_label"] = torch.arange(batch, device=dev) % 2
        elif kind == "next-sentence":
            kw["labels"] = torch.arange(batch, device=dev) % 2
        elif kind == "sequence-classification":
            if getattr(cfg, "is_encoder_decoder", False):  # pooled at each sequence's <eos>: exactly one, at the end
                eos = int(cfg.eos_token_id)
                body = torch.where(input_ids[:, :-1] == eos, (eos + 1) % int(cfg.vocab_size), input_ids[:, :-1])
                input_ids = torch.cat([body, torch.full_like(input_ids[:, -1:], eos)], 1)
            n = int(getattr(cfg, "num_labels", 2))
            problem = getattr(cfg, "problem_type", None) or ("regression" if n == 1 else "single_label_classification")
            if problem == "regression":
                shape = (batch,) if n == 1 else (batch, n)
                kw["labels"] = torch.zeros(shape, dtype=self._float_dtype(), device=dev)
            elif problem == "multi_label_classification":
                kw["labels"] = (torch.arange(batch * n, device=dev).reshape(batch, n) % 2).to(self._float_dtype())
            else:
                kw["labels"] = torch.arange(batch, device=dev) % n
        elif kind == "token-classification":
            n = int(getattr(cfg, "num_labels", 2))
            kw["labels"] = (torch.arange(seq, device=dev) % n).repeat(batch, 1)
        elif kind == "question-answering":
            kw["start_positions"] = torch.zeros(batch, dtype=torch.long, device=dev)
            kw["end_positions"] = torch.full((batch,), seq - 1, dtype=torch.long, device=dev)
        elif kind == "multiple-choice":
            if input_ids.dim() == 2:
                input_ids = input_ids[:, None, :]
            kw["labels"] = torch.arange(batch, device=dev) % int(input_ids.shape[1])
        else:  # base
            if getattr(cfg, "is_encoder_decoder", False):
                kw["decoder_input_ids"] = input_ids
            out = self.model(input_ids=input_ids, **kw)
            parts = [getattr(out, "last_hidden_state", None), getattr(out, "pooler_output", None)]
            parts = [t for t in parts if isinstance(t, torch.Tensor)]
            if not parts:
                from perfmodel._errors import ModelConfigError

                raise ModelConfigError(
                    f"{type(self.model).__name__} (a base model) returned no last_hidden_state to reduce to a surrogate "
                    "loss. Expected a transformers base model; name a model with a head in 'architectures'."
                )
            return sum(t.mean() for t in parts)
        loss = self.model(input_ids=input_ids, **kw).loss
        if loss is None:
            from perfmodel._errors import ModelConfigError

            raise ModelConfigError(
                f"{type(self.model).__name__} returned no loss when called with {', '.join(kw)} (kind {kind!r}), so its "
                "step would have no backward pass. Expected a head that computes a loss from these labels; name another "
                "head in 'architectures', or wrap the model in a module whose forward returns the loss."
            )
        return loss


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


#: Config fields that count something (layers, heads, widths, vocabulary, positions): positive ints when set.
_SIZE_FIELDS = (
    "n_layer", "num_hidden_layers", "num_layers", "num_decoder_layers", "encoder_layers", "decoder_layers", "n_head",
    "num_attention_heads", "num_heads", "num_key_value_heads", "encoder_attention_heads", "decoder_attention_heads",
    "n_embd", "hidden_size", "d_model", "d_kv", "d_ff", "n_inner", "intermediate_size", "ffn_dim", "encoder_ffn_dim",
    "decoder_ffn_dim", "vocab_size", "n_positions", "max_position_embeddings", "num_labels", "num_experts",
)


def _config_error(msg):
    from perfmodel._errors import ModelConfigError

    return ModelConfigError(msg)


#: The most layers (per stack) a config may have. The deepest published dense models have about 126-160 layers; a
#: count far above that is almost always a typo, and building and tracing it exhausts memory (100,000 layers grew past
#: 23 GB before the kernel killed the process) rather than failing. Raise it (``perfmodel.zoo.hf.MAX_LAYERS = n``)
#: before building if you truly mean a deeper model, knowing the traced step grows with the layer count.
MAX_LAYERS = 1024

#: Config fields that count layers (of one stack: encoder, decoder or the only one).
_LAYER_FIELDS = ("n_layer", "num_hidden_layers", "num_layers", "num_decoder_layers", "encoder_layers", "decoder_layers")


def _check_sizes(d: dict, where: str) -> None:
    for key in _SIZE_FIELDS:
        v = d.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise _config_error(
                f"The Hugging Face config{where} has {key} = {v!r}; expected a positive int (a count of layers, heads, "
                f"features, tokens or labels). Fix {key} in the config."
            )
    for key in _LAYER_FIELDS:
        v = d.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_LAYERS:
            raise _config_error(
                f"The Hugging Face config{where} has {key} = {v}; expected at most {MAX_LAYERS} layers (the deepest "
                f"published dense models have about 126-160). Building and tracing {v} layers would take memory and time "
                f"in proportion and is almost always a typo: fix {key}, or, if you truly mean it, raise the limit first "
                f"(perfmodel.zoo.hf.MAX_LAYERS = {v})."
            )


def _check_heads(d: dict, where: str) -> None:
    """Grouped-query attention: each key/value head serves ``heads / kv`` query heads, so ``num_key_value_heads``
    must divide ``num_attention_heads`` (a larger count used to fail deep in the traced step, blamed on the input)."""
    heads, kv = d.get("num_attention_heads"), d.get("num_key_value_heads")
    if isinstance(heads, int) and isinstance(kv, int) and not isinstance(kv, bool) and heads >= 1 and kv >= 1 \
            and (kv > heads or heads % kv):
        raise _config_error(
            f"The Hugging Face config{where} has num_key_value_heads = {kv} and num_attention_heads = {heads}; expected "
            f"a number of key/value heads that divides the number of attention heads (each serves heads / kv query "
            f"heads: {heads} itself for multi-head attention, or one of its divisors). Fix num_key_value_heads."
        )


def read_config(path) -> dict:
    """A Hugging Face ``config.json`` read from disk as a dict (what :func:`build` and ``predict_step_time`` take).

    Raises
    ------
    FileNotFoundError
        No such file.
    perfmodel._errors.ModelConfigError
        Not UTF-8 JSON, or JSON that is not an object (``[]``, ``null``, a number).
    """
    import json
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Hugging Face config at {path}: give the path of a config.json (e.g. GPT-2-large's).")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _config_error(f"{path} is not a JSON file ({exc}); expected a Hugging Face config.json.") from None
    if not isinstance(d, dict):
        raise _config_error(f"{path} holds JSON {type(d).__name__} {json.dumps(d)[:40]}; expected a Hugging Face config "
                            "object with 'model_type' (a config.json).")
    return d


def config_dict(config) -> dict:
    """A Hugging Face config as a plain dict (a copy): a dict as given, a ``transformers.PretrainedConfig`` through
    ``to_dict()`` with the attention kernel it was made with (``_attn_implementation``, which ``to_dict()`` leaves out)
    as ``attn_implementation``. Returns None for anything else (a zoo id, a module), for the caller to say what it
    takes."""
    if isinstance(config, dict):
        return dict(config)
    if type(config).__name__.endswith("Config") and hasattr(config, "to_dict"):
        cfg = config.to_dict()
        impl = getattr(config, "_attn_implementation", None)
        if impl and "attn_implementation" not in cfg:
            cfg["attn_implementation"] = impl
        return cfg
    return None


def _config(config):
    transformers = _transformers()
    if isinstance(config, transformers.PretrainedConfig):
        cfg = config.__class__.from_dict(config.to_dict())  # a copy: the caller's config is not modified
        _check_sizes(cfg.to_dict(), f" ({type(config).__name__})")
        _check_heads(cfg.to_dict(), f" ({type(config).__name__})")
        return cfg
    if isinstance(config, dict):
        d = dict(config)
        model_type = d.pop("model_type", None)
        if model_type is None:
            raise _config_error(
                "A Hugging Face config given as a dict needs its 'model_type' (e.g. 'gpt2', 'bert', 'opt', "
                f"'switch_transformers'); got the keys {sorted(d)[:8]}. Add model_type, or pass a PretrainedConfig."
            )
        if not isinstance(model_type, str):
            raise _config_error(f"The Hugging Face config's model_type must be a string such as 'gpt2'; got {model_type!r}.")
        _check_sizes(d, f" of model_type {model_type!r}")
        _check_heads(d, f" of model_type {model_type!r}")
        try:
            return transformers.AutoConfig.for_model(model_type, **d)
        except ValueError as exc:
            if "Unrecognized model identifier" not in str(exc) and model_type in transformers.CONFIG_MAPPING:
                raise _config_error(
                    f"transformers rejected the {model_type!r} config ({exc}). Fix the values it names in the config."
                ) from exc
            raise _config_error(
                f"Unknown Hugging Face model_type {model_type!r} for the installed transformers "
                f"{transformers.__version__}. Expected one of transformers' model types (e.g. 'gpt2', 'bert', 'opt'); "
                "fix the config or upgrade transformers."
            ) from exc
        except Exception as exc:
            raise _config_error(
                f"transformers could not read the {model_type!r} config ({type(exc).__name__}: {exc}). Fix the values it "
                "names in the config."
            ) from exc
    shown = "null" if config is None else repr(config)[:60]
    raise _config_error(
        f"build() needs a Hugging Face config: a dict (a config.json object) with 'model_type' or a "
        f"transformers.PretrainedConfig; got {type(config).__name__} {shown}. E.g. "
        "perfmodel.zoo.hf.build(transformers.GPT2Config(n_layer=12)) or build({'model_type': 'gpt2', 'n_layer': 12})."
    )


def _model_class(cfg):
    transformers = _transformers()
    archs = getattr(cfg, "architectures", None) or ()
    for arch in archs:
        cls = getattr(transformers, arch, None)
        if cls is not None:
            return cls
    if archs:  # never another head than the one the config names
        raise _config_error(
            f"The config's 'architectures' = {list(archs)} names no class of transformers {transformers.__version__}. "
            f"Expected a transformers model class (e.g. 'BertForQuestionAnswering', 'GPT2LMHeadModel'); fix the name, "
            "upgrade transformers, or drop 'architectures' to use the causal, seq2seq or masked LM head."
        )
    for auto in ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM"):
        mapping = getattr(transformers, auto)._model_mapping
        if type(cfg) in mapping:
            return mapping[type(cfg)]
    raise _config_error(
        f"No language-model head for model_type {cfg.model_type!r}: expected a config with 'architectures' "
        "naming a transformers class, or a model type with a causal, seq2seq or masked LM head."
    )


def build(config, *, moe_routing: str = "uniform", attn_implementation: str | None = None, device: str = "meta"):
    """One training step of a Hugging Face model built from its config on the meta device (nothing downloaded).

    Parameters
    ----------
    config : dict or transformers.PretrainedConfig
        E.g. ``transformers.GPT2Config(n_layer=36, n_embd=1280, n_head=20)``, or a ``config.json`` read as a dict
        (it needs ``model_type``; ``architectures`` picks the head, e.g. ``"BertForQuestionAnswering"`` or
        ``"BertModel"``, else the causal-LM, then seq2seq, then masked-LM head of the model type). Not modified.
    moe_routing : {"uniform", "model"}, default "uniform"
        Static round-robin routing for mixture-of-experts layers (Switch Transformers), or transformers' own
        data-dependent routing; see :mod:`perfmodel.zoo.hf`.
    attn_implementation : {"sdpa", "eager", ...}, optional
        Passed to transformers; default: transformers' own choice (``"sdpa"`` where the model supports it).
    device : {"meta", "cpu", "cuda", "cuda:N"}, default "meta"
        ``"cpu"`` builds the model with real, initialised weights (small configs: tests, measurements); a CUDA device
        builds and initialises it there (:func:`perfmodel.measure.measure_llm_step` times it).

    Returns
    -------
    TrainingStep
        A ``torch.nn.Module`` in training mode whose ``forward(input_ids) -> loss`` is the loss of the model's head
        on labels made from the input's shape (see :class:`TrainingStep`; a base model without a head gets a
        documented surrogate loss, the mean of its last hidden state). Use it with
        :func:`perfmodel.features.extract` and ``input_dtype=torch.long`` (it runs on meta by default). A decoder-only
        sequence classifier whose config has no ``pad_token_id`` gets ``eos_token_id`` (else 0) as its pad token, which
        transformers needs to pool a batch of more than one sequence.

    Raises
    ------
    perfmodel._errors.ModelConfigError
        (a ``ValueError`` and a ``TypeError``) ``config`` is neither a dict nor a ``PretrainedConfig`` (``[]``,
        ``None``), a dict config lacks ``model_type`` or names an unknown one, a size field (``n_layer``,
        ``hidden_size``, …) is not a positive int, transformers cannot build the model from the config, the model
        type has no language-model head, or ``architectures`` names a class no training loss can be built for.
    ValueError
        ``moe_routing`` is not one of :data:`MOE_ROUTINGS`, or ``device`` is not ``"meta"``, ``"cpu"`` or a CUDA device.
    ImportError
        ``transformers`` is not installed (``pip install 'perfmodel[hf]'``).
    """
    if moe_routing not in MOE_ROUTINGS:
        raise ValueError(f"moe_routing must be one of {', '.join(map(repr, MOE_ROUTINGS))}; got {moe_routing!r}.")
    if not isinstance(device, str) or not (device in ("meta", "cpu", "cuda") or re.fullmatch(r"cuda:\d+", device)):
        raise ValueError(f"device must be 'meta', 'cpu', 'cuda' or 'cuda:N'; got {device!r}.")
    cfg = _config(config)
    if getattr(cfg, "is_encoder_decoder", False) and getattr(cfg, "decoder_start_token_id", None) is None:
        cfg.decoder_start_token_id = cfg.pad_token_id if cfg.pad_token_id is not None else 0  # T5's convention
    cls = _model_class(cfg)
    kind = head_kind(cls)
    if kind == "sequence-classification" and getattr(cfg, "pad_token_id", None) is None:
        eos = getattr(cfg, "eos_token_id", None)
        cfg.pad_token_id = eos if isinstance(eos, int) else 0
    if kind == "sequence-classification" and getattr(cfg, "is_encoder_decoder", False) and device == "meta":
        raise _config_error(
            f"{cls.__name__} pools each sequence at its <eos> token, found by reading the token values (eq, "
            "unique_consecutive), which a step on the meta device does not have. Expected a head whose shapes do not "
            "depend on token values on meta; build it with device='cpu' (small configs), or trace the seq2seq head "
            f"({cfg.model_type!r} with architectures naming its ForConditionalGeneration class) for the cost of the body."
        )
    kwargs = {} if attn_implementation is None else {"attn_implementation": attn_implementation}
    try:
        with torch.device(device), _SkipMetaInit():
            model = cls._from_config(cfg, **kwargs)
    except Exception as exc:
        raise _config_error(
            f"transformers could not build {cls.__name__} from this config ({type(exc).__name__}: {exc}). Expected "
            "consistent sizes (e.g. hidden size divisible by the number of heads); fix the config values it names."
        ) from exc
    if moe_routing == "uniform":
        _static_routing(model)
    step = TrainingStep(model, kind)
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


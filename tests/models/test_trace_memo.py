"""The per-operator trace memo: a second prediction reuses the trace; a module changed in place is traced again."""
import pandas as pd
import pytest
import torch

import perfmodel as pm
from perfmodel.step import trace as wl
from perfmodel.step import kernels as kn
def _net(width):
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))


def test_same_module_same_prediction_and_one_trace(monkeypatch):
    kn.clear_trace_cache()
    calls = []
    real = wl._trace_step_ops
    monkeypatch.setattr(wl, "_trace_step_ops", lambda *a, **k: calls.append(1) or real(*a, **k))
    net = _net(256)
    a = pm.predict_step_time(net, "V100", input_shape=(64,), batch_size=32)
    b = pm.predict_step_time(net, "V100", input_shape=(64,), batch_size=32)
    assert len(calls) == 1 and a["step_time_s"].iloc[0] == b["step_time_s"].iloc[0]
    pm.predict_step_time(net, "V100", input_shape=(64,), batch_size=64)  # another batch: another trace
    assert len(calls) == 2


def test_a_module_changed_in_place_is_traced_again():
    kn.clear_trace_cache()
    net = _net(256)
    small = pm.predict_step_time(net, "V100", input_shape=(64,), batch_size=512)["flops"].iloc[0]
    net[0], net[2] = torch.nn.Linear(64, 4096), torch.nn.Linear(4096, 10)
    big = pm.predict_step_time(net, "V100", input_shape=(64,), batch_size=512)["flops"].iloc[0]
    assert big > 10 * small
    assert wl.module_fingerprint(net) != wl.module_fingerprint(_net(256))


def test_the_memo_returns_copies():
    kn.clear_trace_cache()
    net = _net(128)
    ops = wl.step_ops(net, (64,), None, 2, batch_size=8, prec="fp32", optimizer=None, inference=False)
    ops["flops"] = -1
    again = wl.step_ops(net, (64,), None, 2, batch_size=8, prec="fp32", optimizer=None, inference=False)
    assert (again["flops"] >= 0).all()


@pytest.mark.parametrize("first", ["adam-fused", None])
@pytest.mark.parametrize("prec", ["fp32", "bf16"])
def test_the_fused_adam_step_and_the_step_without_an_optimizer_share_one_trace(monkeypatch, first, prec):
    """The fused Adam kernel is added to the trace of the step without an optimizer, not traced: asking both, in either
    order, traces once, and each equals what it is asked alone (the Adam step without fusion is traced by itself)."""
    net = _net(128)
    kw = dict(batch_size=8, prec=prec, inference=False)
    kn.clear_trace_cache()
    alone = {o: wl.step_ops(net, (64,), None, 2, optimizer=o, **kw) for o in ("adam-fused", None)}
    kn.clear_trace_cache()
    alone[None] = wl.step_ops(net, (64,), None, 2, optimizer=None, **kw)
    kn.clear_trace_cache()
    calls = []
    real = wl._trace_step_ops
    monkeypatch.setattr(wl, "_trace_step_ops", lambda *a, **k: calls.append(k["optimizer"]) or real(*a, **k))
    second = None if first == "adam-fused" else "adam-fused"
    got = {o: wl.step_ops(net, (64,), None, 2, optimizer=o, **kw) for o in (first, second)}
    assert calls == [None]
    for o in ("adam-fused", None):
        pd.testing.assert_frame_equal(got[o], alone[o], check_exact=True)
    assert (got["adam-fused"]["op"] == "fused_adam").sum() == 1 and not (got[None]["phase"] == "optimizer").any()
    # and what tracing the fused step directly gives (the path step_ops took for it before it shared the trace)
    direct = real(net, (64,), None, 2, optimizer="adam-fused", **kw)
    pd.testing.assert_frame_equal(got["adam-fused"], direct, check_exact=True)
    wl.step_ops(net, (64,), None, 2, optimizer="adam", **kw)
    assert calls == [None, "adam"]


@pytest.mark.parametrize("form", ["dict", "config"])
def test_a_config_is_built_once(form):
    transformers = pytest.importorskip("transformers")
    kn.clear_trace_cache()
    cfg = dict(model_type="gpt2", n_layer=1, n_embd=64, n_head=2, vocab_size=100, n_positions=32, bos_token_id=0, eos_token_id=0)
    model = cfg if form == "dict" else transformers.GPT2Config(**cfg)
    pm.predict_step_time(model, "V100", input_shape=(32,), batch_size=2)
    pm.predict_step_time(model, "V100", input_shape=(32,), batch_size=4)
    assert len(wl._BUILT) == 1


def test_memory_in_bf16_leaves_the_shared_module_in_fp32():
    pytest.importorskip("transformers")
    kn.clear_trace_cache()
    cfg = dict(model_type="gpt2", n_layer=1, n_embd=64, n_head=2, vocab_size=100, n_positions=32, bos_token_id=0, eos_token_id=0)
    before = pm.predict_step_time(cfg, "A100", input_shape=(32,), batch_size=4)["step_time_s"].iloc[0]
    pm.predict_memory(cfg, "A100", batch_size=4, precision="bf16", input_shape=(32,))
    (net,) = wl._BUILT.values()
    assert {p.dtype for p in net.parameters()} == {torch.float32}
    wl._TRACES.clear()  # trace again from the shared module
    assert pm.predict_step_time(cfg, "A100", input_shape=(32,), batch_size=4)["step_time_s"].iloc[0] == before


def _llama_cfg():
    return dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


def _memory(run, cluster, how):
    """The memory rows of the run as :func:`perfmodel.planning.search_layouts` asks for them."""
    from perfmodel.step.memory import memory_frame
    from perfmodel.step.prediction import resolve_run

    w, c, p = resolve_run(run, cluster, how)
    return memory_frame(w, (c,), p)


def test_the_saved_rows_are_made_once_per_micro_batch_and_kernel_family(monkeypatch):
    """A layout search asks for the memory of the same micro-batch under every checkpointing policy and gradient layout:
    the saved tensors, as the fused modules keep them, are computed once and each caller gets its own copy; the
    answer is the one computed afresh."""
    pytest.importorskip("transformers")
    from perfmodel.step import memory as mem

    kn.clear_trace_cache()
    calls = []
    real = mem._fused_saved
    monkeypatch.setattr(mem, "_fused_saved", lambda *a, **k: calls.append(1) or real(*a, **k))
    run = pm.Workload(_llama_cfg(), input_shape=(64,), batch_size=8, precision="fp8", optimizer="adam", stack="te")
    cluster = pm.Cluster("H100", n_gpus=4)
    answers = [_memory(run, cluster, pm.Parallelism("dp2-tp2", framework="megatron", activation_checkpointing=ac))
               for ac in (False, "full", "attention", False)]
    assert len(calls) == 1
    assert answers[0].equals(answers[3])
    net, shape, in_dtype, _, _, lay = wl.model_and_layout(run.model, (64,), None)
    saved, layer, *_ = mem._rank_saved(net, torch.bfloat16, (4, *shape), in_dtype, lay, 1, "te", 1.0)
    saved["bytes"] = -1.0
    layer[:] = -7
    again, layer_again, *_ = mem._rank_saved(net, torch.bfloat16, (4, *shape), in_dtype, lay, 1, "te", 1.0)
    assert (again["bytes"] > 0).all() and not (layer_again == -7).any()
    kn.clear_trace_cache()
    fresh = _memory(run, cluster, pm.Parallelism("dp2-tp2", framework="megatron"))
    assert fresh.drop(columns="basis").equals(answers[0].drop(columns="basis"))
    assert len(calls) == 2


def test_the_fp8_linear_weights_are_a_copy():
    pytest.importorskip("transformers")
    kn.clear_trace_cache()
    net, _, _, vocab, _, lay = wl.model_and_layout(_llama_cfg(), (64,), None)
    names = wl.fp8_linear_weights(net, lay, vocab)
    assert names and all(n.endswith(".weight") for n in names)
    names.clear()
    assert wl.fp8_linear_weights(net, lay, vocab)


def test_shared_rank_work_builds_a_layout_once_inside_its_block_only():
    """plan_cloud's searches of one GPU count on several GPUs share each layout's rank work inside
    ``shared_rank_work``; outside it every call builds its own, and nothing is kept after the block."""
    pytest.importorskip("transformers")
    import dataclasses

    from perfmodel.step import parallel as par_mod
    from perfmodel.step.prediction import resolve_run

    w, _, p = resolve_run(pm.Workload(_llama_cfg(), input_shape=(64,), batch_size=8, precision="bf16",
                                      optimizer="adam"), pm.Cluster("H100", n_gpus=4), pm.Parallelism("fsdp2-tp2"))
    p = p.with_micro_batches(w.batch_size, 4)
    assert par_mod.rank_work(w, p, 4) is not par_mod.rank_work(w, p, 4)
    with par_mod.shared_rank_work():
        a = par_mod.rank_work(w, p, 4)
        assert par_mod.rank_work(w, p, 4) is a
        assert par_mod.rank_work(w, dataclasses.replace(p, strategy="fsdp4"), 4) is not a  # another layout
        assert par_mod.rank_work(dataclasses.replace(w, precision="fp8"), p, 4) is not a  # another run
        assert par_mod.rank_work(w, p, 4).work.equals(par_mod._rank_work(w, p, 4).work)
    assert par_mod._SHARED_RANK_WORK.get() is None
    assert par_mod.rank_work(w, p, 4) is not a


def test_memory_does_not_depend_on_what_was_asked_before():
    """The memos keep each kernel family's and precision's saved rows apart: one model asked under eager, TE and Liger
    kernels, in FP16, BF16 and FP8, in one process and in reverse order, gives what each asks for alone."""
    pytest.importorskip("transformers")
    runs = [dict(precision=p, stack=s, optimizer="adam") for p in ("fp16", "bf16", "fp8")
            for s in ("eager", "te", "liger") if not (p == "fp8" and s == "liger")]
    runs.append(dict(precision="fp8", stack="te", fp8_recipe="mxfp8", optimizer="adam"))
    how = pm.Parallelism("fsdp2-tp2", activation_checkpointing="selective")

    def ask(kw):
        return _memory(pm.Workload(_llama_cfg(), input_shape=(64,), batch_size=8, **kw), pm.Cluster("B200", n_gpus=4),
                       how).drop(columns="basis")

    alone = []
    for kw in runs:
        kn.clear_trace_cache()
        alone.append(ask(kw))
    assert len({float(a["activations_bytes"].iloc[0]) for a in alone}) > 3  # the runs differ
    kn.clear_trace_cache()
    for order in (runs, runs[::-1]):
        for kw in order:
            assert ask(kw).equals(alone[runs.index(kw)]), kw


def test_a_users_module_changed_between_two_shapes_is_read_as_it_is_now():
    """A module passed in is read as it is at each call: switched from eval to training mode (its dropout saves a
    mask), or to another attention implementation between two sequence lengths, its memory is that of its present
    state."""
    transformers = pytest.importorskip("transformers")

    def acts(net, seq):
        return pm.predict_memory(net, "H100", input_shape=(seq,), input_dtype=torch.long, batch_size=4,
                                 precision="bf16").iloc[0]["activations_bytes"]

    def fresh(net, seq):
        kn.clear_trace_cache()
        return acts(net, seq)

    kn.clear_trace_cache()
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Dropout(0.1), torch.nn.Linear(256, 64))
    net.eval()
    pm.predict_memory(net, "H100", input_shape=(64,), batch_size=32, precision="bf16")
    net.train()
    trained = pm.predict_memory(net, "H100", input_shape=(64,), batch_size=32, precision="bf16").iloc[0]
    kn.clear_trace_cache()
    assert trained["activations_bytes"] == pm.predict_memory(net, "H100", input_shape=(64,), batch_size=32,
                                                             precision="bf16").iloc[0]["activations_bytes"]
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                   tie_word_embeddings=False, attn_implementation="sdpa")
    llama = transformers.LlamaForCausalLM(cfg)
    kn.clear_trace_cache()
    acts(llama, 64)
    llama.set_attn_implementation("eager")
    assert acts(llama, 64) == fresh(llama, 64)  # the same shape asked again: the fingerprint says what changed
    acts(llama, 64)
    llama.set_attn_implementation("sdpa")
    assert acts(llama, 128) == fresh(llama, 128)

    class Gated(torch.nn.Module):  # a switch no fingerprint sees: its repr and parameters stay the same
        def __init__(self):
            super().__init__()
            self.proj, self.gated = torch.nn.Linear(64, 64), False

        def forward(self, x):
            y = self.proj(x)
            return y * torch.sigmoid(y) if self.gated else y

    gated = Gated()
    kn.clear_trace_cache()
    pm.predict_memory(gated, "H100", input_shape=(64,), batch_size=16, precision="bf16")
    gated.gated = True
    now = pm.predict_memory(gated, "H100", input_shape=(64,), batch_size=32, precision="bf16").iloc[0]
    kn.clear_trace_cache()
    assert now["activations_bytes"] == pm.predict_memory(gated, "H100", input_shape=(64,), batch_size=32,
                                                         precision="bf16").iloc[0]["activations_bytes"]


def test_explore_strategies_builds_each_layouts_rank_work_once(monkeypatch):
    """Every checkpointing policy of a strategy and micro-batch count is predicted from one rank work."""
    pytest.importorskip("transformers")
    from perfmodel.step import parallel as par_mod

    kn.clear_trace_cache()
    calls = []
    real = par_mod._rank_work
    monkeypatch.setattr(par_mod, "_rank_work", lambda *a, **k: calls.append(1) or real(*a, **k))
    f = pm.planning.explore_strategies(_llama_cfg(), "H100", n_gpus=4, batch_size=8, input_shape=(64,),
                                       precision="bf16", strategies=("fsdp", "dp2-tp2"), micro_batches=(1,),
                                       activation_checkpointing=(False, "selective", "full"))
    assert len(f) == 6 and len(calls) == 2

"""The per-operator trace memo: a second prediction reuses the trace; a module changed in place is traced again."""
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

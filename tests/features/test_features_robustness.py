"""features.extract never silently wrong: uncounted ops reported, CPU and meta agree, memory limits, errors naming the
cause, the caller's RNG and thread settings untouched, no torch._dynamo import."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from perfmodel.features import FeatureExtractionError, UnsupportedOpsWarning, extract
from perfmodel.features import _counting, _extract


def reference_counts(net, x):
    """FlopCounterMode on real tensors: (forward FLOPs, backward FLOPs)."""
    with FlopCounterMode(display=False) as f:
        out = net(x)
    with FlopCounterMode(display=False) as b:
        out.float().sum().backward()
    net.zero_grad(set_to_none=True)
    return f.get_total_flops(), b.get_total_flops()


# ------------------------------------------------------------------------------------------- uncounted ops reported
class MatmulFn(torch.autograd.Function):
    """x @ w with a hand-written backward (two mm's)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.mm(w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g.mm(w.t()), x.t().mm(g)


class SparseFn(torch.autograd.Function):
    """Forward through torch.sparse.mm; backward of the weight through torch.mv row by row."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.sparse.mm(x.to_sparse(), w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gw = torch.stack([torch.mv(x.t(), g[:, j]) for j in range(g.shape[1])], dim=1)
        return g.mm(w.t()), gw


class WithFn(nn.Module):
    def __init__(self, fn, d_in=6, d_out=4):
        super().__init__()
        self.fn = fn
        self.w = nn.Parameter(torch.randn(d_in, d_out))

    def forward(self, x):
        return self.fn.apply(x, self.w)


def test_custom_autograd_function_forward_and_backward_are_counted():
    torch.manual_seed(0)
    net = WithFn(MatmulFn)
    fwd, bwd = reference_counts(net, torch.randn(5, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = extract(net, (6,), batch_size=5).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd) == (2 * 5 * 6 * 4, 2 * 2 * 5 * 6 * 4)


def test_custom_autograd_function_with_uncounted_ops_is_reported():
    with pytest.warns(UnsupportedOpsWarning, match=r"WithFn: 2 op\(s\) that compute have no FLOP formula .* NOT in the FLOP "
                      r"totals: aten._sparse_addmm, aten.mv\. Register a formula"):
        row = extract(WithFn(SparseFn), (6,), batch_size=3).iloc[0]
    assert row["unsupported_ops"] == "aten._sparse_addmm;aten.mv"


@pytest.mark.parametrize("op, expected", [
    (lambda x, w: torch.cdist(x @ w, x @ w), "aten._cdist_forward"),
    (lambda x, w: torch.sparse.mm(x.to_sparse(), w), "aten._sparse_addmm"),
    (lambda x, w: x[:, :4] @ torch.linalg.matrix_exp(w[:4, :4]), "aten.linalg_matrix_exp"),
    (lambda x, w: torch.kthvalue(x @ w, 2, dim=1).values, "aten.kthvalue"),
    (lambda x, w: nn.functional.interpolate((x @ w)[:, None, None, :], scale_factor=2, mode="bilinear"), "aten.upsample_bilinear2d"),
])
def test_an_op_that_computes_without_a_formula_is_reported(op, expected):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 4))

        def forward(self, x):
            return op(x, self.w)

    with pytest.warns(UnsupportedOpsWarning, match=rf"Net: \d op\(s\) that compute .*{expected}"):
        row = extract(Net(), (6,), batch_size=2).iloc[0]
    assert expected in row["unsupported_ops"].split(";")


@pytest.mark.filterwarnings("ignore:.*an autograd kernel was not registered:UserWarning")  # the test op has none
def test_detection_is_structural_an_op_nobody_listed_is_reported():
    """A brand-new operator (registered here) has no formula and is in no list: it is reported, not counted as 0."""
    lib = torch.library.Library("pmtest", "FRAGMENT")  # noqa: F841 - kept alive for the test
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice", lambda x: torch.empty_like(x), "Meta")
    assert _counting.is_uncounted_compute(torch.ops.pmtest.twice.default, _counting.formula_registry())
    for free in (torch.ops.aten.relu.default, torch.ops.aten.view.default, torch.ops.aten.sum.dim_IntList,
                 torch.ops.aten.native_batch_norm.default, torch.ops.aten.embedding.default, torch.ops.aten.mm.default):
        assert not _counting.is_uncounted_compute(free, _counting.formula_registry()), free

    class Net(nn.Module):
        def forward(self, x):
            return torch.ops.pmtest.twice(x)

    with pytest.warns(UnsupportedOpsWarning, match=r"Sequential: 1 op\(s\) .*: pmtest.twice\."):
        extract(nn.Sequential(nn.Linear(3, 3), Net()), (3,))


# --------------------------------------------------------------------------------------------- CPU and meta agree
@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("batch", [1, 3])
def test_recurrent_layers_count_the_same_on_cpu_and_meta(cls, batch):
    net = cls(8, 16, num_layers=2, batch_first=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cpu = extract(net, (5, 8), batch_size=batch).iloc[0]
        meta = extract(net, (5, 8), batch_size=batch, device="meta").iloc[0]
    gates = {nn.LSTM: 4, nn.GRU: 3, nn.RNN: 1}[cls]
    # per time step and layer: input and hidden projections, (d_in + 16) · gates·16 MACs per sample
    assert cpu["forward_macs"] == meta["forward_macs"] == batch * 5 * ((8 + 16) + (16 + 16)) * gates * 16
    assert cpu["backward_flops"] == meta["backward_flops"] > 0


# ----------------------------------------------------------------------------------------------------------- memory
def test_a_model_too_large_for_memory_goes_to_the_meta_device():
    """2 × Linear(50k, 50k): 20 GB of gradients on the CPU. Over the limit: counted on meta, nothing allocated."""
    with torch.device("meta"):
        net = nn.Sequential(nn.Linear(50_000, 50_000), nn.Linear(50_000, 50_000))
    df = extract(net, (50_000,), batch_size=4, max_memory_bytes=2**30)
    assert df.attrs["device"] == "meta"
    assert df.iloc[0]["forward_macs"] == 4 * 2 * 50_000**2


def test_activations_over_the_limit_move_to_meta_with_equal_counts():
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))
    free = extract(net, (3, 64, 64), batch_size=4)
    limited = extract(net, (3, 64, 64), batch_size=4, max_memory_bytes=400_000)  # one 16×64×64 output is 256 KiB
    assert free.attrs["device"] == "cpu" and limited.attrs["device"] == "meta"
    assert free.drop(columns="unsupported_ops").equals(limited.drop(columns="unsupported_ops"))


def test_a_model_over_the_limit_that_cannot_run_on_meta_is_refused_with_the_memory_it_needs():
    class Sparse(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(256, 256))

        def forward(self, x):
            return torch.sparse.mm(x.to_sparse(), self.w)

    with pytest.raises(FeatureExtractionError, match=r"Sparse needs about 0\.3 MiB for a training step on the CPU \(parameter "
                       r"gradients, buffers, input and activations\), more than the 0\.0 MiB it may use .* cannot run on the "
                       r"meta device either \(NotImplementedError.*\)\. Free memory, raise max_memory_bytes"):
        extract(Sparse(), (256,), max_memory_bytes=1000)
    with pytest.raises(FeatureExtractionError, match=r"max_memory_bytes must be a positive int \(bytes\) or None .*; got -1"):
        extract(nn.Linear(2, 2), (2,), max_memory_bytes=-1)


def test_the_default_limit_is_the_available_memory(monkeypatch):
    monkeypatch.setattr(_extract, "_available_memory_bytes", lambda: 10_000)
    assert extract(nn.Linear(100, 100), (100,)).attrs["device"] == "meta"  # 40 kB of gradients
    monkeypatch.undo()
    assert 0 < _extract._available_memory_bytes()
    assert extract(nn.Linear(100, 100), (100,)).attrs["device"] == "cpu"


# ----------------------------------------------------------------------------------------------------------- errors
def test_float_input_to_an_embedding_names_the_dtype():
    with pytest.raises(FeatureExtractionError, match=r"Embedding failed to run a training step on an input of shape \(1, 5\) "
                       r"and dtype torch.float32 \(RuntimeError: .*\)\. The input dtype does not suit the model's first "
                       r"layer\. Expected an integer dtype \(input_dtype=torch.long, with input_high = the vocabulary size\)"):
        extract(nn.Embedding(10, 4), (5,))


def test_integer_input_to_a_linear_layer_names_the_dtype():
    with pytest.raises(FeatureExtractionError, match=r"The input dtype does not suit the model's first layer\. Expected a "
                       r"floating-point dtype \(input_dtype=None\); got input_dtype=torch.int64"):
        extract(nn.Linear(5, 2), (5,), input_dtype=torch.long)


def test_batchnorm_with_a_batch_of_one_names_batchnorm():
    with pytest.raises(FeatureExtractionError, match=r"A BatchNorm layer in training mode cannot normalise a batch of one "
                       r"sample per channel\. Expected batch_size >= 2 \(got 1\); pass a larger batch_size, or train=False"):
        extract(nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)), (5,), batch_size=1)
    assert extract(nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)), (5,), batch_size=1, train=False).iloc[0]["forward_macs"] == 20


def test_token_ids_beyond_the_vocabulary_name_input_high():
    with pytest.raises(FeatureExtractionError, match=r"The token ids drawn in \[0, input_high\) exceed an embedding table\. "
                       r"Expected input_high to be at most the vocabulary size"):
        extract(nn.Embedding(10, 4), (5,), input_dtype=torch.long, input_high=1000)


class Raises(nn.Module):
    def __init__(self, exc):
        super().__init__()
        self.exc = exc
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        raise self.exc


@pytest.mark.parametrize("exc", [MemoryError(), RuntimeError("[enforce fail at alloc_cpu.cpp:117] . DefaultCPUAllocator: "
                                                             "can't allocate memory: you tried to allocate 20000000000 bytes.")])
def test_out_of_memory_is_named(exc):
    with pytest.raises(FeatureExtractionError, match=r"Raises failed .*\. It ran out of memory\. Pass device='meta'") as e:
        extract(Raises(exc), (3,))
    assert e.value.__cause__ is exc


def test_other_model_errors_do_not_blame_the_input_shape():
    with pytest.raises(FeatureExtractionError, match=r"Raises failed to run a training step on an input of shape \(1, 3\) and "
                       r"dtype torch.float32 \(ValueError: boom\)\. The model itself raised this error on zero-valued stand-in "
                       r"inputs; check that it runs on torch.zeros\(\(1, 3\), dtype=torch.float32\)") as e:
        extract(Raises(ValueError("boom")), (3,))
    assert "input_shape" not in str(e.value)


def test_a_dtype_mismatch_inside_a_counted_op_still_raises():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            return x.double() @ self.w

    with pytest.raises(FeatureExtractionError, match=r"Mixed failed .*dtype.*The input dtype does not suit"):
        extract(Mixed(), (4,))


# ---------------------------------------------------------------------------------------- caller's state untouched
class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        self.threads = torch.get_num_threads()
        random.random()
        return self.drop(self.lin(x) + torch.rand_like(x))


def test_global_rng_states_are_restored():
    net = Noisy()  # dropout, torch.rand_like and random.random() in forward
    torch.manual_seed(123)
    random.seed(7)
    expected = torch.rand(1), random.random()
    torch.manual_seed(123)
    random.seed(7)
    extract(net, (4,), batch_size=3)
    assert (torch.rand(1), random.random()) == expected


def test_one_thread_inside_and_the_setting_restored_also_on_error():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        net = Noisy()
        extract(net, (4,))
        assert net.threads == 1 and torch.get_num_threads() == 2
        with pytest.raises(FeatureExtractionError):
            extract(Raises(ValueError("boom")), (3,))
        assert torch.get_num_threads() == 2 and torch.backends.mkldnn.enabled
    finally:
        torch.set_num_threads(before)


def test_first_extraction_does_not_import_torch_dynamo():
    code = textwrap.dedent("""
        import sys, torch
        from torch import nn
        from perfmodel.features import extract
        torch.set_num_threads(2)
        net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
        row = extract(net, (3, 8, 8), batch_size=4).iloc[0]
        extract("resnet-15", (3, 32, 32))
        print(row["forward_macs"], "torch._dynamo" in sys.modules, torch.get_num_threads())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(4 * (6 * 6 * 4 * 27 + 144 * 5)), "False", "2"]


def test_shapes_computed_directly_equal_the_meta_kernels():
    aten = torch.ops.aten
    cases = [
        (aten.mm, (torch.zeros(3, 4), torch.zeros(4, 5))),
        (aten.addmm, (torch.zeros(5), torch.zeros(3, 4), torch.zeros(4, 5))),
        (aten.bmm, (torch.zeros(2, 3, 4), torch.zeros(2, 4, 5))),
        (aten.baddbmm, (torch.zeros(2, 3, 5), torch.zeros(2, 3, 4), torch.zeros(2, 4, 5))),
    ]
    for packet, args in cases:
        direct = _counting._direct_out(packet, args)
        meta = packet(*[a.to("meta") for a in args])
        assert (direct.shape, direct.dtype) == (meta.shape, meta.dtype), packet
    assert _counting._direct_out(aten.mm, (torch.zeros(3, 4), torch.zeros(5, 5))) is None
    assert _counting._direct_out(aten.mm, (torch.zeros(3, 4), torch.zeros(4, 5, dtype=torch.float64))) is None


# ------------------------------------------------------------------------------------------------- property test
class Pool(nn.Module):
    """One op of the pool on a (B, 6) input, returning (B, k) so that ops compose."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.lin = nn.Linear(6, 6)
        self.conv = nn.Conv1d(1, 1, 3, padding=1)
        self.w = nn.Parameter(torch.randn(6, 6))
        self.lstm = nn.LSTM(3, 2, batch_first=True)
        self.emb = nn.Embedding(4, 6)
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        k = self.kind
        if k == "linear":
            return self.lin(x)
        if k == "conv":
            return self.conv(x[:, None, :])[:, 0]
        if k == "cdist":
            return torch.cdist(x, x)[:, :1].expand(-1, 6) + x
        if k == "matmul":
            return x @ self.w
        if k == "bmm":
            return torch.bmm(x[:, None, :], self.w.expand(x.shape[0], 6, 6))[:, 0]
        if k == "custom":
            return MatmulFn.apply(x, self.w)
        if k == "sparse":
            return SparseFn.apply(x, self.w)
        if k == "lstm":
            return self.lstm(x.reshape(-1, 2, 3))[0].reshape(-1, 4).repeat(1, 2)[:, :6]
        if k == "embedding":
            return self.emb((x.detach() > 0).long()[:, 0]) + x
        if k == "layernorm":
            return self.norm(x)
        if k == "softmax":
            return torch.softmax(x, dim=1)
        if k == "relu":
            return torch.relu(x)
        raise AssertionError(k)


COUNTED = {"linear", "conv", "matmul", "bmm", "custom", "lstm"}
UNCOUNTED = {"cdist": "aten._cdist_forward", "sparse": "aten._sparse_addmm"}
FREE = {"embedding", "layernorm", "softmax", "relu"}


@settings(max_examples=20, deadline=None, derandomize=True)
@given(kinds=st.lists(st.sampled_from(sorted(COUNTED | set(UNCOUNTED) | FREE)), min_size=1, max_size=4),
       batch=st.integers(1, 4))
def test_every_op_is_counted_or_named_in_a_warning(kinds, batch):
    net = nn.Sequential(*[Pool(k) for k in kinds])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = extract(net, (6,), batch_size=batch).iloc[0]
    messages = " ".join(str(w.message) for w in caught if issubclass(w.category, UnsupportedOpsWarning))
    if COUNTED & set(kinds):
        assert row["forward_flops"] > 0
    for k in set(kinds) & set(UNCOUNTED):
        assert UNCOUNTED[k] in messages and UNCOUNTED[k] in row["unsupported_ops"]
    if not set(kinds) & set(UNCOUNTED):
        assert messages == "" and row["unsupported_ops"] == ""
    if set(kinds) - FREE:  # something computes: never a silent 0
        assert row["forward_flops"] > 0 or messages
    else:  # only ops free by convention (embedding lookups, norms, softmax, activations)
        assert row["forward_flops"] == 0 and not messages

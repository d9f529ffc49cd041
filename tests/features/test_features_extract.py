"""perfmodel.features.extract on small modules: equality with torch's FlopCounterMode on real tensors, hand counts,
bytes, errors. (The zoo CNNs and the published CM-DARE features: test_features_zoo.py.)"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from perfmodel import features
from perfmodel._errors import UnknownNameError
from perfmodel.features import FeatureExtractionError, UnsupportedOpsWarning, extract
from perfmodel.features._counting import EXTRA_FORMULAS


def reference_counts(net, x, *, custom=None):
    """FlopCounterMode on real tensors: (forward FLOPs, backward FLOPs)."""
    net.train()
    with FlopCounterMode(display=False, custom_mapping=custom or {}) as f:
        out = net(x)
    loss = out.float().sum()
    with FlopCounterMode(display=False, custom_mapping=custom or {}) as b:
        loss.backward()
    net.zero_grad(set_to_none=True)
    return f.get_total_flops(), b.get_total_flops()


class MatmulNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 6))
        self.w2 = nn.Parameter(torch.randn(1, 6, 5))

    def forward(self, x):  # x: (B, 4, 8)
        y = x @ self.w  # matmul -> bmm/mm
        z = torch.bmm(y.transpose(0, 1), self.w2.expand(4, 6, 5))
        e = torch.einsum("tbk,kl->tbl", z, torch.ones(5, 2))
        return e


class Attention(nn.Module):
    def __init__(self, d=16, heads=4):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.heads = heads

    def forward(self, x):  # (B, T, d)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)


CONVS = {
    "plain": nn.Conv2d(3, 8, 3, padding=1),
    "strided": nn.Conv2d(3, 8, 3, stride=2),
    "grouped": nn.Conv2d(4, 8, 3, groups=2, padding=1),
    "depthwise": nn.Conv2d(4, 4, 3, groups=4, padding=1, bias=False),
    "dilated": nn.Conv2d(3, 6, 3, dilation=2, padding=2),
    "transposed": nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1),
    "conv1d": nn.Conv1d(3, 4, 5),
    "conv3d": nn.Conv3d(2, 3, 3, padding=1),
}
CONV_SHAPES = {"plain": (3, 9, 9), "strided": (3, 9, 9), "grouped": (4, 7, 7), "depthwise": (4, 7, 7), "dilated": (3, 9, 9),
               "transposed": (3, 5, 5), "conv1d": (3, 20), "conv3d": (2, 4, 4, 4)}


@pytest.mark.parametrize("kind", list(CONVS))
@pytest.mark.parametrize("batch", [1, 3])
def test_convolutions_equal_flopcountermode(kind, batch):
    torch.manual_seed(0)
    conv = CONVS[kind]
    net = nn.Sequential(nn.Identity(), conv)
    x = torch.randn(batch, *CONV_SHAPES[kind])
    fwd, bwd = reference_counts(net, x)
    row = extract(net, CONV_SHAPES[kind], batch_size=batch).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd)


def test_hand_counted_linear_and_first_layer_has_no_input_gradient():
    """Linear 10→4 at batch 6: forward 6·10·4 MACs; backward computes only the weight gradient (input needs no grad)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(10, 4), nn.ReLU(), nn.Linear(4, 3, bias=False))
    row = extract(net, (10,), batch_size=6).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == reference_counts(net, torch.randn(6, 10))
    assert row["forward_macs"] == 6 * 10 * 4 + 6 * 4 * 3
    # layer 1: grad W only (6·10·4); layer 2: grad W (6·4·3) and grad input (6·3·4); ×2 FLOPs per MAC
    assert row["backward_flops"] == 2 * (6 * 10 * 4 + 6 * 4 * 3 + 6 * 3 * 4)
    assert row["backward_flops"] < 2 * row["forward_flops"]
    assert row["params"] == 10 * 4 + 4 + 4 * 3 and row["n_linear"] == 2 and row["depth"] == 2


def test_hand_counted_conv():
    """3×3 conv 3→8 on 9×9 with padding 1: 9·9 outputs × 8 × (3·9) MACs per image."""
    row = extract(nn.Conv2d(3, 8, 3, padding=1), (3, 9, 9), batch_size=2).iloc[0]
    assert row["forward_macs"] == 2 * 9 * 9 * 8 * 3 * 9


@pytest.mark.parametrize("batch", [1, 3])
def test_matmul_bmm_einsum_equal_flopcountermode_and_hand_counts(batch):
    """Forward MACs per sample: x@w 4·8·6 = 192, bmm 4·6·5 = 120, einsum 4·5·2 = 40 → 352.
    Backward: einsum grad of z only (the constant needs none) 40; bmm grads of both operands 2·120; x@w grad of w only
    192 → 472 per sample."""
    torch.manual_seed(0)
    net = MatmulNet()
    fwd, bwd = reference_counts(net, torch.randn(batch, 4, 8))
    row = extract(net, (4, 8), batch_size=batch).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd)
    assert (row["forward_macs"], row["backward_flops"]) == (352 * batch, 2 * 472 * batch)


class Similarity(nn.Module):
    """A B×B similarity matrix (contrastive losses): FLOPs grow with the square of the batch."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 4)

    def forward(self, x):
        z = self.proj(x)
        return z @ z.T


class ClsToken(nn.Module):
    """A learned row prepended to the batch before a linear layer: FLOPs ∝ (B + 1), neither constant nor ∝ B."""

    def __init__(self):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 6))
        self.lin = nn.Linear(6, 3)

    def forward(self, x):
        return self.lin(torch.cat([self.cls, x]))


@pytest.mark.parametrize("net_cls", [Similarity, ClsToken])
def test_counts_not_proportional_to_the_batch_are_made_at_the_real_batch(net_cls):
    torch.manual_seed(0)
    net = net_cls()
    for b in (1, 5, 32):
        fwd, bwd = reference_counts(net, torch.randn(b, 6))
        row = extract(net, (6,), batch_size=b).iloc[0]
        assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd), b
    # hand count for the similarity at batch 32: projection 32·6·4 MACs, z zᵀ 32·32·4 MACs
    assert extract(Similarity(), (6,), batch_size=32).iloc[0]["forward_macs"] == 32 * 6 * 4 + 32 * 32 * 4


def test_sdpa_hand_count_on_meta_and_cpu():
    """Attention (B=3, T=5, d=8, 2 heads): qkv 3·5·8·24 MACs; QKᵀ and PV 2·(3·2·5·5·4) MACs."""
    net = Attention(d=8, heads=2)
    macs = 3 * 5 * 8 * 24 + 2 * (3 * 2 * 5 * 5 * 4)
    cpu = extract(net, (5, 8), batch_size=3).iloc[0]
    meta = extract(net, (5, 8), batch_size=3, device="meta").iloc[0]
    assert cpu["forward_macs"] == meta["forward_macs"] == macs
    assert cpu["backward_flops"] == meta["backward_flops"] > 0


def test_attention_is_counted_where_flopcountermode_gives_zero_on_cpu():
    torch.manual_seed(0)
    net = Attention()
    x = torch.randn(2, 6, 16)
    plain_fwd, _ = reference_counts(net, x)
    fwd, bwd = reference_counts(net, x, custom=EXTRA_FORMULAS)
    linear_fwd = 2 * 2 * 6 * 16 * 48
    assert plain_fwd == linear_fwd  # torch's CPU fused SDPA kernel is not in FlopCounterMode's registry
    # SDPA: QK^T and PV, each 2·B·H·T·T·dh MACs
    assert fwd == linear_fwd + 2 * (2 * 2 * 4 * 6 * 6 * 4)
    row = extract(net, (6, 16), batch_size=2).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd)


def test_norms_pooling_embedding_run_and_count_zero():
    net = nn.Sequential(nn.Embedding(50, 8), nn.LayerNorm(8), nn.Flatten(), nn.BatchNorm1d(40))
    row = extract(net, (5,), batch_size=4, input_dtype=torch.long, input_high=50).iloc[0]
    assert row["forward_flops"] == 0 and row["unsupported_ops"] == ""
    assert row["n_norm"] == 2 and row["params"] == 50 * 8 + 16 + 80
    pool = extract(nn.Sequential(nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1)), (3, 8, 8), batch_size=2).iloc[0]
    assert pool["forward_flops"] == 0 and pool["params"] == 0


def test_batch_extrapolation_is_exact_for_affine_counts():
    """A parameter-only matmul does not scale with the batch: counts are affine, not linear, in the batch size."""

    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(torch.randn(7, 7))
            self.lin = nn.Linear(7, 7)

        def forward(self, x):
            return self.lin(x) @ (self.a @ self.a)

    torch.manual_seed(0)
    net = Affine()
    for b in (1, 5, 64):
        fwd, bwd = reference_counts(net, torch.randn(b, 7))
        row = extract(net, (7,), batch_size=b).iloc[0]
        assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd)


def test_unsupported_ops_are_warned_once_and_listed():
    class Sparse(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(8, 4))

        def forward(self, x):
            y = torch.sparse.mm(x.to_sparse(), self.w)
            return torch.cdist(y, y)

    with pytest.warns(UnsupportedOpsWarning, match=r"Sparse: 3 op\(s\) that compute have no FLOP formula and are not known to be "
                      r"free, so they are NOT in the FLOP totals: aten._cdist_backward, aten._cdist_forward, aten._sparse_addmm\."):
        row = extract(Sparse(), (8,), batch_size=2).iloc[0]
    assert row["unsupported_ops"] == "aten._cdist_backward;aten._cdist_forward;aten._sparse_addmm"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert extract(nn.Linear(3, 2), (3,)).iloc[0]["unsupported_ops"] == ""


def test_bytes_and_dtypes():
    lin = nn.Linear(4, 4)
    row = extract(lin, (4,), dtype=torch.float16).iloc[0]
    assert row["param_bytes"] == 20 * 2 and row["param_bytes_by_dtype"] == "float16:40"
    assert row["optimizer_state_bytes"] == 40 and row["checkpoint_bytes_estimate"] == 80
    assert lin.weight.dtype == torch.float32  # counted as float16, not cast
    frozen = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    frozen[0].weight.requires_grad_(False)
    row = extract(frozen, (3,), input_dtype=torch.long, input_high=10).iloc[0]
    assert (row["params"], row["trainable_params"], row["trainable_tensors"]) == (50, 10, 2)
    assert row["param_bytes"] == 200 and row["optimizer_state_bytes"] == 40 and row["max_tensor_mib"] == 32 / 2**20
    assert row["avg_tensor_mib"] == 40 / 2**20 / 2
    bn = extract(nn.BatchNorm2d(3), (3, 4, 4)).iloc[0]
    assert bn["buffer_bytes"] == 3 * 4 * 2 + 8 and bn["state_dict_bytes"] == 6 * 4 + 3 * 4 * 2 + 8


def test_the_module_is_left_untouched():
    """Weights, gradients, BatchNorm running statistics and the training mode are as before (cpu and meta)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 6 * 6, 2)).eval()
    net(torch.randn(2, 3, 8, 8)).sum().backward()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    grads = [p.grad.clone() for p in net.parameters()]
    for device in ("cpu", "meta"):
        row = extract(net, (3, 8, 8), batch_size=4, device=device).iloc[0]
        assert row["forward_macs"] == 4 * (6 * 6 * 4 * 27 + 144 * 2)
        assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
        assert all(torch.equal(g, p.grad) for g, p in zip(grads, net.parameters()))
        assert not net.training and all(p.device.type == "cpu" for p in net.parameters())


def test_a_model_that_cannot_run_a_batch_of_one_is_counted_at_two_and_three():
    net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4))  # BatchNorm1d in training rejects a batch of one
    torch.manual_seed(0)
    for b in (2, 7):
        fwd, bwd = reference_counts(net, torch.randn(b, 5))
        row = extract(net, (5,), batch_size=b).iloc[0]
        assert (row["forward_flops"], row["backward_flops"], row["activation_bytes"]) == (fwd, bwd, b * 4 * 4 * 2)


def test_errors_say_what_and_how_to_fix():
    with pytest.raises(FeatureExtractionError, match=r"input_shape must be a non-empty sequence of positive ints without the batch dimension, e.g. \(3, 32, 32\); got \(3, 0\)"):
        extract(nn.Linear(3, 2), (3, 0))
    with pytest.raises(
        FeatureExtractionError,
        match=r"Linear failed to run a training step on an input of shape \(1, 5\) \(RuntimeError: .*\)\. Expected input_shape to be "
        r"the shape of one sample without the batch dimension \(got \(5,\); e\.g\. \(3, 32, 32\) for a CIFAR CNN\) .*fix them\. "
        r"The model's own exception is chained\.",
    ) as e:
        extract(nn.Linear(3, 2), (5,))
    assert isinstance(e.value.__cause__, RuntimeError)
    with pytest.raises(FeatureExtractionError, match=r"extract\(\) needs a torch.nn.Module or a zoo id \(e.g. 'resnet-32'\); got int"):
        extract(3, (3,))
    with pytest.raises(FeatureExtractionError, match=r"batch_size must be a positive int; got 0"):
        extract(nn.Linear(3, 2), (3,), batch_size=0)
    with pytest.raises(FeatureExtractionError, match=r"device must be 'cpu' or 'meta'; got 'cuda'"):
        extract(nn.Linear(3, 2), (3,), device="cuda")
    with pytest.raises(FeatureExtractionError, match=r"input_shape must be .*; got 'abc'"):
        extract(nn.Linear(3, 2), "abc")
    with pytest.raises(FeatureExtractionError, match=r"batch_size must be a positive int; got True"):
        extract(nn.Linear(3, 2), (3,), batch_size=True)
    with pytest.raises(UnknownNameError, match=r"Unknown model 'resnet-50'. Expected one of: resnet-15"):
        extract("resnet-50", (3, 32, 32))


def test_features_table_errors():
    with pytest.raises(FeatureExtractionError, match=r"Cannot import 'nopkg.mod:Net' \(ModuleNotFoundError: .*\)\. Expected a zoo id "
                       r"\(resnet-15, resnet-32, custom-resnet-1, \.\.\.\) or 'package.module:ClassName' importable from the current folder"):
        features.features_table("nopkg.mod:Net", (3,))
    with pytest.raises(FeatureExtractionError, match=r"Cannot import 'torch.nn:NoSuchNet' \(AttributeError"):
        features.features_table("torch.nn:NoSuchNet", (3,))
    with pytest.raises(FeatureExtractionError, match=r"Unknown target 'resnet50'\. Expected a zoo id \(resnet-15, .*\) or "
                       r"'package.module:ClassName', e\.g\. ") as e:
        features.features_table("resnet50", (3, 32, 32))
    assert isinstance(e.value.__cause__, UnknownNameError)
    with pytest.raises(FeatureExtractionError, match=r"Malformed target 'torch.nn:'\. Expected a zoo id"):
        features.features_table("torch.nn:", (3,))
    with pytest.raises(FeatureExtractionError, match=r"Malformed target 'a b:C'"):
        features.features_table("a b:C", (3,))
    with pytest.raises(FeatureExtractionError, match=r"torch.nn:Linear could not be instantiated without arguments \(TypeError: "
                       r".*\)\. Expected a class whose arguments all have defaults"):
        features.features_table("torch.nn:Linear", (3,))
    with pytest.raises(FeatureExtractionError, match=r"collections:OrderedDict built a OrderedDict, not a torch.nn.Module"):
        features.features_table("collections:OrderedDict", (3,))
    with pytest.raises(FeatureExtractionError, match=r"The target must be a string; got int"):
        features.features_table(3, (3,))


def test_features_table_imports_a_class_or_builds_a_zoo_cnn():
    df = features.features_table("torch.nn:Identity", (3, 4))
    assert df.iloc[0]["params"] == 0 and df.iloc[0]["model"] == "Identity"
    row = features.features_table("Res15", (3, 32, 32), batch_size=2).iloc[0]
    assert row["model"] == "resnet-15" and row["forward_macs"] == 2 * 103073024


def test_per_layer_rows_add_up():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 3)))
    df = extract(net, (3, 5, 5), batch_size=3, per_layer=True)
    assert tuple(df.columns) == features.PER_LAYER_COLUMNS
    one = extract(net, (3, 5, 5), batch_size=3).iloc[0]
    by = df.set_index("module")
    assert by.loc["(root)", "forward_flops"] == one["forward_flops"] and by.loc["(root)", "backward_flops"] == one["backward_flops"]
    assert by.loc["0", "forward_macs"] == 3 * 25 * 4 * 27 and by.loc["0", "backward_flops"] == 2 * 3 * 25 * 4 * 27
    assert by.loc["2", "forward_flops"] == by.loc["2.1", "forward_flops"] == 2 * 3 * 100 * 3
    assert by.loc["2", "output_bytes"] == by.loc["2.1", "output_bytes"] == 3 * 3 * 4
    assert by.loc["(root)", "output_bytes"] == 3 * 3 * 4 and by["params"].sum() == one["params"]


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    groups=st.sampled_from([1, 2]), cin_per=st.integers(1, 3), cout_per=st.integers(1, 3), k=st.integers(1, 3),
    stride=st.integers(1, 2), pad=st.integers(0, 1), dil=st.integers(1, 2), size=st.integers(5, 8),
    batch=st.integers(1, 5), transposed=st.booleans(), hidden=st.integers(1, 6),
)
def test_random_conv_linear_stacks_equal_flopcountermode(groups, cin_per, cout_per, k, stride, pad, dil, size, batch, transposed, hidden):
    torch.manual_seed(0)
    cin, cout = groups * cin_per, groups * cout_per
    conv = (nn.ConvTranspose2d(cin, cout, k, stride=stride, padding=pad, dilation=dil, groups=groups) if transposed
            else nn.Conv2d(cin, cout, k, stride=stride, padding=pad, dilation=dil, groups=groups))
    with torch.no_grad():
        n_out = conv(torch.zeros(1, cin, size, size)).numel()
    net = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(n_out, hidden))
    fwd, bwd = reference_counts(net, torch.randn(batch, cin, size, size))
    row = extract(net, (cin, size, size), batch_size=batch).iloc[0]
    assert (row["forward_flops"], row["backward_flops"]) == (fwd, bwd)

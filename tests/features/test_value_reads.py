"""Control flow on a tensor's value is never traced silently with a made-up value (meta, or zero-valued stand-ins)."""
from __future__ import annotations

import pytest
import torch

from perfmodel.features import DataDependentOpsError, extract


class Branch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        if h.mean() > 0:
            return self.b(self.b(h))
        return h


class Loop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(int(x.abs().sum().item()) % 5 + 1):
            x = self.a(x)
        return x


class OneHot(torch.nn.Module):
    """torch's own value checks (one_hot's range check) are not the model's control flow."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)

    def forward(self, x):
        return self.a(torch.nn.functional.one_hot(x.long().clamp(0, 3), 4).float().sum(1))


@pytest.mark.parametrize("cls, what, line", [(Branch, r"bool\(tensor\)", r"if h\.mean\(\) > 0:"),
                                             (Loop, r"Tensor\.item\(\)", r"for _ in range\(int\(x\.abs")])
@pytest.mark.parametrize("device, per_op", [(None, False), ("cpu", False), ("cpu", True)])
def test_value_dependent_control_flow_on_stand_ins_is_refused_naming_the_op_and_line(cls, what, line, device, per_op):
    with pytest.raises(DataDependentOpsError, match=rf"reads the value of a tensor in Python \({what}; .*test_value_reads\.py:"
                                                    rf"\d+: {line}.*zero-valued stand-ins.*made up.*skip_compute=False"):
        extract(cls(), (8,), batch_size=2, device=device, per_op=per_op)


@pytest.mark.parametrize("cls, line", [(Branch, r"if h\.mean\(\) > 0:"), (Loop, r"for _ in range\(int")])
@pytest.mark.parametrize("per_op", [False, True])
def test_value_dependent_control_flow_on_meta_is_refused_naming_the_op_and_line(cls, line, per_op):
    with pytest.raises(DataDependentOpsError, match=rf"reads the value of a tensor in Python \(aten\._local_scalar_dense; .*"
                                                    rf"{line}.*On the meta device there are no values"):
        extract(cls().to("meta"), (8,), batch_size=2, per_op=per_op)
    if per_op:  # device=None with per_op tries meta first and does not fall back to made-up values on the CPU
        with pytest.raises(DataDependentOpsError, match=r"meta device there are no values"):
            extract(cls(), (8,), batch_size=2, per_op=True)


def test_real_values_are_counted_and_torch_internal_checks_pass():
    torch.manual_seed(0)
    net = Branch()
    row = extract(net, (8,), batch_size=2, device="cpu", skip_compute=False).iloc[0]
    with torch.no_grad():
        taken = net.a(torch.zeros(2, 8)).mean() > 0
    assert row["forward_flops"] == 2 * 2 * 8 * 8 * (3 if taken else 1)
    assert extract(OneHot(), (3,), batch_size=2, device="cpu").iloc[0]["forward_flops"] == 2 * 2 * 4 * 8

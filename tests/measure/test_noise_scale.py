"""Gradient noise scale measured with the harness vs its exact value on a problem where it is known."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import perfmodel as pm
from perfmodel.measure import NOISE_COLUMNS, measure_gradient_noise


def _problem(n=512, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = x @ torch.randn(d, 1, generator=g, dtype=torch.float64) + 0.8 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    net = torch.nn.Linear(d, 1, bias=False).double()
    with torch.no_grad():
        net.weight.zero_()
    return net, x, y


def _exact_b_simple(net, x, y):
    """Per-example gradients of the squared error at the current weights: B_simple = tr(Σ) / |G|² (population)."""
    w = net.weight.detach()[0]
    per = 2 * ((x @ w)[:, None] - y) * x  # d/dw (x·w − y)²
    G = per.mean(0)
    tr = float(((per - G) ** 2).sum(1).mean())
    return tr / float(G @ G)


def test_estimate_matches_the_exact_noise_scale(tmp_path):
    net, x, y = _problem()
    exact = _exact_b_simple(net, x, y)
    mse = torch.nn.functional.mse_loss
    out = tmp_path / "noise.csv"
    d = measure_gradient_noise(net, (x, y), batch_small=4, batch_big=64, draws=4000, loss_fn=mse, out=out)
    assert list(d.columns) == NOISE_COLUMNS and len(d) == 8000
    assert d.attrs["noise_scale"]["b_simple"] == pytest.approx(exact, rel=0.08)  # unbiased; 4000 draws: about 3 % noise
    assert len(pm.measure.read_rows(out)) == 8000
    assert float(net.weight.detach().abs().sum()) == 0.0 and net.weight.grad is None  # parameters untouched, no gradient left behind


def test_zoo_model_on_given_data_and_clear_errors():
    x = torch.randn(16, 3, 32, 32)
    y = torch.randint(0, 10, (16,))
    with pytest.raises(ValueError, match="need batch_small < batch_big"):
        measure_gradient_noise("resnet-15", (x, y), batch_small=8, batch_big=8)
    with pytest.raises(ValueError, match="draws must be a positive int"):
        measure_gradient_noise("resnet-15", (x, y), draws=0)
    with pytest.raises(TypeError, match="random inputs give a meaningless value"):
        measure_gradient_noise("resnet-15", x)
    with pytest.raises(ValueError, match="same number \\(>= 2\\) of examples"):
        measure_gradient_noise("resnet-15", (x, y[:4]))
    net, xr, yr = _problem(n=8)
    with pytest.raises(ValueError, match="loss_fn must return the mean loss"):
        measure_gradient_noise(net, (xr, yr), batch_small=2, batch_big=4, draws=1,
                               loss_fn=lambda o, t: torch.nn.functional.mse_loss(o, t, reduction="none"))


def test_too_few_draws_keep_their_rows(tmp_path):
    """An estimate that is not positive is refused, but the rows were saved first."""
    net, x, y = _problem(n=64, seed=3)
    out = tmp_path / "n.csv"
    with torch.no_grad():
        net.weight.copy_(torch.linalg.lstsq(x, y).solution.T)  # at the optimum |G|² ≈ 0: estimates are noise
    with pytest.raises(ValueError, match="not positive"):
        for seed in range(50):
            measure_gradient_noise(net, {"x": x, "y": y}, batch_small=2, batch_big=4, draws=1, loss_fn=torch.nn.functional.mse_loss,
                                   random_state=seed, out=out)
    assert len(pm.measure.read_rows(out)) >= 2


def test_cli_measures_the_noise_scale_from_a_data_file(tmp_path, capsys):
    from perfmodel.cli import main

    f = tmp_path / "d.pt"
    g = torch.Generator().manual_seed(0)
    torch.save({"x": torch.randn(32, 3, 32, 32, generator=g), "y": torch.randint(0, 10, (32,), generator=g)}, f)
    out = tmp_path / "n.csv"
    rc = main(["measure", "noise", "resnet-15", "--data", str(f), "--batch-small", "2", "--batch-big", "16", "--draws", "20", "--out", str(out)])
    text = capsys.readouterr()
    assert rc == 0 and len(pm.measure.read_rows(out)) == 40
    b = float(text.out.split("B_simple = ")[1].split()[0])
    assert b == pytest.approx(pm.planning.gradient_noise_scale(*[pm.measure.read_rows(out).query(f"batch_size == {k}")["grad_sq_norm"]
                                                                 for k in (2, 16)], 2, 16)["b_simple"], rel=1e-3)
    assert main(["measure", "noise", "resnet-15", "--data", str(tmp_path / "missing.pt")]) == 2
    assert "cannot read --data" in capsys.readouterr().err

"""Write a batch file for ``perfmodel measure noise``: ``torch.save({"x": inputs, "y": targets})``.

Run: ``python examples/make_batch.py my_batch.pt``. The inputs here are synthetic (CIFAR-10's shape, 3 x 32 x 32,
labels 0-9, a fixed seed) so that the command runs as written; put your own training data in the same two tensors to
measure your data's gradient noise scale. The file is never overwritten.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch


def main(path: str, n: int = 512) -> None:
    out = Path(path)
    if out.exists():
        raise SystemExit(f"{out} exists; perfmodel never overwrites a file. Choose another name or remove it.")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    torch.save({"x": x, "y": y}, out)
    print(f"wrote {out}: x {tuple(x.shape)}, y {tuple(y.shape)} (synthetic; use your own data for a real measurement)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python examples/make_batch.py OUT.pt")
    main(sys.argv[1])

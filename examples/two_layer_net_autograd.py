"""The two-layer ReLU network again, now with autograd computing the backward pass.

The classic "PyTorch: Tensors and autograd" example: the forward pass is recorded, `loss.backward()`
differentiates the recorded graph symbolically, and the update runs under `no_grad`.

    python examples/two_layer_net_autograd.py [--steps 500]
"""
import argparse

import fusetorch as torch


def main(steps: int = 500) -> float:
    torch.manual_seed(0)
    dtype = torch.float
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, dtype=dtype)
    y = torch.randn(N, D_out, dtype=dtype)
    w1 = torch.randn(D_in, H, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, dtype=dtype, requires_grad=True)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        first = loss.item() if first is None else first
        if t % 100 == 99 or t == steps - 1:
            print(f"step {t + 1:4d}  loss {loss.item():.6g}")

        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()

    last = loss.item()
    print(f"loss went from {first:.6g} to {last:.6g} ({first / last:.3g}x lower) in {steps} steps")
    return last


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=500)
    main(p.parse_args().steps)

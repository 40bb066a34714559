"""A two-layer ReLU network fitted to random data with raw tensors and a hand-written backward.

This is the classic "PyTorch: Tensors" warm-up, unchanged but for the import: forward pass,
squared-error loss, gradients by the chain rule, and plain gradient descent.

    python examples/two_layer_net_tensors.py [--steps 500]
"""
import argparse

import fusetorch as torch


def main(steps: int = 500) -> float:
    torch.manual_seed(0)
    dtype = torch.float
    device = torch.device("cpu")

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)
    w1 = torch.randn(D_in, H, device=device, dtype=dtype)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        h = x.mm(w1)
        h_relu = h.clamp(min=0)
        y_pred = h_relu.mm(w2)

        loss = (y_pred - y).pow(2).sum().item()
        first = loss if first is None else first
        if t % 100 == 99 or t == steps - 1:
            print(f"step {t + 1:4d}  loss {loss:.6g}")

        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = h_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[h < 0] = 0
        grad_w1 = x.t().mm(grad_h)

        w1 -= learning_rate * grad_w1
        w2 -= learning_rate * grad_w2

    print(f"loss went from {first:.6g} to {loss:.6g} ({first / loss:.3g}x lower) in {steps} steps")
    return loss


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=500)
    main(p.parse_args().steps)

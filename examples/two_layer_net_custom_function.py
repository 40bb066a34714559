"""The two-layer network with a custom autograd Function for the ReLU.

"PyTorch: Defining new autograd functions": `MyReLU` saves its input in forward and writes its own
backward; fusetorch records it as one node whose gradient is the user's code.

    python examples/two_layer_net_custom_function.py [--steps 500]
"""
import argparse

import fusetorch as torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def main(steps: int = 500) -> float:
    torch.manual_seed(0)
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in)
    y = torch.randn(N, D_out)
    w1 = torch.randn(D_in, H, requires_grad=True)
    w2 = torch.randn(H, D_out, requires_grad=True)

    learning_rate = 1e-6
    first = None
    for t in range(steps):
        relu = MyReLU.apply
        y_pred = relu(x.mm(w1)).mm(w2)
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

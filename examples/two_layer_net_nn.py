"""The two-layer network with `nn.Sequential`, a loss module and an optimizer.

"PyTorch: nn" and "PyTorch: optim" in one: the model is a Sequential of Linear and ReLU layers,
the loss is `MSELoss(reduction='sum')`, and `optim.SGD` applies the updates.

    python examples/two_layer_net_nn.py [--steps 500] [--compile]

With --compile the model runs as fused C kernels (fusetorch.compile), backward included, and
follows the same loss curve.
"""
import argparse

import fusetorch as torch


def main(steps: int = 500, compiled: bool = False) -> float:
    torch.manual_seed(0)
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = torch.randn(N, D_in)
    y = torch.randn(N, D_out)

    model = torch.nn.Sequential(
        torch.nn.Linear(D_in, H),
        torch.nn.ReLU(),
        torch.nn.Linear(H, D_out),
    )
    print(model)
    if compiled:
        model = torch.compile(model)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)

    first = None
    for t in range(steps):
        y_pred = model(x)
        loss = loss_fn(y_pred, y)
        first = loss.item() if first is None else first
        if t % 100 == 99 or t == steps - 1:
            print(f"step {t + 1:4d}  loss {loss.item():.6g}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    last = loss.item()
    print(f"loss went from {first:.6g} to {last:.6g} ({first / last:.3g}x lower) in {steps} steps")
    return last


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    main(a.steps, a.compile)

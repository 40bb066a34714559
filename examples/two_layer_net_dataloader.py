"""The two-layer network fed by a DataLoader, trained with Adam.

A TensorDataset of (input, target) pairs, shuffled mini-batches from a DataLoader, and the
usual epoch loop: the shape of most real training scripts.

    python examples/two_layer_net_dataloader.py [--epochs 100]
"""
import argparse

import fusetorch as torch
from fusetorch.utils.data import DataLoader, TensorDataset


def main(epochs: int = 100) -> float:
    torch.manual_seed(0)
    N, D_in, H, D_out = 512, 100, 64, 10
    x = torch.randn(N, D_in)
    true_w = torch.randn(D_in, D_out) / 10
    y = (x @ true_w).tanh() + 0.01 * torch.randn(N, D_out)  # a learnable target

    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(D_in, H), torch.nn.ReLU(),
                                torch.nn.Linear(H, D_out))
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    first = None
    for epoch in range(epochs):
        total = 0.0
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        mean = total / N
        first = mean if first is None else first
        if epoch % 20 == 19 or epoch == epochs - 1:
            print(f"epoch {epoch + 1:3d}  mean loss {mean:.6f}")
    print(f"loss went from {first:.6g} to {mean:.6g} ({first / mean:.3g}x lower) "
          f"in {epochs} epochs")
    return mean


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=100)
    main(p.parse_args().epochs)

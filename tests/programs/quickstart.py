"""In the style of the PyTorch "Quickstart" tutorial: a Flatten + Linear/ReLU stack trained with
CrossEntropyLoss and SGD through DataLoaders, a test loop counting correct guesses, then the
state dict saved and loaded into a fresh model. 28x28 "images" are random, the ten labels a
function of them, so there is nothing to download."""
import os
import tempfile

import fusetorch as torch
from fusetorch import nn
from fusetorch.utils.data import DataLoader, TensorDataset


def make_data(n: int) -> TensorDataset:
    x = torch.rand(n, 1, 28, 28)
    y = (x.mean(dim=(1, 2, 3)) * 40).long() % 10
    return TensorDataset(x, y)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        return self.linear_relu_stack(x)


def train(dataloader, model, loss_fn, optimizer, device):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 2 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
    return loss


def test(dataloader, model, loss_fn, device):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss


def main():
    torch.manual_seed(0)
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    print(f"Using {device} device")
    train_dataloader = DataLoader(make_data(64), batch_size=16)
    test_dataloader = DataLoader(make_data(32), batch_size=16)
    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break
    model = NeuralNetwork().to(device)
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    for t in range(2):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, device)
        test_loss = test(test_dataloader, model, loss_fn, device)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.pth")
        torch.save(model.state_dict(), path)
        model2 = NeuralNetwork().to(device)
        model2.load_state_dict(torch.load(path, weights_only=True))
    x, y = make_data(1)[0]
    with torch.no_grad():
        a, b = model(x.unsqueeze(0)), model2(x.unsqueeze(0))
    assert torch.equal(a, b)
    print(f'Predicted: "{a[0].argmax(0)}", Actual: "{y}"')
    return test_loss


if __name__ == "__main__":
    main()

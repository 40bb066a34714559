"""In the style of the PyTorch tutorial "Optimizing Model Parameters" (FashionMNIST MLP): a
NeuralNetwork of nn.Flatten + nn.Sequential of Linear/ReLU, train_loop / test_loop over
DataLoaders (here over torch.utils.data.TensorDataset of synthetic 28x28 images, with
random_split), SGD with OneCycleLR stepped per batch, the tutorial's printed progress
(`loss, current = loss.item(), batch * batch_size + len(X)`) and its test accuracy
`(pred.argmax(1) == y).type(torch.float).sum().item()`."""
import fusetorch as torch
from fusetorch import nn
from fusetorch.utils.data import DataLoader, TensorDataset, random_split


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train_loop(dataloader, model, loss_fn, optimizer, scheduler, batch_size):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if batch % 2 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
    return loss if isinstance(loss, float) else loss.item()


def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss


def main():
    torch.manual_seed(0)
    learning_rate = 1e-1
    batch_size = 16
    epochs = 2
    images = torch.rand(80, 1, 28, 28)
    labels = torch.randint(0, 10, (80,))
    dataset = TensorDataset(images, labels)
    training_data, test_data = random_split(dataset, [0.8, 0.2],
                                            generator=torch.Generator().manual_seed(42))
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    model = NeuralNetwork()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=learning_rate,
                                                    steps_per_epoch=len(train_dataloader),
                                                    epochs=epochs)
    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train_loop(train_dataloader, model, loss_fn, optimizer, scheduler, batch_size)
        test_loss = test_loop(test_dataloader, model, loss_fn)
    print("Done!")
    return test_loss


if __name__ == "__main__":
    main()

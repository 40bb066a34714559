"""In the style of pytorch/examples mnist_rnn/main.py: each 28x28 image read row by row by an
nn.LSTM(input_size=28, hidden_size=64, batch_first=True), the last step's output through
dropout, Linear and log_softmax; `input.reshape(-1, 28, 28)`, Adadelta + StepLR(step_size=1,
gamma=0.7), `F.nll_loss(output, target, reduction='sum').item()`, and
`output.argmax(dim=1, keepdim=True)` with `pred.eq(target.view_as(pred)).sum().item()`.
Random images stand in for MNIST."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim
from fusetorch.optim.lr_scheduler import StepLR
from fusetorch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args["log_interval"] == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(args, model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss


def main():
    args = {"log_interval": 1, "lr": 0.1, "gamma": 0.7, "epochs": 2}
    torch.manual_seed(1)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    images = (torch.rand(12, 1, 28, 28) - 0.1307) / 0.3081
    targets = torch.randint(0, 10, (12,))
    train_loader = DataLoader(TensorDataset(images[:8], targets[:8]), batch_size=4, shuffle=True)
    test_loader = DataLoader(TensorDataset(images[8:], targets[8:]), batch_size=4, shuffle=True)
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args["lr"])
    scheduler = StepLR(optimizer, step_size=1, gamma=args["gamma"])
    for epoch in range(1, args["epochs"] + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test_loss = test(args, model, device, test_loader)
        scheduler.step()
    return test_loss


if __name__ == "__main__":
    main()

"""In the style of the "Spatial transformer networks" tutorial: a localisation network
(Conv2d/MaxPool2d/ReLU(True)) regressing a 2x3 affine matrix whose last Linear starts as the
identity (weight.data.zero_(), bias.data.copy_), F.affine_grid + F.grid_sample, a LeNet-style
classifier with Dropout2d and F.dropout(training=self.training), nll_loss, SGD; the test pass
sums the loss with size_average=False and counts hits from max(1, keepdim=True)[1]. Random
28x28 images stand in for MNIST."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)
        return x

    def forward(self, x):
        x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main():
    torch.manual_seed(0)
    images = torch.rand(12, 1, 28, 28)
    labels = torch.randint(0, 10, (12,))
    ds = torch.utils.data.TensorDataset(images, labels)
    train_loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
    test_loader = torch.utils.data.DataLoader(ds, batch_size=6)
    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    with torch.no_grad():
        # the localisation head starts as the identity transform: sampling reproduces the input
        x = images[:2]
        assert torch.allclose(model.stn(x), x, atol=1e-5)
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, size_average=False).item()
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
    print('Test set: Average loss: {:.4f}, Accuracy: {}/{}'.format(test_loss, correct, len(test_loader.dataset)))
    return test_loss


if __name__ == "__main__":
    main()

"""In the style of pytorch/examples vae: a fully connected variational autoencoder
(reparameterize with exp(0.5*logvar) and randn_like), the loss as binary_cross_entropy with
reduction='sum' plus the KL term, Adam, a test pass that concatenates originals and
reconstructions, and sampling from the prior. Random [0, 1] 28x28 images stand in for MNIST."""
import fusetorch as torch
import fusetorch.utils.data
from fusetorch import nn, optim
from fusetorch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc21 = nn.Linear(64, 8)
        self.fc22 = nn.Linear(64, 8)
        self.fc3 = nn.Linear(8, 64)
        self.fc4 = nn.Linear(64, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main():
    torch.manual_seed(1)
    device = torch.device("cpu")
    images = torch.rand(24, 1, 28, 28)
    labels = torch.zeros(24, dtype=torch.long)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images[:16], labels[:16]), batch_size=8, shuffle=True)
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images[16:], labels[16:]), batch_size=8)
    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(1, 3):
        model.train()
        train_loss = 0
        for batch_idx, (data, _) in enumerate(train_loader):
            data = data.to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, train_loss / len(train_loader.dataset)))
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for i, (data, _) in enumerate(test_loader):
                data = data.to(device)
                recon_batch, mu, logvar = model(data)
                test_loss += loss_function(recon_batch, data, mu, logvar).item()
                if i == 0:
                    n = min(data.size(0), 8)
                    comparison = torch.cat([data[:n], recon_batch.view(8, 1, 28, 28)[:n]])
                    assert comparison.shape == (16, 1, 28, 28)
        test_loss /= len(test_loader.dataset)
        print('====> Test set loss: {:.4f}'.format(test_loss))
        with torch.no_grad():
            sample = torch.randn(4, 8).to(device)
            sample = model.decode(sample).cpu()
            assert sample.view(4, 1, 28, 28).shape == (4, 1, 28, 28)
    return test_loss


if __name__ == "__main__":
    main()

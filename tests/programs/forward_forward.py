"""In the style of pytorch/examples mnist_forward_forward/main.py (Hinton's forward-forward
algorithm): each Linear layer trains on its own with Adam on the goodness x.pow(2).mean(1) of
positive data (the true label overlaid on the first pixels) against negative data (a shuffled
label from torch.randperm); F.normalize-like division by x.norm(2, 1, keepdim=True); prediction
by the label with the highest summed goodness, torch.cat of goodness columns and argmax(1)."""
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.optim import Adam

NUM_CLASSES = 4


def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :NUM_CLASSES] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0
        self.num_epochs = 5

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([
                -g_pos + self.threshold,
                g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        self.last_loss = loss.item()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers += [Layer(dims[d], dims[d + 1])]

    def predict(self, x):
        goodness_per_label = []
        for label in range(NUM_CLASSES):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print('training layer', i, '...')
            h_pos, h_neg = layer.train(h_pos, h_neg)
        return self.layers[-1].last_loss


def main():
    torch.manual_seed(1234)
    x = torch.rand(32, 20)
    y = torch.randint(0, NUM_CLASSES, (32,))
    net = Net([20, 16, 16])
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])
    loss = net.train(x_pos, x_neg)
    print('train error:', 1.0 - net.predict(x).eq(y).float().mean().item())
    x_te = torch.rand(8, 20)
    y_te = torch.randint(0, NUM_CLASSES, (8,))
    print('test error:', 1.0 - net.predict(x_te).eq(y_te).float().mean().item())
    return loss


if __name__ == "__main__":
    main()

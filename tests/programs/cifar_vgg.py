"""In the style of kuangliu/pytorch-cifar's models/vgg.py and main.py: the cfg table of layer widths
and 'M' pools turned into nn.Sequential by _make_layers (AvgPool2d(kernel_size=1, stride=1) at
the end), out.view(out.size(0), -1), SGD with momentum and weight decay, CosineAnnealingLR, and
the training loop's outputs.max(1) / predicted.eq(targets).sum().item() accuracy. Random
32x32 images stand in for CIFAR-10; VGG11 is the smallest of the table."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as optim


cfg = {
    'VGG11': [64, 'M', 128, 'M', 256, 256, 'M', 512, 512, 'M', 512, 512, 'M'],
    'VGG13': [64, 64, 'M', 128, 128, 'M', 256, 256, 'M', 512, 512, 'M', 512, 512, 'M'],
    'VGG16': [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 'M', 512, 512, 512, 'M', 512, 512, 512, 'M'],
    'VGG19': [64, 64, 'M', 128, 128, 'M', 256, 256, 256, 256, 'M', 512, 512, 512, 512, 'M', 512, 512, 512, 512, 'M'],
}


class VGG(nn.Module):
    def __init__(self, vgg_name):
        super(VGG, self).__init__()
        self.features = self._make_layers(cfg[vgg_name])
        self.classifier = nn.Linear(512, 10)

    def forward(self, x):
        out = self.features(x)
        out = out.view(out.size(0), -1)
        out = self.classifier(out)
        return out

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for x in cfg:
            if x == 'M':
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, x, kernel_size=3, padding=1),
                           nn.BatchNorm2d(x),
                           nn.ReLU(inplace=True)]
                in_channels = x
        layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
        return nn.Sequential(*layers)


BATCH = 2
NET = lambda: VGG('VGG11')


def main():
    torch.manual_seed(0)
    device = 'cuda' if torch.cuda.is_available() else 'cpu'
    net = NET()
    net = net.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx in range(2):
        inputs = torch.randn(BATCH, 3, 32, 32)
        targets = torch.randint(0, 10, (BATCH,))
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
        print(batch_idx, 'Loss: %.3f | Acc: %.3f%% (%d/%d)'
              % (train_loss/(batch_idx+1), 100.*correct/total, correct, total))
    scheduler.step()
    net.eval()
    with torch.no_grad():
        outputs = net(torch.randn(BATCH, 3, 32, 32))
        print(outputs.size())
    return train_loss / 2


if __name__ == "__main__":
    main()

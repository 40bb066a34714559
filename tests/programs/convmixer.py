"""In the style of locuslab/convmixer (the paper's "Patches Are All You Need?" listing): a
Residual wrapper module, nn.Sequential built from a generator of blocks (*[...] for i in
range(depth)), depthwise Conv2d(groups=dim, padding="same"), GELU, BatchNorm2d,
AdaptiveAvgPool2d((1,1)) and Flatten, trained with AdamW under OneCycleLR-style linear
interpolation of the learning rate (np.interp) and nn.utils.clip_grad_norm_, as its CIFAR-10
training script does. Random images stand in for CIFAR-10."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


def ConvMixer(dim, depth, kernel_size=9, patch_size=7, n_classes=1000):
    return nn.Sequential(
        nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size),
        nn.GELU(),
        nn.BatchNorm2d(dim),
        *[nn.Sequential(
                Residual(nn.Sequential(
                    nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                    nn.GELU(),
                    nn.BatchNorm2d(dim)
                )),
                nn.Conv2d(dim, dim, kernel_size=1),
                nn.GELU(),
                nn.BatchNorm2d(dim)
        ) for i in range(depth)],
        nn.AdaptiveAvgPool2d((1,1)),
        nn.Flatten(),
        nn.Linear(dim, n_classes)
    )


def main():
    torch.manual_seed(0)
    epochs, batches, lr_max, wd, clip_norm = 2, 2, 0.01, 0.005, True
    model = ConvMixer(32, 2, kernel_size=5, patch_size=2, n_classes=10)
    lr_schedule = lambda t: np.interp([t], [0, epochs*2//5, epochs*4//5, epochs],
                                      [0, lr_max, lr_max/20.0, 0])[0]
    opt = torch.optim.AdamW(model.parameters(), lr=lr_max, weight_decay=wd)
    criterion = nn.CrossEntropyLoss()
    scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
    for epoch in range(epochs):
        model.train()
        train_loss, train_acc, n = 0, 0, 0
        for i in range(batches):
            X = torch.randn(8, 3, 16, 16)
            y = torch.randint(0, 10, (8,))
            lr = lr_schedule(epoch + (i + 1)/batches)
            opt.param_groups[0].update(lr=lr)
            opt.zero_grad()
            with torch.cuda.amp.autocast(enabled=torch.cuda.is_available()):
                output = model(X)
                loss = criterion(output, y)
            scaler.scale(loss).backward()
            if clip_norm:
                scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            train_loss += loss.item() * y.size(0)
            train_acc += (output.max(1)[1] == y).sum().item()
            n += y.size(0)
        model.eval()
        test_acc, m = 0, 0
        with torch.no_grad():
            X = torch.randn(8, 3, 16, 16)
            y = torch.randint(0, 10, (8,))
            output = model(X)
            test_acc += (output.max(1)[1] == y).sum().item()
            m += y.size(0)
        print(f'[ConvMixer] Epoch: {epoch} | Train Acc: {train_acc/n:.4f}, '
              f'Test Acc: {test_acc/m:.4f}, Lr: {lr:.6f}')
    return train_loss / n


if __name__ == "__main__":
    main()

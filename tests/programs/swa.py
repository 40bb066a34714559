"""In the style of the torch.optim documentation's stochastic weight averaging recipe (and the
SWA blog post's CIFAR script): a small CNN with BatchNorm trained with SGD and CosineAnnealingLR,
then averaged with AveragedModel under SWALR from `swa_start`, BatchNorm statistics recomputed
with update_bn over the loader, and an EMA copy (get_ema_multi_avg_fn, use_buffers=True)
updated every step. Random images stand in for CIFAR-10."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from fusetorch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    images, labels = torch.randn(32, 3, 8, 8), torch.randint(0, 10, (32,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=8, shuffle=True)
    model = Net()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    swa_model = AveragedModel(model)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
    swa_start = 2
    swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=2, anneal_strategy="linear")
    for epoch in range(5):
        model.train()
        for input, target in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
            ema_model.update_parameters(model)
        if epoch > swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        print(f"epoch {epoch} lr {optimizer.param_groups[0]['lr']:.4f} loss {loss.item():.4f}")
    assert swa_model.n_averaged.item() == 2
    assert abs(optimizer.param_groups[0]["lr"] - swa_scheduler.get_last_lr()[0]) < 1e-12
    update_bn(loader, swa_model)
    swa_model.eval()
    ema_model.eval()
    with torch.no_grad():
        preds = swa_model(images)
        ema_preds = ema_model(images)
        correct = (preds.argmax(1) == labels).sum().item()
    print(f"SWA accuracy {correct / len(labels):.3f}, EMA logits {ema_preds.abs().mean():.4f}")
    # the averaged model saves as a module whose keys sit under `module.`
    keys = list(swa_model.state_dict())
    assert keys[0] == "n_averaged" and keys[1] == "module.conv.weight", keys
    return F.cross_entropy(preds, labels).item()


if __name__ == "__main__":
    main()

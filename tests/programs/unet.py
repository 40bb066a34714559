"""In the style of milesial/Pytorch-UNet (unet/unet_parts.py, train.py): DoubleConv of
Conv2d(bias=False) + BatchNorm2d + ReLU(inplace=True), Down by MaxPool2d, Up by
ConvTranspose2d(stride 2) with F.pad to the skip's size and torch.cat([x2, x1], dim=1), OutConv;
binary segmentation with nn.BCEWithLogitsLoss plus a soft dice loss on F.sigmoid; RMSprop with
foreach, ReduceLROnPlateau(mode='max') on the dice score; evaluation under torch.inference_mode()
thresholding at 0.5."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.inc = DoubleConv(n_channels, 4)
        self.down1 = Down(4, 8)
        self.down2 = Down(8, 16)
        self.up1 = Up(16, 8)
        self.up2 = Up(8, 4)
        self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    assert input.size() == target.size()
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def dice_loss(input, target):
    return 1 - dice_coeff(input, target, reduce_batch_first=True)


def main():
    torch.manual_seed(0)
    model = UNet(n_channels=3, n_classes=1)
    model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8,
                                    momentum=0.999, foreach=True)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=5)
    criterion = nn.BCEWithLogitsLoss()
    images = torch.randn(4, 3, 10, 10).to(memory_format=torch.channels_last)
    true_masks = (torch.rand(4, 10, 10) > 0.5).long()
    for epoch in range(2):
        model.train()
        masks_pred = model(images)
        loss = criterion(masks_pred.squeeze(1), true_masks.float())
        loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        model.eval()
        with torch.inference_mode():
            mask_pred = (F.sigmoid(model(images)) > 0.5).float()
            score = dice_coeff(mask_pred.squeeze(1), true_masks.float())
        scheduler.step(score)
        print(f"epoch {epoch} loss {loss.item():.4f} dice {score.item():.4f}")
    return loss.item()


if __name__ == "__main__":
    main()

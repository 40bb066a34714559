"""In the style of pytorch/examples super_resolution: the sub-pixel CNN (four Conv2d with
init.orthogonal_ and calculate_gain('relu'), PixelShuffle), MSELoss, Adam, PSNR from
math.log10, and a checkpoint of the whole model. Random 8x8 low-resolution images and their
24x24 "targets" stand in for BSDS300."""
import io
from math import log10

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.init as init
import fusetorch.optim as optim
from fusetorch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def main():
    torch.manual_seed(123)
    device = torch.device("cpu")
    hr = torch.rand(8, 1, 24, 24)
    lr_img = torch.nn.functional.avg_pool2d(hr, 3)
    training_data_loader = DataLoader(TensorDataset(lr_img[:6], hr[:6]), batch_size=3, shuffle=True)
    testing_data_loader = DataLoader(TensorDataset(lr_img[6:], hr[6:]), batch_size=2)
    model = Net(upscale_factor=3).to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    for epoch in range(1, 3):
        epoch_loss = 0
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)
            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
        print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))
        avg_psnr = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)
                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
        print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
        buf = io.BytesIO()
        torch.save(model, buf)
    return epoch_loss


if __name__ == "__main__":
    main()

"""In the style of jzbontar/pixelcnn-pytorch (main.py): MaskedConv2d subclassing nn.Conv2d
with a mask buffer made from self.weight.data.clone(), filled and sliced by mask type 'A'/'B'
(self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0), the forward that multiplies
self.weight.data in place before super().forward, the net as one nn.Sequential of masked
convolutions with BatchNorm2d and ReLU ending in a 256-way Conv2d, the loss
F.cross_entropy(net(input), target) over (input.data[:, 0] * 255).long(), and the sampling loop
that fills sample[:, :, i, j] pixel by pixel with torch.multinomial(probs, 1).float() / 255.
Random binary-ish images stand in for MNIST; fm and depth are small."""
import time

import fusetorch as torch
from fusetorch import nn, optim
import fusetorch.nn.functional as F


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)
        assert mask_type in {'A', 'B'}
        self.register_buffer('mask', self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == 'B'):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)


def main():
    torch.manual_seed(0)
    fm = 8
    net = nn.Sequential(
        MaskedConv2d('A', 1,  fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d('B', fm, fm, 7, 1, 3, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        nn.Conv2d(fm, 256, 1))
    print(net)
    sample = torch.Tensor(4, 1, 8, 8)
    optimizer = optim.Adam(net.parameters())
    for epoch in range(2):
        # train
        err_tr = []
        time_tr = time.time()
        net.train()
        for _ in range(2):
            input = (torch.rand(4, 1, 8, 8) > 0.5).float()
            target = (input.data[:, 0] * 255).long()
            loss = F.cross_entropy(net(input), target)
            err_tr.append(loss.item())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        time_tr = time.time() - time_tr

        # compute error on test set
        err_te = []
        time_te = time.time()
        net.eval()
        with torch.no_grad():
            input = (torch.rand(4, 1, 8, 8) > 0.5).float()
            target = (input.data[:, 0] * 255).long()
            loss = F.cross_entropy(net(input), target)
            err_te.append(loss.item())
        time_te = time.time() - time_te

        print('epoch={}; nll_tr={:.7f}; nll_te={:.7f}'.format(
            epoch, sum(err_tr) / len(err_tr), sum(err_te) / len(err_te)))

    # sample
    sample.fill_(0)
    net.eval()
    with torch.no_grad():
        for i in range(8):
            for j in range(8):
                out = net(sample)
                probs = F.softmax(out[:, :, i, j], dim=1).data
                sample[:, :, i, j] = torch.multinomial(probs, 1).float() / 255.
    # the masks keep each pixel's logits independent of itself and of later pixels
    x = torch.rand(1, 1, 8, 8, requires_grad=True)
    net(x)[0, :, 3, 4].sum().backward()
    g = x.grad[0, 0]
    assert (g[3, 4:] == 0).all() and (g[4:] == 0).all()
    print(sample.shape, sample.min().item(), sample.max().item())
    return sum(err_tr) / len(err_tr)


if __name__ == "__main__":
    main()

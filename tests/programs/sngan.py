"""In the style of christiancosgrove/pytorch-spectral-normalization-gan (main.py and
model_resnet.py's CIFAR-10 models, with the library's `nn.utils.spectral_norm` in place of its
own SpectralNorm wrapper): a ConvTranspose2d generator, a discriminator whose every conv and
the final Linear are wrapped in `spectral_norm`, the hinge loss (`nn.ReLU()(1.0 - disc(x))`),
Adam with `betas=(0.0, 0.9)` over `filter(lambda p: p.requires_grad, ...)`, ExponentialLR
schedulers, and `Variable(torch.randn(...))` noise. Random images stand in for CIFAR-10."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as optim
from fusetorch.autograd import Variable
from fusetorch.nn.utils import spectral_norm

channels = 3
leak = 0.1
w_g = 2


class Generator(nn.Module):
    def __init__(self, z_dim):
        super(Generator, self).__init__()
        self.z_dim = z_dim
        self.model = nn.Sequential(
            nn.ConvTranspose2d(z_dim, 32, 2, stride=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 16, kernel_size=4, stride=2, padding=(1, 1)),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.ConvTranspose2d(16, channels, kernel_size=3, stride=1, padding=(1, 1)),
            nn.Tanh())

    def forward(self, z):
        return self.model(z.view(-1, self.z_dim, 1, 1))


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.conv1 = spectral_norm(nn.Conv2d(channels, 16, 3, stride=1, padding=(1, 1)))
        self.conv2 = spectral_norm(nn.Conv2d(16, 16, 4, stride=2, padding=(1, 1)))
        self.conv3 = spectral_norm(nn.Conv2d(16, 32, 3, stride=1, padding=(1, 1)))
        self.fc = spectral_norm(nn.Linear(w_g * w_g * 32, 1))

    def forward(self, x):
        m = x
        m = nn.LeakyReLU(leak)(self.conv1(m))
        m = nn.LeakyReLU(leak)(self.conv2(m))
        m = nn.LeakyReLU(leak)(self.conv3(m))
        return self.fc(m.view(-1, w_g * w_g * 32))


def main():
    torch.manual_seed(0)
    Z_dim = 8
    batch_size = 4
    discriminator = Discriminator()
    generator = Generator(Z_dim)
    optim_disc = optim.Adam(filter(lambda p: p.requires_grad, discriminator.parameters()),
                            lr=2e-4, betas=(0.0, 0.9))
    optim_gen = optim.Adam(generator.parameters(), lr=2e-4, betas=(0.0, 0.9))
    scheduler_d = optim.lr_scheduler.ExponentialLR(optim_disc, gamma=0.99)
    scheduler_g = optim.lr_scheduler.ExponentialLR(optim_gen, gamma=0.99)
    loader = [(torch.rand(batch_size, channels, 4, 4) * 2 - 1, torch.zeros(batch_size))
              for _ in range(2)]
    disc_iters = 2
    for batch_idx, (data, target) in enumerate(loader):
        if data.size()[0] != batch_size:
            continue
        data, target = Variable(data), Variable(target)
        for _ in range(disc_iters):
            z = Variable(torch.randn(batch_size, Z_dim))
            optim_disc.zero_grad()
            optim_gen.zero_grad()
            disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + \
                nn.ReLU()(1.0 + discriminator(generator(z))).mean()
            disc_loss.backward()
            optim_disc.step()
        z = Variable(torch.randn(batch_size, Z_dim))
        optim_disc.zero_grad()
        optim_gen.zero_grad()
        gen_loss = -discriminator(generator(z)).mean()
        gen_loss.backward()
        optim_gen.step()
        print('disc loss', disc_loss.item(), 'gen loss', gen_loss.item())
    scheduler_d.step()
    scheduler_g.step()
    assert sorted(discriminator.conv1.state_dict()) == ['bias', 'weight_orig', 'weight_u',
                                                        'weight_v']
    return disc_loss.item()


if __name__ == "__main__":
    main()

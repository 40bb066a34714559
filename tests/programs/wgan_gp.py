"""In the style of the WGAN-GP training scripts (Gulrajani et al.'s gradient penalty, e.g.
the popular PyTorch ports of wgan-gp): a critic's gradient at interpolates between real and
fake samples from `torch.autograd.grad(..., create_graph=True, retain_graph=True,
only_inputs=True)`, penalised as (||grad||_2 - 1)^2; Adam with betas (0.5, 0.9); the DCGAN-style
device checks (`is_cuda`, `is_xpu`). Gaussian blobs stand in for the data."""
import fusetorch as torch
import fusetorch.autograd as autograd
import fusetorch.nn as nn

LAMBDA = 10


def calc_gradient_penalty(netD, real_data, fake_data):
    alpha = torch.rand(real_data.size(0), 1)
    alpha = alpha.expand(real_data.size())
    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates = autograd.Variable(interpolates, requires_grad=True)
    disc_interpolates = netD(interpolates)
    gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones(disc_interpolates.size()),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


def main():
    torch.manual_seed(1)
    netG = nn.Sequential(nn.Linear(2, 32), nn.ReLU(True), nn.Linear(32, 2))
    netD = nn.Sequential(nn.Linear(2, 32), nn.ReLU(True), nn.Linear(32, 1))
    real = torch.randn(16, 2)
    device_kind = "xpu" if real.is_xpu else ("cuda" if real.is_cuda else "cpu")
    assert device_kind == "cpu" and not real.is_mps
    optD = torch.optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.9))
    optG = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.9))
    one = torch.tensor(1.0)
    mone = one * -1
    for it in range(3):
        for p in netD.parameters():
            p.requires_grad = True
        netD.zero_grad()
        D_real = netD(real).mean()
        D_real.backward(mone)
        fake = netG(torch.randn(16, 2)).detach()
        D_fake = netD(fake).mean()
        D_fake.backward(one)
        gradient_penalty = calc_gradient_penalty(netD, real, fake)
        gradient_penalty.backward()
        D_cost = D_fake - D_real + gradient_penalty
        optD.step()
        for p in netD.parameters():
            p.requires_grad = False
        netG.zero_grad()
        G = netD(netG(torch.randn(16, 2))).mean()
        G.backward(mone)
        optG.step()
    return float(D_cost.item())


if __name__ == "__main__":
    main()

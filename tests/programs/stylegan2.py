"""In the style of rosinality/stylegan2-pytorch (model.py, op/ native fallbacks, train.py):
PixelNorm, EqualLinear with lr_mul and fused_leaky_relu's native form, make_kernel,
upfirdn2d_native (F.pad of a 6-d view, a flipped-kernel conv2d), Blur and Upsample,
ModulatedConv2d (style modulation, rsqrt demodulation, per-sample weights through
groups=batch, the up-sampling conv_transpose2d with transposed grouped weights then Blur),
NoiseInjection (new_empty(...).normal_()), ConstantInput.repeat, StyledConv, ToRGB with the
skip up-sampled, a small generator of two resolutions, and train.py's losses: the
non-saturating softplus losses, the R1 penalty d_r1_loss and g_path_regularize, both through
autograd.grad with create_graph=True and then backward (double backward through grouped and
transposed convolutions)."""
import math

import fusetorch as torch
from fusetorch import autograd, nn
from fusetorch.nn import functional as F


def fused_leaky_relu(input, bias=None, negative_slope=0.2, scale=2 ** 0.5):
    if bias is not None:
        rest_dim = [1] * (input.ndim - bias.ndim - 1)
        return (
            F.leaky_relu(
                input + bias.view(1, bias.shape[0], *rest_dim), negative_slope=0.2
            )
            * scale
        )
    else:
        return F.leaky_relu(input, negative_slope=0.2) * scale


class FusedLeakyReLU(nn.Module):
    def __init__(self, channel, bias=True, negative_slope=0.2, scale=2 ** 0.5):
        super().__init__()
        if bias:
            self.bias = nn.Parameter(torch.zeros(channel))
        else:
            self.bias = None
        self.negative_slope = negative_slope
        self.scale = scale

    def forward(self, input):
        return fused_leaky_relu(input, self.bias, self.negative_slope, self.scale)


def upfirdn2d_native(
    input, kernel, up_x, up_y, down_x, down_y, pad_x0, pad_x1, pad_y0, pad_y1
):
    _, channel, in_h, in_w = input.shape
    input = input.reshape(-1, in_h, in_w, 1)

    _, in_h, in_w, minor = input.shape
    kernel_h, kernel_w = kernel.shape

    out = input.view(-1, in_h, 1, in_w, 1, minor)
    out = F.pad(out, [0, 0, 0, up_x - 1, 0, 0, 0, up_y - 1])
    out = out.view(-1, in_h * up_y, in_w * up_x, minor)

    out = F.pad(
        out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)]
    )
    out = out[
        :,
        max(-pad_y0, 0) : out.shape[1] - max(-pad_y1, 0),
        max(-pad_x0, 0) : out.shape[2] - max(-pad_x1, 0),
        :,
    ]

    out = out.permute(0, 3, 1, 2)
    out = out.reshape(
        [-1, 1, in_h * up_y + pad_y0 + pad_y1, in_w * up_x + pad_x0 + pad_x1]
    )
    w = torch.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
    out = F.conv2d(out, w)
    out = out.reshape(
        -1,
        minor,
        in_h * up_y + pad_y0 + pad_y1 - kernel_h + 1,
        in_w * up_x + pad_x0 + pad_x1 - kernel_w + 1,
    )
    out = out.permute(0, 2, 3, 1)
    out = out[:, ::down_y, ::down_x, :]

    out_h = (in_h * up_y + pad_y0 + pad_y1 - kernel_h) // down_y + 1
    out_w = (in_w * up_x + pad_x0 + pad_x1 - kernel_w) // down_x + 1

    return out.view(-1, channel, out_h, out_w)


def upfirdn2d(input, kernel, up=1, down=1, pad=(0, 0)):
    return upfirdn2d_native(input, kernel, up, up, down, down, pad[0], pad[1], pad[0], pad[1])


class PixelNorm(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)


def make_kernel(k):
    k = torch.tensor(k, dtype=torch.float32)

    if k.ndim == 1:
        k = k[None, :] * k[:, None]

    k /= k.sum()

    return k


class Upsample(nn.Module):
    def __init__(self, kernel, factor=2):
        super().__init__()

        self.factor = factor
        kernel = make_kernel(kernel) * (factor ** 2)
        self.register_buffer("kernel", kernel)

        p = kernel.shape[0] - factor

        pad0 = (p + 1) // 2 + factor - 1
        pad1 = p // 2

        self.pad = (pad0, pad1)

    def forward(self, input):
        out = upfirdn2d(input, self.kernel, up=self.factor, down=1, pad=self.pad)

        return out


class Blur(nn.Module):
    def __init__(self, kernel, pad, upsample_factor=1):
        super().__init__()

        kernel = make_kernel(kernel)

        if upsample_factor > 1:
            kernel = kernel * (upsample_factor ** 2)

        self.register_buffer("kernel", kernel)

        self.pad = pad

    def forward(self, input):
        out = upfirdn2d(input, self.kernel, pad=self.pad)

        return out


class EqualConv2d(nn.Module):
    def __init__(
        self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True
    ):
        super().__init__()

        self.weight = nn.Parameter(
            torch.randn(out_channel, in_channel, kernel_size, kernel_size)
        )
        self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)

        self.stride = stride
        self.padding = padding

        if bias:
            self.bias = nn.Parameter(torch.zeros(out_channel))

        else:
            self.bias = None

    def forward(self, input):
        out = F.conv2d(
            input,
            self.weight * self.scale,
            bias=self.bias,
            stride=self.stride,
            padding=self.padding,
        )

        return out

    def __repr__(self):
        return (
            f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]},"
            f" {self.weight.shape[2]}, stride={self.stride}, padding={self.padding})"
        )


class EqualLinear(nn.Module):
    def __init__(
        self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None
    ):
        super().__init__()

        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))

        if bias:
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init))

        else:
            self.bias = None

        self.activation = activation

        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            out = fused_leaky_relu(out, self.bias * self.lr_mul)

        else:
            out = F.linear(
                input, self.weight * self.scale, bias=self.bias * self.lr_mul
            )

        return out

    def __repr__(self):
        return (
            f"{self.__class__.__name__}({self.weight.shape[1]}, {self.weight.shape[0]})"
        )


class ModulatedConv2d(nn.Module):
    def __init__(
        self,
        in_channel,
        out_channel,
        kernel_size,
        style_dim,
        demodulate=True,
        upsample=False,
        blur_kernel=[1, 3, 3, 1],
    ):
        super().__init__()

        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        self.upsample = upsample

        if upsample:
            factor = 2
            p = (len(blur_kernel) - factor) - (kernel_size - 1)
            pad0 = (p + 1) // 2 + factor - 1
            pad1 = p // 2 + 1

            self.blur = Blur(blur_kernel, pad=(pad0, pad1), upsample_factor=factor)

        fan_in = in_channel * kernel_size ** 2
        self.scale = 1 / math.sqrt(fan_in)
        self.padding = kernel_size // 2

        self.weight = nn.Parameter(
            torch.randn(1, out_channel, in_channel, kernel_size, kernel_size)
        )

        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)

        self.demodulate = demodulate

    def __repr__(self):
        return (
            f"{self.__class__.__name__}({self.in_channel}, {self.out_channel}, {self.kernel_size}, "
            f"upsample={self.upsample})"
        )

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape

        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style

        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)

        weight = weight.view(
            batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size
        )

        if self.upsample:
            input = input.view(1, batch * in_channel, height, width)
            weight = weight.view(
                batch, self.out_channel, in_channel, self.kernel_size, self.kernel_size
            )
            weight = weight.transpose(1, 2).reshape(
                batch * in_channel, self.out_channel, self.kernel_size, self.kernel_size
            )
            out = F.conv_transpose2d(input, weight, padding=0, stride=2, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
            out = self.blur(out)

        else:
            input = input.view(1, batch * in_channel, height, width)
            out = F.conv2d(input, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)

        return out


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()

        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()

        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()

        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        batch = input.shape[0]
        out = self.input.repeat(batch, 1, 1, 1)

        return out


class StyledConv(nn.Module):
    def __init__(
        self,
        in_channel,
        out_channel,
        kernel_size,
        style_dim,
        upsample=False,
        blur_kernel=[1, 3, 3, 1],
        demodulate=True,
    ):
        super().__init__()

        self.conv = ModulatedConv2d(
            in_channel,
            out_channel,
            kernel_size,
            style_dim,
            upsample=upsample,
            blur_kernel=blur_kernel,
            demodulate=demodulate,
        )

        self.noise = NoiseInjection()
        self.activate = FusedLeakyReLU(out_channel)

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        out = self.activate(out)

        return out


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True, blur_kernel=[1, 3, 3, 1]):
        super().__init__()

        if upsample:
            self.upsample = Upsample(blur_kernel)

        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style)
        out = out + self.bias

        if skip is not None:
            skip = self.upsample(skip)

            out = out + skip

        return out


class SmallGenerator(nn.Module):
    """Generator's structure at 4x4 and 8x8: mapping network, constant input, one styled conv
    and ToRGB at 4, an up-sampling styled conv pair and ToRGB with the skip at 8."""

    def __init__(self, style_dim=16, n_mlp=2, channel=8, lr_mlp=0.01):
        super().__init__()
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for i in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp,
                                      activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.input = ConstantInput(channel)
        self.conv1 = StyledConv(channel, channel, 3, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim, upsample=False)
        self.convs = nn.ModuleList([StyledConv(channel, channel, 3, style_dim, upsample=True),
                                    StyledConv(channel, channel, 3, style_dim)])
        self.to_rgb2 = ToRGB(channel, style_dim)
        self.n_latent = 4

    def forward(self, styles, return_latents=False):
        styles = [self.style(s) for s in styles]
        latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        out = self.input(latent)
        out = self.conv1(out, latent[:, 0])
        skip = self.to_rgb1(out, latent[:, 1])
        out = self.convs[0](out, latent[:, 1])
        out = self.convs[1](out, latent[:, 2])
        image = self.to_rgb2(out, latent[:, 3], skip)
        if return_latents:
            return image, latent
        return image, None


class SmallDiscriminator(nn.Module):
    def __init__(self, channel=8):
        super().__init__()
        self.convs = nn.Sequential(EqualConv2d(3, channel, 3, padding=1), FusedLeakyReLU(channel),
                                   Blur([1, 3, 3, 1], pad=(2, 1)),
                                   EqualConv2d(channel, channel, 3, stride=2, padding=0),
                                   FusedLeakyReLU(channel))
        self.final_linear = nn.Sequential(EqualLinear(channel * 3 * 3, channel,
                                                      activation="fused_lrelu"),
                                          EqualLinear(channel, 1))

    def forward(self, input):
        out = self.convs(input)
        return self.final_linear(out.view(out.shape[0], -1))


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)

    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(
        outputs=real_pred.sum(), inputs=real_img, create_graph=True
    )
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()

    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    loss = F.softplus(-fake_pred).mean()

    return loss


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(
        fake_img.shape[2] * fake_img.shape[3]
    )
    grad, = autograd.grad(
        outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True
    )
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))

    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)

    path_penalty = (path_lengths - path_mean).pow(2).mean()

    return path_penalty, path_mean.detach(), path_lengths


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def main():
    torch.manual_seed(0)
    batch, r1, path_regularize = 2, 10, 2
    generator = SmallGenerator()
    discriminator = SmallDiscriminator()
    print(generator.convs[0].conv, discriminator.convs[0])
    g_reg_ratio = 4 / (4 + 1)
    d_reg_ratio = 16 / (16 + 1)
    g_optim = torch.optim.Adam(generator.parameters(), lr=0.002 * g_reg_ratio,
                               betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=0.002 * d_reg_ratio,
                               betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))
    mean_path_length = 0
    up = Upsample([1, 3, 3, 1])
    assert up(torch.ones(1, 1, 4, 4)).shape == (1, 1, 8, 8)
    assert torch.allclose(up(torch.ones(1, 1, 4, 4))[0, 0, 2:6, 2:6], torch.ones(4, 4))
    for i in range(2):
        real_img = torch.rand(batch, 3, 8, 8) * 2 - 1
        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = [torch.randn(batch, 16)]
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        real_img.requires_grad = True
        real_pred = discriminator(real_img)
        r1_loss = d_r1_loss(real_pred, real_img)
        discriminator.zero_grad()
        (r1 / 2 * r1_loss * 16 + 0 * real_pred[0]).backward()
        d_optim.step()

        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = [torch.randn(batch, 16)]
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        noise = [torch.randn(batch, 16)]
        fake_img, latents = generator(noise, return_latents=True)
        path_loss, mean_path_length, path_lengths = g_path_regularize(
            fake_img, latents, mean_path_length
        )
        generator.zero_grad()
        weighted_path_loss = path_regularize * 4 * path_loss
        weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
        weighted_path_loss.backward()
        g_optim.step()
        print(f"d: {d_loss.item():.4f}; g: {g_loss.item():.4f}; r1: {r1_loss.item():.4f}; "
              f"path: {path_loss.item():.4f}; mean path: {mean_path_length.item():.4f}")
    return g_loss.item()


if __name__ == "__main__":
    main()

"""In the style of the small PyTorch WaveNets (vincentherrmann/pytorch-wavenet,
golbin/WaveNet): mu-law companding of a waveform (torch.sign, torch.log1p) and one-hot
quantized inputs, a causal Conv1d built by left padding (F.pad(x, (dilation, 0))), dilated
residual blocks with gated activations (tanh * sigmoid), 1x1 residual and skip convolutions,
skip connections summed over a stack, cross entropy over 256 classes on the last outputs, and
fast sample-by-sample generation of a few steps with torch.multinomial."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


def mu_law_encoding(x, quantization_channels=256):
    mu = quantization_channels - 1.0
    x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / np.log1p(mu)
    x_mu = ((x_mu + 1) / 2 * mu + 0.5).to(torch.int64)
    return x_mu


def mu_law_decoding(x_mu, quantization_channels=256):
    mu = quantization_channels - 1.0
    x = (x_mu.float() / mu) * 2 - 1.0
    x = torch.sign(x) * (torch.exp(torch.abs(x) * torch.log1p(torch.tensor(mu))) - 1.0) / mu
    return x


class CausalConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, dilation=1):
        super(CausalConv1d, self).__init__()
        self.dilation = dilation
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=2, stride=1,
                              dilation=dilation, padding=0, bias=False)

    def forward(self, x):
        return self.conv(F.pad(x, (self.dilation, 0)))


class ResidualBlock(nn.Module):
    def __init__(self, res_channels, skip_channels, dilation):
        super(ResidualBlock, self).__init__()
        self.dilated = CausalConv1d(res_channels, 2 * res_channels, dilation=dilation)
        self.conv_res = nn.Conv1d(res_channels, res_channels, 1)
        self.conv_skip = nn.Conv1d(res_channels, skip_channels, 1)

    def forward(self, x, skip_size):
        output = self.dilated(x)
        filt, gate = output.chunk(2, dim=1)
        gated = torch.tanh(filt) * torch.sigmoid(gate)
        output = self.conv_res(gated)
        output += x
        skip = self.conv_skip(gated)
        skip = skip[:, :, -skip_size:]
        return output, skip


class WaveNet(nn.Module):
    def __init__(self, layer_size=4, stack_size=2, in_channels=256, res_channels=16,
                 skip_channels=32):
        super(WaveNet, self).__init__()
        self.receptive_fields = sum([2 ** i for i in range(layer_size)] * stack_size)
        self.causal = CausalConv1d(in_channels, res_channels)
        self.res_stack = nn.ModuleList(
            [ResidualBlock(res_channels, skip_channels, 2 ** layer)
             for _ in range(stack_size) for layer in range(layer_size)])
        self.densnet = nn.Sequential(nn.ReLU(), nn.Conv1d(skip_channels, skip_channels, 1),
                                     nn.ReLU(), nn.Conv1d(skip_channels, in_channels, 1))

    def calc_output_size(self, x):
        output_size = int(x.size(2)) - self.receptive_fields
        assert output_size >= 1, "input is shorter than the receptive field"
        return output_size

    def forward(self, x):
        output_size = self.calc_output_size(x)
        output = self.causal(x)
        skip_connections = []
        for block in self.res_stack:
            output, skip = block(output, output_size)
            skip_connections.append(skip)
        output = torch.sum(torch.stack(skip_connections), dim=0)
        return self.densnet(output)


def one_hot(x, channels=256):
    return F.one_hot(x, channels).float().transpose(1, 2)


def main():
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 96)
    audio = 0.6 * torch.sin(2 * np.pi * 11 * t) + 0.05 * torch.randn(96)
    quantized = mu_law_encoding(audio.clamp(-1, 1))
    assert torch.allclose(mu_law_decoding(quantized), audio.clamp(-1, 1), atol=0.05)
    model = WaveNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs = one_hot(quantized[:-1].unsqueeze(0))
    for step in range(3):
        logits = model(inputs)
        n = logits.size(2)
        targets = quantized[-n:].unsqueeze(0)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
    model.eval()
    generated = quantized[:model.receptive_fields + 1].tolist()
    with torch.no_grad():
        for _ in range(4):
            x = one_hot(torch.tensor(generated[-(model.receptive_fields + 1):]).unsqueeze(0))
            probs = F.softmax(model(x)[0, :, -1], dim=0)
            generated.append(torch.multinomial(probs, 1).item())
    print(mu_law_decoding(torch.tensor(generated[-4:])))
    return loss.item()


if __name__ == "__main__":
    main()

"""In the style of pytorch/examples fast_neural_style: TransformerNet (ConvLayer with
ReflectionPad2d, InstanceNorm2d(affine=True), ResidualBlocks, UpsampleConvLayer with
F.interpolate(mode='nearest')), gram_matrix by bmm of features with their transpose,
normalize_batch with new_tensor(...).view(-1, 1, 1) and div_(255), content and style MSE losses
from a small frozen "VGG" feature extractor returning a namedtuple, Adam. Scaled down: 16x16
images, few channels, one residual block."""
from collections import namedtuple

import fusetorch as torch


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        return self.conv2d(out)


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        return out + residual


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        return self.conv2d(out)


class TransformerNet(torch.nn.Module):
    def __init__(self):
        super(TransformerNet, self).__init__()
        self.conv1 = ConvLayer(3, 4, kernel_size=5, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(4, affine=True)
        self.conv2 = ConvLayer(4, 8, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(8, affine=True)
        self.res1 = ResidualBlock(8)
        self.deconv1 = UpsampleConvLayer(8, 4, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(4, affine=True)
        self.deconv3 = ConvLayer(4, 3, kernel_size=5, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res1(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.deconv3(y)
        return y


class TinyVgg(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super(TinyVgg, self).__init__()
        self.slice1 = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(inplace=True))
        self.slice2 = torch.nn.Sequential(torch.nn.MaxPool2d(2, 2), torch.nn.Conv2d(4, 8, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2'])
        return vgg_outputs(h_relu1_2, h_relu2_2)


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def main():
    torch.manual_seed(42)
    device = torch.device("cpu")
    transformer = TransformerNet().to(device)
    optimizer = torch.optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = torch.nn.MSELoss()
    vgg = TinyVgg(requires_grad=False).to(device)
    style = torch.rand(1, 3, 16, 16) * 255
    style = style.repeat(2, 1, 1, 1).to(device)
    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]
    content_weight, style_weight = 1e5, 1e10
    for batch_id in range(2):
        x = torch.rand(2, 3, 16, 16) * 255
        n_batch = len(x)
        optimizer.zero_grad()
        x = x.to(device)
        y = transformer(x)
        y = normalize_batch(y)
        x = normalize_batch(x)
        features_y = vgg(y)
        features_x = vgg(x)
        content_loss = content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)
        style_loss = 0.
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= style_weight
        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        print(batch_id, content_loss.item(), style_loss.item())
    return total_loss.item()


if __name__ == "__main__":
    main()

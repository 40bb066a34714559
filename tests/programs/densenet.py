"""In the style of torchvision's models/densenet.py (the module code): _DenseLayer with the
memory-efficient path through torch.utils.checkpoint (`cp.checkpoint(closure, *inputs,
use_reentrant=False)` over a list of features, `torch.jit.is_scripting()`, `torch.jit.unused`),
_DenseBlock as an nn.ModuleDict whose forward concatenates, _Transition, nn.Sequential built from
an OrderedDict and add_module, and PyTorch's init loop; two Adam steps, checkpointed and plain
gradients compared, then the state dict loaded into a plain copy."""
from collections import OrderedDict
from typing import List, Tuple

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.utils.checkpoint as cp
from fusetorch import Tensor


class _DenseLayer(nn.Module):
    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1,
                               stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1,
                               padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: List[Tensor]) -> Tensor:
        concated_features = torch.cat(inputs, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
        return bottleneck_output

    def any_requires_grad(self, input: List[Tensor]) -> bool:
        for tensor in input:
            if tensor.requires_grad:
                return True
        return False

    @torch.jit.unused  # noqa: T484
    def call_checkpoint_bottleneck(self, input: List[Tensor]) -> Tensor:
        def closure(*inputs):
            return self.bn_function(inputs)

        return cp.checkpoint(closure, *input, use_reentrant=False)

    def forward(self, input: Tensor) -> Tensor:  # noqa: F811
        if isinstance(input, Tensor):
            prev_features = [input]
        else:
            prev_features = input

        if self.memory_efficient and self.any_requires_grad(prev_features):
            if torch.jit.is_scripting():
                raise Exception("Memory Efficient not supported in JIT")
            bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
        else:
            bottleneck_output = self.bn_function(prev_features)

        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int,
                 growth_rate: int, drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate,
                                bn_size=bn_size, drop_rate=drop_rate,
                                memory_efficient=memory_efficient)
            self.add_module("denselayer%d" % (i + 1), layer)

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for name, layer in self.items():
            new_features = layer(features)
            features.append(new_features)
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1,
                              stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate: int = 32, block_config: Tuple[int, ...] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0,
                 num_classes: int = 1000, memory_efficient: bool = False) -> None:
        super().__init__()
        # First convolution
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3,
                                bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        # Each denseblock
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers=num_layers, num_input_features=num_features,
                                bn_size=bn_size, growth_rate=growth_rate, drop_rate=drop_rate,
                                memory_efficient=memory_efficient)
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_input_features=num_features,
                                    num_output_features=num_features // 2)
                self.features.add_module("transition%d" % (i + 1), trans)
                num_features = num_features // 2
        # Final batch norm
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        # Linear layer
        self.classifier = nn.Linear(num_features, num_classes)
        # Official init from torch repo.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        out = self.classifier(out)
        return out


def main():
    torch.manual_seed(0)
    kwargs = dict(growth_rate=4, block_config=(2, 2), num_init_features=8, bn_size=2,
                  num_classes=5)
    efficient = DenseNet(memory_efficient=True, drop_rate=0, **kwargs)
    plain = DenseNet(memory_efficient=False, **kwargs)
    plain.load_state_dict(efficient.state_dict())
    assert list(efficient.features.denseblock1.keys()) == ["denselayer1", "denselayer2"]
    x, y = torch.randn(2, 3, 32, 32), torch.tensor([1, 3])
    for model in (efficient, plain):
        model.train()
        F.cross_entropy(model(x), y).backward()
    for (name, p), q in zip(efficient.named_parameters(), plain.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-6), name
    # checkpoint's recomputation runs norm1 again in train mode, so (as in PyTorch) its running
    # mean moved twice from zero with the same batch mean: 0.1 m + 0.9 (0.1 m) = 1.9 (0.1 m)
    rm_e = efficient.features.denseblock1.denselayer1.norm1.running_mean
    rm_p = plain.features.denseblock1.denselayer1.norm1.running_mean
    assert torch.allclose(rm_e, 1.9 * rm_p, atol=1e-6), (rm_e, rm_p)
    optimizer = torch.optim.Adam(efficient.parameters(), lr=1e-3)
    for _ in range(2):
        optimizer.zero_grad()
        loss = F.cross_entropy(efficient(x), y)
        loss.backward()
        optimizer.step()
    efficient.eval()
    with torch.no_grad():
        out = efficient(x)
    assert out.shape == (2, 5)
    return loss.item()

"""In the style of the pruning tutorial (torch.nn.utils.prune) on LeNet: random_unstructured,
l1_unstructured with an int amount, ln_structured along dim 0, the forward pre-hooks and the
PruningContainer they form, the weight_orig/weight_mask parametrization in named_parameters,
named_buffers and the state dict, prune.remove, global_unstructured over several modules with
its sparsity report, and a custom BasePruningMethod subclass."""
import fusetorch as torch
from fusetorch import nn
import fusetorch.nn.utils.prune as prune
import fusetorch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class FooBarPruningMethod(prune.BasePruningMethod):
    PRUNING_TYPE = 'unstructured'

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name)
    return module


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")
    model = LeNet().to(device=device)
    module = model.conv1
    print(list(module.named_parameters())[1][0])
    print(list(module.named_buffers()))
    prune.random_unstructured(module, name="weight", amount=0.3)
    print([n for n, _ in module.named_parameters()])
    print([n for n, _ in module.named_buffers()])
    print(int((module.weight == 0).sum()))
    print(module._forward_pre_hooks)
    prune.l1_unstructured(module, name="bias", amount=3)
    print([n for n, _ in module.named_parameters()])
    print(int((module.bias == 0).sum()))
    print(module._forward_pre_hooks.keys().__len__())
    prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    print(int((module.weight.sum(dim=(1, 2, 3)) == 0).sum()))
    for hook in module._forward_pre_hooks.values():
        if hook._tensor_name == "weight":
            break
    print(list(hook))
    print(model.state_dict().keys())
    prune.remove(module, 'weight')
    print([n for n, _ in module.named_parameters()])
    new_model = LeNet()
    for name, module in new_model.named_modules():
        if isinstance(module, torch.nn.Conv2d):
            prune.l1_unstructured(module, name='weight', amount=0.2)
        elif isinstance(module, torch.nn.Linear):
            prune.l1_unstructured(module, name='weight', amount=0.4)
    print(dict(new_model.named_buffers()).keys())
    model = LeNet()
    parameters_to_prune = (
        (model.conv1, 'weight'),
        (model.conv2, 'weight'),
        (model.fc1, 'weight'),
        (model.fc2, 'weight'),
        (model.fc3, 'weight'),
    )
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
    print(
        "Sparsity in conv1.weight: {:.2f}%".format(
            100. * float(torch.sum(model.conv1.weight == 0))
            / float(model.conv1.weight.nelement())
        )
    )
    print(
        "Global sparsity: {:.2f}%".format(
            100. * float(
                torch.sum(model.conv1.weight == 0)
                + torch.sum(model.conv2.weight == 0)
                + torch.sum(model.fc1.weight == 0)
                + torch.sum(model.fc2.weight == 0)
                + torch.sum(model.fc3.weight == 0)
            )
            / float(
                model.conv1.weight.nelement()
                + model.conv2.weight.nelement()
                + model.fc1.weight.nelement()
                + model.fc2.weight.nelement()
                + model.fc3.weight.nelement()
            )
        )
    )
    model = LeNet()
    foobar_unstructured(model.fc3, name='bias')
    print(model.fc3.bias_mask)
    x = torch.randn(2, 1, 28, 28)
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    print(model.fc3.bias_orig.grad[::2])
    prune.identity(model.fc2, "weight")
    print(prune.is_pruned(model), prune.is_pruned(nn.Linear(2, 2)))
    return loss.item()


if __name__ == "__main__":
    main()

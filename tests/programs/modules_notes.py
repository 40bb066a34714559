"""In the style of the "Modules" notes (docs/notes/modules.rst): MyLinear with nn.Parameter and
its named_parameters, a Sequential net, a DynamicNet with ModuleList/ModuleDict chosen by
act_type, the RunningMean module with register_buffer (persistent=False too), training-mode
flags via train()/eval() and ModalModule, state_dict/load_state_dict round trips, to(dtype)
and requires_grad_(False), apply(init) with nn.init, forward pre/post hooks and full backward
hooks, parameters registered with register_parameter and setattr, nn.ParameterList and
ParameterDict, named_modules/children, and skip_init-free initialization."""
import io

import fusetorch as torch
from fusetorch import nn
import fusetorch.nn.functional as F


class MyLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features))
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, input):
        return (input @ self.weight) + self.bias


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0 = MyLinear(4, 3)
        self.l1 = MyLinear(3, 1)

    def forward(self, x):
        x = self.l0(x)
        x = F.relu(x)
        x = self.l1(x)
        return x


class DynamicNet(nn.Module):
    def __init__(self, num_layers):
        super().__init__()
        self.linears = nn.ModuleList(
            [MyLinear(4, 4) for _ in range(num_layers)])
        self.activations = nn.ModuleDict({
            'relu': nn.ReLU(),
            'lrelu': nn.LeakyReLU()
        })
        self.final = MyLinear(4, 1)

    def forward(self, x, act):
        for linear in self.linears:
            x = linear(x)
            x = self.activations[act](x)
        x = self.final(x)
        return x


class ModalModule(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if self.training:
            # Add a constant only in training mode.
            return x + 1.
        else:
            return x


class RunningMean(nn.Module):
    def __init__(self, num_features, momentum=0.9):
        super().__init__()
        self.momentum = momentum
        self.register_buffer('mean', torch.zeros(num_features))

    def forward(self, x):
        self.mean = self.momentum * self.mean + (1.0 - self.momentum) * x
        return self.mean


class StatefulModule(nn.Module):
    def __init__(self):
        super().__init__()
        # Setting a nn.Parameter as an attribute of the module automatically registers the tensor
        # as a parameter of the module.
        self.param1 = nn.Parameter(torch.randn(2))

        # Alternative string-based way to register a parameter.
        self.register_parameter('param2', nn.Parameter(torch.randn(3)))

        # Reserves the "param3" attribute as a parameter, preventing it from being set to anything
        # except a parameter. "None" entries like this will not be present in the module's state_dict.
        self.register_parameter('param3', None)

        # Registers a list of parameters.
        self.param_list = nn.ParameterList([nn.Parameter(torch.randn(2)) for i in range(3)])

        # Registers a dictionary of parameters.
        self.param_dict = nn.ParameterDict({
            'foo': nn.Parameter(torch.randn(3)),
            'bar': nn.Parameter(torch.randn(4))
        })

        # Registers a persistent buffer (one that appears in the module's state_dict).
        self.register_buffer('buffer1', torch.randn(4), persistent=True)

        # Registers a non-persistent buffer (one that does not appear in the module's state_dict).
        self.register_buffer('buffer2', torch.randn(5), persistent=False)

        # Reserves the "buffer3" attribute as a buffer, preventing it from being set to anything
        # except a buffer. "None" entries like this will not be present in the module's state_dict.
        self.register_buffer('buffer3', None)

        # Adding a submodule registers its parameters as parameters of the module.
        self.linear = nn.Linear(2, 3)


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        m.bias.data.fill_(0.0)


def main():
    torch.manual_seed(0)
    m = MyLinear(4, 3)
    sample_input = torch.randn(4)
    print(m(sample_input))
    for parameter in m.named_parameters():
        print(parameter)

    net = nn.Sequential(
        MyLinear(4, 3),
        nn.ReLU(),
        MyLinear(3, 1)
    )
    print(net(sample_input))
    net = Net()
    for child in net.named_children():
        print(child)
    dynamic_net = DynamicNet(3)
    print(dynamic_net(sample_input, 'relu'))
    for parameter in dynamic_net.named_parameters():
        print(parameter[0], parameter[1].shape)
    print(list(dynamic_net.named_modules())[:3])

    # training
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-4, weight_decay=1e-2, momentum=0.9)
    for _ in range(10):
        input = torch.randn(4)
        output = net(input)
        loss = torch.abs(output)
        net.zero_grad()
        loss.backward()
        optimizer.step()
    print(net.l1.weight)
    m = ModalModule()
    x = torch.randn(4)
    print('training mode output: {}'.format(m(x)))
    m.eval()
    print('evaluation mode output: {}'.format(m(x)))

    m = RunningMean(4)
    for _ in range(10):
        input = torch.randn(4)
        m(input)
    print(m)
    print(m.mean)
    print(m.state_dict())
    m_loaded = RunningMean(4)
    m_loaded.load_state_dict(m.state_dict())
    print(m_loaded.mean)

    m = StatefulModule()
    print(list(m.named_parameters()))
    print(list(m.named_buffers()))
    print(m.state_dict().keys())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = StatefulModule()
    m2.load_state_dict(torch.load(buf, weights_only=True))
    assert torch.equal(m2.param_dict['foo'], m.param_dict['foo'])
    assert not torch.equal(m2.buffer2, m.buffer2)

    # device / dtype
    dynamic_net = DynamicNet(2)
    dynamic_net.to(dtype=torch.float64)
    print(dynamic_net(torch.randn(5, 4, dtype=torch.float64), 'relu').dtype)
    dynamic_net.requires_grad_(False)
    assert not any(p.requires_grad for p in dynamic_net.parameters())

    # initialization
    m = nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 1))
    m.apply(init_weights)
    print(m[0].bias)

    # hooks
    def forward_pre_hook(m, inputs):
        input = inputs[0]
        return input + 1.

    def forward_hook(m, inputs, output):
        return output + inputs[0]

    def backward_hook(m, grad_inputs, grad_outputs):
        new_grad_inputs = [torch.ones_like(gi) * 42. for gi in grad_inputs]
        return new_grad_inputs

    m = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    m(x).sum().backward()
    print('x.grad without hooks: {}'.format(x.grad))
    forward_pre_hook_handle = m.register_forward_pre_hook(forward_pre_hook)
    forward_hook_handle = m.register_forward_hook(forward_hook)
    m.register_full_backward_hook(backward_hook)
    x.grad.zero_()
    m(x).sum().backward()
    print('x.grad with all three hooks: {}'.format(x.grad))
    assert torch.all(x.grad == 42.)
    forward_pre_hook_handle.remove()
    forward_hook_handle.remove()
    return loss.item()


if __name__ == "__main__":
    main()

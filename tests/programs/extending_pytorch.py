"""In the style of the "Extending PyTorch" notes (and the double backward tutorial): custom
autograd.Functions in the setup_context style (LinearFunction with a defaulted bias,
MulConstant with a non-tensor argument, MyCube returning its derivative as a second output for
double backward), an old-style Function with @once_differentiable, gradcheck of each, and a
custom Linear Module with extra_repr built on LinearFunction."""
import numpy as np
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.autograd import Function, gradcheck
from fusetorch.autograd.function import once_differentiable


class LinearFunction(Function):
    @staticmethod
    def forward(input, weight, bias=None):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class MulConstant(Function):
    @staticmethod
    def forward(tensor, constant):
        return tensor * constant

    @staticmethod
    def setup_context(ctx, inputs, output):
        tensor, constant = inputs
        ctx.constant = constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


class MyCube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        result = x ** 3
        dx = 3 * x ** 2
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        result = grad_output * dx + grad_dx * 6 * x
        return result


class MySquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


class Linear(nn.Module):
    def __init__(self, input_features, output_features, bias=True):
        super().__init__()
        self.input_features = input_features
        self.output_features = output_features
        self.weight = nn.Parameter(torch.empty(output_features, input_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(output_features))
        else:
            self.register_parameter('bias', None)
        self.weight.data.uniform_(-0.1, 0.1)
        if self.bias is not None:
            self.bias.data.uniform_(-0.1, 0.1)

    def forward(self, input):
        return LinearFunction.apply(input, self.weight, self.bias)

    def extra_repr(self):
        return 'input_features={}, output_features={}, bias={}'.format(
            self.input_features, self.output_features, self.bias is not None
        )


def main():
    torch.manual_seed(0)
    linear = LinearFunction.apply
    input = (torch.randn(6, 5, dtype=torch.double, requires_grad=True),
             torch.randn(4, 5, dtype=torch.double, requires_grad=True))
    test = gradcheck(linear, input, eps=1e-6, atol=1e-4)
    assert test
    x = torch.randn(3, dtype=torch.double, requires_grad=True)
    assert gradcheck(lambda t: MulConstant.apply(t, 2.5), (x,))
    y = MyCube.apply(x)[0]
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    assert torch.allclose(g, 3 * x ** 2)
    assert gradcheck(lambda t: MyCube.apply(t)[0], (x,))
    m = Linear(4, 3)
    assert repr(m) == "Linear(input_features=4, output_features=3, bias=True)"
    out = m(torch.randn(5, 4))
    out.sum().backward()
    assert m.weight.grad.shape == (3, 4) and m.bias.grad.shape == (3,)
    s = MySquare.apply(x)
    g, = torch.autograd.grad(s.sum(), x, create_graph=True)
    try:
        g.sum().backward()
    except RuntimeError as e:
        print("RuntimeError:", e)
    assert out.grad_fn.name() == "LinearFunctionBackward"
    return out.sum().item()


if __name__ == "__main__":
    main()

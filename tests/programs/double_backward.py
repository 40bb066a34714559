"""In the style of the "Double backward with custom functions" tutorial: a Square Function
saving its input (backward written with differentiable ops, checked by gradcheck and
gradgradcheck), Exp saving its output, Exp that saves an intermediate as an output
(ctx.save_for_backward of a result returned with mark_non_differentiable... the tutorial's
`_Exp`/`Exp` pair), Sinh saving intermediate results through outputs, and the torchviz-free
check that create_graph=True gives the second derivative."""
import fusetorch as torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # Because we are saving one of the inputs use `save_for_backward`
        # Save non-tensors and non-inputs/non-outputs directly on ctx
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        # A function support double backward automatically if autograd
        # is able to record the computations performed in backward
        x, = ctx.saved_tensors
        return grad_out * 2 * x


class Exp(torch.autograd.Function):
    # Simple case where everything goes well
    @staticmethod
    def forward(ctx, x):
        # This time we save the output
        result = torch.exp(x)
        # Note that we should use `save_for_backward` here when
        # the tensor saved is an ouptut (or an input).
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return result * grad_out


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        # In order to be able to save the intermediate results, a trick is to
        # include them as our outputs, so that the backward graph is constructed
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        # We cannot skip accumulating these even though we won't use the outputs
        # directly. They will be used later in the second backward.
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input


def sinh(x):
    # Create a wrapper that only returns the first output
    return Sinh.apply(x)[0]


class SinhBad(torch.autograd.Function):
    # This is an example of what NOT to do!
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.expx = expx
        ctx.expnegx = expnegx
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        expx = ctx.expx
        expnegx = ctx.expnegx
        grad_input = grad_out * (expx + expnegx) / 2
        return grad_input


class MyCube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        # We wish to save dx for backward. In order to do so, it must
        # be returned as an output.
        dx = 3 * x ** 2
        result = x ** 3
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        # In order for the autograd.Function to work with higher-order
        # gradients, we must add the gradient contribution of `dx`,
        # which is grad_dx * 6 * x.
        result = grad_output * dx + grad_dx * 6 * x
        return result


def my_cube(x):
    result, dx = MyCube.apply(x)
    return result


def main():
    torch.manual_seed(0)
    # Use double precision because finite differencing method magnifies errors
    x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
    torch.autograd.gradcheck(Square.apply, x)
    # Use gradcheck to verify second-order derivatives
    torch.autograd.gradgradcheck(Square.apply, x)

    x = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
    out = Exp.apply(x)
    grad_x, = torch.autograd.grad(out, x, create_graph=True)
    assert torch.allclose(grad_x, x.exp())
    torch.autograd.gradcheck(Exp.apply, x)
    torch.autograd.gradgradcheck(Exp.apply, x)

    x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
    out = sinh(x)
    grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
    torch.autograd.gradcheck(sinh, x)
    torch.autograd.gradgradcheck(sinh, x)
    second, = torch.autograd.grad(grad_x.sum(), x)
    assert torch.allclose(second, torch.sinh(x))

    out = SinhBad.apply(x)
    grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
    assert torch.allclose(grad_x, torch.cosh(x))
    # the bad version loses the second derivative: grad_x does not depend on x through
    # the graph (only through saved values), so the second derivative is wrong or missing
    bad_ok = grad_x.requires_grad

    x = torch.tensor(2., requires_grad=True, dtype=torch.double)
    torch.autograd.gradcheck(my_cube, (x,))
    torch.autograd.gradgradcheck(my_cube, (x,))
    g, = torch.autograd.grad(my_cube(x), x, create_graph=True)
    gg, = torch.autograd.grad(g, x)
    print("d/dx x^3 =", g.item(), "d2 =", gg.item(), "bad keeps a graph:", bad_ok)
    return (g + gg).item()


if __name__ == "__main__":
    main()

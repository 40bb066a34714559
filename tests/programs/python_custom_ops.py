"""In the style of the "Python custom operators" tutorial: torch.library.custom_op wrapping
numpy code (x.numpy(force=True), torch.from_numpy(...).to(x.device)), register_fake with
torch.empty_like, register_autograd with setup_context saving what backward needs (a
non-tensor argument on ctx), a mutable operator declared by mutates_args={"out"} writing into
its argument, calls through torch.ops.mylib, gradcheck of the registered formula, and
torch.library.opcheck over a list of sample inputs (with and without requires_grad)."""
import numpy as np

import fusetorch as torch
from fusetorch import Tensor


@torch.library.custom_op("mylib::numpy_mul", mutates_args=())
def numpy_mul(x: Tensor, y: float) -> Tensor:
    x_np = x.numpy(force=True)
    z_np = x_np * y
    return torch.from_numpy(z_np).to(x.device)


@numpy_mul.register_fake
def _(x, y):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    y, = inputs[1:]
    ctx.y = y


def backward(ctx, grad):
    return grad * ctx.y, None


numpy_mul.register_autograd(backward, setup_context=setup_context)


@torch.library.custom_op("mylib::numpy_sin", mutates_args=())
def numpy_sin(x: Tensor) -> Tensor:
    x_np = x.cpu().numpy()
    y_np = np.sin(x_np)
    return torch.from_numpy(y_np).to(device=x.device)


@numpy_sin.register_fake
def _(x):
    return torch.empty_like(x)


def sin_setup_context(ctx, inputs, output):
    x, = inputs
    ctx.save_for_backward(x)


def sin_backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad * x.cos()


numpy_sin.register_autograd(sin_backward, setup_context=sin_setup_context)


@torch.library.custom_op("mylib::numpy_sin_out", mutates_args={"out"})
def numpy_sin_out(x: Tensor, out: Tensor) -> None:
    assert x.device == out.device
    x_np = x.numpy()
    out_np = out.numpy()
    np.sin(x_np, out=out_np)


def main():
    torch.manual_seed(0)
    sample_inputs = [
        (torch.randn(3), 3.14),
        (torch.randn(1, 10, requires_grad=True), 1.234),
    ]
    for args in sample_inputs:
        result = torch.library.opcheck(numpy_mul, args)
        assert all(v == "SUCCESS" for v in result.values()), result
    x = torch.randn(3, requires_grad=True, dtype=torch.double)
    assert torch.autograd.gradcheck(lambda t: numpy_mul(t, 2.5), (x,))
    assert torch.autograd.gradcheck(numpy_sin, (x,))
    for example in ([torch.randn(3)], [torch.randn(2, 3, requires_grad=True)]):
        torch.library.opcheck(numpy_sin, example)

    x = torch.randn(3)
    out = torch.empty(3)
    numpy_sin_out(x, out)
    assert torch.allclose(out, torch.sin(x))
    torch.library.opcheck(numpy_sin_out, (torch.randn(3), torch.empty(3)))
    y = torch.ops.mylib.numpy_sin(x)
    assert torch.allclose(y, torch.sin(x))

    # a custom op inside a model that trains
    w = torch.randn(4, 1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    data, target = torch.randn(8, 4), torch.randn(8, 1)
    for _ in range(3):
        loss = (numpy_mul(numpy_sin(data @ w), 2.0) - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(numpy_mul, loss.item())
    return loss.item()


if __name__ == "__main__":
    main()

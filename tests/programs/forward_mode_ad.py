"""In the style of the forward-mode automatic differentiation tutorial: dual tensors through
fwAD.dual_level / make_dual / unpack_dual, a Module's parameters swapped for duals (delattr,
setattr) and through torch.func.functional_call, a custom autograd.Function with a jvp
staticmethod (checked with gradcheck(check_forward_ad=True, check_backward_ad=False)), and
torch.func.jvp over a dict of parameters."""
import fusetorch as torch
import fusetorch.autograd.forward_ad as fwAD
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.func import functional_call


def fn(x, y):
    return x ** 2 + y ** 2


class Fn2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        del ctx.result
        return gO


def main():
    torch.manual_seed(0)
    primal = torch.randn(10, 10)
    tangent = torch.randn(10, 10)
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        plain_tensor = torch.randn(10, 10)
        dual_output = fn(dual_input, plain_tensor)
        jvp = fwAD.unpack_dual(dual_output).tangent
    assert torch.allclose(jvp, 2 * primal * tangent)
    assert fwAD.unpack_dual(dual_output).tangent is None

    model = nn.Linear(5, 5)
    input = torch.randn(16, 5)
    params = {name: p for name, p in model.named_parameters()}
    tangents = {name: torch.rand_like(p) for name, p in params.items()}
    with fwAD.dual_level():
        for name, p in params.items():
            delattr(model, name)
            setattr(model, name, fwAD.make_dual(p, tangents[name]))
        out = model(input)
        jvp = fwAD.unpack_dual(out).tangent
    assert jvp.shape == (16, 5)

    model = nn.Linear(5, 5)
    dual_params = {}
    with fwAD.dual_level():
        for name, p in params.items():
            dual_params[name] = fwAD.make_dual(p, tangents[name])
        out = functional_call(model, dual_params, input)
        jvp2 = fwAD.unpack_dual(out).tangent
    assert torch.allclose(jvp, jvp2)

    x = torch.tensor([1., 2.], dtype=torch.double)
    t = torch.tensor([0.5, -1.], dtype=torch.double)
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(x, t)
        dual_output = Fn2.apply(dual_input)
        jvp = fwAD.unpack_dual(dual_output).tangent
    assert torch.allclose(jvp, t * x.exp())
    from fusetorch.autograd import gradcheck
    primal = torch.randn(3, 3, dtype=torch.double, requires_grad=True)
    assert gradcheck(Fn2.apply, (primal,), check_forward_ad=True, check_backward_ad=False,
                     check_undefined_grad=False, check_batched_grad=False)

    import fusetorch.func as ft
    primal0 = torch.randn(10, 10)
    tangent0 = torch.randn(10, 10)
    primal1 = torch.randn(10, 10)
    tangent1 = torch.randn(10, 10)

    def fn2(x, y):
        return x ** 2 + y ** 2

    primal_out, tangent_out = ft.jvp(fn2, (primal0, primal1), (tangent0, tangent1))
    assert torch.allclose(tangent_out, 2 * primal0 * tangent0 + 2 * primal1 * tangent1)
    model = nn.Linear(5, 5)
    func, params = ft.functional_call, dict(model.named_parameters())

    def func_params_only(p):
        return ft.functional_call(model, p, input)

    model_output, jvp_out = ft.jvp(func_params_only, (params,), (tangents,))
    assert jvp_out.shape == model_output.shape == (16, 5)
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor([0.5, 1.5]), torch.tensor([1.0, 1.0]))
        y = F.softplus(d).sum() + torch.tanh(d).mean() + F.gelu(d)[0] + d.sigmoid().prod()
        print(fwAD.unpack_dual(y))
        u = fwAD.unpack_dual(y)
        print(u.primal, u.tangent)
    return jvp_out.sum().item()


if __name__ == "__main__":
    main()

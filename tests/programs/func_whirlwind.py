"""In the style of the "torch.func whirlwind tour" tutorial: grad of torch.sin (and grad of
grad), vjp/jvp, vmap over a model's forward with in_dims, vmap of functional_call over stacked
parameters, jacrev with argnums, hessian, jacfwd, and a model written as a function of its
parameters (functional_call with dict(model.named_parameters())), per-sample gradients with
vmap(grad(compute_loss), in_dims=(None, 0, 0)), and stack_module_state on real modules."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.func import (functional_call, grad, hessian, jacfwd, jacrev, jvp,
                            stack_module_state, vjp, vmap)


def main():
    torch.manual_seed(0)
    x = torch.randn([])
    cos_x = grad(lambda x: torch.sin(x))(x)
    assert torch.allclose(cos_x, x.cos())
    neg_sin_x = grad(grad(lambda x: torch.sin(x)))(x)
    assert torch.allclose(neg_sin_x, -x.sin())

    batch_size, feature_size = 3, 5
    weights = torch.randn(feature_size, requires_grad=True)

    def model(feature_vec):
        # Very simple linear model with activation
        assert feature_vec.dim() == 1
        return feature_vec.dot(weights).relu()

    examples = torch.randn(batch_size, feature_size)
    result = torch.vmap(model)(examples)
    print(result.shape)

    x = torch.randn(5)
    y = torch.randn(5)
    f = lambda x, y: (x.sin() + y.cos()).sum()
    out, vjp_fn = vjp(f, x, y)
    gx, gy = vjp_fn(torch.tensor(1.0))
    assert torch.allclose(gx, x.cos()) and torch.allclose(gy, -y.sin())

    f = lambda x: x.sin()
    out, jvp_out = jvp(f, (x,), (torch.ones(5),))
    assert torch.allclose(jvp_out, x.cos())

    x = torch.randn(5)
    jacobian = jacrev(torch.sin)(x)
    expected = torch.diag(torch.cos(x))
    assert torch.allclose(jacobian, expected)

    def f(x, y):
        return x + y ** 2
    x, y = torch.randn(5), torch.randn(5)
    jacobian = jacrev(f, argnums=1)(x, y)
    expected = torch.diag(2 * y)
    assert torch.allclose(jacobian, expected)
    jac_x, jac_y = jacrev(f, argnums=(0, 1))(x, y)
    assert torch.allclose(jac_x, torch.eye(5))
    assert torch.allclose(jac_fwd := jacfwd(f, argnums=1)(x, y), expected)

    def f(x):
        return x.sin().sum()
    x = torch.randn(5)
    hess = hessian(f)(x)
    assert torch.allclose(hess, torch.diag(-x.sin()))
    hess2 = jacfwd(jacrev(f))(x)
    assert torch.allclose(hess, hess2)

    # per-sample gradients of a module
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    params = {k: v.detach() for k, v in net.named_parameters()}

    def compute_loss(params, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(net, params, (batch,))
        loss = F.cross_entropy(predictions, targets)
        return loss

    data = torch.randn(6, 4)
    targets = torch.randint(0, 3, (6,))
    ft_compute_sample_grad = vmap(grad(compute_loss), in_dims=(None, 0, 0))
    ft_per_sample_grads = ft_compute_sample_grad(params, data, targets)
    for k, g in ft_per_sample_grads.items():
        manual = torch.stack([torch.autograd.grad(compute_loss(dict(net.named_parameters()),
                                                               data[i], targets[i]),
                                                  dict(net.named_parameters())[k])[0]
                              for i in range(6)])
        assert torch.allclose(g, manual, atol=1e-6), k

    # an ensemble through stack_module_state
    models = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)) for _ in range(3)]
    ens_params, ens_buffers = stack_module_state(models)
    base = models[0]

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    minibatch = torch.randn(6, 4)
    preds = vmap(fmodel, in_dims=(0, 0, None))(ens_params, ens_buffers, minibatch)
    for i, m in enumerate(models):
        assert torch.allclose(preds[i], m(minibatch), atol=1e-6)
    print(preds.shape)
    return preds.sum().item()


if __name__ == "__main__":
    main()

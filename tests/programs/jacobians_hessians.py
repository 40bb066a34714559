"""In the style of the torch.func tutorial "Jacobians, Hessians, hvp, vhp, and more": predict =
F.linear(x, weight, bias).tanh(); the Jacobian row by row with torch.autograd.grad against
torch.eye unit vectors, then jacrev(predict, argnums=2), jacrev with argnums=(0, 1), jacfwd,
hessian and jacfwd(jacfwd(...)), a batch Jacobian by vmap(jacrev(...), in_dims=(None, None,
0)) and by summing the outputs over the batch (movedim), and hvp as jvp(grad(f), ...) compared
with vjp of grad. Each is checked against the closed forms (1 - y^2) W and its derivative,
computed in float64 numpy."""
import numpy as np

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def main():
    torch.manual_seed(0)
    D = 6
    weight = torch.randn(D, D)
    bias = torch.randn(D)
    x = torch.randn(D)

    def compute_jac(xp):
        jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
                         for vec in unit_vectors]
        return torch.stack(jacobian_rows)

    xp = x.clone().requires_grad_()
    unit_vectors = torch.eye(D)
    jacobian = compute_jac(xp)
    print(jacobian.shape)
    print(jacobian[0])  # show first row

    W, b, x64 = (t.numpy().astype(np.float64) for t in (weight, bias, x))
    y = np.tanh(W @ x64 + b)
    ref_x = (1 - y ** 2)[:, None] * W                                   # dy_i/dx_j
    ref_w = np.einsum("i,ij,k->ijk", 1 - y ** 2, np.eye(D), x64)        # dy_i/dW_jk
    ref_b = np.diag(1 - y ** 2)
    # d2y_i/dx_j dx_k = -2 y_i (1 - y_i^2) W_ij W_ik
    ref_h = np.einsum("i,ij,ik->ijk", -2 * y * (1 - y ** 2), W, W)

    def close(t, ref, tol=1e-4):
        np.testing.assert_allclose(t.detach().numpy(), ref, rtol=tol, atol=tol)

    close(jacobian, ref_x)
    ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(ft_jacobian, jacobian)
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    close(ft_jac_weight, ref_w)
    close(ft_jac_bias, ref_b)
    jacfwd_jac = jacfwd(predict, argnums=2)(weight, bias, x)
    close(jacfwd_jac, ref_x)

    hess_api = hessian(predict, argnums=2)(weight, bias, x)
    hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
    hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
    print(hess_api.shape)
    for h in (hess_api, hess_fwdfwd, hess_revrev):
        close(h, ref_h)

    batch_size = 4
    Dout = 3
    weight = torch.randn(Dout, D)
    bias = torch.randn(Dout)
    x = torch.randn(batch_size, D)
    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    batch_jacobian0 = compute_batch_jacobian(weight, bias, x)

    def predict_with_output_summed(weight, bias, x):
        return predict(weight, bias, x).sum(0)

    batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
    assert batch_jacobian0.shape == (batch_size, Dout, D)
    assert torch.allclose(batch_jacobian0, batch_jacobian1)
    W, b, X = (t.numpy().astype(np.float64) for t in (weight, bias, x))
    Y = np.tanh(X @ W.T + b)
    close(batch_jacobian0, (1 - Y ** 2)[:, :, None] * W[None])
    compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
    batch_hess = compute_batch_hessian(weight, bias, x)
    assert batch_hess.shape == (batch_size, Dout, D, D)
    close(batch_hess, np.einsum("bi,ij,ik->bijk", -2 * Y * (1 - Y ** 2), W, W))

    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def hvp_revrev(f, primals, tangents):
        _, vjp_fn = vjp(grad(f), *primals)
        return vjp_fn(*tangents)

    def f(x):
        return x.sin().sum()

    x = torch.randn(2048)
    tangent = torch.randn(2048)
    result = hvp(f, (x,), (tangent,))
    result_revrev = hvp_revrev(f, (x,), (tangent,))
    assert torch.allclose(result, result_revrev[0])
    close(result, -np.sin(x.numpy().astype(np.float64)) * tangent.numpy())
    return float(hess_api.abs().sum())


if __name__ == "__main__":
    main()

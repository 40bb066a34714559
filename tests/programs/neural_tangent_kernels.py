"""In the style of the torch.func tutorial on neural tangent kernels: a CNN called through
functional_call on a dict of detached parameters, the empirical NTK by Jacobian contraction
(vmap(jacrev(f), (None, 0)) over the batch, einsum 'Naf,Mbf->NMab' and its trace) and by
NTK-vector products (vjp, then jvp of the pulled-back cotangents, vmapped over an identity
basis and over both batches), the two checked against each other."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.func import functional_call, vmap, vjp, jvp, jacrev

device = 'cpu'


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, (3, 3))
        self.conv2 = nn.Conv2d(4, 4, (3, 3))
        self.conv3 = nn.Conv2d(4, 4, (3, 3))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.conv3(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute='full'):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]
    if compute == 'full':
        einsum_expr = 'Naf,Mbf->NMab'
    elif compute == 'trace':
        einsum_expr = 'Naf,Maf->NM'
    elif compute == 'diagonal':
        einsum_expr = 'Naf,Maf->NMa'
    else:
        assert False
    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    result = result.sum(0)
    return result


def empirical_ntk_ntk_vps(func, params, x1, x2, compute='full'):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    if compute == 'full':
        return result
    if compute == 'trace':
        return torch.einsum('NMKK->NM', result)
    if compute == 'diagonal':
        return torch.einsum('NMKK->NMK', result)


def main():
    torch.manual_seed(0)
    x_train = torch.randn(3, 3, 8, 8, device=device)
    x_test = torch.randn(2, 3, 8, 8, device=device)
    net = CNN().to(device)
    net.eval()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
    print(result.shape)
    result_trace = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, 'trace')
    print(result_trace.shape)
    result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_train[:2], x_test[:1])
    result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params, x_train[:2], x_test[:1])
    assert torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, atol=1e-5)
    return result_trace.sum().item()


if __name__ == "__main__":
    main()

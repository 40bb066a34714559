"""In the style of msurtsukov's "Neural ODEs" notebook (the adjoint method written by hand): an
ODEF module whose `forward_with_grad` calls torch.autograd.grad(..., allow_unused=True) for the
vector-Jacobian products with the state, time and flattened parameters, `flatten_parameters`
with torch.cat, an Euler `ode_solve`, ODEAdjoint as an autograd.Function whose backward
integrates the augmented system backwards in time (`ctx.save_for_backward`, `torch.set_grad_
enabled(True)` inside backward), NeuralODE as a Module; the adjoint gradients are compared with
plain backpropagation through the same Euler steps, then a few Adam steps fit a spiral."""
import math

import numpy as np

import fusetorch as torch
from fusetorch import Tensor, nn


def ode_solve(z0, t0, t1, f):
    """Simplest Euler ODE initial value solver"""
    h_max = 0.05
    n_steps = math.ceil((abs(t1 - t0) / h_max).max().item())
    h = (t1 - t0) / n_steps
    t = t0
    z = z0
    for i_step in range(n_steps):
        z = z + h * f(z, t)
        t = t + h
    return z


class ODEF(nn.Module):
    def forward_with_grad(self, z, t, grad_outputs):
        """Compute f and a df/dz, a df/dp, a df/dt"""
        batch_size = z.shape[0]
        out = self.forward(z, t)
        a = grad_outputs
        adfdz, adfdt, *adfdp = torch.autograd.grad(
            (out,), (z, t) + tuple(self.parameters()), grad_outputs=(a),
            allow_unused=True, retain_graph=True)
        # grad method automatically sums gradients for batch items, we have to expand them back
        if adfdp is not None:
            adfdp = torch.cat([p_grad.flatten() for p_grad in adfdp]).unsqueeze(0)
            adfdp = adfdp.expand(batch_size, -1) / batch_size
        if adfdt is not None:
            adfdt = adfdt.expand(batch_size, 1) / batch_size
        return out, adfdz, adfdt, adfdp

    def flatten_parameters(self):
        p_shapes = []
        flat_parameters = []
        for p in self.parameters():
            p_shapes.append(p.size())
            flat_parameters.append(p.flatten())
        return torch.cat(flat_parameters)


class ODEAdjoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z0, t, flat_parameters, func):
        assert isinstance(func, ODEF)
        bs, *z_shape = z0.size()
        time_len = t.size(0)
        with torch.no_grad():
            z = torch.zeros(time_len, bs, *z_shape).to(z0)
            z[0] = z0
            for i_t in range(time_len - 1):
                z0 = ode_solve(z0, t[i_t], t[i_t + 1], func)
                z[i_t + 1] = z0
        ctx.func = func
        ctx.save_for_backward(t, z.clone(), flat_parameters)
        return z

    @staticmethod
    def backward(ctx, dLdz):
        """dLdz shape: time_len, batch_size, *z_shape"""
        func = ctx.func
        t, z, flat_parameters = ctx.saved_tensors
        time_len, bs, *z_shape = z.size()
        n_dim = int(np.prod(z_shape))
        n_params = flat_parameters.size(0)

        # Dynamics of augmented system to be calculated backwards in time
        def augmented_dynamics(aug_z_i, t_i):
            """tensors here are temporal slices
            t_i - is tensor with size: bs, 1
            aug_z_i - is tensor with size: bs, n_dim*2 + n_params + 1"""
            z_i, a = aug_z_i[:, :n_dim], aug_z_i[:, n_dim:2 * n_dim]  # ignore parameters, time
            # Unflatten z and a
            z_i = z_i.view(bs, *z_shape)
            a = a.view(bs, *z_shape)
            with torch.set_grad_enabled(True):
                t_i = t_i.detach().requires_grad_(True)
                z_i = z_i.detach().requires_grad_(True)
                func_eval, adfdz, adfdt, adfdp = func.forward_with_grad(z_i, t_i,
                                                                         grad_outputs=a)
                adfdz = adfdz.to(z_i) if adfdz is not None else torch.zeros(bs, *z_shape).to(z_i)
                adfdp = adfdp.to(z_i) if adfdp is not None else torch.zeros(bs, n_params).to(z_i)
                adfdt = adfdt.to(z_i) if adfdt is not None else torch.zeros(bs, 1).to(z_i)
            # Flatten f and adfdz
            func_eval = func_eval.view(bs, n_dim)
            adfdz = adfdz.view(bs, n_dim)
            return torch.cat((func_eval, -adfdz, -adfdp, -adfdt), dim=1)

        dLdz = dLdz.view(time_len, bs, n_dim)  # flatten dLdz for convenience
        with torch.no_grad():
            # Create placeholders for output gradients
            # Prev computed backwards adjoints to be adjusted by direct gradients
            adj_z = torch.zeros(bs, n_dim).to(dLdz)
            adj_p = torch.zeros(bs, n_params).to(dLdz)
            # In contrast to z and p we need to return gradients for all times
            adj_t = torch.zeros(time_len, bs, 1).to(dLdz)
            for i_t in range(time_len - 1, 0, -1):
                z_i = z[i_t]
                t_i = t[i_t]
                f_i = func(z_i, t_i).view(bs, n_dim)
                # Compute direct gradients
                dLdz_i = dLdz[i_t]
                dLdt_i = torch.bmm(torch.transpose(dLdz_i.unsqueeze(-1), 1, 2),
                                   f_i.unsqueeze(-1))[:, 0]
                # Adjusting adjoints with direct gradients
                adj_z += dLdz_i
                adj_t[i_t] = adj_t[i_t] - dLdt_i
                # Pack augmented variable
                aug_z = torch.cat((z_i.view(bs, n_dim), adj_z, torch.zeros(bs, n_params).to(z),
                                   adj_t[i_t]), dim=-1)
                # Solve augmented system backwards
                aug_ans = ode_solve(aug_z, t_i, t[i_t - 1], augmented_dynamics)
                # Unpack solved backwards augmented system
                adj_z[:] = aug_ans[:, n_dim:2 * n_dim]
                adj_p[:] += aug_ans[:, 2 * n_dim:2 * n_dim + n_params]
                adj_t[i_t - 1] = aug_ans[:, 2 * n_dim + n_params:]
                del aug_z, aug_ans
            # Adjust 0 time adjoint with direct gradients
            # Compute direct gradients
            dLdz_0 = dLdz[0]
            dLdt_0 = torch.bmm(torch.transpose(dLdz_0.unsqueeze(-1), 1, 2),
                               f_i.unsqueeze(-1))[:, 0]
            # Adjust adjoints
            adj_z += dLdz_0
            adj_t[0] = adj_t[0] - dLdt_0
        return adj_z.view(bs, *z_shape), adj_t, adj_p, None


class NeuralODE(nn.Module):
    def __init__(self, func):
        super(NeuralODE, self).__init__()
        assert isinstance(func, ODEF)
        self.func = func

    def forward(self, z0, t=Tensor([0., 1.]), return_whole_sequence=False):
        t = t.to(z0)
        z = ODEAdjoint.apply(z0, t, self.func.flatten_parameters(), self.func)
        if return_whole_sequence:
            return z
        else:
            return z[-1]


class LinearODEF(ODEF):
    def __init__(self, W):
        super(LinearODEF, self).__init__()
        self.lin = nn.Linear(2, 2, bias=False)
        self.lin.weight = nn.Parameter(W)

    def forward(self, x, t):
        return self.lin(x)


class NNODEF(ODEF):
    def __init__(self, in_dim, hid_dim, time_invariant=False):
        super(NNODEF, self).__init__()
        self.time_invariant = time_invariant
        if time_invariant:
            self.lin1 = nn.Linear(in_dim, hid_dim)
        else:
            self.lin1 = nn.Linear(in_dim + 1, hid_dim)
        self.lin2 = nn.Linear(hid_dim, hid_dim)
        self.lin3 = nn.Linear(hid_dim, in_dim)
        self.elu = nn.ELU(inplace=True)

    def forward(self, x, t):
        if not self.time_invariant:
            x = torch.cat((x, t.expand(x.shape[0], 1)), dim=-1)
        h = self.elu(self.lin1(x))
        h = self.elu(self.lin2(h))
        out = self.lin3(h)
        return out


def main():
    torch.manual_seed(0)
    # a linear ODE: z(T) = expm(W T) z0 up to Euler's error, and adjoint gradients equal to
    # backpropagation through the same Euler steps (up to the backward solve's error)
    W = torch.tensor([[-0.1, -1.0], [1.0, -0.1]])
    func = LinearODEF(W.clone())
    ode = NeuralODE(func)
    z0 = torch.tensor([[0.6, 0.3]], requires_grad=True)
    t = torch.tensor([0.0, 0.5, 1.0])
    zs = ode(z0, t, return_whole_sequence=True)
    assert zs.shape == (3, 1, 2)
    exact = torch.linalg.matrix_exp(W) @ z0[0].detach()
    assert torch.allclose(zs[-1, 0], exact, atol=0.05)
    zs.sum().backward()
    adj_w, adj_z0 = func.lin.weight.grad.clone(), z0.grad.clone()
    # backpropagation through the Euler steps
    Wb = W.clone().requires_grad_()
    zb = z0.detach().clone().requires_grad_()
    total, z = zb.sum() * 0 + zb.sum(), zb
    for t0, t1 in ((0.0, 0.5), (0.5, 1.0)):
        z = ode_solve(z, torch.tensor(t0), torch.tensor(t1), lambda x, tt: x @ Wb.T)
        total = total + z.sum()
    total.backward()
    assert torch.allclose(adj_z0, zb.grad, atol=0.05), (adj_z0, zb.grad)
    assert torch.allclose(adj_w, Wb.grad, atol=0.05), (adj_w, Wb.grad)

    # fit a spiral's trajectory with a small network
    func = NNODEF(2, 16, time_invariant=True)
    ode = NeuralODE(func)
    times = torch.linspace(0, 1, 5)
    target = ode_solve(torch.tensor([[0.6, 0.3]]).expand(4, 2), 0.0 * times[0], times[-1],
                       lambda x, tt: x @ W.T).detach()
    optimizer = torch.optim.Adam(ode.parameters(), lr=0.01)
    for step in range(2):
        z_p = ode(torch.tensor([[0.6, 0.3]]).expand(4, 2).contiguous(), times)
        loss = ((z_p - target) ** 2).sum(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()

"""In the style of greydanus/hamiltonian-nn (hnn.py, nn_models.py, spring task): MLP with
orthogonal init and a choose_nonlinearity helper, HNN with a permutation tensor M
(torch.eye then torch.cat([M[n//2:], -M[:n//2]])), the time derivative as
torch.autograd.grad(F2.sum(), x, create_graph=True)[0] @ M.t(), the L2 loss between predicted
and true derivatives, Adam with weight decay, and integrating the learned field with a few
Euler steps. The mass-spring data are generated in numpy as the task's get_dataset does."""
import numpy as np

import fusetorch as torch


def choose_nonlinearity(name):
    nl = None
    if name == 'tanh':
        nl = torch.tanh
    elif name == 'relu':
        nl = torch.relu
    elif name == 'sigmoid':
        nl = torch.sigmoid
    elif name == 'softplus':
        nl = torch.nn.functional.softplus
    elif name == 'selu':
        nl = torch.nn.functional.selu
    elif name == 'elu':
        nl = torch.nn.functional.elu
    elif name == 'swish':
        nl = lambda x: x * torch.sigmoid(x)
    else:
        raise ValueError("nonlinearity not recognized")
    return nl


class MLP(torch.nn.Module):
    '''Just a salt-of-the-earth MLP'''
    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity='tanh'):
        super(MLP, self).__init__()
        self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
        self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)

        for l in [self.linear1, self.linear2, self.linear3]:
            torch.nn.init.orthogonal_(l.weight) # use a principled initialization

        self.nonlinearity = choose_nonlinearity(nonlinearity)

    def forward(self, x, separate_fields=False):
        h = self.nonlinearity( self.linear1(x) )
        h = self.nonlinearity( self.linear2(h) )
        return self.linear3(h)


class HNN(torch.nn.Module):
    '''Learn arbitrary vector fields that are sums of conservative and solenoidal fields'''
    def __init__(self, input_dim, differentiable_model, field_type='solenoidal',
                    baseline=False, assume_canonical_coords=True):
        super(HNN, self).__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model
        self.assume_canonical_coords = assume_canonical_coords
        self.M = self.permutation_tensor(input_dim) # Levi-Civita permutation tensor
        self.field_type = field_type

    def forward(self, x):
        # traditional forward pass
        if self.baseline:
            return self.differentiable_model(x)

        y = self.differentiable_model(x)
        assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
        return y.split(1,1)

    def rk4_time_derivative(self, x, dt):
        return None

    def time_derivative(self, x, t=None, separate_fields=False):
        '''NEURAL ODE-STLE VECTOR FIELD'''
        if self.baseline:
            return self.differentiable_model(x)

        '''NEURAL HAMILTONIAN-STLE VECTOR FIELD'''
        F1, F2 = self.forward(x) # traditional forward pass

        conservative_field = torch.zeros_like(x) # start out with both components set to 0
        solenoidal_field = torch.zeros_like(x)

        if self.field_type != 'solenoidal':
            dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[0] # gradients for conservative field
            conservative_field = dF1 @ torch.eye(*self.M.shape)

        if self.field_type != 'conservative':
            dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[0] # gradients for solenoidal field
            solenoidal_field = dF2 @ self.M.t()

        if separate_fields:
            return [conservative_field, solenoidal_field]

        return conservative_field + solenoidal_field

    def permutation_tensor(self,n):
        M = None
        if self.assume_canonical_coords:
            M = torch.eye(n)
            M = torch.cat([M[n//2:], -M[:n//2]])
        else:
            '''Constructs the Levi-Civita permutation tensor'''
            M = torch.ones(n,n) # matrix of ones
            M *= 1 - torch.eye(n) # clear diagonals
            M[::2] *= -1 # pattern of signs
            M[:,::2] *= -1

            for i in range(n): # make asymmetric
                for j in range(i+1, n):
                    M[i,j] *= -1
        return M


def L2_loss(u, v):
    return (u-v).pow(2).mean()


def get_dataset(samples=50, noise_std=0.1, seed=0):
    rng = np.random.RandomState(seed)
    radius = rng.rand(samples) * 0.9 + 0.1
    theta = rng.rand(samples) * 2 * np.pi
    q, p = radius * np.cos(theta), radius * np.sin(theta)
    x = np.stack([q, p], 1)
    dx = np.stack([p, -q], 1)  # dq/dt = p, dp/dt = -q for H = (q^2 + p^2) / 2
    x += rng.randn(*x.shape) * noise_std
    return {'x': x, 'dx': dx, 'test_x': x[:10], 'test_dx': dx[:10]}


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    input_dim, hidden_dim, learn_rate, total_steps = 2, 32, 1e-3, 10
    losses = []
    for field_type, canonical in (('solenoidal', True), ('both', False)):
        output_dim = 2
        nn_model = MLP(input_dim, hidden_dim, output_dim, 'tanh')
        model = HNN(input_dim, differentiable_model=nn_model, field_type=field_type,
                    baseline=False, assume_canonical_coords=canonical)
        optim = torch.optim.Adam(model.parameters(), learn_rate, weight_decay=1e-4)
        data = get_dataset(seed=0)
        x = torch.tensor(data['x'], requires_grad=True, dtype=torch.float32)
        test_x = torch.tensor(data['test_x'], requires_grad=True, dtype=torch.float32)
        dxdt = torch.Tensor(data['dx'])
        test_dxdt = torch.Tensor(data['test_dx'])
        for step in range(total_steps+1):
            dxdt_hat = model.time_derivative(x)
            loss = L2_loss(dxdt, dxdt_hat)
            loss.backward() ; optim.step() ; optim.zero_grad()
            test_dxdt_hat = model.time_derivative(test_x)
            test_loss = L2_loss(test_dxdt, test_dxdt_hat)
        print("step {}, train_loss {:.4e}, test_loss {:.4e}".format(step, loss.item(),
                                                                     test_loss.item()))
        print(model.M)
        losses.append(loss.item())
    state = torch.tensor([[0.5, 0.0]], requires_grad=True)
    for _ in range(3):
        state = (state + 0.1 * model.time_derivative(state)).detach().requires_grad_(True)
    print(state)
    return sum(losses)


if __name__ == "__main__":
    main()

"""In the style of vsitzmann/siren's explore_siren notebook and diff_operators.py: SineLayer
with the omega_0 initialization under torch.no_grad() (weight.uniform_ bounds from
in_features), Siren's coordinate input cloned with .requires_grad_(True), get_mgrid via
torch.meshgrid and torch.stack, diff_operators' gradient (torch.autograd.grad with
grad_outputs=torch.ones_like and create_graph=True), divergence and laplace, fitting an image
and then its Laplacian with gradients of gradients. A synthetic image stands in for the
cameraman photo."""
import numpy as np

import fusetorch as torch
from fusetorch import nn


def get_mgrid(sidelen, dim=2):
    '''Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1.
    sidelen: int
    dim: int'''
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing='ij'), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True,
                 is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first

        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)

        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features,
                                             1 / self.in_features)
            else:
                self.linear.weight.uniform_(-np.sqrt(6 / self.in_features) / self.omega_0,
                                             np.sqrt(6 / self.in_features) / self.omega_0)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))

    def forward_with_intermediate(self, input):
        # For visualization of activation distributions
        intermediate = self.omega_0 * self.linear(input)
        return torch.sin(intermediate), intermediate


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=False,
                 first_omega_0=30, hidden_omega_0=30.):
        super().__init__()

        self.net = []
        self.net.append(SineLayer(in_features, hidden_features,
                                  is_first=True, omega_0=first_omega_0))

        for i in range(hidden_layers):
            self.net.append(SineLayer(hidden_features, hidden_features,
                                      is_first=False, omega_0=hidden_omega_0))

        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)

            with torch.no_grad():
                final_linear.weight.uniform_(-np.sqrt(6 / hidden_features) / hidden_omega_0,
                                              np.sqrt(6 / hidden_features) / hidden_omega_0)

            self.net.append(final_linear)
        else:
            self.net.append(SineLayer(hidden_features, out_features,
                                      is_first=False, omega_0=hidden_omega_0))

        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True) # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords


def laplace(y, x):
    grad = gradient(y, x)
    return divergence(grad, x)


def divergence(y, x):
    div = 0.
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]), create_graph=True)[0][..., i:i+1]
    return div


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    grad = torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]
    return grad


def main():
    torch.manual_seed(0)
    sidelength = 16
    coords = get_mgrid(sidelength, 2)
    x, y = coords[:, :1], coords[:, 1:]
    pixels = torch.sin(3 * x) * torch.cos(2 * y)
    img_siren = Siren(in_features=2, out_features=1, hidden_features=32,
                      hidden_layers=2, outermost_linear=True)
    optim = torch.optim.Adam(lr=1e-4, params=img_siren.parameters())
    model_input, ground_truth = coords.unsqueeze(0), pixels.unsqueeze(0)
    for step in range(3):
        model_output, coords_out = img_siren(model_input)
        loss = ((model_output - ground_truth)**2).mean()
        img_grad = gradient(model_output, coords_out)
        img_laplacian = laplace(model_output, coords_out)
        print("Step %d, Total loss %0.6f" % (step, loss), img_grad.norm(dim=-1).mean().item(),
              img_laplacian.abs().mean().item())
        optim.zero_grad()
        loss.backward()
        optim.step()

    # the Laplacian of a known function is exact: f = x^2 y + y^3 gives 2y + 6y
    c = coords.clone().requires_grad_(True)
    f = (c[:, 0] ** 2 * c[:, 1] + c[:, 1] ** 3).unsqueeze(-1)
    assert torch.allclose(laplace(f, c).squeeze(-1), 8 * c[:, 1].detach(), atol=1e-5)

    # fitting the Laplacian (the poisson experiment): second derivatives in the loss
    poisson = Siren(in_features=2, out_features=1, hidden_features=32, hidden_layers=1,
                    outermost_linear=True)
    opt = torch.optim.Adam(lr=1e-4, params=poisson.parameters())
    gt_laplace = -13 * pixels.unsqueeze(0)
    for step in range(2):
        out, c = poisson(model_input)
        loss = ((laplace(out, c) - gt_laplace) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("poisson", loss.item())
    return loss.item()


if __name__ == "__main__":
    main()

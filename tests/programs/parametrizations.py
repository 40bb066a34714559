"""In the style of the "Parametrizations" tutorial: Symmetric and Skew parametrizations
registered with parametrize.register_parametrization on a Linear and a Conv2d, the
parametrized module printed and inspected (layer.parametrizations.weight.original, named
parameters), parametrize.cached(), chained parametrizations (Skew then a Cayley map by
torch.linalg.solve, Skew then torch.matrix_exp) giving orthogonal weights, right_inverse
when assigning layer.weight, remove_parametrizations with leave_parametrized True and False;
then torch.nn.utils.parametrizations.orthogonal, weight_norm and spectral_norm on layers of
a small model trained a few steps. Checks: the symmetry, orthogonality and norms the
parametrizations promise, and a falling loss."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.utils.parametrize as parametrize
from fusetorch.nn.utils import parametrizations


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)


class CayleyMap(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        # (I + X)(I - X)^{-1}
        return torch.linalg.solve(self.Id - X, self.Id + X)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


def main():
    torch.manual_seed(0)
    layer = nn.Linear(3, 3)
    print(f"Unparametrized:\n{layer}")
    parametrize.register_parametrization(layer, "weight", Symmetric())
    print(f"\nParametrized:\n{layer}")
    A = layer.weight
    assert torch.allclose(A, A.T)
    print(layer.parametrizations)
    print(layer.parametrizations.weight)
    print(layer.parametrizations.weight[0])
    names = [name for name, _ in layer.named_parameters()]
    assert names == ['bias', 'parametrizations.weight.original'], names
    original = layer.parametrizations.weight.original
    assert torch.dist(layer.weight, original.triu() + original.triu(1).T) < 1e-6
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")

    cnn = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
    parametrize.register_parametrization(cnn, "weight", Skew())
    w = cnn.weight
    assert torch.allclose(w[0, 1], -w[0, 1].T) and torch.count_nonzero(w[2, 2].diagonal()) == 0

    with parametrize.cached():
        first = layer.weight
        assert layer.weight is first  # computed once inside the context
    assert layer.weight is not first

    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Skew())
    parametrize.register_parametrization(layer, "weight", CayleyMap(3))
    X = layer.weight
    print(torch.dist(X.T @ X, torch.eye(3)))  # X is orthogonal
    assert torch.dist(X.T @ X, torch.eye(3)) < 1e-5
    layer_orthogonal = nn.Linear(3, 3)
    parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
    parametrize.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
    X = layer_orthogonal.weight
    assert torch.dist(X.T @ X, torch.eye(3)) < 1e-5
    assert len(layer_orthogonal.parametrizations.weight) == 2

    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    X = torch.rand(3, 3)
    X = X + X.T  # X is now symmetric
    layer.weight = X  # Initialize layer.weight to be X
    print(torch.dist(layer.weight, X))  # layer.weight == X
    assert torch.dist(layer.weight, X) < 1e-6
    assert torch.equal(layer.parametrizations.weight.original, X.triu())

    parametrize.remove_parametrizations(layer, "weight")
    assert not parametrize.is_parametrized(layer)
    assert isinstance(layer.weight, nn.Parameter) and torch.allclose(layer.weight, X)
    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    orig = layer.parametrizations.weight.original.detach().clone()
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    assert torch.equal(layer.weight, orig)

    # the ready-made parametrizations on a model that trains
    torch.manual_seed(0)
    model = nn.Sequential(
        parametrizations.orthogonal(nn.Linear(4, 4)), nn.Tanh(),
        parametrizations.weight_norm(nn.Linear(4, 6)), nn.Tanh(),
        parametrizations.spectral_norm(nn.Linear(6, 1)))
    assert [n for n, _ in model[2].named_parameters()] == [
        'bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    g = model[2].parametrizations.weight.original0
    assert g.shape == (6, 1)
    assert torch.allclose(g.squeeze(1), model[2].weight.norm(dim=1), atol=1e-6)
    x = torch.randn(32, 4)
    y = (x[:, :1] * x[:, 1:2]).tanh()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("losses", losses[0], "->", losses[-1])
    assert losses[-1] < losses[0]
    Q = model[0].weight
    assert torch.dist(Q.T @ Q, torch.eye(4)) < 1e-4  # still orthogonal after the steps
    model.eval()
    sigma = torch.linalg.matrix_norm(model[4].weight, ord=2)
    assert abs(sigma.item() - 1.0) < 0.05, sigma  # power iteration's estimate of the norm 1
    return losses[-1]


if __name__ == "__main__":
    main()

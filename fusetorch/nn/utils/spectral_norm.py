"""`nn.utils.spectral_norm` / `remove_spectral_norm`: the legacy spectral normalisation (GAN
code's `nn.utils.spectral_norm(nn.Conv2d(...))`): parameter `<name>_orig`, buffers `<name>_u`
and `<name>_v`, and a forward pre-hook that sets `<name>` = `<name>_orig` / sigma, sigma from
one power-iteration step per training-mode call (v first, then u, as PyTorch's legacy form;
the parametrization in parametrizations.py steps u first)."""
from __future__ import annotations

from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...tracer.creation import randn
from ...tracer.tensor import Tensor
from .._functional.distance import normalize
from ..module import Module
from ..parameter import Parameter
from .parametrizations import _weight_matrix

__all__ = ["spectral_norm", "remove_spectral_norm", "SpectralNorm"]


class SpectralNorm:
    """The forward pre-hook of the legacy spectral_norm."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = _weight_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(F.mv(F.t(mat), u), dim=0, eps=self.eps))
                    u.copy_(normalize(F.mv(mat, v), dim=0, eps=self.eps))
            u, v = F.clone(u), F.clone(v)  # the buffers move on; sigma's graph keeps these
        sigma = F.sum(u * F.mv(mat, v))
        return weight / sigma

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]  # KeyError for a name that is not a parameter
        with no_grad():
            h, w = _weight_matrix(weight, fn.dim).shape
            u = normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module,
                                                       do_power_iteration=module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Legacy spectral normalisation: `<name> = <name>_orig / sigma(<name>_orig)` before each
    forward (dim: the output dim, 1 for transposed convolutions)."""
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo the legacy spectral_norm: `<name>` becomes a parameter holding the current
    value."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")

"""Registry entries for PyTorch's public names added by the `names` work of issue 27: the
torch-level in-place functions, the aliases, the torch-level (ATen-signature) forms of
nn.functional ops, predicates and global state. Imported at the end of opinfo_catalogue.py.

A torch-level in-place function or an alias is its target's operation: its entry reuses the
target entry's first in-place samples (one entry per name, so each is checked eagerly, through
float64 gradients and compiled, at the cost of a couple of cases)."""
from __future__ import annotations

import fusetorch as torch
from fusetorch import _inplace_functions as _I
from opinfo import OPS, OpInfo, SKIPPED, fixed, make, F32, F64, I64, m  # noqa: F401

_BY_VARIANT = {v: e for e in OPS for v in e.variants}
_FIRST = len(OPS)


def _first_samples(entry, k: int = 2):
    def samples(rng):
        return [s for s in entry.samples(rng) if s.inplace][:k]
    return samples


def _clone_first(fn):
    return lambda x, *a, **kw: fn(x.clone(), *a, **kw)


def _like(target: str, name: str, fn, inplace: bool) -> None:
    """An entry `name` for `fn`, on the samples of the entry holding the variant `target`."""
    base = _BY_VARIANT.get(target) or _BY_VARIANT[target.rstrip("_")]
    OPS.append(OpInfo(name, {name: _clone_first(fn) if inplace else fn},
                      _first_samples(base), grad=base.grad, rtol=base.rtol, atol=base.atol,
                      grad_rtol=base.grad_rtol, grad_atol=base.grad_atol))


# torch.abs_(x) is x.abs_(): the same samples as Tensor.abs_
_CUSTOM = {"index_put", "detach", "resize_as", "addmv", "clamp_min", "clamp_max"}
for _n in _I.METHODS:
    if _n not in _CUSTOM:
        _like(f"Tensor.{_n}_", f"torch.{_n}_", getattr(torch, _n + "_"), True)
for _alias, _target in _I.TENSOR_ALIASES.items():
    if f"Tensor.{_target}" in _BY_VARIANT:
        _like(f"Tensor.{_target}", f"Tensor.{_alias}", m(_alias), _alias.endswith("_"))
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"):
    _like(f"Tensor.{_n}", f"Tensor.{_n}_", m(_n + "_"), True)
for _alias, _target in _I.TORCH_ALIASES.items():
    _like(f"torch.{_target}", f"torch.{_alias}", getattr(torch, _alias), False)
_like("Tensor.rsqrt", "Tensor.rsqrt_", m("rsqrt_"), True)
_like("Tensor.negative", "Tensor.negative_", m("negative_"), True)
for _alias in ("greater_", "greater_equal_", "less_", "less_equal_", "not_equal_"):
    _like(f"Tensor.{_I.TENSOR_ALIASES[_alias][:-1]}", f"Tensor.{_alias}", m(_alias), True)


def _own(target: str, name: str, fn) -> None:
    """An entry `name` whose variant `fn` binds arguments as the target's variant does."""
    _like(target, name, fn, False)


from opinfo_catalogue import _ix  # noqa: E402
_own("Tensor.addmv_", "torch.addmv_",
     lambda i, a, b: torch.addmv_(i[:, 1].clone(), a, b[:, 1], beta=0.5, alpha=2))
_own("Tensor.clamp_min_", "torch.clamp_min_", lambda x: torch.clamp_min_(x.clone(), -0.5))
_own("Tensor.clamp_max_", "torch.clamp_max_", lambda x: torch.clamp_max_(x.clone(), 0.5))
_own("Tensor.index_put_", "torch.index_put_", lambda x, v: torch.index_put_(
    x.clone(), (_ix(x, [1, 1]),), v[:2], accumulate=True))
SKIPPED["torch.detach_"] = SKIPPED["Tensor.detach_"]
SKIPPED["torch.resize_as_"] = SKIPPED["Tensor.resize_as_"]

# the in-place activations and dropouts without a Tensor method (ATen's positional forms)
_ACT = fixed(("f32", lambda r: [make(r, (4, 5), F32, away=(0.0, 0.3))]),
             ("f64_perm", lambda r: [make(r, (2, 4, 5), F64, layout="t", away=(0.0, 0.3))]),
             ("0d", lambda r: [make(r, (), F64, away=(0.0, 0.3))]))


def _add(name: str, fn, samples=_ACT, **kw) -> None:
    OPS.append(OpInfo(name, {name: fn}, samples, **kw))


_add("torch.selu_", lambda x: torch.selu_(x.clone()))
_add("torch.celu_", lambda x: torch.celu_(x.clone(), 0.7))
_add("torch.threshold_", lambda x: torch.threshold_(x.clone(), 0.3, -2.0))
_add("torch.rrelu_", lambda x: torch.rrelu_(x.clone(), 0.1, 0.3))  # (eval: the mean slope)
_add("torch.dropout_", lambda x: torch.dropout_(x.clone(), 0.3, False))
_add("torch.alpha_dropout_", lambda x: torch.alpha_dropout_(x.clone(), 0.3, False))
_add("torch.feature_alpha_dropout_", lambda x: torch.feature_alpha_dropout_(x.clone(), 0.3,
                                                                            False))
_add("torch.feature_dropout_", lambda x: torch.feature_dropout_(x.clone(), 0.3, False))
from opinfo import _DATA  # noqa: E402
SKIPPED["torch.embedding_renorm_"] = _DATA + " (which rows: tests/test_torch_names.py)"

MINE = {e.name for e in OPS[_FIRST:]}

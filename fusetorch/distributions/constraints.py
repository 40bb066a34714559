"""Constraints on distribution parameters and supports (torch.distributions.constraints):
`check(value)` returns a bool tensor, True where the value satisfies the constraint."""
from __future__ import annotations

from ..linalg import cholesky_ex
from ..tracer import functional as F
from ..tracer.tensor import Tensor

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "independent", "integer_interval",
           "one_hot", "multinomial",
           "interval", "is_dependent", "less_than", "nonnegative", "nonnegative_integer",
           "positive", "positive_integer", "real", "real_vector", "simplex", "unit_interval",
           "lower_cholesky", "corr_cholesky", "positive_definite", "cat", "stack"]


class Constraint:
    """A region of valid values; `event_dim` dims on the right are checked together."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters: never checked."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0):
        self._is_discrete, self._event_dim = is_discrete, event_dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self._is_discrete

    @property
    def event_dim(self) -> int:
        return self._event_dim

    def __call__(self, *, is_discrete=None, event_dim=None) -> "_Dependent":
        return _Dependent(is_discrete=self._is_discrete if is_discrete is None else is_discrete,
                          event_dim=self._event_dim if event_dim is None else event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property of a distribution that is a constraint computed from its parameters
    (Uniform's support); on the class it reads as a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0):
        property.__init__(self, fn)
        self._is_discrete, self._event_dim = is_discrete, event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


dependent_property = _DependentProperty


class _IndependentConstraint(Constraint):
    """`base_constraint` with `reinterpreted_batch_ndims` more dims checked together."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return F.logical_or(F.eq(value, 0), F.eq(value, 1))


def _is_integer(value: Tensor) -> Tensor:
    """value % 1 == 0 without `%`: truncation through int64 where that is exact (beyond 2**52
    every float is an integer; inf and NaN are not)."""
    if not value.is_floating_point():
        return F.eq(value, value)
    big = 2.0 ** 52
    trunc = F.clamp(value, -big, big).long().to(value.dtype)
    finite = F.lt(F.abs(value), float("inf"))
    return F.logical_and(finite, F.logical_or(F.eq(trunc, value), F.gt(F.abs(value), big)))


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        super().__init__()

    def check(self, value):
        return F.logical_and(_is_integer(value), F.logical_and(
            F.ge(value, self.lower_bound), F.le(value, self.upper_bound)))

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return F.logical_and(_is_integer(value), F.ge(value, self.lower_bound))

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value):
        return F.eq(value, value)  # False for NaNs


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return F.lt(self.lower_bound, value) if isinstance(self.lower_bound, Tensor) \
            else F.gt(value, self.lower_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return F.ge(value, self.lower_bound)


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return F.lt(value, self.upper_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        super().__init__()

    def check(self, value):
        return F.logical_and(F.ge(value, self.lower_bound), F.le(value, self.upper_bound))

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return F.logical_and(F.ge(value, self.lower_bound), F.lt(value, self.upper_bound))


class _Simplex(Constraint):
    """Non-negative along the last dim and summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value):
        return F.logical_and(F.ge(value, 0).all(-1), F.lt(F.abs(value.sum(-1) - 1), 1e-6))


class _OneHot(Constraint):
    """Vectors of zeros and a single one along the last dim."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        ones_and_zeros = F.logical_or(F.eq(value, 0), F.eq(value, 1)).all(-1)
        return F.logical_and(ones_and_zeros, F.eq(value.sum(-1), 1))


class _Multinomial(Constraint):
    """Non-negative counts along the last dim summing to at most `upper_bound`."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return F.logical_and(F.ge(x, 0).all(-1), F.le(x.sum(-1), self.upper_bound))


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        lower = F.eq(value.tril(), value).flatten(-2).min(-1).values
        return F.logical_and(lower, F.gt(value.diagonal(dim1=-2, dim2=-1), 0).min(-1).values)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower Cholesky with rows of unit norm
    (within 10 eps per dim, PyTorch's tolerance)."""

    event_dim = 2

    def check(self, value):
        from .utils import finfo_eps
        tol = finfo_eps(value.dtype) * value.size(-1) * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_row_norm = F.le(F.abs(row_norm - 1.0), tol).all(dim=-1)
        return F.logical_and(_LowerCholesky().check(value), unit_row_norm)


class _PositiveDefinite(Constraint):
    """Symmetric square matrices whose Cholesky factorisation succeeds."""

    event_dim = 2

    def check(self, value):
        close = F.le(F.abs(value - value.mT), 1e-6 + 1e-5 * F.abs(value.mT))  # torch.isclose's
        symmetric = close.flatten(-2).all(-1)
        return F.logical_and(symmetric, F.eq(cholesky_ex(value).info, 0))


class _Cat(Constraint):
    """Constraints `cseq` on consecutive slices of `lengths` along `dim` (as torch.cat)."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        if not (-value.dim() <= self.dim < value.dim()):
            raise AssertionError(
                f"dim {self.dim} out of range for value with {value.dim()} dimensions")
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start = start + length
        return F.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraint `cseq[i]` on the i-th slice along `dim` (as torch.stack)."""

    def __init__(self, cseq, dim: int = 0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        if not (-value.dim() <= self.dim < value.dim()):
            raise AssertionError(
                f"dim {self.dim} out of range for value with {value.dim()} dimensions")
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return F.stack([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


dependent = _Dependent()
independent = _IndependentConstraint
boolean = _Boolean()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
one_hot = _OneHot()
multinomial = _Multinomial
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack

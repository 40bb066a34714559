"""torch-level shape, matrix-product and scatter functions composed of existing primitives:
triangles and diagonals (masks from `arange`, advanced `index` / `index_put`), rolls and
rotations (`cat` of slices, `flip`, `permute`), stacking, `meshgrid`, `kron`, `einsum` and
`tensordot` (permute / reshape / mul / sum / matmul), the `add*mm` family, `scatter` /
`index_add` / `index_copy` / `index_fill` (functional `index_put`), `unfold` and
`repeat_interleave`. Nothing here is a new primitive, so autograd and compile need nothing more.
`PUBLIC` is what `fusetorch` exports and `Tensor` binds."""
from __future__ import annotations

import builtins as _b
import math

from ..ir import dtypes as dt
from ..ir.shapes import broadcast_many, norm_dim
from . import dispatch as D
from . import functional as F
from .functional import write_out
from .tensor import Tensor
from . import autocast as _ac
from .numpy_names import numpy_names

_AUTOCAST = _ac._LOCAL  # (bound once: a per-thread module's attributes read slowly)


def _arange(n: int, like: Tensor) -> Tensor:
    from .creation import arange
    return arange(n, device=like.device)


def _zero_like_scalar(x: Tensor) -> Tensor:
    return D.source("full", {"shape": (), "dtype": x._dtype, "value": False if x._dtype is
                             dt.bool_ else 0}, x._be)


# ---------------------------------------------------------------- triangles and diagonals

def _tri(input: Tensor, diagonal: int, lower: bool) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 "
                           f"dimensions")
    n, m = input.shape[-2], input.shape[-1]
    rows = D.binary("add", F.unsqueeze(_arange(n, input), 1), diagonal)
    cols = _arange(m, input)
    mask = D.binary("le" if lower else "ge", cols, rows)
    return D.elementwise("where", mask, input, _zero_like_scalar(input))


def tril(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    D.check_tensor(input, "tril", "input", 1)
    return write_out(_tri(input, diagonal, True), out)


def triu(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    D.check_tensor(input, "triu", "input", 1)
    return write_out(_tri(input, diagonal, False), out)


def _tri_indices(row: int, col: int, offset: int, lower: bool, dtype, device) -> Tensor:
    from .creation import tensor
    rs, cs = [], []
    for i in range(row):  # row-major, as PyTorch orders them
        for j in range(col):
            if (j - i <= offset) if lower else (j - i >= offset):
                rs.append(i)
                cs.append(j)
    t = tensor([rs, cs], dtype=dtype or dt.int64, device=device)
    return F.reshape(t, (2, len(rs)))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    return _tri_indices(row, col, offset, True, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    return _tri_indices(row, col, offset, False, dtype, device)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims (dim1, dim2) as a new last dim: a view (writes reach the input)."""
    d1, d2 = norm_dim(dim1, input.ndim), norm_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return D.apply("diagonal", [input], {"offset": int(offset), "dim1": d1, "dim2": d2})


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    D.check_tensor(input, "diag_embed", "input", 1)
    if norm_dim(dim1, input.ndim + 1) == norm_dim(dim2, input.ndim + 1):
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = input.shape[-1] + abs(offset)
    base = D.source("full", {"shape": tuple(input.shape[:-1]) + (size, size),
                             "dtype": input._dtype, "value": 0}, input._be)
    i = _arange(input.shape[-1], input)
    r = D.binary("sub", i, _b.min(offset, 0))
    c = D.binary("add", i, _b.max(offset, 0))
    spec = tuple(("slice", 0, s, 1) for s in input.shape[:-1]) + (("tensor", 0), ("tensor", 1))
    out = D.apply("index_put", [base, input, r, c], {"spec": spec, "accumulate": False})
    nd = out.ndim
    d1, d2 = norm_dim(dim1, nd), norm_dim(dim2, nd)
    return out if (d1, d2) == (nd - 2, nd - 1) else movedim(out, (nd - 2, nd - 1), (d1, d2))


def diag(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    D.check_tensor(input, "diag", "input", 1)
    if input.ndim == 1:
        return write_out(diag_embed(input, diagonal), out)
    if input.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " f"{input.ndim}D")
    return write_out(globals()["diagonal"](input, diagonal), out)


@_ac.op("trace")
def trace(input: Tensor) -> Tensor:
    D.check_tensor(input, "trace", "input", 1)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return F.sum(diagonal(input))


# ---------------------------------------------------------------- rearranging

def movedim(input: Tensor, source, destination) -> Tensor:
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    nd = input.ndim
    given = src, dst
    src = tuple(norm_dim(s, nd) for s in src)
    dst = tuple(norm_dim(d, nd) for d in dst)
    for name, dims, raw in (("source", src, given[0]), ("destination", dst, given[1])):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(raw)})")
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return input if perm == list(range(nd)) else F.permute(input, *perm)


moveaxis = movedim


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    if dims is None:
        return F.reshape(roll(F.flatten(input), shifts, 0), tuple(input.shape))
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    x = input
    for s, d in zip(shifts, dims):
        if x.ndim == 0:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        d = norm_dim(d, x.ndim)
        n = x.shape[d]
        s = s % n if n else 0
        if s:
            x = F.cat([F.narrow(x, d, n - s, s), F.narrow(x, d, 0, n - s)], d)
    return x


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    D.check_tensor(input, "rot90", "input", 1)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (norm_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return F.transpose(F.flip(input, (d1,)), d0, d1)
    if k == 2:
        return F.flip(input, (d0, d1))
    if k == 3:
        return F.transpose(F.flip(input, (d0,)), d0, d1)
    return F.clone(input)


def fliplr(input: Tensor) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return F.flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return F.flip(input, (0,))


def tile(input: Tensor, dims) -> Tensor:
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return F.repeat(input, *dims)


def broadcast_to(input: Tensor, size) -> Tensor:
    D.check_tensor(input, "broadcast_to", "input", 1)
    return F.expand(input, *tuple(size))


def broadcast_tensors(*tensors) -> tuple:
    D.check_tensors(tensors, "broadcast_tensors")
    shape = broadcast_many([tuple(t.shape) for t in tensors])
    return tuple(t if tuple(t.shape) == shape else F.expand(t, *shape) for t in tensors)


@numpy_names
@F._grad_name("SelectBackward0")
def select(input: Tensor, dim: int, index: int) -> Tensor:
    D.check_tensor(input, "select", "input", 1)
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return F.squeeze(F.narrow(input, d, index % n, 1), d)


def atleast_1d(*tensors):
    r = tuple(F.reshape(t, (1,)) if t.ndim == 0 else t for t in _seq(tensors))
    return r[0] if len(r) == 1 and isinstance(tensors[0], Tensor) else r


def atleast_2d(*tensors):
    r = tuple(F.reshape(t, (1, 1)) if t.ndim == 0 else F.unsqueeze(t, 0) if t.ndim == 1 else t
              for t in _seq(tensors))
    return r[0] if len(r) == 1 and isinstance(tensors[0], Tensor) else r


def atleast_3d(*tensors):
    def up(t):
        if t.ndim == 0:
            return F.reshape(t, (1, 1, 1))
        if t.ndim == 1:
            return F.reshape(t, (1, t.shape[0], 1))
        return F.unsqueeze(t, -1) if t.ndim == 2 else t
    r = tuple(up(t) for t in _seq(tensors))
    return r[0] if len(r) == 1 and isinstance(tensors[0], Tensor) else r


def _seq(tensors) -> tuple:
    return tuple(tensors[0]) if len(tensors) == 1 and not isinstance(tensors[0], Tensor) \
        else tuple(tensors)


def _non_empty(tensors, name: str) -> list:
    tensors = D.check_tensors(tensors, name)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def vstack(tensors, *, out=None) -> Tensor:
    return F.cat([atleast_2d(t) for t in _non_empty(tensors, "vstack")], 0, out=out)


row_stack = vstack


def hstack(tensors, *, out=None) -> Tensor:
    ts = [atleast_1d(t) for t in _non_empty(tensors, "hstack")]
    return F.cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def dstack(tensors, *, out=None) -> Tensor:
    return F.cat([atleast_3d(t) for t in _non_empty(tensors, "dstack")], 2, out=out)


def column_stack(tensors, *, out=None) -> Tensor:
    ts = [F.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t
          for t in _non_empty(tensors, "column_stack")]
    return F.cat(ts, 1, out=out)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    D.check_tensors(tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
                    else tensors, "meshgrid")
    ts = _seq(tensors)
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    swap = indexing == "xy" and len(ts) >= 2
    order = [1, 0] + list(range(2, len(ts))) if swap else list(range(len(ts)))
    shape = tuple(ts[i].numel() for i in order)
    out = []
    for k, t in enumerate(ts):
        pos = order.index(k)
        view = [1] * len(ts)
        view[pos] = t.numel()
        out.append(F.expand(F.reshape(t, tuple(view)), *shape))
    return tuple(out)


# ---------------------------------------------------------------- products

def outer(input: Tensor, vec2: Tensor, *, out=None) -> Tensor:
    D.check_tensor(input, "outer", "input", 1)
    D.check_tensor(vec2, "outer", "vec2", 2)
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return write_out(D.binary("mul", F.unsqueeze(input, 1), F.unsqueeze(vec2, 0)), out)


ger = outer


def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    if _AUTOCAST.state.ACTIVE:  # torch.autocast: one op of its own, not its tensordot
        return _ac.call("inner", inner, (input, other), {"out": out})
    if input.ndim == 0 or other.ndim == 0:
        return write_out(D.binary("mul", input, other), out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return write_out(tensordot(input, other, ([-1], [-1])), out)


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    D.check_tensor(input, "kron", "input", 1)
    D.check_tensor(other, "kron", "other", 2)
    nd = _b.max(input.ndim, other.ndim)
    a = F.reshape(input, (1,) * (nd - input.ndim) + tuple(input.shape))
    b = F.reshape(other, (1,) * (nd - other.ndim) + tuple(other.shape))
    a2 = F.reshape(a, tuple(v for s in a.shape for v in (s, 1)))
    b2 = F.reshape(b, tuple(v for s in b.shape for v in (1, s)))
    r = D.binary("mul", a2, b2)
    return write_out(F.reshape(r, tuple(x * y for x, y in zip(a.shape, b.shape))), out)


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [norm_dim(d, a.ndim) for d in da]
    db = [norm_dim(d, b.ndim) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y] and 1 not in (a.shape[x], b.shape[y]):
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    # a size-1 dim contracted against a larger one broadcasts, as in PyTorch
    sa, sb = list(a.shape), list(b.shape)
    for x, y in zip(da, db):
        sa[x] = sb[y] = _b.max(sa[x], sb[y])
    if sa != list(a.shape):
        a = F.expand(a, *sa)
    if sb != list(b.shape):
        b = F.expand(b, *sb)
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [i for i in range(b.ndim) if i not in db]
    k = math.prod(sa[d] for d in da)
    ma = F.reshape(F.permute(a, *(fa + da)), (math.prod(sa[i] for i in fa), k))
    mb = F.reshape(F.permute(b, *(db + fb)), (k, math.prod(sb[i] for i in fb)))
    r = F.matmul(ma, mb)
    return write_out(F.reshape(r, tuple(sa[i] for i in fa) + tuple(sb[i] for i in fb)), out)


def _check_scale(beta, alpha, input: Tensor, prod: Tensor) -> Tensor:
    beta, alpha = F.scale_for(beta, input, prod), F.scale_for(alpha, input, prod)
    p = prod if alpha == 1 else D.binary("mul", prod, alpha)
    if beta == 0:  # PyTorch ignores input (nan and inf included)
        return F.expand(p, *broadcast_many([tuple(input.shape), tuple(p.shape)]))
    i = input if beta == 1 else D.binary("mul", input, beta)
    return D.binary("add", i, p)


def _half_gemm(fn, input: Tensor, a: Tensor, b: Tensor, beta, alpha) -> Tensor:
    """beta * input + alpha * fn(a, b); float16/bfloat16 operands computed in float32 and
    rounded once, as ATen's CPU gemm, which scales and adds its float sums before the store
    (the product rounded to half and then added rounds twice)."""
    half = (dt.float16, dt.bfloat16)
    if a._dtype not in half or b._dtype is not a._dtype or input._dtype is not a._dtype:
        return _check_scale(beta, alpha, input, fn(a, b))
    up = lambda t: D.cast(t, dt.float32)  # noqa: E731
    return D.cast(_check_scale(beta, alpha, up(input), fn(up(a), up(b))), a._dtype)


@_ac.op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    return write_out(_half_gemm(F.mm, input, mat1, mat2, beta, alpha), out)


@_ac.op("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    return write_out(_half_gemm(F.mv, input, mat, vec, beta, alpha), out)


@_ac.op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,
           out=None) -> Tensor:
    if batch1._dtype in (dt.float16, dt.bfloat16) and batch1.ndim == 3 and batch1.shape[0] and \
            batch2._dtype is batch1._dtype and input._dtype is batch1._dtype:
        # ATen's loop: one addmm per batch into the result (beta on the first), each a float32
        # gemm rounded to half once; the products summed first round differently
        acc = F.expand(input, batch1.shape[1], batch2.shape[2]) if input.ndim < 2 else input
        for i in range(batch1.shape[0]):
            acc = _half_gemm(F.mm, acc, batch1[i], batch2[i], beta if i == 0 else 1, alpha)
        return write_out(acc, out)
    products = F.bmm(batch1, batch2)
    # summed in the products' dtype: PyTorch's addbmm keeps int32 (sum alone would widen it)
    return write_out(_check_scale(beta, alpha, input, F.sum(products, 0, dtype=products.dtype)), out)


@_ac.op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,
            out=None) -> Tensor:
    return write_out(_half_gemm(F.bmm, input, batch1, batch2, beta, alpha), out)


def _parse_einsum(equation: str, operands) -> tuple:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the "
                           f"equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    ell = _b.max([t.ndim - len(s.replace("...", "")) for s, t in zip(terms, operands)
                  if "..." in s] or [0])
    ell_labels = [chr(0x100 + i) for i in range(ell)]  # labels no equation uses
    subs = []
    for s, t in zip(terms, operands):
        if "..." in s:
            n = t.ndim - len(s.replace("...", ""))
            s = s.replace("...", "".join(ell_labels[ell - n:]))
        if len(s) != t.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({len(s)}) does not match the number of dimensions "
                               f"({t.ndim}) for operand {len(subs)} and no ellipsis was given")
        subs.append(s)
    if arrow:
        out = rhs.replace("...", "".join(ell_labels))
    else:  # implicit output: the ellipsis dims, then labels seen once, alphabetically
        counts = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(ell_labels) + "".join(sorted(c for c, n in counts.items()
                                                   if n == 1 and c not in ell_labels))
    return subs, out


def _diag_labels(t: Tensor, s: str) -> tuple:
    """Repeated labels in one operand (`ii->i`): take the diagonal."""
    while len(set(s)) < len(s):
        c = next(c for c in s if s.count(c) > 1)
        i = s.index(c)
        j = s.index(c, i + 1)
        t = diagonal(t, 0, i, j)
        s = s[:i] + s[i + 1:j] + s[j + 1:] + c
    return t, s


def _sublist_labels(sublist) -> str:
    """PyTorch's sublist subscripts: 0-25 are A-Z, 26-51 a-z, Ellipsis is '...'."""
    out = []
    for v in sublist:
        if v is Ellipsis:
            out.append("...")
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 52:
            out.append(chr(ord("A") + v) if v < 26 else chr(ord("a") + v - 26))
        else:
            raise ValueError("einsum(): subscript in subscript list is not within the valid "
                             "range [0, 52)")
    return "".join(out)


def _sublist_equation(args: tuple) -> tuple[str, list]:
    """`einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])` as (equation, operands)."""
    ops, subs = list(args[0::2][:len(args) // 2]), [_sublist_labels(s) for s in args[1::2]]
    equation = ",".join(subs)
    if len(args) % 2:
        equation += "->" + _sublist_labels(args[-1])
    return equation, ops


def einsum(equation: str, *operands) -> Tensor:
    """Operands are aligned on one label order (size-1 dims where a label is absent), then
    multiplied left to right; a label is summed out as soon as no later operand or the output
    uses it, so intermediates stay small for chains like 'ij,jk,kl->il'. The sublist form
    `einsum(a, [0, 1], b, [1, 2], [0, 2])` is the same equation spelt with integers."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    D.check_tensors(operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple))
                    else operands, "einsum")
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) \
        else list(operands)
    subs, out = _parse_einsum(equation, ops)
    if _AUTOCAST.state.ACTIVE:  # autocast: PyTorch's einsum is bmm (autocast) when it contracts
        summed = any(c not in out and _b.sum(c in s for s in subs) > 1 for c in set("".join(subs)))
        return _ac.call("einsum" if summed else "einsum_elementwise", einsum, (equation, *ops), {})
    pairs = [_diag_labels(t, s) for t, s in zip(ops, subs)]
    acc, acc_s = pairs[0]
    for k in range(1, len(pairs) + 1):
        later = set(out).union(*[set(s) for _, s in pairs[k:]])
        drop = [i for i, c in enumerate(acc_s) if c not in later]
        if drop:
            # PyTorch sums a label of the first operand alone with sum (int32 widens to int64,
            # bool counts), a contracted one with bmm (the operands' dtype stays)
            acc = F.sum(acc, tuple(drop), dtype=None if k == 1 else acc.dtype)
            acc_s = "".join(c for i, c in enumerate(acc_s) if i not in drop)
        if k == len(pairs):
            break
        t, s = pairs[k]
        labels = acc_s + "".join(c for c in s if c not in acc_s)
        acc = _align(acc, acc_s, labels)
        acc = D.binary("mul", acc, _align(t, s, labels))
        acc_s = labels
    return _align(acc, acc_s, out, squeeze=True)


def _align(t: Tensor, s: str, labels: str, squeeze: bool = False) -> Tensor:
    """`t` with subscripts `s` permuted to `labels` order, size 1 where a label is absent."""
    present = [c for c in labels if c in s]
    perm = [s.index(c) for c in present]
    if perm != list(range(len(perm))):
        t = F.permute(t, *perm)
    if squeeze:
        return t
    shape = tuple(t.shape[present.index(c)] if c in s else 1 for c in labels)
    return F.reshape(t, shape) if shape != tuple(t.shape) else t


# ---------------------------------------------------------------- scatter and index writes

def _index_put_along(input: Tensor, dim: int, index: Tensor, value: Tensor,
                     accumulate: bool, check: str = "index_add_") -> Tensor:
    """input with input.select(dim, index[i]) written (or added) from value.select(dim, i)."""
    if input.ndim == 0:  # a 0-d self is one element along dim 0 (or -1), as in PyTorch
        norm_dim(dim, 0)
        r = _index_put_along(F.reshape(input, (1,)), 0, F.reshape(index, (-1,)),
                             F.reshape(value, (-1,)) if value.ndim else value, accumulate,
                             check)
        return F.reshape(r, ())
    d = norm_dim(dim, input.ndim)
    idx = D.cast(F.reshape(index, (-1,)), dt.int64)
    message = ("index out of range in self" if check == "index_add_" else
               f"{check}(): index {{value}} is out of bounds for dimension {d} with size "
               f"{input.shape[d]}" if check == "index_copy_" else
               f"index {{value}} is out of bounds for dimension {d} with size {input.shape[d]}")
    idx = D.check_values(idx, message, lo=-input.shape[d] if check == "index_fill_" else 0,
                         hi=input.shape[d], error="IndexError")
    if check == "index_fill_" or (value.ndim == 0 and check == "index_copy_"):
        value = F.expand(D.cast(value, input._dtype), *(
            tuple(input.shape[:d]) + (idx.shape[0],) + tuple(input.shape[d + 1:])))
    elif value.ndim == 0:
        value = F.reshape(value, (1,) * input.ndim)
    spec = tuple(("slice", 0, s, 1) for s in input.shape[:d]) + (("tensor", 0),)
    return D.apply("index_put", [input, D.cast(value, input._dtype), idx],
                   {"spec": spec, "accumulate": accumulate})


def _check_index_add(input: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's index_add_ checks, in its order and with its messages."""
    d = norm_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {D._torch_name(index._dtype)} and size: "
                         f"{list(index.shape)}")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{D._torch_name(index._dtype)}")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"index_add_(): self ({D._torch_name(input._dtype)}) and source "
                           f"({D._torch_name(source._dtype)}) must have the same scalar type")
    if d != 0 and d >= source.ndim:
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source "
                           f"tensor with dim {source.ndim}")
    along = source.shape[d] if source.ndim else 1
    if index.numel() != along:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({along}), for dim: {d}")
    a, b = list(input.shape), list(source.shape)
    if a and b:
        del a[d], b[d]
    if a != b:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")


def _check_index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's index_copy_ checks, in its order and with its messages."""
    d = norm_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.ndim == 0 and index.numel() != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element "
                         f"(got {index.numel()})")
    if source.ndim != input.ndim and source.ndim and input.ndim:
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{D._torch_name(index._dtype)}")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {D._torch_name(input._dtype)} and (source) "
                           f"{D._torch_name(source._dtype)}")
    a, b = list(input.shape), list(source.shape)
    if a:
        del a[d]
    if b:
        del b[d]
    if a != b:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice "
                           f"shapes. Destination slice shape: {' '.join(map(str, a))} at "
                           f"dimension {d} and source slice shape: {' '.join(map(str, b))} at "
                           f"dimension 0.")
    if source.ndim and index.numel() != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({source.shape[d]})")


@numpy_names
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1,
              out=None) -> Tensor:
    D.check_tensor(input, "index_add", "input", 1)
    D.check_tensor(index, "index_add", "index", 2)
    D.check_tensor(source, "index_add", "source", 3)
    _check_index_add(input, dim, index, source)
    src = source if alpha == 1 else D.binary("mul", source, alpha)
    return write_out(_index_put_along(input, dim, index, src, True), out, name="index_add",
                     inputs=(index, source))


@numpy_names
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor, *, out=None) -> Tensor:
    D.check_tensor(input, "index_copy", "input", 1)
    D.check_tensor(index, "index_copy", "index", 2)
    D.check_tensor(source, "index_copy", "source", 3)
    _check_index_copy(input, dim, index, source)
    return write_out(_index_put_along(input, dim, index, source, False, "index_copy_"), out,
                     name="index_copy", inputs=(index, source))


@numpy_names
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    D.check_tensor(input, "index_fill", "input", 1)
    D.check_tensor(index, "index_fill", "index", 2)
    norm_dim(dim, input.ndim)
    if index._dtype is not dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if not isinstance(value, Tensor) or input.ndim == 0:
        v = value if isinstance(value, Tensor) else D.source(
            "full", {"shape": (), "dtype": input._dtype,
                     "value": D._scalar_as(value, input._dtype)}, input._be)
        return _index_put_along(input, dim, index, v, False, "index_fill_")
    d = norm_dim(dim, input.ndim)
    n = input.shape[d]
    index = D.check_values(index, f"index {{value}} is out of bounds for dimension {d} with "
                           f"size {n}", lo=-n, hi=n, error="IndexError")
    # A tensor value is written through a mask of the filled positions along `dim`, so that a
    # repeated index fills (and takes the gradient of) its position once, as in PyTorch
    mask = _index_put_along(D.source("full", {"shape": (n,), "dtype": dt.bool_, "value": False},
                                     input._be), 0, index,
                            D.source("full", {"shape": (), "dtype": dt.bool_, "value": True},
                                     input._be), False, "index_fill_")
    mask = F.reshape(mask, (n,) + (1,) * (input.ndim - d - 1))
    return D.elementwise("where", mask, D.cast(value, input._dtype), input)


def _scatter_indices(input: Tensor, dim: int, index: Tensor) -> tuple:
    """One int64 index tensor per dim of `input`, shaped like `index`: the position that each
    element of `index` writes (index values along `dim`, their own coordinates elsewhere)."""
    d = norm_dim(dim, input.ndim)
    idx = []
    for k in range(input.ndim):
        if k == d:
            idx.append(D.cast(index, dt.int64))
        else:
            shape = [1] * index.ndim
            shape[k] = index.shape[k]
            idx.append(F.expand(F.reshape(_arange(index.shape[k], input), tuple(shape)),
                                *tuple(index.shape)))
    return d, idx


def _check_scatter_sizes(input: Tensor, d: int, index: Tensor, src) -> None:
    """PyTorch's bound on index's sizes: within self's apart from `d`, within src's."""
    if not index.numel():
        return
    big = _b.any(index.shape[k] > input.shape[k] for k in range(index.ndim) if k != d)
    has_src = isinstance(src, Tensor) and src.ndim
    if has_src and _b.any(i > s for i, s in zip(index.shape, src.shape)):
        big = True
    if big:
        msg = (f"Expected index {list(index.shape)} to be no larger than self "
               f"{list(input.shape)} apart from dimension {d}")
        if has_src:
            msg += f" and to be no larger size than src {list(src.shape)}"
        raise RuntimeError(msg)


@numpy_names
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None,
            out=None) -> Tensor:
    """Writes src (or a scalar `value`) at `index` along `dim`; reduce='add' accumulates,
    'multiply' multiplies (scatter_reduce's 'prod')."""
    D.check_tensor(input, "scatter", "input", 1)
    D.check_tensor(index, "scatter", "index", 3)
    if src is None:
        src = value
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    d = F.check_scatter(input, dim, index, src)
    if reduce is not None and D.GRAD_ENABLED and (
            D.needs_grad(input) or isinstance(src, Tensor) and D.needs_grad(src)):
        from .autograd import label
        from .function import Function  # it imports autograd, which imports this module

        class Refused(Function):  # PyTorch's backward refuses this form
            @staticmethod
            def forward(ctx, input, src):
                return _scatter(input, d, index, src, reduce)

            @staticmethod
            def backward(ctx, grad):
                raise RuntimeError("derivative for aten::scatter is not implemented")

        r = label(Refused.apply(input, src), "NotImplemented", input, src)
        return write_out(r, out, name="scatter", inputs=(index, src))
    return _scatter(input, d, index, src, reduce, out)


def _scatter(input: Tensor, d: int, index: Tensor, src, reduce: str | None,
             out=None) -> Tensor:
    """scatter's computation, differentiable for every `reduce` (scatter_reduce's sum and
    mean are made of it), on checked arguments."""
    if reduce == "multiply":
        if not isinstance(src, Tensor):
            src = F.expand(D.source("full", {"shape": (), "dtype": input._dtype,
                                             "value": D._scalar_as(src, input._dtype)},
                                    input._be), *index.shape)
        return scatter_reduce(input, d, index, src, "prod", out=out)
    if input.ndim == 0 or index.ndim == 0:  # a 0-d tensor is a row of one element
        if input.ndim <= 1 and index.ndim <= 1:
            s1 = F._one_d(src) if isinstance(src, Tensor) else src
            r = _scatter(F._one_d(input), 0, F._one_d(index), s1, reduce)
            return write_out(F.reshape(r, input.shape), out)
    d, idx = _scatter_indices(input, d, index)
    idx[d] = D.check_values(idx[d], f"index {{value}} is out of bounds for dimension {d} with "
                                    f"size {input.shape[d]}", lo=0,
                            hi=input.shape[d], error="RuntimeError")
    if isinstance(src, Tensor):
        if src.ndim:
            spec = tuple(("slice", 0, s, 1) for s in index.shape)
            src = D.apply("index", [src], {"spec": spec})
        v = D.cast(src, input._dtype)
    else:
        v = D.source("full", {"shape": (), "dtype": input._dtype,
                              "value": D._scalar_as(src, input._dtype)}, input._be)
    spec = tuple(("tensor", k) for k in range(input.ndim))
    r = D.apply("index_put", [input, v, *idx], {"spec": spec, "accumulate": reduce == "add"})
    return write_out(r, out, name="scatter", inputs=(index, src))


@numpy_names
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True, out=None) -> Tensor:
    """reduce 'sum' and 'mean' are index_put accumulations; 'prod', 'amax' and 'amin' the
    `scatter_reduce` primitive."""
    D.check_tensor(input, "scatter_reduce", "input", 1)
    D.check_tensor(src, "scatter_reduce", "src", 4)
    if reduce not in ("sum", "mean", "prod", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = F.check_scatter(input, dim, index, src)
    if reduce in ("prod", "amax", "amin"):
        if input.ndim == 0 or index.ndim == 0:  # a 0-d tensor is a row of one element
            if input.ndim <= 1 and index.ndim <= 1:
                r = scatter_reduce(F._one_d(input), 0, F._one_d(index), F._one_d(src), reduce,
                                   include_self=include_self)
                return write_out(F.reshape(r, input.shape), out)
        if index.numel() == 0:
            return write_out(F.clone(input), out)
        idx = D.check_values(D.cast(index, dt.int64), f"index {{value}} is out of bounds for "
                             f"dimension {d} with size {input.shape[d]}", lo=0,
                             hi=input.shape[d])
        if tuple(src.shape) != tuple(index.shape):
            src = D.apply("index", [src], {"spec": tuple(("slice", 0, s, 1)
                                                         for s in index.shape)})
        return write_out(D.apply("scatter_reduce", [input, idx, src],
                                 {"dim": d, "reduce": reduce,
                                  "include_self": _b.bool(include_self)}), out)
    base = input if include_self else scatter(input, dim, index, 0)
    total = _scatter(base, d, index, src, "add")
    if reduce == "sum":
        return write_out(total, out)
    ones = D.source("full", {"shape": tuple(index.shape), "dtype": input._dtype, "value": 1},
                    input._be)
    start = 1 if include_self else 0
    count = D.source("full", {"shape": tuple(input.shape), "dtype": input._dtype,
                              "value": start}, input._be)
    count = _scatter(count, d, index, ones, "add")
    count = D.elementwise("where", D.binary("eq", count, 0), 1, count)
    r = D.binary("div", total, count)
    if not input._dtype.is_floating_point:
        r = D.cast(F.div(total, count, rounding_mode="floor"), input._dtype)
    return write_out(r, out)


# ---------------------------------------------------------------- windows and repeats

def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: windows of `size` every `step` along `dimension`, as a new last dim (a
    view)."""
    nd = _b.max(input.ndim, 1)
    d = norm_dim(dimension, nd)
    x = F.reshape(input, (1,)) if input.ndim == 0 else input
    n = x.shape[d]
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    r = D.apply("unfold", [x], {"dim": d, "size": size, "step": step})
    return F.reshape(r, (size,)) if input.ndim == 0 else r


@numpy_names
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Each element repeated; tensor `repeats` make the output shape depend on values, so they
    are read on the host (a graph break when compiling, like nonzero)."""
    if repeats is None:  # torch.repeat_interleave(repeats): indices repeated by their counts
        counts = input
        import numpy as np
        from .creation import tensor
        rep = np.repeat(np.arange(counts.numel()), counts._host().reshape(-1))
        return tensor(rep, dtype=dt.int64, device=counts.device)
    x = F.flatten(input) if dim is None else input
    d = 0 if dim is None else norm_dim(dim, x.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
        shape = tuple(x.shape)
        y = F.unsqueeze(x, d + 1)
        y = F.expand(y, *(shape[:d + 1] + (repeats,) + shape[d + 1:]))
        return F.reshape(y, shape[:d] + (shape[d] * repeats,) + shape[d + 1:])
    if repeats.ndim != 1 or repeats.shape[0] != x.shape[d]:
        raise RuntimeError("repeats must have the same size as input along dim")
    return F.index_select(x, d, repeat_interleave(repeats))


# ---------------------------------------------------------------- masked_scatter, fill_diagonal_

def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """`input` (broadcast with `mask`) whose elements where `mask` is True are replaced, in
    row-major order, by the first elements of `source`. Each element reads source at (the count
    of Trues up to it) - 1, a cumsum then a `gather`, so nothing's size depends on the values
    (it compiles without a graph break) and gradients reach input (where mask is False) and
    source (its first count elements) as in PyTorch. Too small a source is PyTorch's error,
    checked in the graph."""
    D.check_tensor(input, "masked_scatter", "input", 1)
    D.check_tensor(mask, "masked_scatter", "mask", 2)
    D.check_tensor(source, "masked_scatter", "source", 3)
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{D._torch_name(mask._dtype)}")
    if source._dtype is not input._dtype:
        # (sic: PyTorch 2.13's message has no space after "got")
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{D._torch_name(input._dtype)} and {D._torch_name(source._dtype)}")
    from .functional_scan import cumsum
    shape = broadcast_many([tuple(input.shape), tuple(mask.shape)])
    flat_mask = F.reshape(F.expand(mask, *shape), (-1,))
    n = source.numel()
    # position in source of each element (-1 before the first True); any >= n: too few
    pos = D.check_values(D.binary("sub", cumsum(flat_mask, 0), 1),
                         "Number of elements of source < number of ones in mask", hi=_b.max(n, 1))
    if n == 0:  # (then the mask has no True: read a zero)
        src, pos = _zero_like_scalar(input).reshape(1), D.binary("mul", pos, 0)
    else:
        src, pos = F.reshape(source, (-1,)), F.clamp(pos, min=0)
    picked = F.gather(src, 0, pos)
    flat_in = F.reshape(F.expand(input, *shape), (-1,))
    out = F.reshape(D.elementwise("where", flat_mask, picked, flat_in), shape)
    if D.GRAD_ENABLED and (input._requires_grad or source._requires_grad):
        from . import autograd
        autograd.label(out, "MaskedScatterBackward0", input, source)
    return out


def _masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """The value `x.masked_scatter_(mask, source)` writes: the mask must expand to x's shape
    (PyTorch's expand error otherwise)."""
    D.check_tensor(mask, "masked_scatter_", "mask", 1)
    D.check_tensor(source, "masked_scatter_", "source", 2)
    if tuple(mask.shape) != tuple(self.shape):
        mask = F.expand(mask, *self.shape)
    return masked_scatter(self, mask, source)


_masked_scatter_.__name__ = "masked_scatter"


def _masked_scatter_method(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    D.check_tensor(mask, "masked_scatter", "mask", 1)  # (a method counts from its first argument)
    D.check_tensor(source, "masked_scatter", "source", 2)
    return masked_scatter(self, mask, source)


def _fill_diagonal(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """The value `x.fill_diagonal_(v, wrap)` writes: v at x[i, i, ..., i] (all dims of equal
    length beyond 2-d); with `wrap`, a 2-d matrix taller than wide + 1 restarts its diagonal
    every width + 1 rows, as numpy's fill_diagonal (PyTorch's, on contiguous tensors). The
    positions depend on the shape alone: a constant mask for `masked_fill`, so the gradient is
    zero there and passes elsewhere."""
    import numpy as np
    from .creation import tensor
    n = self.ndim
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if n > 2 and any(s != shape[0] for s in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, dtype=bool)
    diag = np.arange(_b.min(shape[0], shape[1]))
    mask[(diag,) * n] = True
    if wrap and n == 2 and shape[0] > shape[1] + 1:
        mask.reshape(-1)[::shape[1] + 1] = True
    return F.masked_fill(self, tensor(mask, device=self.device), fill_value)


_fill_diagonal.__name__ = "fill_diagonal"


# what fusetorch exports (and Tensor binds as methods) from here
PUBLIC = ("tril", "triu", "diagonal", "diag_embed", "diag", "trace", "movedim", "moveaxis",
          "roll", "rot90", "fliplr", "flipud", "tile", "broadcast_to", "select", "outer", "ger",
          "inner", "kron", "addmm", "addmv", "addbmm", "baddbmm", "index_add",
          "index_copy",
          "index_fill", "scatter", "scatter_reduce", "repeat_interleave", "masked_scatter")
# torch.* only (no Tensor method of that name in PyTorch)
TORCH_ONLY = ("tril_indices", "triu_indices", "broadcast_tensors", "atleast_1d", "atleast_2d",
              "atleast_3d", "vstack", "row_stack", "hstack", "dstack", "column_stack",
              "meshgrid", "tensordot", "einsum")
# Tensor.<name>_ in place
INPLACE = ("tril", "triu", "index_add", "index_copy", "index_fill", "scatter", "scatter_reduce",
           "addmm", "addmv", "addbmm", "baddbmm")

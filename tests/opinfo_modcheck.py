"""Registry entries whose indices are sample arguments, with repeated indices among the
samples (issue 26: the index ops' own entries build their indices inside the variants, so the
registry's derived repeated-index samples never reached them). Each entry's first sample has
distinct indices; the registry derives its repeated-index sample from it, and each entry
also carries one of its own (`repeated`: every index equal, or runs of equal ones).

Ops that overwrite (index_copy, index_put, scatter, put without accumulating) leave which
duplicate wins unspecified (PyTorch documents it as nondeterministic) and PyTorch's source
gradient reaches every duplicate, where finite differences see only the winner: their entries
keep distinct indices and are opted out of the derived kind (`WIDEN_SKIP`).

scatter(reduce=...) has no derivative in PyTorch (its backward raises): a forward-only entry.
"""
from __future__ import annotations

import fusetorch as torch
import fusetorch.nn.functional as F
from opinfo import F64, WIDEN_SKIP, add, fixed, make


def _t(values):
    return torch.tensor(values)


# x [4, 4], a 1-d index over either dim, a source of [len(index), 4]
add("index_select(index arg)", {
    "torch.index_select(index arg)": lambda x, i: torch.index_select(x, 0, i),
    "Tensor.index_select(index arg)": lambda x, i: x.index_select(1, i)},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0, 2])]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 1, 3, 1, 1])]),
          ("f64_all_equal", lambda r: [make(r, (4, 4), F64), _t([2, 2, 2])])))

add("index_add(index arg)", {
    "torch.index_add(index arg)": lambda x, i, s: torch.index_add(x, 0, i, s),
    "Tensor.index_add(index arg)": lambda x, i, s: x.index_add(0, i, s, alpha=-1.5),
    "Tensor.index_add_(index arg)": lambda x, i, s: x.clone().index_add_(0, i, s)},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0, 2]), make(r, (3, 4))]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 1, 3, 1, 1]),
                                      make(r, (5, 4), F64)]),
          ("f64_all_equal", lambda r: [make(r, (4, 4), F64), _t([2, 2, 2]),
                                       make(r, (3, 4), F64, layout="t")])))

add("index_fill(index arg)", {
    "torch.index_fill(index arg)": lambda x, i: torch.index_fill(x, 0, i, 1.5),
    "Tensor.index_fill(index arg)": lambda x, i: x.index_fill(1, i, -2.0),
    "Tensor.index_fill_(index arg)": lambda x, i: x.clone().index_fill_(0, i, 0.5)},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0])]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 1, 3, 1])]),
          ("f64_all_equal", lambda r: [make(r, (4, 4), F64), _t([0, 0, 0])])))

# the fill value as a 0-d tensor: its gradient sums over the filled elements, once each
add("index_fill(tensor value)", {
    "torch.index_fill(tensor value)": lambda x, i, v: torch.index_fill(x, 0, i, v),
    "Tensor.index_fill_(tensor value)": lambda x, i, v: x.clone().index_fill_(1, i, v)},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0]), make(r, ())]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64), _t([2, 2, 1, 2]),
                                      make(r, (), F64)])))

add("index_put(accumulate, index arg)", {
    "torch.index_put(accumulate, index arg)": lambda x, i, j, v: torch.index_put(
        x, (i, j), v, accumulate=True),
    "Tensor.index_put_(accumulate, index arg)": lambda x, i, j, v: x.clone().index_put_(
        (i, j), v, accumulate=True),
    "Tensor.index_put(rows, index arg)": lambda x, i, j, v: x.index_put(
        (i,), v[:, None], accumulate=True)},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([0, 2, 3]), _t([1, 3, 0]), make(r, (3,))]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 1, 1, 2]),
                                      _t([3, 3, 0, 3]), make(r, (4,), F64)])))

# gather-like reads: x [4, 3], index [4, 3] with values in [0, 3)
add("gather(index arg)", {
    "torch.gather(index arg)": lambda x, i: torch.gather(x, 0, i),
    "Tensor.gather(index arg)": lambda x, i: x.gather(1, i),
    "torch.take_along_dim(index arg)": lambda x, i: torch.take_along_dim(x, i, 0),
    "Tensor.take_along_dim(index arg)": lambda x, i: x.take_along_dim(i, dim=1)},
    fixed(("f32", lambda r: [make(r, (4, 3)), _t([[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1]])]),
          ("f64_repeated", lambda r: [make(r, (4, 3), F64, layout="t"),
                                      _t([[1, 1, 1], [0, 0, 2], [1, 1, 1], [2, 2, 2]])])))

add("take(index arg)", {
    "torch.take(index arg)": lambda x, i: torch.take(x, i),
    "Tensor.take(index arg)": lambda x, i: x.take(i)},
    fixed(("f32", lambda r: [make(r, (3, 4)), _t([[0, 5], [11, 7]])]),
          ("f64_repeated", lambda r: [make(r, (3, 4), F64, layout="t"), _t([4, 4, 1, 4, 4])])))

# accumulating scatters: x [4, 3], index [2, 3] with values in [0, 4), src [2, 3]
add("scatter_add(index arg)", {
    "torch.scatter_add(index arg)": lambda x, i, s: torch.scatter_add(x, 0, i, s),
    "Tensor.scatter_add_(index arg)": lambda x, i, s: x.clone().scatter_add_(0, i, s),
    "torch.scatter_reduce(sum, index arg)": lambda x, i, s: torch.scatter_reduce(
        x, 0, i, s, "sum"),
    "torch.scatter_reduce(mean, index arg)": lambda x, i, s: torch.scatter_reduce(
        x, 0, i, s, "mean", include_self=False),
    "Tensor.scatter_reduce_(mean, index arg)": lambda x, i, s: x.clone().scatter_reduce_(
        0, i, s, "mean")},
    fixed(("f32", lambda r: [make(r, (4, 3)), _t([[0, 1, 2], [3, 2, 0]]), make(r, (2, 3))]),
          ("f64_repeated", lambda r: [make(r, (4, 3), F64, layout="t"),
                                      _t([[1, 1, 1], [1, 1, 3]]), make(r, (2, 3), F64)])))

add("scatter_reduce(prod/amax/amin, index arg)", {
    "torch.scatter_reduce(prod, index arg)": lambda x, i, s: torch.scatter_reduce(
        x, 0, i, s, "prod"),
    "Tensor.scatter_reduce(amax, index arg)": lambda x, i, s: x.scatter_reduce(
        0, i, s, "amax"),
    "Tensor.scatter_reduce(amin, index arg)": lambda x, i, s: x.scatter_reduce(
        0, i, s, "amin", include_self=False),
    "Tensor.scatter_reduce_(prod, index arg)": lambda x, i, s: x.clone().scatter_reduce_(
        0, i, s, "prod", include_self=False)},
    fixed(("f32", lambda r: [make(r, (4, 3)), _t([[0, 1, 2], [3, 2, 0]]), make(r, (2, 3))]),
          ("f64_repeated", lambda r: [make(r, (4, 3), F64, layout="t"),
                                      _t([[1, 1, 1], [1, 1, 3]]), make(r, (2, 3), F64)])))

add("index_reduce(index arg)", {
    "torch.index_reduce(prod, index arg)": lambda x, i, s: torch.index_reduce(
        x, 0, i, s, "prod"),
    "torch.index_reduce(mean, index arg)": lambda x, i, s: torch.index_reduce(
        x, 0, i, s, "mean", include_self=False),
    "Tensor.index_reduce(amax, index arg)": lambda x, i, s: x.index_reduce(0, i, s, "amax"),
    "Tensor.index_reduce_(amin, index arg)": lambda x, i, s: x.clone().index_reduce_(
        0, i, s, "amin", include_self=False)},
    fixed(("f32", lambda r: [make(r, (4, 3)), _t([3, 0, 2]), make(r, (3, 3))]),
          ("f64_repeated", lambda r: [make(r, (4, 3), F64, layout="t"), _t([1, 1, 3, 1, 1]),
                                      make(r, (5, 3), F64)])))

add("put(accumulate, index arg)", {
    "Tensor.put(accumulate, index arg)": lambda x, i, s: x.put(i, s, accumulate=True),
    "Tensor.put_(accumulate, index arg)": lambda x, i, s: x.clone().put_(i, s,
                                                                        accumulate=True),
    "torch.put(accumulate, index arg)": lambda x, i, s: torch.put(x, i, s, accumulate=True)},
    fixed(("f32", lambda r: [make(r, (3, 4)), _t([0, 5, 11]), make(r, (3,))]),
          ("f64_repeated", lambda r: [make(r, (3, 4), F64, layout="t"), _t([7, 7, 2, 7]),
                                      make(r, (4,), F64)])))

# advanced indexing reads (Tensor.__getitem__ with index tensors)
add("getitem(index arg)", {
    "Tensor.__getitem__(index arg)": lambda x, i: x[i],
    "Tensor.__getitem__(two index args)": lambda x, i: x[i, i.flip(0)],
    "Tensor.__getitem__(index arg, slice)": lambda x, i: x[1:, i]},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0, 2])]),
          ("f64_repeated", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 1, 2, 1])])))

add("F.embedding(index arg, repeated)", {
    "F.embedding(repeated)": lambda w, i: F.embedding(i, w),
    "F.embedding(2-d ids)": lambda w, i: F.embedding(i.reshape(2, -1), w)},
    fixed(("f32", lambda r: [make(r, (5, 3)), _t([4, 0, 2, 1])]),
          ("f64_repeated", lambda r: [make(r, (5, 3), F64), _t([3, 3, 1, 3])])))

# overwriting writes: distinct indices only (see the module docstring)
_OVERWRITES = "index_copy/index_put/scatter/put(index arg)"
add(_OVERWRITES, {
    "torch.index_copy(index arg)": lambda x, i, s: torch.index_copy(x, 0, i, s),
    "Tensor.index_copy_(index arg)": lambda x, i, s: x.clone().index_copy_(0, i, s),
    "torch.index_put(index arg)": lambda x, i, s: torch.index_put(x, (i,), s),
    "torch.scatter(index arg)": lambda x, i, s: torch.scatter(x, 0, i[:, None].expand(3, 4),
                                                              s),
    "Tensor.put_(index arg)": lambda x, i, s: x.clone().put_(i * 4, s[:, 0])},
    fixed(("f32", lambda r: [make(r, (4, 4)), _t([3, 0, 2]), make(r, (3, 4))]),
          ("f64", lambda r: [make(r, (4, 4), F64, layout="t"), _t([1, 2, 0]),
                             make(r, (3, 4), F64)])))
WIDEN_SKIP[(_OVERWRITES, "repeated_index")] = (
    "duplicates overwrite in an unspecified order (PyTorch: nondeterministic), and PyTorch's "
    "source gradient reaches every duplicate where finite differences see only the winner")

# scatter(reduce=...): values only (PyTorch's backward refuses it)
add("scatter(reduce)", {
    "Tensor.scatter_(reduce add)": lambda x, i, s: x.clone().scatter_(0, i, s, reduce="add"),
    "torch.scatter(reduce multiply)": lambda x, i, s: torch.scatter(x, 0, i, s,
                                                                    reduce="multiply"),
    "Tensor.scatter(reduce add, value)": lambda x, i, s: x.scatter(0, i, 2.5, reduce="add")},
    fixed(("f32", lambda r: [make(r, (4, 3)), _t([[0, 1, 2], [3, 2, 0]]), make(r, (2, 3))]),
          ("f64_repeated", lambda r: [make(r, (4, 3), F64), _t([[1, 1, 1], [1, 1, 3]]),
                                      make(r, (2, 3), F64)])), grad=False)

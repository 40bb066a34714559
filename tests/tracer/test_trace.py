"""Recording programs into graphs with `fusetorch.tracer.trace` / `capture`, and re-running them.

Each program is traced once, its graph printed and verified, then re-executed with
`fusetorch.tracer.run` on fresh random inputs and compared with running the same Python program
eagerly on those inputs, and (where easy) with numpy in float64. PyTorch's type-promotion results
used below were checked by hand against PyTorch 2.13.0.
"""
import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fusetorch as torch
from fusetorch.tracer import capture, run, trace
from fusetorch.tracer.dispatch import is_recording

F64 = np.float64
LINE = re.compile(r"^%(\d+) = (\w+)\((.*)\) : (b8|u8|i8|i16|i32|i64|f16|f32|f64)\[([\d,]*)\]"
                  r"(  # \S+:\d+)?$")


def T(a, dtype=None):
    """A fusetorch tensor holding a copy of numpy array `a`."""
    a = np.asarray(a)
    return torch.tensor(a.copy()) if dtype is None else torch.tensor(a.copy(), dtype=dtype)


def randn(rng, *shape, dtype=np.float32):
    return T(rng.standard_normal(shape).astype(dtype))


def copies(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def np64(t):
    return np.asarray(t.numpy(), dtype=F64)


def check_text(g):
    """The printed graph: one well-formed line per node, numbered in order, then `return`."""
    text = str(g)
    lines = text.splitlines()
    assert len(lines) == len(g.nodes) + 1
    for k, (line, node) in enumerate(zip(lines, g.nodes)):
        m = LINE.match(line)
        assert m, line
        assert int(m.group(1)) == k and m.group(2) == node.op
        assert m.group(5) == ",".join(str(d) for d in node.shape)
        for ref in re.findall(r"%(\d+)", m.group(3)):
            assert int(ref) < k
    assert re.fullmatch(r"return \((%\d+(, %\d+)*)?\)", lines[-1])
    return text


def check_program(fn, make_inputs, ref=None, rtol=1e-5, atol=1e-6, reruns=2):
    """Trace fn on one set of inputs, then run the graph on fresh ones and compare with eager
    (and with `ref`, a numpy float64 version of fn, when given). Returns the graph."""
    args = make_inputs()
    g, out = capture(fn, *copies(args))
    print(g)
    check_text(g)
    g.verify()
    assert len(g.inputs) == len([a for a in args if isinstance(a, torch.Tensor)])
    # the traced call itself computed the program
    for o, e in zip(as_tuple(out), as_tuple(fn(*copies(args)))):
        np.testing.assert_allclose(np64(o), np64(e), rtol=rtol, atol=atol)
    for _ in range(reruns):
        new = make_inputs()
        got = run(g, *copies(new))
        want = as_tuple(fn(*copies(new)))
        assert len(got) == len(want)
        for gt, w in zip(got, want):
            assert gt.dtype is w.dtype
            assert tuple(gt.shape) == tuple(w.shape)
            np.testing.assert_allclose(np64(gt), np64(w), rtol=rtol, atol=atol)
        if ref is not None:
            expect = as_tuple(ref(*[np64(a) if isinstance(a, torch.Tensor) else a
                                    for a in new]))
            assert len(expect) == len(got)
            for gt, e in zip(got, expect):
                e = np.asarray(e)
                assert tuple(gt.shape) == e.shape
                np.testing.assert_allclose(np64(gt), e.astype(F64), rtol=rtol, atol=atol)
    return g


def ops_of(g):
    return [n.op for n in g.nodes]


def bare(g):
    """The graph's text lines without their source comments."""
    return [line.split("  # ")[0] for line in g.text().splitlines()]


# ---------------------------------------------------------------- elementwise and broadcasting

def test_elementwise_with_scalars_and_broadcasting():
    rng = np.random.default_rng(1)

    def prog(x, y):
        a = x * 2 + y
        b = (1.5 - a) / (y.abs() + 1)
        c = torch.maximum(a, b).exp() - x.sigmoid() * 0.5
        d = torch.where(x > y, x, -y) ** 2
        return c + d.sqrt(), (a >= 0), 3 - x.relu()

    def ref(x, y):
        a = x * 2 + y
        b = (1.5 - a) / (np.abs(y) + 1)
        c = np.exp(np.maximum(a, b)) - 1 / (1 + np.exp(-x)) * 0.5
        d = np.where(x > y, x, -y) ** 2
        return c + np.sqrt(d), a >= 0, 3 - np.maximum(x, 0)

    g = check_program(prog, lambda: [randn(rng, 3, 4), randn(rng, 4)], ref)
    assert [n.shape for n in g.inputs] == [(3, 4), (4,)]
    assert [n.dtype for n in g.outputs] == [torch.float32, torch.bool, torch.float32]
    assert {"mul", "add", "sub", "div", "abs", "maximum", "exp", "sigmoid", "gt", "neg",
            "where", "pow", "sqrt", "ge", "relu"} <= set(ops_of(g))


@st.composite
def broadcast_pair(draw):
    base = draw(st.lists(st.integers(0, 3), min_size=0, max_size=3))
    out = []
    for _ in range(2):
        k = draw(st.integers(0, len(base)))
        out.append(tuple(1 if draw(st.booleans()) else d for d in base[len(base) - k:]))
    return out


@settings(max_examples=30, deadline=None)
@given(broadcast_pair())
def test_broadcasting_shapes_rerun(shapes):
    rng = np.random.default_rng(len(shapes[0]) * 10 + len(shapes[1]))

    def prog(a, b):
        return torch.where(a > b, a * b, b - 0.25).tanh() + torch.minimum(a, b) * 3

    def ref(a, b):
        return np.tanh(np.where(a > b, a * b, b - 0.25)) + np.minimum(a, b) * 3

    g = check_program(prog, lambda: [randn(rng, *shapes[0]), randn(rng, *shapes[1])], ref,
                      reruns=1)
    assert g.outputs[0].shape == np.broadcast_shapes(*shapes)


def test_type_promotion_inserts_casts():
    rng = np.random.default_rng(2)

    def prog(i, f, d0):
        a = i + 1.5     # int64 tensor + float scalar -> float32 (PyTorch 2.13.0)
        b = i * 2       # stays int64
        c = i / 2       # true division -> float32
        e = i + d0      # int64 tensor + float64 0-d tensor -> float64
        h = f + d0      # float32 tensor + float64 0-d tensor -> float32
        k = i.exp()     # int64 -> float32
        m = i < 1.5     # bool
        return a, b, c, e, h, k, m

    def ref(i, f, d0):
        return i + 1.5, i * 2, i / 2, i + d0, f + d0, np.exp(i), i < 1.5

    def inputs():
        return [T(rng.integers(-3, 4, size=(2, 3))), randn(rng, 3),
                T(rng.standard_normal(()), dtype=torch.float64)]

    g = check_program(prog, inputs, ref)
    assert [o.dtype for o in g.outputs] == [torch.float32, torch.int64, torch.float32,
                                            torch.float64, torch.float32, torch.float32,
                                            torch.bool]
    casts = [n for n in g.nodes if n.op == "cast"]
    i_node, f_node, d_node = g.inputs
    # every computation on the int input in float goes through a cast of that input
    assert {(c.inputs[0] is i_node, c.attrs["dtype"]) for c in casts} >= {
        (True, torch.float32), (True, torch.float64)}
    assert any(c.inputs[0] is d_node and c.attrs["dtype"] is torch.float32 for c in casts)
    # the int-only product has no cast in front of it
    mul = g.outputs[1]
    assert mul.op == "mul" and mul.inputs[0] is i_node
    # IR elementwise nodes are monomorphic
    for n in g.nodes:
        if n.opdef.kind == "elementwise" and n.op != "cast":
            ins = n.inputs[1:] if n.op == "where" else n.inputs
            assert len({x.dtype for x in ins}) == 1, n
    text = str(g)
    assert "cast(%0, dtype=f32) : f32[2,3]" in text
    assert "cast(%0, dtype=f64) : f64[2,3]" in text


def test_bool_and_small_int_promotion():
    rng = np.random.default_rng(3)

    def prog(b, u):
        return b + 1, b * 2.5, u + 1, b & (u > 1)

    def inputs():
        return [T(rng.random(4) > 0.5), T(rng.integers(0, 5, size=(4,)).astype(np.uint8))]

    g = check_program(prog, inputs, lambda b, u: (b + 1, b * 2.5, u + 1, (b != 0) & (u > 1)))
    # PyTorch 2.13.0: bool + 1 -> int64, bool * 2.5 -> float32, uint8 + 1 -> uint8
    assert [o.dtype for o in g.outputs] == [torch.int64, torch.float32, torch.uint8, torch.bool]


# ---------------------------------------------------------------- reductions and matmul

def test_reductions_with_dims():
    rng = np.random.default_rng(4)

    def prog(x):
        return (x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.max(dim=1).values,
                x.max(dim=1).indices, x.amin((0, 1)), x.prod(0), x.var(2), x.argmax(),
                torch.sum(x), x.std(dim=0, keepdim=True))

    def ref(x):
        return (x.sum(1), x.sum((0, 2), keepdims=True), x.mean(-1), x.max(1), x.argmax(1),
                x.min((0, 1)), x.prod(0), x.var(2, ddof=1), x.argmax(), x.sum(),
                x.std(0, ddof=1, keepdims=True))

    g = check_program(prog, lambda: [randn(rng, 3, 4, 5)], ref)
    assert [tuple(o.shape) for o in g.outputs] == [(3, 5), (1, 4, 1), (3, 4), (3, 5), (3, 5),
                                                   (5,), (4, 5), (3, 4), (), (), (1, 4, 5)]
    assert g.outputs[4].dtype is torch.int64
    assert "sum(%0, dims=(1,), keepdim=False) : f32[3,5]" in str(g)
    assert "sum(%0, dims=(0, 2), keepdim=True) : f32[1,4,1]" in str(g)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=3), st.data())
def test_reductions_random_dims(shape, data):
    dims = tuple(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)), max_size=len(shape))))
    if not shape:
        dims = ()
    keep = data.draw(st.booleans())
    rng = np.random.default_rng(sum(shape))

    def prog(x):
        return x.sum(dims if dims else None, keepdim=keep) * 2, (x * x).sum(dims or None)

    def ref(x):
        ax = dims if dims else None
        return x.sum(ax, keepdims=keep) * 2, (x * x).sum(ax)

    check_program(prog, lambda: [randn(rng, *shape)], ref, reruns=1)


def test_matmul():
    rng = np.random.default_rng(5)

    def prog(a, b, v, B):
        return (a @ b, torch.matmul(B, b), a @ v, v @ b, torch.mm(a, b).relu(),
                torch.bmm(B, B.transpose(1, 2)), v @ v, B @ v)

    def ref(a, b, v, B):
        return (a @ b, B @ b, a @ v, v @ b, np.maximum(a @ b, 0), B @ B.transpose(0, 2, 1),
                v @ v, B @ v)

    g = check_program(prog, lambda: [randn(rng, 3, 4), randn(rng, 4, 5), randn(rng, 4),
                                     randn(rng, 2, 3, 4)], ref)
    assert ops_of(g).count("matmul") == 8
    for n in g.nodes:
        if n.op == "matmul":  # the primitive is batched matmul of >= 2-d operands
            assert len(n.inputs[0].shape) >= 2 and len(n.inputs[1].shape) >= 2


# ---------------------------------------------------------------- movement

def test_reshape_permute_expand_transpose():
    rng = np.random.default_rng(6)

    def prog(x, r):
        return (x.reshape(6, 4), x.permute(2, 0, 1), x[:, :1].expand(2, 5, 4),
                x.transpose(0, 2), x.view(-1), x.flatten(1), x.unsqueeze(1),
                x[:, :1].squeeze(1), x.reshape(6, 4).t(), r.expand(3, 2, 4) + x.sum(1),
                x.permute(1, 2, 0).reshape(3, -1).T, x.flip(1))

    def ref(x, r):
        return (x.reshape(6, 4), x.transpose(2, 0, 1), np.broadcast_to(x[:, :1], (2, 5, 4)),
                x.transpose(2, 1, 0), x.reshape(-1), x.reshape(2, 12), x[:, None],
                x[:, 0], x.reshape(6, 4).T, np.broadcast_to(r, (3, 2, 4)) + x.sum(1),
                x.transpose(1, 2, 0).reshape(3, -1).T, x[:, ::-1])

    g = check_program(prog, lambda: [randn(rng, 2, 3, 4), randn(rng, 1, 4)], ref)
    assert {"reshape", "permute", "expand", "index"} <= set(ops_of(g))
    assert "permute(%0, perm=(2, 0, 1)) : f32[4,2,3]" in str(g)


# ---------------------------------------------------------------- indexing

def test_getitem_slices_ints_none_and_int_tensors():
    rng = np.random.default_rng(7)

    def prog(x, i, j):
        return (x[1], x[:, 1:3], x[..., ::2], x[None, 0, :, None], x[-1, -2],
                x[i], x[:, i], x[i, :, j], x[0, :, i], x[1:, None, i], x[[0, 1]])

    def ref(x, i, j):
        i, j = i.astype(np.int64), j.astype(np.int64)
        return (x[1], x[:, 1:3], x[..., ::2], x[None, 0, :, None], x[-1, -2],
                x[i], x[:, i], x[i, :, j],
                x[0][:, i],           # PyTorch: ints first, then [3, len(i)]
                x[1:, None][:, :, i], x[[0, 1]])

    def inputs():
        return [randn(rng, 3, 3, 4), T(rng.integers(-3, 3, size=(2,))),
                T(rng.integers(0, 4, size=(2,)))]

    g = check_program(prog, inputs, ref)
    assert [n.dtype for n in g.inputs] == [torch.float32, torch.int64, torch.int64]
    assert tuple(g.outputs[8].shape) == (3, 2)
    # the index tensors are graph inputs, not baked-in constants
    uses_i = [n for n in g.nodes if any(x is g.inputs[1] for x in n.inputs)]
    assert len(uses_i) >= 4


def test_getitem_bool_mask_is_data_dependent():
    rng = np.random.default_rng(8)
    x = randn(rng, 4, 5)
    m = T(rng.random(4) > 0.5)

    def prog(x, m):
        return x[x > 0] * 2, x[m], x[:, 0][m]

    g, out = capture(prog, x.clone(), m.clone())
    check_text(g)
    g.verify()
    assert "nonzero" in ops_of(g)
    n_pos, n_rows = int((x.numpy() > 0).sum()), int(m.numpy().sum())
    assert tuple(out[0].shape) == (n_pos,) and tuple(out[1].shape) == (n_rows, 5)
    # same number of selected elements, at other places: the graph computes the new selection
    perm = rng.permutation(20)
    x2 = T(x.numpy().reshape(-1)[perm].reshape(4, 5))
    m2 = T(m.numpy()[::-1])
    got = run(g, x2, m2)
    want = prog(x2, m2)
    xa, ma = x2.numpy(), m2.numpy()
    for a, b, c in zip(got, want, (xa[xa > 0] * 2, xa[ma], xa[:, 0][ma])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_allclose(np64(a), c.astype(F64))
    # a different count cannot be replayed: a clear error, not a silently truncated result
    x3 = T(np.abs(x.numpy()) + 1)
    with pytest.raises(RuntimeError, match="data-dependent"):
        run(g, x3, m)


def test_setitem_mask_and_inplace_ops():
    rng = np.random.default_rng(9)

    def prog(x, z):
        x[x < 0] = 0
        y = z.clone()
        y.add_(1)
        y.mul_(z)
        y[0] = 5.0
        y[:, 1] = x[:, 0]
        y[y > 4] = -1
        y += 2
        y.clamp_(max=2.5)
        y.sub_(x)
        return x, y, y * 1

    def ref(x, z):
        x = np.where(x < 0, 0, x)
        y = (z + 1) * z
        y[0] = 5.0
        y[:, 1] = x[:, 0]
        y[y > 4] = -1
        y = np.minimum(y + 2, 2.5) - x
        return x, y, y

    g = check_program(prog, lambda: [randn(rng, 3, 4), randn(rng, 3, 4)], ref)
    # the mask assignments are functional (where), so fresh inputs with any number of
    # selected elements replay
    assert "nonzero" not in ops_of(g)
    assert ops_of(g).count("where") == 2
    # x was assigned in place: its graph value is the where node, not the input
    assert g.outputs[0] is not g.inputs[0] and g.outputs[0].op == "where"


def test_setitem_mask_with_row_mask_and_int_dtype():
    rng = np.random.default_rng(10)

    def prog(x, m, i, v):
        x = x.clone()
        x[m] = v            # a row mask, a value row broadcast to every selected row
        i = i.clone()
        i[i < 0] = 2.7      # int tensor: the float value is truncated to 2 (PyTorch)
        return x, i

    def ref(x, m, i, v):
        x = np.where(m[:, None] != 0, v, x)
        return x, np.where(i < 0, 2, i)

    def inputs():
        return [randn(rng, 4, 3), T(rng.random(4) > 0.5), T(rng.integers(-3, 3, size=(5,))),
                randn(rng, 3)]

    g = check_program(prog, inputs, ref)
    assert g.outputs[1].dtype is torch.int64


def test_inplace_on_an_input_is_seen_by_the_graph():
    rng = np.random.default_rng(11)

    def prog(x, z):
        x.mul_(z)
        x.add_(1)
        x[1:] = 0.0
        return x.exp()

    def ref(x, z):
        x = x * z + 1
        x[1:] = 0.0
        return np.exp(x)

    g = check_program(prog, lambda: [randn(rng, 3, 2), randn(rng, 2)], ref)
    assert len(g.inputs) == 2
    assert g.outputs[0].op == "exp" and g.outputs[0].inputs[0].op == "index_put"


def test_setitem_with_int_tensor_index_replays():
    rng = np.random.default_rng(12)

    def prog(x, i, v):
        y = x.clone()
        y[i] = v
        y[:, i] = 0
        return y

    def ref(x, i, v):
        y = x.copy()
        y[i.astype(np.int64)] = v
        y[:, i.astype(np.int64)] = 0
        return y

    def inputs():
        return [randn(rng, 4, 4), T(rng.permutation(4)[:2]), randn(rng, 4)]

    check_program(prog, inputs, ref)


def test_inplace_on_a_view_is_seen_by_the_base():
    rng = np.random.default_rng(13)

    def prog(x):
        y = x.clone()
        row = y[0]
        row.mul_(10)
        return y

    def ref(x):
        y = x.copy()
        y[0] *= 10
        return y

    check_program(prog, lambda: [randn(rng, 3, 2)], ref)


# ---------------------------------------------------------------- creation inside a trace

def test_creation_functions_become_source_nodes():
    rng = np.random.default_rng(14)

    def prog(x):
        z = torch.zeros(3, 4) + torch.ones(4) * 2
        r = torch.arange(4) * x
        f = torch.full((3, 1), 0.5)
        e = torch.arange(0.0, 1.0, 0.25)
        c = torch.tensor([1.0, -1.0, 2.0, 0.0])
        return z + r + f + e + c, torch.zeros_like(x), torch.ones(2, dtype=torch.int32)

    def ref(x):
        return (np.zeros((3, 4)) + 2 + np.arange(4) * x + 0.5 + np.arange(0, 1, 0.25)
                + np.array([1.0, -1.0, 2.0, 0.0]), np.zeros_like(x), np.ones(2))

    g = check_program(prog, lambda: [randn(rng, 3, 4)], ref)
    assert len(g.inputs) == 1
    sources = [n for n in g.nodes if n.opdef.kind == "source" and n.op != "input"]
    assert {n.op for n in sources} >= {"full", "iota", "constant"}
    assert "%1 = full(value=0.0) : f32[3,4]" in str(g)
    assert any(n.op == "iota" and n.attrs["start"] == 0 and n.attrs["step"] == 1
               and n.dtype is torch.int64 and n.shape == (4,) for n in g.nodes)
    assert any(n.op == "iota" and n.dtype is torch.float32 and n.shape == (4,)
               for n in g.nodes)
    assert g.outputs[2].op == "full" and g.outputs[2].dtype is torch.int32


# ---------------------------------------------------------------- cat, stack, split

def test_cat_stack_split():
    rng = np.random.default_rng(15)

    def prog(a, b):
        c = torch.cat([a, b], 0)
        s = torch.stack([a[0], b[1], a[1]], 1)
        p, q, r = torch.split(c, [1, 2, 3])
        h1, h2 = c.chunk(2, dim=1)
        u = torch.unbind(a, 1)
        return c, s, p, q, r, h1, h2, torch.cat([p, r], 0).sum(0), u[2], torch.stack(
            [a, a * 2], -1)

    def ref(a, b):
        c = np.concatenate([a, b], 0)
        return (c, np.stack([a[0], b[1], a[1]], 1), c[:1], c[1:3], c[3:], c[:, :2], c[:, 2:],
                np.concatenate([c[:1], c[3:]], 0).sum(0), a[:, 2], np.stack([a, a * 2], -1))

    g = check_program(prog, lambda: [randn(rng, 2, 3), randn(rng, 4, 3)], ref)
    assert "cat(%0, %1, dim=0) : f32[6,3]" in str(g)


def test_cat_promotes_mixed_dtypes():
    rng = np.random.default_rng(16)

    def prog(a, b):
        return torch.cat([a, b], 1)

    def inputs():
        return [T(rng.integers(0, 9, size=(2, 2))), randn(rng, 2, 3)]

    g = check_program(prog, inputs, lambda a, b: np.concatenate([a, b], 1))
    assert g.outputs[0].dtype is torch.float32
    assert g.outputs[0].inputs[0].op == "cast"


# ---------------------------------------------------------------- structural hash

def _prog_a(x, y):
    return (x * y + 1).sum(0)


def _prog_b(x, y):
    return (x * y + 2).sum(0)


def _prog_c(x, y):
    return (x + y + 1).sum(0)


def test_hash_equal_for_different_values_and_different_otherwise():
    rng = np.random.default_rng(17)

    def h(fn, *args):
        return capture(fn, *args)[0]

    g1 = h(_prog_a, randn(rng, 3, 4), randn(rng, 4))
    g2 = h(_prog_a, randn(rng, 3, 4), randn(rng, 4))
    assert g1.structural_hash() == g2.structural_hash()
    assert g1.text() == g2.text()
    others = [
        h(_prog_b, randn(rng, 3, 4), randn(rng, 4)),        # another constant
        h(_prog_c, randn(rng, 3, 4), randn(rng, 4)),        # another op
        h(_prog_a, randn(rng, 5, 4), randn(rng, 4)),        # another shape
        h(_prog_a, randn(rng, 3, 4), randn(rng, 1, 4)),     # another broadcast
        h(_prog_a, randn(rng, 3, 4, dtype=np.float64), randn(rng, 4, dtype=np.float64)),
        h(lambda x, y: _prog_a(y, x), randn(rng, 4), randn(rng, 3, 4)),  # wiring and order
    ]
    hashes = {g1.structural_hash()} | {g.structural_hash() for g in others}
    assert len(hashes) == len(others) + 1


def test_hash_equal_with_mask_assignment_and_index_inputs():
    rng = np.random.default_rng(18)

    def prog(x, i):
        y = x.clone()
        y[y < 0] = 0
        return y[i] + y.sum()

    hs = {capture(prog, randn(rng, 5, 3), T(rng.integers(0, 5, size=(2,))))[0].structural_hash()
          for _ in range(3)}
    assert len(hs) == 1


# ---------------------------------------------------------------- what a trace records

def test_nothing_is_recorded_outside_a_trace():
    rng = np.random.default_rng(19)
    x = randn(rng, 3)
    before_any = x * 2
    assert not is_recording()
    with trace(x) as rec:
        assert is_recording()
        y = x.exp()
    assert not is_recording()
    text = rec.graph(y).text()
    assert bare(rec.graph(y)) == ["%0 = input() : f32[3]", "%1 = exp(%0) : f32[3]",
                                  "return (%1)"]
    # ops after the block, even in-place ones on traced tensors, are not recorded
    z = y * 3 + before_any
    y.add_(1)
    y[0] = 7.0
    assert rec.graph(y).text() == text
    assert len(rec.inputs) == 1
    np.testing.assert_allclose(np64(z), np.exp(np64(x)) * 3 + np64(x) * 2, rtol=1e-6)
    # a new trace starts empty: earlier results are its inputs, earlier ops are not in it
    with trace(x) as rec2:
        w = before_any + x
    g = rec2.graph(w)
    assert ops_of(g) == ["input", "input", "add"]
    assert rec2.input_tensors[1] is before_any


def test_trace_ends_on_exception():
    x = torch.ones(3)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        with trace(x):
            x + torch.ones(4)
    assert not is_recording()


def test_outside_tensor_becomes_an_input():
    rng = np.random.default_rng(20)
    w = randn(rng, 4)
    bias = randn(rng, 3, 1)

    def prog(x):
        return (x * w + bias).relu()

    x = randn(rng, 3, 4)
    g, out = capture(prog, x)
    check_text(g)
    g.verify()
    assert [n.shape for n in g.inputs] == [(3, 4), (4,), (3, 1)]
    x2, w2, b2 = randn(rng, 3, 4), randn(rng, 4), randn(rng, 3, 1)
    (got,) = run(g, x2, w2, b2)
    np.testing.assert_allclose(np64(got), np.maximum(np64(x2) * np64(w2) + np64(b2), 0),
                               rtol=1e-6)
    # same with an explicit recorder: inputs in order of first use, after the declared ones
    with trace(x) as rec:
        y = bias * 2 + x
        y = y - w
    assert [id(t) for t in rec.input_tensors] == [id(x), id(bias), id(w)]
    assert [n.shape for n in rec.graph(y).inputs] == [(3, 4), (3, 1), (4,)]


def test_nested_traces():
    rng = np.random.default_rng(21)
    a = randn(rng, 3)
    with trace(a) as outer:
        b = a * 2
        with trace(b) as inner:
            c = b.exp()
        d = c + 1
    gi = inner.graph(c)
    assert bare(gi) == ["%0 = input() : f32[3]", "%1 = exp(%0) : f32[3]", "return (%1)"]
    go = outer.graph(d)
    go.verify()
    check_text(go)
    # the outer trace saw every op, the inner ones too: it depends on `a` alone
    assert len(go.inputs) == 1
    assert ops_of(go) == ["input", "constant", "mul", "exp", "constant", "add"]
    a2 = randn(rng, 3)
    (got,) = run(go, a2)
    np.testing.assert_allclose(np64(got), np.exp(np64(a2) * 2) + 1, rtol=1e-6)
    (gotc,) = run(gi, a2)
    np.testing.assert_allclose(np64(gotc), np.exp(np64(a2)), rtol=1e-6)


def test_nested_capture():
    rng = np.random.default_rng(22)

    def inner(y):
        return y.tanh() * 3

    def outer(x):
        g_in, r = capture(inner, x + 1)
        outer.inner_graph = g_in
        return r.sum()

    g, out = capture(outer, randn(rng, 2, 3))
    assert ops_of(outer.inner_graph) == ["input", "tanh", "constant", "mul"]
    assert len(g.inputs) == 1
    x2 = randn(rng, 2, 3)
    (got,) = run(g, x2)
    np.testing.assert_allclose(np64(got), (np.tanh(np64(x2) + 1) * 3).sum(), rtol=1e-5)


def test_run_checks_its_inputs():
    g, _ = capture(lambda x: x * 2, torch.ones(2, 3))
    with pytest.raises(TypeError, match="takes 1 inputs, got 2"):
        run(g, torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"f32\[2,3\]"):
        run(g, torch.ones(3, 2))
    with pytest.raises(RuntimeError, match=r"f32\[2,3\]"):
        run(g, torch.ones(2, 3, dtype=torch.float64))


def test_empty_and_zero_dim_programs():
    rng = np.random.default_rng(23)

    def prog(e, s):
        return e * s + 1, e.sum(0), s.exp() * 2, (e.reshape(3, 0) + s).permute(1, 0)

    def ref(e, s):
        return e * s + 1, e.sum(0), np.exp(s) * 2, (e.reshape(3, 0) + s).T

    g = check_program(prog, lambda: [randn(rng, 0, 3), randn(rng)], ref)
    assert [tuple(o.shape) for o in g.outputs] == [(0, 3), (3,), (), (0, 3)]


# ---------------------------------------------------------------- source comments

def _lines_prog(x, y):
    a = x * y
    b = torch.cat([a, y], 0)
    return b.sum(0)


def test_source_comments_name_this_file():
    first = _lines_prog.__code__.co_firstlineno
    g, _ = capture(_lines_prog, torch.ones(2, 3), torch.ones(1, 3))
    lines = g.text().splitlines()
    by_op = {line.split(" = ")[1].split("(")[0]: line for line in lines[:-1]}
    assert by_op["mul"].endswith(f"  # test_trace.py:{first + 1}")
    assert by_op["cat"].endswith(f"  # test_trace.py:{first + 2}")
    assert by_op["sum"].endswith(f"  # test_trace.py:{first + 3}")
    for n in g.nodes:
        src = (n.meta or {}).get("source")
        if src is not None:
            assert src.startswith("test_trace.py:")
            assert first < int(src.split(":")[1]) <= first + 3


def test_source_comment_of_an_inline_trace():
    x = torch.ones(2)
    with trace(x) as rec:
        y = x.neg(); line = inspect.currentframe().f_lineno  # noqa: E702
    assert rec.graph(y).text().splitlines()[1] == \
        f"%1 = neg(%0) : f32[2]  # test_trace.py:{line}"

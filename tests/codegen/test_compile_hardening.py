"""Compiled calls keep eager's guarantees on hostile or unusual inputs (issue 12).

- layouts: byte strides that are not whole elements never reach a kernel; any numpy-valid view
  (negative, zero, overlapping strides, offsets) gives eager's values (a property test);
- checks eager makes by reading values (indices in range, probabilities in [0, 1]) are made on
  every compiled replay, with PyTorch's exception types;
- bool bytes other than 0 and 1 read as true in kernels, as in numpy and PyTorch;
- rebinding a global or closure name the function read makes the next call trace again.
"""
import types
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch.runtime.layouts import element_strides
from fusetorch.ir import dtypes as dt
from fusetorch.runtime.device import backend, device
from fusetorch.tracer.tensor import Tensor


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


def wrap(a: np.ndarray) -> Tensor:
    """A tensor over exactly this numpy array, past every door's layout check: what a door that
    forgot its check would let through. Kernels must still never read outside it."""
    d = {np.dtype(np.float32): dt.float32, np.dtype(np.float64): dt.float64,
         np.dtype(np.bool_): dt.bool_}[a.dtype]
    return Tensor._make(a, d, backend(device("cpu")))


def calls(fn, *args, n=3):
    cf = torch.compile(fn)
    return [cf(*args) for _ in range(n)]


# ------------------------------------------------------------------ layouts


def test_structured_field_stride_gives_eager_values():
    rec = np.zeros(1000, dtype=[("a", "u1"), ("b", "<f4")])
    rec["b"] = np.arange(1000)
    t = wrap(rec["b"])  # byte stride 5
    assert t._data.strides == (5,)
    for got in calls(lambda x: (x + 1).sum(), t):
        assert got.item() == float(np.arange(1, 1001, dtype=np.float64).sum())


def test_byte_stride_minus_one_never_reaches_a_kernel():
    buf = np.arange(64, dtype=np.uint8)
    # 8 float32 elements, each starting one byte before the previous: inside the buffer, but
    # a kernel indexing in elements (stride -1 // 4 = -1) would walk 4 bytes per step
    a = as_strided(buf[40:].view(np.float32)[:1], shape=(8,), strides=(-1,))
    t = wrap(a)
    expect = (a.astype(np.float64) + 1).sum()
    for got in calls(lambda x: (x + 1).sum(), t):
        np.testing.assert_allclose(got.item(), expect, rtol=1e-6)


def test_compiled_eager_backward_interprets_an_unaligned_input():
    # frombuffer at an odd byte offset is a legal tensor (PyTorch accepts it) whose pointer is
    # not a whole element: after a backward program was built for its shape and strides, the
    # program's layout guard raised RuntimeError instead of the gradient
    n = 8192
    w = torch.randn(n, requires_grad=True)

    def grad_of(x):
        w.grad = None
        (x * w).exp().sum().backward()
        return w.grad.numpy()

    for _ in range(3):
        grad_of(torch.rand(n))  # interpreted, then built and run as a program
    raw = bytearray(1) + np.random.default_rng(0).random(n).astype(np.float32).tobytes()
    x = torch.frombuffer(raw, dtype=torch.float32, offset=1, count=n)
    assert not x.numpy().flags.aligned
    xv = x.numpy().astype(np.float64)
    expect = xv * np.exp(xv * w.detach().numpy())
    np.testing.assert_allclose(grad_of(x), expect, rtol=1e-5)


def test_lowering_refuses_partial_element_strides():
    rec = np.zeros(4, dtype=[("a", "u1"), ("b", "<f4")])
    with pytest.raises(RuntimeError, match="byte strides"):
        element_strides(rec["b"])
    assert element_strides(np.zeros((3, 4), np.float32)[:, ::-2]) == (4, -2)


_UNARY = [lambda x: (x * 2 + 1).exp().sum(),
          lambda x: torch.tanh(x - 0.5) * x,
          lambda x: (x * x).sum(-1),
          lambda x: (x.abs() + 1).log().amax(0)]
_BINARY = [lambda x, y: x * y + x,
           lambda x, y: ((x - y) ** 2).sum(),
           lambda x, y: torch.where(x > y, x, y * 2).sum(0)]


@st.composite
def strided_views(draw, base: np.ndarray):
    """A 2-d numpy view of `base` (a 1-d buffer): any start, any element strides (negative,
    zero, overlapping rows), always inside the buffer."""
    n = base.size
    rows = draw(st.integers(1, 5))
    cols = draw(st.integers(1, 6))
    s0 = draw(st.integers(-7, 7))
    s1 = draw(st.integers(-3, 3))
    lo = min(0, s0 * (rows - 1)) + min(0, s1 * (cols - 1))
    hi = max(0, s0 * (rows - 1)) + max(0, s1 * (cols - 1))
    start = draw(st.integers(-lo, n - 1 - hi)) if n - 1 - hi >= -lo else None
    if start is None:
        rows, cols, s0, s1, start = 1, 1, 0, 0, 0
    item = base.itemsize
    return as_strided(base[start:], shape=(rows, cols), strides=(s0 * item, s1 * item),
                      writeable=False)


@settings(max_examples=12, deadline=None)
@given(data=st.data(), which=st.integers(0, len(_UNARY) + len(_BINARY) - 1),
       double=st.booleans())
def test_compiled_matches_eager_on_any_strided_view(data, which, double):
    base = np.random.default_rng(which).standard_normal(64).astype(
        np.float64 if double else np.float32)
    x = data.draw(strided_views(base))
    if which < len(_UNARY):
        fn, args = _UNARY[which], (wrap(x),)
    else:
        y = data.draw(strided_views(base))  # may alias x: same buffer, overlapping
        if y.shape != x.shape:
            y = as_strided(y, shape=x.shape, strides=(0, 0))  # a broadcast scalar
        fn, args = _BINARY[which - len(_UNARY)], (wrap(x), wrap(y))
    expect = fn(*args).numpy()
    for got in calls(fn, *args):
        np.testing.assert_allclose(got.numpy(), expect, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ value checks


def _raises_on_third_call(fn, good: tuple, bad: tuple, exc, match: str):
    cf = torch.compile(fn)
    cf(*good)
    cf(*good)  # the replay path: kernels built, no more tracing
    with pytest.raises(exc, match=match):
        fn(*bad)  # eager raises ...
    with pytest.raises(exc, match=match):
        cf(*bad)  # ... and so does the compiled replay


def test_embedding_negative_index_raises_index_error():
    w = torch.randn(5, 3)
    _raises_on_third_call(lambda i, w: F.embedding(i, w) * 2, (torch.tensor([0, 1]), w),
                          (torch.tensor([0, -1]), w), IndexError, "index out of range")


def test_index_select_negative_index_does_not_wrap():
    w = torch.randn(5, 3)
    _raises_on_third_call(lambda x, i: x.index_select(0, i) + 1, (w, torch.tensor([4, 1])),
                          (w, torch.tensor([0, -2])), IndexError, "index out of range in self")


def test_one_hot_class_out_of_range():
    fn = lambda i: F.one_hot(i, 4).float() * 2
    _raises_on_third_call(fn, (torch.tensor([0, 3]),), (torch.tensor([0, 4]),), RuntimeError,
                          "smaller than num_classes")
    _raises_on_third_call(fn, (torch.tensor([0, 3]),), (torch.tensor([-1, 0]),), RuntimeError,
                          "non-negative")


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_binary_cross_entropy_input_outside_unit_interval(bad):
    t = torch.rand(4)
    _raises_on_third_call(F.binary_cross_entropy, (torch.rand(4), t),
                          (torch.tensor([0.5, bad, 0.2, 0.2]), t), RuntimeError,
                          "all elements of input should be between 0 and 1")


def test_binary_cross_entropy_keeps_its_gradient():
    x = torch.tensor([0.2, 0.7, 0.9], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    F.binary_cross_entropy(x, y).backward()
    xv, yv = x.detach().numpy(), y.numpy()
    expect = (xv - yv) / (xv * (1 - xv)) / 3  # d/dx of the mean of -(y log x + (1-y) log(1-x))
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)


def test_cross_entropy_bad_target_is_index_error():
    x = torch.randn(2, 3)
    _raises_on_third_call(F.cross_entropy, (x, torch.tensor([0, 2])), (x, torch.tensor([0, 3])),
                          IndexError, "Target 3 is out of bounds")
    # ignore_index is not a bad target, compiled or not
    cf = torch.compile(lambda x, t: F.cross_entropy(x, t, ignore_index=-100))
    t = torch.tensor([-100, 1])
    for got in (cf(x, t), cf(x, t), cf(x, t)):
        np.testing.assert_allclose(got.item(), F.cross_entropy(x[1:], t[1:]).item(), rtol=1e-6)


def test_scatter_add_rewritten_as_where_keeps_its_bounds_check():
    def fn(i, s):
        return torch.zeros(3, 4).scatter_add(1, i, s) * 2

    _raises_on_third_call(fn, (torch.tensor([[0], [1], [3]]), torch.ones(3, 1)),
                          (torch.tensor([[0], [1], [4]]), torch.ones(3, 1)), RuntimeError,
                          "index 4 is out of bounds for dimension 1 with size 4")


@pytest.mark.parametrize("bad, first", [([[0, 5], [7, 1]], 5), ([[1, -1], [0, 0]], -1)])
def test_gather_checks_a_users_index_in_the_graph(bad, first):
    """torch.gather's index is a `check` primitive before the gather (which trusts its index:
    its other callers make theirs), eager and compiled, naming the first bad value as PyTorch
    does (checked by hand against PyTorch 2.13)."""
    x = torch.arange(6.0).reshape(2, 3)
    _raises_on_third_call(lambda a, i: torch.gather(a, 1, i) * 2,
                          (x, torch.tensor([[0, 2], [1, 1]])), (x, torch.tensor(bad)),
                          RuntimeError, f"index {first} is out of bounds for dimension 1 with "
                                        "size 3")


def test_checks_are_in_the_graph_once():
    cf = torch.compile(lambda i, w: F.embedding(i, w).sum())
    w = torch.randn(5, 3)
    cf(torch.tensor([1, 2]), w)
    assert cf.graph().count("check(") == 1


# ------------------------------------------------------------------ bool bytes


def _odd_bools() -> Tensor:
    raw = np.array([0, 1, 2, 254, 128, 0, 3, 1] * 2, dtype=np.uint8)
    return wrap(raw.view(np.bool_))


@pytest.mark.parametrize("fn", [
    lambda b, o: b.float() * 1.5,
    lambda b, o: (b & o).float() + 0,
    lambda b, o: (b == o).float() + 0,
    lambda b, o: (b ^ o).float() + 0,
    lambda b, o: (b | ~o).float() + 0,
    lambda b, o: torch.where(b, 1.0, 2.0) * 1,
    lambda b, o: (b.float() * 2).sum(),
], ids=["float", "and", "eq", "xor", "or-not", "where", "sum"])
def test_bool_bytes_other_than_one_read_as_true(fn):
    b, o = _odd_bools(), wrap(np.ones(16, np.bool_))
    truth = np.array([0, 1, 1, 1, 1, 0, 1, 1] * 2, dtype=bool)  # what the bytes mean
    expect = fn(wrap(truth), o).numpy()
    for got in calls(fn, b, o):
        np.testing.assert_array_equal(got.numpy(), expect)


# ------------------------------------------------------------------ rebound names

W_GLOBAL = torch.ones(3)
SCALE = 2.0


def _reads_globals(x):
    return (x * W_GLOBAL * SCALE).sum()


def _helper(x):
    return x * W_GLOBAL


def _calls_helper(x):
    return _helper(x).sum()


def test_rebinding_a_global_tensor_or_scalar_retraces(monkeypatch):
    cf = torch.compile(_reads_globals)
    x = torch.ones(3)
    assert cf(x).item() == cf(x).item() == 6.0
    monkeypatch.setitem(globals(), "W_GLOBAL", torch.full((3,), 5.0))
    assert cf(x).item() == 30.0 == _reads_globals(x).item()
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    assert cf(x).item() == 45.0


def test_a_global_read_through_a_helper_function_is_guarded(monkeypatch):
    cf = torch.compile(_calls_helper)
    x = torch.ones(3)
    assert cf(x).item() == cf(x).item() == 3.0
    monkeypatch.setitem(globals(), "W_GLOBAL", torch.full((3,), 4.0))
    assert cf(x).item() == 12.0


def test_rebinding_a_closure_cell_retraces():
    s = torch.ones(3)

    def g(x):
        return (x + s).sum()

    cg = torch.compile(g)
    x = torch.ones(3)
    assert cg(x).item() == cg(x).item() == 6.0
    s = torch.zeros(3)  # noqa: F841 (read by g through its cell)
    assert cg(x).item() == 3.0


def test_a_module_forward_reading_a_global_is_guarded(monkeypatch):
    class M(torch.nn.Module):
        def forward(self, x):
            return (x * SCALE).sum()

    cm = torch.compile(M())
    x = torch.ones(2)
    assert cm(x).item() == cm(x).item() == 4.0
    monkeypatch.setitem(globals(), "SCALE", 10.0)
    assert cm(x).item() == 20.0


def _deep5(x):
    return x * SCALE


def _deep4(x):
    return _deep5(x)


def _deep3(x):
    return _deep4(x)


def _deep2(x):
    return _deep3(x)


def _deep1(x):
    return _deep2(x).sum()


class _Settings:
    scale = 2.0


cfg = types.ModuleType("user_settings")  # a module of the user's, read as `cfg.SCALE`
cfg.SCALE = 2.0


def _scaled(x, s):
    return (x * s * SCALE).sum()


class _Half(torch.nn.Module):
    def forward(self, x):
        return self.helper(x).sum()

    def helper(self, x):  # reached through `self`, not through a global
        return x * SCALE


_HALF = _Half()


def _calls_a_global_module(x):
    return _HALF(x) + 0


@pytest.mark.parametrize("case", ["method via self", "module held in a global",
                                  "five functions deep", "partial", "user module attribute",
                                  "class attribute"])
def test_globals_read_by_code_reached_other_ways_are_guarded(case, monkeypatch):
    monkeypatch.setitem(globals(), "SCALE", 2.0)
    monkeypatch.setattr(cfg, "SCALE", 2.0)
    monkeypatch.setattr(_Settings, "scale", 2.0)
    fn = {"method via self": _Half(), "module held in a global": _calls_a_global_module,
          "five functions deep": _deep1, "partial": partial(_scaled, s=1.0),
          "user module attribute": lambda x: (x * cfg.SCALE).sum(),
          "class attribute": lambda x: (x * _Settings.scale).sum()}[case]
    cf = torch.compile(fn)
    x = torch.ones(3)
    assert cf(x).item() == cf(x).item() == 6.0
    if case == "user module attribute":
        monkeypatch.setattr(cfg, "SCALE", 3.0)
    elif case == "class attribute":
        monkeypatch.setattr(_Settings, "scale", 3.0)
    else:
        monkeypatch.setitem(globals(), "SCALE", 3.0)
    assert fn(x).item() == 9.0
    assert cf(x).item() == 9.0  # the compiled replay returned 6.0 before


# ------------------------------------------------------------------ detach


def test_detach_inside_a_compiled_function_follows_new_arguments():
    f = torch.compile(lambda x: x.detach() * 2)
    assert f(torch.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert f(torch.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert f(torch.tensor([5.0, 7.0])).tolist() == [10.0, 14.0]  # was the traced [2, 4]


def test_detach_stops_the_gradient_in_compiled_code():
    g = torch.compile(lambda x: (x * x.detach()).sum())
    for values in ([1.0, 2.0], [1.0, 2.0], [3.0, -4.0]):
        w = torch.tensor(values, requires_grad=True)
        g(w).backward()
        assert w.grad.tolist() == values  # d/dx x*c = c, not 2x


class _Proxy:
    """A user object whose attribute lookups fail with something other than AttributeError."""

    def __getattr__(self, name):
        raise KeyError(name)


_PROXY = _Proxy()


def test_guards_look_at_odd_user_objects_without_failing():
    def fn(x):
        return x * 2 if _PROXY is not None else x

    cf = torch.compile(fn)
    x = torch.ones(2)
    assert cf(x).tolist() == cf(x).tolist() == [2.0, 2.0]

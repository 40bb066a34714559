"""PyTorch's public names added for issue 27 (the `names` work) that are settings, predicates,
storages or constructors rather than ops on values: their behaviour as PyTorch 2.13 shows it
(checked by hand). The ops themselves are registry entries (tests/opinfo_names.py)."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.nn import functional as F


def test_torch_inplace_functions_are_the_methods_with_their_checks():
    x = torch.tensor([-1.0, 4.0])
    assert torch.abs_(x) is x and x.tolist() == [1.0, 4.0]
    assert torch.sqrt_(x).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        torch.exp_(torch.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match=re.escape(
            "abs_(): argument 'input' (position 1) must be Tensor, not int")):
        torch.abs_(3)
    i = torch.tensor([1, 2])
    with pytest.raises(RuntimeError):  # an int tensor cannot hold sqrt's float result
        torch.sqrt_(i)


def test_aliases_are_their_targets():
    assert torch.greater is torch.gt and torch.not_equal is torch.ne
    assert torch.less_equal is torch.le and torch.greater_equal is torch.ge
    assert torch.Tensor.absolute is torch.Tensor.abs
    assert torch.Tensor.divide_ is torch.Tensor.div_
    assert torch.Tensor.less_ is torch.Tensor.lt_


def test_inplace_comparisons_write_ones_and_zeros_in_the_input_dtype():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert x.eq_(torch.tensor([1.0, 0.0, 3.0])) is x
    assert x.tolist() == [1.0, 0.0, 1.0] and x.dtype is torch.float32
    y = torch.tensor([1, 5, 3])
    assert y.greater_equal_(3).tolist() == [0, 1, 1] and y.dtype is torch.int64
    z = torch.tensor([1.0, 0.0])
    assert z.logical_or_(torch.tensor([0.0, 0.0])).tolist() == [1.0, 0.0]


def test_dropout_functions_take_atens_arguments():
    x = torch.ones(4, 6)
    assert torch.dropout(x, 0.5, False) is x
    torch.manual_seed(0)
    a = torch.dropout(x, 0.5, True)
    torch.manual_seed(0)
    b = F.dropout(x, 0.5, True)
    assert torch.equal(a, b) and set(a.unique().tolist()) <= {0.0, 2.0}
    torch.manual_seed(1)
    f = torch.feature_dropout(torch.ones(3, 4, 5), 0.5, True)
    for n in range(3):  # whole channels: each [n, c] row is all kept or all dropped
        for c in range(4):
            assert len(set(f[n, c].tolist())) == 1
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        torch.feature_dropout(torch.ones(3), 0.5, True)
    assert torch.feature_dropout(torch.ones(()), 0.5, False).item() == 1.0
    with pytest.raises(TypeError):
        torch.dropout(x, 0.5)  # `train` is required at torch level


def test_losses_take_atens_integer_reduction_whose_default_is_none():
    a, t = torch.tensor([0.2, -0.3, 0.5]), torch.tensor([0.1, 0.4, 0.5])
    s = torch.tensor([1.0, -1.0, 1.0])
    elems = torch.margin_ranking_loss(a, t, s, 0.1)
    want = np.maximum(0.0, -np.array([1.0, -1.0, 1.0]) * (np.array([0.2, -0.3, 0.5]) -
                                                          np.array([0.1, 0.4, 0.5])) + 0.1)
    np.testing.assert_allclose(elems.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(torch.margin_ranking_loss(a, t, s, 0.1, 1).item(), want.mean(),
                               rtol=1e-6)
    np.testing.assert_allclose(torch.margin_ranking_loss(a, t, s, 0.1, 2).item(), want.sum(),
                               rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ATen's kl_div mean has no batchmean warning
        k = torch.kl_div(a, t, 1)
    np.testing.assert_allclose(k.item(), np.mean(np.array([0.1, 0.4, 0.5]) * (
        np.log([0.1, 0.4, 0.5]) - np.array([0.2, -0.3, 0.5]))), rtol=1e-6)
    with pytest.raises(RuntimeError, match="3 is not a valid value for reduction"):  # (PyTorch
        # answers 'none' for any code but 1 and 2; fusetorch refuses a code that means nothing)
        torch.hinge_embedding_loss(a, s, 1.0, 3)


def test_pooling_and_recurrent_functions_return_what_aten_returns():
    x = torch.arange(12.0).reshape(1, 2, 6)
    v, i = torch.adaptive_max_pool1d(x, 3)
    assert v.tolist() == [[[1.0, 3.0, 5.0], [7.0, 9.0, 11.0]]]
    assert i.tolist() == [[[1, 3, 5], [1, 3, 5]]]
    assert isinstance(torch.max_pool1d(x, 2), torch.Tensor)
    assert torch.avg_pool1d(x, 2, []).tolist() == [[[0.5, 2.5, 4.5], [6.5, 8.5, 10.5]]]
    out = torch.lstm(torch.zeros(3, 1, 2), [torch.zeros(1, 1, 4), torch.zeros(1, 1, 4)],
                     [torch.zeros(16, 2), torch.zeros(16, 4)], False, 1, 0.0, False, False,
                     False)
    assert isinstance(out, tuple) and [tuple(o.shape) for o in out] == [(3, 1, 4), (1, 1, 4),
                                                                         (1, 1, 4)]
    with pytest.raises(RuntimeError, match="got an incorrect number of RNN parameters"):
        torch.gru(torch.zeros(3, 1, 2), torch.zeros(1, 1, 4), [torch.zeros(12, 2)], True, 1,
                  0.0, False, False, False)


def test_embedding_renorm_scales_the_named_rows_in_place():
    w = torch.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    assert torch.embedding_renorm_(w, torch.tensor([0, 0, 1]), 1.0, 2.0) is w
    np.testing.assert_allclose(w.numpy(), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)


def test_predicates():
    assert torch.is_nonzero(torch.tensor([3])) and not torch.is_nonzero(torch.tensor(0.0))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        torch.is_nonzero(torch.ones(2))
    assert torch.is_same_size(torch.ones(2), torch.zeros(2, dtype=torch.int64))
    assert torch.is_signed(torch.ones(1)) and not torch.is_signed(torch.ones(1, dtype=torch.uint8))
    assert not (torch.is_conj(torch.ones(1)) or torch.is_neg(torch.ones(1)) or
                torch.is_inference(torch.ones(1)) or torch.is_distributed(torch.ones(1)))
    assert not torch.is_inference_mode_enabled()
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() and not torch.is_grad_enabled()
        with torch.inference_mode(False):
            assert not torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled()
    assert torch.get_device(torch.ones(1)) == -1 == torch.ones(1).get_device()
    assert torch.typename(torch.ones(1)) == "torch.FloatTensor"
    assert torch.typename(3) == "int"
    assert torch.typename(torch.nn.Linear(1, 1)) == "torch.nn.modules.linear.Linear"
    assert torch.is_storage(torch.ones(1).untyped_storage()) and not torch.is_storage(
        torch.ones(1))


def test_settings_are_kept_and_checked():
    assert torch.get_float32_matmul_precision() == "highest"
    torch.set_float32_matmul_precision("medium")
    with pytest.warns(UserWarning, match="bad is not one of 'highest', 'high', or 'medium'"):
        torch.set_float32_matmul_precision("bad")
    assert torch.get_float32_matmul_precision() == "medium"
    torch.set_float32_matmul_precision("highest")
    torch.use_deterministic_algorithms(True, warn_only=True)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.get_deterministic_debug_mode() == 1
    torch.set_deterministic_debug_mode("error")
    assert torch.get_deterministic_debug_mode() == 2
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 5"):
        torch.set_deterministic_debug_mode(5)
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        torch.set_deterministic_debug_mode("x")
    torch.use_deterministic_algorithms(False)
    assert torch.get_deterministic_debug_mode() == 0
    torch.set_warn_always(True)
    assert torch.is_warn_always_enabled()
    torch.set_warn_always(False)
    assert not torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()
    torch.set_anomaly_enabled(True, False)
    assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
    torch.set_anomaly_enabled(False)
    assert torch.set_flush_denormal(False) is False  # (PyTorch: True, it sets the FPU's mode)
    assert torch.has_lapack and not torch.has_spectral


def test_deprecated_autocast_accessors_warn_and_read_the_device_settings():
    with pytest.warns(DeprecationWarning, match=re.escape(
            "torch.get_autocast_cpu_dtype() is deprecated. Please use "
            "torch.get_autocast_dtype('cpu') instead.")):
        assert torch.get_autocast_cpu_dtype() is torch.get_autocast_dtype("cpu")
    with pytest.warns(DeprecationWarning):
        assert torch.get_autocast_gpu_dtype() is torch.float16
    with pytest.warns(DeprecationWarning):
        assert torch.get_autocast_xla_dtype() is torch.bfloat16
    with pytest.warns(DeprecationWarning):
        assert torch.is_autocast_cpu_enabled() is False


def test_rng_state_round_trips():
    state = torch.get_rng_state()
    assert state.dtype is torch.uint8 and state.ndim == 1
    a = torch.rand(5)
    torch.set_rng_state(state)
    assert torch.equal(torch.rand(5), a)
    g = torch.Generator().manual_seed(7)
    s = g.get_state()
    r = torch.randn(3, generator=g)
    g.set_state(s)
    assert torch.equal(torch.randn(3, generator=g), r) and g.initial_seed() == 7
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        torch.set_rng_state(torch.zeros(3))
    with pytest.raises(RuntimeError, match="state size"):
        torch.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    torch.default_generator.manual_seed(3)
    assert torch.initial_seed() == 3


def test_binomial():
    torch.manual_seed(0)
    d = torch.binomial(torch.tensor([10.0, 5.0, -1.0, 4.0, 3.0]),
                       torch.tensor([0.5, 2.0, 0.5, 0.0, float("nan")]))
    v = d.tolist()
    assert 0 <= v[0] <= 10 and v[0] == int(v[0]) and v[1:4] == [5.0, 0.0, 0.0]
    assert np.isnan(v[4]) and d.dtype is torch.float32
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.binomial(torch.ones(1), torch.ones(1, dtype=torch.float64))


def test_constructors():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = torch.range(0, 1, 0.25)
    assert r.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0] and r.dtype is torch.float32
    with pytest.warns(UserWarning):
        assert torch.range(0, 3, dtype=torch.int64).tolist() == [0, 1, 2, 3]
    a = np.ones(2)
    t = torch.asarray(a)
    a[0] = 5.0
    assert t.tolist() == [5.0, 1.0]  # shares the array's memory
    x = torch.ones(2)
    assert torch.asarray(x) is x and torch.asarray(x, copy=True) is not x
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        torch.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype "
                                         "'Double'"):
        torch.asarray(x, dtype=torch.float64, copy=False)
    assert torch.asarray([1, 2]).dtype is torch.int64
    with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
        torch.set_default_tensor_type(torch.DoubleTensor)
    try:
        assert torch.ones(1).dtype is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


def test_removed_functions_raise_pytorchs_error():
    a = torch.ones(2, 2)
    for fn, args in ((torch.solve, (a, a)), (torch.lstsq, (a, a)), (torch.symeig, (a,)),
                     (torch.eig, (a,)), (a.eig, ()), (a.solve, (a,))):
        with pytest.raises(RuntimeError, match="This function was deprecated since version "
                                               "1.9 and is now removed"):
            fn(*args)
    with pytest.raises(TypeError):
        torch.solve(a)


def test_real_and_imag_of_real_tensors():
    x = torch.tensor([1.0, 2.0])
    assert torch.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        torch.imag(x)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        x.imag


def test_tensor_methods():
    x = torch.tensor([1.0, 2.0])
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype is torch.float32
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new().shape == (0,)
    assert x.output_nr == 0 and not x.is_inference()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        x.pin_memory()
    assert x.const_data_ptr() == x.data_ptr()
    assert torch.ones(2, 3, 4).transpose(0, 2).dim_order() == (2, 1, 0)
    assert x.is_set_to(x) and not x.is_set_to(x.clone()) and not x.is_set_to(x[:1])
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert x.resize(2, 1).shape == (2, 1)
    with pytest.raises(RuntimeError, match="autograd's resize can only change the shape"):
        x.resize(3)
    y = torch.tensor([1.0, 2.0])
    assert y.apply_(lambda v: v * 3) is y and y.tolist() == [3.0, 6.0]
    assert y.map_(torch.tensor(1.0), lambda a, b: a - b).tolist() == [2.0, 5.0]
    assert y.map2_(y, y, lambda a, b, c: a + b + c).tolist() == [6.0, 15.0]
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires"):
        torch.ones(1, requires_grad=True).apply_(lambda v: v)
    s = torch.arange(6.0)
    assert s.as_strided_((2, 2), (3, 1)) is s and s.tolist() == [[0.0, 1.0], [3.0, 4.0]]

    class Sub(torch.Tensor):
        pass
    w = torch.ones(2, requires_grad=True)
    sub = w.as_subclass(Sub)
    assert type(sub) is Sub
    (sub * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_storages_share_the_tensors_memory():
    x = torch.tensor([1.0, 2.0])
    u = x.untyped_storage()
    assert len(u) == 8 and u.nbytes() == 8 and u.tolist()[:4] == [0, 0, 128, 63]
    assert repr(u).endswith("[torch.storage.UntypedStorage(device=cpu) of size 8]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (TypedStorage's deprecation)
        s = x.storage()
    assert s.dtype is torch.float32 and s.tolist() == [1.0, 2.0] and s.element_size() == 4
    assert repr(s) == (" 1.0\n 2.0\n[torch.storage.TypedStorage(dtype=torch.float32, "
                       "device=cpu) of size 2]")
    s[0] = 7.0
    assert x.tolist() == [7.0, 2.0]  # the same memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.storage_type() is torch.FloatStorage
    assert x[1:].untyped_storage().nbytes() == 8  # a view's storage is its base's
    assert torch.typename(s) == "torch.storage.TypedStorage"
    assert torch.FloatStorage.dtype is torch.float32 and torch.Storage is torch.FloatStorage
    assert torch.DoubleStorage([1.0, 2.5]).tolist() == [1.0, 2.5]
    assert isinstance(u, torch.StorageBase)
    with pytest.raises(NotImplementedError, match="complex numbers are out of scope"):
        torch.ComplexFloatStorage(2)


def test_constants_and_symbolic_helpers():
    assert torch.pi == np.pi and torch.e == np.e and torch.inf == float("inf")
    assert np.isnan(torch.nan) and torch.newaxis is None
    assert torch.ones(3)[torch.newaxis].shape == (1, 3)
    assert (torch.sym_max(2, 3), torch.sym_min(2, 3.0), torch.sym_ite(True, 1, 2)) == (3, 2.0, 1)
    assert torch.sym_sum([1, 2]) == 3 and torch.sym_not(True) is False
    assert torch.sym_sqrt(4) == 2.0 and torch.sym_int(2.7) == 2 and torch.sym_float(2) == 2.0
    assert torch.torch is torch and torch.get_device_module("cpu") is torch.cpu


def test_random_module_and_fork_rng():
    torch.random.manual_seed(5)
    a = torch.rand(3)
    torch.random.manual_seed(5)
    with torch.random.fork_rng():
        torch.rand(10)  # (draws inside leave the state outside as it was)
    assert torch.equal(torch.rand(3), a)
    assert torch.random.initial_seed() == 5 and torch.random.default_generator is not None


def test_version():
    # the PyTorch release whose API is followed, fusetorch's own as the local part
    assert torch.__version__ == "2.13.0+fusetorch." + torch.version.fusetorch
    assert torch.__version__ >= "1.8" and torch.__version__ >= "2.2" and torch.__version__ < "10.0"
    assert torch.__version__ > (2, 12) and torch.version.cuda is None
    assert torch.__version__.split("+")[0] == "2.13.0"
    pyproject = (Path(torch.__file__).parent.parent / "pyproject.toml").read_text()
    assert f'version = "{torch.version.fusetorch}"' in pyproject
    assert torch.torch_version.TorchVersion("0.10.0") > "0.9"


def test_func_transforms_against_derivatives():
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    g = torch.func.grad(lambda v: (v ** 3).sum())(x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    assert not g.requires_grad
    gg = torch.func.grad(lambda v: torch.func.grad(lambda w: (w ** 3).sum())(v).sum())(x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())  # nested: the second derivative
    g2, value = torch.func.grad_and_value(lambda v, w: (v * w).sum(), argnums=(0, 1))(x, x * 2)
    np.testing.assert_allclose(g2[0].numpy(), 2 * x.numpy())
    np.testing.assert_allclose(value.item(), (2 * x.numpy() ** 2).sum())
    out, fn = torch.func.vjp(torch.sin, x)
    (ct,) = fn(torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(ct.numpy(), np.cos(x.numpy()))
    jac = torch.func.jacrev(torch.sin)(x)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(x.numpy())))
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar"):
        torch.func.grad(torch.sin)(x)
    b = torch.func.vmap(lambda r: r * r.sum())(torch.arange(6.0).reshape(2, 3))
    assert b.tolist() == [[0.0, 3.0, 6.0], [36.0, 48.0, 60.0]]
    lin = torch.nn.Linear(3, 1, bias=False)
    w = torch.ones(1, 3, requires_grad=True)
    y = torch.func.functional_call(lin, {"weight": w}, (torch.tensor([[1.0, 2.0, 3.0]]),))
    assert y.item() == 6.0 and lin.weight is not w
    y.sum().backward()
    assert w.grad.tolist() == [[1.0, 2.0, 3.0]]
    with pytest.raises(NotImplementedError, match="torch.func.functionalize"):
        torch.func.functionalize


def test_sobol_engine_is_pytorchs_unscrambled_sequence():
    e = torch.quasirandom.SobolEngine(3)
    a = e.draw(5)
    assert a.dtype is torch.float32 and a.tolist() == [
        [0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75],
        [0.375, 0.375, 0.625]]
    e.fast_forward(2)
    assert e.draw(2).tolist() == [[0.125, 0.625, 0.375], [0.1875, 0.3125, 0.9375]]
    assert e.num_generated == 9 and repr(e) == "SobolEngine(dimension=3)"
    assert torch.quasirandom.SobolEngine(2).draw_base2(2).shape == (4, 2)
    s = torch.quasirandom.SobolEngine(2, scramble=True, seed=0).draw(64, dtype=torch.float64)
    assert s.dtype is torch.float64 and 0 <= s.min().item() and s.max().item() < 1


def test_compiler_switches():
    assert not torch.compiler.is_compiling()
    seen = []

    @torch.compiler.disable
    def host(x):
        seen.append(torch.compiler.is_compiling())
        return x + 1

    def f(x):
        seen.append(torch.compiler.is_compiling())
        return host(x * 2)
    cf = torch.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the graph break's warning)
        assert cf(torch.ones(2)).tolist() == [3.0, 3.0]
    assert seen[0] is True  # traced, then the disabled function broke the graph
    torch.compiler.reset()
    assert cf._variants == {} or len(cf._variants) == 0


def test_device_modules_hub_and_futures():
    assert not torch.mps.is_available() and torch.xpu.device_count() == 0
    assert not torch.mtia.is_available()
    with pytest.raises(NotImplementedError, match="torch.mps.empty_cache: devices other than"):
        torch.mps.empty_cache()
    torch.hub.set_dir("/tmp/fusetorch_hub_dir")
    assert torch.hub.get_dir() == "/tmp/fusetorch_hub_dir"
    with pytest.raises(NotImplementedError, match="torch.hub.load: model hubs and downloads"):
        torch.hub.load("pytorch/vision", "resnet18")
    fut = torch.fork(lambda a, b: a + b, torch.ones(1), 2)
    assert fut.done() and torch.wait(fut).tolist() == [3.0]
    assert fut.then(lambda f: f.wait() * 2).wait().tolist() == [6.0]
    bad = torch.fork(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bad.wait()


def test_library_overrides_return_types_and_types():
    @torch.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def backward(ctx, g):
        return g * 5  # (a deliberately different rule: the registered one is what runs)
    twice.register_autograd(backward)
    x = torch.ones(2, requires_grad=True)
    twice(x).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    assert torch.ops.mylib.twice(torch.ones(1)).tolist() == [2.0]
    assert torch.ops.aten.add.Tensor(torch.ones(1), 2).tolist() == [3.0]
    assert torch.ops.aten.relu.default(torch.tensor([-1.0])).tolist() == [0.0]
    with pytest.raises(AttributeError):
        torch.ops.aten.no_such_op
    assert not torch.overrides.has_torch_function((torch.ones(1), 3))
    assert torch.overrides.is_tensor_like(torch.ones(1))
    r = torch.max(torch.tensor([[1.0, 3.0]]), 1)
    assert isinstance(r, torch.return_types.max)
    assert isinstance(torch.sort(torch.ones(2)), torch.return_types.sort)
    assert torch.functional.einsum is torch.einsum
    assert torch.types.Number is not None and torch.types.Device is not None


def test_custom_op_implementations_see_tensors_without_autograd():
    # the custom Python operators tutorial: the implementation calls x.numpy(), as PyTorch's
    # dispatcher runs it below autograd; the registered formula differentiates it
    @torch.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    xv = np.array([0.5, -1.0, 2.0])
    x = torch.tensor(xv, requires_grad=True)
    y = numpy_sin(x)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(xv), rtol=1e-15)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv), rtol=1e-15)

    @torch.library.custom_op("mylib::numpy_add_", mutates_args=("out",))
    def numpy_add_(x: torch.Tensor, out: torch.Tensor) -> None:
        np.add(out.numpy(), x.numpy(), out=out.numpy())  # written into the caller's tensor

    acc = torch.zeros(3, dtype=torch.float64)
    numpy_add_(x, acc)
    np.testing.assert_allclose(acc.numpy(), xv)


def test_opcheck_tests_what_a_custom_op_claims():
    # the custom Python operators tutorial's last step: torch.library.opcheck per sample
    @torch.library.custom_op("optest::numpy_mul", mutates_args=())
    def numpy_mul(x: torch.Tensor, y: float) -> torch.Tensor:
        return torch.from_numpy(x.numpy(force=True) * y)

    @numpy_mul.register_fake
    def _(x, y):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.y = inputs[1]

    numpy_mul.register_autograd(lambda ctx, g: (g * ctx.y, None), setup_context=setup_context)
    assert repr(numpy_mul) == "<CustomOpDef(optest::numpy_mul)>"
    names = ["test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic"]
    for args in ((torch.randn(3), 3.0), (torch.randn(2, 2, requires_grad=True), 0.5)):
        assert torch.library.opcheck(numpy_mul, args) == {n: "SUCCESS" for n in names}
    assert torch.library.opcheck(numpy_mul, (torch.ones(1), 2.0), test_utils="test_schema") \
        == {"test_schema": "SUCCESS"}
    with pytest.raises(ValueError, match="Unknown test util"):
        torch.library.opcheck(numpy_mul, (torch.ones(1), 2.0), test_utils=("test_nothing",))

    @torch.library.custom_op("optest::nofake", mutates_args=())
    def nofake(x: torch.Tensor) -> torch.Tensor:
        return x.sin()

    r = torch.library.opcheck(nofake, (torch.ones(2),), raise_exception=False)
    assert r["test_schema"] == r["test_autograd_registration"] == "SUCCESS"
    for n in ("test_faketensor", "test_aot_dispatch_dynamic"):
        assert isinstance(r[n], RuntimeError) and str(r[n]).startswith(
            "There was no fake impl registered for <CustomOpDef(optest::nofake)>.")
    with pytest.raises(torch.library.OpCheckError,
                       match=r"^opcheck\(op, \.\.\.\): test_faketensor failed with There was no "):
        torch.library.opcheck(nofake, (torch.ones(2),))

    @torch.library.custom_op("optest::sneaky", mutates_args=())
    def sneaky(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x

    @sneaky.register_fake
    def _(x):
        return torch.empty_like(x)

    x = torch.zeros(2)
    r = torch.library.opcheck(sneaky, (x,), raise_exception=False)
    assert str(r["test_schema"]) == "Argument x is not defined as mutable but was mutated"
    assert x.tolist() == [0.0, 0.0]  # (opcheck runs on copies)

    @torch.library.custom_op("optest::alias", mutates_args=())
    def alias(x: torch.Tensor) -> torch.Tensor:
        return x.view(-1)

    r = torch.library.opcheck(alias, (torch.zeros(2, 2),), test_utils="test_schema",
                              raise_exception=False)
    assert "may not alias any inputs" in str(r["test_schema"])

    @torch.library.custom_op("optest::badfake", mutates_args=())
    def badfake(x: torch.Tensor) -> torch.Tensor:
        return x.sum(0)

    @badfake.register_fake
    def _(x):
        return torch.empty_like(x)

    r = torch.library.opcheck(badfake, (torch.ones(2, 3),), raise_exception=False)
    assert str(r["test_faketensor"]).endswith("Shapes torch.Size([3]) and torch.Size([2, 3]) "
                                              "are not equal!")

    @torch.library.custom_op("optest::noformula", mutates_args=())
    def noformula(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sin(x.numpy()))

    @noformula.register_fake
    def _(x):
        return torch.empty_like(x)

    leaf = torch.ones(2, requires_grad=True)
    y = noformula(leaf)
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="^Trying to backward through optest.noformula.default "
                                           "but no autograd formula was registered. Please use "
                                           "register_autograd to add one.$"):
        y.sum().backward()
    assert not noformula(torch.ones(2)).requires_grad

    @torch.library.custom_op("optest::sin_out", mutates_args={"out"})
    def sin_out(x: torch.Tensor, out: torch.Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())

    # an operator returning nothing needs no fake; its declared mutation is allowed
    assert set(torch.library.opcheck(sin_out, (torch.ones(2), torch.empty(2))).values()) == \
        {"SUCCESS"}


def test_from_file_cond_and_while_loop(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(4, dtype=np.float32).tofile(path)
    assert torch.from_file(str(path), size=4).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.from_file(str(path), False, 2, dtype=torch.float32).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="is smaller than the required mapping size <40>"):
        torch.from_file(str(path), size=10)
    shared = torch.from_file(str(path), True, 4)
    shared[0] = 9.0
    assert np.fromfile(path, dtype=np.float32)[0] == 9.0
    x = torch.ones(1)
    assert torch.cond(torch.tensor(True), lambda a: a + 1, lambda a: a - 1, (x,)).item() == 2.0
    k, y = torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (torch.tensor(0), x))
    assert k.item() == 3 and y.item() == 8.0
    with pytest.raises(RuntimeError, match="single-element tensor"):
        torch.cond(torch.ones(2), lambda: 1, lambda: 2)


def test_nn_grad_matches_the_convolutions_sums():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7))
    w = rng.standard_normal((4, 3, 3))
    go = rng.standard_normal((2, 4, 4))  # stride 2, padding 1: (7 + 2 - 3) // 2 + 1 = 4
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    want_w = np.zeros_like(w)
    want_x = np.zeros_like(xp)
    for t in range(4):
        window = xp[:, :, 2 * t:2 * t + 3]                       # [B, C, K]
        want_w += np.einsum("bo,bck->ock", go[:, :, t], window)
        want_x[:, :, 2 * t:2 * t + 3] += np.einsum("bo,ock->bck", go[:, :, t], w)
    T = lambda a: torch.tensor(a)  # noqa: E731
    gw = torch.nn.grad.conv1d_weight(T(x), w.shape, T(go), stride=2, padding=1)
    gx = torch.nn.grad.conv1d_input(x.shape, T(w), T(go), stride=2, padding=1)
    np.testing.assert_allclose(gw.numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), want_x[:, :, 1:-1], rtol=1e-10)
    assert F.grad is torch.nn.grad
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        torch.nn.grad.conv2d_input((1, 1, 4, 4), torch.ones(1, 1, 3, 3), torch.ones(1, 1, 3, 3))


def test_nn_functional_helpers():
    assert torch.nn.factory_kwargs({"device": "cpu", "dtype": torch.float64}) == {
        "device": "cpu", "dtype": torch.float64}
    assert torch.nn.factory_kwargs({"factory_kwargs": {"dtype": torch.int64}}) == {
        "dtype": torch.int64}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        torch.nn.factory_kwargs({"bias": True})
    with pytest.raises(TypeError, match="dtype specified twice"):
        torch.nn.factory_kwargs({"dtype": torch.float32, "factory_kwargs": {"dtype": 1}})
    f = F.boolean_dispatch("flag", 1, False, lambda x, flag=False: ("yes", x),
                           lambda x, flag=False: ("no", x), None, "pick")
    assert f(1) == ("no", 1) and f(1, True) == ("yes", 1) and f(1, flag=True)[0] == "yes"
    assert f.__name__ == "pick"
    with pytest.raises(AssertionError, match="kernel_size must be"):
        F.assert_int_or_pair((1, 2, 3), "kernel_size", "{} must be an int or a pair")
    assert F.GRID_SAMPLE_INTERPOLATION_MODES["bicubic"] == 2
    assert not F.has_torch_function((torch.ones(1),))
    v, i = F.adaptive_max_pool1d_with_indices(torch.arange(6.0).reshape(1, 1, 6), 2)
    assert v.tolist() == [[[2.0, 5.0]]] and i.tolist() == [[[2, 5]]]
    assert F.conv_tbc is torch.conv_tbc and isinstance(torch.ones(1), F.Tensor)


def test_removed_and_device_methods():
    x = torch.ones(2)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert x.volatile is False
    with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed"):
        x.reinforce(1.0)
    y = torch.zeros(2)
    assert x.module_load(y) is y
    with pytest.raises(NotImplementedError, match="torch.Tensor.xpu: devices other than"):
        x.xpu()
    assert not torch.cudnn_is_acceptable(x)
    s = torch.arange(6.0)
    assert torch.as_strided_(s, (3,), (2,)) is s and s.tolist() == [0.0, 2.0, 4.0]
    assert torch.os is __import__("os") and torch.TYPE_CHECKING is False
    assert torch.special.Tensor is torch.Tensor and "input" in torch.special.common_args


def test_streams_events_and_small_classes():
    s = torch.Stream()
    assert s.query() and s.device_type == "cpu" and s.device_index == -1
    assert repr(s) == "torch.Stream device_type=cpu, device_index=-1, stream_id=0"
    a, b = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    a.record()
    b.record()
    assert a.elapsed_time(b) >= 0.0 and a.query()
    with pytest.raises(ValueError, match="enable_timing=True"):
        torch.Event().elapsed_time(torch.Event())
    assert not isinstance(3, torch.SymInt)

    class K:
        @torch.classproperty
        def name(cls):
            return cls.__name__
    assert K.name == "K" and K().name == "K"
    assert torch.windows is torch.signal.windows and torch.bit is torch.uint1
    assert torch.legacy_contiguous_format is torch.contiguous_format


def test_file_path_generator_and_grad_dtype():
    import os
    assert os.path.isdir(torch.get_file_path("fusetorch"))
    assert torch.thread_safe_generator() is None
    assert torch.ones(2, dtype=torch.float64).grad_dtype is torch.float64

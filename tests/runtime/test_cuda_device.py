"""The cuda device's plumbing, tested on any machine through a stand-in CUDA backend.

Without a GPU, `cuda0` registers, for 'cuda:0', a backend whose array module is numpy with the
same eager table: tensors on it are labelled cuda:0 and every device rule applies (mixing
devices, .to, .cpu, .cuda, Module.cuda, printing, autograd across devices), while the arithmetic
is numpy's.
Expected values come from numpy on the host data. PyTorch's messages were read from torch 2.13's
libraries and checked by hand where a CPU build can reach them (see the report of issue 7).
With a GPU the same tests run on the real device (cupy); a few more that need it are at the
bottom, skipped without one.
"""
import numpy as np
import pytest

import fusetorch as torch
from fusetorch import nn
from fusetorch.runtime import device as D
from fusetorch.runtime.eager import CUDA_GENERATOR, make_table

HAVE_GPU = D._cupy() is not None


@pytest.fixture
def cuda0():
    """cuda:0: the real device when there is one (the same tests then run on cupy), else the
    stand-in over numpy."""
    if HAVE_GPU:
        yield D.backend("cuda:0")
        return
    be = D.Backend(D.device("cuda", 0), np, make_table(np, CUDA_GENERATOR))
    D.register_backend("cuda:0", be)
    try:
        yield be
    finally:
        D.register_backend("cuda:0", None)


# ---------------------------------------------------------------- without any CUDA device

def test_no_cuda_means_nothing_changes():
    if HAVE_GPU:
        pytest.skip("a GPU is present")
    assert torch.cuda.is_available() is False
    assert torch.cuda.device_count() == 0
    for f in (lambda: torch.ones(2).cuda(), lambda: torch.ones(2, device="cuda"),
              lambda: torch.ones(2).to("cuda:0"), lambda: torch.cuda.current_device(),
              lambda: torch.cuda.synchronize()):
        with pytest.raises(RuntimeError, match="Found no NVIDIA driver on your system"):
            f()
    torch.cuda.manual_seed(1)  # PyTorch seeds lazily: no error without a device
    torch.cuda.manual_seed_all(1)
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == 0
    # the memory statistics training scripts log: zeros, as PyTorch's CPU build gives them
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == torch.cuda.memory_reserved() == 0
    assert torch.cuda.max_memory_reserved() == 0
    assert torch.cuda.is_initialized() is False and torch.cuda.get_arch_list() == []


def test_backend_switches_are_accepted():
    torch.backends.cudnn.deterministic = True  # what classic scripts set
    torch.backends.cudnn.benchmark = False
    assert torch.backends.cudnn.is_available() is False
    assert torch.backends.cudnn.version() is None
    assert torch.backends.mps.is_available() is False
    torch.backends.mkldnn.enabled = False  # (old scripts' switch: kept, nothing uses oneDNN)
    assert torch.backends.mkldnn.is_available() is False
    torch.backends.mkldnn.enabled = True
    torch.backends.cuda.matmul.allow_tf32 = True


def test_device_objects():
    assert str(torch.device("cuda")) == "cuda" and repr(torch.device("cuda")) == \
        "device(type='cuda')"
    assert torch.device("cuda:1") == torch.device("cuda", 1) == "cuda:1"
    assert torch.device(0) == torch.device("cuda:0")


# ---------------------------------------------------------------- with the stand-in device

def test_api_with_a_device(cuda0):
    assert torch.cuda.is_available() and torch.cuda.device_count() >= 1
    assert torch.cuda.current_device() == 0
    torch.cuda.synchronize()
    assert isinstance(torch.cuda.get_device_name(), str)
    if torch.cuda.device_count() == 1:
        with pytest.raises(RuntimeError, match="Found no NVIDIA driver|invalid device ordinal"):
            torch.ones(1, device="cuda:1")  # no such device


def test_creation_on_the_device(cuda0):
    for t in (torch.zeros(2, 3, device="cuda"), torch.ones(2, device="cuda:0"),
              torch.full((2,), 3.0, device=torch.device("cuda")), torch.arange(4, device="cuda"),
              torch.tensor([1.0, 2.0], device="cuda"), torch.eye(2, device="cuda"),
              torch.rand(3, device="cuda"), torch.randn(3, device="cuda"),
              torch.randint(0, 5, (3,), device="cuda"), torch.empty(2, device="cuda"),
              torch.linspace(0, 1, 3, device="cuda")):
        assert t.device == torch.device("cuda:0") and t.is_cuda, t
        assert str(t.device) == "cuda:0"
    x = torch.ones(2, device="cuda")
    for t in (torch.zeros_like(x), torch.rand_like(x), x.new_zeros(3), x.new_tensor([1.0])):
        assert t.device == x.device


def test_moving_tensors(cuda0):
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    for c in (a.cuda(), a.to("cuda:0"), a.to("cuda"), a.to(torch.device("cuda", 0)), a.cuda(0),
              a.to(torch.ones(1, device="cuda")), a.to("cuda", torch.float64)):
        assert c.is_cuda and str(c.device) == "cuda:0"
        np.testing.assert_array_equal(c.cpu().numpy(), a.numpy())
    assert a.to("cuda", torch.float64).dtype == torch.float64
    c = a.cuda()
    assert c.cuda() is c and a.cpu() is a and a.to("cpu") is a  # no copy when already there
    c.add_(1)  # the copy owns its memory
    np.testing.assert_array_equal(a.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    b = c.cpu()
    assert b.device == torch.device("cpu") and not b.is_cuda
    np.testing.assert_array_equal(b.numpy(), [[2.0, 3.0], [4.0, 5.0]])
    t = torch.ones(3, 4)[:, 1]  # a strided view travels as its values
    np.testing.assert_array_equal(t.cuda().cpu().numpy(), np.ones(3))
    tt = torch.arange(6.0).reshape(2, 3).t()  # a dense layout is kept, gaps are not (PyTorch)
    assert tt.cuda().stride() == (1, 3) and tt.cuda().cpu().stride() == (1, 3)
    assert torch.ones(4, 3)[::2].cuda().is_contiguous()


def test_device_arrays_come_back_in_their_dense_layout():
    # cupy's get() is C-ordered; .cpu() keeps a dense permuted layout as PyTorch does (seen on
    # an H100: a transposed tensor came back with strides (2, 1) instead of (1, 3))
    from fusetorch.runtime.eager import _get

    class DeviceArray(np.ndarray):
        def get(self):
            return np.ascontiguousarray(self).view(np.ndarray)

    a = np.arange(24.0).reshape(2, 3, 4).view(DeviceArray)
    for v in (a, a.transpose(2, 0, 1), a.transpose(1, 2, 0), a[:, :, 0].T, a[:, ::2].T,
              a[0]):
        got = _get(v)
        assert type(got) is np.ndarray
        np.testing.assert_array_equal(got, v)
        dense = np.array(v.view(np.ndarray), order="K")  # numpy keeps a dense layout so
        want = dense.strides if v.base is None or _dense(v) else np.ascontiguousarray(v).strides
        assert got.strides == want, (v.strides, got.strides)


def _dense(v) -> bool:
    order = sorted(range(v.ndim), key=lambda d: -v.strides[d])
    return v.transpose(order).flags.c_contiguous


def test_numpy_of_a_cuda_tensor_is_an_error(cuda0):
    c = torch.ones(2).cuda()
    msg = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
           "tensor to host memory first.")
    with pytest.raises(TypeError) as e:
        c.numpy()
    assert str(e.value) == msg
    with pytest.raises(TypeError, match="device type tensor to numpy"):
        np.asarray(c)
    assert c.tolist() == [1.0, 1.0] and c.sum().item() == 2.0  # item/tolist copy to the host
    np.testing.assert_array_equal(c.numpy(force=True), [1.0, 1.0])


def test_printing(cuda0):
    assert repr(torch.tensor([1.0, 2.0]).cuda()) == "tensor([1., 2.], device='cuda:0')"
    x = torch.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(x.double()) == ("tensor([1., 2.], device='cuda:0', dtype=torch.float64,\n"
                                "       grad_fn=<ToCopyBackward0>)")  # PyTorch wraps at 80


def _devices_error(a, b) -> str:
    return f"Expected all tensors to be on the same device, but found at least two devices, " \
           f"{a} and {b}!"


def test_mixing_devices_names_both(cuda0):
    g, c = torch.ones(3).cuda(), torch.ones(3)
    for f, first, second in ((lambda: g + c, "cuda:0", "cpu"), (lambda: c + g, "cpu", "cuda:0"),
                             (lambda: c * g, "cpu", "cuda:0"), (lambda: torch.maximum(g, c),
                                                                "cuda:0", "cpu"),
                             (lambda: torch.where(c > 0, g, c), "cpu", "cuda:0"),
                             (lambda: torch.cat([g, c]), "cuda:0", "cpu"),
                             (lambda: g.reshape(1, 3) @ c.reshape(3, 1), "cuda:0", "cpu")):
        with pytest.raises(RuntimeError) as e:
            f()
        assert str(e.value) == _devices_error(first, second)
    with pytest.raises(RuntimeError, match="same device"):
        g.add_(c)
    with pytest.raises(RuntimeError, match="same device"):
        (g.requires_grad_() * c)


def test_cpu_scalar_tensors_mix_with_any_device(cuda0):
    # PyTorch lets 0-d CPU tensors take part in ops on other devices, as Python numbers do
    g = torch.tensor([1.0, 2.0]).cuda()
    s = torch.tensor(3.0)
    for r in (g * s, s * g, g + s, torch.where(g > 1, g, s)):
        assert r.is_cuda
    np.testing.assert_array_equal((g * s).cpu().numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        torch.ones(1, 1).cuda() + torch.ones(1)  # 1-d is not a scalar


def test_indexing_across_devices(cuda0):
    g = torch.arange(6.0).reshape(2, 3).cuda()
    for idx in ([1, 0], torch.tensor([1, 0]), torch.tensor([1, 0]).cuda()):
        r = g[:, idx]
        assert r.is_cuda
        np.testing.assert_array_equal(r.cpu().numpy(), [[1.0, 0.0], [4.0, 3.0]])
    np.testing.assert_array_equal(g[g > 2].cpu().numpy(), [3.0, 4.0, 5.0])
    with pytest.raises(IndexError) as e:
        torch.arange(3.0)[torch.tensor([0]).cuda()]
    assert str(e.value) == ("indices should be either on cpu or on the same device as the "
                            "indexed tensor (cpu)")
    g[0, torch.tensor([2])] = 9.0
    assert g[0, 2].item() == 9.0


def test_eager_math_on_the_device_matches_the_cpu(cuda0):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    x, y = torch.tensor(a), torch.tensor(b)
    for f in (lambda p, q: p * q + 1, lambda p, q: torch.exp(p).sum(1), lambda p, q: p @ q,
              lambda p, q: torch.relu(p).max(dim=0)[0], lambda p, q: p[:, 1:3].t() ** 2,
              lambda p, q: torch.cat([p, q[None]]), lambda p, q: p.softmax(-1)):
        got = f(x.cuda(), y.cuda())
        assert got.is_cuda
        np.testing.assert_allclose(got.cpu().numpy(), f(x, y).numpy(), rtol=1e-6)


def test_gradients_flow_back_across_to(cuda0):
    a = np.array([0.5, -1.0, 2.0])
    x = torch.tensor(a, requires_grad=True)  # a CPU leaf
    y = (x * 2).cuda()
    assert y.grad_fn.name() == "ToCopyBackward0"
    loss = (y.exp() * torch.tensor(3.0)).sum()  # a CPU scalar joins on the device
    assert loss.is_cuda
    loss.backward()
    assert x.grad.device == torch.device("cpu") and not x.grad.is_cuda
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * np.exp(2 * a), rtol=1e-12)
    w = torch.tensor(a, requires_grad=True).cuda()  # a non-leaf on the device
    (gw,) = torch.autograd.grad((w.cpu() ** 2).sum(), w)
    assert gw.is_cuda
    np.testing.assert_allclose(gw.cpu().numpy(), 2 * a)


def test_gradient_of_a_device_leaf_stays_there(cuda0):
    a = np.array([1.0, 2.0])
    w = torch.tensor(a, device="cuda", requires_grad=True)
    (w.cpu() * w.cpu()).sum().backward()
    assert w.grad.is_cuda
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * a)


def test_double_backward_across_devices(cuda0):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x.cuda() ** 3).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    assert not g.is_cuda
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])  # d/dx sum(3 x^2) = 6 x


def test_traces_record_copies_and_compile_runs_them_eagerly(cuda0):
    from fusetorch.tracer.trace import run, trace
    x = torch.tensor([1.0, -2.0])
    with trace(x) as rec:
        y = torch.relu(x.cuda()).cpu() * 3
    g = rec.graph(y)
    assert [n.op for n in g.nodes].count("to_device") == 2
    (r,) = run(g, torch.tensor([-1.0, 4.0]))
    np.testing.assert_array_equal(r.numpy(), [0.0, 12.0])
    f = torch.compile(lambda t: torch.relu(t.cuda()) * 2)
    with pytest.warns(UserWarning, match="graph break .*a copy from cpu to cuda:0"):
        out = f(x)
    assert out.is_cuda
    np.testing.assert_array_equal(f(x).cpu().numpy(), [2.0, 0.0])


def test_module_cuda_and_back(cuda0):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    params = list(m.parameters())
    x = torch.randn(5, 3)
    want = m(x)
    assert m.cuda() is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]  # optimizers keep them
    assert all(p.is_cuda for p in m.parameters()) and all(b.is_cuda for b in m.buffers())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    out = m(x.cuda())
    assert out.is_cuda
    np.testing.assert_allclose(out.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5)
    out.sum().backward()
    assert all(p.grad.is_cuda for p in m.parameters())
    opt.step()
    m.cpu()
    assert not any(p.is_cuda for p in m.parameters())
    assert not any(p.grad.is_cuda for p in m.parameters())
    m.to("cuda:0")
    assert all(p.is_cuda for p in m.parameters())
    m.to(torch.device("cpu"), torch.float64)
    assert all(p.dtype == torch.float64 and not p.is_cuda for p in m.parameters())


def test_seeding_the_device_generator(cuda0):
    torch.manual_seed(3)  # seeds every device
    a = torch.rand(4, device="cuda")
    torch.cuda.manual_seed(3)
    b = torch.rand(4, device="cuda")
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    torch.cuda.manual_seed_all(4)
    c = torch.rand(4, device="cuda")
    assert not np.array_equal(b.cpu().numpy(), c.cpu().numpy())
    torch.manual_seed(5)
    cpu = torch.rand(4)
    torch.cuda.manual_seed(99)  # the CPU stream is its own
    torch.manual_seed(5)
    torch.cuda.manual_seed(99)
    np.testing.assert_array_equal(torch.rand(4).numpy(), cpu.numpy())
    assert torch.cuda.initial_seed() == 99


def test_save_load_keeps_the_device(cuda0, tmp_path):
    p = tmp_path / "t.pt"
    torch.save({"w": torch.arange(3.0).cuda()}, p)
    w = torch.load(p)["w"]
    assert w.is_cuda
    w2 = torch.load(p, map_location="cpu")["w"]
    assert not w2.is_cuda
    np.testing.assert_array_equal(w2.numpy(), [0.0, 1.0, 2.0])


# ---------------------------------------------------------------- the real device

gpu = pytest.mark.skipif(not HAVE_GPU, reason="needs cupy and an NVIDIA GPU")


@gpu
def test_gpu_ops_match_the_cpu():
    import cupy
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 33)).astype(np.float32)
    x = torch.tensor(a)
    g = x.cuda()
    assert isinstance(g._data, cupy.ndarray)
    checks = (lambda t: t.exp() + t.sin() * 2, lambda t: t.sum(1), lambda t: t.max(dim=0)[1],
              lambda t: torch.relu(t) @ t.t(), lambda t: t[t > 0], lambda t: t.pow(2).mean(),
              lambda t: torch.sigmoid(t).clamp(0.2, 0.7), lambda t: t.softmax(-1),
              lambda t: torch.cat([t, t], 1)[:, ::3], lambda t: torch.erf(t))
    for f in checks:
        np.testing.assert_allclose(f(g).cpu().numpy(), f(x).numpy(), rtol=2e-5, atol=1e-6)


@gpu
def test_gpu_training_step_matches_the_cpu():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    mc = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    mc.load_state_dict(m.state_dict())
    mc.cuda()
    x, y = torch.randn(10, 8), torch.randint(0, 3, (10,))
    for model, xx, yy in ((m, x, y), (mc, x.cuda(), y.cuda())):
        nn.functional.cross_entropy(model(xx), yy).backward()
    for p, q in zip(m.parameters(), mc.parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- every op of the registry

def _map_tensors(x, fn):
    """`x` (a tensor, or lists, tuples and dicts of them) with every tensor t replaced by a
    fresh leaf `fn(t.detach())` that keeps t's requires_grad."""
    if isinstance(x, torch.Tensor):
        return fn(x.detach()).requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_map_tensors(v, fn) for v in x)
    if isinstance(x, dict):
        return {k: _map_tensors(v, fn) for k, v in x.items()}
    return x


def _to_cuda(x):
    return _map_tensors(x, lambda t: t.cuda())


def _clone(x):
    return _map_tensors(x, lambda t: t.clone())


def _same(cpu, dev, where: str) -> None:
    if isinstance(cpu, torch.Tensor):
        assert isinstance(dev, torch.Tensor) and dev.is_cuda, f"{where}: not on cuda:0"
        assert dev.dtype == cpu.dtype and dev.shape == cpu.shape, where
        # the copy on the device may have another layout (a slice becomes contiguous), so a
        # reduction may add in another order: a few ulp
        tol = {torch.float32: 1e-5, torch.float64: 1e-12}.get(cpu.dtype, 0)
        np.testing.assert_allclose(dev.detach().cpu().numpy(), cpu.detach().numpy(), rtol=tol,
                                   atol=tol, equal_nan=True, err_msg=where)
    elif isinstance(cpu, (list, tuple)):
        assert len(cpu) == len(dev), where
        for a, b in zip(cpu, dev):
            _same(a, b, where)
    else:
        assert cpu == dev or (cpu != cpu and dev != dev), where


def _outcome(fn, args, kwargs):
    torch.manual_seed(0)  # both devices draw the same numbers (one seed, two equal streams)
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001  (the other device must raise the same type)
        return None, e


def _registry():
    import opinfo
    entries = list(opinfo.OPS)
    try:
        import opinfo_nn
        entries += list(opinfo_nn.OPS) + list(opinfo_nn.MODULES)
    except ImportError:
        pass
    return opinfo, entries


_MOVES_TO_CPU = ("Tensor.cpu",)


def _leaves(x, out):
    if isinstance(x, torch.Tensor):
        if x.dtype.is_floating_point:
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _leaves(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _leaves(v, out)
    return out


def _grads(fn, args, kwargs):
    """Gradients of sum(fn(...)) for the floating tensors among the arguments, or None."""
    xs = _leaves([args, kwargs], [])
    for x in xs:
        x.requires_grad_(True)
    out, err = _outcome(fn, args, kwargs)
    if err is not None or not isinstance(out, torch.Tensor) or not out.requires_grad:
        return None
    out.sum().backward()
    return [x.grad for x in xs]


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # kl_div, as PyTorch
def test_every_registry_op_runs_on_the_device_as_on_the_cpu(cuda0):
    """Each op and layer of tests/opinfo*.py on every sample, with its tensors on cuda:0 (the
    stand-in): results are on cuda:0 and equal to the CPU's (the same numpy math underneath),
    so no op makes a tensor on the wrong device or mixes devices inside; and gradients reach
    the device inputs, on the device, equal to the CPU's."""
    opinfo, entries = _registry()
    runs, grads, failures = 0, 0, []
    for entry in entries:
        module = isinstance(entry, opinfo.ModuleInfo)
        for sample in entry.make_samples(widen=False):
            if module:
                torch.manual_seed(0)
                m_cpu = entry.make().train(entry.train)
                m_dev = entry.make().train(entry.train)
                m_dev.load_state_dict(m_cpu.state_dict())
                m_dev.cuda()
                variants = {entry.name: None}
            else:
                variants = entry.variants
            for vname, fn in variants.items():
                if not module and not sample.inplace and opinfo.is_inplace(vname):
                    continue
                if vname.startswith(opinfo.MAKES_CPU_TENSORS + _MOVES_TO_CPU):
                    continue
                where = f"{vname}[{sample.name}]"
                f_cpu, f_dev = (m_cpu, m_dev) if module else (fn, fn)
                try:
                    cpu, err = _outcome(f_cpu, _clone(sample.args), _clone(sample.kwargs))
                    dev, derr = _outcome(f_dev, _to_cuda(sample.args), _to_cuda(sample.kwargs))
                    assert type(derr) is type(err), f"{where}: {err!r} on cpu, {derr!r} on cuda"
                    if err is None:
                        _same(cpu, dev, where)
                        runs += 1
                    if module or opinfo.is_inplace(vname) or not entry.grad:
                        continue
                    g_cpu = _grads(fn, _clone(sample.args), _clone(sample.kwargs))
                    g_dev = _grads(fn, _to_cuda(sample.args), _to_cuda(sample.kwargs))
                    assert (g_cpu is None) == (g_dev is None), f"{where}: gradient on one side"
                    if g_cpu is not None:
                        _same(g_cpu, g_dev, where + " grad")
                        grads += 1
                except AssertionError as e:
                    msg = " ".join(str(e).split())[:400]  # (numpy's start with a newline)
                    failures.append(msg if msg.startswith(where) else f"{where}: {msg}")
    assert not failures, "\n".join(failures)
    assert runs > 500 and grads > 300


def test_compile_runs_cuda_tensors_through_the_cuda_kernels(cuda0, tmp_path, monkeypatch):
    # with a GPU: the program's kernels are CUDA (rendered from the same loop kernels) and
    # match the CPU; without cupy (the stand-in device here) compile says why, once, and
    # runs eagerly with the same results
    import warnings
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    from fusetorch.runtime import build
    monkeypatch.setattr(build, "_warned", set())  # (the one "cannot build kernels" warning)
    x = torch.randn(64, 33)
    fn = lambda t: (torch.tanh(t * 2) - 1).sum(1)
    f = torch.compile(fn)
    xd = x.to("cuda:0")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f(xd)
        got = f(xd)
    assert got.device == torch.device("cuda", 0)
    np.testing.assert_allclose(got.cpu().numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-6)
    if HAVE_GPU:
        assert "__global__" in f.source() and not w
    else:
        assert [str(m.message) for m in w if "cannot build kernels" in str(m.message)], w
    # tensors on two devices in one call: one program cannot hold them, so eager
    mixed = torch.compile(lambda a, b: a.cpu() + b)
    np.testing.assert_allclose(mixed(xd, x).numpy(), (x + x).numpy())


def _render_only(monkeypatch):
    """CUDA programs render their kernels but build nothing (no cupy here): `source()` shows
    what a GPU would compile; the programs must not be run."""
    from fusetorch.runtime import cudabuild
    monkeypatch.setattr(cudabuild.CudaKernels, "compile", lambda self: None)


@pytest.mark.skipif(HAVE_GPU, reason="renders without building: the stand-in device only")
def test_a_cuda_training_step_writes_its_updates_in_place(cuda0, monkeypatch, tmp_path):
    # as on the CPU (tests/codegen/test_compile_training_step.py): each parameter and momentum
    # buffer is overwritten by the kernel computing it, through its own (non-const) pointer
    import re
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    _render_only(monkeypatch)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(20, 16), nn.Tanh(), nn.Linear(16, 3)).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    f = torch.compile(step)
    for _ in range(2):  # the first step creates the momentum buffers: eager
        f(torch.randn(8, 20).cuda(), torch.randn(8, 3).cuda())
    src = f.source()
    assert "__global__" in src
    assert len(re.findall(r"(?<!const )float\* __restrict__ in\d", src)) == 8, src


def test_a_kernel_the_cuda_renderer_refuses_runs_eagerly_with_one_warning(cuda0, monkeypatch,
                                                                          tmp_path):
    import warnings
    from fusetorch.codegen import render_cuda
    from fusetorch.codegen.render_base import Refused
    from fusetorch.runtime import build
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_warned", set())  # (the one "cannot build kernels" warning)

    def refuse(self, k):
        raise Refused(f"the CUDA renderer cannot render kernel {k.name}: a test refuses it")

    monkeypatch.setattr(render_cuda.CudaRenderer, "check", refuse)
    x, i = torch.randn(9, 4), torch.randint(0, 4, (9, 4))
    fns = [lambda a: torch.tanh(a).sum(0), lambda a: a.argmax(1) + 1]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for fn in fns:
            f = torch.compile(fn)
            for _ in range(2):
                got = f(x.cuda())
                assert got.is_cuda
                np.testing.assert_allclose(got.cpu().numpy(), fn(x).numpy(), rtol=1e-6)
    msgs = [str(m.message) for m in w if "cannot build kernels" in str(m.message)]
    assert len(msgs) == 1 and "a test refuses it" in msgs[0], msgs


def test_int64_comparisons_in_cuda_kernels_render(cuda0, monkeypatch, tmp_path):
    # an int64 operand of a comparison is fused (as on the CPU); NVRTC has no int64_t, so its
    # pointer is `long long` (this graph was refused with a NotImplementedError that escaped
    # compile)
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    fn = lambda a, j: torch.where(j == 2, a, -a)
    x, i = torch.randn(9, 4), torch.randint(0, 4, (9, 4))
    if not HAVE_GPU:
        _render_only(monkeypatch)
    f = torch.compile(fn)
    got = f(x.cuda(), i.cuda())  # the first call's values come from the trace
    np.testing.assert_array_equal(got.cpu().numpy(), fn(x, i).numpy())
    assert "const long long* __restrict__ in" in f.source()


# ---------------------------------------------------------------- torch.cuda's other names

def test_cuda_names_scripts_reach_without_a_device():
    """What PyTorch's CPU build answers (checked by hand against torch 2.13): constructors and
    device queries raise RuntimeError, the "all devices" forms are empty, contexts with no
    device do nothing, CUDA graphs say they are out of scope."""
    if HAVE_GPU:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="dummy base class Event"):
        torch.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="requires CUDA support"):
        torch.cuda.Stream()
    for f in (torch.cuda.current_stream, torch.cuda.default_stream, torch.cuda.get_rng_state,
              torch.cuda.mem_get_info, torch.cuda.init, lambda: torch.cuda.set_device(0),
              lambda: torch.cuda.get_device_properties(0)):
        with pytest.raises(RuntimeError):
            f()
    assert torch.cuda.get_rng_state_all() == [] and torch.cuda.set_rng_state_all([]) is None
    assert dict(torch.cuda.memory_stats()) == {} and torch.cuda.memory_cached() == 0
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    with torch.cuda.device(0), torch.cuda.stream(None), torch.cuda.device_of(torch.ones(1)):
        with torch.cuda.nvtx.range("step {}", 1):
            pass
    assert torch.cuda.is_current_stream_capturing() is False
    with pytest.raises(torch._out_of_scope.OutOfScopeError, match="torch.cuda.CUDAGraph: CUDA "):
        torch.cuda.CUDAGraph()
    assert not hasattr(torch.cuda, "make_graphed_callables")
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        torch.cuda.no_such_name


class _FakeCupy:
    """The part of cupy's API that torch.cuda's streams and events call, recording calls."""

    def __init__(self):
        log, fake = [], self
        self.log = log

        class Stream:
            null = None

            def __init__(self, non_blocking=False, priority=None):
                self.ptr, self.done = 0x10 + len(log), True

            def __enter__(self):
                fake.current.append(self)
                return self

            def __exit__(self, *exc):
                fake.current.pop()

            def wait_event(self, e):
                log.append(("wait", self.ptr, e))

            def synchronize(self):
                log.append(("sync", self.ptr))

        class Event:
            def __init__(self, block=False, disable_timing=False, interprocess=False):
                self.timing, self.done = not disable_timing, True

            def record(self, s):
                log.append(("record", s.ptr))

        class Device:
            def __init__(self, i=0):
                self.id = i

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                pass

        Stream.null = Stream()
        self.current = [Stream.null]
        self.cuda = type("cuda", (), {
            "Stream": Stream, "Event": Event, "Device": Device,
            "get_current_stream": staticmethod(lambda: fake.current[-1]),
            "get_elapsed_time": staticmethod(lambda a, b: 2.5)})


def test_streams_and_events_go_through_cupys(monkeypatch):
    """`with torch.cuda.stream(s):` makes cupy's current stream `s` (where fusetorch's CUDA
    work is queued); events record on the stream given or the current one."""
    cp = _FakeCupy()
    monkeypatch.setattr(D, "_cupy", lambda: cp)
    s = torch.cuda.Stream()
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    with torch.cuda.stream(s):
        assert torch.cuda.current_stream() == s
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    assert cp.log[-2:] == [("record", s.cuda_stream)] * 2
    assert end.elapsed_time(start) == 2.5 and start.query()
    other = torch.cuda.Stream()
    other.wait_stream(s)
    assert cp.log[-2][0] == "record" and cp.log[-2][1] == s.cuda_stream
    assert cp.log[-1][:2] == ("wait", other.cuda_stream)

"""Run under `mpiexec -n W`: every check on every rank, one line per check on rank 0's stdout:
`CHECK <name> ok` or `CHECK <name> FAIL <rank: error>`. tests/distributed/test_*.py launch it
(one launch per world size holds every check: starting MPI is the slow part).

References are independent of the code under test: numpy float64 over every rank's input (each
rank's input is a formula of its rank, so any rank can compute all of them), and plain
single-process fusetorch training on the whole batch for DDP.
"""
import os
import runpy
import sys
import traceback
import warnings

import numpy as np

import fusetorch as torch
import fusetorch.distributed as dist
from fusetorch.nn.parallel import DistributedDataParallel as DDP
from fusetorch.utils.data import DataLoader, DistributedSampler, TensorDataset

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def rank_data(r: int, shape=(3, 4), dtype=np.float64) -> np.ndarray:
    """Rank r's input: distinct per rank and element, exact in float32."""
    n = int(np.prod(shape))
    return ((np.arange(n) % 7 - 3) * (r + 1) + r * 0.5).reshape(shape).astype(dtype)


# ---------------------------------------------------------------- collectives

@check
def all_reduce_ops():
    W, r = dist.get_world_size(), dist.get_rank()
    every = np.stack([rank_data(k) for k in range(W)])
    refs = {"SUM": every.sum(0), "AVG": every.mean(0), "MAX": every.max(0), "MIN": every.min(0),
            "PRODUCT": every.prod(0)}
    for name, ref in refs.items():
        for dt, tol in ((torch.float32, 1e-6), (torch.float64, 1e-12)):
            t = torch.tensor(rank_data(r), dtype=dt)
            assert dist.all_reduce(t, op=getattr(dist.ReduceOp, name)) is None
            np.testing.assert_allclose(t.numpy(), ref, rtol=tol, err_msg=f"{name} {dt}")
        if name != "AVG":
            t = torch.tensor(rank_data(r).astype(np.int64) * 2)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
            ints = np.stack([rank_data(k).astype(np.int64) * 2 for k in range(W)])
            want = {"SUM": ints.sum(0), "MAX": ints.max(0), "MIN": ints.min(0),
                    "PRODUCT": ints.prod(0)}[name]
            np.testing.assert_array_equal(t.numpy(), want, err_msg=f"{name} int64")


@check
def all_reduce_non_contiguous_and_half():
    W, r = dist.get_world_size(), dist.get_rank()
    base = torch.tensor(rank_data(r, (4, 6)), dtype=torch.float32)
    view = base.t()[1:5:2]                      # strided view: written back through the base
    keep = base.numpy().copy()
    dist.all_reduce(view)
    full = sum(rank_data(k, (4, 6)) for k in range(W))
    np.testing.assert_allclose(view.numpy(), full.T[1:5:2], rtol=1e-6)
    mask = np.ones((4, 6), bool)
    mask.T[1:5:2] = False
    np.testing.assert_array_equal(base.numpy()[mask], keep[mask])  # the rest untouched
    h = torch.tensor(rank_data(r), dtype=torch.float16)
    dist.all_reduce(h, op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(h.numpy(), np.stack([rank_data(k) for k in range(W)])
                                  .max(0).astype(np.float16))


@check
def async_work_and_barrier():
    W, r = dist.get_world_size(), dist.get_rank()
    ts = [torch.full((5,), float(r + i)) for i in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in works:
        assert w.wait() is True and w.is_completed()
    for i, t in enumerate(ts):
        np.testing.assert_allclose(t.numpy(), np.full(5, sum(k + i for k in range(W))))
    assert dist.barrier() is None
    dist.barrier(async_op=True).wait()


@check
def broadcast_from_each_rank():
    W, r = dist.get_world_size(), dist.get_rank()
    for src in range(W):
        t = torch.tensor(rank_data(r), dtype=torch.float32)
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(t.numpy(), rank_data(src).astype(np.float32))
        base = torch.tensor(rank_data(r, (3, 4)))
        col = base[:, 1]                        # non-contiguous
        dist.broadcast(col, src)
        np.testing.assert_array_equal(col.numpy(), rank_data(src, (3, 4))[:, 1])
        np.testing.assert_array_equal(base.numpy()[:, 0], rank_data(r, (3, 4))[:, 0])


@check
def all_gather_and_reduce_scatter():
    W, r = dist.get_world_size(), dist.get_rank()
    outs = [torch.zeros(3, 4, dtype=torch.float64) for _ in range(W)]
    dist.all_gather(outs, torch.tensor(rank_data(r)))
    for k, o in enumerate(outs):
        np.testing.assert_array_equal(o.numpy(), rank_data(k))
    # rank k's input list: input_list[j] = rank_data(k * W + j)
    for name in ("SUM", "MAX", "AVG"):
        out = torch.zeros(3, 4, dtype=torch.float64)
        dist.reduce_scatter(out, [torch.tensor(rank_data(r * W + j)) for j in range(W)],
                            op=getattr(dist.ReduceOp, name))
        every = np.stack([rank_data(k * W + r) for k in range(W)])
        ref = {"SUM": every.sum(0), "MAX": every.max(0), "AVG": every.mean(0)}[name]
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, err_msg=name)


@check
def errors_as_pytorch():
    W = dist.get_world_size()

    def raises(exc, match, fn):
        try:
            fn()
        except exc as e:
            assert match in str(e), f"{match!r} not in {e!r}"
        else:
            raise AssertionError(f"no {exc.__name__} ({match})")
    raises(RuntimeError, "invalid root rank", lambda: dist.broadcast(torch.ones(2), src=W))
    raises(RuntimeError, "expected length", lambda: dist.all_gather([torch.ones(2)] * (W + 1),
                                                                    torch.ones(2)))
    raises(RuntimeError, "invalid tensor size", lambda: dist.all_gather(
        [torch.ones(3) for _ in range(W)], torch.ones(2)))
    raises(ValueError, "different dtypes", lambda: dist.all_gather(
        [torch.ones(2, dtype=torch.float64) for _ in range(W)], torch.ones(2)))
    raises(RuntimeError, "can't be cast", lambda: dist.all_reduce(
        torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.AVG))
    raises(TypeError, "torch.Tensor", lambda: dist.all_reduce([1.0, 2.0]))
    raises(ValueError, "twice", lambda: dist.init_process_group("mpi"))
    assert dist.get_backend() == "mpi" and dist.is_initialized()


@check
def gloo_runs_on_mpi():
    """init_process_group("gloo") under mpiexec: the MPI backend, named "gloo", one note."""
    W, r = dist.get_world_size(), dist.get_rank()
    dist.destroy_process_group()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            dist.init_process_group("gloo", rank=r, world_size=W)  # matching: accepted
            assert dist.get_backend() == "gloo" and dist.get_world_size() == W
            assert dist.get_rank() == r
            x = torch.tensor(rank_data(r))
            dist.all_reduce(x)
            np.testing.assert_allclose(x.numpy(), sum(rank_data(k) for k in range(W)))
            dist.destroy_process_group()
            dist.init_process_group("gloo")
            dist.destroy_process_group()
        notes = [str(w.message) for w in seen]
        assert len(notes) == 1 and notes[0].startswith(
            "fusetorch.distributed has no gloo backend of its own: 'gloo' runs on the MPI "
            "backend"), notes
        try:
            dist.init_process_group("gloo", rank=(r + 1) % W, world_size=W)
        except RuntimeError as e:
            assert f"the MPI launcher made this process rank {r} of {W}" in str(e), str(e)
        else:
            raise AssertionError("a rank other than MPI's was accepted")
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("mpi")  # the checks after this one run on it


def _stand_in_cupy():
    """Just enough of cupy and cupy.cuda.nccl for the NCCL backend's glue (pointers, counts,
    dtypes, staging, AVG) to run on CPU: 'device' arrays are numpy arrays with `.data.ptr`, and
    the communicator reads and writes memory at those pointers through MPI."""
    import ctypes
    import types

    from mpi4py import MPI

    class FakeArray(np.ndarray):
        @property
        def data(self):
            return types.SimpleNamespace(ptr=self.ctypes.data)

    def dev(a):
        return np.asarray(a).view(FakeArray)
    nccl = types.ModuleType("cupy.cuda.nccl")
    dts = {1: np.int8, 2: np.uint8, 3: np.int32, 4: np.int64, 6: np.float16, 7: np.float32,
           8: np.float64}
    for code, name in ((1, "INT8"), (2, "UINT8"), (3, "INT32"), (4, "INT64"), (6, "FLOAT16"),
                       (7, "FLOAT32"), (8, "FLOAT64")):
        setattr(nccl, f"NCCL_{name}", code)
    ops = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN}
    nccl.NCCL_SUM, nccl.NCCL_PROD, nccl.NCCL_MAX, nccl.NCCL_MIN = 0, 1, 2, 3

    def at(ptr, count, dt):
        d = np.dtype(dts[dt])
        raw = (ctypes.c_char * (count * d.itemsize)).from_address(ptr)
        return np.frombuffer(raw, dtype=d)

    class Comm:
        def __init__(self, size, uid, rank):
            assert uid == "uid-from-rank-0", uid
            self.c = MPI.COMM_WORLD.Dup()
            assert (self.c.size, self.c.rank) == (size, rank)

        def allReduce(self, sb, rb, count, dt, op, stream):
            r = at(rb, count, dt)
            self.c.Allreduce(MPI.IN_PLACE if sb == rb else at(sb, count, dt), r, ops[op])

        def broadcast(self, sb, rb, count, dt, root, stream):
            r = at(rb, count, dt)
            if sb != rb and self.c.rank == root:
                r[:] = at(sb, count, dt)
            self.c.Bcast(r, root)

        def allGather(self, sb, rb, count, dt, stream):
            self.c.Allgather(at(sb, count, dt), at(rb, count * self.c.size, dt))

        def reduceScatter(self, sb, rb, count, dt, op, stream):
            self.c.Reduce_scatter_block(at(sb, count * self.c.size, dt), at(rb, count, dt),
                                        ops[op])

        def destroy(self):
            self.c.Free()
    nccl.NcclCommunicator = Comm
    nccl.get_unique_id = lambda: "uid-from-rank-0"

    class Stream:
        ptr = 0

        def synchronize(self):
            pass

        def record(self):
            return types.SimpleNamespace(done=True, synchronize=lambda: None)
    cuda = types.ModuleType("cupy.cuda")
    cuda.nccl = nccl
    cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    cuda.Device = lambda i: types.SimpleNamespace(use=lambda: None)
    cuda.get_current_stream = Stream
    cp = types.ModuleType("cupy")
    cp.cuda, cp.ndarray = cuda, FakeArray
    cp.ascontiguousarray = lambda a: dev(np.ascontiguousarray(a))
    cp.empty = lambda shape, dtype: dev(np.empty(shape, dtype))
    cp.stack = lambda xs: dev(np.stack(xs))
    cp.divide = np.divide
    return {"cupy": cp, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl}, dev


@check
def nccl_backend_on_a_stand_in_cupy():
    import importlib.util
    if importlib.util.find_spec("cupy") is not None:
        return  # a real cupy: the stand-in would shadow it
    from fusetorch.distributed import c10d
    from fusetorch.distributed.nccl import NCCLBackend
    W, r = dist.get_world_size(), dist.get_rank()
    mods, dev = _stand_in_cupy()
    saved_modules, saved_pg = {k: sys.modules.get(k) for k in mods}, c10d._PG
    sys.modules.update(mods)
    try:
        c10d._PG = NCCLBackend()
        assert dist.get_backend() == "nccl" and dist.get_rank() == r
        be = torch.ones(1)._be

        def t(a):
            return torch.Tensor._make(dev(a), torch.float32, be)
        x = t(rank_data(r).astype(np.float32))
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        np.testing.assert_allclose(np.asarray(x._data), sum(rank_data(k) for k in range(W)) / W,
                                   rtol=1e-6)
        base = t(rank_data(r, (4, 6)).astype(np.float32))
        col = torch.Tensor._make(base._data[:, 2], torch.float32, be)  # non-contiguous
        dist.all_reduce(col, op=dist.ReduceOp.MAX)
        np.testing.assert_array_equal(np.asarray(base._data)[:, 2],
                                      np.max([rank_data(k, (4, 6))[:, 2] for k in range(W)], 0))
        b = t(rank_data(r).astype(np.float32))
        dist.broadcast(b, src=W - 1)
        np.testing.assert_array_equal(np.asarray(b._data), rank_data(W - 1))
        outs = [t(np.zeros((3, 4), np.float32)) for _ in range(W)]
        assert dist.all_gather(outs, t(rank_data(r).astype(np.float32)), async_op=True).wait()
        for k, o in enumerate(outs):
            np.testing.assert_array_equal(np.asarray(o._data), rank_data(k))
        out = t(np.zeros((3, 4), np.float32))
        dist.reduce_scatter(out, [t(rank_data(r * W + j).astype(np.float32)) for j in range(W)])
        np.testing.assert_allclose(np.asarray(out._data),
                                   sum(rank_data(k * W + r) for k in range(W)), rtol=1e-6)
        try:
            dist.all_reduce(torch.ones(2))  # a host tensor on the nccl backend
        except RuntimeError as e:
            assert "Tensors must be CUDA and dense" in str(e)
        else:
            raise AssertionError("a CPU tensor went to NCCL")
        c10d._PG.close()
    finally:
        c10d._PG = saved_pg
        for k, m in saved_modules.items():
            if m is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = m


# ---------------------------------------------------------------- DDP

N, D_IN, H, D_OUT = 64, 100, 50, 10


def _net(seed: int):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(D_IN, H), torch.nn.ReLU(),
                               torch.nn.Linear(H, D_OUT))


def _data():
    torch.manual_seed(1234)
    return torch.randn(N, D_IN), torch.randn(N, D_OUT)


def _reference(steps: int, lr: float):
    """Single-process training on the whole batch (mean loss): what DDP must reproduce."""
    x, y = _data()
    model = _net(0)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


def _train_ddp(steps: int, lr: float, compiled: bool = False, **ddp_kwargs):
    W, r = dist.get_world_size(), dist.get_rank()
    x, y = _data()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=7)
    loader = DataLoader(data, batch_size=N // W, sampler=sampler)
    model = DDP(_net(r), **ddp_kwargs)       # rank 0's initial weights win
    step_model = torch.compile(model) if compiled else model
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for epoch in range(steps):
        sampler.set_epoch(epoch)
        (xb, yb), = list(loader)              # one batch: this rank's shard of the epoch
        opt.zero_grad()
        torch.nn.functional.mse_loss(step_model(xb), yb).backward()
        opt.step()
    return model, step_model


def _assert_matches_reference(model, steps, lr):
    ref = _reference(steps, lr)
    got = [p.detach().numpy() for p in model.module.parameters()]
    for g, want in zip(got, ref):
        # measured: at most 4e-8 apart after 20 steps (float32 sums in another order)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=5e-7)
    _assert_same_on_all_ranks(got)


def _assert_same_on_all_ranks(arrays):
    W = dist.get_world_size()
    for a in arrays:
        outs = [torch.zeros(a.shape, dtype=torch.float32) for _ in range(W)]
        dist.all_gather(outs, torch.tensor(a))
        for o in outs:
            np.testing.assert_array_equal(o.numpy(), a)


@check
def ddp_matches_single_process():
    _assert_matches_reference(_train_ddp(20, 0.05)[0], 20, 0.05)


@check
def ddp_small_buckets():
    model, _ = _train_ddp(20, 0.05, bucket_cap_mb=1e-5)  # 10 bytes: one parameter per bucket
    assert len(model._buckets) == 4
    _assert_matches_reference(model, 20, 0.05)


@check
def ddp_compiled():
    model, compiled = _train_ddp(20, 0.05, compiled=True)
    assert compiled.kernels(), "the compiled DDP model ran eagerly"
    shard = _data()[0][:N // dist.get_world_size()]  # the shape it was compiled for
    compiled(shard)
    assert "CompiledFunctionBackward" in repr(compiled(shard).grad_fn)
    _assert_matches_reference(model, 20, 0.05)


@check
def ddp_in_a_compiled_training_step():
    W, r = dist.get_world_size(), dist.get_rank()
    x, y = _data()
    shard = slice(r * N // W, (r + 1) * N // W)
    xs, ys = x[shard].contiguous(), y[shard].contiguous()
    model = DDP(_net(r))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    @torch.compile
    def step(xb, yb):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        return loss
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(20):
            step(xs, ys)
    # the gradient collectives inside backward break the graph: the step runs eagerly, right
    assert any("graph break (a collective" in str(w.message) for w in caught), caught
    ref = _net(0)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for _ in range(20):
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=5e-7)


@check
def ddp_module_state_and_no_sync():
    W, r = dist.get_world_size(), dist.get_rank()
    model = DDP(_net(r))
    assert model.module is not None
    keys = list(model.state_dict().keys())
    assert keys == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"], keys
    init = [p.detach().numpy().copy() for p in _net(0).parameters()]
    for p, want in zip(model.module.parameters(), init):
        np.testing.assert_array_equal(p.detach().numpy(), want)  # broadcast from rank 0
    x, y = _data()
    shard = slice(r * N // W, (r + 1) * N // W)
    half = (shard.stop - shard.start) // 2
    parts = [slice(shard.start, shard.start + half), slice(shard.start + half, shard.stop)]
    with model.no_sync():                     # local accumulation only
        torch.nn.functional.mse_loss(model(x[parts[0]]), y[parts[0]], reduction="sum").backward()
    local = model.module[0].weight.grad.numpy().copy()
    ref_local = _net(0)
    torch.nn.functional.mse_loss(ref_local(x[parts[0]]), y[parts[0]], reduction="sum").backward()
    np.testing.assert_allclose(local, ref_local[0].weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    torch.nn.functional.mse_loss(model(x[parts[1]]), y[parts[1]], reduction="sum").backward()
    ref = _net(0)
    torch.nn.functional.mse_loss(ref(x), y, reduction="sum").backward()
    for p, q in zip(model.module.parameters(), ref.parameters()):  # average of rank sums
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() / W, rtol=1e-5, atol=1e-5)


@check
def ddp_find_unused_parameters():
    W, r = dist.get_world_size(), dist.get_rank()

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(4, 4)
            self.a = torch.nn.Linear(4, 1)
            self.b = torch.nn.Linear(4, 1)

        def forward(self, x, head):
            return getattr(self, head)(self.body(x))
    torch.manual_seed(0)
    model = DDP(TwoHeads(), find_unused_parameters=True)
    x = torch.tensor(rank_data(r, (2, 4)), dtype=torch.float32)
    head = "a" if r == 0 else "b"              # b is unused on rank 0, a on the others
    model(x, head).sum().backward()
    ref = {}
    for k in range(W):
        m = TwoHeads()
        m.load_state_dict(model.module.state_dict())
        m(torch.tensor(rank_data(k, (2, 4)), dtype=torch.float32), "a" if k == 0 else "b") \
            .sum().backward()
        for name, p in m.named_parameters():
            if p.grad is not None:
                ref[name] = ref.get(name, 0) + p.grad.numpy() / W
    for name, p in model.module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@check
def ddp_buffers_broadcast_each_forward():
    r = dist.get_rank()

    def make():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        m[1].running_mean.fill_(float(r))             # differs per rank before DDP
        return m
    x = torch.tensor(rank_data(r, (5, 3)), dtype=torch.float32)
    for compiled in (False, True):
        model = DDP(make())
        np.testing.assert_array_equal(model.module[1].running_mean.numpy(), np.zeros(4))
        model.module[1].running_mean.fill_(float(r))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = torch.compile(model) if compiled else model
            out = run(x)                                   # broadcast first: rank 0's zeros
        if compiled:  # the broadcast is a collective: the traced call breaks and runs eagerly
            assert any("graph break" in str(w.message) for w in caught), caught
        with torch.no_grad():
            h = model.module[0](x).numpy().astype(np.float64)
        np.testing.assert_allclose(model.module[1].running_mean.numpy(), 0.1 * h.mean(0),
                                   rtol=1e-5, atol=1e-7)
        ref = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)
        np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-5)


@check
def ddp_errors():
    try:
        DDP(torch.nn.ReLU())
    except RuntimeError as e:
        assert "doesn't have any parameter that requires a gradient" in str(e)
    else:
        raise AssertionError("no error for a module without parameters")


@check
def example_ddp_two_layer():
    here = os.path.dirname(os.path.abspath(__file__))
    ex = runpy.run_path(os.path.join(here, "..", "..", "examples", "ddp_two_layer.py"))
    steps = 30
    loss, model = ex["main"](steps=steps, verbose=False)
    # the same steps in one process on the whole batch, as examples/two_layer_net_nn.py
    torch.manual_seed(0)
    x, y = torch.randn(64, 1000), torch.randn(64, 10)
    ref = torch.nn.Sequential(torch.nn.Linear(1000, 100), torch.nn.ReLU(),
                              torch.nn.Linear(100, 10))
    opt = torch.optim.SGD(ref.parameters(), lr=1e-4)
    for _ in range(steps):
        ref_loss = torch.nn.functional.mse_loss(ref(x), y, reduction="sum")
        opt.zero_grad()
        ref_loss.backward()
        opt.step()
    for p, q in zip(model.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, ref_loss.item(), rtol=1e-4)
    _assert_same_on_all_ranks([p.detach().numpy() for p in model.parameters()])


# ---------------------------------------------------------------- ZeroRedundancyOptimizer

@check
def broadcast_object_list_from_each_rank():
    W, r = dist.get_world_size(), dist.get_rank()
    for src in range(W):
        box = [{"rank": r, "data": list(range(r + 1))}, f"from {r}"] if r == src else [None, None]
        dist.broadcast_object_list(box, src=src)
        assert box == [{"rank": src, "data": list(range(src + 1))}, f"from {src}"], box


@check
def zero_redundancy_matches_plain_optimizer():
    """Every rank trains the same net on the same batch: ZeRO's sharded Adam steps must give
    plain Adam's parameters on every rank, each rank holding the state of its share only, and
    the consolidated state on rank 0 must be plain Adam's."""
    from fusetorch.distributed.optim import ZeroRedundancyOptimizer
    W, r = dist.get_world_size(), dist.get_rank()
    x, y = _data()
    plain, sharded = _net(0), _net(0)
    ref = torch.optim.Adam(plain.parameters(), lr=0.01)
    zero = ZeroRedundancyOptimizer(sharded.parameters(), torch.optim.Adam, lr=0.01)
    for _ in range(5):
        for model, opt in ((plain, ref), (sharded, zero)):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    for a, b in zip(plain.parameters(), sharded.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)
    _assert_same_on_all_ranks([p.detach().numpy() for p in sharded.parameters()])
    params = list(sharded.parameters())
    held = {i for i, p in enumerate(params) if zero.optim is not None and p in zero.optim.state}
    every = [torch.zeros(len(params), dtype=torch.int64) for _ in range(W)]
    mine = torch.tensor([1 if i in held else 0 for i in range(len(params))])
    dist.all_gather(every, mine)
    counts = sum(e.numpy() for e in every)
    assert counts.tolist() == [1] * len(params), counts  # each parameter's state on one rank
    if W > 1:
        assert len(held) < len(params)
    zero.consolidate_state_dict(to=0)
    if r == 0:
        got, want = zero.state_dict(), ref.state_dict()
        assert got["param_groups"] == want["param_groups"]
        for i, st in want["state"].items():
            for k, v in st.items():
                np.testing.assert_allclose(got["state"][i][k].numpy(), v.numpy(), rtol=1e-6,
                                           atol=1e-9)
    else:
        try:
            zero.state_dict()
            raise AssertionError("state_dict without consolidation did not raise")
        except RuntimeError as e:
            assert "has not been consolidated on this rank" in str(e)
    # loading plain Adam's state: each rank keeps its share, and training goes on as plain's
    zero.load_state_dict(ref.state_dict())
    for model, opt in ((plain, ref), (sharded, zero)):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    for a, b in zip(plain.parameters(), sharded.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)


def _meet_or_abort(name: str, patience_s: float | None) -> None:
    """Every rank meets here after each check. A check that failed on this rank may have left
    the others inside a collective this rank will never join: such a rank waits `patience_s`,
    then ends the whole run (the test reports the checks that did not finish, with this rank's
    traceback) instead of leaving it to hang until the launch's timeout."""
    import time

    from mpi4py import MPI
    req, t0 = MPI.COMM_WORLD.Ibarrier(), time.monotonic()
    if patience_s is None:
        req.Wait()
        return
    while not req.Test():
        if time.monotonic() - t0 > patience_s:
            sys.stderr.write(f"[rank {dist.get_rank()}] {name}: other ranks are stuck in a "
                             "collective; aborting\n")
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)
        time.sleep(0.01)


def main():
    dist.init_process_group("mpi")
    r = dist.get_rank()
    only = set(sys.argv[1:])
    for fn in CHECKS:
        if only and fn.__name__ not in only:
            continue
        err = ""
        try:
            fn()
        except Exception:
            err = traceback.format_exc()
        if err:
            sys.stderr.write(f"[rank {r}] {fn.__name__}:\n{err}\n")
            sys.stderr.flush()
        _meet_or_abort(fn.__name__, 20.0 if err else None)
        flag = torch.tensor([0 if err else 1], dtype=torch.int64)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        if r == 0:
            print(f"CHECK {fn.__name__} {'ok' if flag.item() else 'FAIL'}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

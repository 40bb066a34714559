"""fusetorch.multiprocessing: tensors sent between processes share memory, nothing leaks."""
import gc
import io
import os
import pickle
import signal
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.multiprocessing as mp
from fusetorch import nn

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "memfd_create"),
                                reason="shared-memory tests need fork and memfd (Linux)")

FORK = mp.get_context("fork")
GUARD = 30  # seconds: a broken transport fails the test instead of hanging it


def fp_roundtrip(obj):
    """Through ForkingPickler, as queues and pipes send (in this process)."""
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
    return pickle.loads(buf.getvalue())


def memfd_maps(pid="self") -> int:
    with open(f"/proc/{pid}/maps") as f:
        return sum("memfd:fusetorch" in line for line in f)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def dev_shm() -> list:
    """Named shared memory fusetorch could have made (its fallback names files "fusetorch-");
    other processes on this machine come and go in /dev/shm, so only these are compared."""
    if not os.path.isdir("/dev/shm"):
        return []
    return sorted(n for n in os.listdir("/dev/shm") if "fusetorch" in n or "torch" in n)


# ---------------------------------------------------------------- children (module level: spawn)

def add_one_and_scale_view(t, view):
    t.add_(1)
    view.mul_(10)


def fill_each_from_queue(q, done):
    while (item := q.get()) is not None:
        value, t = item
        t.fill_(value)
        del t, item
    done.put("ok")


def send_tensors(q, n, hold):
    for i in range(n):
        q.put(torch.full((4,), float(i)))
    q.put(None)
    hold.get()  # the sender's resource sharer hands out the descriptors: stay until told


def send_then_wait_forever(q):
    keep = [torch.full((1000,), 7.0) for _ in range(3)]
    for k in keep:
        k.share_memory_()
    q.put(torch.full((8,), 3.0))
    signal.pause()


def pickle_and_exit(conn):
    conn.send_bytes(bytes(ForkingPickler.dumps(torch.ones(4))))
    conn.close()


def raise_in_child(i, marker):
    if i == 1:
        raise ValueError(f"boom {marker}")


def write_rank(i, t):
    t[i] = i + 1


def exit_with_code(i):
    if i == 0:
        os._exit(3)


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_tensor_modified_in_a_child_is_seen_modified_by_the_parent(method):
    t = torch.zeros(2, 3)
    if method == "fork":  # fork passes arguments by inheritance: share first, as in PyTorch
        t.share_memory_()
    view = t[1]  # spawn pickles the arguments: both go as handles into one segment
    p = mp.get_context(method).Process(target=add_one_and_scale_view, args=(t, view))
    p.start()
    p.join(GUARD)
    assert p.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), [[1, 1, 1], [10, 10, 10]])
    assert t.is_shared() and view.is_shared()


def test_views_and_dtypes_through_a_queue_alias_the_senders_memory():
    base = torch.zeros(4, 6, dtype=torch.float64)
    views = {
        "row": base[1], "col": base[:, 2], "transposed": base[2:4].t(),
        "strided": base[0, ::2], "expanded": torch.zeros(3).expand(4, 3),
    }
    dtypes = [torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
              torch.int32, torch.int64, torch.uint8, torch.bool]
    typed = {str(d): torch.zeros(5, dtype=d) for d in dtypes}
    q, done = FORK.Queue(), FORK.Queue()
    p = FORK.Process(target=fill_each_from_queue, args=(q, done))
    p.start()
    for i, v in enumerate(views.values()):
        q.put((i + 2, v))
    for t in typed.values():
        q.put((1, t))
    q.put(None)
    assert done.get(timeout=GUARD) == "ok"
    p.join(GUARD)
    expect = np.zeros((4, 6))
    expect[1] = 2
    expect[:, 2] = 3
    expect[2:4] = 4
    expect[0, ::2] = 5
    np.testing.assert_array_equal(base.numpy(), expect)
    np.testing.assert_array_equal(views["expanded"].numpy(), np.full((4, 3), 6.0))
    for name, t in typed.items():
        assert t.dtype == getattr(torch, name.split(".")[1])
        np.testing.assert_array_equal(t.numpy(), np.ones(5, dtype=t.numpy().dtype))


def test_received_tensor_keeps_layout_dtype_and_requires_grad_but_not_grad():
    x = torch.arange(12.0).reshape(3, 4).t()
    r = fp_roundtrip(x)
    assert r.shape == x.shape and r.stride() == x.stride() and r.dtype == x.dtype
    r[0, 1] = -1.0  # the same process maps a segment once: the copy aliases the sender
    assert x[0, 1].item() == -1.0
    w = torch.ones(3, requires_grad=True)
    w.grad = torch.ones(3)
    rw = fp_roundtrip(w)
    assert rw.requires_grad and rw.grad is None and rw.is_leaf
    p = nn.Parameter(torch.ones(2))
    rp = fp_roundtrip(p)
    assert type(rp) is nn.Parameter and rp.requires_grad


def test_empty_and_zero_dim_tensors_travel():
    for t in (torch.zeros(0, 3), torch.tensor(2.5), torch.zeros(2, 0, dtype=torch.int64)):
        r = fp_roundtrip(t)
        assert r.shape == t.shape and r.dtype == t.dtype and r.is_shared()
        np.testing.assert_array_equal(r.numpy(), t.numpy())


def test_plain_pickle_still_copies():
    t = torch.arange(4.0)
    u = pickle.loads(pickle.dumps(t))
    assert not t.is_shared() and not u.is_shared()
    u[0] = 9
    assert t[0].item() == 0


def test_share_memory_keeps_the_tensor_its_views_autograd_state_and_version():
    t = torch.arange(6.0)
    v = t[2:4]
    d = t.detach()
    ver = t._version
    w = torch.ones(3, requires_grad=True)
    assert t.share_memory_() is t and w.share_memory_() is w
    assert t.is_shared() and v.is_shared() and d.is_shared()
    assert w.requires_grad and w.is_leaf and t._version == ver
    v[0] = 100  # the views still look into t's (now shared) memory
    d[5] = -5
    np.testing.assert_array_equal(t.numpy(), [0, 1, 100, 3, 4, -5])
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2, 2, 2])


def test_module_share_memory_shares_parameters_and_grads():
    m = nn.Linear(3, 2)
    m.weight.grad = torch.zeros(2, 3)
    w = m.weight
    assert m.share_memory() is m and m.weight is w
    assert all(p.is_shared() for p in m.parameters()) and m.weight.grad.is_shared()


def test_a_thousand_tensors_through_a_queue_leave_no_segment_behind():
    gc.collect()  # earlier tests' garbage must not close descriptors during this one
    shm, maps = dev_shm(), memfd_maps()
    q, hold = FORK.Queue(), FORK.Queue()
    fds = open_fds()
    p = FORK.Process(target=send_tensors, args=(q, 1000, hold))
    p.start()
    got = []
    while (t := q.get(timeout=GUARD)) is not None:
        got.append(t)
    assert [g[0].item() for g in got] == list(range(1000))
    assert memfd_maps() == maps + 1000 and all(g.is_shared() for g in got)
    hold.put(1)
    p.join(GUARD)
    p.close()  # its sentinel
    del got, t
    gc.collect()
    assert memfd_maps() == maps
    assert open_fds() == fds
    assert dev_shm() == shm


def test_a_killed_child_leaks_nothing():
    gc.collect()
    shm, maps = dev_shm(), memfd_maps()
    q = FORK.Queue()
    p = FORK.Process(target=send_then_wait_forever, args=(q,))
    p.start()
    t = q.get(timeout=GUARD)
    np.testing.assert_array_equal(t.numpy(), np.full(8, 3.0))
    assert memfd_maps(p.pid) >= 3  # the child's own segments
    os.kill(p.pid, signal.SIGKILL)
    p.join(GUARD)
    t.add_(1)  # the parent's mapping outlives the child
    assert t[0].item() == 4.0 and memfd_maps() == maps + 1
    del t
    gc.collect()
    assert memfd_maps() == maps and dev_shm() == shm


def test_a_message_from_a_sender_that_is_gone_raises_instead_of_hanging():
    # the descriptor is fetched from the sender while unpickling (PyTorch's file_descriptor
    # strategy has the same rule); the DataLoader counts this OSError as a dead worker
    a, b = FORK.Pipe(duplex=False)
    p = FORK.Process(target=pickle_and_exit, args=(b,))
    p.start()
    b.close()
    data = a.recv_bytes()
    p.join(GUARD)
    with pytest.raises(OSError):
        pickle.loads(data)


def test_a_non_leaf_that_requires_grad_is_refused():
    x = torch.ones(3, requires_grad=True)
    q = mp.SimpleQueue()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        q.put(x * 2)
    q.put((x * 2).detach())
    assert q.get().tolist() == [2.0, 2.0, 2.0]
    q.close()


def test_standard_api_and_sharing_strategies():
    for name in ("Process", "Queue", "SimpleQueue", "Pipe", "Pool", "get_context",
                 "set_start_method", "get_start_method", "spawn", "start_processes"):
        assert hasattr(mp, name)
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("nope")


def test_pipe_and_pool_move_tensors():
    a, b = FORK.Pipe()
    t = torch.arange(3.0)
    a.send(t)
    r = b.recv()
    assert t.is_shared() and r.tolist() == [0.0, 1.0, 2.0]
    with FORK.Pool(1) as pool:
        assert pool.apply(torch.sum, (torch.arange(4.0),)).item() == 6.0


def test_start_processes_reports_the_childs_error_with_its_traceback():
    with pytest.raises(mp.ProcessRaisedException) as e:
        mp.start_processes(raise_in_child, args=("xyz",), nprocs=2, start_method="fork")
    msg = str(e.value)
    assert msg.startswith("\n\n-- Process 1 terminated with the following error:\n")
    assert "ValueError: boom xyz" in msg and "raise_in_child" in msg
    assert e.value.error_index == 1


def test_start_processes_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException,
                       match="process 0 terminated with exit code 3") as e:
        mp.start_processes(exit_with_code, nprocs=2, start_method="fork")
    assert e.value.exit_code == 3


def test_spawn_runs_fn_with_the_index_and_shares_tensor_arguments():
    t = torch.zeros(2)
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(write_rank, args=(t,), nprocs=2, start_method="fork")  # spawns anyway
    assert t.tolist() == [1.0, 2.0]

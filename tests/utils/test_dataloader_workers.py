"""DataLoader with worker processes: same batches in the same order as in-process loading,
errors and dead workers surface in the main process (never a hang), clean shutdown.

Every iteration that could hang if the loader were wrong runs with a `timeout`, so a bug fails
the test with "timed out" instead of stalling the suite. Nothing asserts on elapsed time.
"""
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, \
    get_worker_info

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="worker tests use fork")

ROOT = Path(__file__).resolve().parents[2]
GUARD = 60  # seconds: far above any honest wait, only there to turn a hang into a failure


def gen(seed):
    return torch.Generator().manual_seed(seed)


def assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert type(x) is type(y)
        if isinstance(x, torch.Tensor):
            assert x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape)
            np.testing.assert_array_equal(x.numpy(), y.numpy())
        elif isinstance(x, (list, tuple)):
            assert_same_batches(list(x), list(y))
        elif isinstance(x, dict):
            assert list(x) == list(y)
            assert_same_batches(list(x.values()), list(y.values()))
        else:
            assert x == y


def reaped(pid: int) -> bool:
    """True when `pid` is neither running nor a zombie child of this process."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # not a child any more: it exited and was waited for
    return False  # still running (or a zombie that nobody had waited for)


class Records(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return {"x": np.arange(4, dtype=np.float32) * i, "y": i, "w": i / 4, "tag": f"r{i}"}


def test_workers_return_the_same_batches_in_the_same_order():
    ds = TensorDataset(torch.randn(23, 3), torch.arange(23))
    kw = dict(batch_size=4, shuffle=True)
    plain = DataLoader(ds, generator=gen(7), **kw)
    workers = DataLoader(ds, generator=gen(7), num_workers=2, timeout=GUARD, **kw)
    for _ in range(3):  # epochs reshuffle identically in both
        assert_same_batches(list(workers), list(plain))
    rec = Records()
    assert_same_batches(list(DataLoader(rec, batch_size=5, num_workers=2, timeout=GUARD)),
                        list(DataLoader(rec, batch_size=5)))
    assert_same_batches(
        list(DataLoader(rec, batch_size=5, drop_last=True, num_workers=2, timeout=GUARD)),
        list(DataLoader(rec, batch_size=5, drop_last=True)))
    assert_same_batches(list(DataLoader(rec, batch_size=None, num_workers=2, timeout=GUARD)),
                        list(DataLoader(rec, batch_size=None)))


class SlowWorkerZero(Dataset):
    """Worker 0 is slow, so worker 1's batches arrive first and must wait their turn."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        if info is not None and info.id == 0:
            import time
            time.sleep(0.03)
        return i


def test_batches_arriving_out_of_order_are_returned_in_sampler_order():
    want = [b.tolist() for b in DataLoader(SlowWorkerZero(), batch_size=2)]
    got = [b.tolist() for b in DataLoader(SlowWorkerZero(), batch_size=2, num_workers=2,
                                          timeout=GUARD)]
    assert got == want
    loose = [b.tolist() for b in DataLoader(SlowWorkerZero(), batch_size=2, num_workers=2,
                                            timeout=GUARD, in_order=False)]
    assert sorted(loose) == sorted(want)


def test_global_seed_makes_worker_loading_reproducible_and_equal_to_in_process():
    ds = TensorDataset(torch.arange(17))

    def run(num_workers):
        torch.manual_seed(5)
        kw = dict(num_workers=num_workers, timeout=GUARD) if num_workers else {}
        loader = DataLoader(ds, batch_size=3, shuffle=True, **kw)
        return [[b[0].tolist() for b in loader] for _ in range(2)]

    assert run(2) == run(0)


class WhoAmI(Dataset):
    """Each sample says which worker made it and what that worker's random streams give."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "n": info.num_workers, "seed": info.seed, "pid": os.getpid(),
                "same_ds": info.dataset is self, "torch": torch.rand(1).item(),
                "np": float(np.random.rand()), "py": random.random(),
                "init": getattr(self, "init_id", None)}


def init_fn(worker_id):
    get_worker_info().dataset.init_id = worker_id * 10


def test_worker_info_seeds_and_init_fn():
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=init_fn,
                        generator=gen(3), timeout=GUARD)
    batches = list(loader)
    ids = [b["id"].tolist() for b in batches]
    assert ids == [[0, 0], [1, 1], [0, 0], [1, 1]]  # batch k is made by worker k % 2
    assert all(b["n"].tolist() == [2, 2] for b in batches)
    assert all(b["same_ds"].tolist() == [True, True] for b in batches)
    assert [b["init"].tolist() for b in batches] == [[0, 0], [10, 10], [0, 0], [10, 10]]
    seeds = {b["id"][0].item(): b["seed"][0].item() for b in batches}
    assert seeds[1] == seeds[0] + 1  # base seed + worker id
    pids = {b["id"][0].item(): b["pid"][0].item() for b in batches}
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    for key in ("torch", "np", "py"):  # the two workers draw different numbers
        first = {b["id"][0].item(): b[key][0].item() for b in batches[:2]}
        assert first[0] != first[1], key
    again = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=init_fn,
                            generator=gen(3), timeout=GUARD))
    for key in ("seed", "torch", "np", "py"):  # same loader generator: same worker seeds
        assert [b[key].tolist() for b in again] == [b[key].tolist() for b in batches], key
    assert all(reaped(p) for p in pids.values())
    assert get_worker_info() is None


class Shard(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


def test_iterable_dataset_sharded_with_get_worker_info():
    # PyTorch's documented example: worker 0 yields 3, 4 and worker 1 yields 5, 6
    out = list(DataLoader(Shard(3, 7), num_workers=2, timeout=GUARD))
    assert [b.tolist() for b in out] == [[3], [5], [4], [6]]
    out = list(DataLoader(Shard(0, 9), batch_size=2, num_workers=2, timeout=GUARD))
    assert sorted(i for b in out for i in b.tolist()) == list(range(9))


class Fails(Dataset):
    def __init__(self, exc):
        self.exc = exc

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise self.exc
        return i


def test_worker_error_surfaces_with_its_traceback():
    loader = DataLoader(Fails(ValueError("boom at index 5")), batch_size=2, num_workers=2,
                        timeout=GUARD)
    it = iter(loader)
    assert [next(it).tolist(), next(it).tolist()] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError) as e:
        next(it)
    text = str(e.value)
    # batch [4, 5] is the third task: worker 0's second one
    assert text.startswith("Caught ValueError in DataLoader worker process 0.\n"
                           "Original Traceback (most recent call last):\n")
    assert "in __getitem__" in text and text.rstrip().endswith("ValueError: boom at index 5")
    assert next(it).tolist() == [6, 7]  # the loader goes on, as PyTorch's does
    with pytest.raises(StopIteration):
        next(it)


def test_worker_key_error_and_unpicklable_batch():
    with pytest.raises(KeyError) as e:
        list(DataLoader(Fails(KeyError("missing")), batch_size=4, num_workers=2, timeout=GUARD))
    assert str(e.value).startswith("Caught KeyError in DataLoader worker process 1.\n")
    # a batch that cannot be pickled comes back as the pickling error, not a hang
    loader = DataLoader(range(4), batch_size=2, num_workers=2, timeout=GUARD,
                        collate_fn=lambda b: (lambda: b))
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        list(loader)


class Dies(Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 5:
            if self.how == "exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        return i


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_worker_that_dies_raises_instead_of_hanging(how):
    loader = DataLoader(Dies(how), batch_size=2, num_workers=2, timeout=GUARD)
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly$"):
        list(loader)


class Pids(Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return os.getpid()


def test_worker_killed_from_outside_raises_and_the_rest_are_reaped():
    it = iter(DataLoader(Pids(), batch_size=2, num_workers=2, timeout=GUARD))
    first = next(it)[0].item()
    os.kill(first, signal.SIGKILL)
    pids = {first}
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(s\) {first}\) exited "
                                           "unexpectedly"):
        for b in it:
            pids.add(b[0].item())
    assert all(reaped(p) for p in pids)


def test_workers_are_reaped_after_an_early_break():
    it = iter(DataLoader(Pids(), batch_size=2, num_workers=2, timeout=GUARD))
    pids = {next(it)[0].item(), next(it)[0].item()}
    assert len(pids) == 2
    del it
    assert all(reaped(p) for p in pids)


class Stuck(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        import time
        time.sleep(30)
        return i


def test_timeout_and_a_stuck_worker_is_stopped_when_the_iterator_goes():
    # every item is stuck: a batch that should arrive within the timeout would make the test
    # depend on how fast a loaded machine starts the worker
    it = iter(DataLoader(Stuck(), batch_size=2, num_workers=1, timeout=0.25))
    pid = it._workers[0].pid
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.25 seconds$"):
        next(it)
    del it  # terminates the worker still sleeping in __getitem__
    assert reaped(pid)


def test_persistent_workers_keep_their_processes_across_epochs():
    ds = Pids()
    loader = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True,
                        timeout=GUARD)
    e1 = [b.tolist() for b in loader]
    e2 = [b.tolist() for b in loader]
    assert len(e1) == 10 and {p for b in e1 for p in b} == {p for b in e2 for p in b}
    # an early break, then a full epoch: stale batches of the broken epoch are dropped
    it = iter(loader)
    next(it)
    assert len([b for b in loader]) == 10
    pids = {p for b in e1 for p in b}
    loader._iterator._shutdown_workers()
    assert all(reaped(p) for p in pids)

def test_persistent_workers_shuffle():
    def persistent():
        return DataLoader(TensorDataset(torch.arange(11)), batch_size=3, shuffle=True,
                          generator=gen(1), num_workers=2, persistent_workers=True,
                          timeout=GUARD)

    ref = DataLoader(TensorDataset(torch.arange(11)), batch_size=3, shuffle=True,
                     generator=gen(1))
    a, b = persistent(), persistent()
    first = list(a)
    assert_same_batches(first, list(ref))
    assert_same_batches(list(b), first)
    # later epochs reuse the workers' base seed, so (as in PyTorch) they follow a different
    # stream from a non-persistent loader's; they are still reproducible permutations
    second = list(a)
    assert_same_batches(second, list(b))
    assert sorted(i for x in second for i in x[0].tolist()) == list(range(11))


def test_interpreter_exits_cleanly_with_live_workers():
    script = textwrap.dedent("""
        import fusetorch as torch
        from fusetorch.utils.data import DataLoader, TensorDataset
        ds = TensorDataset(torch.arange(100))
        it = iter(DataLoader(ds, batch_size=2, num_workers=2))
        keep = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
        it2 = iter(keep)
        print(next(it)[0].tolist(), next(it2)[0].tolist())
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=GUARD, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 1] [0, 1]"
    assert r.stderr == ""


def test_the_iterator_is_finished_after_a_worker_died():
    it = iter(DataLoader(Dies("kill"), batch_size=2, num_workers=2, timeout=GUARD))
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(it)
    with pytest.raises(StopIteration):  # not a hang
        next(it)


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_worker_batches_arrive_in_shared_memory(ctx):
    loader = DataLoader(TensorDataset(torch.arange(12.0).reshape(6, 2), torch.arange(6)),
                        batch_size=3, num_workers=2, multiprocessing_context=ctx,
                        timeout=GUARD)
    batches = list(loader)
    assert all(t.is_shared() for b in batches for t in b)
    assert_same_batches(batches, list(DataLoader(loader.dataset, batch_size=3)))
    x = batches[0][0]  # a batch is the main process's own memory: writable
    x += 1
    assert x[0, 0].item() == 1.0


def _wait_until_dead(pid: int) -> None:
    """Unpickled in the main process before the batch's tensor: holds the unpickling until the
    worker that sent it is dead (a zombie: the loader has not reaped it yet). Bounded by
    GUARD, not by how soon a loaded machine runs the worker's kill."""
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.01)


class _UntilSenderDies:
    def __reduce__(self):
        return _wait_until_dead, (os.getpid(),)


class SendsThenDies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        def die():
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=die, daemon=True).start()
        return _UntilSenderDies(), torch.ones(2)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_a_worker_dead_before_its_batch_is_unpacked_raises():
    # the batch's shared-memory descriptor is fetched from the worker while unpickling
    loader = DataLoader(SendsThenDies(), batch_size=None, num_workers=1, timeout=GUARD)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)

"""fusetorch.profiler: PyTorch's interface (profile, record_function, schedule, key_averages,
table, export_chrome_trace), the events it records (eager ops, backward, optimizer, compiled
kernels with bytes and GB/s), and the path taken when no profile is recording."""
import gzip
import json
import os
import re
import warnings

import numpy as np
import pytest

from fusetorch._policy import POLICY
import fusetorch as torch
from fusetorch.profiler import (ProfilerAction, ProfilerActivity, bandwidth, profile,
                                record_function, schedule, tensorboard_trace_handler)
from fusetorch.runtime import program as _program
from fusetorch.tracer import dispatch as D

HEADERS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
           "# of Calls"]


@pytest.fixture(autouse=True)
def _known_bandwidth(monkeypatch):
    """Tables and traces of kernels ask for the copy bandwidth: a fixed number here (its
    measurement and cache are tested on their own below)."""
    monkeypatch.setattr(bandwidth, "_measured", {"gbps": 10.0, "nbytes": 128 << 20,
                                                 "measured_at": "2026-01-01 00:00 UTC",
                                                 "how": "numpy copies"})
    monkeypatch.setattr(bandwidth, "_remeasured", False)


def _rows(table: str) -> tuple[list, list]:
    """(header cells, rows of cells) of a table: columns are split on two or more spaces."""
    lines = table.splitlines()
    seps = [i for i, ln in enumerate(lines) if ln.startswith("---")]
    assert len(seps) == 3, table
    header = re.split(r"\s{2,}", lines[seps[0] + 1].strip())
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in lines[seps[1] + 1:seps[2]]]
    return header, rows


def _us(text: str) -> float:
    for unit, scale in (("ms", 1e3), ("us", 1.0), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise ValueError(text)


def _workload():
    x = torch.randn(8, 16, requires_grad=True)
    w = torch.randn(16, 4, requires_grad=True)
    opt = torch.optim.SGD([x, w], lr=0.1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("forward"):
            y = (x @ w).tanh()
            loss = (y * y).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return prof


# ---------------------------------------------------------------- the table

def test_table_has_pytorchs_columns_and_footer():
    prof = _workload()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    header, rows = _rows(table)
    assert header == HEADERS
    assert table.splitlines()[-1].startswith("Self CPU time total: ")
    assert 0 < len(rows) <= 10
    assert "Bytes/call" not in table  # no kernels ran


def test_table_sorts_and_limits_rows():
    prof = _workload()
    avgs = prof.key_averages()
    for key, col in (("self_cpu_time_total", 2), ("cpu_time_total", 4)):
        _, rows = _rows(avgs.table(sort_by=key, row_limit=5))
        assert len(rows) == 5
        values = [_us(r[col]) for r in rows]
        assert values == sorted(values, reverse=True)
    _, rows = _rows(avgs.table(sort_by="count", row_limit=-1))
    assert len(rows) == len(avgs)
    counts = [int(r[6]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    _, rows = _rows(avgs.table(row_limit=3))  # unsorted: first seen first
    assert [r[0] for r in rows] == [e.key for e in avgs[:3]]


def test_table_percentages_add_up():
    prof = _workload()
    _, rows = _rows(prof.key_averages().table(row_limit=-1))
    assert sum(float(r[1].rstrip("%")) for r in rows) == pytest.approx(100, abs=0.1)


def test_input_shapes_column_and_grouping():
    x, y = torch.randn(3, 4), torch.randn(5, 4)
    with profile(record_shapes=True) as prof:
        x + x
        y + y
        y + y
    header, rows = _rows(prof.key_averages(group_by_input_shape=True).table())
    assert header == HEADERS + ["Input Shapes"]
    adds = {r[7]: int(r[6]) for r in rows if r[0] == "aten::add"}
    assert adds == {"[[3, 4], [3, 4]]": 1, "[[5, 4], [5, 4]]": 2}
    _, rows = _rows(prof.key_averages().table())  # one row per name
    assert [int(r[6]) for r in rows if r[0] == "aten::add"] == [3]


def test_memory_columns():
    x = torch.randn(10, 10)
    with profile(profile_memory=True) as prof:
        with record_function("outer"):
            x + x
            x.reshape(100)  # a view: allocates nothing
    header, rows = _rows(prof.key_averages().table())
    assert header == HEADERS[:6] + ["CPU Mem", "Self CPU Mem", "# of Calls"]
    cells = {r[0]: r for r in rows}
    assert cells["aten::add"][7] == "400 B"
    assert cells["aten::reshape"][7] == "0 B"
    assert cells["outer"][6] == "400 B" and cells["outer"][7] == "0 B"


def test_with_stack_names_the_users_line():
    x = torch.randn(3)
    with profile(with_stack=True) as prof:
        x.exp()
    ev = next(e for e in prof.events() if e.name == "aten::exp")
    assert os.path.basename(__file__) in ev.stack[0]
    assert "test_with_stack_names_the_users_line" in ev.stack[0]
    table = prof.key_averages(group_by_stack_n=2).table()
    assert "Source Location" in table


# ---------------------------------------------------------------- events and nesting

def test_nested_record_functions_self_and_total_agree():
    x = torch.randn(64, 64)
    with profile() as prof:
        with record_function("outer"):
            x @ x
            with record_function("inner"):
                (x * 2).exp()
            x.sum()
    events = prof.events()
    by_name = {e.name: e for e in events}
    outer, inner = by_name["outer"], by_name["inner"]
    assert inner.cpu_parent is outer
    assert {c.name for c in inner.cpu_children} == {"aten::mul", "aten::exp"}
    assert {c.name for c in outer.cpu_children} == {"aten::matmul", "inner", "aten::sum"}
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total + children == pytest.approx(e.cpu_time_total, abs=1e-3)
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start
            assert c.time_range.end <= e.time_range.end
    top = sum(e.cpu_time_total for e in events if e.cpu_parent is None)
    assert sum(e.self_cpu_time_total for e in events) == pytest.approx(top, rel=1e-6)
    assert prof.self_cpu_time_total == pytest.approx(top, rel=1e-6)


def test_one_event_per_op_even_through_the_general_path():
    x = torch.randn(4, 4, dtype=torch.float64)
    i = torch.arange(4)
    with profile() as prof:
        x + i  # promotion: add casts i, through the general elementwise path
    names = [e.name for e in prof.events()]
    assert names == ["aten::add", "aten::cast"]
    (add, cast) = prof.events()
    assert cast.cpu_parent is add


def test_backward_spans_are_named_like_pytorchs_engine():
    prof = _workload()
    names = {e.name for e in prof.events()}
    for expected in ("autograd::backward", "aten::matmul", "aten::tanh",
                     "autograd::engine::evaluate_function: TanhBackward0",
                     "autograd::engine::evaluate_function: MulBackward0",
                     "autograd::engine::evaluate_function: SumBackward0",
                     "autograd::engine::evaluate_function: MmBackward0",
                     "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                     "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad",
                     "forward"):
        assert expected in names, expected
    backward = next(e for e in prof.events() if e.name == "autograd::backward")
    spans = [c for c in backward.cpu_children if c.name.startswith("autograd::engine")]
    assert spans
    tanh = next(e for e in spans if e.name.endswith("TanhBackward0"))
    assert tanh.cpu_children and all(c.name.startswith("aten::") for c in tanh.cpu_children)
    accumulate = [e for e in spans if e.name.endswith("AccumulateGrad")]
    assert len(accumulate) == 2  # one per leaf
    step = next(e for e in prof.events() if e.name == "Optimizer.step#SGD.step")
    assert step.is_user_annotation
    assert {c.name for c in step.cpu_children} >= {"aten::add_"}


def test_backward_graph_derived_once_per_structure():
    w = torch.randn(5, requires_grad=True)
    with profile() as prof:
        for _ in range(3):
            (w * w).sum().backward()
    derived = [e for e in prof.events() if e.name == "autograd::derive_backward_graph"]
    assert len(derived) <= 1  # later backwards hit the cache
    assert sum(e.name == "autograd::backward" for e in prof.events()) == 3


def test_create_graph_backward_records_each_op_once():
    x = torch.randn(3, requires_grad=True)
    with profile() as prof:
        (g,) = torch.autograd.grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad
    span = next(e for e in prof.events()
                if e.name == "autograd::engine::evaluate_function: MulBackward0")
    muls = [c for c in span.cpu_children if c.name == "aten::mul"]
    assert muls and all(not c.cpu_children or c.cpu_children[0].name != "aten::mul"
                        for c in muls)
    assert any(e.name == "autograd::grad" for e in prof.events())


def test_an_op_that_raises_keeps_events_nested():
    x = torch.randn(3)
    with profile() as prof:
        with pytest.raises(RuntimeError):
            x + torch.randn(4)
        with record_function("after"):
            x.exp()
    after = next(e for e in prof.events() if e.name == "after")
    assert after.cpu_parent is None
    assert [c.name for c in after.cpu_children] == ["aten::exp"]


def test_record_function_as_decorator():
    @record_function("my_fn")
    def fn(t):
        return t.exp()

    with profile() as prof:
        fn(torch.randn(3))
    (ev,) = [e for e in prof.events() if e.name == "my_fn"]
    assert [c.name for c in ev.cpu_children] == ["aten::exp"]
    assert fn.__name__ == "fn"


# ---------------------------------------------------------------- not recording

def test_no_hook_and_no_events_outside_a_profile():
    assert D.PROFILE is None and _program.PROFILE is None
    x = torch.randn(5)
    with profile() as prof:
        assert D.PROFILE is not None and _program.PROFILE is D.PROFILE
        x + x
    assert D.PROFILE is None and _program.PROFILE is None
    n = len(prof.events())
    with record_function("outside"):  # no profile: records nothing, costs nothing
        x + x
        x.exp().sum()
    assert len(prof.events()) == n
    assert "outside" not in {e.name for e in prof.events()}


def test_profile_stops_even_when_the_body_raises():
    with pytest.raises(ValueError):
        with profile():
            raise ValueError("boom")
    assert D.PROFILE is None


def test_one_profile_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass
    assert D.PROFILE is None


def test_start_stop():
    prof = profile()
    prof.start()
    torch.randn(3).exp()
    prof.stop()
    assert D.PROFILE is None
    assert "aten::exp" in {e.name for e in prof.events()}


def test_schedule_records_only_active_steps():
    ready = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(6)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]

    def handler(p):
        ready.append(sorted({e.name for e in p.events() if e.name.startswith("Profiler")}))

    x = torch.randn(3)
    with profile(schedule=sched, on_trace_ready=handler) as prof:
        for step in range(6):
            with record_function(f"iter{step}"):
                x.exp()
            assert (D.PROFILE is not None) == (step in (2, 3))
            prof.step()
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"]]
    names = {e.name for e in prof.events()}
    assert {"iter2", "iter3"} <= names and not {"iter0", "iter1", "iter4"} & names


def test_schedule_without_warmup_warns():
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)


def test_on_trace_ready_without_schedule_runs_at_exit(tmp_path):
    with profile(on_trace_ready=tensorboard_trace_handler(str(tmp_path), "w")):
        torch.randn(3).exp()
    (f,) = os.listdir(tmp_path)
    assert re.fullmatch(r"w\.\d+\.pt\.trace\.json", f)
    json.loads((tmp_path / f).read_text())


def test_autograd_profiler_alias():
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        with torch.autograd.profiler.record_function("label"):
            (x * 2).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert {"label", "aten::mul", "autograd::backward"} <= names
    assert "Self CPU time total" in prof.table()
    with torch.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    assert len(off.events()) == 0


# ---------------------------------------------------------------- chrome trace

def test_chrome_trace_loads_with_complete_events(tmp_path):
    prof = _workload()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(prof.events())
    for e in events:
        assert {"name", "cat", "pid", "tid", "ts", "dur", "args"} <= e.keys()
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        assert e["pid"] == os.getpid()
    names = {e["name"] for e in events}
    assert {"forward", "aten::matmul", "autograd::backward",
            "Optimizer.step#SGD.step"} <= names
    mm = next(e for e in events if e["name"] == "aten::matmul")
    assert mm["args"]["Input Dims"] == [[8, 16], [16, 4]]
    fwd = next(e for e in events if e["name"] == "forward")
    assert fwd["cat"] == "user_annotation"
    assert fwd["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in doc["traceEvents"])
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    assert json.loads(gzip.decompress(gz.read_bytes()))["traceEvents"]


# ---------------------------------------------------------------- compiled kernels

def _kernels(prof):
    return [e for e in prof.events() if e.kernel is not None]


def test_compiled_kernel_rows_have_ops_line_bytes_and_bandwidth():
    f = torch.compile(lambda t, b: torch.exp(t * 2.0) + b)  # the kernel's line
    line = f"{os.path.basename(__file__)}:{f._fn.__code__.co_firstlineno}"
    x, b = torch.randn(256, 1024), torch.randn(1024)
    f(x, b)
    f(x, b)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            f(x, b)
    (kernel,) = {e.kernel.function for e in _kernels(prof)}
    assert f.kernels()[0].startswith(kernel)
    ev = _kernels(prof)[0]
    k = ev.kernel
    assert k.ops == ("mul", "exp", "add") and k.sources == (line,)
    # the broadcast row of b is read once, not once per row
    assert k.bytes_read == x.numel() * 4 + b.numel() * 4
    assert k.bytes_written == x.numel() * 4
    assert ev.name == f"kernel[mul+exp+add] {line}" and ev.cat == "kernel"
    assert ev.cpu_parent.name == "CompiledFunction"
    assert ev.gb_per_s == pytest.approx(k.bytes_moved / ev.cpu_time_total / 1e3)

    header, rows = _rows(prof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total"))
    assert header == HEADERS + ["Bytes/call", "GB/s", "% copy BW", "Input Shapes"]
    row = next(r for r in rows if r[0].startswith("kernel["))
    assert row[6] == "3" and row[7] == "2.00 MB" and row[10] == "[[256, 1024], [1024]]"
    gbps = float(row[8])
    assert gbps > 0 and row[9] == f"{100 * gbps / 10.0:.1f}%"
    other = next(r for r in rows if r[0] == "CompiledFunction")
    assert other[7:10] == ["--", "--", "--"]
    table = prof.key_averages().table()
    assert "Copy bandwidth: 10.00 GB/s" in table.splitlines()[-1]

    kt = prof.kernel_table()
    header, rows = _rows(kt)
    assert header == ["Kernel", "Source", "Iterations", "Calls", "Time avg", "Time total",
                      "Bytes/call", "GB/s", "% copy BW", "Fused ops"]
    assert rows[0][0] == kernel and rows[0][1] == line and rows[0][3] == "3"
    assert rows[0][-1] == "mul, exp, add"
    assert "Kernel time total" in kt and "Copy bandwidth: 10.00 GB/s" in kt


def test_compiled_backward_runs_under_its_grad_fn():
    lin = torch.nn.Linear(32, 32)
    cm = torch.compile(lin)
    x = torch.randn(16, 32)
    for _ in range(2):
        cm(x).tanh().sum().backward()
    with profile() as prof:
        cm(x).tanh().sum().backward()
    span = next(e for e in prof.events()
                if e.name == "autograd::engine::evaluate_function: CompiledFunctionBackward")
    programs = [c for c in span.cpu_children if c.name == "CompiledFunctionBackward"]
    assert programs
    inside = {c.name for c in programs[0].cpu_children}
    assert "aten::matmul" in inside
    forward = next(e for e in prof.events() if e.name == "CompiledFunction")
    assert forward.cpu_parent is None


def test_an_eager_backward_compiled_on_its_second_run_shows_its_kernels(monkeypatch):
    """Autograd compiles a backward graph it sees again (tracer/backward_programs.py): the
    profile then shows that program and its kernels inside `autograd::backward`."""
    from fusetorch.tracer import autograd as A
    monkeypatch.setattr(POLICY, "backward_programs", True)  # whatever FUSETORCH_EAGER_COMPILE says
    A._CACHE.clear()  # runners decide at creation whether they may compile
    w = torch.randn(128, 64, requires_grad=True)
    x = torch.randn(32, 128)

    def run():
        (x @ w).tanh().mul(2.0).sum().backward()

    with profile() as prof:
        run()  # interpreted: spans per grad_fn
        run()  # compiled from now on
        run()
    runs = [e for e in prof.events() if e.name == "autograd::backward"]
    assert len(runs) == 3
    assert any(c.name.endswith("TanhBackward0") for c in runs[0].cpu_children)
    program = next(c for c in runs[2].cpu_children if c.name == "CompiledFunctionBackward")
    kernels = [c for c in program.cpu_children if c.kernel is not None]
    assert kernels and all(k.kernel.bytes_moved > 0 for k in kernels)
    assert any("tanh" in k.kernel.ops or "mul" in k.kernel.ops for k in kernels)


def test_kernel_table_is_empty_without_kernels():
    with profile() as prof:
        torch.randn(3).exp()
    assert prof.kernel_table() == ""


# ---------------------------------------------------------------- copy bandwidth

def _entry_json(**over) -> str:
    entry = {"version": 2, "machine": bandwidth._machine(), "gbps": 3.0,
             "measured_at": "2026-01-01 00:00 UTC", "bytes": 1 << 27, "how": "numpy copies"}
    entry.update(over)
    return json.dumps(entry)


def test_copy_bandwidth_is_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bandwidth, "_measured", None)
    calls = []
    monkeypatch.setattr(bandwidth, "measure", lambda n=None: calls.append(n) or 12.5)
    assert bandwidth.copy_bandwidth() == 12.5
    assert bandwidth.copy_bandwidth() == 12.5 and len(calls) == 1  # in memory
    f = tmp_path / "profiler" / "copy_bandwidth.json"
    stored = json.loads(f.read_text())
    assert stored["gbps"] == 12.5 and stored["bytes"] == bandwidth.working_set_nbytes()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", stored["measured_at"])
    monkeypatch.setattr(bandwidth, "_measured", None)
    assert bandwidth.copy_bandwidth() == 12.5 and len(calls) == 1  # from disk
    assert bandwidth.measured_at() == stored["measured_at"]
    old_format = json.dumps({"version": 1, "machine": bandwidth._machine(), "gbps": 1.9,
                             "bytes": 64 << 20})  # measured under load, once: not trusted
    for bad in ("not json", _entry_json(machine="elsewhere"), _entry_json(gbps=-1),
                _entry_json(gbps="12"), _entry_json(measured_at=5), old_format):
        f.write_text(bad)
        monkeypatch.setattr(bandwidth, "_measured", None)
        assert bandwidth.copy_bandwidth() == 12.5
    assert len(calls) == 7
    f.write_text(_entry_json(gbps=99.0))
    os.chmod(f, 0o666)  # writable by others: not trusted, measured again
    monkeypatch.setattr(bandwidth, "_measured", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bandwidth.copy_bandwidth() == 12.5
    assert len(calls) == 8
    assert bandwidth.copy_bandwidth(refresh=True) == 12.5 and len(calls) == 9  # by hand


def test_the_copy_working_set_is_larger_than_the_last_level_cache(monkeypatch):
    assert bandwidth.working_set_nbytes() >= max(bandwidth.MIN_NBYTES,
                                                 2 * bandwidth.cache_bytes())
    monkeypatch.setattr(bandwidth, "cache_bytes", lambda: 100 << 20)
    assert bandwidth.working_set_nbytes() == 200 << 20  # src + dst: 4x the cache


def test_measure_is_the_best_of_several_copies_on_one_and_on_every_core(monkeypatch):
    times = iter([0.5, 0.2, 0.9, 0.4] * 10)
    monkeypatch.setattr(bandwidth, "_timed", lambda *a: next(times))
    monkeypatch.setattr(bandwidth, "_cores", lambda: 2)
    monkeypatch.setattr(bandwidth, "_parallel_copy", lambda *a: 0.1)  # every core: fastest
    monkeypatch.setattr(bandwidth.time, "sleep", lambda s: None)
    nbytes = 1 << 20
    assert bandwidth.measure(nbytes, repeat=4, rounds=3) == pytest.approx(2 * nbytes / 0.1 / 1e9)
    monkeypatch.setattr(bandwidth, "_parallel_copy", lambda *a: 1.0)
    times = iter([0.5, 0.2, 0.9, 0.4] * 10)
    assert bandwidth.measure(nbytes, repeat=4, rounds=3) == pytest.approx(2 * nbytes / 0.2 / 1e9)


def test_a_kernel_beating_the_copy_over_more_than_the_cache_remeasures_it(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bandwidth, "cache_bytes", lambda: 1 << 20)
    monkeypatch.setattr(bandwidth, "_measured", {"gbps": 1.9, "nbytes": 64 << 20, "how":
                                                 "numpy copies",
                                                 "measured_at": "2026-01-01 00:00 UTC"})
    calls = []
    monkeypatch.setattr(bandwidth, "measure", lambda n=None: calls.append(n) or 9.5)
    assert bandwidth.ceiling(1.5, 8 << 20) == 1.9 and calls == []  # below it: nothing
    assert bandwidth.ceiling(5.0, 1 << 10) == 1.9 and calls == []  # in cache: explained
    assert bandwidth.ceiling(5.0, 8 << 20) == 9.5 and len(calls) == 1  # measured again
    assert bandwidth.copy_bandwidth() == 9.5
    # beaten again (once per process is enough measuring): the kernel's rate is the ceiling
    assert bandwidth.ceiling(11.0, 8 << 20) == 11.0 and len(calls) == 1
    assert "a kernel's rate" in bandwidth.describe()
    monkeypatch.setattr(bandwidth, "_measured", None)
    assert bandwidth.copy_bandwidth() == 11.0  # and kept on disk


def test_tables_show_when_the_bandwidth_was_measured_and_how_to_remeasure():
    line = bandwidth.describe()
    assert "10.00 GB/s" in line and "measured 2026-01-01 00:00 UTC" in line
    assert "copy_bandwidth(refresh=True)" in line


def test_the_remeasure_command(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(bandwidth, "measure", lambda n=None: 7.25)
    bandwidth.main()
    assert capsys.readouterr().out.startswith("7.25 GB/s, measured ")


def test_measure_counts_read_and_written_bytes():
    gbps = bandwidth.measure(nbytes=1 << 20, repeat=2)
    assert 0.05 < gbps < 10_000
    assert np.isfinite(gbps)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_record():
    with profile():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: no hook
            os.write(w, b"1" if D.PROFILE is None and _program.PROFILE is None else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(r, 1) == b"1"
        os.close(r)
        os.close(w)
        assert D.PROFILE is not None


def test_tables_match_pytorchs_text():
    """The same events through PyTorch 2.13's `_build_table` (fixture made by
    tests/fixtures/make_profiler_tables.py) and through ours: identical text."""
    from fusetorch.profiler._events import EventList, FunctionEventAvg, build_table
    here = os.path.join(os.path.dirname(__file__), "fixtures", "profiler_tables.json")
    with open(here) as f:
        fixture = json.load(f)
    for entry in fixture["tables"]:
        case = dict(entry["case"])
        shapes = case.pop("shapes", False)
        events = EventList()
        for key, count, total, self_total, in_shapes, mem, self_mem in fixture["events"]:
            e = FunctionEventAvg()
            e.key, e.count = key, count
            e.cpu_time_total, e.self_cpu_time_total = total, self_total
            e.input_shapes = in_shapes if shapes else ""
            e.stack = []
            e.cpu_memory_usage, e.self_cpu_memory_usage = mem, self_mem
            events.append(e)
        assert build_table(events, **case) == entry["table"], case


def test_memory_of_backward_nodes():
    x = torch.randn(4, 4, requires_grad=True)
    with profile(profile_memory=True) as prof:
        (x * x).sum().backward()
    span = next(e for e in prof.events()
                if e.name == "autograd::engine::evaluate_function: MulBackward0")
    assert span.cpu_memory_usage == 128  # g * x, then the sum of its two uses: 64 B each
    assert all(c.self_cpu_memory_usage == 64 for c in span.cpu_children)

"""Events as PyTorch's profiler hands them out (`FunctionEvent`, `FunctionEventAvg`,
`EventList`), the table with PyTorch's layout, the kernel table, and the Chrome trace.

Times are microseconds (floats), as in PyTorch. Rows of compiled kernels also carry the bytes
one call moves and the bandwidth it reached; the table shows those in three extra columns
(`Bytes/call`, `GB/s`, `% copy BW`, "--" on other rows) whenever kernels were profiled, and
`kernel_table()` lists the kernels alone with what each fuses.
"""
from __future__ import annotations

import gzip
import json
import os
from collections import OrderedDict

from ._record import KernelInfo, RawEvent


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


class Interval:
    def __init__(self, start: float, end: float):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class _Times:
    """What FunctionEvent and FunctionEventAvg share: formatted times, zero device columns,
    and the kernel figures."""

    use_device = None
    device_type = "CPU"
    is_legacy = False
    is_async = False
    is_remote = False
    node_id = -1
    overload_name = ""
    flops = 0
    device_time_total = self_device_time_total = 0.0
    device_memory_usage = self_device_memory_usage = 0
    kernel: KernelInfo | None = None
    bytes_moved = 0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time
    cuda_time_total = self_cuda_time_total = 0.0
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))

    @property
    def gb_per_s(self) -> float:
        """Bytes moved per second of kernel time, in GB/s (1e9 bytes); 0 for other events."""
        t = self.self_cpu_time_total
        return self.bytes_moved / (t * 1e3) if self.bytes_moved and t > 0 else 0.0


class FunctionEvent(_Times):
    """One profiled interval: an op, a user annotation, a grad_fn, a kernel call."""

    count = 1

    def __init__(self, id: int, raw: RawEvent, t0_ns: int):
        self.id = id
        self.name = self.key = raw.name
        self.cat = raw.cat
        self.thread = raw.tid
        self.time_range = Interval((raw.start - t0_ns) / 1e3, (raw.end - t0_ns) / 1e3)
        self.cpu_time_total = (raw.end - raw.start) / 1e3
        self.self_cpu_time_total = max(0.0, (raw.end - raw.start - raw.child_ns) / 1e3)
        self.input_shapes = raw.shapes if raw.shapes is not None else []
        self.stack = raw.stack if raw.stack is not None else []
        self.self_cpu_memory_usage = raw.mem
        self.cpu_memory_usage = raw.mem  # children's added once the tree is built
        self.kernel = raw.kernel
        self.bytes_moved = raw.kernel.bytes_moved if raw.kernel is not None else 0
        self.is_user_annotation = raw.cat == "user_annotation"
        self.cpu_children: list = []
        self.cpu_parent = None
        self._raw = raw

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"self_cpu_time={self.self_cpu_time_total_str} input_shapes="
                f"{self.input_shapes}>")


class FunctionEventAvg(_Times):
    """Events of one key added up (`key_averages`)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.is_user_annotation = False
        self.cpu_children = None
        self.cpu_parent = None

    def add(self, other) -> "FunctionEventAvg":
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.is_user_annotation = other.is_user_annotation
            self.kernel = other.kernel
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.bytes_moved += other.bytes_moved
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str}"
                f" cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's summaries: `table`, `key_averages`, `total_average`,
    `export_chrome_trace`; and `kernel_table`, the compiled kernels against the memory
    limit."""

    def __init__(self, *args, profile_memory: bool = False, base_ns: int = 0):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._base_ns = base_ns  # wall-clock ns at time 0 (the trace's baseTimeNanoseconds)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        stats: OrderedDict = OrderedDict()
        for e in self:
            key = (e.key,)
            if group_by_input_shape:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            avg = stats.get(key)
            if avg is None:
                avg = stats[key] = FunctionEventAvg()
            avg.add(e)
        out = EventList(stats.values(), profile_memory=self._profile_memory)
        for avg in out:
            avg.stack = avg.stack[:group_by_stack_n] if group_by_stack_n > 0 else []
            if not group_by_input_shape:
                avg.input_shapes = ""
        return out

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           profile_memory=self._profile_memory,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def kernel_table(self, sort_by: str = "self_cpu_time_total", row_limit: int = 100,
                     max_ops_column_width: int = 60) -> str:
        return build_kernel_table(self, sort_by, row_limit, max_ops_column_width)

    def export_chrome_trace(self, path: str) -> None:
        export_chrome_trace(self, path, self._base_ns)


def _sort_key(sort_by: str):
    attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace(
        "privateuse1", "device")
    return lambda e: getattr(e, attr)


def _time(us: float, unit: str | None) -> str:
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return _format_time(us)


class _Columns:
    """PyTorch's table builder: right-aligned columns two spaces apart."""

    SPACING = 2

    def __init__(self):
        self.fmt, self.sep, self.width = "", "", -self.SPACING

    def add(self, width: int, align: str = ">") -> None:
        self.fmt += "{: " + align + str(width) + "}" + " " * self.SPACING
        self.sep += "-" * width + " " * self.SPACING
        self.width += width + self.SPACING


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, header=None,
                profile_memory=False, top_level_events_only=False, time_unit=None) -> str:
    """PyTorch's `_build_table` for CPU events, plus the kernel columns."""
    if len(events) == 0:
        return ""
    has_shapes = any(e.input_shapes for e in events)
    has_kernels = any(e.bytes_moved for e in events)
    if sort_by is not None:
        events = sorted(events, key=_sort_key(sort_by), reverse=True)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = max(len(s) for stack in stacks for s in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    if has_kernels:
        headers += ["Bytes/call", "GB/s", "% copy BW"]
    cols = _Columns()
    cols.add(name_width)
    for _ in headers[1:]:
        cols.add(12)
    if has_shapes:
        headers.append("Input Shapes")
        cols.add(shapes_width)
    if stacks:
        headers.append("Source Location")
        cols.add(src_width, "<")
    copy_bw = _copy_bandwidth(events) if has_kernels else None

    total = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * cols.width, header]
    if top_level_events_only:
        lines += ["=" * cols.width, "This report only display top-level ops statistics"]
    lines += [cols.sep, cols.fmt.format(*headers), cols.sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(e.self_cpu_time_total, total),
               _time(e.self_cpu_time_total, time_unit),
               _format_time_share(e.cpu_time_total, total), _time(e.cpu_time_total, time_unit),
               _time(e.cpu_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_kernels:
            row += _kernel_cells(e, copy_bw)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(_trim_path(e.stack[0], src_width) if e.stack else "")
        lines.append(cols.fmt.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                lines.append(cols.fmt.format(*(blank + [_trim_path(entry, src_width)])))
            lines.append(cols.fmt.format(*(blank + [""])))
    lines += [cols.sep, f"Self CPU time total: {_time(total, time_unit)}"]
    if has_kernels:
        lines.append(_bandwidth_line(copy_bw))
    return "".join(line + "\n" for line in lines)


def _kernel_cells(e, copy_bw: float) -> list:
    if not e.bytes_moved:
        return ["--", "--", "--"]
    gbps = e.gb_per_s
    return [_format_memory(int(round(e.bytes_moved / e.count))), f"{gbps:.2f}",
            f"{100 * gbps / copy_bw:.1f}%" if copy_bw else "--"]


def _bandwidth_line(copy_bw: float) -> str:
    from .bandwidth import describe
    return describe()


def _copy_bandwidth(events) -> float:
    """The copy bandwidth, re-measured if one of these kernel rows beat it over more bytes
    than the cache holds (`bandwidth.ceiling`)."""
    from .bandwidth import ceiling
    fastest, nbytes = 0.0, 0.0
    for e in events:
        if getattr(e, "bytes_moved", 0) and e.count and e.gb_per_s > fastest:
            fastest, nbytes = e.gb_per_s, e.bytes_moved / e.count
    return ceiling(fastest, nbytes)


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_kernel_table(events, sort_by: str = "self_cpu_time_total", row_limit: int = 100,
                       max_ops_column_width: int = 60) -> str:
    """The compiled kernels alone: each C function with the ops it fuses, the user's lines,
    calls, time, bytes moved per call, and GB/s against the machine's copy bandwidth."""
    stats: OrderedDict = OrderedDict()
    for e in events:
        k = e.kernel
        if k is None:
            continue
        key = (k.function, k.sources, k.shape)
        avg = stats.get(key)
        if avg is None:
            avg = stats[key] = FunctionEventAvg()
        avg.add(e)
    if not stats:
        return ""
    rows = sorted(stats.values(), key=_sort_key(sort_by), reverse=True)[:max(row_limit, 0)]
    copy_bw = _copy_bandwidth(rows)
    name_width = max(len(r.kernel.function) for r in rows) + 2
    where = [", ".join(r.kernel.sources) or "--" for r in rows]
    src_width = min(max(len("Source"), max(len(w) for w in where)) + 2, 40)
    ops_width = min(max_ops_column_width,
                    max(len("Fused ops"), max(len(", ".join(r.kernel.ops)) for r in rows)))
    space = [str(list(r.kernel.shape)) for r in rows]
    space_width = min(max(len("Iterations"), max(len(s) for s in space)) + 2, 24)
    headers = ["Kernel", "Source", "Iterations", "Calls", "Time avg", "Time total",
               "Bytes/call", "GB/s", "% copy BW", "Fused ops"]
    cols = _Columns()
    cols.add(name_width, "<")
    cols.add(src_width, "<")
    cols.add(space_width)
    for _ in range(6):
        cols.add(12)
    cols.add(ops_width, "<")
    lines = [cols.sep, cols.fmt.format(*headers), cols.sep]
    total = 0.0
    for r, w, s in zip(rows, where, space):
        total += r.self_cpu_time_total
        ops = _wrap(", ".join(r.kernel.ops), ops_width)
        cells = [r.kernel.function, _clip(w, src_width), _clip(s, space_width), r.count,
                 _format_time(r.cpu_time), _format_time(r.self_cpu_time_total)]
        cells += _kernel_cells(r, copy_bw)
        lines.append(cols.fmt.format(*cells, ops[0]))
        for more in ops[1:]:
            lines.append(cols.fmt.format(*([""] * 9), more))
    all_self = sum(e.self_cpu_time_total for e in events)
    lines += [cols.sep, f"Kernel time total: {_format_time(total)} "
              f"({_format_time_share(total, all_self)} of Self CPU time total "
              f"{_format_time(all_self)})", _bandwidth_line(copy_bw)]
    return "".join(line + "\n" for line in lines)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width - 2 else text[:width - 5] + "..."


def _wrap(text: str, width: int) -> list:
    """`text` (comma-separated) in lines of at most `width` characters, broken after commas."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


# ---------------------------------------------------------------- Chrome / Perfetto trace

def export_chrome_trace(events, path: str, base_ns: int = 0) -> None:
    """Write `events` as Chrome trace JSON (Perfetto and chrome://tracing open it): complete
    events (`ph: "X"`) with `ts`/`dur` in microseconds; gzip when `path` ends with `.gz`."""
    pid = os.getpid()
    threads = sorted({e.thread for e in events})
    out = [{"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0,
            "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "ts": 0, "pid": pid, "tid": 0,
            "args": {"labels": "CPU"}}]
    for tid in threads:
        out.append({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    copy_bw = _copy_bandwidth(events) if any(e.kernel is not None for e in events) else None
    for i, e in enumerate(events):
        args = {"External id": e.id, "Ev Idx": i}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.self_cpu_memory_usage:
            args["Allocated bytes"] = e.self_cpu_memory_usage
        k = e.kernel
        if k is not None:
            gbps = e.gb_per_s
            args.update({"kernel": k.function, "kind": k.kind, "fused ops": list(k.ops),
                         "source": list(k.sources), "iteration space": list(k.shape),
                         "bytes read": k.bytes_read, "bytes written": k.bytes_written,
                         "bytes moved": k.bytes_moved, "GB/s": round(gbps, 3),
                         "copy GB/s": round(copy_bw, 3),
                         "% of copy bandwidth": round(100 * gbps / copy_bw, 1)})
        out.append({"ph": "X", "cat": e.cat, "name": e.name, "pid": pid, "tid": e.thread,
                    "ts": round(e.time_range.start, 3),
                    "dur": round(e.cpu_time_total, 3), "args": args})
    doc = {"schemaVersion": 1, "deviceProperties": [], "record_shapes": int(
        any(e.input_shapes for e in events)), "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns, "traceEvents": out, "traceName": str(path)}
    if copy_bw is not None:
        doc["fusetorchCopyBandwidthGBps"] = round(copy_bw, 3)
    data = json.dumps(doc).encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as f:
        f.write(data)


def function_events(raw: list, t0_ns: int) -> EventList:
    """FunctionEvents of the finished raw events, in start order, with parents, children and
    memory totals."""
    done = [r for r in raw if r.end]
    done.sort(key=lambda r: r.start)
    made = {}
    out = EventList()
    for i, r in enumerate(done):
        e = FunctionEvent(i, r, t0_ns)
        made[id(r)] = e
        out.append(e)
    for e in out:
        p = e._raw.parent
        parent = made.get(id(p)) if p is not None else None
        if parent is not None:
            e.cpu_parent = parent
            parent.cpu_children.append(e)
    if any(e.self_cpu_memory_usage for e in out):
        for e in reversed(out):  # children start later: totals are complete when reached
            if e.cpu_parent is not None:
                e.cpu_parent.cpu_memory_usage += e.cpu_memory_usage
    return out


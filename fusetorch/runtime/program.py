"""A compiled program, the end of the compiler's straight line:

    graph -> passes (ir/passes.py, by the caller) -> partition (codegen/fuse.py)
          -> kernels as data, from the graph and input layouts (kernel_plan.py: layouts.py,
             in_place.py, codegen/lower.py)
          -> rendered and built module, per device (build.py: codegen/render*.py, cbuild.py,
             cudabuild.py)
          -> a runner executing the schedule (runner.py)

`Program` holds one graph's way down that line; `obtain` is how every holder gets one (compile,
compiled eager backward, eager kernels, compiled eager composites), so building, refusing and
the "cannot build kernels" fallback are decided in one place.

Kernels are generated for the layouts their inputs arrive with, and those are known before
anything runs (layouts.py): so the first run builds all groups as one module and runs the
kernels at once; nothing is computed twice. Later runs guard the layouts of values from
outside the kernels and call the kernels.

Tiers: a `tiered` program (compile's, the compiled eager backward's and composites') is
optimised, partitioned, planned, rendered and built in a background thread on the CPU
(`POLICY.background_builds`, from `FUSETORCH_COMPILE_BACKGROUND`; "0" builds synchronously, as the tests
do; a caller that must judge the partition, `accept`, gets it made in its own thread). Until
the build is done its runs interpret the graph as it came (a `Runner` without kernels, over the
eager table: what eager mode computes), with the eager table's kernels building nothing; the finished
`Runner` is handed over by one attribute store, read once per run. A failed background build
is reported once, in the caller's thread, and the program stays interpreted. `wait` (or
`wait_for_builds`, every pending program) is the explicit handover point. The build thread is
a daemon: a process that exits meanwhile does not wait for it; the cache's entries are moved
into place whole (sidecar last), so an interrupted build leaves no entry anyone loads (its
build directory is swept later, as a killed builder's is).
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from .._per_thread import per_thread
from .._policy import POLICY
from ..codegen import fuse
from ..ir import passes
from ..ir.graph import PHASES, Graph
from . import build as _build
from . import eager_kernels, kernel_plan
from . import layouts as _layouts
from .cbuild import CompilerUnavailable
from .runner import Runner


# The active profiler's hook (fusetorch.profiler) of the calling thread, or None: read once per
# run; when set, each kernel and extern step is timed (the kernels with the bytes they move).
_LOCAL = per_thread(__name__, PROFILE=None)

# Tiered programs build in a background thread (see the module docstring); "0": synchronously
_PENDING: set = set()  # tiered programs whose background build has not finished


class Program:
    """`role`: what the program is to its compiled function, "forward" or "backward" (the
    label of its kernels when their nodes do not say: see `labels`).
    `user_outputs`: outputs after these are internal (values saved for a backward program).
    `updates`: output index -> input index: the output is the input's new value (an
    optimizer's update of a parameter), which the caller writes back into the input's array;
    where it is safe the kernel writes it there itself (`in_place.py`). The caller runs a
    program with updates only when no input shares memory with an updated one
    (`overlapping`): the graph's values are those of separate arrays."""

    def __init__(self, graph: Graph, backend, role: str = "forward",
                 user_outputs: int | None = None, updates: dict | None = None,
                 tiered: bool = False, optimize: bool = False):
        self.graph = graph  # (with `optimize`: the optimised graph from its build on)
        self.role = role
        self.backend = backend
        self.cpu = backend.device.type == "cpu"
        # the partition: groups and externs; with `optimize` made at the build, after
        # `passes.optimize` (in the background thread, for a tiered program: see `laid_out`)
        self._optimize = optimize
        self.plan: fuse.Plan | None = None if optimize else fuse.partition(graph, cpu=self.cpu)
        self.user_outputs = user_outputs
        self.updates: dict = dict(updates or {})
        self.kernel_plan: kernel_plan.KernelPlan | None = None
        self.kernels: list = []  # LoopKernel per group, once planned
        self.source: str | None = None
        self._runner: Runner | None = None
        self._building = threading.Lock()  # one thread plans and builds; the others wait
        self._interpreted = False  # kernels could not be built at the first run: interpret
        self._interpreter: Runner | None = None  # kernels of none: runs until then, or instead
        # `tiered`: built in the background where the policy says so, interpreted meanwhile
        self.tiered = tiered
        self._pending: threading.Thread | None = None  # the background build, while it runs
        self._failure: BaseException | None = None  # what it raised, reported by `_settle`
        self._observe = False  # layouts must be observed by running the graph (`prepare`)

    # ------------------------------------------------------------ preparing

    def prepare(self, arrays: list, background: bool = False) -> None:
        """Plan and build every kernel for the layouts of `arrays` (one per graph input);
        with `background`, plan here and build in a background thread (see `wait`).
        Nothing runs, except where a movement step's layout cannot be derived from its
        input's (`layouts.LayoutUnknown`): then the graph runs eagerly once to observe them."""
        layouts = _layouts.layouts_of(self.graph.inputs, arrays)  # (passes keep the inputs)
        if not self._observe:
            try:
                return self.prepare_for(layouts, background)
            except _layouts.LayoutUnknown:
                pass
        be = self.backend
        self._lay_out()
        self.prepare_for(_layouts.observe(self.graph, self.plan, arrays, be.impl, be.xp),
                         background)

    def prepare_for(self, layouts: dict, background: bool = False) -> None:
        """Plan and build every kernel for `layouts` (id(node) -> Layout of every graph input):
        pure data in, a runnable program out (with `background`, once `wait` returns)."""
        prof = _LOCAL.state.PROFILE
        if prof is not None and prof.enter():  # (a profile shows the build: synchronous)
            return prof.call(self.prepare_for, (layouts,), "fusetorch::build_kernels",
                                reentrant=True)
        if background and self.cpu:  # (CUDA modules build on the caller's current device)
            thread = threading.Thread(target=self._build_in_background, args=(layouts,),
                                      name="fusetorch-build", daemon=True)
            self._pending = thread
            _PENDING.add(self)
            thread.start()
        else:
            self._build_for(layouts)

    def _build_for(self, layouts: dict) -> None:
        """The optimised graph, its partition, the kernels for `layouts`, built and handed
        over (the runner last: a run that finds it finds the rest set)."""
        self._lay_out()
        be = self.backend
        plan = kernel_plan.make(self.graph, layouts, cpu=self.cpu,
                                updates=self.updates,
                                partition=self.plan, impl=be.impl, xp=be.xp)
        built = _build.build(plan.kernels, be.device.type)
        runner = Runner(self.graph, be.impl, be.xp, plan, built)
        self.kernel_plan, self.kernels, self.source = plan, plan.kernels, built.source
        self._runner = runner

    def _lay_out(self) -> None:
        """The optimised graph and its partition, where `optimize` left them to the build."""
        if self.plan is None:
            graph = passes.optimize(self.graph, passes.CPU if self.cpu else passes.DEFAULT)
            plan = fuse.partition(graph, cpu=self.cpu)
            self.graph, self.plan = graph, plan  # (runs read `graph` once: either is right)

    def laid_out(self) -> "Program":
        """This program with its optimised graph and partition made (`graph`, `plan`, what
        inspection shows), waiting for a background build that makes them."""
        while True:
            self.wait()
            with self._building:
                if self._pending is None:
                    self._lay_out()
                    return self

    def _build_in_background(self, layouts: dict) -> None:
        try:
            # (layouts.derive runs movement steps on stand-ins through the eager table, whose
            # kernels must not build, under their lock, what the caller's thread may wait for)
            with eager_kernels.no_builds():
                self._build_for(layouts)
        except BaseException as e:  # (reported in the caller's thread: `_settle`)
            self._failure = e
        finally:
            _PENDING.discard(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background build (up to `timeout` seconds) and hand it over: False while
        it still runs or where it failed (said once, as a warning: the graph is interpreted
        from then on), else True (the built kernels run, or are built by the next run)."""
        thread = self._pending
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                return False
            with self._building:
                self._settle()
        return not self._interpreted

    def _settle(self) -> None:
        """After the background build ended (under `_building`): report its failure once,
        in this thread, and interpret from then on."""
        if self._pending is None or self._pending.is_alive():
            return
        self._pending, failure, self._failure = None, self._failure, None
        _PENDING.discard(self)  # (a thread lost in a fork never got to its own discard)
        if self._runner is not None:
            return
        if isinstance(failure, _layouts.LayoutUnknown):
            # a movement step's layout is known only by running it: the next run observes it
            # in the caller's thread (`prepare`) and builds again
            self._observe = True
            return
        if isinstance(failure, CompilerUnavailable):  # (no compiler, a cache that failed)
            _build.cannot_build(failure)
        elif failure is not None:
            _build.warn_user(f"fusetorch: building kernels failed ({type(failure).__name__}: "
                             f"{failure}); this program runs interpreted", RuntimeWarning)
        # (no failure and no runner: the build thread was lost in a fork; build again)
        self._interpreted = failure is not None
        if failure is not None:  # (kept for `status`, without the frames it was raised in)
            self._failure = failure.with_traceback(None)

    @property
    def prepared(self) -> bool:
        return self._runner is not None

    @property
    def _schedule(self) -> list:  # (the profiler matches its steps to the partition's)
        return self._runner.schedule if self._runner is not None else []

    # ------------------------------------------------------------ running

    def run(self, arrays: list, consume: bool = False) -> list:
        """The outputs for input `arrays`. `consume`: the caller hands the arrays over (the
        list is emptied) and each is let go after its last reader (a backward's saved
        values)."""
        prof = _LOCAL.state.PROFILE
        if prof is not None and prof.enter():
            return prof.call(self.run, (arrays,), _EVENT.get(self.role, "CompiledFunction"),
                             reentrant=True)
        runner = self._runner
        if runner is None and not self._interpreted:
            runner = self._take_over(arrays)
        # the inputs an output may be (x * 1 -> x): kept for `_unaliased`, which compares them
        kept = arrays
        if consume:
            returned = {id(o) for o in self.graph.outputs}
            kept = [a for a, n in zip(arrays, self.graph.inputs) if id(n) in returned]
        if runner is None:  # the graph's meaning, as eager execution computes it
            interpreter = self._interpreter
            if interpreter is None or interpreter.graph is not self.graph:
                be = self.backend  # (a failed build may leave the optimised graph)
                interpreter = self._interpreter = Runner(self.graph, be.impl, be.xp)
            if self._pending is None:
                outs = interpreter.run(arrays, consume=consume)
            else:  # (while the build runs: the eager table's kernels build nothing either)
                with eager_kernels.no_builds():
                    outs = interpreter.run(arrays, consume=consume)
        else:
            outs = runner.run(arrays, consume, None, self, prof)
        return _unaliased(outs, kept, self.user_outputs, self.updates)

    def _take_over(self, arrays: list) -> Runner | None:
        """The runner for this run where kernels are built (building them first, or starting
        their background build), else None: interpret."""
        pending = self._pending
        if pending is not None and pending.is_alive():
            return None  # (still building: this run interprets)
        with self._building:
            self._settle()
            if self._runner is None and not self._interpreted and self._pending is None:
                try:
                    self.prepare(arrays, self.tiered and POLICY.background_builds)
                except CompilerUnavailable as e:  # (no compiler, a cache that failed)
                    _build.cannot_build(e)
                    self._interpreted, self._failure = True, e
        return self._runner

    def status(self) -> str:
        """What its runs do now, as `fusetorch.compiler.explain` says it: compiled kernels,
        or interpreted and why."""
        if self._runner is not None:
            n = len(self.kernels)
            return f"compiled: {n} kernel{'s' if n != 1 else ''}" + (
                f" and {len(self.plan.steps) - n} extern steps" if self.plan is not None and
                len(self.plan.steps) > n else "")
        pending = self._pending
        if pending is not None and pending.is_alive():
            return "interpreted: build in progress (in the background)"
        failure = self._failure
        if self._interpreted and isinstance(failure, CompilerUnavailable):
            return f"interpreted: no C compiler ({failure})"
        if self._interpreted and failure is not None:
            return f"interpreted: the build failed ({type(failure).__name__}: {failure})"
        return "interpreted until its next run builds it"

    # ------------------------------------------------------------ reading

    def labels(self) -> list:
        """Per fused group (kernel): which part of the computation its nodes are, "forward",
        "backward" or "update", joined by '+' when a kernel fuses across them. A traced
        training step is one program; its nodes carry the phase they were recorded in
        (`meta['phase']`, see `tracer.trace.recording_phase`); other nodes take the
        program's `role`."""
        return [phase_label(g.nodes, self.role) for g in self.laid_out().plan.groups()]

    def describe(self) -> list:
        """One line per kernel: name, its label (see `labels`), what it fuses, iteration
        space, bytes read and written."""
        out = []
        for g, k, label in zip(self.laid_out().plan.groups(), self.kernels, self.labels()):
            read = sum(_nbytes(n) for n in g.inputs)
            written = sum(_nbytes(n) for n in g.outputs)
            ops = ", ".join(n.op for n in g.nodes)
            out.append(f"{k.name} ({label}): {g.kind} [{ops}] over {list(k.shape)}, reads "
                       f"{read} B, writes {written} B")
        return out


def obtain(graph: Graph, backend, arrays: list | None = None, *, role: str = "forward",
           optimize: bool = True, accept: Callable[[fuse.Plan], bool] | None = None,
           user_outputs: int | None = None, updates: dict | None = None,
           tiered: bool = False) -> Program | None:
    """The one way to get a program: `graph` (after `passes.optimize` unless `optimize` is
    False) partitioned; refused (None) when `accept` says its partition is not worth a build;
    with `arrays` (one per graph input), planned and built for their layouts now, else on its
    first run. `tiered`: its runs may interpret the graph until the build, started in the
    background (`POLICY.background_builds`), is done (see the module docstring). Where kernels cannot be
    built here (no C compiler, no GPU) it says so once (`build.cannot_build`) and returns
    None: the caller runs eagerly (a tiered program that learns it in the background says so
    once and interprets)."""
    # a tiered program's passes run with its build (in the background) unless the caller must
    # see its partition now; its runs before interpret the graph as it came
    later = tiered and POLICY.background_builds and accept is None
    if optimize and not later:
        graph = passes.optimize(graph, passes.CPU if backend.device.type == "cpu"
                                else passes.DEFAULT)
    program = Program(graph, backend, role, user_outputs, updates, tiered,
                      optimize=optimize and later)
    if accept is not None and not accept(program.plan):
        return None
    if arrays is not None:
        try:
            program.prepare(arrays, tiered and POLICY.background_builds)
        except CompilerUnavailable as e:
            _build.cannot_build(e)
            return None
    return program


def wait_for_builds(timeout: float | None = None) -> bool:
    """Wait for every background build of this process (each up to `timeout` seconds; the eager
    table's hand-written kernels too) and hand it over; True when none is left running."""
    for program in list(_PENDING):
        program.wait(timeout)
    return eager_kernels.wait_for_kernel_builds(timeout) and not _PENDING


def phase_label(nodes, default: str) -> str:
    """The phases of `nodes` (their `meta['phase']`, else `default`), in the order forward,
    backward, update, joined by '+'."""
    seen = {(n.meta or {}).get("phase") or default for n in nodes}
    return "+".join(p for p in PHASES if p in seen) or default


def _unaliased(outs: list, inputs: list, n_user: int | None, updates=()) -> list:
    """Optimised graphs may return an input (x * 1 -> x) or one node twice (CSE): give each
    result the user sees its own buffer, as eager execution would. Outputs past `n_user` are
    values kept for a backward program, which only reads them; `updates` are new values of
    inputs, which the caller copies into the inputs' arrays (or a kernel wrote there)."""
    seen = {id(a) for a in inputs}
    res = []
    for k, a in enumerate(outs):
        if (n_user is None or k < n_user) and k not in updates and id(a) in seen:
            a = a.copy()
        seen.add(id(a))
        res.append(a)
    return res


def overlapping(arrays: list, slots) -> bool:
    """Whether an array at one of `slots` shares memory with another of `arrays`. Two arrays
    that own their memory never do, so only views (and the targets themselves) are checked."""
    views = [k for k, a in enumerate(arrays) if a.base is not None]
    for j in slots:
        t = arrays[j]
        for k in (range(len(arrays)) if t.base is not None else views):
            if k != j and (arrays[k] is t or np.may_share_memory(arrays[k], t)):
                return True
    return False


def _nbytes(n) -> int:
    size = 1
    for d in n.shape:
        size *= d
    return size * n.dtype.itemsize


def why_interpreted(arrays: list) -> tuple | None:
    """The size-and-layout rule of the holders that choose, call by call or key by key,
    between the interpreter and a program (compiled eager backward graphs, `@composite`
    replays): None where a program may run on `arrays`, else why not, as a reason code and
    its values (`_policy.REASONS`: too few elements for kernels to win, a layout kernels
    cannot read)."""
    if not kernel_safe(arrays):
        return ("unaligned",)
    # (a custom Function's backward reads its ctx object among the arrays)
    total = sum(getattr(a, "size", 0) for a in arrays)
    if total < POLICY.min_elements:
        return ("small", total, POLICY.min_elements)
    return None


def kernel_safe(arrays: list) -> bool:
    """Whether kernels may read these arrays: numpy's `aligned` flag says the data pointer and
    every stride are multiples of the element's alignment (its size, for the kernel dtypes).
    Kernels index in elements, so a byte stride of 5 or -1 (a structured array's field, a
    crafted file) would make them read outside the buffer; such a call runs eagerly
    (compile) or in the interpreter (compiled eager mode). The doors
    (from_numpy, load, as_strided, frombuffer) refuse such layouts already."""
    for a in arrays:
        if not getattr(a.flags, "aligned", True):  # (cupy's arrays have no such flag)
            return False
    return True


# a run's event in a profile, by role (PyTorch's names for compiled code)
_EVENT = {"forward": "CompiledFunction", "backward": "CompiledFunctionBackward"}

"""Compiled eager backward: a backward graph that a training loop runs again and again is turned
into a compiled `Program` (fused C kernels, externs for the rest) once its uses show that a
build pays, instead of being interpreted node by node every step.

Autograd already caches one backward graph per forward structure (`autograd._plan`); this module
attaches a `BackwardRunner` to each cached graph. The runner interprets the uses before
`POLICY.backward_compile_at` (a graph seen once is not worth a build) and, with
`POLICY.backward_payback`, until the time they spent reaches that many times the build's
estimate (at small sizes a program is often no faster than the interpreter: a short run never
pays for a build). It then keeps one program per input layout (a program's kernels are
generated for the strides they were built with), and each layout's first compiled runs
alternate with interpreted ones: a program slower than the interpreter is dropped. A graph the
compiler cannot take (a custom Function's backward, random numbers, a crossing of devices, a
data-dependent shape) and graphs too small for kernels to win stay with the interpreter, as
does everything when no C compiler is found (one warning) or FUSETORCH_EAGER_COMPILE=0.
"""
from __future__ import annotations

import itertools
import weakref
from time import perf_counter

from .._policy import POLICY, note
from ..ir.graph import Graph
from ..runtime.schedule import Schedule
from ..runtime import build as _build
from ..runtime.runner import Runner  # (first: it loads runtime.device before eager_kernels)
from ..runtime.program import kernel_safe, obtain, why_interpreted
from ..ir.roles import Role


class BackwardRunner:
    """Runs one cached backward graph: interpreted, or through a compiled program. Each
    decision, and why, is noted for `fusetorch.compiler.explain` when it changes."""

    __slots__ = ("graph", "uses", "programs", "compilable", "crosses_device", "interpreter",
                 "label", "why", "_schedule", "spent", "trials")

    def __init__(self, graph: Graph):
        self.graph = graph
        # (asked after every run: gradients then go where their forward values live)
        self.crosses_device = any(Role.CROSSES_DEVICE in n.opdef.roles for n in graph.nodes)
        self.interpreter = None  # made at the first interpreted run, per array module
        self._schedule = None  # the graph's Schedule: its interpreters' and tensor-mode runs'
        self.uses = 0
        self.programs: dict = {}  # input layout -> Program (None: not built, interpret)
        self.compilable = POLICY.backward_programs and all(n.opdef.compilable for n in graph.nodes)
        self.label = (f"#{next(_NUMBERS)}", f"({len(graph.nodes)} nodes)")
        self.why = None  # the code last noted
        self.spent = 0.0  # seconds its uses ran interpreted while a build was not yet paid for
        self.trials: dict = {}  # input layout -> [runs, best compiled, best interpreted] (s)

    def run(self, arrays: list, be, hook=None, consume: bool = False) -> list:
        """`hook`: a profiler's, told as each interpreted node starts and ends. `consume`: the
        caller hands the arrays over (the saved values of a backward that retains no graph),
        so each may be let go after its last reader."""
        self.uses += 1
        at = POLICY.backward_compile_at
        if self.compilable and self.uses >= at and be.device.type == "cpu":
            payback = POLICY.backward_payback
            if payback and self.spent < payback * self.build_estimate():
                self._decide("payback", payback, self.build_estimate() * 1e3)
                return self._timed(arrays, be, hook, consume)
            key, program = self._program(arrays, be)
            if program is not None:
                if key in self.trials:
                    return self._trial(key, program, arrays, be, hook, consume)
                return program.run(arrays, consume)
        elif self.uses < at:  # (noted at each of these uses: its count is in the reason)
            self.why = "first_use"
            note("backward", self.label, "first_use", self.uses, at)
        elif not self.compilable:
            self._decide(*self._not_compilable())
        elif be.device.type != "cpu":
            self._decide("not_cpu", be.device.type)
        return self.interpreted(arrays, be, hook, consume)

    def interpreted(self, arrays: list, be, hook=None, consume: bool = False) -> list:
        """The graph interpreted (anomaly mode's checks run it so, node by node)."""
        interpreter = self.interpreter
        if interpreter is None or interpreter.xp is not be.xp:
            interpreter = self.interpreter = Runner(self.graph, be.impl, be.xp,
                                                    schedule=self.schedule())
        return interpreter.run(arrays, consume=consume, hook=hook)

    def build_estimate(self) -> float:
        """Seconds of CPU a build of this graph takes, estimated: passes, partition, planning,
        rendering and loading cost ~0.1-0.2 ms per node (gcc's run, on a cache miss, runs in a
        process of its own)."""
        return len(self.graph.nodes) * _BUILD_SECONDS_PER_NODE

    def _timed(self, arrays: list, be, hook, consume: bool) -> list:
        t0 = perf_counter()
        out = self.interpreted(arrays, be, hook, consume)
        self.spent += perf_counter() - t0
        return out

    def _trial(self, key, program, arrays: list, be, hook, consume: bool) -> list:
        """One of a layout's first runs once its program is built: compiled and interpreted in
        turn (after one compiled run that warms the program's buffers); after `_TRIALS` of
        each the faster keeps the layout. Both compute the graph's values, so every run's
        result is right whichever runs."""
        if not program.prepared:  # (its build still runs: this run interprets in the program)
            return program.run(arrays, consume)
        t = self.trials[key]
        t[0] += 1
        if t[0] == 1:
            return program.run(arrays, consume)
        compiled = t[0] % 2 == 0
        t0 = perf_counter()
        out = (program.run(arrays, consume) if compiled
               else self.interpreted(arrays, be, hook, consume))
        dt = perf_counter() - t0
        slot = 1 if compiled else 2
        t[slot] = min(t[slot], dt)
        if t[0] > 2 * _TRIALS:
            del self.trials[key]
            if t[1] > t[2]:
                self.programs[key] = None  # (interpreted from now on: see `_program`)
                self._decide("slower", t[1] * 1e6, t[2] * 1e6)
        return out

    def schedule(self) -> Schedule:
        """The graph's slots, steps and drop points, made once for every way it runs
        (interpreted on arrays, or on Tensors through dispatch: `autograd._run_recorded`)."""
        s = self._schedule
        if s is None:
            s = self._schedule = Schedule(self.graph)
        return s

    def _decide(self, code: str, *args) -> None:
        if code != self.why:
            self.why = code
            note("backward", self.label, code, *args)

    def _not_compilable(self) -> tuple:
        if not POLICY.backward_programs:
            return ("off", "backward_programs")
        op = next((n.op for n in self.graph.nodes if not n.opdef.compilable), None)
        if op is None:  # (compilable ops, and yet off: `obtain` found no compiler)
            return ("no_compiler", _build.last_unavailable)
        return ("not_compilable", op)

    def _program(self, arrays: list, be):
        """(input layout, its Program or None: interpret)."""
        # an array kernels may not read (frombuffer at an odd offset, which PyTorch accepts) is
        # interpreted, also when a program exists for its shape and strides: the program's
        # layout guard would refuse it
        if not kernel_safe(arrays):
            self._decide("unaligned")
            return None, None
        key = tuple((a.shape, a.strides) for a in arrays)
        if key in self.programs:
            program = self.programs[key]
            if self.why != "program" and program is not None:
                self.why = "program"
                note("backward", self.label, "program", weakref.ref(program))
            return key, program
        if len(self.programs) >= POLICY.backward_layouts:
            self._decide("layout_limit", POLICY.backward_layouts)
            return key, None
        why = why_interpreted(arrays)
        if why is not None:
            self._decide(*why)
            return key, None
        program = self.programs[key] = obtain(self.graph, be, arrays, role="backward",
                                              tiered=True)
        if program is None:  # no compiler here (said once): interpret from now on
            self.compilable = False
            self._decide("no_compiler", _build.last_unavailable)
        else:
            self.why = "program"
            note("backward", self.label, "program", weakref.ref(program))
            if POLICY.backward_payback:
                self.trials[key] = [0, float("inf"), float("inf")]
        return key, program


_NUMBERS = itertools.count(1)
_BUILD_SECONDS_PER_NODE = 2e-4  # (measured: 0.11-0.2 ms per node, warm disk cache, 2-core EPYC)
_TRIALS = 2  # compiled and interpreted runs each, per layout, before one keeps it


"""When fusetorch compiles behind the user's back: the switches, the thresholds and the limits.

Every holder that may build a program while eager code runs (per-op eager kernels with the
convolution and LSTM kernels, `@composite` programs, compiled backward graphs, the fused
optimizer step) reads its row of `POLICY` at the moment it decides, so a threshold is one fact
in one place and a test or a user may change one attribute (`POLICY.fused_optimizers = False`)
to turn one holder off. `FUSETORCH_EAGER_COMPILE=0` in the environment at import turns all of
them off. A leaf module: it imports nothing from fusetorch.
"""
from __future__ import annotations

import os
import weakref


class EagerCompilePolicy:
    """The switches and limits of eager mode's compiled paths (`fusetorch._policy.POLICY`)."""

    __slots__ = ("background_builds", "eager_kernels", "backward_programs", "fused_optimizers",
                 "min_elements",
                 "eager_programs", "composite_keys", "backward_layouts", "max_pool_rows",
                 "max_pool_plane", "backward_compile_at", "composite_capture_at",
                 "eager_kernel_at", "hand_kernel_at", "fused_step_at", "specialize_fmas",
                 "backward_payback")

    def __init__(self, environ=os.environ):
        on = environ.get("FUSETORCH_EAGER_COMPILE", "1") != "0"
        # compiled programs build in a thread and interpret the traced graph until then
        # (runtime/program.py); FUSETORCH_COMPILE_BACKGROUND=0 builds before the first run
        self.background_builds = environ.get("FUSETORCH_COMPILE_BACKGROUND", "1") != "0"
        self.eager_kernels = on  # per-op kernels, convolution/LSTM kernels, @composite programs
        self.backward_programs = on  # compiled backward graphs (else the interpreter)
        self.fused_optimizers = on  # one kernel per optimizer step (else the Python loop)
        # inputs' total elements from which a program pays for its call overhead (~2-5 us)
        self.min_elements = 1 << 12
        self.eager_programs = 64  # eager-kernel layouts kept; each holds its last output buffer
        self.composite_keys = 256  # @composite programs kept
        self.backward_layouts = 4  # programs per backward graph; past that: interpret
        # a max pool kernel's window rows live on its stack, and it allocates a padded plane
        # per plane and thread: both bounded, else the reference composition runs
        self.max_pool_rows = 1 << 16
        self.max_pool_plane = 1 << 24
        # the Nth use from which each holder pays for a build (a graph, a key or a layout seen
        # once is not worth one): a backward graph compiles from its `backward_compile_at`-th
        # use; a `@composite` key is captured at its `composite_capture_at`-th call and
        # replayed from the next; an eager kernel is built at the `eager_kernel_at`-th sight
        # of its layout; a hand-written kernel (convolution, LSTM, max pooling, row sums:
        # `eager_kernels.cached_kernel`) at the `hand_kernel_at`-th sight of its key (1: each
        # key is a dtype or a pool geometry that a training loop meets every step, and the build
        # runs in a thread); an optimizer's param group runs fused from its `fused_step_at`-th
        # step (the earlier ones make its state). 1: from the first
        self.backward_compile_at = 2
        # a backward graph's build waits, past `backward_compile_at`, until the time its uses
        # spent interpreted reaches `backward_payback` times its estimated build time (0.2 ms
        # of CPU per node; the background build holds the GIL while it runs): measured on a
        # 2-core EPYC at the sizes of tests/programs, a compiled backward runs 0.7-1.8x the
        # interpreter's time (externs, matmuls and scans, are most of the work), at a nanoGPT's
        # real size 0.87x. Then its first runs alternate with the interpreter's, and a program
        # slower than the interpreter on its layout is dropped. 0: build at
        # `backward_compile_at` and keep it (FUSETORCH_BACKWARD_PAYBACK=0: the tests' rule, no
        # decision of theirs depends on timing)
        self.backward_payback = _number(environ.get("FUSETORCH_BACKWARD_PAYBACK"), 4.0)
        self.composite_capture_at = 2
        self.eager_kernel_at = 2
        self.hand_kernel_at = 1
        self.fused_step_at = 2
        # from this many multiply-adds a compiled program's convolution gets kernels built for
        # its geometry (runtime/conv.py; one gcc run, ~0.6 s of CPU in the program's build:
        # small layers are not worth it)
        self.specialize_fmas = 1 << 22

    def __repr__(self) -> str:
        return "EagerCompilePolicy(" + ", ".join(
            f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def _number(text: str | None, default: float) -> float:
    """An environment variable's number; `default` where it is unset or not a number >= 0."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return default
    return value if value >= 0 else default  # (nan >= 0 is False)


POLICY = EagerCompilePolicy()


# ---------------------------------------------------------------- why a graph ran as it did

# Each holder that decides whether something runs compiled (a compiled function, a `@composite`
# key, a backward graph, an eager kernel's layout, an optimizer's fused step) notes its latest
# decision here as a code and the values it decided on; `explain` (`fusetorch.compiler.explain`)
# makes the text. Holders note when a decision is made or changes, never per call of a path
# already decided, and nothing is formatted until someone asks.
REASONS = {
    # what runs: compiled kernels, or the reference (interpreter, numpy, plain eager, Python)
    "program": "{0}",  # a Program's own state, asked when explained (`Program.status`)
    "kernel": "compiled: a kernel for this layout",
    "fused": "compiled: one fused kernel call per dtype",
    # why not (yet)
    "first_use": "interpreted: use {0} (compiled from use {1}: POLICY.backward_compile_at)",
    "payback": "interpreted: until its interpreted time reaches {0} x its build's estimate "
               "(~{1:.0f} ms: POLICY.backward_payback)",
    "slower": "interpreted: its program ran slower on this layout ({0:.0f} us) than the "
              "interpreter ({1:.0f} us)",
    "first_sight": "numpy: sight {0} of this layout (built at sight {1}: "
                   "POLICY.eager_kernel_at)",
    "first_hand_sight": "reference: sight {0} of this kernel's key (built at sight {1}: "
                        "POLICY.hand_kernel_at)",
    "first_call": "plain: call {0} (captured at call {1}: POLICY.composite_capture_at, "
                  "replayed from the next)",
    "first_step": "Python loop: step {0} of this group and its parameters (fused from step "
                  "{1}: POLICY.fused_step_at)",
    "captured": "plain: captured at this call (replayed from the next)",
    "not_replayable": "plain: not replayable ({0})",
    "small": "interpreted: inputs {0} elements < POLICY.min_elements {1}",
    "off": "not compiled: POLICY.{0} off",
    "not_compilable": "interpreted: op {0} cannot be compiled (OpDef.compilable is False)",
    "not_cpu": "interpreted: on {0}, compiled backward graphs are the CPU's",
    "unaligned": "interpreted: an input's memory is not aligned to whole elements (kernels "
                 "cannot read it)",
    "layout_limit": "interpreted: layout limit {0} reached (POLICY.backward_layouts); this "
                    "layout is new",
    "fuses_nothing": "interpreted: its partition fuses nothing (a kernel per primitive is no "
                     "faster than numpy)",
    "not_one_kernel": "numpy: its plan is not one kernel",
    "no_compiler": "not compiled: no C compiler ({0})",
    "building": "reference: build in progress",
    "build_failed": "reference: the build failed ({0})",
    "graph_break": "eager: graph break ({0})",
    "eager_call": "eager: {0}",
    "python_loop": "Python loop: {0}",
}

DECISIONS_KEPT = 256  # holders remembered, the most recent decisions
_DECISIONS: dict = {}  # (kind, label) -> (code, args), oldest first


def note(kind: str, label: tuple, code: str, *args) -> None:
    """Record the decision of holder `label` (a tuple of plain values naming it: a function and
    its line, a composite and its shapes) of `kind`: `code` a key of `REASONS`, `args` its
    values (a `weakref.ref` to a Program: asked for its state when explained)."""
    key = (kind, label)
    d = _DECISIONS
    d.pop(key, None)  # (re-inserted last: a dict keeps insertion order)
    d[key] = (code, args)
    if len(d) > DECISIONS_KEPT:
        try:
            del d[next(iter(d))]
        except (StopIteration, KeyError, RuntimeError):  # (another thread got there first)
            pass


def noted(kind: str, label: tuple):
    """The latest (code, args) noted for holder `label` of `kind`, or None."""
    return _DECISIONS.get((kind, label))


def decisions(kind: str | None = None) -> list:
    """(kind, holder, reason) as text for each holder noted (of `kind`), oldest first."""
    out = []
    for (k, label), (code, args) in list(_DECISIONS.items()):
        if kind is None or k == kind:
            out.append((k, " ".join(str(p) for p in label), _reason(code, args)))
    return out


def _reason(code: str, args: tuple) -> str:
    values = []
    for a in args:
        if isinstance(a, weakref.ref):  # to a Program
            target = a()
            a = "forgotten (its holder let it go)" if target is None else target.status()
        values.append(a)
    return REASONS[code].format(*values)


def explain(kind: str | None = None) -> str:
    """Why each recent graph ran as it did: one line per holder, "kind holder: reason"."""
    lines = [f"{k} {holder}: {reason}" for k, holder, reason in decisions(kind)]
    return "\n".join(lines) if lines else "(no decisions recorded)"


def clear_decisions() -> None:
    _DECISIONS.clear()

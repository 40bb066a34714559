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


class EagerCompilePolicy:
    """The switches and limits of eager mode's compiled paths (`fusetorch._policy.POLICY`)."""

    __slots__ = ("background_builds", "eager_kernels", "backward_programs", "fused_optimizers",
                 "min_elements",
                 "eager_programs", "composite_keys", "backward_layouts", "max_pool_rows",
                 "max_pool_plane")

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

    def __repr__(self) -> str:
        return "EagerCompilePolicy(" + ", ".join(
            f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


POLICY = EagerCompilePolicy()

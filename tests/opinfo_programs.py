"""Registry entries for names added while running public programs (tests/programs)."""
from opinfo import SKIPPED, _NOT_OPS

# a copy marked pinned, refused without an accelerator: tests/programs/test_programs.py
SKIPPED["Tensor.pin_memory"] = _NOT_OPS

"""`torch.backends.cudnn`: fusetorch has no cuDNN; the flags are kept (a script may read them
back). `enabled` has one effect, the one it has on PyTorch's fused RNN layers: off, an LSTM
layer runs unrolled, one step of primitives at a time (slower; it supports double backward),
instead of as one fused recurrence (`lstm_scan`, nn/modules/rnn.py)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True) -> Iterator[None]:
    """Set the flags inside a `with` block, and put the old values back after it."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    new = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    scope = globals()
    old = {n: scope[n] for n in names}
    scope.update(zip(names, new))
    try:
        yield
    finally:
        scope.update(old)

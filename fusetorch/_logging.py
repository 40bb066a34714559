"""What fusetorch logs on request, as `torch._logging` does: `set_logs(recompiles=True)`, or
the environment variable `FUSETORCH_LOGS=recompiles` (PyTorch's `TORCH_LOGS=recompiles` is
honoured too), logs every retrace of a compiled function with its reason to stderr, through
the `logging` logger "fusetorch.recompiles".
"""
from __future__ import annotations

import logging
import os

_ARTIFACTS = ("recompiles",)
recompiles = logging.getLogger("fusetorch.recompiles")
_handler: logging.Handler | None = None


# the rest of PyTorch 2.13's `set_logs` keywords: components' log levels (int or None) and
# artifacts (bool), accepted for scripts that set them and otherwise ignored (fusetorch has no
# dynamo, AOT or inductor logs; a graph break warns once whatever graph_breaks says)
_COMPONENTS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d",
               "ddp", "fsdp", "dtensor", "onnx", "export", "modules")
_IGNORED_ARTIFACTS = (
    "bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code",
    "graph_code_verbose", "graph_breaks", "side_effects", "graph_sizes", "guards",
    "trace_source", "trace_call", "trace_bytecode", "output_code", "kernel_code", "schedule",
    "perf_hints", "pre_grad_graphs", "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion",
    "onnx_diagnostics", "fusion", "overlap", "cudagraphs", "sym_node", "compiled_autograd",
    "compiled_autograd_verbose", "cudagraph_static_inputs", "benchmarking", "autotuning",
    "incremental", "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
    "compute_dependencies", "caching")


def set_logs(*, recompiles: bool = False, recompiles_verbose: bool = False,
             **settings) -> None:
    """Turn logging of every retrace (`recompiles`, `recompiles_verbose`) on or off; replaces
    what the environment variables asked for. PyTorch's other keywords are accepted and
    ignored.

    >>> torch._logging.set_logs(recompiles=True, graph_breaks=True, dynamo=logging.INFO)
    """
    for name in settings:
        if name not in _COMPONENTS and name not in _IGNORED_ARTIFACTS:
            raise TypeError(f"set_logs() got an unexpected keyword argument '{name}'")
    _enable(bool(recompiles or recompiles_verbose))


def _enable(on: bool) -> None:
    global _handler
    if on and _handler is None:
        _handler = logging.StreamHandler()  # stderr, at the time of each record
        _handler.setFormatter(logging.Formatter("[fusetorch] %(message)s"))
        recompiles.addHandler(_handler)
        recompiles.setLevel(logging.DEBUG)
        recompiles.propagate = False
    elif not on and _handler is not None:
        recompiles.removeHandler(_handler)
        recompiles.setLevel(logging.NOTSET)
        recompiles.propagate = True
        _handler = None


def _from_environment() -> None:
    asked: set = set()
    for var in ("FUSETORCH_LOGS", "TORCH_LOGS"):
        for part in os.environ.get(var, "").split(","):
            part = part.strip()
            if part.startswith("+"):  # TORCH_LOGS="+recompiles": more verbose, the same here
                part = part[1:]
            if part in _ARTIFACTS:
                asked.add(part)
    if "recompiles" in asked:
        _enable(True)


_from_environment()

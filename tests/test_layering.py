"""The import layering of fusetorch's packages (issue 14): every package imports only the layers
below it. Each module under fusetorch/ is parsed with `ast`; every import counts, at module level
or inside a function, absolute or relative. An import that breaks the layering fails here unless
it is listed in EXCEPTIONS with its reason, so a new upward import is caught when it is written.
See ARCHITECTURE.md, "Layers: who may import whom"."""
from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "fusetorch"

# Bottom to top. A unit is a top-level package or module of fusetorch ("__init__" is fusetorch
# itself). A unit may import any unit of a lower layer, and a unit of its own layer only where the
# layer says peers=True.
LAYERS: list[tuple[str, bool, tuple[str, ...]]] = [
    ("ir", False, ("ir",)),
    ("codegen", False, ("codegen",)),
    ("runtime", False, ("runtime",)),
    ("tracer", False, ("tracer",)),
    # built on tensors, below the layers (nn, optim) that use them
    ("tensor extensions", True, ("linalg", "sparse", "autograd", "profiler", "amp", "cuda", "cpu",
                                 "accelerator", "distributed", "testing", "_tensor_names",
                                 "overrides")),
    ("nn/optim", False, ("nn", "optim")),
    # built on modules and tensors
    ("utils", True, ("utils", "multiprocessing", "special", "distributions", "jit", "signal",
                                    "masked")),
    # front ends: the whole library, compilation, export and checkpoint files
    ("front ends", True, ("__init__", "compile", "_reads", "onnx", "serialization",
                          "_inplace_functions", "_aten_nn", "_aten_bags", "_global_state",
                          "_tensor_extras",
                          "storage", "random", "version", "torch_version", "types",
                          "return_types", "functional", "library", "futures",
                          "compiler", "func", "quasirandom", "hub", "mps", "xpu", "mtia", "ops",
                          "_absent_device", "_api",
                          "checkpoint_formats", "_weights_only", "_inductor", "_dynamo", "fx", "ao",
                          "quantization")),
]

# Leaf modules that import nothing from fusetorch, so that any layer may import them.
LEAVES = ("_hooks", "_out_of_scope", "_guards", "_logging", "_load_checks", "_atomic_file",
          "_per_thread", "_threads", "backends", "_config_module", "_policy", "_malloc")

# (importing module, imported unit): reason. Kept short; each is a known debt of issue 14.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("fusetorch.distributed.optim", "optim"):
        "torch.distributed.optim's path for ZeroRedundancyOptimizer, an Optimizer subclass that "
        "lives in optim/ (which may use distributed's collectives)",
    ("fusetorch.optim.swa_utils", "nn"):
        "torch.optim.swa_utils's AveragedModel is an nn.Module and its update_bn resets "
        "BatchNorm statistics, beside SWALR, an LRScheduler (PyTorch's module holds all three)",
    ("fusetorch.utils.safetensors", "checkpoint_formats"):
        "torch.utils-style safetensors entry points wrap the checkpoint-format readers and "
        "writers of fusetorch/checkpoint_formats, which sit with serialization at the top",
}

RANK = {unit: i for i, (_, _, units) in enumerate(LAYERS) for unit in units}
PEERS = {i: peers for i, (_, peers, _) in enumerate(LAYERS)}


def _units() -> set[str]:
    names = {p.stem for p in ROOT.glob("*.py")}
    names |= {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    return names


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@functools.lru_cache(maxsize=None)  # (two tests walk every file: each is parsed once)
def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute fusetorch module) for every import in the file, at any depth."""
    module, is_pkg = _module_name(path)
    units = _units()
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "fusetorch":  # from fusetorch import x: the unit x, else fusetorch
                found += [(node.lineno, f"fusetorch.{a.name}" if a.name in units
                           else "fusetorch") for a in node.names]
            else:
                found.append((node.lineno, target))
    return [(line, t) for line, t in found if t == "fusetorch" or t.startswith("fusetorch.")]


def violations() -> list[str]:
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        module, _ = _module_name(path)
        unit = _unit_of(module)
        for line, target in imports(path):
            dest = _unit_of(target)
            if dest == unit:
                continue
            if unit in LEAVES:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: leaf {unit} imports "
                           f"{target}")
                continue
            if dest in LEAVES or (module, dest) in EXCEPTIONS:
                continue
            mine, theirs = RANK[unit], RANK[dest]
            if theirs < mine or (theirs == mine and PEERS[mine]):
                continue
            bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {unit} "
                       f"({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})")
    return bad


def test_every_unit_has_a_layer():
    missing = sorted(u for u in _units() - set(RANK) - set(LEAVES) if u != "__init__")
    assert not missing, f"place these in LAYERS or LEAVES: {missing}"


def test_imports_only_look_down():
    assert violations() == []


def test_exceptions_are_still_needed():
    """An exception whose import has gone is removed from the list."""
    used = set()
    for path in sorted(ROOT.rglob("*.py")):
        module, _ = _module_name(path)
        used |= {(module, _unit_of(t)) for _, t in imports(path)}
    assert set(EXCEPTIONS) <= used, set(EXCEPTIONS) - used


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The checker sees a function-level relative import from the tracer into nn."""
    fake = tmp_path / "fusetorch"
    (fake / "tracer").mkdir(parents=True)
    (fake / "nn").mkdir()
    (fake / "tracer" / "__init__.py").write_text("")
    (fake / "nn" / "__init__.py").write_text("")
    (fake / "tracer" / "x.py").write_text("def f():\n    from ..nn import functional\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake)
    assert [v.split(": ", 1)[1] for v in violations()] == \
        ["tracer (tracer) imports fusetorch.nn (nn/optim)"]

"""Passes, fusion, lowering, the runtime and the tracer ask op properties, never op names
(issue 14): outside the op table, comparing an op name with a string literal is allowed only
for the structural ops (`input`, `constant`) and for the few sites listed in ALLOWED below,
each with its reason. A new comparison fails this test: declare a property or rule on the op
(ir/ops.py, ir/elementwise.py, ir/rewrites.py) and ask it instead.
"""
import ast
import functools
import pathlib
import re
from collections import Counter

from fusetorch.ir.ops import OPS
from fusetorch.ir.roles import ROLES, Role

ROOT = pathlib.Path(__file__).resolve().parents[2] / "fusetorch"
# the op table itself, and the ONNX exporter (its per-op translation table is keyed by name)
OP_TABLE = {"ir/ops.py", "ir/elementwise.py", "ir/gamma.py", "ir/scans.py", "ir/linalg_ops.py"}
STRUCTURAL = {"input", "constant"}
OP_VARS = {"op", "name", "op_name", "opname"}

ALLOWED = Counter({
    # the pass's subject is the permute it rewrites and builds, as sink_permutes' is
    ("ir/passes.py", 'n.op != "permute"'): 1,
    # CopySlices' next_functions for `v[i] = w`: the value, not the index tensors
    ("tracer/views.py", 'written.op == "index_put"'): 1,
})


def _literals(e) -> list:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return [e.value]
    if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
        return [v for x in e.elts for v in _literals(x)]
    if isinstance(e, ast.Call) and getattr(e.func, "id", "") in ("frozenset", "set") and e.args:
        return _literals(e.args[0])
    return []


def _is_op_var(e) -> bool:
    return (isinstance(e, ast.Name) and e.id in OP_VARS or
            isinstance(e, ast.Attribute) and e.attr in OP_VARS)


def op_name_literals(source: str) -> list[str]:
    """The non-structural op-name comparisons in `source`: `x.op == "exp"`, `name in ("add",
    ...)`, and `{"sum": ...}[n.op]` lookups, as source text."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left] + node.comparators
            names = {v for s in sides for v in _literals(s)} & set(OPS)
            if names - STRUCTURAL and any(_is_op_var(s) for s in sides):
                found.append(ast.get_source_segment(source, node))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict) and \
                _is_op_var(node.slice) and \
                {v for k in node.value.keys if k is not None for v in _literals(k)} & set(OPS):
            found.append(ast.get_source_segment(source, node))
    return found


@functools.lru_cache(maxsize=None)  # (two tests read it: the package is parsed once)
def _scan() -> Counter:
    hits = Counter()
    for p in sorted(ROOT.rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel in OP_TABLE or rel.startswith("onnx/"):
            continue
        for text in op_name_literals(p.read_text()):
            hits[(rel, text)] += 1
    return hits


def test_scanner_finds_each_form():
    src = ('if n.op == "exp": pass\n'
           'if x.op in ("sum", "max"): pass\n'
           'y = {"sum": 1, "max": 2}[r.op]\n'
           'if name != "input": pass\n'          # structural: not counted
           'if n.op == "not_an_op": pass\n')      # not an op: not counted
    assert op_name_literals(src) == ['n.op == "exp"', 'x.op in ("sum", "max")',
                                     '{"sum": 1, "max": 2}[r.op]']


def test_no_new_op_name_literals():
    extra = _scan() - ALLOWED
    assert not extra, ("op-name literals outside the op table (declare a property or rule on "
                       f"the op and ask it instead): {sorted(extra.items())}")


def test_allowed_list_is_current():
    gone = ALLOWED - _scan()
    assert not gone, f"ALLOWED lists literals that no longer exist: {sorted(gone)}"


def test_templates_do_not_test_op_names():
    pattern = re.compile(r"\b(op|template|reduce_op)\s*(==|!=|in|not in)\s*\(?\s*['\"](\w+)['\"]")
    hits = [(p.name, m.group(3)) for p in ROOT.rglob("*.j2")
            for m in pattern.finditer(p.read_text()) if m.group(3) in OPS]
    assert hits == []


# ---------------------------------------------------------------- the roles consumers ask

def test_roles_are_consistent_with_the_ops_they_mark():
    for name, d in OPS.items():
        assert d.roles <= ROLES, name  # (a declaration's flags are Role's names)
        if Role.FILLED in d.roles:  # every element is attrs['value']
            assert d.kind == "source" and "value" in d.attrs, name
        if Role.VALUE_VIEW in d.roles or d.put_back is not None or Role.PASSTHROUGH in d.roles:
            assert Role.MAY_VIEW in d.roles, name  # the result may share the input's memory
        if Role.VALUE_VIEW in d.roles:
            assert d.kind == "movement" and d.nin == 1, name
        if d.reduction is not None and d.reduction.index:
            kept = OPS[d.value_op]  # the reduction whose value the index locates
            assert kept.reduction.combine == d.reduction.combine and not kept.reduction.index
        else:
            assert d.value_op == "", name
        if Role.DATA_SHAPE in d.roles:
            assert d.shape is None and not d.compilable, name
        if Role.USER_BACKWARD in d.roles or Role.CROSSES_DEVICE in d.roles:
            assert not d.compilable, name
        if Role.CLONE in d.roles:
            assert d.kind == "elementwise" and Role.DISTINCT in d.roles and not d.fusible, name
        if d.simplify is not None or d.cheaper is not None:
            assert callable(d.simplify or d.cheaper), name


def _put_back_case(name):
    """(base shape, view attrs, index inputs) for a view op with a put_back rule."""
    return {
        "reshape": ((2, 6), {"shape": (3, 4)}, []),
        "permute": ((2, 3, 4), {"perm": (2, 0, 1)}, []),
        "index": ((4, 5), {"spec": (("slice", 1, 4, 2), ("int", 3))}, []),  # basic: a view
        "diagonal": ((3, 4, 5), {"offset": -1, "dim1": 2, "dim2": 0}, []),
        "detach": ((3, 2), {}, []),
        "check": ((3, 2), {"lo": -1e9, "hi": 1e9, "closed": False, "allow": None,
                           "error": "RuntimeError", "message": "{value}"}, []),
    }[name]


def test_put_back_writes_exactly_the_viewed_region():
    """The defining property of a view's inverse: viewing put_back(base, value) gives value,
    and every element the view does not select keeps base's value (numpy as the reference)."""
    import numpy as np
    from fusetorch.ir import dtypes as dt
    from fusetorch.ir.graph import Graph, make_node
    from fusetorch.runtime.eager import make_table
    from fusetorch.runtime.runner import run_graph

    rules = sorted(n for n, d in OPS.items() if d.put_back is not None)
    assert rules == ["check", "detach", "diagonal", "index", "permute", "reshape"]
    impl = make_table(np)
    rng = np.random.default_rng(0)
    for name in rules:
        shape, attrs, idx = _put_back_case(name)
        base = make_node("input", [], {"shape": shape, "dtype": dt.float64})
        idx_nodes = [make_node("input", [], {"shape": i.shape, "dtype": dt.int64}) for i in idx]
        view = make_node(name, [base] + idx_nodes, attrs)
        value = make_node("input", [], {"shape": view.shape, "dtype": dt.float64})
        new = OPS[name].put_back(make_node, base, value, attrs)
        again = make_node(name, [new] + idx_nodes, attrs)
        g = Graph([base, value] + idx_nodes, [new, again])
        b, v = rng.standard_normal(shape), rng.standard_normal(view.shape)
        out, viewed = run_graph(g, [b, v] + idx, impl, np)
        np.testing.assert_array_equal(viewed, v)
        if name == "index":  # outside rows 1 and 3 of column 3: base's values
            want = b.copy()
            want[1:4:2, 3] = v
            np.testing.assert_array_equal(out, want)
        elif name == "diagonal":  # dims 2 and 0, offset -1: x[k, :, k + 1] (dim1 one past dim2)
            want = b.copy()
            for k in range(v.shape[-1]):
                want[k, :, k + 1] = v[:, k]
            np.testing.assert_array_equal(out, want)
        else:  # a bijection: `viewed == v` alone pins every element of out
            assert np.shape(out) == shape

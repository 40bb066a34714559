"""Structural identity: when two nodes, two graphs or two kernels are the same computation.

One rule, asked wherever "the same" is asked:
  - `passes.cse` merges nodes with equal `node_key`s (over their already merged inputs),
  - `Graph.structural_hash` is a digest of `graph_key`,
  - autograd caches one backward graph per `graph_key` of a recorded forward (plus the
    positions of the nodes differentiated for), so a training loop differentiates once,
  - `compile` keys its variants' Python arguments by `value_key`,
  - a kernel's name is the `digest` of its whole data (codegen/lower.py), and kernels named
    alike are defined once per module.

A node is its op, its attributes, its shape, its dtype and its inputs' identities: never its
Python identity, its `meta` (the user's source line, a grad_fn name) or its `saved` values. An
`input` node is its position, shape and dtype (its attributes restate the last two).

Values are normalised by `value_key`, the same way everywhere: numbers keep their type (1, 1.0
and True differ, since the tracer promotes them differently) and floats compare by their bits
(-0.0 and 0.0 differ, as x / 0.0 and x / -0.0 do; NaN equals itself); a tuple and a list differ;
a dict is its sorted items; a `constant` holding an array is named by its `digest` attribute. A
value that cannot be keyed (an array without a digest) makes its node, and any graph holding
it, have no identity: `Unkeyable` is raised, and callers treat the node as equal only to itself.
"""
from __future__ import annotations

import dataclasses
import hashlib
import struct

from .dtypes import DType

__all__ = ["Unkeyable", "value_key", "attrs_key", "node_key", "graph_key", "structural_hash",
           "digest", "IDENTITY"]


class Unkeyable(Exception):
    """A value with no structural identity: its node equals only itself."""


_pack_double = struct.Struct("<d").pack
# keyed as themselves: no two of these types compare equal to each other, and each of
# their values equals only the values it means (DTypes are singletons)
BARE = frozenset({int, str, type(None), DType})


class _Opaque:
    """A hashable object of no known kind (a custom Function class, an enum) as a key: equal
    as the object says, printed with its identity, so a digest never confuses two objects that
    merely print alike."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is _Opaque and (self.v is other.v or self.v == other.v)

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        t = type(self.v)
        name = getattr(self.v, "__qualname__", None) if isinstance(self.v, type) else None
        return f"<{t.__module__}.{t.__qualname__} {name or ''} at {id(self.v):#x}>"


def value_key(v):
    """A hashable key, equal for values that mean the same thing (see the module's text)."""
    t = type(v)
    if t in BARE:
        return v
    if t is tuple:
        return _tuple_key(v)
    if t is float:
        return (float, _pack_double(v))
    if t is bool:
        return (bool, v)
    if t is list:
        return (list, tuple([value_key(x) for x in v]))
    if t is dict:
        return (dict, tuple(sorted((k, value_key(x)) for k, x in v.items())))
    if t is bytes:
        return (bytes, v)
    if t is frozenset:
        return (frozenset, frozenset(value_key(x) for x in v))
    if hasattr(v, "dtype") and hasattr(v, "tobytes"):
        if getattr(v, "ndim", None) == 0:  # a numpy scalar (or 0-d array), by its bits
            return (t.__name__, str(v.dtype), v.tobytes())
        raise Unkeyable(f"an array ({t.__name__}) has no structural identity")
    if isinstance(v, float):  # a float subclass: keep it apart from the builtin
        return (t, _pack_double(v))
    try:
        hash(v)
    except TypeError:
        raise Unkeyable(f"a {t.__name__} value has no structural identity") from None
    return _Opaque(v)


def _tuple_key(v: tuple) -> tuple:
    # a tuple of ints, strings, None and dtypes (dims, shapes, perms), or of such tuples (an
    # index spec: (("slice", 0, 5, 1), ("int", 2))), is its own key: each of them is
    for x in v:
        tx = type(x)
        if tx not in BARE:
            if tx is tuple:
                for y in x:
                    if type(y) not in BARE:
                        return tuple([value_key(z) for z in v])
            else:
                return tuple([value_key(z) for z in v])
    return v


def attrs_key(n) -> tuple:
    """A node's attributes as sorted `(name, value_key)` pairs; a `constant` is its value alone
    (its shape and dtype attributes restate its type), an array by its `digest` attribute
    (Unkeyable without one)."""
    a = n.attrs
    if n.op == "constant":
        v = a.get("value")
        if type(v) is float and len(a) == 3:  # the common case, a Python scalar: fast
            return (float, _pack_double(v))
        return _constant_key(a)
    if len(a) == 1:
        for k, v in a.items():
            return ((k, v if type(v) in BARE else value_key(v)),)
    return tuple(sorted([(k, v if type(v) in BARE else value_key(v)) for k, v in a.items()]))


def _constant_key(a: dict) -> tuple:
    v = a.get("value")
    if type(v) in (int, float, bool):
        k = value_key(v)
    elif isinstance(a.get("digest"), str):
        k = ("digest", a["digest"])
    else:
        raise Unkeyable("an array constant without a digest")
    rest = sorted((name, value_key(x)) for name, x in a.items()
                  if name not in ("shape", "dtype", "value", "digest"))
    return (k,) + tuple(rest) if rest else k


def node_key(n, inputs: tuple) -> tuple:
    """(op, inputs, attributes, shape, dtype): `inputs` are the identities of n's inputs as the
    caller numbers them (positions in a topological order, or the ids of merged nodes)."""
    return (n.op, inputs, () if n.op == "input" else attrs_key(n), n.shape, n.dtype)


def graph_key(nodes: list, outputs=()) -> tuple:
    """(key, pos) for `nodes` in topological order: `key` holds each node's `node_key` over
    input positions, then the outputs' positions; `pos` maps each node (they hash by identity)
    to its position. Raises Unkeyable when a node has no identity."""
    pos = {n: i for i, n in enumerate(nodes)}
    # (node_key inlined, its inputs' positions by arity without a comprehension and a single
    # attribute's key without a call: this runs over every recorded node of every eager
    # backward, a thousand for a policy's episode or a CRF's sentence)
    parts = []
    append = parts.append
    for n in nodes:
        ins = n.inputs
        k = len(ins)
        if k == 2:
            p = (pos[ins[0]], pos[ins[1]])
        elif k == 1:
            p = (pos[ins[0]],)
        else:
            p = tuple([pos[i] for i in ins]) if k else ()
        a, op = n.attrs, n.op
        if not a or op == "input":
            ak = ()
        elif len(a) == 1 and op != "constant":
            for name, v in a.items():
                t = type(v)
                ak = ((name, v if t in BARE else _tuple_key(v) if t is tuple else
                       value_key(v)),)
        else:
            ak = attrs_key(n)
        append((op, p, ak, n.shape, n.dtype))
    return (tuple(parts), tuple([pos[o] for o in outputs])), pos


def structural_hash(nodes: list, outputs) -> str:
    """A hex digest of `graph_key`, equal for graphs that differ only in node identities and
    meta. A node with no identity enters by its Python identity (equal only to itself)."""
    pos = {id(n): i for i, n in enumerate(nodes)}
    h = hashlib.sha256()
    for n in nodes:
        ins = tuple([pos[id(i)] for i in n.inputs])
        try:
            k = node_key(n, ins)
        except Unkeyable:
            k = (n.op, ins, ("unkeyable node", id(n)), n.shape, n.dtype)
        h.update(repr(k).encode())
    h.update(repr([pos[id(o)] for o in outputs]).encode())
    return h.hexdigest()


# ---------------------------------------------------------------- data (kernels)

IDENTITY = "identity"  # dataclasses.field(metadata={IDENTITY: False}): a display-only field


def data_key(v):
    """`value_key` extended to dataclass instances, field by field, every field except those
    marked display-only (`field(metadata={IDENTITY: False})`): a field added later is part of
    the identity unless it says otherwise. A node inside the data enters as the array it names
    (its shape and dtype): data such as a kernel reads values, not how they were computed."""
    t = type(v)
    if t in BARE:
        return v
    if t is tuple or t is list:
        return (t.__name__,) + tuple([data_key(x) for x in v])
    names = _FIELDS.get(t)
    if names is None and hasattr(t, "__dataclass_fields__"):
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t)
                                   if f.metadata.get(IDENTITY, True))
    if names is not None:
        return (t.__qualname__,) + tuple([(n, data_key(getattr(v, n))) for n in names])
    if t is dict:
        return ("dict",) + tuple(sorted((k, data_key(x)) for k, x in v.items()))
    if hasattr(v, "inputs") and hasattr(v, "op") and hasattr(v, "shape"):  # an ir Node
        return ("node", v.shape, v.dtype)
    return value_key(v)


_FIELDS: dict = {}  # dataclass -> the names of its fields that count


def digest(data, n: int = 12) -> str:
    """The first `n` hex digits of a SHA-256 of `data_key(data)`: stable across processes for
    data made of numbers, strings, dtypes, containers and dataclasses."""
    return hashlib.sha256(repr(data_key(data)).encode()).hexdigest()[:n]

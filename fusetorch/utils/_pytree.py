"""`torch.utils._pytree`: nested tuples, lists, dicts (OrderedDict, defaultdict) and
namedtuples as trees whose leaves are everything else, flattened in PyTorch's order (dict keys
in insertion order) and rebuilt from a TreeSpec. `torch.func` maps its transforms over such
trees (a dict of parameters is one argument)."""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable

__all__ = ["LeafSpec", "TreeSpec", "tree_all", "tree_any", "tree_flatten", "tree_leaves",
           "tree_map", "tree_map_only", "tree_structure", "tree_unflatten"]


@dataclasses.dataclass(frozen=True)
class TreeSpec:
    """How a tree was built: its node type, what rebuilding it needs (dict keys, the
    namedtuple class, a defaultdict's factory) and its children's specs."""
    type: Any
    context: Any
    children_specs: tuple

    @property
    def num_leaves(self) -> int:
        return sum(c.num_leaves for c in self.children_specs)

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves) -> Any:
        return tree_unflatten(leaves, self)

    def __repr__(self, indent: int = 0) -> str:
        # PyTorch's form: the first child on the line, the others each on its own line
        children = ""
        if self.children_specs:
            indent += 2
            children = self.children_specs[0].__repr__(indent)
            children += "," if len(self.children_specs) > 1 else ""
            children += ",".join("\n" + " " * indent + c.__repr__(indent)
                                 for c in self.children_specs[1:])
        return f"TreeSpec({self.type.__name__}, {self.context}, [{children}])"


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, ())

    @property
    def num_leaves(self) -> int:
        return 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(tree) -> tuple[Any, Any, list] | None:
    """(node type, context, children) for a container node, None for a leaf."""
    if _is_namedtuple(tree):
        return type(tree), type(tree), list(tree)
    if type(tree) in (tuple, list):
        return type(tree), None, list(tree)
    if isinstance(tree, collections.defaultdict):
        return collections.defaultdict, (tree.default_factory, list(tree)), list(tree.values())
    if type(tree) in (dict, collections.OrderedDict):
        return type(tree), list(tree), list(tree.values())
    return None


def _rebuild(typ, context, children: list):
    if typ is tuple or typ is list:
        return typ(children)
    if typ is collections.defaultdict:
        factory, keys = context
        return collections.defaultdict(factory, zip(keys, children))
    if typ in (dict, collections.OrderedDict):
        return typ(zip(context, children))
    return context(*children)  # a namedtuple class


def _flatten_into(tree, leaves: list, is_leaf) -> TreeSpec:
    node = None if is_leaf is not None and is_leaf(tree) else _children(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    typ, context, children = node
    return TreeSpec(typ, context, tuple(_flatten_into(c, leaves, is_leaf) for c in children))


def tree_flatten(tree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """(the leaves in order, the spec that rebuilds the tree from them)."""
    leaves: list = []
    return leaves, _flatten_into(tree, leaves, is_leaf)


def tree_unflatten(leaves, treespec: TreeSpec) -> Any:
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but "
                         f"the spec refers to a pytree that holds {treespec.num_leaves} items "
                         f"({treespec}).")
    it = iter(leaves)

    def build(spec: TreeSpec):
        if spec.is_leaf():
            return next(it)
        return _rebuild(spec.type, spec.context, [build(c) for c in spec.children_specs])
    return build(treespec)


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree, *rests, is_leaf: Callable | None = None) -> Any:
    """The tree with `func` applied to each leaf (to the corresponding leaves of `rests`,
    trees of the same structure, too)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_leaves_as(r, spec) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def _leaves_as(tree, spec: TreeSpec) -> list:
    leaves, other = tree_flatten(tree)
    if other != spec:
        raise ValueError(f"Tree structure mismatch: {other} vs {spec}")
    return leaves


def tree_map_only(type_or_types, func: Callable, tree, is_leaf: Callable | None = None) -> Any:
    """tree_map applying `func` only to leaves of the given type(s), keeping the others."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree,
                    is_leaf=is_leaf)


def tree_all(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def _broadcast_to_and_flatten(tree, treespec: TreeSpec, is_leaf: Callable | None = None):
    """`tree`, a prefix of the tree `treespec` describes, flattened to one entry per leaf of
    that tree (a leaf of the prefix repeated over its subtree); None where it is no prefix.
    (vmap's in_dims and out_dims.)"""
    def go(t, spec: TreeSpec):
        node = None if is_leaf is not None and is_leaf(t) else _children(t)
        if node is None:
            return [t] * spec.num_leaves
        typ, context, children = node
        if spec.is_leaf() or typ is not spec.type or context != spec.context or \
                len(children) != spec.num_children:
            return None
        out = []
        for c, s in zip(children, spec.children_specs):
            sub = go(c, s)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return go(tree, treespec)

"""torch.utils._pytree: PyTorch's flattening order and printed specs (checked in PyTorch
2.13), rebuilding, tree_map over several trees, prefix broadcasting."""
import collections

import pytest

import fusetorch.utils._pytree as pytree

Point = collections.namedtuple("Point", "x y")


def test_flatten_order_and_spec_print_as_pytorchs():
    leaves, spec = pytree.tree_flatten({'a': (1, [2, None]), 'b': 3})
    assert leaves == [1, 2, None, 3]  # None is a leaf, dict keys in insertion order
    assert repr(spec) == ("TreeSpec(dict, ['a', 'b'], [TreeSpec(tuple, None, [*,\n"
                          "    TreeSpec(list, None, [*,\n      *])]),\n  *])")
    assert spec.num_leaves == 4 and not spec.is_leaf()
    assert pytree.tree_flatten(5) == ([5], pytree.LeafSpec())


@pytest.mark.parametrize("tree", [
    {'b': 1, 'a': [2, (3,)]}, collections.OrderedDict(z=1, y=2), Point(1, (2, 3)),
    collections.defaultdict(list, {'k': [1, 2]}), [], (), {}, [[], {}],
])
def test_unflatten_rebuilds_the_same_types(tree):
    leaves, spec = pytree.tree_flatten(tree)
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    if isinstance(tree, collections.defaultdict):
        assert back.default_factory is list


def test_unflatten_refuses_the_wrong_number_of_leaves():
    _, spec = pytree.tree_flatten((1, 2))
    with pytest.raises(ValueError, match="`leaves` has length 3"):
        pytree.tree_unflatten([1, 2, 3], spec)


def test_tree_map_and_friends():
    assert pytree.tree_map(lambda a, b: a + b, {'x': [1, 2]}, {'x': [10, 20]}) == {'x': [11, 22]}
    with pytest.raises(ValueError, match="mismatch"):
        pytree.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])
    assert pytree.tree_map_only(int, str, [1, 2.5, (3,)]) == ['1', 2.5, ('3',)]
    assert pytree.tree_all(lambda v: v > 0, (1, [2])) and not pytree.tree_any(bool, [0, (0,)])
    assert pytree.tree_leaves([1, [2]], is_leaf=lambda t: t == [2]) == [1, [2]]


def test_broadcast_to_and_flatten_takes_prefixes_only():
    spec = pytree.tree_structure(({'a': 1, 'b': 2}, 3))
    assert pytree._broadcast_to_and_flatten(0, spec) == [0, 0, 0]
    assert pytree._broadcast_to_and_flatten((None, 1), spec) == [None, None, 1]
    assert pytree._broadcast_to_and_flatten(({'a': 0, 'b': None}, 1), spec) == [0, None, 1]
    assert pytree._broadcast_to_and_flatten(({'a': 0}, 1), spec) is None
    assert pytree._broadcast_to_and_flatten((0, 1, 2), spec) is None

"""runtime/layouts.py: the layouts of a program's values, known before anything runs."""
import os
import sys

import numpy as np
import pytest

from fusetorch.codegen import fuse
from fusetorch.ir import dtypes as dt
from fusetorch.ir.graph import Graph, Node, make_node
from fusetorch.runtime import layouts as L
from fusetorch.runtime.device import cpu_backend
from fusetorch.runtime.runner import run_graph


def _input(shape, dtype=dt.float32):
    return Node("input", (), {"shape": shape, "dtype": dtype}, tuple(shape), dtype)


def test_layout_of_counts_elements_and_zeroes_size_one_dims():
    a = np.zeros((3, 4), np.float32)
    assert L.layout_of(a) == ((3, 4), (4, 1))
    assert L.layout_of(a.T) == ((4, 3), (1, 4))
    assert L.layout_of(a[:, ::2]) == ((3, 2), (4, 2))
    assert L.layout_of(a[:1]) == ((1, 4), (0, 1))  # numpy says 16 bytes; it never moves
    assert L.layout_of(np.broadcast_to(np.zeros(4, np.float64), (5, 4))) == ((5, 4), (0, 1))
    assert L.layout_of(a[::-1]) == ((3, 4), (-4, 1))


def test_partial_element_strides_are_refused():
    rec = np.zeros(4, dtype=[("a", np.float32), ("b", np.uint8)])
    with pytest.raises(RuntimeError, match="byte strides"):
        L.layout_of(rec["a"])


def test_contiguity():
    assert L.contiguous((2, 1, 3)) == ((2, 1, 3), (3, 0, 1))
    assert L.is_contiguous(L.layout_of(np.zeros((2, 1, 3))))
    assert not L.is_contiguous(L.layout_of(np.zeros((2, 3)).T))
    assert L.is_contiguous(L.Layout((0, 3), (7, 5)))  # empty: numpy's flag says so too


@pytest.mark.parametrize("make", [
    lambda: np.zeros((5, 6), np.float32).T,
    lambda: np.zeros((5, 6), np.float64)[::2, 1:],
    lambda: np.zeros((4, 6), np.float32)[::-1, ::-2],
    lambda: np.broadcast_to(np.zeros((1, 3), np.float32), (4, 3)),
    lambda: np.zeros((2, 3, 4), np.float32).transpose(2, 0, 1)[:, :1],
])
def test_stand_ins_have_the_layout_they_stand_for(make):
    a = make()
    s = L.stand_in(L.layout_of(a), a.dtype)
    assert s.shape == a.shape and s.dtype == a.dtype and not s.any()
    assert L.layout_of(s) == L.layout_of(a)
    # numpy makes the same views of the stand-in as of the array itself
    for view in (lambda v: v.T, lambda v: v.reshape(-1), lambda v: v[..., None]):
        assert L.layout_of(view(s)) == L.layout_of(view(a))


def test_derive_follows_views_and_matches_what_numpy_makes():
    # only input layouts go in (no arrays); views are followed on stand-ins, a matmul is
    # dense, a group's outputs are C-contiguous
    a, b = _input((4, 6)), _input((6, 4))
    m = make_node("matmul", [a, b])
    mt = make_node("permute", [m], {"perm": (1, 0)})
    e = make_node("exp", [mt])                      # a group reading a strided view
    at = make_node("permute", [a], {"perm": (1, 0)})
    flat = make_node("reshape", [at], {"shape": (24,)})  # numpy must copy: dense layout
    f = make_node("exp", [flat])
    # a view of that copy (which the walk lets go: its reader gets a stand-in of its layout)
    back = make_node("permute", [make_node("reshape", [flat], {"shape": (6, 4)})],
                     {"perm": (1, 0)})
    g = make_node("exp", [back])
    graph = Graph([a, b], [e, f, g])
    part = fuse.partition(graph, cpu=True)
    be = cpu_backend()
    arrays = [np.random.rand(6, 4).astype(np.float32).T, np.random.rand(6, 4).astype(np.float32)]
    got = L.derive(part, L.layouts_of(graph.inputs, arrays), be.impl, be.xp)
    # the values an eager run (numpy) makes for these nodes
    values = dict(zip([id(n) for n in (mt, flat, at, back)],
                      run_graph(Graph([a, b], [mt, flat, at, back]), arrays, be.impl, be.xp)))
    for n in (mt, flat, at, back):
        assert got[id(n)] == L.layout_of(values[id(n)]), n.op
    assert got[id(m)] == L.contiguous((4, 4))
    assert got[id(a)] == ((4, 6), (1, 4))
    assert got[id(e)] == L.contiguous((4, 4))


def test_a_data_dependent_shape_cannot_be_derived_but_can_be_observed():
    x = _input((6,))
    nz = make_node("nonzero", [x], shape=(3, 1))  # three nonzeros when it was recorded
    col = make_node("permute", [nz], {"perm": (1, 0)})
    graph = Graph([x], [col])
    part = fuse.partition(graph, cpu=True)
    be = cpu_backend()
    with pytest.raises(L.LayoutUnknown):
        L.derive(part, {id(x): L.contiguous((6,))}, be.impl, be.xp)
    arrays = [np.array([1, 0, 2, 0, 3, 0], np.float32)]
    seen = L.observe(graph, part, arrays, be.impl, be.xp)
    (value,) = run_graph(graph, arrays, be.impl, be.xp)
    assert value.shape == (1, 3) and seen[id(col)] == L.layout_of(value)


def test_which_steps_may_alias_their_inputs():
    a, b = _input((3, 3)), _input((3, 3))
    assert not L.may_alias(make_node("matmul", [a, b]))  # a library call allocates
    assert L.may_alias(make_node("permute", [a], {"perm": (1, 0)}))  # a view
    assert L.may_alias(make_node("exp", [a]))  # an unfused elementwise step: conservatively
    assert L.layout_kind(make_node("matmul", [a, b])) == "dense"
    assert L.layout_kind(make_node("permute", [a], {"perm": (1, 0)})) == "view"


def test_stand_ins_take_no_memory_of_their_own():
    """Stand-ins view never-written mappings (a build deriving a training step's layouts
    held hundreds of zeroed activations beside the run it overlapped): each has its layout,
    reads zeros, refuses writes, and shares memory with no other stand-in (the in-place choice
    of a background build would take that for aliasing)."""
    a = L.stand_in(L.Layout((3, 4), (1, 3)), np.float32)  # a transposed [4, 3]
    b = L.stand_in(L.Layout((2, 5), (5, 1)), np.float64)
    assert L.layout_of(a) == ((3, 4), (1, 3)) and L.layout_of(b) == ((2, 5), (5, 1))
    assert not a.flags.writeable and not b.flags.writeable
    assert not a.any() and not b.any()
    assert not np.shares_memory(a, b)
    assert L.stand_in(L.Layout((0, 3), (3, 1)), np.float32).shape == (0, 3)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/statm")
def test_reading_a_stand_in_maps_no_memory():
    """A build copies stand-ins (a reshape of a transposed view reads every element): their
    pages must stay the kernel's zero page, not become memory of the process (a shared
    anonymous mapping allocates each page read: 0.2 GB of a nanoGPT step's build)."""
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    s = L.stand_in(L.Layout((4096, 16384), (1, 4096)), np.float32)  # 256 MiB, transposed
    before = rss()
    assert s.sum() == 0
    assert rss() - before < 64 << 20

"""How a loop kernel's loops run, per backend: the step between lowering and rendering.

`lower.lower` says what a kernel computes (`LoopKernel`: its iteration space in the dims' own
order, parameters with their strides over it, loads, statements, stores, the reduction);
this module chooses, per backend, the loop structure that computes it, as plain data, and
the renderers and templates only print it (tinygrad's `apply_opts` before rendering is the
model):

- `c_strategy(k) -> CStrategy`: loop order (a reduction's reduced dims innermost, or memory
  order with an accumulator row: the outer-axis layout, its row cut into tiles where long),
  loops merged where every array walks them as one, flat loops, block-wise float32 sums and
  their chunks, float partial rows and blocks, OpenMP parallel and simd choices; and from
  those choices the nest itself (`CStrategy.nest`: `Loop` records, `c_nest`), which one
  printer (codegen/printer.py) prints for every loop kernel.
- `cuda_strategy(k) -> CudaStrategy`: reduced loops innermost, merged loops, the skeleton
  (`variant`), threads per block, the vector width of flat kernels and the index type; and
  the skeleton's grid-stride and row loops as the same `Loop` records (`CudaStrategy.nest`,
  `cuda_nest`), printed by the same printer.

`schedule(k, backend)` returns `k` with its backend's strategy (`LoopKernel.strategy`) and its
name, the digest of both parts; `lower.lower` schedules every kernel it makes. A new backend
writes a strategy function here (or beside its renderer) and a renderer that prints it.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from ..ir import dtypes as dt
from ..ir.identity import digest
from ..ir.ops import OPS
from .printer import Block, Index, Loop, Split, index, nested
from . import template_nests


def contiguous(shape: tuple) -> tuple:
    """C-contiguous element strides of `shape`."""
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return tuple(reversed(st))


def _collapse(shape: tuple, strides: list, reduced: tuple) -> tuple:
    """Merge neighbouring loops that every array walks as one (stride of the outer = stride of
    the inner times its extent; both reduced or both kept): [6, 64, 28, 28] summed over the
    last three becomes [6, 64, 784], whose inner loop is long enough to vectorise well."""
    shape, strides, reduced = list(shape), [list(st) for st in strides], list(reduced)
    d = len(shape) - 2
    while d >= 0:
        if reduced[d] == reduced[d + 1] and all(st[d] == st[d + 1] * shape[d + 1]
                                                for st in strides):
            shape[d] *= shape[d + 1]
            for st in strides:
                st[d] = st[d + 1]
                del st[d + 1]
            del shape[d + 1], reduced[d + 1]
        d -= 1
    return tuple(shape), [tuple(st) for st in strides], tuple(reduced)


def loop_names(n: int) -> tuple:
    """The loop variables of a loop kernel's `n` loops, outermost first."""
    return tuple(f"i{d}" for d in range(n))


def _flat(k) -> bool:
    """A pointwise kernel whose every parameter is contiguous over its space, or a scalar."""
    c = contiguous(k.shape)
    return not k.reduced and all(p.strides == c or not any(p.strides) for p in k.params)


def _trailing(k, flat: bool) -> tuple:
    """(loops, strides per parameter, reduced per loop): a reduction's kept dims outside in
    their order, its reduced dims inside, loops merged where every array walks them as one
    (unless `flat`: one loop over everything)."""
    order = list(range(len(k.shape)))
    if k.reduced:
        order = [d for d in order if not k.reduced[d]] + [d for d in order if k.reduced[d]]
    loops = tuple(k.shape[d] for d in order)
    strides = [tuple(p.strides[d] for d in order) for p in k.params]
    reduced = tuple(k.reduced[d] for d in order) if k.reduced else (False,) * len(loops)
    if not flat:
        loops, strides, reduced = _collapse(loops, strides, reduced)
    return loops, strides, reduced


# ------------------------------------------------------------------------------------ C

# innermost loops shorter than this get no `omp simd`: forcing a 2-wide loop to vectorise ran
# max pooling's gradient kernel 2.7x slower than gcc's own unrolling (183 vs 67 us)
SIMD_MIN = 8
# Only large kernels get parallel loops: with OMP_WAIT_POLICY=PASSIVE (cbuild: spinning
# workers starve numpy's BLAS threads) a parallel region opened after the workers went to
# sleep costs about 100 us here, so it pays only from about a million elements (measured:
# `W += g * -lr` over 1e5 floats, 18 us serial, 123 us parallel; 1e6: 211 vs 218; 4e6: 1194
# vs 509)
PARALLEL_WORK = 1 << 20  # work (elements, weighted by libm calls) from which loops go parallel
_LIBM_CALL = re.compile(r"\b(?!FT_)[a-z0-9_]+\(")

# above this an outer-axis reduction with no kept loop before its first reduced one (nothing to
# run in parallel) uses the other layout, parallel over its kept dims
OUTER_AXIS_MAX_WORK = 1 << 20
OUTER_AXIS_MAX_ROW = 4096  # the accumulator row is a local array: at most 32 KiB of stack
OUTER_AXIS_TILE = 1024  # the widest tile of a tiled outer-axis row (8 KiB of double sums)
OUTER_AXIS_MIN_TILE = 256  # narrower tiles read too little per row: one pass of the whole row wins
BLOCK = 4096  # a blocked sum's block, and the length of an inner float partial sum
LANES = 64  # a blocked sum's float accumulators per block (element i goes to lane i % LANES)
MAX_CHUNKS = 4096  # a blocked sum's chunk sums are a local array too
ROW_BLOCK_SUMS = 64  # values a float partial row's element sums before it goes to double


@dataclass
class CStrategy:
    """The C loop nest of a kernel. `loops` are the extents in loop order; `strides` one
    tuple per parameter (in `LoopKernel.params` order) over them, except a reduction's output
    outside the outer-axis layout, indexed by the kept (outer) loops alone."""
    loops: tuple
    strides: tuple
    parallel: bool  # the outermost loop is an OpenMP parallel loop (see PARALLEL_WORK)
    # the template that prints the kernel: "pointwise", "reduce" (reduced loops innermost),
    # "reduce_outer" (the outer-axis layout) or the kernel's own (LoopKernel.template)
    variant: str = "pointwise"
    simd: bool = False  # the innermost loop of a nested kernel is long enough for `omp simd`
    flat: bool = False  # one loop over numel (every parameter contiguous or a scalar)
    reduced: tuple = ()  # per loop: reduced (reductions)
    reduce_inner: int = 0  # how many trailing loops are reduced (outside the outer-axis layout)
    # the outer-axis layout: loops in memory order, folding into an accumulator row over the
    # kept loops inside the first reduced one (reduce_outer.c.j2); `prefix` loops before it
    # each run a row of their own; `acc_strides` the row's stride per loop (0 outside it)
    outer_axis: bool = False
    prefix: int = 0
    acc_strides: tuple = ()
    row: int = 0  # the accumulator row's length
    # a large float32 sum over everything, read in order: block-wise, in chunks of blocks
    # (a thread's unit of work; see reduce.c.j2)
    blocked: bool = False
    block: int = BLOCK
    chunk: int = 64
    chunks: int = 0  # how many (a local array holds their sums)
    # an outer-axis float32 sum whose innermost loop is kept: iterations of the first reduced
    # loop per block, each block summed into a float row first, then added into the double
    # row (0: no blocks). A double row updated element by element ran at a third of memory
    # speed (a load, a conversion and a store per element); a float row stays in registers
    row_block: int = 0
    # a float32 sum over one innermost loop with kept loops outside (row sums), or an
    # outer-axis sum whose innermost loop of at most `block` elements is reduced: float partial
    # sums of `block` elements, added in double (full-width SIMD instead of converting every
    # element to double: ~1.5x in cache; next to a bool input, which gcc 12 does not widen
    # to double in a simd loop, a ReLU backward's bias-gradient sum ran 8-15x slower).
    # `inner_blocks`: the innermost loop runs in several blocks (longer than `block`)
    inner_blocked: bool = False
    inner_blocks: bool = False
    # per loop, the OpenMP construct that opens it (the C renderer spells each: PRAGMAS):
    # "" none, "parallel", "simd", "parallel_simd" (a flat loop), "fold_simd" /
    # "fold_parallel" / "fold_parallel_simd" (with the reduction's clause on its
    # accumulator), "part_sum" (a float partial sum's simd loop), "part_fold" (an
    # outer-axis max/min's innermost reduced loop into its partial)
    pragmas: tuple = ()
    lanes: int = LANES  # a blocked sum's float accumulators per block
    # the loop nest these choices make (`c_nest`): what the template prints, in order
    nest: tuple = ()
    # a template kernel's own constants, which its nest and template read (template_nests:
    # max pooling's Pool)
    geometry: object = None
    # each parameter's offset at the loop indices (`strides` over `loop_names`); the
    # outer-axis layout's accumulator row element and the output row's start (`c_strategy`
    # derives them from the loops and strides)
    offsets: tuple = ()
    acc_offset: Index = Index()
    out_offset: Index = Index()

    @property
    def outer_loops(self) -> tuple:
        return self.loops[:len(self.loops) - self.reduce_inner]

    @property
    def inner_loops(self) -> tuple:
        return self.loops[len(self.loops) - self.reduce_inner:]


def parallel(k) -> bool:
    """Whether the kernel's work pays for waking OpenMP's workers. A libm call (exp, tanh) per
    element costs about as much again as moving the element."""
    calls = sum(len(_LIBM_CALL.findall(s.expr)) for s in k.body)
    return k.numel * (1 + calls) >= PARALLEL_WORK


def _row_tile(space: tuple, dims: tuple, in_strides: list) -> int | None:
    """The tile width of the tiled outer-axis layout, or None where it does not apply. For a
    reduction over leading dims whose row is one contiguous last dim, too long for one
    accumulator row or too much work for one thread (a bias gradient's sum over a large
    batch): the row is cut into tiles (a divisor of its length, at least 4 of them where the
    length allows, for the threads), and each tile folds every reduced row into an accumulator
    row of its own, reading memory in order, the tiles in parallel. Otherwise such a
    reduction went innermost: each output read its column with a stride of a whole row, 50x
    slower than numpy over [4096, 4096]."""
    n, last = space[-1], len(space) - 1
    if last in dims or any(d not in dims for d in range(min(dims), last)) or \
            any(st[-1] not in (0, 1) for st in in_strides):
        return None
    fits = [t for t in range(OUTER_AXIS_MIN_TILE, min(n, OUTER_AXIS_TILE) + 1) if n % t == 0]
    if not fits:
        return n if n <= OUTER_AXIS_MAX_ROW else None  # one tile, the whole row
    several = [t for t in fits if n // t >= 4]
    return max(several or fits)


def _outer_axis(k) -> tuple:
    """(use the outer-axis layout, its tile width or None) for a reduction."""
    space, dims = k.shape, tuple(d for d, r in enumerate(k.reduced) if r)
    row = math.prod(space[d] for d in range(min(dims), len(space)) if d not in dims)
    if row <= 1:
        return False, None
    if row <= OUTER_AXIS_MAX_ROW and (min(dims) > 0 or math.prod(space) < OUTER_AXIS_MAX_WORK):
        return True, None
    tile = _row_tile(space, dims, [p.strides for p in k.params if not p.output])
    return tile is not None, tile


def c_strategy(k) -> CStrategy:
    """The C loop nest of kernel `k` (see CStrategy)."""
    s = _c_choices(k)
    names = loop_names(len(s.loops))
    out = next((st for p, st in zip(k.params, s.strides) if p is k.reduce_out), ())
    return dataclasses.replace(
        s, nest=c_nest(k, s), offsets=tuple(index(st, names) for st in s.strides),
        acc_offset=index(s.acc_strides, names),
        out_offset=index(out, names[:s.prefix] if s.outer_axis else names))


def _c_choices(k) -> CStrategy:
    if k.template is not None:  # its template writes its own loops
        simd = k.template == "fold2d" and k.params[0].node.shape[5] >= SIMD_MIN
        par = parallel(k)
        return CStrategy(loops=k.shape, strides=tuple(p.strides for p in k.params),
                         variant=k.template, parallel=par, simd=simd,
                         geometry=template_nests.geometry(k, par))
    if not k.reduced:
        flat = _flat(k)
        loops, strides, _ = _trailing(k, flat)
        par, simd = parallel(k), bool(loops) and loops[-1] >= SIMD_MIN
        if flat:
            pragmas = ("parallel_simd" if par else "simd",)
        else:
            pragmas = tuple("parallel" if d == 0 and par else
                            "simd" if d == len(loops) - 1 and simd else ""
                            for d in range(len(loops)))
        return CStrategy(loops=loops, strides=tuple(strides), parallel=par, simd=simd,
                         flat=flat, pragmas=pragmas)
    outer_axis, tile = _outer_axis(k)
    if not outer_axis:
        loops, strides, reduced = _trailing(k, False)
    elif tile is None:  # memory order
        loops, strides, reduced = _collapse(k.shape, [p.strides for p in k.params],
                                            k.reduced)
    else:  # the kept last dim split into tiles of `tile`, the loop over the tiles first
        st = [(s[-1] * tile,) + tuple(s[:-1]) + (s[-1],) for s in (p.strides for p in k.params)]
        loops = (k.shape[-1] // tile,) + tuple(k.shape[:-1]) + (tile,)
        loops, strides, reduced = _collapse(loops, st, (False,) + k.reduced[:-1] + (False,))
    out = next(i for i, p in enumerate(k.params) if p is k.reduce_out)
    prefix = reduced.index(True)
    reduce_inner = sum(reduced)
    acc_strides = (0,) * prefix + strides[out][prefix:]
    if not outer_axis:  # the output is indexed by the kept (outer) loops alone
        strides[out] = strides[out][:len(loops) - reduce_inner]
    f32_sum = OPS[k.reduce_op].reduction.combine == "add" and \
        k.reduce_out.node.dtype is dt.float32
    c = contiguous(k.shape)
    blocked = (f32_sum and all(reduced) and not k.stores and k.numel >= 4 * BLOCK
               and all(p.strides == c or not any(p.strides) for p in k.params if not p.output))
    inner = math.prod(n for n, r in zip(loops[prefix + 1:], reduced[prefix + 1:]) if r)
    row_block = ROW_BLOCK_SUMS // inner if (outer_axis and f32_sum and not reduced[-1]
                                            and inner <= ROW_BLOCK_SUMS) else 0
    inner_blocked = f32_sum and (
        (not outer_axis and reduce_inner == 1 and len(loops) > 1)
        or (outer_axis and reduced[-1] and loops[-1] <= BLOCK))
    chunk, chunks = 64, 0
    if blocked:  # chunks of 64 blocks (1 MiB of float32 per input), at most 4096 of them:
        # their sums are a local array of at most 32 KiB
        blocks = -(-k.numel // BLOCK)
        chunk = max(64, -(-blocks // MAX_CHUNKS))
        chunks = -(-blocks // chunk)
    row = math.prod(n for n, r in zip(loops[prefix:], reduced[prefix:]) if not r)
    par, simd = parallel(k), loops[-1] >= SIMD_MIN
    fold = OPS[k.reduce_op].reduction
    last = len(loops) - 1
    if outer_axis:
        # (the loops from the first reduced one on run in each prefix iteration: serial)
        pragmas = ["parallel" if d == 0 < prefix and par else "" for d in range(len(loops))]
        pragmas[last] = ("part_sum" if reduced[-1] and (inner_blocked or not fold.propagates_nan)
                         else "" if reduced[-1] and fold.index
                         else "part_fold" if reduced[-1]
                         else "simd" if simd else "")
    else:
        n_outer = len(loops) - reduce_inner
        pragmas = ["parallel" if d == 0 and par else "" for d in range(n_outer)]
        for d in range(n_outer, len(loops)):
            if inner_blocked or fold.index:  # (an index is the first extreme's: in order)
                pragmas.append("part_sum" if inner_blocked and d == last else "")
            elif d == n_outer == 0 and par:
                pragmas.append("fold_parallel_simd" if d == last else "fold_parallel")
            else:
                pragmas.append("fold_simd" if d == last else "")
    return CStrategy(
        variant="reduce_outer" if outer_axis else "reduce",
        loops=loops, strides=tuple(strides), parallel=par, simd=simd, reduced=reduced,
        reduce_inner=reduce_inner, outer_axis=outer_axis, prefix=prefix,
        acc_strides=acc_strides, row=row if outer_axis else 0, blocked=blocked, chunk=chunk,
        chunks=chunks,
        row_block=row_block, inner_blocked=inner_blocked,
        inner_blocks=inner_blocked and loops[-1] > BLOCK, pragmas=tuple(pragmas))


def c_nest(k, s: CStrategy) -> tuple:
    """The loop nest of kernel `k` under the choices `s`: Loop records and the names of the
    template's parts between them (see Loop), in the order the C source holds them."""
    if k.template is not None:  # a template of its own: its nest beside it
        return template_nests.c_nest(k, s)
    if k.batched:  # one operand set after another, each a flat loop of its own length
        inner = Loop("i", "numel[t]", ("element_hoisted",), pragma="simd")
        return ("sets", Loop("t", "n_sets", ("set_pointers", "set_scalars", inner),
                             ctype="int64_t"))
    if not k.reduced:
        if s.flat:
            return (Loop("i", f"{k.numel}L", ("element_flat",), pragma=s.pragmas[0]),)
        return nested([_loop(s, d) for d in range(len(s.loops))], ("element",))
    if s.blocked:
        return _blocked_nest(k, s)
    if s.outer_axis:
        return _outer_axis_nest(s)
    return _inner_nest(s)


def _loop(s: CStrategy, d: int, **kw) -> dict:
    """Loop d of the kernel's loops (`CStrategy.loops`), its pragma the strategy's."""
    return dict(var=f"i{d}", stop=f"{s.loops[d]}L", pragma=s.pragmas[d]) | kw


def _blocked_nest(k, s: CStrategy) -> tuple:
    """A large float32 sum read in order: chunks of blocks (in parallel, dynamically: a
    thread the OS runs late leaves its chunks to the others), each block summed into float
    lanes folded in a fixed pairwise tree, the blocks' sums added in double."""
    blocks = -(-k.numel // s.block)
    chunks = f"{s.chunks}L"
    lanes = Loop("j", f"{s.lanes}L", ("lane_element",), pragma="simd", clip="s_end - s")
    tree = Loop("w", "0", (Loop("j", "w", ("lane_fold",), pragma="simd"),),
                start=f"{s.lanes // 2}L", cmp=">", step=" /= 2")
    block = Loop("b", f"c * {s.chunk}L + {s.chunk}L", (
        "lanes", Loop("j", f"{s.lanes}L", ("lane_zero",)),
        Loop("s", f"b * {s.block}L + {s.block}L", (lanes,), start=f"b * {s.block}L",
             step=f" += {s.lanes}L", clip=f"{k.numel}L"),
        tree, "block_add"), start=f"c * {s.chunk}L", clip=f"{blocks}L")
    chunk = Loop("c", chunks, ("chunk_acc", block, "chunk_store"),
                 pragma="parallel_dynamic" if s.parallel else "")
    why = ("dynamic",) if s.parallel else ()
    return ("chunks", *why, chunk, "total", Loop("c", chunks, ("chunk_add",)), "store_total")


def _inner_nest(s: CStrategy) -> tuple:
    """Reduced loops innermost: per output (the kept loops), an accumulator, the reduced
    loops folding into it (or into float partial sums first), the store."""
    rank, n_outer = len(s.loops), len(s.outer_loops)
    last = rank - 1
    if s.inner_blocked:  # one reduced loop: float partial sums, added in double
        n = f"{s.loops[last]}L"
        if s.inner_blocks:
            part = Loop(f"i{last}", f"b + {s.block}L", ("element", "fold_part"), start="b",
                        pragma=s.pragmas[last], clip=n)
            inner = ("blocks", Loop("b", n, ("part_float", part, "part_add"),
                                    step=f" += {s.block}L"))
        else:
            inner = ("part_float", Loop(**_loop(s, last), body=("element", "fold_part")),
                     "part_add")
    else:
        inner = nested([_loop(s, d) for d in range(n_outer, rank)], ("element", "fold"))
    return nested([_loop(s, d) for d in range(n_outer)], ("acc", *inner, "store"))


def _outer_axis_nest(s: CStrategy) -> tuple:
    """Loops in memory order: per prefix iteration an accumulator row, every reduced row
    folded into it (by float rows of `row_block` iterations first, where set), then stored.
    An innermost reduced loop folds into a scalar partial first, added into the row after."""
    last, p, rb = len(s.loops) - 1, s.prefix, s.row_block
    row = f"{s.row}L"
    if s.reduced[last]:
        core = ("part_float" if s.inner_blocked else "part",
                Loop(**_loop(s, last), body=("element", "fold_last")), "part_into_row")
    else:
        core = (Loop(**_loop(s, last), body=("element", "fold_part_row" if rb else "fold_row")),)
    middle = [_loop(s, d, pragma="") for d in range(p, last)]
    if rb:
        middle[0] |= dict(start="b", stop=f"b + {rb}L", clip=f"{s.loops[p]}L")
        rows = ("row_blocks", Loop("b", f"{s.loops[p]}L", (
            "part_row", Loop("j", row, ("part_row_zero",)), *nested(middle, core),
            Loop("j", row, ("part_row_add",))), step=f" += {rb}L"))
    else:
        rows = nested(middle, core)
    per_row = ("row", Loop("j", row, ("row_init",)), *rows, Loop("j", row, ("row_store",)))
    return nested([_loop(s, d) for d in range(p)], per_row)


# ------------------------------------------------------------------------------------ CUDA

THREADS = 256  # threads per block: a multiple of 32 (the block reduction assumes whole warps)
SMALL_ROW = 32  # rows of at most this many elements are reduced by one thread each
INT_LIMIT = 1 << 30  # offsets below this use 32-bit indices (half of int's range: the stride)
VECTOR = {"float": ("float4", 4), "double": ("double2", 2)}


@dataclass
class CudaStrategy:
    """The CUDA skeleton of a kernel. `loops`/`strides` as CStrategy's (reduced loops always
    innermost); `variant`: 'pointwise', the template's name, or a reduction's skeleton:
    'rows_thread' (a thread per output row), 'rows_block' (a block per row) or 'full' (every
    element into one value: block partials folded by the last block); `threads` per block;
    `vector`: the lanes of a flat kernel's float4/double2 path (0: none)."""
    loops: tuple
    strides: tuple
    variant: str
    index_type: str  # "int" where every offset fits, else "long long"
    threads: int = THREADS
    flat: bool = False
    reduce_inner: int = 0
    vector: int = 0
    nest: tuple = ()  # the skeleton's loops and blocks (`cuda_nest`): what the template prints
    # each parameter's offset at the loop indices (`strides` over `loop_names`), and the
    # thread's linear indices split into them: the element's (`ft_i`, every loop), a
    # reduction's row (`ft_row`, the kept loops) and element in the row (`ft_j`)
    # (`cuda_strategy` derives them from the loops and strides)
    offsets: tuple = ()
    full_index: Split | None = None
    outer_index: Split | None = None
    inner_index: Split | None = None

    @property
    def outer_loops(self) -> tuple:
        return self.loops[:len(self.loops) - self.reduce_inner]

    @property
    def inner_loops(self) -> tuple:
        return self.loops[len(self.loops) - self.reduce_inner:]


def _index_type(k, loops: tuple, strides, reduce_inner: int) -> str:
    bound = max(k.numel, 1)
    for p, st in zip(k.params, strides):
        shape = (p.node.shape if k.template is not None else
                 loops[:len(loops) - reduce_inner] if p is k.reduce_out else loops)
        bound = max(bound, 1 + sum((n - 1) * abs(s) for n, s in zip(shape, st)))
    return "int" if bound < INT_LIMIT else "long long"


def _rows_side_by_side(k, n_outer: int, strides) -> bool:
    """Whether neighbouring rows start at neighbouring elements of every array read, while a
    row's own elements do not: one thread per row then reads memory coalesced (a bias
    gradient's sum over the batch), and a block per row would read it with a row's stride."""
    arrays = [st for p, st in zip(k.params, strides) if not p.output and any(st)]
    return bool(arrays) and all(st[n_outer - 1] in (0, 1) for st in arrays) and \
        any(st[-1] not in (0, 1) for st in arrays)


def _vector_width(k, flat: bool) -> int:
    """The lanes of a flat kernel's vector path: every non-scalar operand float (float4) or
    double (double2); 0 when types are mixed (bool outputs), nothing is an array, or the
    kernel is short."""
    if not flat:
        return 0
    ctypes = {p.ctype for p in k.params if p.output or any(p.strides)}
    if len(ctypes) != 1 or next(iter(ctypes)) not in VECTOR or k.numel < 2 * THREADS:
        return 0
    return VECTOR[next(iter(ctypes))][1]


def cuda_strategy(k) -> CudaStrategy:
    """The CUDA skeleton of kernel `k` (see CudaStrategy)."""
    s = _cuda_choices(k)
    names, n_outer = loop_names(len(s.loops)), len(s.outer_loops)
    it = s.index_type
    return dataclasses.replace(
        s, nest=cuda_nest(k, s), offsets=tuple(index(st, names) for st in s.strides),
        full_index=Split("ft_i", names, s.loops, it),
        outer_index=Split("ft_row", names[:n_outer], s.outer_loops, it),
        inner_index=Split("ft_j", names[n_outer:], s.inner_loops, it))


def cuda_nest(k, s: CudaStrategy) -> tuple:
    """The loops and blocks of kernel `k`'s skeleton `s.variant` (see Loop, Block): grid-stride
    loops over elements or output rows, a block's threads striding over a row."""
    if k.template is not None:  # a template of its own: its nest beside it
        return template_nests.cuda_nest(k, s)
    it = s.index_type
    thread = f"({it})blockIdx.x * blockDim.x + threadIdx.x"
    grid = dict(step=" += ft_step", ctype=it)
    if s.variant == "pointwise":
        elements = Loop("ft_i", str(k.numel), ("index", "element"), start="ft_start + ft_first",
                        **grid)
        if not s.vector:
            return ("grid", elements)
        vectors = Loop("ft_v", str(k.numel // s.vector), ("vector_element",), start="ft_first",
                       **grid)
        return ("grid", Block("aligned", ("vector_scalars", vectors, "vector_rest")), elements)
    rows, inner = math.prod(s.outer_loops), math.prod(s.inner_loops)
    if s.variant == "rows_thread":  # a thread per row, the row in order
        row = Loop("ft_j", str(inner), ("inner_index", "element", "fold"), ctype=it)
        return ("step", Loop("ft_row", str(rows), ("outer_index", "acc", row, "store"),
                             start=thread, **grid))
    if s.variant == "rows_block":  # a block per row, its threads strided over the row
        row = Loop("ft_j", str(inner), ("inner_index", "element", "fold"), start="threadIdx.x",
                   step=" += blockDim.x", ctype=it)
        return (Loop("ft_row", str(rows), ("outer_index", "acc", row, "block_reduce",
                                           Block("first_thread", ("store",))),
                     start="blockIdx.x", step=" += gridDim.x", ctype=it),)
    # full: a grid-stride loop, each block's partial, the last block to finish folds them
    partials = Loop("ft_b", "gridDim.x", ("partial_fold",), start="threadIdx.x",
                    step=" += blockDim.x", ctype="unsigned int")
    return ("last_flag", "acc", "step",
            Loop("ft_i", str(k.numel), ("full_index", "element", "fold"), start=thread, **grid),
            "block_reduce", Block("first_thread", ("publish",)), "sync",
            Block("last_block", ("acc_reset", partials, "block_reduce",
                                 Block("first_thread", ("store", "count_reset")))))


def _cuda_choices(k) -> CudaStrategy:
    if k.template is not None:  # a thread per output element
        strides = tuple(p.strides for p in k.params)
        return CudaStrategy(loops=k.shape, strides=strides, variant=k.template,
                            index_type=_index_type(k, k.shape, strides, 0))
    flat = _flat(k)
    loops, strides, reduced = _trailing(k, flat)
    if not k.reduced:
        return CudaStrategy(loops=loops, strides=tuple(strides), variant="pointwise",
                            index_type=_index_type(k, loops, strides, 0), flat=flat,
                            vector=_vector_width(k, flat))
    n = sum(reduced)
    out = next(i for i, p in enumerate(k.params) if p is k.reduce_out)
    strides[out] = strides[out][:len(loops) - n]
    rows, inner = math.prod(loops[:len(loops) - n]), math.prod(loops[len(loops) - n:])
    threads = THREADS
    if OPS[k.reduce_op].reduction.index:
        variant = "rows_thread"  # a scan in order: the index is the first extreme's
    elif n == len(loops):
        variant = "full"
    elif inner <= SMALL_ROW or (rows >= THREADS and
                                _rows_side_by_side(k, len(loops) - n, strides)):
        variant = "rows_thread"
    else:
        variant = "rows_block"
        threads = min(THREADS, max(32, -(-inner // 32) * 32))
    return CudaStrategy(loops=loops, strides=tuple(strides), variant=variant,
                        index_type=_index_type(k, loops, strides, n), threads=threads,
                        reduce_inner=n)


STRATEGIES = {"c": c_strategy, "cuda": cuda_strategy}


def schedule(k, backend: str):
    """`k` with the loop structure `backend` runs it by, named by the digest of both parts
    (kernels named alike are defined once per module)."""
    k = dataclasses.replace(k, strategy=STRATEGIES[backend](k))
    k.name = f"ft_{k.kind}_{digest(k)}"
    return k

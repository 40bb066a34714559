"""The loop nests of the kernels with templates of their own, as data (codegen/printer.py
`Loop`, `Block`), beside the loop kernels' nests in codegen/strategy.py: the template holds
only what lies between the loops (declarations, the statements at each loop level) and
prints the nest with the one printer, `nest(...)`.

- fold2d (col2im), a compiled program's group (`LoopKernel.template`): `fold2d_c`,
  `fold2d_cuda`, from the kernel (`strategy.c_nest`/`cuda_nest` call them).
- max pooling's scan (templates/c/max_pool2d.c.j2): values and indices, or the gradient at
  the picks. Its geometry and blocking is a `Pool` (the eager kernel's, runtime/eager_kernels.py
  `_build_pool`, or a compiled group's, `pool_of`, held as `CStrategy.geometry`), its nest
  `max_pool_c(pool)`.
- the LSTM layer's kernels (templates/c/lstm_scan.c.j2, runtime/recurrent.py): `lstm_c()`, a
  nest per C function (the hidden size is the template's constant H, the rest arguments).
- the convolution kernels (templates/c/conv2d.c.j2, runtime/conv.py): `conv2d_c()`, a nest
  per C function (the geometry is the template's: constants or arguments).
"""
from __future__ import annotations

from dataclasses import dataclass

from .printer import Block, Loop

# the template of every compiled max pooling kernel (`Role.WINDOW_SCAN`): a values-and-indices
# group and the gradient both print max_pool2d.c.j2's scan with a `Pool`
POOL_TEMPLATE = "max_pool2d_group"
THREAD = "({it})blockIdx.x * blockDim.x + threadIdx.x"  # a thread's first element in a grid


def fold2d_c(k, s) -> tuple:
    """fold2d (templates/c/fold2d.c.j2): per image plane (in parallel where `s.parallel`),
    the plane zeroed, then each window element added in, i and j in the order numpy's kh*kw
    strided adds take (the same sums), y and x over the window positions that land inside."""
    n, c, h, w = k.shape
    kh, kw = k.attrs["kernel"]
    x = Loop("x", "x_hi", ("add",), start="x_lo", pragma="simd" if s.simd else "")
    y = Loop("y", "y_hi", ("row", x), start="y_lo")
    i = Loop("i", f"{kh}L", ("y_bounds", Loop("j", f"{kw}L", ("x_bounds", y))))
    plane = ("plane", Loop("q", f"{h * w}L", ("zero",)), i)
    return (Loop("p", f"{n * c}L", plane, pragma="parallel" if s.parallel else ""),)


def fold2d_cuda(k, s) -> tuple:
    """fold2d as a gather (templates/cuda/fold2d.cu.j2): a grid-stride loop over the image's
    elements, each adding the window elements that land on it, i then j (the C kernel's
    order)."""
    n, c, h, w = k.shape
    kh, kw = k.attrs["kernel"]
    it = s.index_type
    taps = Loop("i", str(kh), ("row_tap", Loop("j", str(kw), ("tap",), ctype=it)), ctype=it)
    return ("step", Loop("ft_i", str(n * c * h * w), ("pixel", taps, "store"),
                         start=THREAD.format(it=it), step=" += ft_step", ctype=it))


# a block of output rows gathers each window position's elements into a row of its own of
# at most this many elements (a local array: 16-32 KiB of stack)
POOL_ROW_ELEMENTS = 4096


@dataclass(frozen=True)
class Pool:
    """Max pooling of x [N, C, H, W] (element `strides`) over `kernel` windows with -inf
    `padding` on each side and `extra` more at the bottom and right (ceil_mode's last
    windows), to [N, C, OH, OW] (`out_hw`): its values and indices (`values`, `indices`: which
    the kernel writes), or with `grad_strides` (the cotangent's) the gradient's scan."""
    shape: tuple
    strides: tuple
    out_hw: tuple
    kernel: tuple
    stride: tuple
    padding: tuple
    dilation: tuple
    extra: tuple
    parallel: bool  # planes in parallel (PARALLEL_WORK)
    values: bool = True
    indices: bool = True
    grad_strides: tuple | None = None

    @property
    def padded_hw(self) -> tuple:
        return tuple(n + 2 * p + e for n, p, e in zip(self.shape[2:], self.padding, self.extra))

    @property
    def padded(self) -> bool:
        """Whether the scan reads a copy of each plane with its -inf border."""
        return self.padded_hw != tuple(self.shape[2:])

    @property
    def src_strides(self) -> tuple:
        """The strides of the rows and columns the scan reads (the copy's, or x's own)."""
        return (self.padded_hw[1], 1) if self.padded else tuple(self.strides[2:])

    @property
    def rows(self) -> int:
        """Output rows per block (their gathered window rows fit POOL_ROW_ELEMENTS)."""
        kh, kw = self.kernel
        return min(self.out_hw[0], max(1, POOL_ROW_ELEMENTS // (kh * kw * self.out_hw[1])))


def pool_of(k, parallel: bool) -> Pool:
    """The Pool of a compiled program's max pooling kernel (codegen/lower.py: the values and
    indices group, whose attributes hold its output's geometry, or the gradient, whose
    cotangent in1 has that geometry)."""
    x, a = k.params[0], k.attrs
    geo = dict(shape=tuple(x.node.shape), strides=tuple(x.strides), kernel=a["kernel"],
               stride=a["stride"], padding=a["padding"], dilation=a["dilation"],
               parallel=parallel)
    if "out_hw" in a:
        return Pool(out_hw=a["out_hw"], extra=a["extra"], values=a["values"],
                    indices=a["indices"], **geo)
    g = k.params[1]
    out_hw = tuple(g.node.shape[2:])
    extra = tuple(max(0, (o - 1) * s + d * (kn - 1) + 1 - (n + 2 * p)) for o, s, d, kn, n, p in
                  zip(out_hw, a["stride"], a["dilation"], a["kernel"], x.node.shape[2:],
                      a["padding"]))
    return Pool(out_hw=out_hw, extra=extra, values=False, indices=False,
                grad_strides=tuple(g.strides), **geo)


def max_pool_c(g: Pool) -> tuple:
    """Per plane (in parallel where large): the gradient's plane zeroed; the plane copied with
    its -inf border (where there is padding; without memory for it, the windows' positions
    tested instead); then per block of output rows, the window positions' rows gathered, the
    scan over whole rows one window position after the other, the gradient added or the
    indices stored."""
    n, c, h, w = g.shape
    (oh, ow), (kh, kw), (hp, wp) = g.out_hw, g.kernel, g.padded_hw
    plane: tuple = ("plane",)
    if g.grad_strides is not None:
        plane += ("grad_plane", Loop("i", f"{h * w}L", ("grad_zero",)))
    if g.padded:
        taps = Loop("i", f"{kh}L", ("tested_row", Loop("j", f"{kw}L", ("tested_tap",))))
        tested = Loop("y", f"{oh}L", (Loop("x", f"{ow}L", ("tested_init", taps,
                                                           "tested_store")),))
        plane += ("padded_alloc", Block("no_memory", (tested, "next_plane")),
                  Loop("r", f"{hp}L", (Loop("q", f"{wp}L", ("pad_copy",)),)), "src_padded")
    else:
        plane += ("src_plane",)
    per_row = f"m / {ow}L"
    gather = Loop("i", f"{kh}L", (Loop("j", f"{kw}L", (Loop("y", per_row, (
        Loop("x", f"{ow}L", ("gather",)),)),)),))
    block: tuple = ("block_rows", gather, "best", Loop("x", "m", ("scan_init",)),
                    Loop("k", str(kh * kw), ("tap_offset", Loop("x", "m", ("scan_step",),
                                                                pragma="simd")), ctype="int"))
    if g.grad_strides is not None:
        block += (Loop("y", per_row, ("origin", Loop("x", f"{ow}L", ("grad_add",)))),)
    if g.indices:
        block += ("where", Loop("y", per_row, ("origin", Loop("x", f"{ow}L", ("index_store",),
                                                              pragma="simd"))))
    plane += ("rows_decl", Loop("y0", f"{oh}L", block, step=f" += {g.rows}L"))
    if g.padded:
        plane += ("free",)
    return (Loop("p", f"{n * c}L", plane, pragma="parallel" if g.parallel else ""),)


def lstm_c() -> dict:
    """The loops of the LSTM layer's kernels (templates/c/lstm_scan.c.j2), per function: the
    packing of w_hh, the register-blocked product (blocks of NB columns, 4 rows at a time),
    the pointwise step over the batch's rows, and the recurrence over time on each thread's
    range of rows."""
    vectors = dict(stop="NV", ctype="int")
    block = (Loop("r", "4", (Loop("v", body=("block_zero",), **vectors),), ctype="int"),
             Loop("k", "K", ("block_w_decl", Loop("v", body=("block_w",), **vectors),
                             Loop("r", "mr", ("block_row", Loop("v", body=("block_fma",),
                                                                **vectors)), ctype="int"))),
             Loop("r", "mr", (Loop("v", body=("block_store",), **vectors),), ctype="int"))
    def elements(part): return Loop("j", "H", (part,), pragma="simd")  # noqa: E704
    return {
        "pack": (Loop("n0", "N", (Loop("k", "K", (Loop("c", "NB", ("pack_element",)),)),),
                      step=" += NB"),),
        "block": ("block_acc", *block),
        "product": (Loop("n0", "N", ("product_panel", Loop("r", "rows - 3", ("product_rows",),
                                                           step=" += 4"), "product_tail"),
                         step=" += NB"),),
        "forward_step": ("forward_parts",
                         Loop("b", "b1", ("forward_row", elements("forward_element")), start="b0")),
        "backward_step": ("backward_parts",
                          Loop("b", "b1", ("backward_row", elements("backward_element")),
                               start="b0")),
        "forward": ("forward_setup", Loop("part", "parts", ("forward_rows", Loop(
            "s", "t_len", ("forward_time",), also="b0 < b1")), pragma="parallel_parts",
            ctype="int")),
        "backward": ("backward_setup", Loop("part", "parts", ("backward_rows", Loop(
            "s", "0", ("backward_time",), start="t_len - 1", cmp=">=", step="--",
            also="b0 < b1")), pragma="parallel_parts", ctype="int"),
            Loop("b", "batch", ("carry",))),
    }


def _unrolled(var: str, stop: str, body: tuple, times: int) -> Loop:
    """A loop over a tile's vectors or broadcasts, unrolled: its accumulators in registers."""
    return Loop(var, stop, body, pragma=f"unroll_{times}", ctype="int")


def conv2d_c() -> dict:
    """The loops of the convolution kernels (templates/c/conv2d.c.j2), per C function: the
    register tile, the windows' offsets, the batch and its chunks (OpenMP's dynamic loop
    inside a region whose threads each hold their scratch), and per sample its groups, their
    tiles and what is stored or added back. Tile loops unroll (`_unrolled`)."""
    def by_sample(part, body): return Loop("n", "N", (part, "sample_image", *body),  # noqa: E704
                                           pragma="for_dynamic")
    def by_chunk(part, body): return Loop("ch", "NC", (Loop(  # noqa: E704
        "n", "(ch + 1) * N / NC", (part, "sample_image", *body), start="ch * N / NC"),),
        pragma="for_dynamic")
    def region(part, loop, free): return Block("", (part, loop, free),  # noqa: E704
                                               pragma="parallel_region")
    def gw_out(part): return Loop("grp", "G", (Loop("o", "og", (Loop(  # noqa: E704
        "k", "K", (part,)),)),))
    def ro(body): return _unrolled("o", "FT_RO", body, 16)  # noqa: E704
    def qb(body): return _unrolled("b", "QB", body, 4)  # noqa: E704
    def kb(body): return _unrolled("b", "KB", body, 4)  # noqa: E704
    rows_tile = Loop("q0", "Q", ("fr_acc", ro((qb(("fr_zero",)),)), Loop("k", "K", (
        "fr_xk", qb(("fr_xv",)), ro(("fr_s", qb(("fr_fma",)))))), ro((qb(("fr_store",)),))),
        step=" += QB * VL")
    rows_out = Loop("o", "og", ("fr_bias", Loop("oy", "OH", ("fr_rows", Loop(
        "ox", "OW", ("fr_add",))))))
    rows_weight = Loop("k0", "K", ("gwr_acc", ro((kb(("gwr_zero",)),)), "gwr_xk_decl",
                                   kb(("gwr_xk",)),
                                   Loop("q", "qp", ("gwr_xv_decl", kb(("gwr_xv",)), ro((
                                       "gwr_gv", kb(("gwr_fma",))))), step=" += VL"),
                                   Loop("o", "og", (Loop("b", "KB", ("gwr_sum_init", Loop(
                                       "v", "VL", ("gwr_sum",)), "gwr_sum_store"),
                                       ctype="int"),), ctype="int")),
                       step=" += KB")
    tiles = Loop("p0", "P", (Loop("o0", "og", ("f_tile", Loop("o", "no", ("f_bias", Loop(
        "j", "np", ("f_store",))))), step=" += FT_STEP(og, o0)"),), step=" += FT_PB(P - p0)")
    gw_tiles = Loop("k0", "K", (Loop("o0", "og", ("gw_tile",), step=" += FT_STEP(og, o0)"),),
                    step=" += FT_PB(K - k0)")
    gi_tiles = Loop("k0", "K", (Loop("p0", "Q", ("gi_tile",), step=" += FT_STEP(Q, p0)"),),
                    step=" += FT_PB(K - k0)")
    added = Loop("k", "K", ("gi_base", Block("gi_if_wide", (Loop(
        "q", "Q", ("gi_wide_add",), pragma="simd"), "continue")), Loop("oy", "OH", (
            "gi_row", Block("gi_if_sw1", (Loop("ox", "OW", ("gi_add",), pragma="simd"),)),
            Block("else", (Loop("ox", "OW", ("gi_add_strided",)),))))))
    return {
        "tile": ("tile_acc", _unrolled("v", "nv", (_unrolled("j", "pb", ("tile_zero",), 16),),
                                       4),
                 Loop("r", "R", ("tile_av_decl", _unrolled("v", "nv", ("tile_av",), 4),
                                 "tile_xr", _unrolled("j", "pb", ("tile_s", _unrolled(
                                     "v", "nv", ("tile_fma",), 4)), 16))),
                 _unrolled("v", "nv", (_unrolled("j", "pb", ("tile_store",), 16),), 4)),
        "offsets": ("geometry", Loop("k", "kt", ("koff",)), Loop("p", "pt", ("poff",))),
        "sum_chunks": (Loop("ch", "nc", (Loop("i", "size", ("chunk_add",)),), start="1"),),
        "image": ("geometry", "image_head", Loop("c", "C", (Loop("i", "H", ("image_row",)),)),
                  "image_return"),
        "forward_rows": ("geometry", "fr_decl", Block("if_ok", (
            "fr_offsets", Loop("g", "G", (Loop("k", "K", (Loop("o", "og", ("fr_pack",)),)),)),
            region("fr_buffers", by_sample("fr_no_memory", (Loop("g", "G", (
                "fr_group", rows_tile, "fr_dropped", rows_out)),)), "fr_free"))), "end"),
        "grad_weight_rows": ("geometry", "gwr_decl", Block("if_ok", (
            "gwr_offsets",
            region("gwr_buffers", by_chunk("gwr_no_memory", (Loop("grp", "G", (
                Loop("o", "og", (Loop("oy", "OH", ("gwr_copy",)),)), "gwr_group",
                rows_weight)),)), "gwr_free"),
            "sum_chunks_call", gw_out("gwr_out"))), "gwr_end"),
        "forward": ("f_head", Block("if_ok", (
            "f_offsets", "f_pack_comment",
            Loop("g", "G", (Loop("k", "K", (Loop("o", "ogp", ("f_pack",)),)),)),
            region("f_buffers", by_sample("f_no_memory", (Loop("g", "G", (
                "f_group", tiles)),)), "f_free"))), "f_end"),
        "grad_weight": ("gw_head", Block("if_ok", (
            "gw_offsets",
            region("gw_buffers", by_chunk("gw_no_memory", (Loop("grp", "G", (
                "gw_gt_head", Loop("o", "og", (Loop("p", "P", ("gw_gt",)),)), "gw_group",
                gw_tiles)),)), "gw_free"),
            "sum_chunks_call", gw_out("gw_out"))), "gw_end"),
        "grad_input": ("gi_head", Block("if_ok", (
            Loop("o", "og", ("gi_offo",)), Loop("o", "O", ("gi_wk",)),
            region("gi_buffers", Loop("n", "N", (
                "gi_no_memory", Loop("o", "O", (Loop("oy", "OH", ("gi_copy",)),)), "gi_dst",
                Loop("grp", "G", (gi_tiles, "gi_added_comment", added)),
                Block("gi_if_xs", (Loop("c", "C", (Loop("i", "H", ("gi_unpad",)),)),))),
                pragma="for_dynamic"), "gi_free"))), "gi_end"),
    }


def _max_pool_group(k, s) -> tuple:
    return max_pool_c(s.geometry)


C_NESTS = {"fold2d": fold2d_c, POOL_TEMPLATE: _max_pool_group}
CUDA_NESTS = {"fold2d": fold2d_cuda}


def geometry(k, parallel: bool):
    """A template kernel's own constants its strategy holds (`CStrategy.geometry`), or None."""
    return pool_of(k, parallel) if k.template == POOL_TEMPLATE else None


def c_nest(k, s) -> tuple:
    """The C nest of template kernel `k` under its strategy `s`; () for a template that
    writes its own loops."""
    make = C_NESTS.get(k.template)
    return make(k, s) if make is not None else ()


def cuda_nest(k, s) -> tuple:
    make = CUDA_NESTS.get(k.template)
    return make(k, s) if make is not None else ()

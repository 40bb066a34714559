"""A 2-d convolution as one primitive, with its two gradients (issue 13: conv nets in eager).

Composed of primitives (nn/_functional/conv.py), a convolution is an im2col copy of its input
(`unfold2d` reshaped: [N, Cg*kh*kw, OH*OW], 25 times a LeNet input's size), a batch of small
BLAS products, and for the input's gradient a `fold2d`. The copy and the page faults of a fresh
buffer for it every step cost as much as the products, and the weight's gradient is 64 small
products summed. PyTorch's CPU convolution is one op (mkldnn_convolution); so is this one:

    conv2d(x [N, C, H, W], w [O, C/groups, kh, kw][, bias [O]], stride, padding, dilation,
           groups) -> [N, O, OH, OW]     (the bias added as the outputs are stored)
    conv2d_grad_input(g [N, O, OH, OW], w, size=(H, W), ...)        -> [N, C, H, W]
    conv2d_grad_weight(x, g [N, O, OH, OW], kernel=(kh, kw), ...)   -> [O, C/groups, kh, kw]

All three are bilinear, so their VJPs are each other: with y = conv2d(x, w), the input's
gradient is the transposed convolution conv2d_grad_input(g, w), the weight's is
conv2d_grad_weight(x, g); the VJP of conv2d_grad_input(g, w) for a cotangent u is
(conv2d(u, w), conv2d_grad_weight(u, g)) and that of conv2d_grad_weight(x, g) for v is
(conv2d_grad_input(g, v), conv2d(x, v)). Double backward (a gradient penalty) therefore works
as in PyTorch, to any order.

The eager implementations here are the reference, on any array module (no numpy in ir/): the
windows copied out of a strided view, one batched product, the windows added back. The CPU
eager table runs C kernels instead (runtime/conv.py: implicit im2col, no windows in memory).
"""
from __future__ import annotations

from . import dtypes as dt
from .ops import _def, _window_out, arg

ATTRS = ("stride", "padding", "dilation", "groups")


def _geometry(x: tuple, w: tuple, a: dict) -> tuple:
    """(OH, OW) of a convolution of an input of shape x with a weight of shape w; PyTorch's
    message where the shapes do not fit (nn/_functional/conv.py checks the user's call first,
    with the messages of each case)."""
    (sh, sw), (ph, pw), (dh, dw), groups = (a["stride"], a["padding"], a["dilation"],
                                            a["groups"])
    if len(x) != 4 or len(w) != 4 or w[0] % groups or x[1] != w[1] * groups:
        raise RuntimeError(f"conv2d: input {list(x)} and weight {list(w)} do not fit "
                           f"groups={groups}")
    oh, ow = _window_out(x[2], w[2], sh, ph, dh), _window_out(x[3], w[3], sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input size: ({x[1]}x{x[2]}x{x[3]}). Calculated output size: "
                           f"({w[0]}x{oh}x{ow}). Output size is too small")
    return oh, ow


def _conv_shape(shapes, a):
    x, w = shapes[0], shapes[1]
    if len(shapes) == 3 and tuple(shapes[2]) != (w[0],):
        raise RuntimeError(f"conv2d: a bias {list(shapes[2])} for {w[0]} output channels")
    return (x[0], w[0]) + _geometry(x, w, a)


def _grad_input_shape(shapes, a):
    g, w = shapes
    x = (g[0], w[1] * a["groups"]) + tuple(a["size"])
    if tuple(g) != _conv_shape((x, w), a):
        raise RuntimeError(f"conv2d_grad_input: cotangent {list(g)} for an input {list(x)} "
                           f"and weight {list(w)}")
    return x


def _grad_weight_shape(shapes, a):
    x, g = shapes
    w = (g[1], x[1] // a["groups"]) + tuple(a["kernel"])
    if tuple(g) != _conv_shape((x, w), a):
        raise RuntimeError(f"conv2d_grad_weight: cotangent {list(g)} for an input {list(x)} "
                           f"and weight {list(w)}")
    return w


def _float_dtype(dtypes, _a):
    if any(d is not dtypes[0] for d in dtypes) or dtypes[0] not in (dt.float32, dt.float64):
        raise RuntimeError(f"conv2d: float32 or float64 inputs of one dtype, got {dtypes}")
    return dtypes[0]


def windows(xp, x, kernel: tuple, a: dict):
    """im2col: the windows of x [N, C, H, W] as a new array [N, C, kh, kw, OH, OW]."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, a["stride"], a["padding"], a["dilation"]
    if ph or pw:
        x = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, w = x.shape
    oh, ow = _window_out(h, kh, sh, 0, dh), _window_out(w, kw, sw, 0, dw)  # (padded already)
    s0, s1, s2, s3 = x.strides
    # one copy of a strided view (on a GPU one launch, where a copy per window position
    # would be kh * kw)
    view = xp.lib.stride_tricks.as_strided(x, (n, c, kh, kw, oh, ow),
                                           (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw))
    return xp.ascontiguousarray(view)


def _conv(xp):
    def conv2d(x, w, bias=None, **a):
        n, groups, (o, cg, kh, kw) = x.shape[0], a["groups"], w.shape
        cols = windows(xp, x, (kh, kw), a)
        oh, ow = cols.shape[4], cols.shape[5]
        cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
        out = xp.matmul(w.reshape(groups, o // groups, cg * kh * kw), cols)
        out = out.reshape(n, o, oh, ow)
        if bias is not None:
            out += bias.reshape(o, 1, 1)
        return out
    return conv2d


def _conv_grad_input(xp):
    def conv2d_grad_input(g, w, *, size, **a):
        (n, o, oh, ow), groups, (_, cg, kh, kw) = g.shape, a["groups"], w.shape
        k = cg * kh * kw
        wt = w.reshape(groups, o // groups, k).swapaxes(1, 2)
        cols = xp.matmul(wt, g.reshape(n, groups, o // groups, oh * ow))
        cols = cols.reshape(n, groups * cg, kh, kw, oh, ow)
        (sh, sw), (ph, pw), (dh, dw) = a["stride"], a["padding"], a["dilation"]
        h, wd = size
        out = xp.zeros((n, groups * cg, h + 2 * ph, wd + 2 * pw), g.dtype)
        for i in range(kh):
            for j in range(kw):
                out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                    j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
        return out[:, :, ph:ph + h, pw:pw + wd]
    return conv2d_grad_input


def _conv_grad_weight(xp):
    def conv2d_grad_weight(x, g, *, kernel, **a):
        (n, o, oh, ow), groups, c = g.shape, a["groups"], x.shape[1]
        k = c // groups * kernel[0] * kernel[1]
        cols = windows(xp, x, tuple(kernel), a).reshape(n, groups, k, oh * ow)
        gg = g.reshape(n, groups, o // groups, oh * ow)
        out = xp.matmul(gg, cols.swapaxes(2, 3)).sum(axis=0)
        return out.reshape((o, c // groups) + tuple(kernel))
    return conv2d_grad_weight


def _conv_attrs(n) -> dict:
    return {k: n.attrs[k] for k in ATTRS}


def _vjp_conv(b, n, g):
    x, w = arg(n, 0), arg(n, 1)
    a = _conv_attrs(n)
    grads = (b.op("conv2d_grad_input", g, b.value(w), size=tuple(x.shape[2:]), **a),
             b.op("conv2d_grad_weight", b.value(x), g, kernel=tuple(w.shape[2:]), **a))
    if len(n.inputs) == 3:  # the bias's: the cotangent summed over all but the channels
        grads += (b.op("sum", g, dims=(0, 2, 3), keepdim=False),)
    return grads


def _vjp_grad_input(b, n, u):
    g, w = arg(n, 0), arg(n, 1)
    a = _conv_attrs(n)
    return (b.op("conv2d", u, b.value(w), **a),
            b.op("conv2d_grad_weight", u, b.value(g), kernel=tuple(w.shape[2:]), **a))


def _vjp_grad_weight(b, n, v):
    x, g = arg(n, 0), arg(n, 1)
    a = _conv_attrs(n)
    return (b.op("conv2d_grad_input", b.value(g), v, size=tuple(x.shape[2:]), **a),
            b.op("conv2d", b.value(x), v, **a))


def _conv_parts(n, make):
    """im2col + one batched product (ONNX export where no Conv computes the node): the
    windows [N, G, Cg*kh*kw, OH*OW] times the weight [G, O/G, Cg*kh*kw], in NCHW order."""
    x, w, meta = arg(n, 0), arg(n, 1), n.meta
    groups, (o, cg, kh, kw), (nb, _, oh, ow) = n.attrs["groups"], w.shape, n.shape
    k = cg * kh * kw
    u = make("unfold2d", [x], {"kernel": (kh, kw), "stride": n.attrs["stride"],
                               "padding": n.attrs["padding"], "dilation": n.attrs["dilation"],
                               "pad_value": 0.0}, meta)
    cols = make("reshape", [u], {"shape": (nb, groups, k, oh * ow)}, meta)
    wm = make("reshape", [w], {"shape": (groups, o // groups, k)}, meta)
    out = make("reshape", [make("matmul", [wm, cols], {}, meta)], {"shape": n.shape}, meta)
    if len(n.inputs) == 3:
        out = make("add", [out, make("reshape", [arg(n, 2)], {"shape": (o, 1, 1)}, meta)], {},
                   meta)
    return out


_def("conv2d", "extern", None, _conv_shape, _float_dtype, attrs=ATTRS, eager=_conv,
     vjp=_vjp_conv, saves=(0, 1), grad_name="ConvolutionBackward0", kept_whole=True,
     composition=_conv_parts,
     doc="2-d cross-correlation of x [N, C, H, W] with w [O, C/groups, kh, kw], plus a bias "
         "[O] where given: [N, O, OH, OW]")
def _grad_input_parts(n, make):
    """One batched product into windows, fold2d (col2im) adding them into the image: the
    transposed convolution (ONNX export where no ConvTranspose computes the node)."""
    g, w, meta, a = arg(n, 0), arg(n, 1), n.meta, n.attrs
    groups, (o, cg, kh, kw), (nb, _, oh, ow) = a["groups"], w.shape, g.shape
    k = cg * kh * kw
    wt = make("permute", [make("reshape", [w], {"shape": (groups, o // groups, k)}, meta)],
              {"perm": (0, 2, 1)}, meta)
    gm = make("reshape", [g], {"shape": (nb, groups, o // groups, oh * ow)}, meta)
    cols = make("reshape", [make("matmul", [wt, gm], {}, meta)],
                {"shape": (nb, groups * cg, kh, kw, oh, ow)}, meta)
    return make("fold2d", [cols], {"size": tuple(a["size"]), "kernel": (kh, kw),
                                   "stride": a["stride"], "padding": a["padding"],
                                   "dilation": a["dilation"]}, meta)


_def("conv2d_grad_input", "extern", 2, _grad_input_shape, _float_dtype,
     attrs=ATTRS + ("size",), eager=_conv_grad_input, vjp=_vjp_grad_input, saves=(0, 1),
     kept_whole=True, composition=_grad_input_parts,
     grad_name="ConvolutionBackwardBackward0",
     doc="conv2d's input gradient for a cotangent g [N, O, OH, OW] (the transposed "
         "convolution): [N, C, H, W], H, W = size")
_def("conv2d_grad_weight", "extern", 2, _grad_weight_shape, _float_dtype,
     attrs=ATTRS + ("kernel",), eager=_conv_grad_weight, vjp=_vjp_grad_weight, saves=(0, 1),
     grad_name="ConvolutionBackwardBackward0",
     doc="conv2d's weight gradient for an input x and a cotangent g [N, O, OH, OW]: "
         "[O, C/groups, kh, kw]")

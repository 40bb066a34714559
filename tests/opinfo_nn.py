"""The nn half of the OpInfo registry (tests/opinfo.py): nn.functional entries and one
`ModuleInfo` per layer class."""
from __future__ import annotations

import inspect
import warnings

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from opinfo import BOOL, F32, F64, I64, ModuleInfo, OpInfo, fixed, make, unary

OPS: list = []
MODULES: list = []


def add(name, variants, samples, **kw):
    OPS.append(OpInfo(name, variants, samples, **kw))


# ----------------------------------------------------------------------------- nn.functional

ACT = unary(away=(0.0, -1.0, 1.0, 3.0, -3.0, 6.0, 0.5, -0.5), f64=True)
for name, kwargs in [("relu", {}), ("celu", {}), ("celu", dict(alpha=0.5)), ("elu", {}),
                     ("gelu", {}),
                     ("gelu", dict(approximate="tanh")), ("hardsigmoid", {}), ("hardswish", {}),
                     ("hardtanh", {}), ("hardtanh", dict(min_val=-0.5, max_val=0.5)),
                     ("leaky_relu", {}), ("leaky_relu", dict(negative_slope=0.2)),
                     ("logsigmoid", {}), ("mish", {}), ("relu6", {}), ("selu", {}), ("silu", {}),
                     ("softplus", {}), ("softplus", dict(beta=2.0, threshold=1.0)),
                     ("softsign", {}), ("tanhshrink", {}), ("threshold", dict(threshold=0.5,
                                                                             value=-2.0))]:
    fn = getattr(F, name)
    v = {f"F.{name}": (lambda f, k: lambda x: f(x, **k))(fn, kwargs)}
    if name + "_" in dir(F):
        # positional: fusetorch names threshold_'s parameter `threshold_` (PyTorch: threshold)
        v[f"F.{name}_"] = (lambda f, k: lambda x: f(x.clone(), *k.values()))(getattr(F, name + "_"),
                                                                            kwargs)
    if "inplace" in inspect.signature(fn).parameters:
        v[f"F.{name}(inplace)"] = (lambda f, k: lambda x: f(x.clone(), inplace=True, **k))(fn,
                                                                                             kwargs)
    add(f"F.{name}" + ("" if not kwargs else "(" + ",".join(kwargs) + ")"), v, ACT)
add("F.dropout_eval", {"F.dropout": lambda x: F.dropout(x, 0.3, training=False),
                       "F.dropout2d": lambda x: F.dropout2d(x, 0.3, training=False),
                       "F.alpha_dropout": lambda x: F.alpha_dropout(x, 0.3, training=False),
                       "F.dropout3d": lambda x: F.dropout3d(x, 0.3, training=False),
                       "F.feature_alpha_dropout": lambda x: F.feature_alpha_dropout(
                           x, 0.3, training=False)},
    fixed(("f32", lambda r: [make(r, (2, 3, 4, 2))]), ("perm", lambda r: [make(r, (2, 3, 4, 3),
                                                                               layout="t")])))
add("F.dropout1d_eval", {"F.dropout1d": lambda x: F.dropout1d(x, 0.3, training=False)},
    fixed(("f32", lambda r: [make(r, (2, 3, 4))]), ("perm", lambda r: [make(r, (2, 3, 4),
                                                                            layout="t")])))
add("F.linear", {"F.linear": F.linear},
    fixed(("bias", lambda r: [make(r, (3, 6)), make(r, (4, 6)), make(r, (4,))]),
          ("nobias_batched", lambda r: [make(r, (2, 3, 6), layout="t"), make(r, (4, 6))]),
          ("f64_1d", lambda r: [make(r, (6,), F64), make(r, (4, 6), F64), make(r, (4,), F64)])))
add("F.bilinear", {"F.bilinear": F.bilinear},
    fixed(("bias", lambda r: [make(r, (3, 4)), make(r, (3, 5)), make(r, (2, 4, 5)),
                              make(r, (2,))]),
          ("nobias", lambda r: [make(r, (3, 4), F64), make(r, (3, 5), F64),
                                make(r, (2, 4, 5), F64)])))
add("F.conv2d", {"F.conv2d": F.conv2d},
    fixed(("basic", lambda r: [make(r, (2, 3, 7, 6)), make(r, (4, 3, 3, 3)), make(r, (4,))]),
          ("stride_pad_dil", lambda r: ([make(r, (2, 3, 7, 6)), make(r, (4, 3, 3, 2))],
                                        dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2)))),
          ("groups_f64", lambda r: ([make(r, (1, 4, 6, 6), F64), make(r, (6, 2, 3, 3), F64)],
                                    dict(groups=2, padding=1))),
          ("perm_input", lambda r: ([make(r, (2, 3, 6, 7), layout="t"), make(r, (2, 3, 1, 1))],
                                    {}))))
add("F.conv1d", {"F.conv1d": F.conv1d},
    fixed(("basic", lambda r: [make(r, (2, 3, 9)), make(r, (4, 3, 3)), make(r, (4,))]),
          ("stride_pad", lambda r: ([make(r, (2, 4, 9), F64), make(r, (2, 2, 3), F64)],
                                    dict(stride=2, padding=1, groups=2)))))
POOL_IN = fixed(("f32", lambda r: [make(r, (2, 3, 8, 6))]),
                ("perm", lambda r: [make(r, (2, 3, 8, 6), layout="t")]),
                ("f64", lambda r: [make(r, (1, 2, 7, 7), F64)]))
POOL3_IN = fixed(("f32", lambda r: [make(r, (2, 2, 5, 4, 6))]),
                 ("f64_perm", lambda r: [make(r, (1, 3, 4, 5, 4), F64, layout="t")]))
POOL1_IN = fixed(("f32", lambda r: [make(r, (2, 3, 8))]),
                 ("f64_slice", lambda r: [make(r, (2, 3, 8), F64, layout="s")]))
for name, args, samples in [
    ("avg_pool2d", (2,), POOL_IN), ("avg_pool2d(3,2,1)", (3, 2, 1), POOL_IN),
    ("avg_pool2d(ceil)", dict(kernel_size=3, stride=2, ceil_mode=True,
                              count_include_pad=False), POOL_IN),
    ("max_pool2d", (2,), POOL_IN), ("max_pool2d(3,2,1,dil)", dict(kernel_size=3, stride=2,
                                                                  padding=1, dilation=1), POOL_IN),
    ("max_pool2d(ceil)", dict(kernel_size=3, stride=2, ceil_mode=True), POOL_IN),
    ("max_pool2d_with_indices", (2,), POOL_IN),
    ("adaptive_avg_pool2d", ((4, 3),), POOL_IN),
    ("adaptive_avg_pool2d(uneven)", ((3, 4),), POOL_IN),
    ("adaptive_max_pool2d", ((3, 4),), POOL_IN),
    ("lp_pool2d", (2.0, 2), fixed(("f32", lambda r: [make(r, (2, 3, 8, 6), F32, 0.2, 2)]))),
    ("avg_pool1d", (3, 2, 1), POOL1_IN), ("max_pool1d", (2,), POOL1_IN),
    ("max_pool1d_with_indices", (3, 2), POOL1_IN),
    ("adaptive_avg_pool1d", (3,), POOL1_IN), ("adaptive_max_pool1d", (3,), POOL1_IN),
    ("lp_pool1d", (2.0, 3, 2), fixed(("f32", lambda r: [make(r, (2, 3, 8), F32, 0.2, 2)]))),
    ("max_pool3d", (2,), POOL3_IN),
    ("max_pool3d(pad,dil,ceil)", dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                      padding=(1, 1, 0), dilation=(2, 1, 1), ceil_mode=True),
     POOL3_IN),
    ("max_pool3d_with_indices", (2, 1, 1), POOL3_IN),
    ("avg_pool3d", (2,), POOL3_IN),
    ("avg_pool3d(pad,ceil)", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                  count_include_pad=False), POOL3_IN),
    ("adaptive_avg_pool3d(2,3,2)", ((2, 3, 2),), POOL3_IN),
    ("adaptive_max_pool3d", ((3, 2, 3),), POOL3_IN),
    ("adaptive_max_pool3d_with_indices", ((2, 2, 1),), POOL3_IN),
    ("lp_pool3d", (2.0, 2), fixed(("f32", lambda r: [make(r, (2, 2, 4, 4, 4), F32, 0.2, 2)]))),
]:
    fn = getattr(F, name.split("(")[0])
    call = (lambda f, a: lambda x: f(x, **a))(fn, args) if isinstance(args, dict) else \
        (lambda f, a: lambda x: f(x, *a))(fn, args)
    add(f"F.{name}", {f"F.{name.split('(')[0]}": call}, samples)
add("F.batch_norm", {
    "F.batch_norm(train)": lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
    "F.batch_norm(eval)": lambda x, w, b: F.batch_norm(x, torch.full((3,), 0.2),
                                                       torch.full((3,), 1.5), w, b)},
    fixed(("2d", lambda r: [make(r, (4, 3)), make(r, (3,)), make(r, (3,))]),
          ("4d_perm", lambda r: [make(r, (2, 3, 4, 5), layout="t"), make(r, (3,)),
                                 make(r, (3,))]),
          ("f64_3d", lambda r: [make(r, (2, 3, 5), F64), make(r, (3,), F64), make(r, (3,), F64)])))
add("F.layer_norm", {"F.layer_norm": lambda x, w, b: F.layer_norm(x, w.shape, w, b),
                     "F.layer_norm(noaffine)": lambda x, w, b: F.layer_norm(x, w.shape) * w + b},
    fixed(("last", lambda r: [make(r, (3, 4, 5)), make(r, (5,)), make(r, (5,))]),
          ("two_dims_perm", lambda r: [make(r, (3, 4, 5), layout="t"), make(r, (4, 5)),
                                       make(r, (4, 5))]),
          ("f64", lambda r: [make(r, (2, 5), F64), make(r, (5,), F64), make(r, (5,), F64)])))
add("F.group_norm", {"F.group_norm": lambda x, w, b: F.group_norm(x, 2, w, b),
                     "F.group_norm(noaffine)": lambda x, w, b: F.group_norm(x, 2)},
    fixed(("4d", lambda r: [make(r, (2, 4, 3, 5)), make(r, (4,)), make(r, (4,))]),
          ("3d_f64", lambda r: [make(r, (2, 4, 5), F64, layout="s"), make(r, (4,), F64),
                                make(r, (4,), F64)])))
add("F.embedding", {"F.embedding": F.embedding,
                    "F.embedding(padding_idx)": lambda i, w: F.embedding(i, w, padding_idx=1)},
    fixed(("2d_idx", lambda r: [make(r, (3, 4), I64, 0, 6), make(r, (6, 5))]),
          ("1d_f64", lambda r: [torch.tensor([1, 1, 5, 0]), make(r, (6, 5), F64)])))
add("F.one_hot", {"F.one_hot": lambda i: F.one_hot(i, 6) * 2},
    fixed(("1d", lambda r: [make(r, (5,), I64, 0, 6)]), ("2d", lambda r: [make(r, (3, 4), I64,
                                                                                 0, 6)])),
    grad=False)
add("F.pad", {"F.pad": F.pad},
    fixed(("constant", lambda r: [make(r, (2, 3, 4)), (1, 2)]),
          ("constant_value", lambda r: ([make(r, (2, 3, 4), F64), (1, 1, 0, 2)], dict(value=-1.))),
          ("reflect", lambda r: ([make(r, (2, 3, 5)), (2, 1)], dict(mode="reflect"))),
          ("replicate", lambda r: ([make(r, (1, 2, 3, 4), layout="t"), (1, 1, 2, 0)],
                                   dict(mode="replicate")))))

# losses: every reduction on one family of inputs
LOGITS = fixed(
    ("idx", lambda r: [make(r, (4, 5)), torch.tensor([0, 4, 2, 2])]),
    ("idx_nd", lambda r: [make(r, (2, 5, 3), layout="s"), make(r, (2, 3), I64, 0, 5)]),
    ("idx_f64", lambda r: [make(r, (4, 5), F64, layout="t"), torch.tensor([1, 3, 0, 4])]))
for red in ("mean", "sum", "none"):
    add(f"F.cross_entropy({red})", {
        "F.cross_entropy": lambda x, t, red=red: F.cross_entropy(x, t, reduction=red),
        "F.cross_entropy(weight)": lambda x, t, red=red: F.cross_entropy(
            x, t, weight=torch.linspace(0.5, 2, 5, dtype=x.dtype), reduction=red),
        "F.cross_entropy(ignore_index)": lambda x, t, red=red: F.cross_entropy(
            x, t, ignore_index=2, reduction=red),
        "F.cross_entropy(label_smoothing)": lambda x, t, red=red: F.cross_entropy(
            x, t, label_smoothing=0.1, reduction=red),
        "F.nll_loss": lambda x, t, red=red: F.nll_loss(x.log_softmax(1), t, reduction=red),
        "F.nll_loss(weight)": lambda x, t, red=red: F.nll_loss(
            x, t, weight=torch.linspace(0.5, 2, 5, dtype=x.dtype), reduction=red)}, LOGITS)
LCE = fixed(
    ("idx", lambda r: [make(r, (4, 6)), make(r, (5, 6)), torch.tensor([0, 4, 2, 2])]),
    ("unbatched_f64", lambda r: [make(r, (6,), F64), make(r, (5, 6), F64), torch.tensor(3)]))
add("F.linear_cross_entropy", {
    "F.linear_cross_entropy": lambda x, w, t: F.linear_cross_entropy(x, w, t),
    "F.linear_cross_entropy(sum,smoothing,ignore)": lambda x, w, t: F.linear_cross_entropy(
        x, w, t, reduction="sum", label_smoothing=0.1, ignore_index=2)}, LCE)
add("F.linear_cross_entropy(kdim)", {
    "F.linear_cross_entropy": lambda x, w, b, t: F.linear_cross_entropy(x, w, t, linear_bias=b,
                                                                        reduction="none")},
    fixed(("f32", lambda r: [make(r, (3, 4)), make(r, (5, 2, 4)), make(r, (5, 2)),
                             make(r, (3, 2), I64, 0, 5)])))
add("F.cross_entropy(probs)", {"F.cross_entropy": lambda x, p: F.cross_entropy(x, p.softmax(1))},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5))])))
PAIRS = fixed(("same", lambda r: [make(r, (4, 5)), make(r, (4, 5))]),
              ("perm_f64", lambda r: [make(r, (4, 5), F64, layout="t"), make(r, (4, 5), F64)]),
              ("0d", lambda r: [make(r, ()), make(r, ())]))
PROBS = fixed(("same", lambda r: [make(r, (4, 5), F32, 0.05, 0.95), make(r, (4, 5), F32, 0, 1)]),
              ("f64", lambda r: [make(r, (3, 4), F64, 0.05, 0.95, layout="t"),
                                 make(r, (3, 4), F64, 0, 1)]))
for red in ("mean", "sum", "none"):
    add(f"F.pointwise_losses({red})", {
        "F.mse_loss": lambda a, b, red=red: F.mse_loss(a, b, reduction=red),
        "F.l1_loss": lambda a, b, red=red: F.l1_loss(a, b, reduction=red),
        "F.smooth_l1_loss": lambda a, b, red=red: F.smooth_l1_loss(a, b, reduction=red, beta=0.5),
        "F.huber_loss": lambda a, b, red=red: F.huber_loss(a, b, reduction=red, delta=0.7),
        "F.kl_div": lambda a, b, red=red: F.kl_div(a.log_softmax(-1), b.softmax(-1),
                                                   reduction=red),
        "F.kl_div(log_target)": lambda a, b, red=red: F.kl_div(a, b, reduction=red,
                                                               log_target=True),
        "F.binary_cross_entropy_with_logits": lambda a, b, red=red:
            F.binary_cross_entropy_with_logits(a, b.sigmoid(), reduction=red),
    }, PAIRS)
    add(f"F.binary_cross_entropy({red})", {
        "F.binary_cross_entropy": lambda a, b, red=red: F.binary_cross_entropy(a, b,
                                                                               reduction=red),
        "F.binary_cross_entropy(weight)": lambda a, b, red=red: F.binary_cross_entropy(
            a, b, weight=b + 0.5, reduction=red)}, PROBS)
add("F.kl_div(batchmean)", {"F.kl_div": lambda a, b: F.kl_div(a.log_softmax(-1), b.softmax(-1),
                                                              reduction="batchmean")},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5))])))
add("F.bce_with_logits(weights)", {
    "F.binary_cross_entropy_with_logits(pos_weight)": lambda a, b:
        F.binary_cross_entropy_with_logits(a, b, weight=b + 1, pos_weight=torch.linspace(
            0.5, 2, 5, dtype=a.dtype))},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5), F32, 0, 1)])))

# attention (issue 11)
add("F.scaled_dot_product_attention", {
    "F.scaled_dot_product_attention": F.scaled_dot_product_attention,
    "F.scaled_dot_product_attention(causal)": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True),
    "F.scaled_dot_product_attention(scale)": lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, scale=0.3)},
    fixed(("4d", lambda r: [make(r, (2, 2, 3, 4)), make(r, (2, 2, 5, 4)), make(r, (2, 2, 5, 3))]),
          ("3d_perm_f64", lambda r: [make(r, (2, 3, 4), F64, layout="t"), make(r, (2, 5, 4), F64),
                                     make(r, (2, 5, 2), F64)])))
add("F.scaled_dot_product_attention_masks", {
    "F.scaled_dot_product_attention(mask)": F.scaled_dot_product_attention,
    "F.scaled_dot_product_attention(gqa)": lambda q, k, v, mask: F.scaled_dot_product_attention(
        q, k[:, :1], v[:, :1], attn_mask=mask, enable_gqa=True)},
    fixed(("bool", lambda r: [make(r, (2, 2, 3, 4)), make(r, (2, 2, 5, 4)), make(r, (2, 2, 5, 3)),
                              make(r, (3, 5), BOOL)]),
          ("float", lambda r: [make(r, (2, 2, 3, 4)), make(r, (2, 2, 5, 4)),
                               make(r, (2, 2, 5, 3)), make(r, (2, 1, 3, 5))])))
add("F.multi_head_attention_forward", {
    "F.multi_head_attention_forward": lambda q, kv, w, b, ow, ob, kpm:
        F.multi_head_attention_forward(q, kv, kv, 4, 2, w, b, None, None, False, 0.0, ow, ob,
                                       key_padding_mask=kpm),
    "F.multi_head_attention_forward(sdpa)": lambda q, kv, w, b, ow, ob, kpm:
        F.multi_head_attention_forward(q, kv, kv, 4, 2, w, b, None, None, True, 0.0, ow, ob,
                                       key_padding_mask=kpm, need_weights=False)[0]},
    fixed(("f32", lambda r: [make(r, (3, 2, 4)), make(r, (5, 2, 4)), make(r, (12, 4)),
                             make(r, (12,)), make(r, (4, 4)), make(r, (4,)),
                             torch.tensor([[False, False, True, False, True], [False] * 5])])))

# misc layers and losses (issue 11: norms, activations, distances, bags, more losses)
add("F.misc_activations", {
    "F.prelu": lambda x, w: F.prelu(x, w),
    "F.glu": lambda x, w: F.glu(x, 1) * w.mean(),
    "F.hardshrink": lambda x, w: F.hardshrink(x, 0.4) * w.sum(),
    "F.softshrink": lambda x, w: F.softshrink(x, 0.4) * w.sum(),
    "F.rrelu": lambda x, w: F.rrelu(x, 0.1, 0.3) * w.sum(),
    "F.rrelu_": lambda x, w: F.rrelu_(x.clone(), 0.1, 0.3) * w.sum()},
    fixed(("f32", lambda r: [make(r, (3, 4, 5), away=(0.0, 0.4, -0.4)), make(r, (4,))]),
          ("f64_perm", lambda r: [make(r, (2, 4, 3), F64, layout="t", away=(0.0, 0.4, -0.4)),
                                  make(r, (4,), F64)])))
add("F.misc_norms", {
    "F.instance_norm": lambda x, w: F.instance_norm(x, weight=w, bias=w * 0.5),
    "F.instance_norm(running)": lambda x, w: F.instance_norm(
        x, torch.full((4,), 0.2, dtype=x.dtype), torch.full((4,), 1.5, dtype=x.dtype), w,
        use_input_stats=False),
    "F.rms_norm": lambda x, w: F.rms_norm(x, (5,), w.sum() * torch.ones(5, dtype=x.dtype)),
    "F.local_response_norm": lambda x, w: F.local_response_norm(x, 3, 0.5, 0.75, 1.0) * w[0],
    "F.normalize": lambda x, w: F.normalize(x, 2.0, 1) * w[0],
    "F.normalize(p1)": lambda x, w: F.normalize(x, 1.0, -1) * w[0]},
    fixed(("f32", lambda r: [make(r, (2, 4, 5)), make(r, (4,), F32, 0.5, 2)]),
          ("f64_perm", lambda r: [make(r, (2, 4, 5), F64, layout="s"), make(r, (4,), F64, 0.5,
                                                                            2)])))
add("F.misc_distances", {
    "F.cosine_similarity": lambda a, b: F.cosine_similarity(a, b),
    "F.pairwise_distance": lambda a, b: F.pairwise_distance(a, b, 3.0),
    "F.pdist": lambda a, b: F.pdist(a) + F.pdist(b)},
    fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5))]),
          ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t"), make(r, (4, 5), F64)])))
add("F.embedding_bag", {
    "F.embedding_bag": lambda w: F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 0]), w,
                                                 torch.tensor([0, 3, 3, 6]), mode="sum"),
    "F.embedding_bag(mean_pad)": lambda w: F.embedding_bag(
        torch.tensor([[1, 2, 4], [5, 4, 3]]), w, padding_idx=4),
    "F.embedding_bag(max)": lambda w: F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 0]),
                                                      w, torch.tensor([0, 3, 6]), mode="max")},
    fixed(("f32", lambda r: [make(r, (6, 3))]), ("f64", lambda r: [make(r, (6, 3), F64)])))
for red in ("mean", "sum", "none"):
    add(f"F.margin_losses({red})", {
        "F.cosine_embedding_loss": lambda a, b, red=red: F.cosine_embedding_loss(
            a, b, torch.tensor([1, -1, 1, -1]), margin=-0.5, reduction=red),
        "F.margin_ranking_loss": lambda a, b, red=red: F.margin_ranking_loss(
            a, b, (a * 0 + 1) * torch.tensor([1.0, -1, 1, -1, 1], dtype=a.dtype), 0.1,
            reduction=red),
        "F.hinge_embedding_loss": lambda a, b, red=red: F.hinge_embedding_loss(
            a, b.sign(), 0.5, reduction=red),
        "F.soft_margin_loss": lambda a, b, red=red: F.soft_margin_loss(a, b.sign(),
                                                                        reduction=red),
        "F.triplet_margin_loss": lambda a, b, red=red: F.triplet_margin_loss(
            a, b, a * 0.5 - b, margin=3.0, swap=True, reduction=red),
        "F.triplet_margin_with_distance_loss": lambda a, b, red=red:
            F.triplet_margin_with_distance_loss(a, b, b * 0.5 - a, margin=3.0, reduction=red),
        "F.multi_margin_loss": lambda a, b, red=red: F.multi_margin_loss(
            a, torch.tensor([0, 4, 2, 1]), p=2, margin=3.0, reduction=red) + b.sum(),
        "F.multilabel_margin_loss": lambda a, b, red=red: F.multilabel_margin_loss(
            a, torch.tensor([[0, 1, -1, 0, 0], [3, 4, 2, 1, 0], [2, -1, 0, 0, 0],
                             [4, 1, -1, 2, 2]]) , reduction=red) * 0.1 + b.sum(),
        "F.multilabel_soft_margin_loss": lambda a, b, red=red: F.multilabel_soft_margin_loss(
            a, b.sigmoid(), reduction=red),
        "F.gaussian_nll_loss": lambda a, b, red=red: F.gaussian_nll_loss(
            a, b, b * b + 0.5, full=True, reduction=red),
        "F.poisson_nll_loss": lambda a, b, red=red: F.poisson_nll_loss(
            a, b * b, full=True, reduction=red)},
        fixed(("f32", lambda r: [make(r, (4, 5), away=(0.0,)), make(r, (4, 5), away=(0.0,))]),
              ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t", away=(0.0,)),
                                      make(r, (4, 5), F64, away=(0.0,))])))
    add(f"F.ctc_loss({red})", {
        "F.ctc_loss": lambda x, red=red: F.ctc_loss(
            x.log_softmax(2), torch.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2],
            reduction=red),
        "F.ctc_loss(concat)": lambda x, red=red: F.ctc_loss(
            x.log_softmax(2), torch.tensor([1, 2, 3, 3]), torch.tensor([6, 6]),
            torch.tensor([1, 3]), blank=4, reduction=red, zero_infinity=True)},
        fixed(("f32", lambda r: [make(r, (6, 2, 5))]), ("f64", lambda r: [make(r, (6, 2, 5),
                                                                                F64)])),
        grad_rtol=1e-3)
# spatial: transposed and 3-d convolution, resampling, fold/unfold, pixel shuffle
add("F.conv_transpose2d", {"F.conv_transpose2d": F.conv_transpose2d},
    fixed(("basic", lambda r: [make(r, (2, 4, 3, 4)), make(r, (4, 3, 3, 2)), make(r, (3,))]),
          ("stride_pad_outpad", lambda r: ([make(r, (2, 4, 3, 4), layout="t"),
                                             make(r, (4, 3, 3, 3))],
                                            dict(stride=2, padding=1, output_padding=(1, 0)))),
          ("groups_dil_f64", lambda r: ([make(r, (1, 4, 3, 3), F64), make(r, (4, 1, 2, 2), F64)],
                                        dict(groups=2, dilation=(3, 1), output_padding=(2, 0))))))
add("F.conv_transpose1d", {"F.conv_transpose1d": F.conv_transpose1d},
    fixed(("basic", lambda r: [make(r, (2, 3, 5)), make(r, (3, 4, 3)), make(r, (4,))]),
          ("stride_f64", lambda r: ([make(r, (2, 4, 5), F64), make(r, (4, 1, 3), F64)],
                                    dict(stride=2, padding=1, output_padding=1, groups=2)))))
add("F.conv_transpose3d", {"F.conv_transpose3d": F.conv_transpose3d},
    fixed(("basic", lambda r: [make(r, (2, 4, 3, 2, 3)), make(r, (4, 3, 2, 3, 2)), make(r, (3,))]),
          ("stride_pad_outpad_groups_f64", lambda r: (
              [make(r, (1, 4, 3, 3, 2), F64, layout="t"), make(r, (4, 1, 3, 2, 2), F64)],
              dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), groups=2,
                   dilation=(1, 2, 1))))))
add("F.conv3d", {"F.conv3d": F.conv3d},
    fixed(("basic", lambda r: [make(r, (2, 3, 4, 5, 4)), make(r, (4, 3, 2, 3, 2)),
                               make(r, (4,))]),
          ("stride_pad_groups_f64", lambda r: ([make(r, (1, 4, 5, 4, 5), F64),
                                                make(r, (2, 2, 3, 2, 2), F64)],
                                               dict(stride=(2, 1, 2), padding=1, groups=2)))))
add("F.unfold", {"F.unfold": F.unfold},
    fixed(("basic", lambda r: ([make(r, (2, 3, 5, 6))], dict(kernel_size=(2, 3), dilation=(1, 2),
                                                             padding=1, stride=(2, 1)))),
          ("unbatched_f64", lambda r: ([make(r, (3, 4, 4), F64, layout="t")],
                                       dict(kernel_size=2)))))
add("F.fold", {"F.fold": F.fold},
    fixed(("basic", lambda r: ([make(r, (2, 18, 12))], dict(output_size=(5, 6),
                                                            kernel_size=(2, 3), dilation=(1, 2),
                                                            padding=1, stride=(2, 1)))),
          ("tiling_f64", lambda r: ([make(r, (12, 4), F64)], dict(output_size=4, kernel_size=2,
                                                                  stride=2)))))
add("F.max_unpool", {
    "F.max_unpool1d": lambda x: F.max_unpool1d(*F.max_pool1d(x[:, :, 0, 0], 2,
                                                             return_indices=True), 2),
    "F.max_unpool2d": lambda x: F.max_unpool2d(*F.max_pool2d(x[:, :, 0], 2, return_indices=True),
                                               2, output_size=(5, 7)),
    "F.max_unpool3d": lambda x: F.max_unpool3d(*F.max_pool3d(x, 2, return_indices=True), 2,
                                               output_size=x.shape)},
    fixed(("f32", lambda r: [make(r, (2, 3, 4, 5, 7))]),
          ("f64_perm", lambda r: [make(r, (1, 2, 4, 5, 7), F64, layout="t")])))
add("F.channel_shuffle", {"F.channel_shuffle": lambda x: F.channel_shuffle(x, 2),
                          "F.native_channel_shuffle": lambda x: F.native_channel_shuffle(x, 3)},
    fixed(("f32", lambda r: [make(r, (2, 6, 3))]),
          ("f64_perm", lambda r: [make(r, (1, 6, 2, 3), F64, layout="t")])))
add("F.pixel_shuffle", {"F.pixel_shuffle": lambda x: F.pixel_shuffle(x, 2),
                        "F.pixel_unshuffle": lambda x: F.pixel_unshuffle(x, 2)},
    fixed(("f32", lambda r: [make(r, (2, 8, 4, 6))]),
          ("batch_dims_perm", lambda r: [make(r, (2, 3, 4, 6, 4), F64, layout="t")])))
IMG4 = fixed(("f32", lambda r: [make(r, (2, 3, 4, 5))]),
             ("perm_f64", lambda r: [make(r, (1, 2, 4, 3), F64, layout="t")]))
for name, kw in [("nearest", dict(scale_factor=2)), ("nearest(size)", dict(size=(7, 3))),
                 ("nearest-exact", dict(scale_factor=(1.7, 0.6), mode="nearest-exact")),
                 ("bilinear", dict(size=(7, 3), mode="bilinear")),
                 ("bilinear(align)", dict(scale_factor=2.5, mode="bilinear", align_corners=True)),
                 ("bicubic", dict(size=(5, 8), mode="bicubic")),
                 ("area", dict(size=(2, 3), mode="area"))]:
    add(f"F.interpolate({name})",
        {"F.interpolate": (lambda k: lambda x: F.interpolate(x, **k))(kw)}, IMG4)
add("F.interpolate(1d)", {"F.interpolate(linear)": lambda x: F.interpolate(
    x, scale_factor=1.6, mode="linear"), "F.interpolate(nearest)": lambda x: F.interpolate(x, 4)},
    fixed(("f32", lambda r: [make(r, (2, 3, 5))]), ("slice", lambda r: [make(r, (2, 3, 5),
                                                                             layout="s")])))
add("F.interpolate(trilinear)", {"F.interpolate": lambda x: F.interpolate(
    x, size=(3, 5, 2), mode="trilinear")}, fixed(("f32", lambda r: [make(r, (1, 2, 2, 3, 4))])))
VOL = fixed(("f32", lambda r: [make(r, (2, 2, 4, 6, 5))]),
            ("perm_f64_unbatched", lambda r: [make(r, (2, 5, 3, 4), F64, layout="t")]))
add("F.adaptive_avg_pool3d", {
    "F.adaptive_avg_pool3d": lambda x: F.adaptive_avg_pool3d(x, (2, 3, None)),
    "F.adaptive_avg_pool3d(uneven)": lambda x: F.adaptive_avg_pool3d(x, (3, 4, 2)),
    "F.interpolate(area,3d)": lambda x: F.interpolate(x if x.ndim == 5 else x[None],
                                                      size=(2, 3, 4), mode="area")}, VOL)


def _no_deprecation_warning(fn):
    def call(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*args)
    return call


add("F.upsample", {
    "F.upsample": _no_deprecation_warning(lambda x: F.upsample(x, scale_factor=2,
                                                               mode="bilinear")),
    "F.upsample_nearest": _no_deprecation_warning(lambda x: F.upsample_nearest(x, size=(5, 7))),
    "F.upsample_bilinear": _no_deprecation_warning(lambda x: F.upsample_bilinear(
        x, scale_factor=2))},
    fixed(("f32", lambda r: [make(r, (1, 2, 3, 4))])))
GRID = fixed(("f32", lambda r: [make(r, (2, 3, 4, 5)), make(r, (2, 3, 6, 2), F32, -1.6, 1.6)]),
             ("f64_perm", lambda r: [make(r, (1, 2, 4, 5), F64, layout="t"),
                                     make(r, (1, 5, 2, 2), F64, -2.5, 2.5)]))
for pad in ("zeros", "border", "reflection"):
    add(f"F.grid_sample({pad})", {
        "F.grid_sample": lambda x, g, p=pad: F.grid_sample(x, g, padding_mode=p,
                                                           align_corners=False),
        "F.grid_sample(align)": lambda x, g, p=pad: F.grid_sample(x, g, padding_mode=p,
                                                                  align_corners=True)}, GRID)
    add(f"F.grid_sample(nearest,{pad})", {
        "F.grid_sample": lambda x, g, p=pad: F.grid_sample(x, g, mode="nearest",
                                                           padding_mode=p, align_corners=False)},
        GRID)
    add(f"F.grid_sample(bicubic,{pad})", {
        "F.grid_sample": lambda x, g, p=pad: F.grid_sample(x, g, mode="bicubic",
                                                           padding_mode=p, align_corners=False),
        "F.grid_sample(align)": lambda x, g, p=pad: F.grid_sample(
            x, g, mode="bicubic", padding_mode=p, align_corners=True)}, GRID)
add("F.affine_grid", {
    "F.affine_grid": lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=False),
    "F.affine_grid(align)": lambda t: F.affine_grid(t, (2, 3, 4, 5), align_corners=True)},
    fixed(("f32", lambda r: [make(r, (2, 2, 3))]), ("f64", lambda r: [make(r, (2, 2, 3), F64)])))
add("F.affine_grid(3d)", {"F.affine_grid": lambda t: F.affine_grid(t, (1, 2, 2, 3, 4),
                                                                   align_corners=False)},
    fixed(("f32", lambda r: [make(r, (1, 3, 4))])))

# ----------------------------------------------------------------------------- nn layers


def modules(name, make_module, samples, **kw):
    MODULES.append(ModuleInfo(name, make_module, samples, **kw))


IN2 = fixed(("f32", lambda r: [make(r, (3, 6))]), ("perm", lambda r: [make(r, (2, 3, 6),
                                                                            layout="t")]))
IMG = fixed(("f32", lambda r: [make(r, (2, 3, 8, 6))]),
            ("perm", lambda r: [make(r, (2, 3, 8, 6), layout="t")]))
SEQ = fixed(("f32", lambda r: [make(r, (2, 3, 9))]),
            ("slice", lambda r: [make(r, (2, 3, 9), layout="s")]))
modules("Linear", lambda: nn.Linear(6, 4), IN2)
modules("Linear/nobias", lambda: nn.Linear(6, 4, bias=False), IN2)
modules("LazyLinear", lambda: _materialised(nn.LazyLinear(4), torch.zeros(1, 6)), IN2)
modules("LazyConv2d", lambda: _materialised(nn.LazyConv2d(4, 3, padding=1), torch.zeros(1, 3, 8, 6)),
        IMG)
modules("LazyConv1d", lambda: _materialised(nn.LazyConv1d(4, 3, stride=2), torch.zeros(1, 3, 9)),
        SEQ)
modules("LazyConvTranspose2d", lambda: _materialised(nn.LazyConvTranspose2d(2, 3, stride=2),
                                                     torch.zeros(1, 3, 8, 6)), IMG)
modules("LazyConvTranspose1d", lambda: _materialised(nn.LazyConvTranspose1d(2, 2),
                                                     torch.zeros(1, 3, 9)), SEQ)
modules("Bilinear", lambda: nn.Bilinear(6, 3, 2),
        fixed(("f32", lambda r: [make(r, (3, 6)), make(r, (3, 3), layout="t")])))
modules("Identity", lambda: nn.Identity(), IN2)
modules("Flatten", lambda: nn.Flatten(), IMG)
modules("Unflatten", lambda: nn.Unflatten(-1, (2, 3)), IN2)
modules("Conv2d", lambda: nn.Conv2d(3, 4, 3, padding=1), IMG)
modules("Conv2d/strided_groups", lambda: nn.Conv2d(3, 6, (3, 2), stride=2, groups=3, bias=False),
        IMG)
modules("Conv1d", lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), SEQ)
for name, mk in [("MaxPool2d", lambda: nn.MaxPool2d(2)), ("AvgPool2d", lambda: nn.AvgPool2d(3, 2,
                                                                                             1)),
                 ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((3, 2))),
                 ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d((2, 1, 2))),
                 ("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d(2)),
                 ("LPPool2d", lambda: nn.LPPool2d(2, 2))]:
    modules(name, mk, IMG if name != "LPPool2d" else
            fixed(("f32", lambda r: [make(r, (2, 3, 8, 6), F32, 0.2, 2)])))
for name, mk in [("MaxPool1d", lambda: nn.MaxPool1d(3, 2)), ("AvgPool1d", lambda: nn.AvgPool1d(2)),
                 ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(4)),
                 ("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(4))]:
    modules(name, mk, SEQ)
modules("BatchNorm1d/eval", lambda: nn.BatchNorm1d(6),
        fixed(("2d", lambda r: [make(r, (3, 6))]), ("3d", lambda r: [make(r, (2, 6, 3))])),
        train=False)
modules("BatchNorm1d/train", lambda: nn.BatchNorm1d(6),
        fixed(("2d", lambda r: [make(r, (3, 6))])))
modules("BatchNorm2d/eval", lambda: nn.BatchNorm2d(3), IMG, train=False)
modules("LazyBatchNorm1d", lambda: _materialised(nn.LazyBatchNorm1d(), torch.zeros(2, 6)),
        fixed(("2d", lambda r: [make(r, (3, 6))])))
modules("LazyBatchNorm2d", lambda: _materialised(nn.LazyBatchNorm2d(), torch.zeros(2, 3, 2, 2)), IMG)
modules("LazyBatchNorm3d/eval", lambda: _materialised(nn.LazyBatchNorm3d(),
                                                      torch.zeros(2, 2, 1, 1, 1)),
        fixed(("f32", lambda r: [make(r, (2, 2, 3, 4, 5))])), train=False)
modules("LazyInstanceNorm1d", lambda: _materialised(nn.LazyInstanceNorm1d(), torch.zeros(2, 3, 9)),
        SEQ)
modules("LazyInstanceNorm2d", lambda: _materialised(
    nn.LazyInstanceNorm2d(affine=False, track_running_stats=False), torch.zeros(2, 3, 8, 6)), IMG)
modules("LazyInstanceNorm3d/eval", lambda: _materialised(nn.LazyInstanceNorm3d(),
                                                         torch.zeros(2, 2, 4, 5, 4)),
        fixed(("f32", lambda r: [make(r, (2, 2, 4, 5, 4))])), train=False)
modules("BatchNorm2d/train", lambda: nn.BatchNorm2d(3), IMG)
modules("BatchNorm2d/train_no_stats", lambda: nn.BatchNorm2d(3, track_running_stats=False), IMG)
modules("BatchNorm3d/eval", lambda: nn.BatchNorm3d(2),
        fixed(("f32", lambda r: [make(r, (2, 2, 3, 4, 5))])), train=False)
modules("LayerNorm", lambda: nn.LayerNorm(6), IN2)
modules("LayerNorm/2d_noaffine", lambda: nn.LayerNorm((3, 6), elementwise_affine=False),
        fixed(("f32", lambda r: [make(r, (2, 3, 6), layout="t")])))
modules("GroupNorm", lambda: nn.GroupNorm(3, 6), fixed(("f32", lambda r: [make(r, (2, 6, 4))])))
modules("Embedding", lambda: nn.Embedding(7, 4, padding_idx=0),
        fixed(("2d", lambda r: [make(r, (3, 5), I64, 0, 7)]),
              ("with_padding", lambda r: [torch.tensor([[0, 3, 6], [2, 0, 0]])])))
modules("Dropout/eval", lambda: nn.Dropout(0.4), IN2, train=False)
modules("Dropout1d/eval", lambda: nn.Dropout1d(0.4), SEQ, train=False)
modules("Dropout2d/eval", lambda: nn.Dropout2d(0.4), IMG, train=False)
modules("AlphaDropout/eval", lambda: nn.AlphaDropout(0.4), IN2, train=False)
modules("Dropout3d/eval", lambda: nn.Dropout3d(0.4), IMG, train=False)
modules("FeatureAlphaDropout/eval", lambda: nn.FeatureAlphaDropout(0.4), IMG, train=False)
modules("ChannelShuffle", lambda: nn.ChannelShuffle(3), IMG)
modules("LPPool1d", lambda: nn.LPPool1d(2, 3, 2), fixed(("f32", lambda r: [
    make(r, (2, 3, 9), F32, 0.2, 2)])))
ACT_IN = fixed(("f32", lambda r: [make(r, (3, 6), away=(0.0, 1.0, -1.0, 0.5, -0.5, 3, -3))]),
               ("perm", lambda r: [make(r, (3, 6), layout="t", away=(0.0, 1.0, -1.0, .5, -.5))]))
for name, mk in [("ReLU", nn.ReLU), ("ReLU6", nn.ReLU6), ("Sigmoid", nn.Sigmoid),
                 ("Tanh", nn.Tanh), ("GELU", nn.GELU), ("SiLU", nn.SiLU), ("Mish", nn.Mish),
                 ("ELU", nn.ELU), ("CELU", nn.CELU), ("SELU", nn.SELU),
                 ("LeakyReLU", nn.LeakyReLU), ("Softplus", nn.Softplus),
                 ("Softsign", nn.Softsign), ("Tanhshrink", nn.Tanhshrink),
                 ("Hardtanh", nn.Hardtanh), ("Hardsigmoid", nn.Hardsigmoid),
                 ("Hardswish", nn.Hardswish), ("LogSigmoid", nn.LogSigmoid),
                 ("Threshold", lambda: nn.Threshold(0.5, -1.0)),
                 ("Softmax", lambda: nn.Softmax(-1)), ("LogSoftmax", lambda: nn.LogSoftmax(1)),
                 ("Softmin", lambda: nn.Softmin(0))]:
    modules(name, mk, ACT_IN)
modules("ReLU/inplace", lambda: nn.Sequential(nn.Linear(6, 6), nn.ReLU(inplace=True)), IN2)
for name, mk, samples in [
    ("MSELoss", nn.MSELoss, PAIRS), ("L1Loss", lambda: nn.L1Loss(reduction="sum"), PAIRS),
    ("SmoothL1Loss", nn.SmoothL1Loss, PAIRS), ("HuberLoss", lambda: nn.HuberLoss(delta=0.5), PAIRS),
    ("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean", log_target=True), PAIRS),
    ("BCELoss", nn.BCELoss, PROBS), ("BCEWithLogitsLoss", nn.BCEWithLogitsLoss, PROBS),
    ("CrossEntropyLoss", nn.CrossEntropyLoss, LOGITS),
    ("NLLLoss", lambda: nn.NLLLoss(reduction="none"), LOGITS),
    ("NLLLoss2d", lambda: _quiet(nn.NLLLoss2d), LOGITS),
]:
    modules(name, mk, samples)
# float64 layers (parameters and inputs)
F64_IN2 = fixed(("f64", lambda r: [make(r, (3, 6), F64)]),
                ("f64_perm", lambda r: [make(r, (2, 3, 6), F64, layout="t")]))
F64_IMG = fixed(("f64", lambda r: [make(r, (2, 3, 8, 6), F64, layout="t")]))
modules("Linear/f64", lambda: nn.Linear(6, 4).double(), F64_IN2)
modules("LayerNorm/f64", lambda: nn.LayerNorm(6).double(), F64_IN2)
modules("Conv2d/f64", lambda: nn.Conv2d(3, 4, 3, padding=1).double(), F64_IMG)
modules("BatchNorm2d/train_f64", lambda: nn.BatchNorm2d(3).double(), F64_IMG)
modules("GRU/f64", lambda: nn.GRU(6, 4, batch_first=True).double(),
        fixed(("f64", lambda r: [make(r, (2, 3, 6), F64)])))
# big enough for the parallel (OpenMP) loops (> 2**16 elements)
modules("LayerNorm/big", lambda: nn.LayerNorm(256),
        fixed(("f32", lambda r: [make(r, (300, 256))])))
modules("BatchNorm2d/train_big", lambda: nn.BatchNorm2d(8),
        fixed(("f32", lambda r: [make(r, (16, 8, 24, 24))])))
modules("CrossEntropyLoss/big", lambda: nn.CrossEntropyLoss(label_smoothing=0.05),
        fixed(("f32", lambda r: [make(r, (512, 200)), make(r, (512,), I64, 0, 200)])))
modules("Sequential", lambda: nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)), IN2)
modules("ModuleList", lambda: _ListNet(), IN2)
modules("ModuleDict", lambda: _DictNet(), IN2)
modules("ParameterList", lambda: _ParamListNet(), IN2)
modules("ParameterDict", lambda: _ParamDictNet(), IN2)
RNN_IN = fixed(("batch_first", lambda r: [make(r, (2, 4, 3))]),
               ("perm", lambda r: [make(r, (2, 4, 3), layout="t")]))
for name, mk in [("RNN", lambda: nn.RNN(3, 5, batch_first=True)),
                 ("RNN/relu_2layer", lambda: nn.RNN(3, 5, num_layers=2, nonlinearity="relu",
                                                    batch_first=True)),
                 ("LSTM", lambda: nn.LSTM(3, 5, batch_first=True)),
                 ("LSTM/bidir", lambda: nn.LSTM(3, 4, bidirectional=True, batch_first=True)),
                 ("GRU", lambda: nn.GRU(3, 5, batch_first=True))]:
    modules(name, mk, RNN_IN, grad_rtol=2e-4)
CELL_IN = fixed(("f32", lambda r: [make(r, (2, 3))]), ("with_h", lambda r: [make(r, (2, 3)),
                                                                            make(r, (2, 5))]))
for name, mk in [("RNNCell", lambda: nn.RNNCell(3, 5)), ("GRUCell", lambda: nn.GRUCell(3, 5))]:
    modules(name, mk, CELL_IN)
modules("LSTMCell", lambda: nn.LSTMCell(3, 5), fixed(("f32", lambda r: [make(r, (2, 3))])))
# attention and transformers (issue 11); dropout 0 so training mode is deterministic
SELF_IN = fixed(("self", lambda r: (lambda x: [x, x, x])(make(r, (4, 2, 8)))),
                ("cross", lambda r: [make(r, (3, 2, 8)), make(r, (5, 2, 8)), make(r, (5, 2, 8))]))
modules("MultiheadAttention", lambda: nn.MultiheadAttention(8, 2), SELF_IN)
modules("MultiheadAttention/kdim_bias_kv_zero_attn",
        lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, kdim=3, vdim=5,
                                      batch_first=True),
        fixed(("f32", lambda r: [make(r, (2, 3, 4)), make(r, (2, 5, 3)), make(r, (2, 5, 5))])))
TOKENS = fixed(("f32", lambda r: [make(r, (2, 5, 8))]))
modules("TransformerEncoderLayer", lambda: nn.TransformerEncoderLayer(
    8, 2, 16, dropout=0.0, batch_first=True), TOKENS)
modules("TransformerEncoderLayer/norm_first_gelu", lambda: nn.TransformerEncoderLayer(
    8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True), TOKENS)
modules("TransformerEncoder", lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
    8, 2, 16, dropout=0.0, batch_first=True), 2, norm=nn.LayerNorm(8)), TOKENS)
TGT_MEM = fixed(("f32", lambda r: [make(r, (2, 3, 8)), make(r, (2, 5, 8))]))
modules("TransformerDecoderLayer", lambda: nn.TransformerDecoderLayer(
    8, 2, 16, dropout=0.0, batch_first=True), TGT_MEM)
modules("TransformerDecoder", lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(
    8, 2, 16, dropout=0.0, batch_first=True, norm_first=True), 2), TGT_MEM)
modules("Transformer", lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True),
        fixed(("f32", lambda r: [make(r, (2, 5, 8)), make(r, (2, 3, 8))])))
# spatial: transposed and 3-d convolution, resampling, fold/unfold, pixel shuffle, padding
VOL = fixed(("f32", lambda r: [make(r, (2, 2, 4, 5, 4))]))
modules("ConvTranspose2d", lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                      output_padding=1), IMG)
modules("ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 2, 2, stride=2, bias=False), SEQ)
modules("Conv3d", lambda: nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=1), VOL)
modules("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 3, 2, stride=(2, 1, 1), padding=(0, 1, 0)),
        VOL)
for name, mk in [("MaxPool3d", lambda: nn.MaxPool3d(2, 1, 1)),
                 ("AvgPool3d", lambda: nn.AvgPool3d(3, 2, 1, ceil_mode=True)),
                 ("AdaptiveAvgPool3d/none", lambda: nn.AdaptiveAvgPool3d((3, None, 2))),
                 ("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d(2))]:
    modules(name, mk, VOL)
modules("LPPool3d", lambda: nn.LPPool3d(2, 2), fixed(("f32", lambda r: [
    make(r, (2, 2, 4, 4, 4), F32, 0.2, 2)])))


class _Unpool(nn.Module):
    """MaxUnpool{1,2,3}d after the MaxPool of its rank (the unpool layers take indices)."""

    def __init__(self, nd: int):
        super().__init__()
        self.nd = nd
        self.pool = getattr(nn, f"MaxPool{nd}d")(2, return_indices=True)
        self.unpool = getattr(nn, f"MaxUnpool{nd}d")(2)

    def forward(self, x):
        x = x[(slice(None), slice(None)) + (0,) * (3 - self.nd)]
        return self.unpool(*self.pool(x), output_size=x.shape)


for nd in (1, 2, 3):
    modules(f"MaxUnpool{nd}d", (lambda k: lambda: _Unpool(k))(nd), VOL)
modules("LazyConv3d", lambda: _materialised(nn.LazyConv3d(3, 2), torch.zeros(1, 2, 4, 5, 4)), VOL)
modules("LazyConvTranspose3d", lambda: _materialised(nn.LazyConvTranspose3d(2, 2, stride=2),
                                                     torch.zeros(1, 2, 4, 5, 4)), VOL)
modules("Unfold", lambda: nn.Unfold((2, 3), padding=1, stride=2), IMG)
modules("Fold", lambda: nn.Fold((5, 4), 2, padding=(1, 0)), fixed(("f32", lambda r: [
    make(r, (2, 12, 18))])))
modules("PixelShuffle", lambda: nn.PixelShuffle(2), fixed(("f32", lambda r: [
    make(r, (2, 8, 3, 4))])))
modules("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), IMG)
for name, mk, samples in [
    ("ZeroPad1d", lambda: nn.ZeroPad1d((1, 2)), SEQ),
    ("ZeroPad2d", lambda: nn.ZeroPad2d((1, 0, 2, 1)), IMG),
    ("ZeroPad3d", lambda: nn.ZeroPad3d(1), VOL),
    ("ConstantPad1d", lambda: nn.ConstantPad1d(2, 0.5), SEQ),
    ("ConstantPad2d", lambda: nn.ConstantPad2d((1, 2, 0, 1), -1.0), IMG),
    ("ConstantPad3d", lambda: nn.ConstantPad3d((1, 0, 0, 1, 2, 0), 2.0), VOL),
    ("ReflectionPad1d", lambda: nn.ReflectionPad1d((2, 1)), SEQ),
    ("ReflectionPad2d", lambda: nn.ReflectionPad2d(2), IMG),
    ("ReflectionPad3d", lambda: nn.ReflectionPad3d((1, 0, 2, 1, 0, 1)), VOL),
    ("ReplicationPad1d", lambda: nn.ReplicationPad1d(3), SEQ),
    ("ReplicationPad2d", lambda: nn.ReplicationPad2d((0, 2, 1, 3)), IMG),
    ("ReplicationPad3d", lambda: nn.ReplicationPad3d(1), VOL),
    ("CircularPad1d", lambda: nn.CircularPad1d((1, 3)), SEQ),
    ("CircularPad2d", lambda: nn.CircularPad2d(1), IMG),
    ("CircularPad3d", lambda: nn.CircularPad3d((1, 2, 0, 1, 2, 1)), VOL)]:
    modules(name, mk, samples)
modules("Upsample", lambda: nn.Upsample(scale_factor=(1.5, 2), mode="bilinear"), IMG)
modules("Upsample/nearest", lambda: nn.Upsample(size=(5, 9)), IMG)
modules("UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=2), IMG)
modules("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(size=(5, 7)), IMG)


# misc layers and losses (issue 11: norms, activations, distances, bags, more losses)
for name, mk in [("PReLU", lambda: nn.PReLU(6, 0.3)), ("GLU", nn.GLU),
                 ("RReLU/eval", lambda: nn.RReLU(0.1, 0.2)), ("Hardshrink", nn.Hardshrink),
                 ("Softshrink", nn.Softshrink)]:
    modules(name, mk, ACT_IN, train=not name.endswith("/eval"))
modules("Softmax2d", nn.Softmax2d, IMG)
modules("InstanceNorm1d", lambda: nn.InstanceNorm1d(3, affine=True), SEQ)
modules("InstanceNorm2d/train_stats", lambda: nn.InstanceNorm2d(3, track_running_stats=True), IMG)
modules("InstanceNorm3d/eval_stats", lambda: nn.InstanceNorm3d(2, track_running_stats=True),
        fixed(("f32", lambda r: [make(r, (2, 2, 3, 4, 5))])), train=False)
modules("RMSNorm", lambda: nn.RMSNorm(6), IN2)
modules("LocalResponseNorm", lambda: nn.LocalResponseNorm(2), IMG)
modules("CosineSimilarity", nn.CosineSimilarity, PAIRS_2D := fixed(
    ("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5))]),
    ("f64_perm", lambda r: [make(r, (4, 5), F64, layout="t"), make(r, (4, 5), F64)])))
modules("PairwiseDistance", lambda: nn.PairwiseDistance(1.5, keepdim=True), PAIRS_2D)
modules("EmbeddingBag", lambda: nn.EmbeddingBag(7, 4, mode="max"),
        fixed(("2d", lambda r: [make(r, (3, 5), I64, 0, 7)])))
modules("Linear/weight_norm", lambda: nn.utils.parametrizations.weight_norm(nn.Linear(6, 4)),
        IN2)
modules("Linear/spectral_norm_eval", lambda: nn.utils.parametrizations.spectral_norm(
    nn.Linear(6, 4)), IN2, train=False)
for name, mk, samples in [
    ("CTCLoss", nn.CTCLoss, fixed(("f32", lambda r: [make(r, (6, 2, 5)).log_softmax(2),
                                                     torch.tensor([[1, 2], [3, 3]]),
                                                     torch.tensor([6, 4]),
                                                     torch.tensor([2, 2])]))),
    ("CosineEmbeddingLoss", nn.CosineEmbeddingLoss, fixed(("f32", lambda r: [
        make(r, (4, 5)), make(r, (4, 5)), torch.tensor([1, -1, 1, -1])]))),
    ("MarginRankingLoss", lambda: nn.MarginRankingLoss(0.2), fixed(("f32", lambda r: [
        make(r, (5,)), make(r, (5,)), torch.tensor([1.0, -1, 1, -1, 1])]))),
    ("TripletMarginLoss", lambda: nn.TripletMarginLoss(3.0), fixed(("f32", lambda r: [
        make(r, (4, 5)), make(r, (4, 5)), make(r, (4, 5))]))),
    ("TripletMarginWithDistanceLoss", lambda: nn.TripletMarginWithDistanceLoss(margin=3.0),
     fixed(("f32", lambda r: [make(r, (4, 5)), make(r, (4, 5)), make(r, (4, 5))]))),
    ("GaussianNLLLoss", nn.GaussianNLLLoss, fixed(("f32", lambda r: [
        make(r, (4, 5)), make(r, (4, 5)), make(r, (4, 1), F32, 0.3, 2)]))),
    ("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(full=True), fixed(("f32", lambda r: [
        make(r, (4, 5)), make(r, (4, 5), F32, 0, 4)]))),
    ("MultiLabelMarginLoss", nn.MultiLabelMarginLoss, fixed(("f32", lambda r: [
        make(r, (2, 4)), torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])]))),
    ("MultiLabelSoftMarginLoss", nn.MultiLabelSoftMarginLoss, fixed(("f32", lambda r: [
        make(r, (3, 4)), make(r, (3, 4), F32, 0, 1)]))),
    ("MultiMarginLoss", lambda: nn.MultiMarginLoss(margin=3.0), fixed(("f32", lambda r: [
        make(r, (3, 4)), torch.tensor([0, 3, 1])]))),
    ("HingeEmbeddingLoss", nn.HingeEmbeddingLoss, fixed(("f32", lambda r: [
        make(r, (3, 4), away=(1.0,)), torch.tensor([[1.0, -1, 1, -1]] * 3)]))),
    ("SoftMarginLoss", nn.SoftMarginLoss, fixed(("f32", lambda r: [
        make(r, (3, 4)), torch.tensor([[1.0, -1, 1, -1]] * 3)]))),
]:
    modules(name, mk, samples)

def _quiet(make_layer):
    """A layer whose constructor warns that it is deprecated (as PyTorch's does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return make_layer()


modules("LinearCrossEntropyLoss", lambda: nn.LinearCrossEntropyLoss(6, 5, bias=True),
        fixed(("idx", lambda r: [make(r, (4, 6)), torch.tensor([0, 4, 2, 2])])))
modules("LinearCrossEntropyLoss/kdim", lambda: nn.LinearCrossEntropyLoss(
    6, 5, out_features=(2,), label_smoothing=0.1),
    fixed(("idx", lambda r: [make(r, (4, 6)), make(r, (4, 2), I64, 0, 5)])))
modules("SyncBatchNorm", lambda: nn.SyncBatchNorm(3), IMG)
modules("DataParallel", lambda: nn.DataParallel(nn.Linear(6, 4)), IN2)
modules("Container", lambda: _quiet(lambda: _Contained(a=nn.Linear(6, 4))), IN2)


class _Contained(nn.Container):
    def forward(self, x):
        return self.a(x)


def _materialised(layer, x):
    """A lazy layer after its first call (its random init happens there: twins must share it)."""
    layer(x)
    return layer


class _ListNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return x


class _DictNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({"a": nn.Linear(6, 3), "b": nn.Linear(3, 2)})

    def forward(self, x):
        return self.layers["b"](self.layers["a"](x).sigmoid())


class _ParamListNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(6, 3)), nn.Parameter(torch.randn(3))])

    def forward(self, x):
        return x @ self.ws[0] + self.ws[1]


class _ParamDictNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.ws = nn.ParameterDict({"w": nn.Parameter(torch.randn(6, 3))})
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x):
        return (x @ self.ws["w"]) * self.scale


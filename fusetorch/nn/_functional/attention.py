"""nn.functional: attention. `scaled_dot_product_attention` is PyTorch's math path
(`softmax(q k^T * scale + mask) v`) and `multi_head_attention_forward` PyTorch's Python
implementation of multi-head attention, both composed from matmul, softmax and where, so autograd
and the compiler see ordinary primitives.
"""
from __future__ import annotations

import math
import warnings

from ...backends import cuda as _cuda
from ...ir import dtypes as dt
from ...tracer import creation as C
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.opmath import in_float32
from ...tracer.tensor import Tensor
from .activation import softmax
from .dropout import dropout
from .linear import linear
from .padding import pad
from ...tracer import autocast as _ac

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

# c10's ScalarType names, which SDPA's dtype errors print
_C10_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
              "int16": "short int", "int32": "int", "int64": "long int", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16",
              "float32": "float", "float64": "double"}


def _c10(d: dt.DType) -> str:
    return _C10_NAMES.get(d.name, d.name)


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim that gives 0 (not NaN) on rows masked entirely, as PyTorch's
    math path does (`_safe_softmax`). Such rows are zeroed before the softmax too, so their
    gradient is 0 rather than NaN."""
    dead = F.all(F.eq(scores, -math.inf), -1, keepdim=True)
    p = softmax(F.where(dead, 0.0, scores), -1)
    return F.where(dead, 0.0, p)


def _repeat_heads(t: Tensor, reps: int) -> Tensor:
    """repeat_interleave(reps, dim=-3): each key/value head serves `reps` query heads."""
    if reps == 1:
        return t
    shape = tuple(t.shape)
    lead, h, s, e = shape[:-3], shape[-3], shape[-2], shape[-1]
    return t.unsqueeze(-3).expand(*lead, h, reps, s, e).reshape(*lead, h * reps, s, e)


@_ac.op("scaled_dot_product_attention")
def _a_backend_is_enabled(query: Tensor) -> bool:
    """PyTorch's backend choice has something to choose (sdpa_kernel, enable_*_sdp): on the
    CPU only the math and flash kernels exist; fusetorch computes the math path either way."""
    flags = _cuda._SDP
    if query.device.type == "cpu":
        return flags["math"] or flags["flash"]
    return any(flags.values())


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two dims.

    A bool `attn_mask` marks with True the positions that take part; a float mask is added to
    the scores. `is_causal` masks key positions after the query position (top-left aligned).
    Rows whose every position is masked give 0, as in PyTorch. `dropout_p > 0` drops attention
    weights whatever the module's mode (the caller passes 0 in eval, as PyTorch's layers do)."""
    D.check_tensor(query, "scaled_dot_product_attention", "query", 1)
    D.check_tensor(key, "scaled_dot_product_attention", "key", 2)
    D.check_tensor(value, "scaled_dot_product_attention", "value", 3)
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_c10(query.dtype)} key.dtype: {_c10(key.dtype)} and "
                           f"value.dtype: {_c10(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype not in (dt.bool_, dt.float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_c10(attn_mask.dtype)} and  "
                           f"query.dtype: {_c10(query.dtype)} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if not _a_backend_is_enabled(query):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        hq, hk, hv = query.size(-3), key.size(-3), value.size(-3)
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hv)
    # PyTorch's math path keeps float16/bfloat16 query, key and value in float32 "for
    # accuracy" and casts the result back once
    return in_float32(_attention, query, key, value, attn_mask, dropout_p, is_causal, scale)


def _attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
               dropout_p: float, is_causal: bool, scale: float | None) -> Tensor:
    # an empty head dim: PyTorch's math path scales q and k by sqrt(1/E) before their (empty)
    # product, so the scores are zeros, not 0 * inf
    factor = (1.0 / math.sqrt(query.size(-1)) if query.size(-1) else 1.0) if scale is None \
        else scale
    # PyTorch's math path scales query and key by sqrt(|scale|) each before the product (the
    # float32 rounding differs from scaling the scores; and the product's gradient then reads
    # the scaled L x E query and S x E key, not the L x S scores)
    root = math.sqrt(abs(factor))
    scores = F.matmul(query * (-root if factor < 0 else root), key.transpose(-2, -1) * root)
    L, S = query.size(-2), key.size(-2)
    if is_causal:
        rows = C.arange(L, device=query.device).unsqueeze(1)
        keep = F.ge(rows, C.arange(S, device=query.device))
        attn = softmax(F.where(keep, scores, -math.inf), -1)
    elif attn_mask is not None:
        if attn_mask.dtype is dt.bool_:
            scores = F.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
        attn = _safe_softmax(scores)
    else:
        attn = softmax(scores, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return F.matmul(attn, value)


# ---------------------------------------------------------------- multi-head attention

def _canonical_mask(mask: Tensor | None, mask_name: str, other_type: dt.DType | None,
                    other_name: str, target_type: dt.DType,
                    check_other: bool = True) -> Tensor | None:
    """A bool mask (True = masked out) becomes an additive float mask of 0 and -inf."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype is not dt.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    if not is_float:
        mask = F.masked_fill(C.zeros(tuple(mask.shape), dtype=target_type, device=mask.device),
                             mask, -math.inf)
    return mask


def _none_or_dtype(input: Tensor | None) -> dt.DType | None:
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor,
                     key_padding_mask: Tensor | None, attn_mask: Tensor | None,
                     num_heads: int) -> bool:
    """PyTorch's checks; returns whether the input is batched (3-D)."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     "instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projection_packed(query: Tensor, key: Tensor, value: Tensor, w: Tensor,
                          b: Tensor | None) -> tuple:
    """q, k, v projections with weights packed along dim 0 in q, k, v order."""
    if query is key and key is value:
        # self-attention: one matmul against the packed weight
        return linear(query, w, b).chunk(3, -1)
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple:
    """Multi-head attention on sequence-first inputs [L, N, E] (or unbatched [L, E]); returns
    (output, weights) where weights are [N, L, S] (averaged over heads) or [N, heads, L, S], or
    None when `need_weights` is False. Masks: bool True = masked out, float = added."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = tuple(query.shape)
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the hint says attn_mask is the causal mask: SDPA builds it itself
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        for w, n in ((q_proj_weight, "q"), (k_proj_weight, "k"), (v_proj_weight, "v")):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {n}_proj_weight is "
                                     "None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k),
                   linear(value, v_proj_weight, b_v))
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, key.shape[0])}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            want = (bsz * num_heads, tgt_len, key.shape[0])
            if tuple(attn_mask.shape) != want:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {want}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = F.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = F.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    # heads into the batch: [N * heads, L, head_dim]
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zero = C.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = F.cat([k, zero], 1)
        v = F.cat([v, zero.to(v.dtype)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        # explicit weights, with a plain softmax: a row masked entirely gives NaN, as in PyTorch
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        weights = F.matmul(q_scaled, k.transpose(-2, -1))
        if attn_mask is not None:
            weights = attn_mask + weights
        weights = softmax(weights, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = F.matmul(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.shape[-1])  # (not -1: a zero-size batch is valid)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[-1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _heads(t: Tensor, static: Tensor | None, bsz: int, num_heads: int, head_dim: int,
           name: str) -> Tensor:
    """[S, N, E] -> [N * heads, S, head_dim], or the caller's precomputed `static_k`/`static_v`."""
    if static is None:
        return t.reshape(t.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                             f"{static.size(2)}")
    return static

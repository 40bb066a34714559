"""F.scaled_dot_product_attention, F.multi_head_attention_forward, nn.MultiheadAttention and the
Transformer family: values against numpy float64 references written here from the definitions
(and from the modules' own parameters), gradients by gradcheck, state_dict keys as PyTorch 2.13
lists them, compiled against eager."""
import copy
import math
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.autograd import gradcheck

F64 = torch.float64


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _softmax(s):
    """Row softmax; a row that is entirely -inf gives 0 (the SDPA convention)."""
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0.0, m))
    out = e / np.where(dead, 1.0, e.sum(-1, keepdims=True))
    return np.where(dead, 0.0, out)


def _sdpa(q, k, v, add=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if add is not None:
        s = s + add
    return _softmax(s) @ v


def _rand(*shape, dtype=F64, rg=False):
    return torch.randn(*shape, dtype=dtype, requires_grad=rg)


# ----------------------------------------------------------------------------- SDPA


def test_sdpa_plain_scale_and_unbatched():
    torch.manual_seed(0)
    q, k, v = _rand(2, 3, 4, 5), _rand(2, 3, 6, 5), _rand(2, 3, 6, 7)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q, k, v)),
                               _sdpa(_np(q), _np(k), _np(v)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q, k, v, scale=0.3)),
                               _sdpa(_np(q), _np(k), _np(v), scale=0.3), rtol=1e-12, atol=1e-12)
    q2, k2, v2 = _rand(3, 4), _rand(5, 4), _rand(5, 6)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q2, k2, v2)),
                               _sdpa(_np(q2), _np(k2), _np(v2)), rtol=1e-12, atol=1e-12)


def test_sdpa_masks_bool_float_causal():
    torch.manual_seed(1)
    q, k, v = _rand(2, 2, 4, 3), _rand(2, 2, 5, 3), _rand(2, 2, 5, 3)
    keep = torch.rand(4, 5) > 0.4
    keep[2] = False  # one row masked entirely: PyTorch gives 0 there
    add = np.where(keep.numpy(), 0.0, -np.inf)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    np.testing.assert_allclose(_np(got), _sdpa(_np(q), _np(k), _np(v), add), atol=1e-12)
    assert (got[:, :, 2] == 0).all()
    # a float mask is added (broadcast from [B, 1, L, S]); -inf rows also give 0
    fm = _rand(2, 1, 4, 5)
    fm[1, 0, 3] = -math.inf
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q, k, v, attn_mask=fm)),
                               _sdpa(_np(q), _np(k), _np(v), _np(fm)), atol=1e-12)
    # causal is top-left aligned when L != S
    causal = np.where(np.arange(5)[None, :] > np.arange(4)[:, None], -np.inf, 0.0)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q, k, v, is_causal=True)),
                               _sdpa(_np(q), _np(k), _np(v), causal), atol=1e-12)


def test_sdpa_gqa_and_dropout_one():
    torch.manual_seed(2)
    q, k, v = _rand(1, 4, 3, 2), _rand(1, 2, 5, 2), _rand(1, 2, 5, 2)
    # each key/value head serves two consecutive query heads (repeat_interleave)
    kk, vv = np.repeat(_np(k), 2, axis=1), np.repeat(_np(v), 2, axis=1)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
                               _sdpa(_np(q), kk, vv), atol=1e-12)
    with pytest.raises(RuntimeError, match="must match the size"):
        F.scaled_dot_product_attention(q, k, v)
    assert (F.scaled_dot_product_attention(q, k, v, dropout_p=1.0,
                                           enable_gqa=True) == 0).all()


def test_sdpa_errors_as_pytorch():
    q = _rand(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3, dtype=torch.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match=r"Expected attn_mask dtype to be bool or float or to "
                                           r"match query dtype, but got attn_mask.dtype: long "
                                           r"int and  query.dtype: double instead."):
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="query.dtype: float key.dtype: double"):
        F.scaled_dot_product_attention(q.float(), q, q)
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, "
                                           "but got 1.5"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    # a float32 mask is accepted with a float64 query
    assert F.scaled_dot_product_attention(q, q, q, attn_mask=torch.zeros(3, 3)).dtype == F64


def test_sdpa_gradcheck_with_a_fully_masked_row():
    torch.manual_seed(3)
    q, k, v = _rand(2, 3, 2, rg=True), _rand(2, 4, 2, rg=True), _rand(2, 4, 2, rg=True)
    keep = torch.tensor([[True, False, True, True], [False] * 4, [True, True, False, False]])
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=keep),
                     (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    out.sum().backward()
    assert np.isfinite(q.grad.numpy()).all() and (q.grad[:, 1] == 0).all()
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                     (q, k, v))


# ----------------------------------------------------------------------------- MHA reference


def _mha_ref(m, query, key, value, key_padding_mask=None, attn_mask=None, need_weights=True,
             average=True):
    """Multi-head attention in numpy from the module's parameters (sequence-first batched or
    unbatched, or batch-first per the module), mirroring PyTorch's documented algorithm."""
    q_in, k_in, v_in = _np(query), _np(key), _np(value)
    unbatched = q_in.ndim == 2
    if unbatched:
        q_in, k_in, v_in = q_in[:, None], k_in[:, None], v_in[:, None]
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif m.batch_first:
        q_in, k_in, v_in = (np.swapaxes(a, 0, 1) for a in (q_in, k_in, v_in))
    E, H = m.embed_dim, m.num_heads
    d = E // H
    b = np.zeros(3 * E) if m.in_proj_bias is None else _np(m.in_proj_bias)
    if m.in_proj_weight is not None:
        wq, wk, wv = np.split(_np(m.in_proj_weight), 3)
    else:
        wq, wk, wv = _np(m.q_proj_weight), _np(m.k_proj_weight), _np(m.v_proj_weight)
    q = q_in @ wq.T + b[:E]
    k = k_in @ wk.T + b[E:2 * E]
    v = v_in @ wv.T + b[2 * E:]
    L, N, _ = q.shape
    if m.bias_k is not None:
        k = np.concatenate([k, np.broadcast_to(_np(m.bias_k), (1, N, E))])
        v = np.concatenate([v, np.broadcast_to(_np(m.bias_v), (1, N, E))])
    # [N, H, S, d]
    q = q.reshape(L, N, H, d).transpose(1, 2, 0, 3)
    k = k.reshape(k.shape[0], N, H, d).transpose(1, 2, 0, 3)
    v = v.reshape(v.shape[0], N, H, d).transpose(1, 2, 0, 3)
    if m.add_zero_attn:
        k = np.concatenate([k, np.zeros((N, H, 1, d))], 2)
        v = np.concatenate([v, np.zeros((N, H, 1, d))], 2)
    S = k.shape[2]
    add = np.zeros((N, H, L, S))
    if attn_mask is not None:
        am = _np(attn_mask) if attn_mask.dtype.is_floating_point else \
            np.where(attn_mask.numpy(), -np.inf, 0.0)
        am = am.reshape(N, H, L, -1) if am.ndim == 3 else am
        add[..., :am.shape[-1]] += am
    if key_padding_mask is not None:
        kp = _np(key_padding_mask) if key_padding_mask.dtype.is_floating_point else \
            np.where(key_padding_mask.numpy(), -np.inf, 0.0)
        add[..., :kp.shape[-1]] += kp[:, None, None, :]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d) + add
    p = _softmax(s)
    o = (p @ v).transpose(2, 0, 1, 3).reshape(L, N, E)
    o = o @ _np(m.out_proj.weight).T
    if m.out_proj.bias is not None:
        o = o + _np(m.out_proj.bias)
    w = p.mean(1) if average else p
    if unbatched:
        return o[:, 0], w[0]
    if m.batch_first:
        o = np.swapaxes(o, 0, 1)
    return o, w


def test_mha_parameters_init_and_repr():
    torch.manual_seed(4)
    m = nn.MultiheadAttention(6, 2)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == [
        ("in_proj_weight", (18, 6)), ("in_proj_bias", (18,)), ("out_proj.weight", (6, 6)),
        ("out_proj.bias", (6,))]
    assert (m.in_proj_bias == 0).all() and (m.out_proj.bias == 0).all()
    bound = math.sqrt(6.0 / (6 + 18))  # xavier_uniform_ on [3E, E]
    assert m.in_proj_weight.abs().max().item() <= bound
    assert m.in_proj_weight.abs().max().item() > 0.8 * bound
    assert isinstance(m.out_proj, nn.Linear)
    assert type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear("
                       "in_features=6, out_features=6, bias=True)\n)")
    # PyTorch 2.13's keys and shapes for separate projections and bias_kv
    m2 = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True)
    assert [(k, tuple(v.shape)) for k, v in m2.state_dict().items()] == [
        ("q_proj_weight", (4, 4)), ("k_proj_weight", (4, 3)), ("v_proj_weight", (4, 5)),
        ("in_proj_bias", (12,)), ("bias_k", (1, 1, 4)), ("bias_v", (1, 1, 4)),
        ("out_proj.weight", (4, 4)), ("out_proj.bias", (4,))]
    assert list(nn.MultiheadAttention(4, 2, bias=False).state_dict()) == [
        "in_proj_weight", "out_proj.weight"]
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)


@pytest.mark.parametrize("case", ["self_bool_masks", "cross_float_masks_heads", "kdim_bias_kv",
                                  "batch_first_zero_attn", "unbatched"])
def test_mha_matches_numpy(case):
    torch.manual_seed(5)
    L, S, N, E = 3, 4, 2, 6
    kw, call = {}, {}
    if case == "self_bool_masks":
        m = nn.MultiheadAttention(E, 3).double()
        q = _rand(L, N, E)
        k = v = q
        call = dict(key_padding_mask=torch.tensor([[False, False, True], [False, True, True]]),
                    attn_mask=torch.tensor([[False, True, False], [False, False, True],
                                            [False, False, False]]))
    elif case == "cross_float_masks_heads":
        m = nn.MultiheadAttention(E, 2).double()
        q, k, v = _rand(L, N, E), _rand(S, N, E), _rand(S, N, E)
        call = dict(key_padding_mask=_rand(N, S), attn_mask=_rand(N * 2, L, S))
        kw = dict(average=False)
        call["average_attn_weights"] = False
    elif case == "kdim_bias_kv":
        m = nn.MultiheadAttention(E, 2, kdim=3, vdim=5, add_bias_kv=True).double()
        q, k, v = _rand(L, N, E), _rand(S, N, 3), _rand(S, N, 5)
        call = dict(attn_mask=_rand(L, S))
    elif case == "batch_first_zero_attn":
        m = nn.MultiheadAttention(E, 2, add_zero_attn=True, batch_first=True, bias=False).double()
        q, k = _rand(N, L, E), _rand(N, S, E)
        v = k
        call = dict(key_padding_mask=torch.tensor([[False] * 3 + [True], [False] * 4]))
    else:
        m = nn.MultiheadAttention(E, 2).double()
        q, k, v = _rand(L, E), _rand(S, E), _rand(S, E)
        call = dict(key_padding_mask=torch.tensor([False, True, False, False]))
    out, w = m(q, k, v, **call)
    ref_o, ref_w = _mha_ref(m, q, k, v, call.get("key_padding_mask"), call.get("attn_mask"),
                            **kw)
    np.testing.assert_allclose(_np(out), ref_o, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(w), ref_w, rtol=1e-10, atol=1e-12)
    # the SDPA path (need_weights=False) gives the same output
    out2, w2 = m(q, k, v, need_weights=False, **call)
    assert w2 is None
    np.testing.assert_allclose(_np(out2), ref_o, rtol=1e-10, atol=1e-12)


def test_mha_is_causal_hint_and_errors():
    torch.manual_seed(6)
    m = nn.MultiheadAttention(4, 2).double()
    x = _rand(5, 2, 4)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=F64)
    want = m(x, x, x, attn_mask=mask)[0]
    got = m(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)[0]
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*, but should be "
                                           r"\(5, 5\)"):
        m(x, x, x, attn_mask=torch.zeros(4, 5, dtype=F64))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=torch.zeros(5, 5, dtype=torch.int64))


def test_mha_gradcheck():
    """Gradients of the functional form with respect to query, key/value and the packed weight
    (bias_k/bias_v and a key padding mask on)."""
    torch.manual_seed(7)
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True).double()
    kpm = torch.tensor([[False, True, False], [False, False, False]])
    q, kv = _rand(2, 2, 4, rg=True), _rand(3, 2, 4, rg=True)
    w = _rand(12, 4, rg=True)

    def g(q, kv, w):
        return F.multi_head_attention_forward(
            q, kv, kv, 4, 2, w, m.in_proj_bias, m.bias_k, m.bias_v, False, 0.0,
            m.out_proj.weight, m.out_proj.bias, key_padding_mask=kpm)
    assert gradcheck(g, (q, kv, w))


# ----------------------------------------------------------------------------- Transformer


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else _np(w)) + (0 if b is None else _np(b))


def _lin(x, lin):
    y = x @ _np(lin.weight).T
    return y if lin.bias is None else y + _np(lin.bias)


def _act(name, x):
    if name == "relu":
        return np.maximum(x, 0)
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


def _enc_layer_ref(layer, x, act, attn_mask=None, kpm=None):
    def sa(h):
        hh = torch.tensor(h)
        return _mha_ref(layer.self_attn, hh, hh, hh, kpm, attn_mask)[0]

    def ff(h):
        return _lin(_act(act, _lin(h, layer.linear1)), layer.linear2)
    n1, n2 = layer.norm1, layer.norm2
    if layer.norm_first:
        x = x + sa(_ln(x, n1.weight, n1.bias, n1.eps))
        return x + ff(_ln(x, n2.weight, n2.bias, n2.eps))
    x = _ln(x + sa(x), n1.weight, n1.bias, n1.eps)
    return _ln(x + ff(x), n2.weight, n2.bias, n2.eps)


@pytest.mark.parametrize("norm_first,act,batch_first", [(False, "relu", False),
                                                         (True, "gelu", True)])
def test_encoder_layer_matches_numpy(norm_first, act, batch_first):
    torch.manual_seed(8)
    layer = nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0, activation=act,
                                       norm_first=norm_first, batch_first=batch_first,
                                       layer_norm_eps=1e-4).double()
    x = _rand(2, 3, 6)
    # key padding [N, S]: N = 2, S = 3 batch-first; N = 3, S = 2 sequence-first
    kpm = torch.tensor([[False, False, True], [False, False, False]] if batch_first else
                       [[False, True], [False, False], [False, False]])
    L = 3 if batch_first else 2
    mask = nn.Transformer.generate_square_subsequent_mask(L) == -math.inf  # True = masked
    got = layer(x, src_mask=mask, src_key_padding_mask=kpm)
    np.testing.assert_allclose(_np(got), _enc_layer_ref(layer, _np(x), act, mask, kpm),
                               rtol=1e-10, atol=1e-12)


def test_encoder_stack_deep_copies_and_matches_layers():
    torch.manual_seed(9)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).double()
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4).double())
    a, b = enc.layers[0], enc.layers[1]
    assert a is not layer and a.linear1.weight is not b.linear1.weight
    np.testing.assert_array_equal(_np(a.linear1.weight), _np(layer.linear1.weight))
    with torch.no_grad():
        b.linear1.weight.add_(1.0)
    assert not torch.equal(a.linear1.weight, b.linear1.weight)
    x = _rand(2, 3, 4)
    want = enc.norm(b(a(x)))
    np.testing.assert_allclose(_np(enc(x)), _np(want), rtol=1e-12)
    assert list(enc.state_dict()) == [
        "layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias",
        "layers.0.self_attn.out_proj.weight", "layers.0.self_attn.out_proj.bias",
        "layers.0.linear1.weight", "layers.0.linear1.bias", "layers.0.linear2.weight",
        "layers.0.linear2.bias", "layers.0.norm1.weight", "layers.0.norm1.bias",
        "layers.0.norm2.weight", "layers.0.norm2.bias", "layers.1.self_attn.in_proj_weight",
        "layers.1.self_attn.in_proj_bias", "layers.1.self_attn.out_proj.weight",
        "layers.1.self_attn.out_proj.bias", "layers.1.linear1.weight", "layers.1.linear1.bias",
        "layers.1.linear2.weight", "layers.1.linear2.bias", "layers.1.norm1.weight",
        "layers.1.norm1.bias", "layers.1.norm2.weight", "layers.1.norm2.bias", "norm.weight",
        "norm.bias"]


def test_decoder_layer_matches_numpy_and_keys():
    torch.manual_seed(10)
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0).double()
    assert list(layer.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "multihead_attn.in_proj_weight",
        "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
        "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
        "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
        "norm3.weight", "norm3.bias"]
    tgt, mem = _rand(3, 2, 4), _rand(5, 2, 4)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=F64)
    mkpm = torch.tensor([[False, False, False, True, True], [False] * 5])
    got = layer(tgt, mem, tgt_mask=mask, memory_key_padding_mask=mkpm)
    t = _np(tgt)
    sa = _mha_ref(layer.self_attn, tgt, tgt, tgt, attn_mask=mask)[0]
    x = _ln(t + sa, layer.norm1.weight, layer.norm1.bias, 1e-5)
    xt = torch.tensor(x)
    ca = _mha_ref(layer.multihead_attn, xt, mem, mem, key_padding_mask=mkpm)[0]
    x = _ln(x + ca, layer.norm2.weight, layer.norm2.bias, 1e-5)
    x = _ln(x + _lin(np.maximum(_lin(x, layer.linear1), 0), layer.linear2),
            layer.norm3.weight, layer.norm3.bias, 1e-5)
    np.testing.assert_allclose(_np(got), x, rtol=1e-10, atol=1e-12)


def test_transformer_keys_mask_and_composition():
    torch.manual_seed(11)
    t = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True).double()
    assert list(t.state_dict()) == [
        "encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
        "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
        "encoder.layers.0.linear1.weight", "encoder.layers.0.linear1.bias",
        "encoder.layers.0.linear2.weight", "encoder.layers.0.linear2.bias",
        "encoder.layers.0.norm1.weight", "encoder.layers.0.norm1.bias",
        "encoder.layers.0.norm2.weight", "encoder.layers.0.norm2.bias", "encoder.norm.weight",
        "encoder.norm.bias", "decoder.layers.0.self_attn.in_proj_weight",
        "decoder.layers.0.self_attn.in_proj_bias", "decoder.layers.0.self_attn.out_proj.weight",
        "decoder.layers.0.self_attn.out_proj.bias",
        "decoder.layers.0.multihead_attn.in_proj_weight",
        "decoder.layers.0.multihead_attn.in_proj_bias",
        "decoder.layers.0.multihead_attn.out_proj.weight",
        "decoder.layers.0.multihead_attn.out_proj.bias", "decoder.layers.0.linear1.weight",
        "decoder.layers.0.linear1.bias", "decoder.layers.0.linear2.weight",
        "decoder.layers.0.linear2.bias", "decoder.layers.0.norm1.weight",
        "decoder.layers.0.norm1.bias", "decoder.layers.0.norm2.weight",
        "decoder.layers.0.norm2.bias", "decoder.layers.0.norm3.weight",
        "decoder.layers.0.norm3.bias", "decoder.norm.weight", "decoder.norm.bias"]
    # _reset_parameters: xavier_uniform_ on every matrix, so out_proj is no longer Linear's init
    w = t.encoder.layers[0].linear1.weight
    assert w.abs().max().item() <= math.sqrt(6 / (4 + 8))
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((3, 3), -np.inf), 1))
    assert mask.dtype == torch.float32
    src, tgt = _rand(2, 4, 4), _rand(2, 3, 4)
    out = t(src, tgt, tgt_mask=mask.double())
    want = t.decoder(tgt, t.encoder(src), tgt_mask=mask.double())
    np.testing.assert_allclose(_np(out), _np(want), rtol=1e-12)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(src, _rand(1, 3, 4))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")


def test_encoder_nested_tensor_warning_as_pytorch():
    layer = nn.TransformerEncoderLayer(4, 2, 8)
    with pytest.warns(UserWarning, match=r"enable_nested_tensor is True, but "
                                         r"self.use_nested_tensor is False because "
                                         r"encoder_layer.self_attn.batch_first was not True"):
        nn.TransformerEncoder(layer, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, batch_first=True), 1)


def test_encoder_layer_gradcheck_and_callable_activation():
    torch.manual_seed(12)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation=torch.tanh,
                                       norm_first=True).double()
    assert layer.activation_relu_or_gelu == 0
    x = _rand(3, 2, 4, rg=True)
    assert gradcheck(lambda a: layer(a, src_key_padding_mask=torch.tensor(
        [[False, True, False], [False, False, False]])), (x,))


def test_compiled_encoder_matches_eager():
    torch.manual_seed(13)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                norm=nn.LayerNorm(8)).eval()
    x = torch.randn(2, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    cf = torch.compile(lambda a: enc(a, mask=mask), fullgraph=True)  # a graph break raises
    cf(x)
    got = cf(x)
    assert cf.graph() != ""
    want = enc(x, mask=mask)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-5)
    # gradients through the compiled backward
    w = enc.layers[0].self_attn.in_proj_weight
    (g_eager,) = torch.autograd.grad((want * want).sum(), [w])
    (g_comp,) = torch.autograd.grad((got * got).sum(), [w])
    np.testing.assert_allclose(_np(g_comp), _np(g_eager), rtol=1e-4, atol=1e-5)
    assert copy.deepcopy(enc).layers[0].self_attn.in_proj_weight is not \
        enc.layers[0].self_attn.in_proj_weight


def test_sdpa_with_an_empty_head_dim_attends_uniformly():
    # found by the registry's zero-size samples (was ZeroDivisionError); PyTorch 2.13: the
    # scores are zeros, so the output is the mean of the values (grad 3/4 each here)
    q = torch.ones(2, 3, 0, requires_grad=True)
    v = torch.arange(40.0).reshape(2, 4, 5).requires_grad_()
    out = F.scaled_dot_product_attention(q, torch.ones(2, 4, 0), v)
    np.testing.assert_allclose(out.detach().numpy(),
                               np.broadcast_to(v.detach().numpy().mean(1, keepdims=True),
                                               (2, 3, 5)), rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), np.full((2, 4, 5), 0.75), rtol=1e-6)
    assert q.grad.shape == (2, 3, 0)


def test_multihead_attention_on_zero_size_batches_and_sequences():
    # found by the registry's zero-size samples (was "cannot reshape tensor of 0 elements");
    # PyTorch 2.13 returns empty outputs of these shapes
    m = nn.MultiheadAttention(8, 2)
    for x in (torch.ones(0, 3, 8), torch.ones(5, 0, 8)):
        for need_weights in (True, False):
            assert m(x, x, x, need_weights=need_weights)[0].shape == x.shape
    assert nn.TransformerEncoderLayer(8, 2, 16)(torch.ones(5, 0, 8)).shape == (5, 0, 8)


@pytest.mark.parametrize("scale", [None, 0.3, -0.7])
def test_sdpa_scales_query_and_key_as_pytorch_math_path(scale):
    """PyTorch's math path multiplies query and key by sqrt(|scale|) each (query by -sqrt for a
    negative scale) before the product; in PyTorch 2.13 that composition equals its
    scaled_dot_product_attention bit for bit on float32 non-contiguous inputs (checked by
    hand), where scaling the scores afterwards rounds differently. Values against float64."""
    rng = np.random.default_rng(3)
    q = torch.tensor(rng.standard_normal((2, 3, 8, 6)).astype(np.float32)).transpose(-1, -2)
    k = torch.tensor(rng.standard_normal((2, 3, 8, 7)).astype(np.float32) * 3).transpose(-1, -2)
    v = torch.tensor(rng.standard_normal((2, 3, 4, 7)).astype(np.float32)).transpose(-1, -2)
    s = 1 / math.sqrt(8) if scale is None else scale
    r = math.sqrt(abs(s))
    want = torch.softmax((q * (-r if s < 0 else r)) @ (k.transpose(-2, -1) * r), -1) @ v
    got = F.scaled_dot_product_attention(q, k, v, scale=scale)
    assert np.array_equal(got.numpy(), want.numpy())
    q64, k64, v64 = (np.asarray(t.numpy(), dtype=np.float64) for t in (q, k, v))
    ref = _softmax(q64 @ np.swapaxes(k64, -1, -2) * s) @ v64
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)

"""nn layers: MultiheadAttention, with PyTorch's parameter names, shapes and initialisation.

There is no fast path: the forward is always `F.multi_head_attention_forward` (PyTorch's fast
path, taken in eval mode without grad, computes the same values)."""
from __future__ import annotations

from ...tracer import creation as C
from ...tracer.tensor import Tensor
from .. import init
from .._functional import attention as _attn
from ..module import Module
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of `embed_dim // num_heads` features.

    Parameters: `in_proj_weight` [3E, E] (or `q_proj_weight` [E, E], `k_proj_weight` [E, kdim],
    `v_proj_weight` [E, vdim] when kdim or vdim differ from E), `in_proj_bias` [3E],
    `out_proj` (Linear E -> E), `bias_k`/`bias_v` [1, 1, E] with `add_bias_kv`. Projections are
    xavier_uniform_, biases zero, bias_k/bias_v xavier_normal_."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None,
                 dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(C.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(C.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(C.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(C.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(C.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        **factory)
        if add_bias_kv:
            self.bias_k = Parameter(C.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(C.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        """Returns (output, weights or None). Bool masks: True = not attended; float masks are
        added to the scores. With `batch_first`, inputs and output are [N, L, E]."""
        is_batched = query.dim() == 3
        key_padding_mask = _attn._canonical_mask(key_padding_mask, "key_padding_mask",
                                                 _attn._none_or_dtype(attn_mask), "attn_mask",
                                                 query.dtype)
        attn_mask = _attn._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                          check_other=False)
        if self.batch_first and is_batched:
            # keep the identities F uses to spot self-attention
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = _attn.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

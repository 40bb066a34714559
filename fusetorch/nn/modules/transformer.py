"""nn layers: the Transformer family (encoder/decoder layers and stacks, `Transformer`), with
PyTorch's submodule names, so `state_dict()` keys match PyTorch's exactly.

Only PyTorch's general path exists (no nested-tensor or fused fast path; those compute the same
values). `is_causal=None` is not resolved by comparing the mask's values with a causal mask (a
value read that would break compiled graphs): the mask is applied as given, which gives the
same result."""
from __future__ import annotations

import copy
import math
import warnings
from typing import Any, Callable

from ...tracer import creation as C
from ...tracer import functional as TF
from ...tracer.tensor import Tensor
from .. import functional as F
from .. import init
from ..containers import ModuleList
from ..module import Module
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """[sz, sz] float mask: 0 on and below the diagonal, -inf above it."""
    rows = C.arange(sz, device=device).unsqueeze(1)
    above = TF.lt(rows, C.arange(sz, device=device))
    return TF.masked_fill(C.zeros((sz, sz), dtype=dtype, device=device), above, -math.inf)


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm
    (after the residual, or before the block with `norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        src_key_padding_mask = F._canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                                 F._none_or_dtype(src_mask), "src_mask",
                                                 src.dtype)
        src_mask = F._canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                     check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, then a feed-forward block."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) \
            else activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _why_not_sparsity_fast_path(layer: Any) -> str:
    """PyTorch's reason for not using nested tensors, which its constructor warns about."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` (`layers.0`, ...), then `norm` if given.
    `enable_nested_tensor` and `mask_check` are accepted (no nested tensors here)."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _why_not_sparsity_fast_path(encoder_layer)
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = F._canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                                 F._none_or_dtype(mask), "mask", src.dtype)
        mask = F._canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal is True,
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer`, then `norm` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal is True, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder transformer (`encoder`, `decoder`, each a stack with a final LayerNorm);
    every parameter with more than one dim is re-initialised by xavier_uniform_."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu,
                 custom_encoder: Any | None = None, custom_decoder: Any | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The causal mask for a sequence of `sz`: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

"""In the style of the "Scaled dot product attention" tutorial and the "PyTorch Benchmark"
recipe: F.scaled_dot_product_attention timed with torch.utils.benchmark.Timer's
blocked_autorange (benchmark_torch_function_in_microseconds), the backends chosen with
torch.nn.attention.sdpa_kernel(SDPBackend.MATH / FLASH_ATTENTION / EFFICIENT_ATTENTION) in
try/except blocks, the tutorial's CausalSelfAttention module (is_causal=True in training,
dropout_p from self.training), the recipe's batched_dot_mul_sum vs batched_dot_bmm checked
equal, Timer(stmt, setup='from __main__ import ...'-free globals, label, sub_label,
description, num_threads) results gathered into benchmark.Compare and printed. Timings are
printed, never compared; on the CPU the efficient-attention backend alone is refused."""
from dataclasses import dataclass

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.utils.benchmark as benchmark
from fusetorch.nn.attention import SDPBackend, sdpa_kernel

device = "cuda" if torch.cuda.is_available() else "cpu"


def benchmark_torch_function_in_microseconds(f, *args, **kwargs):
    t0 = benchmark.Timer(
        stmt="f(*args, **kwargs)", globals={"args": args, "kwargs": kwargs, "f": f}
    )
    return t0.blocked_autorange(min_run_time=0.02).mean * 1e6


class CausalSelfAttention(nn.Module):

    def __init__(self, num_heads: int, embed_dimension: int, bias: bool=False, is_causal: bool=False, dropout:float=0.0):
        super().__init__()
        assert embed_dimension % num_heads == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, bias=bias)
        # output projection
        self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
        # regularization
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.num_heads = num_heads
        self.embed_dimension = embed_dimension
        # Perform causal masking
        self.is_causal = is_causal

    def forward(self, x):
        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        query_projected = self.c_attn(x)

        batch_size = query_projected.size(0)
        embed_dim = query_projected.size(2)
        head_dim = embed_dim // (self.num_heads * 3)

        query, key, value = query_projected.chunk(3, -1)
        query = query.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)

        if self.training:
            dropout = self.dropout
            is_causal = self.is_causal
        else:
            dropout = 0.0
            is_causal = False

        y = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout, is_causal=is_causal)
        # (the tutorial's .view: CUDA's fused kernels return a layout it fits; on the CPU
        # PyTorch 2.13 refuses that view too, so reshape)
        y = y.transpose(1, 2).reshape(batch_size, -1, self.num_heads * head_dim)

        y = self.resid_dropout(self.c_proj(y))
        return y


def batched_dot_mul_sum(a, b):
    '''Computes batched dot by multiplying and summing'''
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    '''Computes batched dot by reducing to ``bmm``'''
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(a, b).flatten(-3)


@dataclass
class Config:
    n_embd: int = 32
    n_head: int = 4
    seq_len: int = 16
    dropout: float = 0.1
    bias: bool = False
    is_causal: bool = True


def main():
    torch.manual_seed(0)
    batch_size, max_sequence_len, num_heads, embed_dimension = 2, 16, 4, 8
    dtype = torch.float32
    query = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)
    key = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)
    value = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension, device=device, dtype=dtype)
    print(f"The default implementation runs in {benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value):.3f} microseconds")
    reference = F.scaled_dot_product_attention(query, key, value)
    with sdpa_kernel(SDPBackend.MATH):
        math_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
        print(f"The math implementation runs in {math_time:.3f} microseconds")
        assert torch.allclose(F.scaled_dot_product_attention(query, key, value), reference, atol=1e-6)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        try:
            flash_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
            print(f"The flash attention implementation runs in {flash_time:.3f} microseconds")
        except RuntimeError:
            print("FlashAttention is not supported. See warnings for reasons.")
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        try:
            efficient_time = benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value)
            print(f"The memory efficient implementation runs in {efficient_time:.3f} microseconds")
        except RuntimeError:
            print("EfficientAttention is not supported. See warnings for reasons.")

    config = Config()
    model = CausalSelfAttention(num_heads=config.n_head, embed_dimension=config.n_embd, bias=config.bias,
                                is_causal=config.is_causal, dropout=config.dropout).to(device)
    print(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.rand(batch_size, config.seq_len, config.n_embd, device=device, dtype=dtype)
    model.train()
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    with torch.no_grad():
        print(f"The non compiled module runs in {benchmark_torch_function_in_microseconds(model, x):.3f} microseconds")

    # the PyTorch Benchmark recipe
    x = torch.randn(100, 64)
    assert batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))
    results = []
    for b, n in [(1, 1), (64, 32)]:
        label = 'Batched dot'
        sub_label = f'[{b}, {n}]'
        x = torch.ones((b, n))
        for num_threads in [1, 2]:
            results.append(benchmark.Timer(
                stmt='batched_dot_mul_sum(x, x)',
                globals={'x': x, 'batched_dot_mul_sum': batched_dot_mul_sum},
                num_threads=num_threads,
                label=label,
                sub_label=sub_label,
                description='mul/sum',
            ).blocked_autorange(min_run_time=0.01))
            results.append(benchmark.Timer(
                stmt='batched_dot_bmm(x, x)',
                globals={'x': x, 'batched_dot_bmm': batched_dot_bmm},
                num_threads=num_threads,
                label=label,
                sub_label=sub_label,
                description='bmm',
            ).blocked_autorange(min_run_time=0.01))
    compare = benchmark.Compare(results)
    compare.trim_significant_figures()
    compare.print()
    m = benchmark.Timer(stmt='torch.mm(a, a)', setup='import torch\na = torch.randn(8, 8)').timeit(20)
    print(m)
    return loss.item()


if __name__ == "__main__":
    main()

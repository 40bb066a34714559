"""Models the benchmarks share, written against a module `T` with PyTorch's API, so the same
code builds them with fusetorch and, in bench_table.py's PyTorch run, with torch. Imports
nothing itself: a PyTorch interpreter without fusetorch's dependencies can load it."""
from __future__ import annotations


def lenet_model(T):
    """LeNet-5 for 1x32x32 inputs (the benchmarks' LeNet step, batch 64)."""
    nn, F = T.nn, T.nn.functional

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = T.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    return LeNet()


def gpt_model(T, vocab: int = 4096, block: int = 256, n_layer: int = 6, n_head: int = 6,
              n_embd: int = 384):
    """A nanoGPT-shaped language model (issue 24): token and position embeddings, pre-norm
    blocks of causal self-attention through F.scaled_dot_product_attention and a GELU MLP,
    a final LayerNorm and a head tied to the token embedding."""
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.attn_proj = nn.Linear(n_embd, n_embd)
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.mlp_proj = nn.Linear(4 * n_embd, n_embd)

        def attn(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q, k, v = (u.view(b, t, n_head, c // n_head).transpose(1, 2) for u in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            t = idx.size(1)
            x = self.wte(idx) + self.wpe(T.arange(t))
            for b in self.h:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return GPT()


def gpt_step(T, batch: int = 8, **sizes):
    """One AdamW training step of `gpt_model(T, **sizes)` on random tokens: (step, x, y)."""
    T.manual_seed(0)
    model = gpt_model(T, **sizes)
    opt = T.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    vocab, block = sizes.get("vocab", 4096), sizes.get("block", 256)
    x, y = T.randint(0, vocab, (batch, block)), T.randint(0, vocab, (batch, block))

    def step(a, b):
        opt.zero_grad(set_to_none=True)
        loss = model(a, b)
        loss.backward()
        opt.step()
        return loss

    return step, x, y

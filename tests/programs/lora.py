"""In the style of microsoft/LoRA (loralib/layers.py and utils.py): LoRALayer as a mixin,
`class Linear(nn.Linear, LoRALayer)` calling `nn.Linear.__init__(self, ...)`, lora_A/lora_B as
`nn.Parameter(self.weight.new_zeros((r, in_features)))`, reset_parameters overriding
nn.Linear's (kaiming_uniform_(a=math.sqrt(5)) and zeros_), the frozen pretrained weight,
`train(mode)` merging and unmerging `T(self.lora_B @ self.lora_A) * self.scaling` into the
weight, an Embedding with LoRA, `mark_only_lora_as_trainable` and `lora_state_dict`; merged
eval outputs equal unmerged train outputs, and only the LoRA factors receive gradients."""
import math

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class LoRALayer():
    def __init__(self, r: int, lora_alpha: int, lora_dropout: float, merge_weights: bool):
        self.r = r
        self.lora_alpha = lora_alpha
        # Optional dropout
        if lora_dropout > 0.:
            self.lora_dropout = nn.Dropout(p=lora_dropout)
        else:
            self.lora_dropout = lambda x: x
        # Mark the weight as unmerged
        self.merged = False
        self.merge_weights = merge_weights


class Embedding(nn.Embedding, LoRALayer):
    # LoRA implemented in a dense layer
    def __init__(self, num_embeddings: int, embedding_dim: int, r: int = 0, lora_alpha: int = 1,
                 merge_weights: bool = True, **kwargs):
        nn.Embedding.__init__(self, num_embeddings, embedding_dim, **kwargs)
        LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=0,
                           merge_weights=merge_weights)
        # Actual trainable parameters
        if r > 0:
            self.lora_A = nn.Parameter(self.weight.new_zeros((r, num_embeddings)))
            self.lora_B = nn.Parameter(self.weight.new_zeros((embedding_dim, r)))
            self.scaling = self.lora_alpha / self.r
            # Freezing the pre-trained weight matrix
            self.weight.requires_grad = False
        self.reset_parameters()

    def reset_parameters(self):
        nn.Embedding.reset_parameters(self)
        if hasattr(self, 'lora_A'):
            # initialize A the same way as the default for nn.Linear and B to zero
            nn.init.zeros_(self.lora_A)
            nn.init.normal_(self.lora_B)

    def train(self, mode: bool = True):
        nn.Embedding.train(self, mode)
        if mode:
            if self.merge_weights and self.merged:
                # Make sure that the weights are not merged
                if self.r > 0:
                    self.weight.data -= (self.lora_B @ self.lora_A).transpose(0, 1) * self.scaling
                self.merged = False
        else:
            if self.merge_weights and not self.merged:
                # Merge the weights and mark it
                if self.r > 0:
                    self.weight.data += (self.lora_B @ self.lora_A).transpose(0, 1) * self.scaling
                self.merged = True

    def forward(self, x: torch.Tensor):
        if self.r > 0 and not self.merged:
            result = nn.Embedding.forward(self, x)
            after_A = F.embedding(x, self.lora_A.transpose(0, 1), self.padding_idx,
                                  self.max_norm, self.norm_type, self.scale_grad_by_freq,
                                  self.sparse)
            result += (after_A @ self.lora_B.transpose(0, 1)) * self.scaling
            return result
        else:
            return nn.Embedding.forward(self, x)


class Linear(nn.Linear, LoRALayer):
    # LoRA implemented in a dense layer
    def __init__(self, in_features: int, out_features: int, r: int = 0, lora_alpha: int = 1,
                 lora_dropout: float = 0., fan_in_fan_out: bool = False,
                 merge_weights: bool = True, **kwargs):
        nn.Linear.__init__(self, in_features, out_features, **kwargs)
        LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                           merge_weights=merge_weights)
        self.fan_in_fan_out = fan_in_fan_out
        # Actual trainable parameters
        if r > 0:
            self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
            self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
            self.scaling = self.lora_alpha / self.r
            # Freezing the pre-trained weight matrix
            self.weight.requires_grad = False
        self.reset_parameters()
        if fan_in_fan_out:
            self.weight.data = self.weight.data.transpose(0, 1)

    def reset_parameters(self):
        nn.Linear.reset_parameters(self)
        if hasattr(self, 'lora_A'):
            # initialize B the same way as the default for nn.Linear and A to zero
            # this is different than what is described in the paper but should not affect
            # performance
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B)

    def train(self, mode: bool = True):
        def T(w):
            return w.transpose(0, 1) if self.fan_in_fan_out else w
        nn.Linear.train(self, mode)
        if mode:
            if self.merge_weights and self.merged:
                # Make sure that the weights are not merged
                if self.r > 0:
                    self.weight.data -= T(self.lora_B @ self.lora_A) * self.scaling
                self.merged = False
        else:
            if self.merge_weights and not self.merged:
                # Merge the weights and mark it
                if self.r > 0:
                    self.weight.data += T(self.lora_B @ self.lora_A) * self.scaling
                self.merged = True

    def forward(self, x: torch.Tensor):
        def T(w):
            return w.transpose(0, 1) if self.fan_in_fan_out else w
        if self.r > 0 and not self.merged:
            result = F.linear(x, T(self.weight), bias=self.bias)
            result += (self.lora_dropout(x) @ self.lora_A.transpose(0, 1) @
                       self.lora_B.transpose(0, 1)) * self.scaling
            return result
        else:
            return F.linear(x, T(self.weight), bias=self.bias)


def mark_only_lora_as_trainable(model: nn.Module, bias: str = 'none') -> None:
    for n, p in model.named_parameters():
        if 'lora_' not in n:
            p.requires_grad = False
    if bias == 'none':
        return
    elif bias == 'all':
        for n, p in model.named_parameters():
            if 'bias' in n:
                p.requires_grad = True
    else:
        raise NotImplementedError


def lora_state_dict(model: nn.Module, bias: str = 'none'):
    my_state_dict = model.state_dict()
    if bias == 'none':
        return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k}
    elif bias == 'all':
        return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k or 'bias' in k}
    raise NotImplementedError


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.emb = Embedding(vocab, dim, r=4, lora_alpha=8)
        self.fc1 = Linear(dim, 32, r=4, lora_alpha=8)
        self.fc2 = Linear(32, vocab, r=4, lora_alpha=8, fan_in_fan_out=True)
        self.ln = nn.LayerNorm(32)

    def forward(self, idx):
        return self.fc2(F.gelu(self.ln(self.fc1(self.emb(idx)))))


def main():
    torch.manual_seed(0)
    model = TinyLM()
    mark_only_lora_as_trainable(model, bias="all")
    trainable = sorted(n for n, p in model.named_parameters() if p.requires_grad)
    assert trainable == ["emb.lora_A", "emb.lora_B", "fc1.bias", "fc1.lora_A", "fc1.lora_B",
                         "fc2.bias", "fc2.lora_A", "fc2.lora_B", "ln.bias"], trainable
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    idx = torch.randint(0, 20, (4, 6))
    frozen = model.fc1.weight.clone()
    model.train()
    for _ in range(3):
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 20), idx[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert model.fc1.weight.grad is None and torch.equal(model.fc1.weight, frozen)
    assert model.fc1.lora_B.abs().sum() > 0
    with torch.no_grad():
        unmerged = model(idx)
        model.eval()  # merges B A into each weight
        assert model.fc1.merged and model.fc2.merged and model.emb.merged
        merged = model(idx)
        assert torch.allclose(unmerged, merged, atol=1e-5), (unmerged - merged).abs().max()
        model.train()  # unmerges
        assert torch.allclose(model.fc1.weight, frozen, atol=1e-6)
    sd = lora_state_dict(model)
    assert sorted(sd) == ["emb.lora_A", "emb.lora_B", "fc1.lora_A", "fc1.lora_B",
                          "fc2.lora_A", "fc2.lora_B"]
    fresh = TinyLM()
    fresh.load_state_dict(sd, strict=False)
    assert torch.equal(fresh.fc1.lora_B, model.fc1.lora_B)
    return loss.item()

"""In the style of pytorch/examples vision_transformer/main.py and the common ViT recipe: patch
embedding by a Conv2d with stride = kernel = patch size, flatten(2).transpose(1, 2); a learned
class token expanded over the batch and a learned position embedding (nn.Parameter with
torch.zeros / trunc_normal_); pre-norm encoder blocks of nn.MultiheadAttention(batch_first=True)
+ GELU MLP with dropout; classification from the class token; AdamW with a weight-decay
parameter split, CosineAnnealingWarmRestarts stepped per batch, clip_grad_norm_; evaluation under
torch.no_grad() with accuracy from argmax(1)."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)  # B, N, C


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=2.0, dropout=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, dim), nn.Dropout(dropout))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, img_size=8, patch_size=4, in_chans=3, num_classes=5, embed_dim=16,
                 depth=2, num_heads=2):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, embed_dim))
        self.pos_drop = nn.Dropout(p=0.1)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])


def main():
    torch.manual_seed(42)
    model = ViT()
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or name.endswith("bias") or "token" in name or "pos_embed" in name
         else decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2,
                                                                     eta_min=1e-5)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    images = torch.randn(12, 3, 8, 8)
    labels = torch.randint(0, 5, (12,))
    iters = 2
    for epoch in range(2):
        model.train()
        for i in range(iters):
            x, y = images[i * 6:(i + 1) * 6], labels[i * 6:(i + 1) * 6]
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step(epoch + i / iters)
        print(f"epoch {epoch} loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.6f}")
    model.eval()
    correct = 0
    with torch.no_grad():
        out = model(images)
        correct += (out.argmax(1) == labels).sum().item()
        probs = F.softmax(out, dim=-1)
    print(f"accuracy {100.0 * correct / len(labels):.1f}% max prob {probs.max().item():.3f}")
    return loss.item()


if __name__ == "__main__":
    main()

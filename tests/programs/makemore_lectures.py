"""In the style of karpathy's "Neural Networks: Zero to Hero" makemore notebooks (parts 1-4):
a bigram count table N[ix1, ix2] += 1 with torch.zeros(dtype=torch.int32) and
P /= P.sum(1, keepdims=True); the one-layer bigram net over F.one_hot(xs, num_classes=27).float()
with -probs[torch.arange(num), ys].log().mean(); the MLP with an embedding table C[X],
emb.view(-1, ...) @ W1, a hand-written batch norm with running statistics updated under
torch.no_grad(), F.cross_entropy, `p.data += -lr * p.grad`; part 4's manual backprop of
cross_entropy checked against autograd with torch.allclose; sampling by
torch.multinomial(probs, num_samples=1, replacement=True, generator=g).item() with
g = torch.Generator().manual_seed(2147483647)."""
import fusetorch as torch
import fusetorch.nn.functional as F

WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "ella"]


def main():
    chars = sorted(list(set(''.join(WORDS))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi['.'] = 0
    itos = {i: s for s, i in stoi.items()}
    V = len(stoi)
    # part 1: counts
    N = torch.zeros((V, V), dtype=torch.int32)
    xs, ys = [], []
    for w in WORDS:
        chs = ['.'] + list(w) + ['.']
        for ch1, ch2 in zip(chs, chs[1:]):
            ix1, ix2 = stoi[ch1], stoi[ch2]
            N[ix1, ix2] += 1
            xs.append(ix1)
            ys.append(ix2)
    P = (N + 1).float()
    P /= P.sum(1, keepdims=True)
    g = torch.Generator().manual_seed(2147483647)
    out = []
    ix = 0
    while True:
        p = P[ix]
        ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
        out.append(itos[ix])
        if ix == 0 or len(out) > 20:
            break
    print(''.join(out))
    log_likelihood = 0.0
    for ix1, ix2 in zip(xs, ys):
        log_likelihood += torch.log(P[ix1, ix2])
    print(f'{log_likelihood=}', f'nll={-log_likelihood / len(xs)}')
    # part 1: the neural net over one-hot inputs
    xs, ys = torch.tensor(xs), torch.tensor(ys)
    num = xs.nelement()
    W = torch.randn((V, V), generator=g, requires_grad=True)
    for k in range(5):
        xenc = F.one_hot(xs, num_classes=V).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W ** 2).mean()
        W.grad = None
        loss.backward()
        W.data += -10 * W.grad
    print(loss.item())
    # parts 2-3: MLP with a hand-written batch norm
    block_size, n_embd, n_hidden = 3, 4, 16
    X, Y = [], []
    for w in WORDS:
        context = [0] * block_size
        for ch in w + '.':
            X.append(context)
            Y.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    X, Y = torch.tensor(X), torch.tensor(Y)
    C = torch.randn((V, n_embd), generator=g)
    W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
    W2 = torch.randn((n_hidden, V), generator=g) * 0.01
    b2 = torch.randn(V, generator=g) * 0
    bngain = torch.ones((1, n_hidden))
    bnbias = torch.zeros((1, n_hidden))
    bnmean_running = torch.zeros((1, n_hidden))
    bnstd_running = torch.ones((1, n_hidden))
    parameters = [C, W1, W2, b2, bngain, bnbias]
    print(sum(p.nelement() for p in parameters))
    for p in parameters:
        p.requires_grad = True
    for i in range(4):
        ix = torch.randint(0, X.shape[0], (8,), generator=g)
        Xb, Yb = X[ix], Y[ix]
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        with torch.no_grad():
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        logits.retain_grad()
        loss.backward()
        lr = 0.1 if i < 100000 else 0.01
        # part 4: cross_entropy's gradient by hand
        dlogits = F.softmax(logits, 1)
        dlogits[range(Yb.shape[0]), Yb] -= 1
        dlogits /= Yb.shape[0]
        assert torch.allclose(dlogits, logits.grad, atol=1e-6), (dlogits - logits.grad).abs().max().item()
        for p in parameters:
            p.data += -lr * p.grad
    print(f'{i:7d}: {loss.item():.4f}')

    @torch.no_grad()
    def split_loss():
        emb = C[X]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1
        hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        return F.cross_entropy(logits, Y).item()
    final = split_loss()
    print('train', final)
    return final


if __name__ == "__main__":
    main()

"""In the style of the common PyTorch word2vec (skip-gram with negative sampling, as in
Andras7/word2vec-pytorch): u/v nn.Embedding(sparse=True) tables, init.uniform_ and
init.constant_ on .data, torch.bmm against negative samples, F.logsigmoid of clamped scores,
a Dataset whose collate_fn builds LongTensors, optim.SparseAdam with CosineAnnealingLR, and
cosine similarities of the learned vectors. A random corpus stands in for the text."""
import numpy as np
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.nn import init
from fusetorch.utils.data import DataLoader, Dataset


class SkipGramModel(nn.Module):
    def __init__(self, emb_size, emb_dimension):
        super(SkipGramModel, self).__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        initrange = 1.0 / self.emb_dimension
        init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)
        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)
        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
        return torch.mean(score + neg_score)


class Word2vecDataset(Dataset):
    def __init__(self, corpus, window_size, vocab, neg):
        self.corpus, self.window_size, self.vocab, self.neg = corpus, window_size, vocab, neg

    def __len__(self):
        return len(self.corpus)

    def __getitem__(self, idx):
        u = self.corpus[idx]
        boundary = np.random.randint(1, self.window_size)
        ctx = [self.corpus[j] for j in range(max(idx - boundary, 0),
                                             min(idx + boundary, len(self.corpus) - 1) + 1)
               if j != idx]
        return [(u, v, np.random.randint(0, self.vocab, size=self.neg)) for v in ctx]

    @staticmethod
    def collate(batches):
        all_u = [u for batch in batches for u, _, _ in batch if len(batch) > 0]
        all_v = [v for batch in batches for _, v, _ in batch if len(batch) > 0]
        all_neg_v = [neg_v for batch in batches for _, _, neg_v in batch if len(batch) > 0]
        return torch.LongTensor(all_u), torch.LongTensor(all_v), torch.LongTensor(np.array(all_neg_v))


def main():
    np.random.seed(0)
    torch.manual_seed(0)
    vocab = 30
    corpus = list(np.random.randint(0, vocab, size=60))
    ds = Word2vecDataset(corpus, 3, vocab, 5)
    dl = DataLoader(ds, batch_size=8, shuffle=False, num_workers=0, collate_fn=ds.collate)
    model = SkipGramModel(vocab, 16)
    with torch.no_grad():  # the same start under any RNG
        model.u_embeddings.weight.copy_(torch.from_numpy(
            np.random.uniform(-1 / 16, 1 / 16, (vocab, 16)).astype(np.float32)))
    optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, len(dl))
    running_loss = 0.0
    for i, sample_batched in enumerate(dl):
        if len(sample_batched[0]) > 1:
            pos_u, pos_v, neg_v = sample_batched
            scheduler.step()
            optimizer.zero_grad()
            loss = model.forward(pos_u, pos_v, neg_v)
            loss.backward()
            optimizer.step()
            running_loss = running_loss * 0.9 + loss.item() * 0.1
    print(" Loss: " + str(running_loss))
    embedding = model.u_embeddings.weight.cpu().data.numpy()
    print(embedding.shape)
    sim = F.cosine_similarity(model.u_embeddings.weight[:1], model.u_embeddings.weight[1:4])
    print(sim.shape)
    return running_loss


if __name__ == "__main__":
    main()

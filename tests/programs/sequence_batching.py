"""In the style of the variable-length batching idioms of NLP code (the chatbot tutorial's
pack_padded_sequence, torch.nn.utils.rnn's documentation, padding masks for
nn.TransformerEncoder): pad_sequence of unsorted sequences, pack_padded_sequence with
enforce_sorted=False through a bidirectional nn.LSTM, pad_packed_sequence(total_length=...),
pack_sequence, the final hidden states' original order (unsorted_indices), and a
TransformerEncoder(batch_first=True) with src_key_padding_mask, plus nn.MultiheadAttention's
averaged weights. The checks: each padded sequence's outputs equal those of the sequence run
alone (eager against itself unbatched), padding gets no attention, and a classifier over
the masked mean trains."""
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.nn.utils.rnn import (pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                    pad_sequence)


def main():
    torch.manual_seed(0)
    lengths = [3, 5, 2, 4]
    seqs = [torch.randn(L, 6) for L in lengths]
    padded = pad_sequence(seqs, batch_first=True)
    assert padded.shape == (4, 5, 6)
    lstm = nn.LSTM(6, 7, batch_first=True, bidirectional=True)
    packed = pack_padded_sequence(padded, torch.tensor(lengths), batch_first=True,
                                  enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [4, 4, 3, 2, 1]
    out_packed, (h, c) = lstm(packed)
    out, out_lengths = pad_packed_sequence(out_packed, batch_first=True, total_length=6)
    assert out.shape == (4, 6, 14) and out_lengths.tolist() == lengths
    for i, s in enumerate(seqs):
        alone, (h1, _) = lstm(s.unsqueeze(0))
        L = lengths[i]
        assert torch.allclose(out[i, :L], alone[0], atol=1e-5)
        assert torch.count_nonzero(out[i, L:]) == 0
        # h is in the batch's original order: forward's last step, backward's first
        assert torch.allclose(h[:, i], h1[:, 0], atol=1e-5)
    again = pack_sequence(seqs, enforce_sorted=False)
    assert torch.equal(again.data, packed.data)
    # longest first, and the inverse permutation back
    assert again.sorted_indices.tolist() == [1, 3, 0, 2]
    assert again.unsorted_indices.tolist() == [2, 0, 3, 1]

    layer = nn.TransformerEncoderLayer(d_model=6, nhead=2, dim_feedforward=16, dropout=0.1,
                                       batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    encoder.eval()
    mask = torch.arange(5)[None, :] >= torch.tensor(lengths)[:, None]  # True at padding
    with torch.no_grad():
        enc = encoder(padded, src_key_padding_mask=mask)
        for i, s in enumerate(seqs):
            assert torch.allclose(enc[i, :lengths[i]], encoder(s.unsqueeze(0))[0], atol=1e-5)

    mha = nn.MultiheadAttention(6, 2, batch_first=True)
    _, weights = mha(padded, padded, padded, key_padding_mask=mask)
    assert weights.shape == (4, 5, 5)
    assert torch.allclose(weights.sum(-1), torch.ones(4, 5), atol=1e-6)
    assert torch.all(weights.masked_select(mask[:, None, :].expand(-1, 5, -1)) == 0)

    labels = torch.tensor([0, 1, 0, 1])
    head = nn.Linear(6, 2)
    encoder.train()
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=0.01)
    keep = (~mask).unsqueeze(-1).float()
    losses = []
    for _ in range(8):
        opt.zero_grad()
        h = encoder(padded, src_key_padding_mask=mask)
        pooled = (h * keep).sum(1) / keep.sum(1)
        loss = nn.functional.cross_entropy(head(pooled), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("losses", losses[0], "->", losses[-1])
    assert losses[-1] < losses[0]
    return losses[-1]


if __name__ == "__main__":
    main()

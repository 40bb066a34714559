"""In the style of the common variable-length sequence classifier (the PyTorch chatbot tutorial's
EncoderRNN, and countless sentiment examples): nn.utils.rnn.pad_sequence of token tensors of
different lengths, sorted by length with torch.sort(descending=True), nn.Embedding(padding_idx=0),
nn.utils.rnn.pack_padded_sequence(lengths on the CPU) into a bidirectional 2-layer GRU,
pad_packed_sequence back, the two directions' final hidden states concatenated; the unsorted
variant enforce_sorted=False too; Adam, CrossEntropyLoss, accuracy under torch.no_grad()."""
import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class EncoderRNN(nn.Module):
    def __init__(self, vocab, hidden_size, n_classes, n_layers=2, dropout=0.1):
        super().__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(vocab, hidden_size, padding_idx=0)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                          dropout=(0 if n_layers == 1 else dropout), bidirectional=True)
        self.fc = nn.Linear(2 * hidden_size, n_classes)

    def forward(self, input_seq, input_lengths, hidden=None, enforce_sorted=True):
        embedded = self.embedding(input_seq)
        packed = pack_padded_sequence(embedded, input_lengths, enforce_sorted=enforce_sorted)
        outputs, hidden = self.gru(packed, hidden)
        outputs, lengths = pad_packed_sequence(outputs)
        # sum of the two directions, as the chatbot tutorial does
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        final = torch.cat((hidden[-2], hidden[-1]), dim=1)
        return outputs, lengths, self.fc(final)


def main():
    torch.manual_seed(0)
    lengths = [5, 2, 4, 1, 3, 5]
    seqs = [torch.randint(1, 20, (n,)) for n in lengths]
    labels = torch.tensor([0, 1, 2, 1, 0, 2])
    model = EncoderRNN(20, 8, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    for step in range(3):
        model.train()
        lens = torch.tensor([len(s) for s in seqs])
        sorted_lens, order = torch.sort(lens, descending=True)
        padded = pad_sequence([seqs[i] for i in order.tolist()])  # T, B
        outputs, out_lens, logits = model(padded, sorted_lens)
        assert outputs.shape == (max(lengths), len(seqs), 8) and out_lens.tolist() == sorted(
            lengths, reverse=True)
        loss = criterion(logits, labels[order])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 50.0)
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        padded = pad_sequence(seqs, batch_first=False, padding_value=0)
        _, out_lens, logits = model(padded, torch.tensor(lengths), enforce_sorted=False)
        assert out_lens.tolist() == lengths
        acc = (logits.argmax(1) == labels).float().mean().item()
    print(f"accuracy {acc:.3f}")
    return loss.item()


if __name__ == "__main__":
    main()

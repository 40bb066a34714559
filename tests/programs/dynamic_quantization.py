"""In the style of the tutorial "Dynamic quantization on an LSTM word language model": an
LSTMModel (Embedding, nn.LSTM, Linear decoder, `init_weights` with uniform_), its `init_hidden`
from `next(self.parameters())`, a float evaluation pass, then
`torch.quantization.quantize_dynamic(model, {nn.LSTM, nn.Linear}, dtype=torch.qint8)`: where
fusetorch stops, since quantization is out of scope."""
import fusetorch as torch
import fusetorch.nn as nn


class LSTMModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super(LSTMModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.zero_()
        self.decoder.weight.data.uniform_(-initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def evaluate(model_, data_source, ntokens, bptt=5):
    model_.eval()
    total_loss = 0.
    hidden = model_.init_hidden(data_source.size(1))
    criterion = nn.CrossEntropyLoss()
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            seq_len = min(bptt, len(data_source) - 1 - i)
            data = data_source[i:i + seq_len]
            targets = data_source[i + 1:i + 1 + seq_len].reshape(-1)
            output, hidden = model_(data, hidden)
            hidden = tuple(h.detach() for h in hidden)
            output_flat = output.view(-1, ntokens)
            total_loss += len(data) * criterion(output_flat, targets).item()
    return total_loss / (len(data_source) - 1)


def main():
    torch.manual_seed(0)
    ntokens = 12
    model = LSTMModel(ntoken=ntokens, ninp=8, nhid=8, nlayers=2)
    test_data = torch.randint(0, ntokens, (11, 2))
    loss = evaluate(model, test_data, ntokens)
    print('loss: {:5.2f}'.format(loss))
    quantized_model = torch.quantization.quantize_dynamic(
        model, {nn.LSTM, nn.Linear}, dtype=torch.qint8
    )
    print(quantized_model)
    return evaluate(quantized_model, test_data, ntokens)


if __name__ == "__main__":
    main()

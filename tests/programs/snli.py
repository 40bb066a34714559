"""In the style of pytorch/examples' legacy snli (model.py and train.py): the Bottle mixin
(class Linear(Bottle, nn.Linear) flattening the first two dims through super().forward), an
Encoder whose LSTM state is inputs.new_zeros(state_shape) and whose bidirectional final state
is ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1), SNLIClassifier's projection,
frozen embeddings (fix_emb: .detach()), the Sequential head reusing one ReLU and Dropout
module, and train.py's accuracy via torch.max(answer, 1)[1].view(batch.label.size()), with a
config from argparse.Namespace. Random token batches stand in for torchtext's SNLI."""
from argparse import Namespace

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as O


class Bottle(nn.Module):

    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)
        size = input.size()[:2]
        out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
        return out.view(size[0], size[1], -1)


class Linear(Bottle, nn.Linear):
    pass


class Encoder(nn.Module):

    def __init__(self, config):
        super(Encoder, self).__init__()
        self.config = config
        input_size = config.d_proj if config.projection else config.d_embed
        dropout = 0 if config.n_layers == 1 else config.dp_ratio
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=config.d_hidden,
                        num_layers=config.n_layers, dropout=dropout,
                        bidirectional=config.birnn)

    def forward(self, inputs):
        batch_size = inputs.size()[1]
        state_shape = self.config.n_cells, batch_size, self.config.d_hidden
        h0 = c0 = inputs.new_zeros(state_shape)
        outputs, (ht, ct) = self.rnn(inputs, (h0, c0))
        return ht[-1] if not self.config.birnn else ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1)


class SNLIClassifier(nn.Module):

    def __init__(self, config):
        super(SNLIClassifier, self).__init__()
        self.config = config
        self.embed = nn.Embedding(config.n_embed, config.d_embed)
        self.projection = Linear(config.d_embed, config.d_proj)
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(p=config.dp_ratio)
        self.relu = nn.ReLU()
        seq_in_size = 2*config.d_hidden
        if self.config.birnn:
            seq_in_size *= 2
        lin_config = [seq_in_size]*2
        self.out = nn.Sequential(
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(seq_in_size, config.d_out))

    def forward(self, batch):
        prem_embed = self.embed(batch.premise)
        hypo_embed = self.embed(batch.hypothesis)
        if self.config.fix_emb:
            prem_embed = prem_embed.detach()
            hypo_embed = hypo_embed.detach()
        if self.config.projection:
            prem_embed = self.relu(self.projection(prem_embed))
            hypo_embed = self.relu(self.projection(hypo_embed))
        premise = self.encoder(prem_embed)
        hypothesis = self.encoder(hypo_embed)
        scores = self.out(torch.cat([premise, hypothesis], 1))
        return scores


def main():
    torch.manual_seed(0)
    args = Namespace(d_embed=16, d_proj=12, d_hidden=10, n_layers=2, dp_ratio=0.2,
                     birnn=True, projection=True, fix_emb=True, lr=1e-3, batch_size=4)
    config = args
    config.n_embed = 50
    config.d_out = 3
    config.n_cells = config.n_layers
    if config.birnn:
        config.n_cells *= 2
    model = SNLIClassifier(config)
    criterion = nn.CrossEntropyLoss()
    opt = O.Adam(model.parameters(), lr=args.lr)
    iterations = 0
    n_correct, n_total = 0, 0
    for batch_idx in range(3):
        batch = Namespace(premise=torch.randint(1, 50, (7, args.batch_size)),
                          hypothesis=torch.randint(1, 50, (5, args.batch_size)),
                          label=torch.randint(0, 3, (args.batch_size,)))
        model.train(); opt.zero_grad()
        iterations += 1
        answer = model(batch)
        n_correct += (torch.max(answer, 1)[1].view(batch.label.size()) == batch.label).sum().item()
        n_total += batch.batch_size if hasattr(batch, 'batch_size') else args.batch_size
        train_acc = 100. * n_correct/n_total
        loss = criterion(answer, batch.label)
        loss.backward(); opt.step()
    model.eval()
    with torch.no_grad():
        answer = model(batch)
        dev_loss = criterion(answer, batch.label)
    print(model.projection, train_acc, dev_loss.item())
    assert model.embed.weight.grad is None
    return loss.item()


if __name__ == "__main__":
    main()

"""In the style of the speech-recognition tutorials and deepspeech.pytorch-like training loops
(AssemblyAI's "Building an end-to-end Speech Recognition model in PyTorch"): a CNN front end with
LayerNorm over features (transpose(2, 3).contiguous()), GELU and Dropout, a bidirectional GRU
(batch_first), a classifier, `F.log_softmax(output, dim=2).transpose(0, 1)` fed to
`nn.CTCLoss(blank=28, zero_infinity=True)` with input_lengths and label_lengths, AdamW with
OneCycleLR, clip_grad_norm_, and the GreedyDecoder (argmax, collapse repeats, drop blanks).
The CTC loss of a tiny case is checked against a brute-force sum over alignments."""
import itertools
import math

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class CNNLayerNorm(nn.Module):
    """Layer normalization built for cnns input"""

    def __init__(self, n_feats):
        super(CNNLayerNorm, self).__init__()
        self.layer_norm = nn.LayerNorm(n_feats)

    def forward(self, x):
        # x (batch, channel, feature, time)
        x = x.transpose(2, 3).contiguous()  # (batch, channel, time, feature)
        x = self.layer_norm(x)
        return x.transpose(2, 3).contiguous()  # (batch, channel, feature, time)


class ResidualCNN(nn.Module):
    def __init__(self, in_channels, out_channels, kernel, stride, dropout, n_feats):
        super(ResidualCNN, self).__init__()
        self.cnn1 = nn.Conv2d(in_channels, out_channels, kernel, stride, padding=kernel // 2)
        self.cnn2 = nn.Conv2d(out_channels, out_channels, kernel, stride, padding=kernel // 2)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.layer_norm1 = CNNLayerNorm(n_feats)
        self.layer_norm2 = CNNLayerNorm(n_feats)

    def forward(self, x):
        residual = x  # (batch, channel, feature, time)
        x = self.layer_norm1(x)
        x = F.gelu(x)
        x = self.dropout1(x)
        x = self.cnn1(x)
        x = self.layer_norm2(x)
        x = F.gelu(x)
        x = self.dropout2(x)
        x = self.cnn2(x)
        x += residual
        return x  # (batch, channel, feature, time)


class BidirectionalGRU(nn.Module):
    def __init__(self, rnn_dim, hidden_size, dropout, batch_first):
        super(BidirectionalGRU, self).__init__()
        self.BiGRU = nn.GRU(input_size=rnn_dim, hidden_size=hidden_size, num_layers=1,
                            batch_first=batch_first, bidirectional=True)
        self.layer_norm = nn.LayerNorm(rnn_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.layer_norm(x)
        x = F.gelu(x)
        x, _ = self.BiGRU(x)
        x = self.dropout(x)
        return x


class SpeechRecognitionModel(nn.Module):
    def __init__(self, n_cnn_layers, n_rnn_layers, rnn_dim, n_class, n_feats, stride=2,
                 dropout=0.1):
        super(SpeechRecognitionModel, self).__init__()
        n_feats = n_feats // 2
        self.cnn = nn.Conv2d(1, 8, 3, stride=stride, padding=3 // 2)  # cnn for extracting features
        # n residual cnn layers with filter size of 8
        self.rescnn_layers = nn.Sequential(*[
            ResidualCNN(8, 8, kernel=3, stride=1, dropout=dropout, n_feats=n_feats)
            for _ in range(n_cnn_layers)])
        self.fully_connected = nn.Linear(n_feats * 8, rnn_dim)
        self.birnn_layers = nn.Sequential(*[
            BidirectionalGRU(rnn_dim=rnn_dim if i == 0 else rnn_dim * 2, hidden_size=rnn_dim,
                             dropout=dropout, batch_first=i == 0)
            for i in range(n_rnn_layers)])
        self.classifier = nn.Sequential(
            nn.Linear(rnn_dim * 2, rnn_dim),  # birnn returns rnn_dim*2
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(rnn_dim, n_class),
        )

    def forward(self, x):
        x = self.cnn(x)
        x = self.rescnn_layers(x)
        sizes = x.size()
        x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])  # (batch, feature, time)
        x = x.transpose(1, 2)  # (batch, time, feature)
        x = self.fully_connected(x)
        x = self.birnn_layers(x)
        x = self.classifier(x)
        return x


def GreedyDecoder(output, labels, label_lengths, blank_label=28, collapse_repeated=True):
    arg_maxes = torch.argmax(output, dim=2)
    decodes = []
    targets = []
    for i, args in enumerate(arg_maxes):
        decode = []
        targets.append(labels[i][:label_lengths[i]].tolist())
        for j, index in enumerate(args):
            if index != blank_label:
                if collapse_repeated and j != 0 and index == args[j - 1]:
                    continue
                decode.append(index.item())
        decodes.append(decode)
    return decodes, targets


def brute_force_ctc(log_probs, target, blank):
    """-log of the sum over every alignment of length T that collapses to target."""
    T, C = len(log_probs), len(log_probs[0])
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        collapsed = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]
        if [c for c in collapsed if c != blank] == target:
            total += math.exp(sum(log_probs[t][c] for t, c in enumerate(path)))
    return -math.log(total)


def main():
    torch.manual_seed(7)
    # brute force over 3^4 alignments
    lp = torch.randn(4, 1, 3, dtype=torch.float64).log_softmax(2)
    got = F.ctc_loss(lp, torch.tensor([[1, 1]]), torch.tensor([4]), torch.tensor([2]),
                     blank=0, reduction="sum")
    ref = brute_force_ctc(lp[:, 0].tolist(), [1, 1], 0)
    assert abs(got.item() - ref) < 1e-9, (got, ref)

    hparams = {"n_cnn_layers": 1, "n_rnn_layers": 2, "rnn_dim": 16, "n_class": 29,
               "n_feats": 16, "stride": 2, "dropout": 0.1, "learning_rate": 5e-4,
               "batch_size": 2, "epochs": 1}
    model = SpeechRecognitionModel(hparams["n_cnn_layers"], hparams["n_rnn_layers"],
                                   hparams["rnn_dim"], hparams["n_class"], hparams["n_feats"],
                                   hparams["stride"], hparams["dropout"])
    print("Num Model Parameters", sum([param.nelement() for param in model.parameters()]))
    optimizer = torch.optim.AdamW(model.parameters(), hparams["learning_rate"])
    criterion = nn.CTCLoss(blank=28, zero_infinity=True).to("cpu")
    steps = 3
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=hparams["learning_rate"],
                                                    steps_per_epoch=steps,
                                                    epochs=hparams["epochs"],
                                                    anneal_strategy="linear")
    spectrograms = torch.randn(2, 1, 16, 20)
    labels = torch.randint(0, 28, (2, 5))
    label_lengths = [5, 3]
    input_lengths = [10, 10]
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        output = model(spectrograms)  # (batch, time, n_class)
        output = F.log_softmax(output, dim=2)
        output = output.transpose(0, 1)  # (time, batch, n_class)
        loss = criterion(output, labels, input_lengths, label_lengths)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
    model.eval()
    with torch.no_grad():
        output = F.log_softmax(model(spectrograms), dim=2)
        decoded_preds, decoded_targets = GreedyDecoder(output, labels, label_lengths)
    assert len(decoded_preds) == 2 and decoded_targets[1] == labels[1][:3].tolist()
    return loss.item()

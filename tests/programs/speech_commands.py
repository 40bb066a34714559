"""In the style of the "Speech command classification" audio tutorial, without torchaudio:
a Dataset of variable-length waveforms with (waveform, sample_rate, label, speaker_id,
utterance_number) items, collate_fn padding with nn.utils.rnn.pad_sequence(batch_first=True)
after item.t() and permuting back, label_to_index as torch.tensor(labels.index(word)) stacked,
the M5 network (Conv1d with kernel 80 and stride 16, BatchNorm1d, MaxPool1d(4),
F.avg_pool1d(x, x.shape[-1]), permute, log_softmax(dim=2)), F.nll_loss(output.squeeze(),
target), Adam with weight decay, StepLR, and the test loop's argmax/eq/sum accuracy."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim

labels = ['backward', 'bed', 'bird', 'cat', 'dog', 'down', 'eight', 'five']


class SyntheticSpeechCommands(torch.utils.data.Dataset):
    def __init__(self, n, sample_rate=8000):
        g = torch.Generator().manual_seed(1)
        self.items = []
        for i in range(n):
            length = int(torch.randint(sample_rate - 800, sample_rate + 1, (1,), generator=g))
            label = labels[i % len(labels)]
            freq = 200.0 * (1 + labels.index(label))
            t = torch.arange(length) / sample_rate
            waveform = torch.sin(2 * torch.pi * freq * t).unsqueeze(0)
            waveform = waveform + 0.1 * torch.randn(1, length, generator=g)
            self.items.append((waveform, sample_rate, label, f"spk{i % 3}", i))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, n):
        return self.items[n]


def label_to_index(word):
    # Return the position of the word in labels
    return torch.tensor(labels.index(word))


def index_to_label(index):
    # Return the word corresponding to the index in labels
    # This is the inverse of label_to_index
    return labels[index]


def pad_sequence(batch):
    # Make all tensor in a batch the same length by padding with zeros
    batch = [item.t() for item in batch]
    batch = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.)
    return batch.permute(0, 2, 1)


def collate_fn(batch):
    # A data tuple has the form:
    # waveform, sample_rate, label, speaker_id, utterance_number
    tensors, targets = [], []
    # Gather in lists, and encode labels as indices
    for waveform, _, label, *_ in batch:
        tensors += [waveform]
        targets += [label_to_index(label)]
    # Group the list of tensors into a batched tensor
    tensors = pad_sequence(tensors)
    targets = torch.stack(targets)
    return tensors, targets


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.pool4 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.pool1(x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self.pool2(x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self.pool3(x)
        x = self.conv4(x)
        x = F.relu(self.bn4(x))
        x = self.pool4(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def number_of_correct(pred, target):
    # count number of correct predictions
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    # find most likely label index for each element in the batch
    return tensor.argmax(dim=-1)


def main():
    torch.manual_seed(0)
    device = torch.device("cpu")
    train_set = SyntheticSpeechCommands(8)
    test_set = SyntheticSpeechCommands(4)
    waveform, sample_rate, label, speaker_id, utterance_number = train_set[0]
    print("Shape of waveform: {}".format(waveform.size()))
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=4, shuffle=True,
                                               collate_fn=collate_fn, num_workers=0,
                                               pin_memory=False)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=4, shuffle=False,
                                              drop_last=False, collate_fn=collate_fn)
    model = M5(n_input=waveform.shape[0], n_output=len(labels))
    model.to(device)
    print("Number of parameters: %s" % count_parameters(model))
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.1)
    for epoch in range(1, 2):
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            data = data.to(device)
            target = target.to(device)
            output = model(data)
            loss = F.nll_loss(output.squeeze(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} "
                  f"({100. * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item():.6f}")
        model.eval()
        correct = 0
        for data, target in test_loader:
            output = model(data)
            pred = get_likely_index(output)
            correct += number_of_correct(pred, target)
        print(f"\nTest Epoch: {epoch}\tAccuracy: {correct}/{len(test_loader.dataset)} "
              f"({100. * correct / len(test_loader.dataset):.0f}%)\n")
        scheduler.step()
    with torch.no_grad():
        print(index_to_label(get_likely_index(model(waveform.unsqueeze(0))).squeeze().item()))
    return loss.item()


if __name__ == "__main__":
    main()

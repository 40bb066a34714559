"""In the style of the "NLP from scratch: classifying names with a character-level RNN"
tutorial: names become one-hot (len, 1, n_letters) tensors, a Dataset holds (label tensor,
name tensor, label, name), random_split with a seeded Generator, an nn.RNN + Linear +
LogSoftmax model, NLLLoss, gradient clipping, SGD, and label_from_output via topk. A handful
of invented names in three "languages" replace the downloaded files."""
import random
import string

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.utils.data import Dataset

allowed_characters = string.ascii_letters + " .,;'" + "_"
n_letters = len(allowed_characters)

NAMES = {
    "Alpha": ["Abara", "Akana", "Alama", "Anaka", "Apala", "Asara"],
    "Beta": ["Bobbo", "Borro", "Bonno", "Bolto", "Bosso", "Botto"],
    "Gamma": ["Kiski", "Kilik", "Kimki", "Kirik", "Kitti", "Kivik"],
}


def letterToIndex(letter):
    if letter not in allowed_characters:
        return allowed_characters.find("_")
    return allowed_characters.find(letter)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class NamesDataset(Dataset):
    def __init__(self):
        self.data, self.data_tensors, self.labels, self.labels_tensors = [], [], [], []
        labels_set = set()
        for label, names in NAMES.items():
            labels_set.add(label)
            for name in names:
                self.data.append(name)
                self.data_tensors.append(lineToTensor(name))
                self.labels.append(label)
        self.labels_uniq = sorted(labels_set)
        for idx in range(len(self.labels)):
            temp_tensor = torch.tensor([self.labels_uniq.index(self.labels[idx])], dtype=torch.long)
            self.labels_tensors.append(temp_tensor)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.labels_tensors[idx], self.data_tensors[idx], self.labels[idx], self.data[idx]


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)
        return output


def label_from_output(output, output_labels):
    top_n, top_i = output.topk(1)
    label_i = top_i[0].item()
    return output_labels[label_i], label_i


def train(rnn, training_data, n_epoch=2, n_batch_size=4, learning_rate=0.2, criterion=nn.NLLLoss()):
    current_loss = 0
    all_losses = []
    rnn.train()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
    for iter in range(1, n_epoch + 1):
        rnn.zero_grad()
        batches = list(range(len(training_data)))
        random.shuffle(batches)
        batches = [batches[i:i + n_batch_size] for i in range(0, len(batches), n_batch_size)]
        for idx, batch in enumerate(batches):
            batch_loss = 0
            for i in batch:
                (label_tensor, text_tensor, label, text) = training_data[i]
                output = rnn.forward(text_tensor)
                loss = criterion(output, label_tensor)
                batch_loss += loss
            batch_loss.backward()
            nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()
            optimizer.zero_grad()
            current_loss += batch_loss.item() / len(batch)
        all_losses.append(current_loss / len(batches))
        current_loss = 0
    return all_losses


def main():
    random.seed(0)
    torch.manual_seed(0)
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda")
    torch.set_default_device(device)
    try:
        alldata = NamesDataset()
        train_set, test_set = torch.utils.data.random_split(
            alldata, [0.85, 0.15], generator=torch.Generator(device=device).manual_seed(2024))
        print(f"train examples = {len(train_set)}, validation examples = {len(test_set)}")
        rnn = CharRNN(n_letters, 16, len(alldata.labels_uniq))
        print(rnn)
        all_losses = train(rnn, train_set)
        confusion = torch.zeros(len(alldata.labels_uniq), len(alldata.labels_uniq))
        rnn.eval()
        with torch.no_grad():
            for i in range(len(test_set)):
                (label_tensor, text_tensor, label, text) = test_set[i]
                output = rnn(text_tensor)
                guess, guess_i = label_from_output(output, alldata.labels_uniq)
                label_i = alldata.labels_uniq.index(label)
                confusion[label_i][guess_i] += 1
        for i in range(len(alldata.labels_uniq)):
            denom = confusion[i].sum()
            if denom > 0:
                confusion[i] = confusion[i] / denom
        print(confusion.cpu().numpy())
    finally:
        torch.set_default_device("cpu")
    return all_losses[-1]


if __name__ == "__main__":
    main()

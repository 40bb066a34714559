"""In the style of the "NLP from scratch: generating names with a character-level RNN"
tutorial: a hand-built RNN cell (Linear layers on torch.cat of category, input and hidden,
dropout, LogSoftmax), one-hot category/input tensors, a target LongTensor made 2-d with
unsqueeze_, the loss summed over the name, manual SGD through p.data.add_(p.grad.data,
alpha=-lr), and sampling by topk."""
import random
import string

import fusetorch as torch
import fusetorch.nn as nn

all_letters = string.ascii_letters + " .,;'-"
n_letters = len(all_letters) + 1  # plus EOS marker

category_lines = {
    "Alpha": ["Abara", "Akana", "Alama"],
    "Beta": ["Bobbo", "Borro", "Bonno"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


def categoryTensor(category):
    li = all_categories.index(category)
    tensor = torch.zeros(1, n_categories)
    tensor[0][li] = 1
    return tensor


def inputTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li in range(len(line)):
        tensor[li][0][all_letters.find(line[li])] = 1
    return tensor


def targetTensor(line):
    letter_indexes = [all_letters.find(line[li]) for li in range(1, len(line))]
    letter_indexes.append(n_letters - 1)
    return torch.LongTensor(letter_indexes)


def randomTrainingExample():
    category = random.choice(all_categories)
    line = random.choice(category_lines[category])
    return categoryTensor(category), inputTensor(line), targetTensor(line)


criterion = nn.NLLLoss()
learning_rate = 0.0005


def train(rnn, category_tensor, input_line_tensor, target_line_tensor):
    target_line_tensor.unsqueeze_(-1)
    hidden = rnn.initHidden()
    rnn.zero_grad()
    loss = torch.Tensor([0])
    for i in range(input_line_tensor.size(0)):
        output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
        l = criterion(output, target_line_tensor[i])
        loss += l
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item() / input_line_tensor.size(0)


def sample(rnn, category, start_letter="A", max_length=6):
    with torch.no_grad():
        category_tensor = categoryTensor(category)
        input = inputTensor(start_letter)
        hidden = rnn.initHidden()
        output_name = start_letter
        for i in range(max_length):
            output, hidden = rnn(category_tensor, input[0], hidden)
            topv, topi = output.topk(1)
            topi = topi[0][0]
            if topi == n_letters - 1:
                break
            letter = all_letters[topi]
            output_name += letter
            input = inputTensor(letter)
        return output_name


def main():
    random.seed(0)
    torch.manual_seed(0)
    rnn = RNN(n_letters, 32, n_letters)
    losses = []
    for it in range(4):
        output, loss = train(rnn, *randomTrainingExample())
        losses.append(loss)
    print(losses)
    print(sample(rnn, "Alpha", "A"))
    return losses[-1]


if __name__ == "__main__":
    main()

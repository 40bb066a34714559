"""In the style of the tutorial "Text classification with the torchtext library": a vocabulary
built by hand, `collate_batch` producing label/text/offsets with
`torch.tensor(offsets[:-1]).cumsum(dim=0)` and `torch.cat(text_list)`, a DataLoader over a
Dataset subclass with shuffle and that collate_fn, `random_split`, nn.EmbeddingBag(sparse=False)
with offsets, weights set with `uniform_`, SGD + StepLR(1.0, gamma=0.1), clip_grad_norm_(0.1),
accuracy by `(predicted_label.argmax(1) == label).sum().item()`. A few made-up sentences stand
in for AG_NEWS."""
import fusetorch as torch
from fusetorch import nn
from fusetorch.utils.data import DataLoader, Dataset
from fusetorch.utils.data.dataset import random_split

SENTENCES = [
    (1, "the team won the match in the final minute"),
    (2, "stocks fell as the market closed lower"),
    (3, "a new phone was released with a faster chip"),
    (0, "the president met leaders at the summit"),
    (1, "the striker scored twice in the cup game"),
    (2, "the bank raised interest rates again"),
    (3, "the software update fixes the battery bug"),
    (0, "the election results were announced today"),
] * 4


class TextDataset(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        return self.rows[idx]


def tokenizer(line):
    return line.lower().split()


class Vocab:
    def __init__(self, lines):
        self.itos = ["<unk>"]
        for line in lines:
            for tok in tokenizer(line):
                if tok not in self.itos:
                    self.itos.append(tok)
        self.stoi = {s: i for i, s in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(t, 0) for t in tokens]


class TextClassificationModel(nn.Module):

    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vocab = Vocab(line for _, line in SENTENCES)
    text_pipeline = lambda x: vocab(tokenizer(x))  # noqa: E731  (the tutorial's own style)
    label_pipeline = lambda x: int(x)  # noqa: E731

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(label_pipeline(_label))
            processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list.to(device), text_list.to(device), offsets.to(device)

    num_class = len(set([label for (label, text) in SENTENCES]))
    model = TextClassificationModel(len(vocab), 16, num_class).to(device)

    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)

    def train(dataloader):
        model.train()
        total_acc, total_count = 0, 0
        for idx, (label, text, offsets) in enumerate(dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
        return total_acc / total_count

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count, total_loss = 0, 0, 0.0
        with torch.no_grad():
            for idx, (label, text, offsets) in enumerate(dataloader):
                predicted_label = model(text, offsets)
                total_loss += criterion(predicted_label, label).item()
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count, total_loss

    train_dataset = TextDataset(SENTENCES)
    num_train = int(len(train_dataset) * 0.75)
    split_train_, split_valid_ = random_split(
        train_dataset, [num_train, len(train_dataset) - num_train])
    train_dataloader = DataLoader(split_train_, batch_size=8, shuffle=True,
                                  collate_fn=collate_batch)
    valid_dataloader = DataLoader(split_valid_, batch_size=8, shuffle=True,
                                  collate_fn=collate_batch)
    total_accu = None
    for epoch in range(1, 4):
        train(train_dataloader)
        accu_val, loss_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        print("| end of epoch {:3d} | valid accuracy {:8.3f} ".format(epoch, accu_val))

    ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}

    def predict(text, text_pipeline):
        with torch.no_grad():
            text = torch.tensor(text_pipeline(text))
            output = model(text, torch.tensor([0]))
            return output.argmax(1).item() + 1

    print("This is a %s news" % ag_news_label[predict("the team scored in the match",
                                                      text_pipeline)])
    return loss_val


if __name__ == "__main__":
    main()

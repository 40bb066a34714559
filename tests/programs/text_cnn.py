"""In the style of Shawn1993/cnn-text-classification-pytorch (Kim's CNN for sentence
classification): an Embedding with a static copy frozen by requires_grad = False, Conv2d(1,
Co, (K, D)) over the embedded sentence for each kernel size, F.relu(conv(x)).squeeze(3),
F.max_pool1d(i, i.size(2)).squeeze(2), torch.cat of the pooled features, dropout and a linear
classifier; train.py's corrects via torch.max(logit, 1)[1].view(target.size()).data, early
stopping bookkeeping and torch.save of the best state dict to a temporary directory."""
import os
import tempfile

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class CNN_Text(nn.Module):

    def __init__(self, args):
        super(CNN_Text, self).__init__()
        self.args = args

        V = args.embed_num
        D = args.embed_dim
        C = args.class_num
        Ci = 1
        Co = args.kernel_num
        Ks = args.kernel_sizes

        self.embed = nn.Embedding(V, D)
        self.convs = nn.ModuleList([nn.Conv2d(Ci, Co, (K, D)) for K in Ks])
        self.dropout = nn.Dropout(args.dropout)
        self.fc1 = nn.Linear(len(Ks) * Co, C)

        if self.args.static:
            self.embed.weight.requires_grad = False

    def forward(self, x):
        x = self.embed(x)  # (N, W, D)

        x = x.unsqueeze(1)  # (N, Ci, W, D)

        x = [F.relu(conv(x)).squeeze(3) for conv in self.convs]  # [(N, Co, W), ...]*len(Ks)

        x = [F.max_pool1d(i, i.size(2)).squeeze(2) for i in x]  # [(N, Co), ...]*len(Ks)

        x = torch.cat(x, 1)

        x = self.dropout(x)  # (N, len(Ks)*Co)
        logit = self.fc1(x)  # (N, C)
        return logit


class Args:
    embed_num = 100
    embed_dim = 16
    class_num = 2
    kernel_num = 8
    kernel_sizes = [3, 4, 5]
    dropout = 0.5
    static = True
    lr = 0.001
    epochs = 2
    early_stop = 1000
    save_best = True


def save(model, save_dir, save_prefix, steps):
    if not os.path.isdir(save_dir):
        os.makedirs(save_dir)
    save_prefix = os.path.join(save_dir, save_prefix)
    save_path = '{}_steps_{}.pt'.format(save_prefix, steps)
    torch.save(model.state_dict(), save_path)
    return save_path


def main():
    torch.manual_seed(0)
    args = Args()
    model = CNN_Text(args)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=args.lr)
    steps, best_acc, last_step = 0, 0, 0
    with tempfile.TemporaryDirectory() as save_dir:
        for epoch in range(1, args.epochs+1):
            model.train()
            for _ in range(2):
                feature = torch.randint(0, args.embed_num, (6, 12))
                target = torch.randint(0, args.class_num, (6,))
                optimizer.zero_grad()
                logit = model(feature)
                loss = F.cross_entropy(logit, target)
                loss.backward()
                optimizer.step()
                steps += 1
                corrects = (torch.max(logit, 1)[1].view(target.size()).data == target.data).sum()
                accuracy = 100.0 * corrects/target.size(0)
                print('\rBatch[{}] - loss: {:.6f}  acc: {:.4f}%({}/{})'.format(
                    steps, loss.item(), accuracy.item(), corrects.item(), target.size(0)))
            model.eval()
            with torch.no_grad():
                feature = torch.randint(0, args.embed_num, (6, 12))
                target = torch.randint(0, args.class_num, (6,))
                logit = model(feature)
                avg_loss = F.cross_entropy(logit, target, reduction='sum').item()
                corrects = (torch.max(logit, 1)[1].view(target.size()).data == target.data).sum()
            dev_acc = 100.0 * float(corrects) / target.size(0)
            if dev_acc > best_acc:
                best_acc = dev_acc
                last_step = steps
                if args.save_best:
                    path = save(model, save_dir, 'best', steps)
        state = torch.load(path, weights_only=True)
        fresh = CNN_Text(args)
        fresh.load_state_dict(state)
        fresh.eval()
        with torch.no_grad():
            assert fresh.embed.weight.requires_grad is False
            print(fresh(feature).argmax(1))
    assert model.embed.weight.grad is None
    return loss.item()


if __name__ == "__main__":
    main()

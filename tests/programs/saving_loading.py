"""In the style of the "Saving and loading models" tutorial and the "Saving and loading a
general checkpoint" / "warmstarting a model" recipes: a TheModelClass net, printing
model.state_dict() and optimizer.state_dict() entries, torch.save/torch.load of a state dict
and of a whole model (eval afterwards), a general checkpoint dict (epoch, model and optimizer
state dicts, loss) round-tripped after a few SGD momentum steps so that training resumes with
the same momentum buffers, several models in one file, warmstarting with
load_state_dict(strict=False) into a model with an extra layer, map_location, and an
io.BytesIO buffer. The check: training resumed from the checkpoint takes the same steps as
training that never stopped."""
import io
import os
import tempfile

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim


class TheModelClass(nn.Module):
    def __init__(self):
        super(TheModelClass, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.fc1 = nn.Linear(8 * 1 * 1, 12)
        self.fc2 = nn.Linear(12, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 8 * 1 * 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return x


class WiderModel(TheModelClass):
    def __init__(self):
        super().__init__()
        self.fc3 = nn.Linear(10, 2)

    def forward(self, x):
        return self.fc3(super().forward(x))


def train_steps(model, optimizer, inputs, labels, n):
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(n):
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    model = TheModelClass()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(4, 3, 12, 12)
    labels = torch.tensor([1, 0, 3, 9])

    print("Model's state_dict:")
    for param_tensor in model.state_dict():
        print(param_tensor, "\t", model.state_dict()[param_tensor].size())
    train_steps(model, optimizer, inputs, labels, 2)
    print("Optimizer's state_dict:")
    for var_name in optimizer.state_dict():
        print(var_name, "\t", optimizer.state_dict()[var_name])

    with tempfile.TemporaryDirectory() as d:
        PATH = os.path.join(d, "model.pt")
        torch.save(model.state_dict(), PATH)
        model2 = TheModelClass()
        model2.load_state_dict(torch.load(PATH, weights_only=True))
        model2.eval()
        assert torch.equal(model2(inputs), model.eval()(inputs))
        model.train()

        whole = os.path.join(d, "whole.pt")
        torch.save(model, whole)
        model3 = torch.load(whole, weights_only=False)
        model3.eval()
        assert type(model3) is TheModelClass and not model3.training
        assert torch.equal(model3.fc2.bias, model.fc2.bias)

        # a general checkpoint, then training goes on from it in a fresh model and optimizer
        ckpt = os.path.join(d, "checkpoint.tar")
        epoch, loss = 2, 0.5
        torch.save({
            'epoch': epoch,
            'model_state_dict': model.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(),
            'loss': loss,
        }, ckpt)
        continued = train_steps(model, optimizer, inputs, labels, 3)

        resumed_model = TheModelClass()
        resumed_opt = optim.SGD(resumed_model.parameters(), lr=0.5, momentum=0.0)
        checkpoint = torch.load(ckpt, weights_only=True)
        resumed_model.load_state_dict(checkpoint['model_state_dict'])
        resumed_opt.load_state_dict(checkpoint['optimizer_state_dict'])
        assert checkpoint['epoch'] == 2 and checkpoint['loss'] == 0.5
        assert resumed_opt.param_groups[0]['lr'] == 0.01
        assert resumed_opt.param_groups[0]['momentum'] == 0.9
        resumed_model.train()
        resumed = train_steps(resumed_model, resumed_opt, inputs, labels, 3)
        print("continued", continued, "resumed", resumed)
        for a, b in zip(continued, resumed):
            assert abs(a - b) <= 1e-6 * max(1.0, abs(a)), (continued, resumed)

        # several models in one file
        modelA, modelB = TheModelClass(), TheModelClass()
        optimizerA = optim.SGD(modelA.parameters(), lr=0.001, momentum=0.9)
        both = os.path.join(d, "both.tar")
        torch.save({'modelA_state_dict': modelA.state_dict(),
                    'modelB_state_dict': modelB.state_dict(),
                    'optimizerA_state_dict': optimizerA.state_dict()}, both)
        checkpoint = torch.load(both, weights_only=True, map_location=torch.device('cpu'))
        modelB.load_state_dict(checkpoint['modelA_state_dict'])
        assert torch.equal(modelB.conv1.weight, modelA.conv1.weight)

        # warmstarting: the parameters that exist in both, the new layer as initialised
        wide = WiderModel()
        fc3_before = wide.fc3.weight.clone()
        result = wide.load_state_dict(torch.load(PATH, weights_only=True), strict=False)
        assert result.missing_keys == ['fc3.weight', 'fc3.bias'], result
        assert result.unexpected_keys == []
        assert torch.equal(wide.fc1.weight, model2.fc1.weight)
        assert torch.equal(wide.fc3.weight, fc3_before)
        try:
            wide.load_state_dict(torch.load(PATH, weights_only=True))
        except RuntimeError as e:
            assert 'Missing key(s) in state_dict: "fc3.weight", "fc3.bias"' in str(e)
        else:
            raise AssertionError("strict loading should refuse missing keys")

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert list(state) == list(model.state_dict())
    return resumed[-1]


if __name__ == "__main__":
    main()

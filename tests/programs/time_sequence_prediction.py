"""In the style of pytorch/examples time_sequence_prediction: sine waves with random phase as
float64 numpy arrays, two LSTMCells and a Linear stepping over input.split(1, dim=1) and then
predicting future points, trained with LBFGS and a closure, in double precision."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as optim


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 12)
        self.lstm2 = nn.LSTMCell(12, 12)
        self.linear = nn.Linear(12, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 12, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 12, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def make_data(n=8, length=24, period=8):
    x = np.empty((n, length), np.int64)
    x[:] = np.array(range(length)) + np.random.randint(-4 * period, 4 * period, n).reshape(n, 1)
    return np.sin(x / 1.0 / period).astype('float64')


def main():
    np.random.seed(0)
    torch.manual_seed(0)
    data = make_data()
    input = torch.from_numpy(data[2:, :-1])
    target = torch.from_numpy(data[2:, 1:])
    test_input = torch.from_numpy(data[:2, :-1])
    test_target = torch.from_numpy(data[:2, 1:])
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)
    for i in range(2):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            future = 5
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            y = pred.detach().numpy()
    assert y.shape == (2, 23 + 5)
    return loss.item()


if __name__ == "__main__":
    main()

"""In the style of pytorch/examples mnist_hogwild (main.py, with its train.py beside it in
mnist_hogwild_files/): mp.set_start_method('spawn', force=True), model.share_memory(), one
mp.Process per rank training the shared parameters in place (Hogwild), p.join(), then the
test pass in the parent on the updated weights. A TensorDataset of random 28x28 images stands
in for MNIST; args come from argparse as the example's do."""
import argparse
import os
import sys

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mnist_hogwild_files"))
from train import train, test  # noqa: E402

# Training settings
parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                    help='input batch size for training (default: 64)')
parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                    help='input batch size for testing (default: 1000)')
parser.add_argument('--epochs', type=int, default=10, metavar='N',
                    help='number of epochs to train (default: 10)')
parser.add_argument('--lr', type=float, default=0.01, metavar='LR',
                    help='learning rate (default: 0.01)')
parser.add_argument('--momentum', type=float, default=0.5, metavar='M',
                    help='SGD momentum (default: 0.5)')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='how many batches to wait before logging training status')
parser.add_argument('--num-processes', type=int, default=2, metavar='N',
                    help='how many training processes to use (default: 2)')
parser.add_argument('--cuda', action='store_true', default=False,
                    help='enables CUDA training')
parser.add_argument('--mps', action='store_true', default=False,
                    help='enables macOS GPU training')
parser.add_argument('--save_model', action='store_true', default=False,
                    help='save the trained model to state_dict')
parser.add_argument('--dry-run', action='store_true', default=False,
                    help='quickly check a single pass')


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main(argv=("--epochs", "1", "--batch-size", "16", "--test-batch-size", "32",
               "--log-interval", "1")):
    args = parser.parse_args(list(argv))

    use_cuda = args.cuda and torch.cuda.is_available()
    if use_cuda:
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")

    g = torch.Generator().manual_seed(0)
    images = torch.rand(32, 1, 28, 28, generator=g)
    labels = (images.mean((1, 2, 3)) * 100).long() % 10
    dataset1 = torch.utils.data.TensorDataset(images, labels)
    dataset2 = torch.utils.data.TensorDataset(images[:16], labels[:16])
    kwargs = {'batch_size': args.batch_size,
              'shuffle': True}
    if use_cuda:
        kwargs.update({'num_workers': 1,
                       'pin_memory': True,
                      })

    torch.manual_seed(args.seed)
    ctx = mp.get_start_method(allow_none=True)
    mp.set_start_method('spawn', force=True)

    model = Net().to(device)
    model.share_memory() # gradients are allocated lazily, so they are not shared here
    before = [p.detach().clone() for p in model.parameters()]

    processes = []
    try:
        for rank in range(args.num_processes):
            p = mp.Process(target=train, args=(rank, args, model, device, dataset1, kwargs))
            # We first train the model across `num_processes` processes
            p.start()
            processes.append(p)
        for p in processes:
            p.join()
    finally:
        mp.set_start_method(ctx, force=True)  # (the test process keeps its own method)
    assert all(p.exitcode == 0 for p in processes)
    assert all(p.is_shared() for p in model.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))

    # Once training is complete, we can test the model
    kwargs['batch_size'] = args.test_batch_size
    return test(args, model, device, dataset2, kwargs)


if __name__ == '__main__':
    main(sys.argv[1:])

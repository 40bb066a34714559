"""In the style of the 60-minute blitz "Training a classifier" (CIFAR-10) tutorial: a LeNet
(Conv2d, MaxPool2d, flatten, three Linear), CrossEntropyLoss, SGD with momentum, the loss
printed every few mini-batches, the state dict saved to PATH and loaded back, torch.max(outputs,
1) predictions, and per-class accuracy counted by indexing the class tuple with label tensors.
Random 32x32 colour images stand in for CIFAR-10."""
import os
import tempfile

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
import fusetorch.optim as optim

classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main():
    torch.manual_seed(0)
    images = torch.rand(16, 3, 32, 32) * 2 - 1
    labels = torch.randint(0, 10, (16,))
    trainset = torch.utils.data.TensorDataset(images[:12], labels[:12])
    testset = torch.utils.data.TensorDataset(images[12:], labels[12:])
    trainloader = torch.utils.data.DataLoader(trainset, batch_size=4, shuffle=True, num_workers=0)
    testloader = torch.utils.data.DataLoader(testset, batch_size=4, shuffle=False, num_workers=0)
    dataiter = iter(trainloader)
    images_, labels_ = next(dataiter)
    print(' '.join(f'{classes[labels_[j]]:5s}' for j in range(4)))

    net = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    for epoch in range(2):
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels_ = data
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels_)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % 2 == 1:
                print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 2:.3f}')
                running_loss = 0.0
    with tempfile.TemporaryDirectory() as d:
        PATH = os.path.join(d, 'cifar_net.pth')
        torch.save(net.state_dict(), PATH)
        net = Net()
        net.load_state_dict(torch.load(PATH, weights_only=True))
    correct = 0
    total = 0
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data in testloader:
            images_, labels_ = data
            outputs = net(images_)
            _, predicted = torch.max(outputs, 1)
            total += labels_.size(0)
            correct += (predicted == labels_).sum().item()
            for label, prediction in zip(labels_, predicted):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    print(f'Accuracy of the network on the test images: {100 * correct // total} %')
    for classname, correct_count in correct_pred.items():
        if total_pred[classname]:
            accuracy = 100 * float(correct_count) / total_pred[classname]
            print(f'Accuracy for class: {classname:5s} is {accuracy:.1f} %')
    return loss.item()


if __name__ == "__main__":
    main()

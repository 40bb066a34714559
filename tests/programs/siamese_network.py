"""In the style of pytorch/examples siamese_network: a shared convolutional tower (standing in
for torchvision's resnet18 with its first conv swapped for a 1-channel one and its fc removed)
applied to both images, the two embeddings concatenated into an MLP with a Sigmoid head,
xavier_uniform_ init with bias.data.fill_(0.01), BCELoss, Adadelta with StepLR, and a Dataset
that groups examples by class with torch.where(targets == i)[0] and builds same/different
pairs. Accuracy uses torch.where(outputs > 0.5, 1, 0)."""
import random

import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as optim
from fusetorch.optim.lr_scheduler import StepLR
from fusetorch.utils.data import Dataset


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.tower = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self.fc_in_features = 8
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 16),
            nn.ReLU(inplace=True),
            nn.Linear(16, 1),
        )
        self.sigmoid = nn.Sigmoid()
        self.tower.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.tower(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        output = self.sigmoid(output)
        return output


class APP_MATCHER(Dataset):
    def __init__(self, data, targets):
        super(APP_MATCHER, self).__init__()
        self.data = data.clone().float()
        self.targets = targets
        self.group_examples()

    def group_examples(self):
        np_arr = np.array(self.targets.clone())
        self.grouped_examples = {}
        for i in range(0, 3):
            self.grouped_examples[i] = np.where((np_arr == i))[0]
        self.grouped_tensors = {i: torch.where(self.targets == i)[0] for i in range(0, 3)}

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        selected_class = random.randint(0, 2)
        random_index_1 = random.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
        index_1 = self.grouped_examples[selected_class][random_index_1]
        image_1 = self.data[index_1].clone().float()
        if index % 2 == 0:
            random_index_2 = random.randint(0, self.grouped_examples[selected_class].shape[0] - 1)
            index_2 = self.grouped_examples[selected_class][random_index_2]
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(1, dtype=torch.float)
        else:
            other_selected_class = random.randint(0, 2)
            while other_selected_class == selected_class:
                other_selected_class = random.randint(0, 2)
            random_index_2 = random.randint(0, self.grouped_examples[other_selected_class].shape[0] - 1)
            index_2 = self.grouped_examples[other_selected_class][random_index_2]
            image_2 = self.data[index_2].clone().float()
            target = torch.tensor(0, dtype=torch.float)
        return image_1, image_2, target


def main():
    random.seed(0)
    torch.manual_seed(1)
    device = torch.device("cpu")
    data = torch.rand(12, 1, 16, 16)
    targets = torch.arange(12) % 3
    train_loader = torch.utils.data.DataLoader(APP_MATCHER(data, targets), batch_size=4, shuffle=True)
    test_loader = torch.utils.data.DataLoader(APP_MATCHER(data, targets), batch_size=6)
    model = SiameseNetwork().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    for epoch in range(1, 3):
        model.train()
        for batch_idx, (images_1, images_2, targets_) in enumerate(train_loader):
            images_1, images_2, targets_ = images_1.to(device), images_2.to(device), targets_.to(device)
            optimizer.zero_grad()
            outputs = model(images_1, images_2).squeeze()
            loss = criterion(outputs, targets_)
            loss.backward()
            optimizer.step()
        model.eval()
        test_loss = 0
        correct = 0
        with torch.no_grad():
            for (images_1, images_2, targets_) in test_loader:
                outputs = model(images_1, images_2).squeeze()
                test_loss += criterion(outputs, targets_).sum().item()
                pred = torch.where(outputs > 0.5, 1, 0)
                correct += pred.eq(targets_.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        print('Test set: Average loss: {:.4f}, Accuracy: {}/{}'.format(test_loss, correct, len(test_loader.dataset)))
        scheduler.step()
    return test_loss


if __name__ == "__main__":
    main()

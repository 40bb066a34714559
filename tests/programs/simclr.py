"""In the style of sthalles/SimCLR (simclr.py's info_nce_loss and run loop, models/resnet_simclr
.py): two augmented views per image concatenated, a ResNet-ish encoder whose fc is replaced by
an MLP projection head (`nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.
fc)`), labels from `torch.cat([torch.arange(batch_size) for i in range(n_views)], dim=0)` and
`(labels.unsqueeze(0) == labels.unsqueeze(1)).float()`, F.normalize, the similarity matrix
with its diagonal removed by a boolean mask (`similarity_matrix[~mask].view(...)`), positives
and negatives gathered by `labels.bool()`, logits / temperature with zero labels into
CrossEntropyLoss, the top-k `accuracy` helper, Adam with CosineAnnealingLR, GradScaler
(disabled) and autocast(enabled=False). The loss is checked against a numpy NT-Xent."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.cuda.amp import GradScaler, autocast


class SmallBackbone(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim):
        super(ResNetSimCLR, self).__init__()
        self.backbone = SmallBackbone(num_classes=out_dim)
        dim_mlp = self.backbone.fc.in_features
        # add mlp projection head
        self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)

    def forward(self, x):
        return self.backbone(x)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


class SimCLR(object):
    def __init__(self, *args, **kwargs):
        self.args = kwargs["args"]
        self.model = kwargs["model"].to(self.args["device"])
        self.optimizer = kwargs["optimizer"]
        self.scheduler = kwargs["scheduler"]
        self.criterion = torch.nn.CrossEntropyLoss().to(self.args["device"])

    def info_nce_loss(self, features):
        labels = torch.cat([torch.arange(self.args["batch_size"])
                            for i in range(self.args["n_views"])], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        labels = labels.to(self.args["device"])
        features = F.normalize(features, dim=1)
        similarity_matrix = torch.matmul(features, features.T)
        # discard the main diagonal from both: the labels and similarities matrix
        mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.args["device"])
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
        # select and combine multiple positives
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        # select only the negatives the negatives
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(self.args["device"])
        logits = logits / self.args["temperature"]
        return logits, labels

    def train(self, train_loader):
        scaler = GradScaler(enabled=self.args["fp16_precision"])
        n_iter = 0
        for epoch_counter in range(self.args["epochs"]):
            for images, _ in train_loader:
                images = torch.cat(images, dim=0)
                images = images.to(self.args["device"])
                with autocast(enabled=self.args["fp16_precision"]):
                    features = self.model(images)
                    logits, labels = self.info_nce_loss(features)
                    loss = self.criterion(logits, labels)
                self.optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(self.optimizer)
                scaler.update()
                top1, top5 = accuracy(logits, labels, topk=(1, 5))
                n_iter += 1
            # warmup for the first 10 epochs
            if epoch_counter >= 10:
                self.scheduler.step()
        return loss


def nt_xent_numpy(z, batch_size, temperature):
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    sim = z @ z.T / temperature
    n = 2 * batch_size
    total = 0.0
    for i in range(n):
        j = (i + batch_size) % n
        others = [sim[i, k] for k in range(n) if k != i]
        total += -sim[i, j] + np.log(np.sum(np.exp(others)))
    return total / n


def main():
    torch.manual_seed(0)
    args = {"device": "cpu", "batch_size": 4, "n_views": 2, "temperature": 0.07,
            "fp16_precision": False, "epochs": 1}
    model = ResNetSimCLR(out_dim=8)
    optimizer = torch.optim.Adam(model.parameters(), 3e-4, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=0,
                                                           last_epoch=-1)
    simclr = SimCLR(model=model, optimizer=optimizer, scheduler=scheduler, args=args)
    # the loss against numpy's NT-Xent on fixed features
    feats = torch.randn(8, 5, dtype=torch.float64)
    logits, labels = simclr.info_nce_loss(feats)
    got = F.cross_entropy(logits, labels).item()
    assert abs(got - nt_xent_numpy(feats.numpy(), 4, 0.07)) < 1e-9
    images = torch.rand(8, 3, 16, 16)
    # two "augmentations": a flip and added noise, as a list of views per batch
    views = [images.flip(-1), images + 0.05 * torch.randn_like(images)]
    loader = [([v[i:i + 4] for v in views], None) for i in (0, 4)]
    loss = simclr.train(loader)
    return loss.item()

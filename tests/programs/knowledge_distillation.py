"""In the style of the PyTorch tutorial "Knowledge Distillation" (beginner/knowledge_distillation
_tutorial): a deeper teacher and a lighter student CNN, the student trained on `T**2`-scaled
soft targets (`soft_targets * (soft_targets.log() - soft_prob)` summed over the batch) plus
cross-entropy, the cosine-loss variant on flattened hidden representations
(`nn.CosineEmbeddingLoss` with `torch.ones(...)` targets, the teacher's pooled by
`avg_pool1d`), and the regressor variant with an MSE on feature maps; `teacher.eval()` under
`torch.no_grad()`, and the soft target term checked against
`nn.KLDivLoss(reduction="batchmean")`."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.optim as optim
from fusetorch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


class DeepNN(nn.Module):
    def __init__(self, num_classes=10):
        super(DeepNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 8, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, num_classes))

    def forward(self, x):
        x = self.features(x)
        conv_feature_map = x
        x = torch.flatten(x, 1)
        # the tutorial's ModifiedDeepNNCosine: pooled down to the student's width
        hidden = torch.nn.functional.avg_pool1d(x, 2)
        x = self.classifier(x)
        return x, hidden, conv_feature_map


class LightNN(nn.Module):
    def __init__(self, num_classes=10):
        super(LightNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(4, 4, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, num_classes))
        self.regressor = nn.Sequential(nn.Conv2d(4, 8, kernel_size=3, padding=1))

    def forward(self, x):
        x = self.features(x)
        regressor_output = self.regressor(x)
        x = torch.flatten(x, 1)
        hidden = x
        x = self.classifier(x)
        return x, hidden, regressor_output


def train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T,
                                 soft_target_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.eval()  # Teacher set to evaluation mode
    student.train()  # Student to train mode
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.no_grad():
                teacher_logits, _, _ = teacher(inputs)
            student_logits, _, _ = student(inputs)
            soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
            soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
            soft_targets_loss = torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / \
                soft_prob.size()[0] * (T**2)
            kl = nn.KLDivLoss(reduction="batchmean")(soft_prob, soft_targets) * (T**2)
            assert torch.allclose(kl, soft_targets_loss, rtol=1e-5, atol=1e-7)
            label_loss = ce_loss(student_logits, labels)
            loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    return running_loss / len(train_loader)


def train_cosine_loss(teacher, student, train_loader, epochs, learning_rate,
                      hidden_rep_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.to(device)
    student.to(device)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.no_grad():
                _, teacher_hidden_representation, _ = teacher(inputs)
            student_logits, student_hidden_representation, _ = student(inputs)
            hidden_rep_loss = cosine_loss(student_hidden_representation,
                                          teacher_hidden_representation,
                                          target=torch.ones(inputs.size(0)).to(device))
            label_loss = ce_loss(student_logits, labels)
            loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    return running_loss / len(train_loader)


def train_mse_loss(teacher, student, train_loader, epochs, learning_rate,
                   feature_map_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    mse_loss = nn.MSELoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)
    teacher.to(device)
    student.to(device)
    teacher.eval()
    student.train()
    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.no_grad():
                _, _, teacher_feature_map = teacher(inputs)
            student_logits, _, regressor_feature_map = student(inputs)
            hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)
            label_loss = ce_loss(student_logits, labels)
            loss = feature_map_weight * hidden_rep_loss + ce_loss_weight * label_loss
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    return running_loss / len(train_loader)


def test(model, test_loader, device):
    model.to(device)
    model.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, labels in test_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            outputs, _, _ = model(inputs)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    return 100 * correct / total


def main():
    torch.manual_seed(42)
    data = TensorDataset(torch.randn(16, 3, 16, 16), torch.randint(0, 10, (16,)))
    train_loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=0)
    test_loader = DataLoader(data, batch_size=8, shuffle=False, num_workers=0)
    nn_deep = DeepNN(num_classes=10).to(device)
    new_nn_light = LightNN(num_classes=10).to(device)
    total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))
    assert "," in total_params_deep or int(total_params_deep) > 0
    loss = train_knowledge_distillation(teacher=nn_deep, student=new_nn_light,
                                        train_loader=train_loader, epochs=1,
                                        learning_rate=0.001, T=2, soft_target_loss_weight=0.25,
                                        ce_loss_weight=0.75, device=device)
    loss += train_cosine_loss(teacher=nn_deep, student=new_nn_light, train_loader=train_loader,
                              epochs=1, learning_rate=0.001, hidden_rep_loss_weight=0.25,
                              ce_loss_weight=0.75, device=device)
    loss += train_mse_loss(teacher=nn_deep, student=new_nn_light, train_loader=train_loader,
                           epochs=1, learning_rate=0.001, feature_map_weight=0.25,
                           ce_loss_weight=0.75, device=device)
    acc = test(new_nn_light, test_loader, device)
    assert 0 <= acc <= 100
    return loss

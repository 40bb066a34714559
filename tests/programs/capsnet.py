"""In the style of gram-ai/capsule-networks (capsule_network.py) and the CapsNet tutorials:
PrimaryCaps as a ModuleList of Conv2d whose outputs are stacked and squashed, DigitCaps with
routing weights `nn.Parameter(torch.randn(num_capsules, num_route_nodes, in_channels,
out_channels))` applied by broadcasting `x[None, :, :, None, :] @ self.route_weights[:, None,
:, :, :]`, dynamic routing by agreement (softmax over a chosen dim via transpose, `squash`
with `(tensor ** 2).sum(dim=dim, keepdim=True)`), the margin loss, the masked reconstruction
through `torch.eye(NUM_CLASSES).index_select(dim=0, index=max_length_indices)`, Adam."""
import fusetorch as torch
import fusetorch.nn.functional as F
from fusetorch import nn

NUM_CLASSES = 4
NUM_ROUTING_ITERATIONS = 3


def softmax(input, dim=1):
    transposed_input = input.transpose(dim, len(input.size()) - 1)
    softmaxed_output = F.softmax(transposed_input.contiguous().view(-1, transposed_input.size(-1)),
                                 dim=-1)
    return softmaxed_output.view(*transposed_input.size()).transpose(dim, len(input.size()) - 1)


class CapsuleLayer(nn.Module):
    def __init__(self, num_capsules, num_route_nodes, in_channels, out_channels,
                 kernel_size=None, stride=None, num_iterations=NUM_ROUTING_ITERATIONS):
        super(CapsuleLayer, self).__init__()
        self.num_route_nodes = num_route_nodes
        self.num_iterations = num_iterations
        self.num_capsules = num_capsules
        if num_route_nodes != -1:
            self.route_weights = nn.Parameter(torch.randn(num_capsules, num_route_nodes,
                                                          in_channels, out_channels))
        else:
            self.capsules = nn.ModuleList(
                [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                           padding=0) for _ in range(num_capsules)])

    def squash(self, tensor, dim=-1):
        squared_norm = (tensor ** 2).sum(dim=dim, keepdim=True)
        scale = squared_norm / (1 + squared_norm)
        return scale * tensor / torch.sqrt(squared_norm)

    def forward(self, x):
        if self.num_route_nodes != -1:
            priors = x[None, :, :, None, :] @ self.route_weights[:, None, :, :, :]
            logits = torch.zeros(*priors.size())
            for i in range(self.num_iterations):
                probs = softmax(logits, dim=2)
                outputs = self.squash((probs * priors).sum(dim=2, keepdim=True))
                if i != self.num_iterations - 1:
                    delta_logits = (priors * outputs).sum(dim=-1, keepdim=True)
                    logits = logits + delta_logits
        else:
            outputs = [capsule(x).view(x.size(0), -1, 1) for capsule in self.capsules]
            outputs = torch.cat(outputs, dim=-1)
            outputs = self.squash(outputs)
        return outputs


class CapsuleNet(nn.Module):
    def __init__(self):
        super(CapsuleNet, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=16, kernel_size=5, stride=1)
        self.primary_capsules = CapsuleLayer(num_capsules=4, num_route_nodes=-1, in_channels=16,
                                             out_channels=8, kernel_size=5, stride=2)
        self.digit_capsules = CapsuleLayer(num_capsules=NUM_CLASSES, num_route_nodes=8 * 2 * 2,
                                           in_channels=4, out_channels=6)
        self.decoder = nn.Sequential(
            nn.Linear(6 * NUM_CLASSES, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 144),
            nn.Sigmoid(),
        )

    def forward(self, x, y=None):
        x = F.relu(self.conv1(x), inplace=True)
        x = self.primary_capsules(x)
        x = self.digit_capsules(x).squeeze().transpose(0, 1)
        classes = (x ** 2).sum(dim=-1) ** 0.5
        classes = F.softmax(classes, dim=-1)
        if y is None:
            # In all batches, get the most active capsule.
            _, max_length_indices = classes.max(dim=1)
            y = torch.eye(NUM_CLASSES).index_select(dim=0, index=max_length_indices.data)
        reconstructions = self.decoder((x * y[:, :, None]).reshape(x.size(0), -1))
        return classes, reconstructions


class CapsuleLoss(nn.Module):
    def __init__(self):
        super(CapsuleLoss, self).__init__()
        self.reconstruction_loss = nn.MSELoss(reduction="sum")

    def forward(self, images, labels, classes, reconstructions):
        left = F.relu(0.9 - classes, inplace=True) ** 2
        right = F.relu(classes - 0.1, inplace=True) ** 2
        margin_loss = labels * left + 0.5 * (1. - labels) * right
        margin_loss = margin_loss.sum()
        assert torch.numel(images) == torch.numel(reconstructions)
        images = images.view(reconstructions.size()[0], -1)
        reconstruction_loss = self.reconstruction_loss(reconstructions, images)
        return (margin_loss + 0.0005 * reconstruction_loss) / images.size(0)


def main():
    torch.manual_seed(0)
    model = CapsuleNet()
    optimizer = torch.optim.Adam(model.parameters())
    capsule_loss = CapsuleLoss()
    print("# parameters:", sum(param.numel() for param in model.parameters()))
    data = torch.rand(3, 1, 12, 12)
    labels = torch.LongTensor([0, 2, 3])
    labels = torch.eye(NUM_CLASSES).index_select(dim=0, index=labels)
    for _ in range(2):
        classes, reconstructions = model(data, labels)
        loss = capsule_loss(data, labels, classes, reconstructions)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert model.digit_capsules.route_weights.grad.abs().sum() > 0
    with torch.no_grad():
        classes, reconstructions = model(data)
    assert classes.shape == (3, NUM_CLASSES) and reconstructions.shape == (3, 144)
    assert torch.allclose(classes.sum(-1), torch.ones(3))
    # squash keeps direction and maps the norm n to n^2 / (1 + n^2)
    v = torch.tensor([[3.0, 4.0]])
    assert torch.allclose(model.digit_capsules.squash(v), v / 5 * 25 / 26)
    return loss.item()

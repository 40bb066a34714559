"""In the style of the torch.func tutorial "Per-sample-gradients": a small CNN (conv, relu,
max_pool2d, flatten, log_softmax) and nll_loss; per-sample gradients first by a Python loop of
torch.autograd.grad over unsqueezed samples, zip(*...) and torch.stack, then by
vmap(grad(compute_loss), in_dims=(None, None, 0, 0)) over functional_call(model, (params,
buffers), (batch,)) with detached named_parameters/named_buffers dicts. The two must agree, and
their mean over the batch must be the gradient of the batch's mean loss. Scaled down: 10x10
images, few channels, a batch of 6."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.func import functional_call, grad, vmap


class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


def main():
    torch.manual_seed(0)
    device = 'cpu'
    batch_size = 6
    data = torch.randn(batch_size, 1, 10, 10, device=device)
    targets = torch.randint(10, (batch_size,), device=device)

    model = SimpleCNN().to(device=device)
    predictions = model(data)
    loss = loss_fn(predictions, targets)
    batch_grads = torch.autograd.grad(loss, list(model.parameters()))

    def compute_grad(sample, target):
        sample = sample.unsqueeze(0)  # prepend batch dimension for processing
        target = target.unsqueeze(0)
        prediction = model(sample)
        loss = loss_fn(prediction, target)
        return torch.autograd.grad(loss, list(model.parameters()))

    def compute_sample_grads(data, targets):
        """ manually process each sample with per sample gradient """
        sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
        sample_grads = zip(*sample_grads)
        sample_grads = [torch.stack(shards) for shards in sample_grads]
        return sample_grads

    per_sample_grads = compute_sample_grads(data, targets)
    print(per_sample_grads[0].shape)

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        loss = loss_fn(predictions, targets)
        return loss

    ft_compute_grad = grad(compute_loss)
    ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

    assert list(ft_per_sample_grads) == [k for k, _ in model.named_parameters()]
    for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
        assert ft_per_sample_grad.shape == (batch_size,) + per_sample_grad.shape[1:]
        assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    # the batch loss is the mean of the per-sample losses, so its gradient is their mean
    for g, ft in zip(batch_grads, ft_per_sample_grads.values()):
        assert torch.allclose(ft.mean(0), g, atol=1e-5, rtol=1e-4)
    print("per-sample gradients agree")
    return loss.item()


if __name__ == "__main__":
    main()

"""In the style of the forward/backward hook recipes (feature extraction, gradient inspection,
Grad-CAM): register_forward_hook storing activations in a dict by layer name,
register_forward_pre_hook rescaling a layer's input, a forward hook that replaces the output,
register_full_backward_hook recording grad_input/grad_output, register_full_backward_pre_hook,
Tensor.register_hook on an activation (Grad-CAM's channel weights from the pooled gradients),
with_kwargs hooks, handles removed with .remove(), and a gradient-clamping hook on parameters.
The checks: the hooks see exactly the tensors a hand computation gives."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
            nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 5)

    def forward(self, x):
        x = self.features(x)
        x = self.pool(x).flatten(1)
        return self.fc(x)


def main():
    torch.manual_seed(0)
    model = SmallCNN()
    x = torch.randn(2, 3, 8, 8)

    activation = {}

    def get_activation(name):
        def hook(model, input, output):
            activation[name] = output.detach()
        return hook

    handles = [model.features[1].register_forward_hook(get_activation('relu1')),
               model.fc.register_forward_hook(get_activation('fc'))]
    out = model(x)
    assert torch.equal(activation['fc'], out.detach())
    assert torch.equal(activation['relu1'], F.relu(model.features[0](x)).detach())
    for h in handles:
        h.remove()
    activation.clear()
    model(x)
    assert activation == {}

    # a pre-hook that rescales the input, a hook that replaces the output
    pre = model.fc.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    doubled = model(x)
    pre.remove()
    pooled = model.pool(model.features(x)).flatten(1)
    assert torch.allclose(doubled, F.linear(pooled * 2, model.fc.weight, model.fc.bias))
    post = model.fc.register_forward_hook(lambda m, args, output: output.softmax(-1))
    probs = model(x)
    post.remove()
    assert torch.allclose(probs.sum(-1), torch.ones(2))

    # with_kwargs hooks see (and may replace) the keyword arguments
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    seen_kwargs = {}

    def kw_pre_hook(module, args, kwargs):
        return args, {**kwargs, "scale": kwargs.get("scale", 1.0) * 3}

    def kw_hook(module, args, kwargs, output):
        seen_kwargs.update(kwargs)
    scaled = Scaled()
    hs = [scaled.register_forward_pre_hook(kw_pre_hook, with_kwargs=True),
          scaled.register_forward_hook(kw_hook, with_kwargs=True)]
    assert torch.equal(scaled(pooled, scale=2.0), pooled * 6.0)
    assert seen_kwargs == {"scale": 6.0}
    for h in hs:
        h.remove()
    assert torch.equal(scaled(pooled, scale=2.0), pooled * 2.0)

    # backward hooks: grad_output of fc is dL/dout; grad_input is W^T dL/dout
    grads = {}

    def backward_hook(module, grad_input, grad_output):
        grads['in'] = grad_input[0].detach()
        grads['out'] = grad_output[0].detach()

    def backward_pre_hook(module, grad_output):
        grads['pre'] = grad_output[0].detach()

    h1 = model.fc.register_full_backward_hook(backward_hook)
    h2 = model.fc.register_full_backward_pre_hook(backward_pre_hook)
    target = torch.tensor([1, 3])
    model.zero_grad()
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    h1.remove()
    h2.remove()
    logits = model(x).detach()
    dlogits = (logits.softmax(-1) - F.one_hot(target, 5).float()) / 2
    assert torch.allclose(grads['out'], dlogits, atol=1e-6)
    assert torch.allclose(grads['pre'], dlogits, atol=1e-6)
    assert torch.allclose(grads['in'], dlogits @ model.fc.weight.detach(), atol=1e-6)

    # Grad-CAM: the last conv activation's gradient through Tensor.register_hook
    store = {}

    def save_activation(module, input, output):
        store['act'] = output
        output.register_hook(lambda grad: store.__setitem__('grad', grad))

    h = model.features[3].register_forward_hook(save_activation)
    scores = model(x)
    h.remove()
    model.zero_grad()
    scores[:, 2].sum().backward()
    weights = store['grad'].mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * store['act']).sum(1)).detach()
    assert cam.shape == (2, 8, 8)
    # d score_2 / d act[c, i, j] = W[2, c] / 64 where the ReLU passes, the pooling's average
    mask = (store['act'] > 0).float()
    expect = model.fc.weight[2].detach().view(1, 6, 1, 1) / 64 * torch.ones_like(mask)
    assert torch.allclose(store['grad'], expect, atol=1e-7)

    # a gradient clamp on every parameter, as the gradient-clipping-by-hook recipe does
    for p in model.parameters():
        p.register_hook(lambda grad: torch.clamp(grad, -0.01, 0.01))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), target)
        loss.backward()
        assert all(p.grad.abs().max() <= 0.01 for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    print("losses", [round(v, 4) for v in losses])
    assert losses[-1] < losses[0]
    return losses[-1]


if __name__ == "__main__":
    main()

"""In the style of the "Hooks for autograd saved tensors" tutorial: pack/unpack hooks that print,
that save to disk (a temporary directory, torch.save/torch.load of each saved tensor), that
count saved elements, torch.autograd.graph.saved_tensors_hooks as a context manager and as a
subclass (SelfDeletingTempFile's pattern), save_on_cpu, the grad_fn's _raw_saved_self and
register_hooks on one SavedTensor, and the tutorial's check that gradients stay the same."""
import os
import tempfile
import uuid

import fusetorch as torch
import fusetorch.nn as nn


def pack_hook(x):
    print("Packing", x.shape)
    return x


def unpack_hook(x):
    print("Unpacking", x.shape)
    return x


class SelfDeletingTempFile():
    def __init__(self, tmp_dir):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)


class SaveToDisk(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self, tmp_dir):
        def pack_to_disk(tensor):
            temp_file = SelfDeletingTempFile(tmp_dir)
            torch.save(tensor, temp_file.name)
            return temp_file

        def unpack_from_disk(temp_file):
            return torch.load(temp_file.name, weights_only=True)

        super().__init__(pack_to_disk, unpack_from_disk)


def main():
    torch.manual_seed(0)
    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    y = a * b
    assert y.grad_fn._saved_self.equal(a) and y.grad_fn._saved_other.equal(b)
    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    print(y.grad_fn._saved_self is x)  # True
    y = x.exp()
    print(y.grad_fn._saved_result.equal(y))  # True
    print(y.grad_fn._saved_result is y)  # False

    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(pack_hook, unpack_hook)
    y.sum().backward()

    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b
    y.sum().backward()

    # counting what is saved
    counted = []

    def pack_count(x):
        counted.append(x.numel())
        return x

    model = nn.Sequential(nn.Linear(10, 100), nn.ReLU(), nn.Linear(100, 10))
    x = torch.randn(8, 10)
    with torch.autograd.graph.saved_tensors_hooks(pack_count, lambda x: x):
        loss = model(x).sum()
    loss.backward()
    print("saved elements", sum(counted))
    reference = [p.grad.clone() for p in model.parameters()]

    # saving to disk gives the same gradients
    with tempfile.TemporaryDirectory() as tmp_dir:
        model.zero_grad()
        with SaveToDisk(tmp_dir):
            loss = model(x).sum()
        loss.backward()
        for p, r in zip(model.parameters(), reference):
            assert torch.allclose(p.grad, r)

    # hooks returning copies (the tutorial's "pack to CPU" step) and save_on_cpu
    def pack_to_cpu(tensor):
        return (tensor.device, tensor.cpu())

    def unpack_from_cpu(packed):
        device, tensor = packed
        return tensor.to(device)

    model.zero_grad()
    with torch.autograd.graph.saved_tensors_hooks(pack_to_cpu, unpack_from_cpu):
        loss = model(x).sum()
    loss.backward()
    model.zero_grad()
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        loss = model(x).sum()
    loss.backward()
    for p, r in zip(model.parameters(), reference):
        assert torch.allclose(p.grad, r)
    return loss.item()


if __name__ == "__main__":
    main()

"""In the style of the PyTorch "Automatic differentiation with torch.autograd" tutorial: a
one-layer logistic model's gradients, grad_fn, no_grad and detach, and the Jacobian-vector
product with retain_graph and accumulating gradients."""
import fusetorch as torch


def main():
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")
    loss.backward()
    print(w.grad)
    print(b.grad)
    # d loss / d b = (sigmoid(z) - y) / 3, and every row of w.grad repeats it (x is ones)
    expect = (torch.sigmoid(z.detach()) - y) / 3
    assert torch.allclose(b.grad, expect, atol=1e-6)
    assert torch.allclose(w.grad, expect.expand(5, 3), atol=1e-6)

    z = torch.matmul(x, w) + b
    assert z.requires_grad
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    assert not z.requires_grad
    z = torch.matmul(x, w) + b
    z_det = z.detach()
    assert not z_det.requires_grad

    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    first = inp.grad.clone()
    print(f"First call\n{inp.grad}")
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nSecond call\n{inp.grad}")
    assert torch.allclose(inp.grad, 2 * first)
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nCall after zeroing gradients\n{inp.grad}")
    assert torch.allclose(inp.grad, first)
    return loss.item()


if __name__ == "__main__":
    main()

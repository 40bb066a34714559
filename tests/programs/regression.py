"""In the style of pytorch/examples regression/main.py: fit a degree-4 polynomial with one
nn.Linear from batches of x, x^2, x^3, x^4 made by torch.cat; smooth_l1_loss; manual updates
param.data.add_(-lr * param.grad); a printed description of the learned polynomial."""
import fusetorch as torch
import fusetorch.nn.functional as F

POLY_DEGREE = 4


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def poly_desc(W, b):
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


def main():
    torch.manual_seed(0)
    W_target = torch.randn(POLY_DEGREE, 1) * 5
    b_target = torch.randn(1) * 5

    def f(x):
        return x.mm(W_target) + b_target.item()

    def get_batch(batch_size=32):
        random = torch.randn(batch_size)
        x = make_features(random)
        y = f(x)
        return x, y

    fc = torch.nn.Linear(W_target.size(0), 1)
    for batch_idx in range(1, 60):
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        if loss < 1e-3:
            break
    print('Loss: {:.6f} after {} batches'.format(loss, batch_idx))
    print('==> Learned function:\t' + poly_desc(fc.weight.view(-1), fc.bias))
    print('==> Actual function:\t' + poly_desc(W_target.view(-1), b_target))
    return loss


if __name__ == "__main__":
    main()

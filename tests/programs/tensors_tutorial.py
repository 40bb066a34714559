"""In the style of the PyTorch "Tensors" tutorial: tensors from data, from numpy and from other
tensors; attributes; moving to an accelerator when there is one; indexing and slicing
assignment; joining; arithmetic with out=; single-element tensors; in-place ops; and the numpy
bridge sharing memory both ways."""
import numpy as np

import fusetorch as torch


def main():
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    assert torch.equal(x_data, x_np)

    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    print(f"Ones Tensor: \n {x_ones} \n\nRandom Tensor: \n {x_rand} \n")

    shape = (2, 3,)
    rand_tensor, ones_tensor, zeros_tensor = torch.rand(shape), torch.ones(shape), torch.zeros(shape)
    assert rand_tensor.shape == ones_tensor.shape == zeros_tensor.shape == torch.Size([2, 3])

    tensor = torch.rand(3, 4)
    print(f"Shape: {tensor.shape} Datatype: {tensor.dtype} Device: {tensor.device}")
    if torch.cuda.is_available():
        tensor = tensor.to("cuda")

    tensor = torch.ones(4, 4)
    print(f"First row: {tensor[0]}")
    print(f"First column: {tensor[:, 0]}")
    print(f"Last column: {tensor[..., -1]}")
    tensor[:, 1] = 0
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    assert t1.shape == (4, 12)

    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    assert torch.equal(y1, y2) and torch.equal(y1, y3) and torch.equal(z1, z2) and torch.equal(z1, z3)

    agg = tensor.sum()
    agg_item = agg.item()
    print(agg_item, type(agg_item))
    assert agg_item == 12.0

    tensor.add_(5)
    assert tensor[0, 0].item() == 6.0

    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    assert n[0] == 2.0  # the numpy view sees the in-place change
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    assert t[0].item() == 2.0  # and the tensor sees numpy's
    return float(agg_item)


if __name__ == "__main__":
    main()

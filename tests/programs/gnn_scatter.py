"""In the style of hand-written message-passing GNNs (PyG's MessagePassing docs re-done without
torch_scatter, as in many tutorials and the GraphSAGE/GIN reference implementations): edge_index
as a 2 x E LongTensor, messages gathered with index_select, aggregated with `index_add_`
(sum), `scatter_reduce(..., reduce="amax"/"mean", include_self=False)` and `scatter_add_`,
degree normalisation from `torch.bincount`/`degree`, a GIN layer with a learnable eps and a
SAGE layer with max aggregation, global mean pooling over a batch vector, cross-entropy over
graphs; values checked against numpy loops (repeated indices, a node with no edges)."""
import numpy as np

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


def degree(index, num_nodes, dtype=None):
    out = torch.zeros((num_nodes,), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0),), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)


def scatter(src, index, dim_size, reduce="sum"):
    index_b = index.view(-1, 1).expand_as(src)
    out = src.new_zeros((dim_size, src.size(1)))
    if reduce == "sum":
        return out.index_add_(0, index, src)
    if reduce == "max":
        return out.scatter_reduce(0, index_b, src, reduce="amax", include_self=False)
    if reduce == "mean":
        return out.scatter_reduce(0, index_b, src, reduce="mean", include_self=False)
    raise ValueError(reduce)


class GINConv(nn.Module):
    def __init__(self, nn_, eps=0.0, train_eps=True):
        super().__init__()
        self.nn = nn_
        if train_eps:
            self.eps = nn.Parameter(torch.empty(1))
        else:
            self.register_buffer("eps", torch.empty(1))
        self.initial_eps = eps
        self.eps.data.fill_(self.initial_eps)

    def forward(self, x, edge_index):
        src, dst = edge_index
        out = scatter(x.index_select(0, src), dst, x.size(0), "sum")
        return self.nn(out + (1 + self.eps) * x)


class SAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, aggr="max"):
        super().__init__()
        self.aggr = aggr
        self.lin_l = nn.Linear(in_channels, out_channels)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index
        out = scatter(x[src], dst, x.size(0), self.aggr)
        out = self.lin_l(out) + self.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1)


def global_mean_pool(x, batch, size):
    count = torch.bincount(batch, minlength=size).clamp(min=1).to(x.dtype)
    return scatter(x, batch, size, "sum") / count.view(-1, 1)


class Net(nn.Module):
    def __init__(self, in_channels, hidden, num_classes):
        super().__init__()
        self.conv1 = GINConv(nn.Sequential(nn.Linear(in_channels, hidden), nn.ReLU(),
                                           nn.Linear(hidden, hidden)))
        self.conv2 = SAGEConv(hidden, hidden, aggr="max")
        self.conv3 = SAGEConv(hidden, hidden, aggr="mean")
        self.lin = nn.Linear(hidden, num_classes)

    def forward(self, x, edge_index, batch, num_graphs):
        x = F.relu(self.conv1(x, edge_index))
        x = F.relu(self.conv2(x, edge_index))
        x = self.conv3(x, edge_index)
        x = global_mean_pool(x, batch, num_graphs)
        return self.lin(F.dropout(x, p=0.5, training=self.training))


def check_scatter():
    # node 3 receives nothing; node 0 receives twice from node 1 (a repeated edge)
    edge_index = torch.tensor([[1, 1, 2, 0, 4], [0, 0, 0, 2, 1]])
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0], [7.0, 7.0], [0.0, -3.0]])
    src, dst = edge_index.numpy()
    xs = x.numpy()
    ref_sum = np.zeros((5, 2))
    ref_max = np.zeros((5, 2))
    seen = [[] for _ in range(5)]
    for s, d in zip(src, dst):
        ref_sum[d] += xs[s]
        seen[d].append(xs[s])
    ref_mean = np.zeros((5, 2))
    for d in range(5):
        if seen[d]:
            ref_max[d] = np.max(seen[d], 0)
            ref_mean[d] = np.mean(seen[d], 0)
    for reduce, ref in (("sum", ref_sum), ("max", ref_max), ("mean", ref_mean)):
        got = scatter(x[edge_index[0]], edge_index[1], 5, reduce)
        assert np.allclose(got.numpy(), ref), (reduce, got, ref)
    assert degree(edge_index[1], 5).tolist() == [3.0, 1.0, 1.0, 0.0, 0.0]
    # gradients of amax flow to the maximum (ties split evenly, as PyTorch's)
    xg = x.clone().requires_grad_()
    scatter(xg[edge_index[0]], edge_index[1], 5, "max").sum().backward()
    assert xg.grad[1].tolist() == [1.0, 0.0] and xg.grad[2].tolist() == [0.0, 1.0], xg.grad
    xg.grad = None
    scatter(xg[edge_index[0]], edge_index[1], 5, "mean").sum().backward()
    assert np.allclose(xg.grad.numpy()[1], [2 / 3, 2 / 3]), xg.grad


def main():
    torch.manual_seed(0)
    check_scatter()
    # a batch of 3 random graphs, 6 nodes each
    num_graphs, n, feats = 3, 6, 5
    edges = []
    for g in range(num_graphs):
        e = torch.randint(0, n, (2, 10)) + g * n
        edges.append(torch.cat([e, e.flip(0)], 1))  # undirected
    edge_index = torch.cat(edges, 1)
    x = torch.randn(num_graphs * n, feats)
    batch = torch.arange(num_graphs).repeat_interleave(n)
    y = torch.tensor([0, 1, 1])
    model = Net(feats, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model.train()
    for epoch in range(3):
        optimizer.zero_grad()
        out = model(x, edge_index, batch, num_graphs)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
    assert model.conv1.eps.grad is not None
    model.eval()
    with torch.no_grad():
        pred = model(x, edge_index, batch, num_graphs).argmax(dim=1)
        correct = int((pred == y).sum())
    assert 0 <= correct <= 3
    return loss.item()

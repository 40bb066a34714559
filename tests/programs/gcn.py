"""In the style of pytorch/examples gcn/main.py (Kipf & Welling's GCN on Cora): a symmetric
normalized adjacency with self-loops made sparse with `to_sparse()`, GraphConv layers computing
`torch.sparse.mm(adj, x @ W)` (and `torch.spmm`), dropout, log_softmax, nll_loss on the training
nodes, Adam with weight decay; accuracy on the held-out nodes. A random graph stands in for
Cora."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.sparse.mm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super(GCN, self).__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def normalized_adjacency(n, p, generator):
    a = (torch.rand(n, n, generator=generator) < p).float()
    a = ((a + a.t()) > 0).float()
    a = a + torch.eye(n)
    a = (a > 0).float()
    deg = a.sum(1)
    d_inv_sqrt = torch.pow(deg, -0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
    d = torch.diag(d_inv_sqrt)
    return (d @ a @ d).to_sparse()


def main():
    torch.manual_seed(42)
    g = torch.Generator().manual_seed(0)
    n, features, classes = 40, 12, 3
    adj = normalized_adjacency(n, 0.1, g)
    assert adj.is_sparse and adj.layout == torch.sparse_coo
    x = torch.randn(n, features, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    idx_train, idx_test = torch.arange(0, 25), torch.arange(25, n)
    model = GCN(features, 16, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        output = model(x, adj)
        loss = F.nll_loss(output[idx_train], labels[idx_train])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        output = model(x, adj)
        test_loss = F.nll_loss(output[idx_test], labels[idx_test])
        pred = output[idx_test].max(1)[1]
        acc = pred.eq(labels[idx_test]).double().sum() / len(idx_test)
        # the same product through torch.spmm and a dense adjacency
        dense = torch.mm(adj.to_dense(), x)
        assert torch.allclose(torch.spmm(adj, x), dense, atol=1e-5)
    print(f"Test set results: loss= {test_loss.item():.4f} accuracy= {acc.item():.4f}")
    return float(loss.item())


if __name__ == "__main__":
    main()

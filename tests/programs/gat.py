"""In the style of pytorch/examples gat/main.py (Velickovic et al.'s graph attention network on
Cora): GraphAttentionLayer with `nn.Parameter(torch.empty(size=(...)))` and xavier_normal_
init, per-head scores by `torch.matmul` against slices of `self.a` and `.mT`, LeakyReLU, a
`torch.where(adj_mat > 0, e, -9e16 * torch.ones_like(e))` connectivity mask, softmax and
dropout, heads concatenated (`permute(1, 0, 2).contiguous().view`) or averaged; a dense
adjacency filled by fancy indexing, `torch.randperm` splits, Adam with weight decay, NLLLoss on
log_softmax, `torch.backends.mps.is_available()` and the `.eq(...).sum().item()` accuracy. A
random graph stands in for Cora."""
import fusetorch as torch
from fusetorch import nn
import fusetorch.nn.functional as F


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features: int, out_features: int,
                 n_heads: int, concat: bool = False, dropout: float = 0.4,
                 leaky_relu_slope: float = 0.2):
        super(GraphAttentionLayer, self).__init__()
        self.n_heads = n_heads
        self.concat = concat
        self.dropout = dropout
        if concat:
            self.out_features = out_features
            assert out_features % n_heads == 0
            self.n_hidden = out_features // n_heads
        else:
            self.n_hidden = out_features
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))
        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)
        self.softmax = nn.Softmax(dim=1)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        source_scores = torch.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def forward(self, h: torch.Tensor, adj_mat: torch.Tensor):
        n_nodes = h.shape[0]
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        e = self._get_attention_scores(h_transformed)
        connectivity_mask = -9e16 * torch.ones_like(e)
        e = torch.where(adj_mat > 0, e, connectivity_mask)
        attention = F.softmax(e, dim=-1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, h_transformed)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        else:
            h_prime = h_prime.mean(dim=0)
        return h_prime


class GAT(nn.Module):
    def __init__(self, in_features, n_hidden, n_heads, num_classes, concat=False,
                 dropout=0.4, leaky_relu_slope=0.2):
        super(GAT, self).__init__()
        self.gat1 = GraphAttentionLayer(
            in_features=in_features, out_features=n_hidden, n_heads=n_heads,
            concat=concat, dropout=dropout, leaky_relu_slope=leaky_relu_slope)
        self.gat2 = GraphAttentionLayer(
            in_features=n_hidden, out_features=num_classes, n_heads=1,
            concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope)

    def forward(self, input_tensor: torch.Tensor, adj_mat: torch.Tensor):
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x)
        x = self.gat2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, print_every=10):
    model.train()
    optimizer.zero_grad()
    y = model(*input)
    loss = criterion(y[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    return loss.item()


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


def main():
    torch.manual_seed(13)
    use_cuda = torch.cuda.is_available()
    use_mps = torch.backends.mps.is_available()
    if use_cuda:
        device = torch.device('cuda')
    elif use_mps:
        device = torch.device('mps')
    else:
        device = torch.device('cpu')

    n_nodes, n_feats, n_classes = 24, 10, 3
    features = (torch.rand(n_nodes, n_feats) < 0.3).float()
    features = features / features.sum(dim=1, keepdim=True).clamp(min=1)
    labels = torch.randint(0, n_classes, (n_nodes,))
    edges = torch.randint(0, n_nodes, (60, 2))
    adj_mat = torch.zeros((n_nodes, n_nodes))
    adj_mat[edges[:, 0], edges[:, 1]] = 1
    adj_mat[edges[:, 1], edges[:, 0]] = 1
    adj_mat += torch.eye(n_nodes)

    idx = torch.randperm(n_nodes).to(device)
    idx_test, idx_val, idx_train = idx[:6], idx[6:12], idx[12:]
    features, adj_mat, labels = features.to(device), adj_mat.to(device), labels.to(device)

    gat_net = GAT(in_features=n_feats, n_hidden=8, n_heads=2, num_classes=n_classes,
                  concat=False, dropout=0.6, leaky_relu_slope=0.2).to(device)
    optimizer = torch.optim.Adam(gat_net.parameters(), lr=0.005, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(3):
        train_iter(epoch + 1, gat_net, optimizer, criterion, (features, adj_mat), labels,
                   idx_train)
        loss_val, acc_val = test(gat_net, criterion, (features, adj_mat), labels, idx_val)
    loss_test, acc_test = test(gat_net, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
    concat = GraphAttentionLayer(n_feats, 8, n_heads=2, concat=True)
    assert concat(features, adj_mat).shape == (n_nodes, 8)
    return loss_test


if __name__ == "__main__":
    main()

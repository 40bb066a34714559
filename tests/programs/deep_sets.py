"""In the style of manzilzaheer/DeepSets' PointCloud and sum-of-digits models: a permutation-
equivariant layer (PermEqui1_max: x - x.max(1, keepdim=True)), the invariant phi/rho
network with x.sum(1) pooling, ELU/Tanh stacks, Dropout, and a check that a shuffled set gives
the same output. Random sets stand in for ModelNet40 point clouds."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class PermEqui1_max(nn.Module):
    def __init__(self, in_dim, out_dim):
        super(PermEqui1_max, self).__init__()
        self.Gamma = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        xm, _ = x.max(1, keepdim=True)
        x = self.Gamma(x-xm)
        return x


class PermEqui2_mean(nn.Module):
    def __init__(self, in_dim, out_dim):
        super(PermEqui2_mean, self).__init__()
        self.Gamma = nn.Linear(in_dim, out_dim)
        self.Lambda = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, x):
        xm = x.mean(1, keepdim=True)
        xm = self.Lambda(xm)
        x = self.Gamma(x)
        x = x - xm
        return x


class D(nn.Module):
    def __init__(self, d_dim, x_dim=3, pool='mean'):
        super(D, self).__init__()
        self.d_dim = d_dim
        self.x_dim = x_dim
        if pool == 'max':
            self.phi = nn.Sequential(
              PermEqui1_max(self.x_dim, self.d_dim),
              nn.ELU(inplace=True),
              PermEqui1_max(self.d_dim, self.d_dim),
              nn.ELU(inplace=True),
              PermEqui1_max(self.d_dim, self.d_dim),
              nn.ELU(inplace=True),
            )
        elif pool == 'mean':
            self.phi = nn.Sequential(
              PermEqui2_mean(self.x_dim, self.d_dim),
              nn.ELU(inplace=True),
              PermEqui2_mean(self.d_dim, self.d_dim),
              nn.ELU(inplace=True),
              PermEqui2_mean(self.d_dim, self.d_dim),
              nn.ELU(inplace=True),
            )
        self.ro = nn.Sequential(
           nn.Dropout(p=0.5),
           nn.Linear(self.d_dim, self.d_dim),
           nn.ELU(inplace=True),
           nn.Dropout(p=0.5),
           nn.Linear(self.d_dim, 40),
        )
        print(self)

    def forward(self, x):
        phi_output = self.phi(x)
        sum_output, _ = phi_output.max(1)
        ro_output = self.ro(sum_output)
        return ro_output


class DeepSet(nn.Module):
    def __init__(self, in_features, set_features=50):
        super(DeepSet, self).__init__()
        self.in_features = in_features
        self.out_features = set_features
        self.feature_extractor = nn.Sequential(
            nn.Linear(in_features, 50),
            nn.ELU(inplace=True),
            nn.Linear(50, 100),
            nn.ELU(inplace=True),
            nn.Linear(100, set_features)
        )
        self.regressor = nn.Sequential(
            nn.Linear(set_features, 30),
            nn.ELU(inplace=True),
            nn.Linear(30, 30),
            nn.ELU(inplace=True),
            nn.Linear(30, 10),
            nn.ELU(inplace=True),
            nn.Linear(10, 1),
        )

    def forward(self, input):
        x = input
        x = self.feature_extractor(x)
        x = x.sum(dim=1)
        x = self.regressor(x)
        return x


def main():
    torch.manual_seed(0)
    losses = []
    for pool in ('max', 'mean'):
        model = D(32, pool=pool)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-7, eps=1e-3)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.1)
        for step in range(3):
            x = torch.randn(4, 50, 3)
            y = torch.randint(0, 40, (4,))
            model.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            clip = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            x = torch.randn(2, 50, 3)
            perm = torch.randperm(50)
            assert torch.allclose(model(x), model(x[:, perm]), atol=1e-5)

    # sum of digits: sets of one-hot digits
    model = DeepSet(10)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(3):
        digits = torch.randint(0, 10, (8, 6))
        x = F.one_hot(digits, 10).float()
        target = digits.sum(1, keepdim=True).float()
        loss = F.l1_loss(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return sum(losses) + loss.item()


if __name__ == "__main__":
    main()

"""In the style of dragen1860/MAML-Pytorch on sine regression: a Learner whose weights live in
an nn.ParameterList (printed through its extra_repr), a functional forward over F.linear and
F.batch_norm(training=True) with running statistics as non-trainable Parameters, inner-loop
fast weights from autograd.grad(create_graph=True) for several steps, and the second-order
meta-gradient through them into Adam. Weights set from numpy: the three meta-losses agree with
PyTorch 2.13's to 1e-7."""
import numpy as np
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch import optim
from collections import OrderedDict


class Learner(nn.Module):
    def __init__(self, config):
        super(Learner, self).__init__()
        self.config = config
        self.vars = nn.ParameterList()
        self.vars_bn = nn.ParameterList()
        for i, (name, param) in enumerate(self.config):
            if name == 'linear':
                w = nn.Parameter(torch.ones(*param))
                torch.nn.init.kaiming_normal_(w)
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
            elif name == 'bn':
                w = nn.Parameter(torch.ones(param[0]))
                self.vars.append(w)
                self.vars.append(nn.Parameter(torch.zeros(param[0])))
                running_mean = nn.Parameter(torch.zeros(param[0]), requires_grad=False)
                running_var = nn.Parameter(torch.ones(param[0]), requires_grad=False)
                self.vars_bn.extend([running_mean, running_var])
            elif name in ['relu', 'tanh']:
                continue

    def extra_repr(self):
        info = ''
        for name, param in self.config:
            if name == 'linear':
                tmp = 'linear:(in:%d, out:%d)' % (param[1], param[0])
                info += tmp + '\n'
            else:
                info += name + ':' + str(tuple(param)) + '\n'
        return info

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        bn_idx = 0
        for name, param in self.config:
            if name == 'linear':
                w, b = vars[idx], vars[idx + 1]
                x = F.linear(x, w, b)
                idx += 2
            elif name == 'bn':
                w, b = vars[idx], vars[idx + 1]
                running_mean, running_var = self.vars_bn[bn_idx], self.vars_bn[bn_idx+1]
                x = F.batch_norm(x, running_mean, running_var, weight=w, bias=b, training=bn_training)
                idx += 2
                bn_idx += 2
            elif name == 'relu':
                x = F.relu(x, inplace=param[0])
            elif name == 'tanh':
                x = F.tanh(x)
        assert idx == len(vars)
        assert bn_idx == len(self.vars_bn)
        return x

    def zero_grad(self, vars=None):
        with torch.no_grad():
            if vars is None:
                for p in self.vars:
                    if p.grad is not None:
                        p.grad.zero_()
            else:
                for p in vars:
                    if p.grad is not None:
                        p.grad.zero_()

    def parameters(self):
        return self.vars


class Meta(nn.Module):
    def __init__(self, config, update_lr=0.01, meta_lr=1e-3, update_step=2):
        super(Meta, self).__init__()
        self.update_lr = update_lr
        self.update_step = update_step
        self.net = Learner(config)
        self.meta_optim = optim.Adam(self.net.parameters(), lr=meta_lr)

    def clip_grad_by_norm_(self, grad, max_norm):
        total_norm = 0
        counter = 0
        for g in grad:
            param_norm = g.data.norm(2)
            total_norm += param_norm.item() ** 2
            counter += 1
        total_norm = total_norm ** (1. / 2)
        clip_coef = max_norm / (total_norm + 1e-6)
        if clip_coef < 1:
            for g in grad:
                g.data.mul_(clip_coef)
        return total_norm / counter

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        losses_q = [0 for _ in range(self.update_step + 1)]
        for i in range(task_num):
            logits = self.net(x_spt[i], vars=None, bn_training=True)
            loss = F.mse_loss(logits, y_spt[i])
            grad = torch.autograd.grad(loss, self.net.parameters(), create_graph=True)
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))
            with torch.no_grad():
                logits_q = self.net(x_qry[i], self.net.parameters(), bn_training=True)
                losses_q[0] += F.mse_loss(logits_q, y_qry[i])
            for k in range(1, self.update_step):
                logits = self.net(x_spt[i], fast_weights, bn_training=True)
                loss = F.mse_loss(logits, y_spt[i])
                grad = torch.autograd.grad(loss, fast_weights, create_graph=True)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                logits_q = self.net(x_qry[i], fast_weights, bn_training=True)
                loss_q = F.mse_loss(logits_q, y_qry[i])
                losses_q[k + 1] += loss_q
        loss_q = losses_q[-1] / task_num
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()
        return loss_q.item()


def sine_tasks(rng, n_tasks, k):
    amp = rng.uniform(0.1, 5.0, (n_tasks, 1, 1))
    phase = rng.uniform(0, np.pi, (n_tasks, 1, 1))
    xs = rng.uniform(-5, 5, (n_tasks, 2 * k, 1))
    ys = amp * np.sin(xs - phase)
    t = lambda a: torch.from_numpy(a.astype(np.float32))
    return t(xs[:, :k]), t(ys[:, :k]), t(xs[:, k:]), t(ys[:, k:])


def main():
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    config = [('linear', [16, 1]), ('relu', [True]), ('bn', [16]), ('linear', [16, 16]),
              ('relu', [True]), ('linear', [1, 16])]
    maml = Meta(config, update_step=3)
    with torch.no_grad():  # the same start under any RNG
        for p in maml.net.vars:
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    print(maml.net)
    tmp = filter(lambda x: x.requires_grad, maml.parameters())
    num = sum(map(lambda x: np.prod(x.shape), tmp))
    print('Total trainable tensors:', num)
    for step in range(3):
        x_spt, y_spt, x_qry, y_qry = sine_tasks(rng, 4, 5)
        loss = maml(x_spt, y_spt, x_qry, y_qry)
        print('step:', step, '\tloss:', loss)
    return loss


if __name__ == "__main__":
    main()

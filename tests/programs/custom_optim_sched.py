"""In the style of widely copied optimizer and scheduler code: davda54/sam's SAM (an Optimizer
wrapping base_optimizer(self.param_groups, **kwargs), first_step/second_step under
@torch.no_grad(), self.state[p]["old_p"], _grad_norm via torch.norm(torch.stack(...)),
load_state_dict re-linking param_groups, the closure step with enable_grad), a Lookahead
wrapper (state slow weights, defaults and param_groups shared with the inner optimizer),
ildoonet's GradualWarmupScheduler (an _LRScheduler subclass with get_lr, last_epoch,
base_lrs and an after_scheduler), and torch-lr-finder's ExponentialLR(_LRScheduler) range test
with copy.deepcopy of the model and optimizer state."""
import copy
from collections import defaultdict

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.optim.lr_scheduler import _LRScheduler, ReduceLROnPlateau


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"

        defaults = dict(rho=rho, adaptive=adaptive, **kwargs)
        super(SAM, self).__init__(params, defaults)

        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)

            for p in group["params"]:
                if p.grad is None: continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)  # climb to the local maximum "w + e(w)"

        if zero_grad: self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None: continue
                p.data = self.state[p]["old_p"]  # get back to "w" from "w + e(w)"

        self.base_optimizer.step()  # do the actual "sharpness-aware" update

        if zero_grad: self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is not None, "Sharpness Aware Minimization requires closure, but it was not provided"
        closure = torch.enable_grad()(closure)  # the closure should do a full forward-backward pass

        self.first_step(zero_grad=True)
        closure()
        self.second_step()

    def _grad_norm(self):
        shared_device = self.param_groups[0]["params"][0].device  # put everything on the same device, in case of model parallelism
        norm = torch.norm(
                    torch.stack([
                        ((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2).to(shared_device)
                        for group in self.param_groups for p in group["params"]
                        if p.grad is not None
                    ]),
                    p=2
               )
        return norm

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.base_optimizer.param_groups = self.param_groups


class Lookahead(torch.optim.Optimizer):
    def __init__(self, optimizer, k=5, alpha=0.5):
        self.optimizer = optimizer
        self.k = k
        self.alpha = alpha
        self.param_groups = self.optimizer.param_groups
        self.state = defaultdict(dict)
        self.fast_state = self.optimizer.state
        self.defaults = self.optimizer.defaults
        for group in self.param_groups:
            group["counter"] = 0

    def update(self, group):
        for fast in group["params"]:
            param_state = self.state[fast]
            if "slow_param" not in param_state:
                param_state["slow_param"] = torch.zeros_like(fast.data)
                param_state["slow_param"].copy_(fast.data)
            slow = param_state["slow_param"]
            slow += (fast.data - slow) * self.alpha
            fast.data.copy_(slow)

    def update_lookahead(self):
        for group in self.param_groups:
            self.update(group)

    def step(self, closure=None):
        loss = self.optimizer.step(closure)
        for group in self.param_groups:
            if group["counter"] == 0:
                self.update(group)
            group["counter"] += 1
            if group["counter"] >= self.k:
                group["counter"] = 0
        return loss

    def state_dict(self):
        fast_state_dict = self.optimizer.state_dict()
        slow_state = {
            (id(k) if isinstance(k, torch.Tensor) else k): v
            for k, v in self.state.items()
        }
        fast_state = fast_state_dict["state"]
        param_groups = fast_state_dict["param_groups"]
        return {
            "fast_state": fast_state,
            "slow_state": slow_state,
            "param_groups": param_groups,
        }


class GradualWarmupScheduler(_LRScheduler):
    """ Gradually warm-up(increasing) learning rate in optimizer.
    Proposed in 'Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour'.
    """

    def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
        self.multiplier = multiplier
        if self.multiplier < 1.:
            raise ValueError('multiplier should be greater thant or equal to 1.')
        self.total_epoch = total_epoch
        self.after_scheduler = after_scheduler
        self.finished = False
        super(GradualWarmupScheduler, self).__init__(optimizer)

    def get_lr(self):
        if self.last_epoch > self.total_epoch:
            if self.after_scheduler:
                if not self.finished:
                    self.after_scheduler.base_lrs = [base_lr * self.multiplier for base_lr in self.base_lrs]
                    self.finished = True
                return self.after_scheduler.get_last_lr()
            return [base_lr * self.multiplier for base_lr in self.base_lrs]

        if self.multiplier == 1.0:
            return [base_lr * (float(self.last_epoch) / self.total_epoch) for base_lr in self.base_lrs]
        else:
            return [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.) for base_lr in self.base_lrs]

    def step_ReduceLROnPlateau(self, metrics, epoch=None):
        if epoch is None:
            epoch = self.last_epoch + 1
        self.last_epoch = epoch if epoch != 0 else 1  # ReduceLROnPlateau is called at the end of epoch, whereas others are called at beginning
        if self.last_epoch <= self.total_epoch:
            warmup_lr = [base_lr * ((self.multiplier - 1.) * self.last_epoch / self.total_epoch + 1.) for base_lr in self.base_lrs]
            for param_group, lr in zip(self.optimizer.param_groups, warmup_lr):
                param_group['lr'] = lr
        else:
            if epoch is None:
                self.after_scheduler.step(metrics, None)
            else:
                self.after_scheduler.step(metrics, epoch - self.total_epoch)

    def step(self, epoch=None, metrics=None):
        if type(self.after_scheduler) != ReduceLROnPlateau:
            if self.finished and self.after_scheduler:
                if epoch is None:
                    self.after_scheduler.step(None)
                else:
                    self.after_scheduler.step(epoch - self.total_epoch)
                self._last_lr = self.after_scheduler.get_last_lr()
            else:
                return super(GradualWarmupScheduler, self).step(epoch)
        else:
            self.step_ReduceLROnPlateau(metrics, epoch)


class ExponentialLR(_LRScheduler):
    """Exponentially increases the learning rate between two boundaries over a number of
    iterations."""

    def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
        self.end_lr = end_lr
        if num_iter <= 1:
            raise ValueError("`num_iter` must be larger than 1")
        self.num_iter = num_iter
        super(ExponentialLR, self).__init__(optimizer, last_epoch)

    def get_lr(self):
        # In earlier Pytorch versions last_epoch starts at -1, while in recent versions
        # it starts at 0. We need to adjust the math a bit to handle this. See
        # discussion at: https://github.com/davidtvs/pytorch-lr-finder/pull/42
        curr_iter = self.last_epoch + 1
        r = curr_iter / (self.num_iter - 1)
        return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]


def range_test(model, optimizer, criterion, x, y, start_lr=1e-5, end_lr=1.0, num_iter=8,
               smooth_f=0.05, diverge_th=5):
    state = {"model": copy.deepcopy(model.state_dict()),
             "optimizer": copy.deepcopy(optimizer.state_dict())}
    for param_group in optimizer.param_groups:
        param_group["lr"] = start_lr
    lr_schedule = ExponentialLR(optimizer, end_lr, num_iter)
    history = {"lr": [], "loss": []}
    best_loss = None
    for iteration in range(num_iter):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history["lr"].append(lr_schedule.get_lr()[0])
        lr_schedule.step()
        loss = loss.item()
        if iteration == 0:
            best_loss = loss
        else:
            loss = smooth_f * loss + (1 - smooth_f) * history["loss"][-1]
            if loss < best_loss:
                best_loss = loss
        history["loss"].append(loss)
        if loss > diverge_th * best_loss:
            break
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return history


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 3))
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))

    base_optimizer = torch.optim.SGD
    optimizer = SAM(model.parameters(), base_optimizer, lr=0.1, momentum=0.9)
    for step in range(3):
        # first forward-backward pass
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.first_step(zero_grad=True)
        # second forward-backward pass
        F.cross_entropy(model(x), y).backward()
        optimizer.second_step(zero_grad=True)

    def closure():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step(closure)
    optimizer.zero_grad()
    sd = optimizer.state_dict()
    optimizer.load_state_dict(sd)
    assert optimizer.base_optimizer.param_groups is optimizer.param_groups
    print(optimizer)

    inner = torch.optim.Adam(model.parameters(), lr=1e-3)
    opt = Lookahead(inner, k=2, alpha=0.5)
    for step in range(4):
        # (the inner optimizer's zero_grad: Optimizer.zero_grad on a Lookahead, which never ran
        # Optimizer.__init__, patches its step into PyTorch 2.x's hook wrapper, which then fails)
        inner.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print(sorted(opt.state_dict().keys()))

    optim = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optim, 10)
    scheduler_warmup = GradualWarmupScheduler(optim, multiplier=8, total_epoch=3,
                                              after_scheduler=cosine)
    lrs = []
    optim.zero_grad()
    optim.step()
    for epoch in range(1, 8):
        scheduler_warmup.step(epoch)
        lrs.append(round(optim.param_groups[0]['lr'], 6))
        optim.step()
    print(lrs)

    history = range_test(model, torch.optim.Adam(model.parameters(), lr=1e-7),
                         nn.CrossEntropyLoss(), x, y)
    print([round(v, 6) for v in history["lr"]])
    return loss.item()


if __name__ == "__main__":
    main()

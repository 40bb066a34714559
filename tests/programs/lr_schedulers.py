"""In the style of the torch.optim.lr_scheduler documentation's examples and the usual
training-loop recipes: LambdaLR with a decay lambda, a warm-up by SequentialLR of LinearLR into
CosineAnnealingLR, ReduceLROnPlateau stepped with a validation loss, CosineAnnealingWarmRestarts
stepped with fractional epochs `epoch + i / iters`, ChainedScheduler of ConstantLR and
ExponentialLR, MultiStepLR, PolynomialLR, two param groups with their own lambdas, and a
scheduler's state_dict saved and loaded to resume. Each schedule is checked against the
closed form the documentation gives."""
import math

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.optim import SGD, lr_scheduler


def make():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    return model, SGD(model.parameters(), lr=0.1, momentum=0.9)


def train_epoch(model, optimizer, data):
    total = 0.0
    for x, y in data:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(data)


def run(scheduler_of, epochs, data, step=lambda s, e, loss: s.step()):
    model, optimizer = make()
    scheduler = scheduler_of(optimizer)
    lrs = []
    for epoch in range(epochs):
        lrs.append(optimizer.param_groups[0]["lr"])
        loss = train_epoch(model, optimizer, data)
        step(scheduler, epoch, loss)
    return lrs, scheduler


def close(got, want):
    assert len(got) == len(want) and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                                         for a, b in zip(got, want)), (got, want)


def main():
    torch.manual_seed(1)
    w = torch.tensor([[1.0], [-2.0], [0.5]])
    data = []
    for _ in range(3):
        x = torch.randn(8, 3)
        data.append((x, x @ w + 0.1))

    lrs, _ = run(lambda o: lr_scheduler.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch), 5, data)
    close(lrs, [0.1 * 0.95 ** e for e in range(5)])

    warm, T = 3, 5
    lrs, _ = run(lambda o: lr_scheduler.SequentialLR(o, schedulers=[
        lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=warm),
        lr_scheduler.CosineAnnealingLR(o, T_max=T)], milestones=[warm]), 8, data)
    close(lrs, [0.1 * (0.1 + 0.9 * e / warm) for e in range(warm)]
          + [0.1 * (1 + math.cos(math.pi * t / T)) / 2 for t in range(5)])

    val_losses = [1.0, 0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5]
    lrs, plateau = run(lambda o: lr_scheduler.ReduceLROnPlateau(o, mode='min', factor=0.5,
                                                                patience=1),
                       9, data, step=lambda s, e, loss: s.step(val_losses[e]))
    # a bad epoch more than `patience` in a row halves the rate (PyTorch's counting)
    close(lrs, [0.1] * 4 + [0.05] * 4 + [0.025])
    close(plateau.get_last_lr(), [0.025])  # the ninth loss is one bad epoch

    iters = len(data)
    model, optimizer = make()
    scheduler = lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2,
                                                         eta_min=0.001)
    seen, expect = [], []
    for epoch in range(7):
        for i, (x, y) in enumerate(data):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            e = epoch + i / iters
            scheduler.step(e)
            seen.append(optimizer.param_groups[0]["lr"])
            n = int(math.log(e / 2 * (2 - 1) + 1, 2)) if e >= 2 else 0
            t_cur, t_i = e - 2 * (2 ** n - 1), 2 * 2 ** n
            expect.append(0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * t_cur / t_i)) / 2)
    close(seen, expect)

    lrs, chained = run(lambda o: lr_scheduler.ChainedScheduler([
        lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2),
        lr_scheduler.ExponentialLR(o, gamma=0.9)]), 5, data)
    close(lrs, [0.1 * (0.1 if e < 2 else 1.0) * 0.9 ** e for e in range(5)])

    lrs, _ = run(lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 4], gamma=0.1), 6, data)
    close(lrs, [0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    lrs, _ = run(lambda o: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 6, data)
    close(lrs, [0.1 * (1 - min(e, 4) / 4) ** 2 for e in range(6)])

    # two groups, one lambda each
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    optimizer = SGD([{'params': model[0].parameters()},
                     {'params': model[2].parameters(), 'lr': 0.01}], lr=0.1)
    lambda1 = lambda epoch: epoch // 2  # noqa: E731  (the documentation's spelling)
    lambda2 = lambda epoch: 0.5 ** epoch  # noqa: E731
    scheduler = lr_scheduler.LambdaLR(optimizer, lr_lambda=[lambda1, lambda2])
    for epoch in range(3):
        train_epoch(model, optimizer, data)
        scheduler.step()
    close(scheduler.get_last_lr(), [0.1 * (3 // 2), 0.01 * 0.5 ** 3])

    # resume a schedule from its state_dict
    model, optimizer = make()
    sched = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    for _ in range(3):
        train_epoch(model, optimizer, data)
        sched.step()
    state = sched.state_dict()
    assert state["last_epoch"] == 3 and state["step_size"] == 2
    opt_state = optimizer.state_dict()
    model2, optimizer2 = make()
    optimizer2.load_state_dict(opt_state)
    sched2 = lr_scheduler.StepLR(optimizer2, step_size=2, gamma=0.5)
    sched2.load_state_dict(state)
    for _ in range(2):
        sched.step()
        sched2.step()
    close(sched2.get_last_lr(), sched.get_last_lr())
    close(sched.get_last_lr(), [0.1 * 0.5 ** (5 // 2)])
    return train_epoch(model, optimizer, data)


if __name__ == "__main__":
    main()

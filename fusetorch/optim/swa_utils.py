"""`torch.optim.swa_utils`: stochastic weight averaging and EMA models (the SWA recipe,
timm-style EMA): `AveragedModel`, `update_bn`, the `SWALR` schedule and the averaging
functions, with PyTorch's update rules and checks."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable

from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..tracer import creation as C
from ..tracer.autograd import no_grad
from ..tracer.tensor import Tensor
from .lr_scheduler import LRScheduler
from .lr_scheduler_cyclic import _format_param
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         "range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place EMA update of lists of tensors: ema = lerp(ema, current, 1 - decay)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _) -> None:
        floating = ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex()
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if floating:
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place running mean of lists of tensors over `num_averaged` earlier models."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        floating = (averaged_param_list[0].is_floating_point() or
                    averaged_param_list[0].is_complex())
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if floating:
                n = num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged
                p_avg.lerp_(p_model, 1 / (n + 1))
            else:
                p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """(ema, current, n) -> decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """(average, current, n) -> the mean of n + 1 models."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of `model` whose parameters (and buffers, with `use_buffers`) are the
    average of the models passed to `update_parameters`: a running mean by default, or
    `avg_fn(avg, current, n)` / `multi_avg_fn(avg_list, current_list, n)` (EMA)."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        from ..ir.dtypes import int64
        self.register_buffer("n_averaged", C.tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters into the average (the first call copies them)."""
        both = (lambda m: itertools.chain(m.parameters(), m.buffers())) if self.use_buffers \
            else (lambda m: m.parameters())
        mine, theirs = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(both(self.module), both(model)):
            p_model_ = p_model.detach().to(p_averaged.device)
            mine.append(p_averaged.detach())
            theirs.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                # (PyTorch groups the lists by device and dtype for its foreach kernels)
                groups: dict = {}
                for a, m in zip(mine, theirs):
                    lists = groups.setdefault((str(a.device), a.dtype), ([], []))
                    lists[0].append(a)
                    lists[1].append(m)
                for avg_list, model_list in groups.values():
                    n = self.n_averaged.to(avg_list[0].device)
                    (self.multi_avg_fn or get_swa_multi_avg_fn())(avg_list, model_list, n)
            else:
                for p_averaged, p_model in zip(mine, theirs):
                    n = self.n_averaged.to(p_averaged.device)
                    p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n))
        if not self.use_buffers:  # buffers (BatchNorm statistics) follow the model's
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over `loader` (a
    cumulative average: momentum None), as after averaging weights."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to `swa_lr` over `anneal_epochs` steps ('cos' or 'linear'),
    then holds it."""

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        self._warn_outside_step()
        # (the lr before annealing is recovered from the current one: chainable)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

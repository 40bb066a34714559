"""nn.functional.ctc_loss: the CTC forward algorithm in log space, one batched step per time
step, composed from tensor operations, so its gradient is autograd's and it compiles.

The extended label sequence l' (blanks around and between the target labels, length 2S + 1
for S target slots) is gathered from each time step's log-probabilities; then

    alpha_0 = [lp[0, blank], lp[0, l'_1], -inf, ...]
    alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s - 1), alpha_{t-1}(s - 2) where l'_s is
                 a label different from l'_{s-2}) + lp[t, l'_s]

and a sample's loss is -logsumexp(alpha_{T_n - 1}(2 L_n), alpha_{T_n - 1}(2 L_n - 1)). Samples
stop at their input length (their alpha is carried unchanged after it), all inside the graph:
lengths given as tensors are never read into Python.

The gradient is PyTorch's: `exp(log_probs) - occupancy` over each sample's time steps (the
gradient with respect to the logits of a log_softmax), not the exact derivative with respect to
`log_probs`, which lacks the `exp(log_probs)` term (`_softmax_logits_term` adds it, with value
0); the two agree once chained through the log_softmax that produces `log_probs`. An impossible
alignment (too few time steps) gives an infinite loss whose gradient is that term alone
(PyTorch: nan), or 0 and a zero gradient with `zero_infinity`.
"""
from __future__ import annotations

import math
from typing import Sequence

from ...ir import dtypes as dt
from ...tracer import autograd as A
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.tensor import Tensor
from .loss import _get_enum
from ...tracer import autocast as _ac

__all__ = ["ctc_loss"]

_NEG_INF = -math.inf


def _lengths(v, name: str, n: int, device) -> Tensor:
    from ...tracer.creation import tensor
    if isinstance(v, Tensor):
        t = D.cast(v.reshape(-1), dt.int64)
    else:
        if isinstance(v, int):
            v = [v]
        t = tensor([int(x) for x in v], dtype=dt.int64, device=device)
    if t.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return t


def _logsumexp(terms: list) -> Tensor:
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf, with no nan in the
    value or the gradient there: the shift is taken without gradient (the result does not
    depend on it) and the log reads 1 where the sum is 0."""
    with A.no_grad():
        m = terms[0]
        for t in terms[1:]:
            m = F.maximum(m, t)
        m = F.where(m == _NEG_INF, 0.0, m)
    s = None
    for t in terms:
        e = F.exp(t - m)
        s = e if s is None else s + e
    pos = s > 0
    return F.where(pos, F.log(F.where(pos, s, 1.0)) + m, _NEG_INF)


def _shift(x: Tensor, k: int) -> Tensor:
    """x moved k places right along the last dim, -inf filled in."""
    from ...tracer.creation import full
    n, s = x.shape
    pad = full((n, min(k, s)), _NEG_INF, dtype=x._dtype, device=x.device)
    return pad if s <= k else F.cat([pad, x[:, :s - k]], 1)


@_ac.op("ctc_loss")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss of `log_probs` [T, N, C] (or unbatched
    [T, C]) against `targets` [N, S] padded, or 1-D concatenated, with per-sample lengths.
    'mean' divides each loss by its target length (at least 1), then averages the batch."""
    red = _get_enum(reduction)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.ndim == 1:
            targets = targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got "
                           f"{log_probs.ndim}-D")
    big_t, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    device = log_probs.device
    in_len = _lengths(input_lengths, "input_lengths", n, device)
    tg_len = _lengths(target_lengths, "target_lengths", n, device)
    in_len = D.check_values(in_len, f"Expected input_lengths to have value at most {big_t}, "
                            "but got value {value} (while checking arguments for "
                            "ctc_loss_allocate_outputs)", lo=0, hi=big_t, closed=True)
    from ...tracer.creation import arange
    if targets.ndim == 2:
        s_max = targets.shape[1]
        tg_len = D.check_values(tg_len, f"Expected tensor to have size at least {{value}} at "
                                f"dimension 1, but got size {s_max} for argument #2 'targets' "
                                "(while checking arguments for ctc_loss_allocate_outputs)",
                                lo=0, hi=s_max, closed=True)
        padded = D.cast(targets, dt.int64)
    else:
        # concatenated targets: sample k's labels start at the sum of the lengths before it
        # (a matmul with a strictly lower-triangular matrix of ones); S is bounded by the
        # total length, so no length is read into Python
        total = targets.shape[0]
        s_max = total
        tri = D.cast(arange(n, device=device).unsqueeze(1) > arange(n, device=device)
                     .unsqueeze(0), dt.float64)
        starts = D.cast(F.matmul(tri, D.cast(tg_len, dt.float64)), dt.int64)
        pos = starts.unsqueeze(1) + arange(max(s_max, 1), device=device).unsqueeze(0)
        pos = F.clamp(pos, max=max(total - 1, 0))
        flat = D.cast(targets, dt.int64)
        padded = (F.index_select(flat, 0, pos.reshape(-1)).reshape((n, -1)) if total
                  else pos * 0)
        s_max = padded.shape[1]
    # slots past a sample's length read the blank (their labels may be anything)
    slots = arange(s_max, device=device).unsqueeze(0)
    labels = F.where(slots < tg_len.unsqueeze(1), padded, blank)
    labels = D.check_values(labels, "target out of range", lo=0, hi=c)
    # extended sequence: blank, l1, blank, l2, ..., blank
    width = 2 * s_max + 1
    from ...tracer.creation import full
    blanks = full((n, s_max + 1), blank, dtype=dt.int64, device=device)
    ext = F.reshape(F.stack([blanks[:, :s_max], labels], 2), (n, 2 * s_max))
    ext = F.cat([ext, blanks[:, :1]], 1)
    # the skip from s - 2 is allowed into a label that differs from the label two back
    none = full((n, min(2, width)), -1, dtype=dt.int64, device=device)
    prev2 = F.cat([none, ext[:, :width - 2]], 1) if width > 2 else none
    skip = F.logical_and(ext != blank, ext != prev2)
    idx = ext.unsqueeze(0).expand(big_t, n, width)
    lp_ext = F.gather(log_probs, 2, idx)  # [T, N, 2S + 1]
    first = arange(width, device=device).unsqueeze(0) < 2
    alpha = F.where(first, lp_ext[0], _NEG_INF)
    for t in range(1, big_t):
        a1 = _shift(alpha, 1)
        a2 = F.where(skip, _shift(alpha, 2), _NEG_INF)
        new = _logsumexp([alpha, a1, a2]) + lp_ext[t]
        alpha = F.where((in_len > t).unsqueeze(1), new, alpha)
    # the two end states of each sample: 2 L and 2 L - 1 (the latter absent for L = 0)
    end = (2 * tg_len).unsqueeze(1)
    last = F.gather(alpha, 1, end).squeeze(1)
    before = F.gather(alpha, 1, F.clamp(end - 1, min=0)).squeeze(1)
    before = F.where(tg_len > 0, before, _NEG_INF)
    nll = -_logsumexp([last, before])
    # a sample with no time steps matches only an empty target (probability 1)
    nll = F.where(in_len == 0, F.where(tg_len == 0, 0.0, math.inf), nll)
    if nll._dtype is not log_probs._dtype:
        nll = D.cast(nll, log_probs._dtype)
    infinite = nll == math.inf
    if D.GRAD_ENABLED and D.needs_grad(log_probs):  # (its value is 0: only its gradient counts)
        nll = nll + _softmax_logits_term(log_probs, in_len)
    if zero_infinity:
        nll = F.where(infinite, 0.0, nll)
    if red == 0:
        out = nll.reshape(()) if unbatched else nll
    elif red == 2:
        out = nll.sum()
    else:
        out = (nll / D.cast(F.clamp(tg_len, min=1), nll._dtype)).mean()
    return A.label_recorded(out, "CtcLossBackward0", log_probs)


def _softmax_logits_term(log_probs: Tensor, in_len: Tensor) -> Tensor:
    """Per sample, a term whose value is 0 and whose gradient is exp(log_probs) over the
    sample's time steps: added to the exact loss, the gradient becomes PyTorch's
    `exp(log_probs) - occupancy`. (Where exp overflows the term is left out: value 0.)"""
    from ...tracer.creation import arange
    steps = arange(log_probs.shape[0], device=log_probs.device)
    live = D.cast((steps.unsqueeze(1) < in_len.unsqueeze(0)).unsqueeze(2), log_probs._dtype)
    mass = F.sum(F.exp(log_probs) * live, (0, 2))
    held = mass.detach()
    return F.where(held.isfinite(), mass - held, 0.0)

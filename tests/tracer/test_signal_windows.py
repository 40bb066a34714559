"""torch.signal.windows and torch.*_window (issue 27) against scipy.signal.windows in float64
(an independent implementation; PyTorch's symmetric windows are scipy's sym=True, its periodic
torch.*_window scipy's sym=False), plus PyTorch's argument errors as checked by hand."""
from __future__ import annotations

import numpy as np
import pytest

sw = pytest.importorskip("scipy.signal.windows")

import fusetorch as torch  # noqa: E402

W = torch.signal.windows
F64 = torch.float64
CASES = {  # fusetorch call, scipy call, both given (M, sym)
    "bartlett": (lambda M, s: W.bartlett(M, sym=s, dtype=F64), lambda M, s: sw.bartlett(M, s)),
    "blackman": (lambda M, s: W.blackman(M, sym=s, dtype=F64), lambda M, s: sw.blackman(M, s)),
    "cosine": (lambda M, s: W.cosine(M, sym=s, dtype=F64), lambda M, s: sw.cosine(M, s)),
    "exponential": (lambda M, s: W.exponential(M, tau=2.5, sym=s, dtype=F64),
                    lambda M, s: sw.exponential(M, tau=2.5, sym=s)),
    "gaussian": (lambda M, s: W.gaussian(M, std=1.7, sym=s, dtype=F64),
                 lambda M, s: sw.gaussian(M, 1.7, s)),
    "general_cosine": (lambda M, s: W.general_cosine(M, a=[0.5, 0.3, 0.2], sym=s, dtype=F64),
                       lambda M, s: sw.general_cosine(M, [0.5, 0.3, 0.2], s)),
    "general_hamming": (lambda M, s: W.general_hamming(M, alpha=0.6, sym=s, dtype=F64),
                        lambda M, s: sw.general_hamming(M, 0.6, s)),
    "hamming": (lambda M, s: W.hamming(M, sym=s, dtype=F64), lambda M, s: sw.hamming(M, s)),
    "hann": (lambda M, s: W.hann(M, sym=s, dtype=F64), lambda M, s: sw.hann(M, s)),
    "kaiser": (lambda M, s: W.kaiser(M, beta=5.0, sym=s, dtype=F64),
               lambda M, s: sw.kaiser(M, 5.0, s)),
    "nuttall": (lambda M, s: W.nuttall(M, sym=s, dtype=F64), lambda M, s: sw.nuttall(M, s)),
    # torch.*_window(periodic) == scipy(sym=not periodic)
    "hann_window": (lambda M, s: torch.hann_window(M, not s, dtype=F64),
                    lambda M, s: sw.hann(M, s)),
    "hamming_window": (lambda M, s: torch.hamming_window(M, not s, 0.6, 0.4, dtype=F64),
                       lambda M, s: sw.general_hamming(M, 0.6, s)),
    "blackman_window": (lambda M, s: torch.blackman_window(M, not s, dtype=F64),
                        lambda M, s: sw.blackman(M, s)),
    "bartlett_window": (lambda M, s: torch.bartlett_window(M, not s, dtype=F64),
                        lambda M, s: sw.bartlett(M, s)),
    "kaiser_window": (lambda M, s: torch.kaiser_window(M, not s, 4.0, dtype=F64),
                      lambda M, s: sw.kaiser(M, 4.0, s)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_windows_match_scipy(name):
    ours, ref = CASES[name]
    for M in (0, 1, 2, 3, 8, 13):
        for sym in (True, False):
            got = ours(M, sym)
            assert got.dtype == F64 and got.shape == (M,)
            np.testing.assert_allclose(got.numpy(), ref(M, sym), rtol=1e-13, atol=1e-15,
                                       err_msg=f"M={M} sym={sym}")


def test_dtypes_grad_flag_and_errors():
    assert W.hann(4).dtype == torch.float32 and torch.hann_window(4).dtype == torch.float32
    assert torch.hann_window(3, requires_grad=True).requires_grad
    assert W.kaiser(3, requires_grad=True).requires_grad
    np.testing.assert_allclose(W.hann(6).numpy(), sw.hann(6), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="requires non-negative window length, got M=-1"):
        W.hann(-1)
    with pytest.raises(ValueError, match="expects float32 or float64 dtypes"):
        W.hann(3, dtype=torch.float16)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        W.kaiser(5, beta=-1.0)
    with pytest.raises(ValueError, match="Center must be None for symmetric windows"):
        W.exponential(5, center=1.0)
    with pytest.raises(ValueError, match="Standard deviation must be positive"):
        W.gaussian(5, std=0.0)
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        W.general_cosine(5, a=3)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        torch.hann_window(-1)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        torch.blackman_window(4, dtype=torch.int64)
    with pytest.raises(TypeError, match="must be int, not float"):
        torch.hann_window(3.5)

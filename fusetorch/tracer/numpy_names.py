"""NumPy's keyword names for PyTorch's reductions: PyTorch's argument parser takes `axis=` for
`dim=` and `keepdims=` for `keepdim=` on its native functions, so `P.sum(1, keepdims=True)`
(karpathy's makemore lectures) and `x.mean(axis=0)` run. One wrapper renames them before the
reduction's own definition sees its arguments."""
import functools
from typing import Callable

_NUMPY_NAMES = (("axis", "dim"), ("keepdims", "keepdim"))


def numpy_names(fn: Callable) -> Callable:
    """`fn` also taking `axis=` and `keepdims=`; both spellings at once is PyTorch's TypeError."""
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        if kw and ("axis" in kw or "keepdims" in kw):
            for numpy_name, name in _NUMPY_NAMES:
                if numpy_name in kw:
                    if name in kw:
                        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument "
                                        f"'{numpy_name}'")
                    kw[name] = kw.pop(numpy_name)
        return fn(*args, **kw)
    wrapper.takes_numpy_names = True  # (read by _api/generate_inplace.py)
    return wrapper


"""`fusetorch.testing`: `assert_close` and `make_tensor`, as `torch.testing` has them."""
from ._comparison import assert_close, default_tolerances  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "make_tensor"]

"""`fusetorch.nn.utils`: gradient clipping, parameter/vector conversion, `rnn` (packed
sequences)."""
from . import rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]

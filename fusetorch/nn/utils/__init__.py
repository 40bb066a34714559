"""`fusetorch.nn.utils`: gradient clipping, parameter/vector conversion, `rnn` (packed
sequences), parametrizations (`parametrize`, `parametrizations.weight_norm` / `spectral_norm`)
and the legacy `weight_norm`."""
from . import parametrizations, parametrize, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert import parameters_to_vector, vector_to_parameters
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "parametrizations", "parametrize", "rnn", "weight_norm",
           "remove_weight_norm"]

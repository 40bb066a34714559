"""nn layers: RNN, LSTM, GRU and their cells, with PyTorch's parameter names, shapes, gate order
and initialisation.

An LSTM layer (and LSTMCell) in float32/float64 without projection is one primitive, `lstm`
(ir/recurrent_ops.py: the input projection of every step, one matmul, then the whole
recurrence `lstm_scan`, with their VJPs; `_fused` says when); a packed batch is a projection
and one `lstm_scan` per run of steps of one batch size. Otherwise, and for all of them with
`torch.backends.cudnn.enabled = False`, the recurrence is a Python loop over time steps, so any
sequence length works (the graph is dynamic). Per layer and direction the input projection
`x @ W_ih^T + b_ih` is one matmul over all steps; each step then adds `h @ W_hh^T` and applies
the cell:
  RNN   h' = act(W_ih x + b_ih + W_hh h + b_hh)
  LSTM  i, f, g, o = chunks of the gates (that order); c' = f c + i g; h' = o tanh(c')
        (times W_hr^T when proj_size > 0)
  GRU   r, z, n: r = s(W_ir x + b_ir + W_hr h + b_hr), z likewise,
        n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h
A PackedSequence input runs the same cells on shrinking batches (step t holds the
batch_sizes[t] longest sequences), so each sequence's final state is taken at its own length.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import backends
from ...ir import dtypes as dt
from ...tracer import autocast as _ac
from ...tracer import dispatch as D
from ...tracer import functional as F
from ...tracer.autograd import no_grad
from ...tracer.composite_programs import composite
from ...tracer.creation import empty, zeros
from ...tracer.tensor import Tensor
from .._functional.dropout import dropout
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _host_sizes, _with_sizes

_AUTOCAST = _ac._LOCAL  # (bound once: a per-thread module's attributes read slowly)

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]


# ---------------------------------------------------------------- cell steps

def _lstm_step(gates: Tensor, c: Tensor, w_hr: Tensor | None) -> tuple:
    """gates: the summed pre-activations [B, 4H] in PyTorch's order i, f, g, o."""
    i, f, g, o = gates.chunk(4, 1)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    h = F.sigmoid(o) * F.tanh(c)
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """gi = W_i x + b_i and gh = W_h h + b_h, each [B, 3H] in PyTorch's order r, z, n."""
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = F.sigmoid(i_r + h_r)
    z = F.sigmoid(i_z + h_z)
    n = F.tanh(i_n + r * h_n)
    return n + z * (h - n)  # = (1 - z) n + z h, PyTorch's kernel order


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    y = x.matmul(w.t())
    return y if b is None else y + b


@composite
def _cell(mode: str, gi: Tensor, h: Tensor, c: Tensor | None, w_hh_t: Tensor,
          b_hh: Tensor | None, w_hr: Tensor | None) -> tuple:
    """One time step. A composite: a training loop's steps repeat one shape, so from the
    third the step's ~15 primitives replay as one captured graph (fused kernels), not one
    dispatch each."""
    gh = h.matmul(w_hh_t)
    if mode == "LSTM":
        return _lstm_step(gi + gh, c, w_hr)
    if mode == "GRU":
        return _gru_step(gi, gh if b_hh is None else gh + b_hh, h), None
    if mode == "RNN_TANH":
        return F.tanh(gi + gh), None
    return F.relu(gi + gh), None


def _run_layer(mode: str, x: Tensor, h: Tensor, c: Tensor | None, weights: list,
               has_bias: bool, proj: bool, reverse: bool, batch_sizes: list | None = None) -> tuple:
    """One layer in one direction over x [T, B, I]: returns (outputs [T, B, H], h_T, c_T).

    With `batch_sizes` (a packed batch), x is the packed data [sum(lengths), I] and step t
    holds the first batch_sizes[t] sequences; the outputs are packed the same way and h_T, c_T
    are each sequence's state after its own last step."""
    if mode == "LSTM" and _AUTOCAST.state.ACTIVE and _ac.listed("lstm_layer", x):
        # torch.autocast: PyTorch's CPU LSTM layer is one lower-precision op
        return _ac.call("lstm_layer", _run_layer, (mode, x, h, c, weights, has_bias, proj,
                                                   reverse, batch_sizes), {})
    w_ih, w_hh = weights[0], weights[1]
    b_ih, b_hh = (weights[2], weights[3]) if has_bias else (None, None)
    w_hr = weights[-1] if proj else None
    if mode != "GRU" and b_hh is not None:
        # both biases add outside any nonlinearity: fold them into the input projection
        b_in, b_hh = b_ih + b_hh, None
    else:
        b_in = b_ih
    fused = _fused(mode, x, h, c, w_hh, proj)
    if fused and batch_sizes is None and _projects(x, w_ih, b_in):
        # the layer and its input projection, one primitive (ir/recurrent_ops.py)
        ws = D.apply("lstm", [x, h, c, w_ih, w_hh] + ([] if b_in is None else [b_in]),
                     {"reverse": reverse})
        last = 0 if reverse else x.shape[0] - 1
        return ws[0], ws[0, last], ws[1, last]
    gi_all = _linear(x, w_ih, b_in)
    if fused:
        if batch_sizes is not None:
            return _fused_packed(gi_all, batch_sizes, h, c, w_hh, reverse)
        ws = D.apply("lstm_scan", [gi_all, h, c, w_hh], {"reverse": reverse})
        last = 0 if reverse else x.shape[0] - 1
        return ws[0], ws[0, last], ws[1, last]
    w_hh_t = w_hh.t()
    if batch_sizes is not None:
        return _run_packed(mode, gi_all.split(batch_sizes, 0), batch_sizes, h, c, w_hh_t, b_hh,
                           w_hr, reverse)
    steps = gi_all.unbind(0)
    outs = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    for t in order:
        h, c = _cell(mode, steps[t], h, c, w_hh_t, b_hh, w_hr)
        outs[t] = h
    return F.stack(outs, 0), h, c


def _fused(mode: str, x: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor,
           proj: bool) -> bool:
    """Whether the layer runs as `lstm_scan` (ir/recurrent_ops.py): an LSTM without projection
    over float32 or float64, unless `torch.backends.cudnn` is disabled (as PyTorch's fused
    layers are; the unrolled steps support double backward)."""
    return (mode == "LSTM" and not proj and backends.cudnn.enabled
            and x.shape[0] > 0 and x._dtype in _FUSED_DTYPES
            and h._dtype is x._dtype and c._dtype is x._dtype and w_hh._dtype is x._dtype)


_FUSED_DTYPES = (dt.float32, dt.float64)


def _projects(x: Tensor, w_ih: Tensor, b: Tensor | None) -> bool:
    """Whether the `lstm` primitive takes this input projection: operands of x's dtype (else
    the matmul raises PyTorch's error, as the composed form's does)."""
    return w_ih._dtype is x._dtype and (b is None or b._dtype is x._dtype)


def _fused_packed(gi_all: Tensor, batch_sizes: list, h0: Tensor, c0: Tensor, w_hh: Tensor,
                  reverse: bool) -> tuple:
    """A packed batch as one `lstm_scan` per run of steps with the same batch size (a batch
    of sequences of k distinct lengths: k scans), the states carried between runs as
    `_run_packed` carries them between steps."""
    hid = h0.shape[1]
    runs, start = [], 0  # (first row of gi_all, steps, batch)
    for n in batch_sizes:
        if runs and runs[-1][2] == n:
            runs[-1][1] += 1
        else:
            runs.append([start, 1, n])
        start += n
    outs = [None] * len(runs)
    order = range(len(runs) - 1, -1, -1) if reverse else range(len(runs))
    h = c = None
    for k in order:
        row, steps, n = runs[k]
        if reverse:  # the batch grows: sequences join from h0, c0 at their own last step
            have = 0 if h is None else h.shape[0]
            h = h0[:n] if h is None else F.cat([h, h0[have:n]], 0)
            c = c0[:n] if c is None else F.cat([c, c0[have:n]], 0)
        else:  # the batch shrinks: a sequence that ended keeps its last state below
            h = h0 if h is None else h
            c = c0 if c is None else c
        gi = F.reshape(gi_all[row:row + steps * n], (steps, n, 4 * hid))
        ws = D.apply("lstm_scan", [gi, h[:n], c[:n], w_hh], {"reverse": reverse})
        outs[k] = F.reshape(ws[0], (steps * n, hid))
        last = 0 if reverse else steps - 1
        if not reverse and n < h.shape[0]:
            h, c = F.cat([ws[0, last], h[n:]], 0), F.cat([ws[1, last], c[n:]], 0)
        else:
            h, c = ws[0, last], ws[1, last]
    return F.cat(outs, 0), h, c


def _run_packed(mode: str, steps: tuple, batch_sizes: list, h0: Tensor, c0: Tensor | None,
                w_hh_t: Tensor, b_hh: Tensor | None, w_hr: Tensor | None,
                reverse: bool) -> tuple:
    """The recurrence over shrinking batches (sequences sorted by decreasing length). Forward:
    a sequence that ended keeps its last state below the active rows. Reverse: a sequence joins
    (from h0, c0) at its own last step."""
    outs = [None] * len(steps)
    if not reverse:
        h, c = h0, c0
        for t, n in enumerate(batch_sizes):
            active = n < h.shape[0]
            h_t, c_t = _cell(mode, steps[t], h[:n] if active else h,
                             None if c is None else (c[:n] if active else c), w_hh_t, b_hh, w_hr)
            outs[t] = h_t
            h = F.cat([h_t, h[n:]], 0) if active else h_t
            if c is not None:
                c = F.cat([c_t, c[n:]], 0) if active else c_t
        return F.cat(outs, 0), h, c
    h = c = None
    for t in range(len(batch_sizes) - 1, -1, -1):
        n = batch_sizes[t]
        have = 0 if h is None else h.shape[0]
        if n > have:
            h = h0[:n] if h is None else F.cat([h, h0[have:n]], 0)
            if c0 is not None:
                c = c0[:n] if c is None else F.cat([c, c0[have:n]], 0)
        h, c = _cell(mode, steps[t], h, c, w_hh_t, b_hh, w_hr)
        outs[t] = h
    return F.cat(outs, 0), h, c


# ---------------------------------------------------------------- RNN, LSTM, GRU

class RNNBase(Module):
    """Base class of RNN, LSTM and GRU: parameters `weight_ih_l{k}{_reverse}`,
    `weight_hh_l{k}{_reverse}`, `bias_ih_l{k}{_reverse}`, `bias_hh_l{k}{_reverse}` (and
    `weight_hr_l{k}{_reverse}` for an LSTM with proj_size), all uniform(-1/sqrt(H), 1/sqrt(H))."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4 * hidden_size, "GRU": 3 * hidden_size,
                     "RNN_TANH": hidden_size, "RNN_RELU": hidden_size}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op here (PyTorch compacts weights for cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with no_grad():
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple:
        mini_batch = _mini_batch(self, input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        h = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, h)

    def check_hidden_size(self, hx: Tensor, expected: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _zeros_state(self, input: Tensor, size: int, batch_sizes: list | None = None) -> Tensor:
        num_directions = 2 if self.bidirectional else 1
        batch = _mini_batch(self, input, batch_sizes)
        return zeros((self.num_layers * num_directions, batch, size), dtype=input.dtype,
                     device=input.device)

    def _run(self, input: Tensor, hx: Tensor, cx: Tensor | None,
             batch_sizes: list | None = None) -> tuple:
        """Seq-first or batch-first batched input, or packed data with `batch_sizes`; states
        [L * D, B, H]: (output, h_n, c_n)."""
        num_directions = 2 if self.bidirectional else 1
        weights = [[getattr(self, n) for n in names] for names in self._all_weights]
        return run_layers(self.mode, input, hx, cx, weights, self.bias, self.proj_size > 0,
                          self.num_layers, num_directions, self.dropout, self.training,
                          self.batch_first, batch_sizes)


def run_layers(mode: str, input: Tensor, hx: Tensor, cx: Tensor | None, weights: list,
               has_bias: bool, proj: bool, num_layers: int, num_directions: int,
               dropout_p: float, train: bool, batch_first: bool,
               batch_sizes: list | None = None) -> tuple:
    """A stack of recurrent layers (the modules' forward and ATen's `torch.lstm`/`gru`/
    `rnn_tanh`/`rnn_relu`): `weights[layer * num_directions + d]` is that layer's and
    direction's [w_ih, w_hh, (b_ih, b_hh), (w_hr)]; states [L * D, B, H] -> (output, h_n,
    c_n), c_n None without cx. Dropout between layers while `train`."""
    packed = batch_sizes is not None
    x = input.transpose(0, 1) if batch_first and not packed else input
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(num_directions):
            k = layer * num_directions + d
            out, h, c = _run_layer(mode, x, hx[k], None if cx is None else cx[k], weights[k],
                                   has_bias, proj, d == 1, batch_sizes)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if num_directions == 1 else F.cat(outs, -1)
        if dropout_p and train and layer < num_layers - 1:
            x = dropout(x, dropout_p, True)
    output = x.transpose(0, 1) if batch_first and not packed else x
    return output, F.stack(hs, 0), (F.stack(cs, 0) if cx is not None else None)


def _mini_batch(self: RNNBase, input: Tensor, batch_sizes) -> int:
    if batch_sizes is not None:
        return int(batch_sizes[0])
    return input.size(0) if self.batch_first else input.size(1)


def _forward_packed(self: RNNBase, input: PackedSequence, hx) -> tuple:
    """A PackedSequence through the layer: states are permuted into the packed (sorted) batch
    order and back, the output is packed like the input."""
    data, batch_sizes, sorted_indices, unsorted_indices = input
    sizes = _host_sizes(input)
    lstm = self.mode == "LSTM"
    real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
    if hx is None:
        hx = self._zeros_state(data, real_hidden, sizes)
        if lstm:
            hx = (hx, self._zeros_state(data, self.hidden_size, sizes))
    elif sorted_indices is not None:
        # PyTorch's permute_hidden: the caller's batch order into the sorted one
        hx = tuple(F.index_select(h, 1, sorted_indices) for h in hx) if lstm else \
            F.index_select(hx, 1, sorted_indices)
    self.check_forward_args(data, hx, sizes)
    output, h_n, c_n = self._run(data, hx[0] if lstm else hx, hx[1] if lstm else None, sizes)
    if unsorted_indices is not None:
        h_n = F.index_select(h_n, 1, unsorted_indices)
        c_n = None if c_n is None else F.index_select(c_n, 1, unsorted_indices)
    output = _with_sizes(PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                         sizes)
    return output, ((h_n, c_n) if lstm else h_n)


class RNN(RNNBase):
    """Elman RNN: `RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)`; forward returns (output, h_n)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:
        return _forward_single_state(self, "RNN", "tensor instead", input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, gates r, z, n as in PyTorch; forward returns (output, h_n)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple:
        return _forward_single_state(self, "GRU", "instead", input, hx)


def _forward_single_state(self: RNNBase, name: str, tail: str, input: Tensor,
                          hx: Tensor | None) -> tuple:
    if isinstance(input, PackedSequence):
        return _forward_packed(self, input, hx)
    if input.dim() not in (2, 3):
        raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {tail}")
    is_batched = input.dim() == 3
    batch_dim = 0 if self.batch_first else 1
    if not is_batched:
        input = input.unsqueeze(batch_dim)
        if hx is not None:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
    elif hx is not None and hx.dim() != 3:
        raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D "
                           "tensor")
    if hx is None:
        hx = self._zeros_state(input, self.hidden_size)
    self.check_forward_args(input, hx)
    output, h_n, _ = self._run(input, hx, None)
    if not is_batched:
        output = output.squeeze(batch_dim)
        h_n = h_n.squeeze(1)
    return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, gates i, f, g, o as in PyTorch; forward returns
    (output, (h_n, c_n)). `proj_size > 0` projects h by `weight_hr_l{k}`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple:
        mini_batch = _mini_batch(self, input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        if isinstance(input, PackedSequence):
            return _forward_packed(self, input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is None:
            real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (self._zeros_state(input, real_hidden),
                  self._zeros_state(input, self.hidden_size))
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                       f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D "
                                       f"but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, h_n, c_n = self._run(input, hx[0], hx[1])
        if not is_batched:
            output = output.squeeze(batch_dim)
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


# ---------------------------------------------------------------- cells

class RNNCellBase(Module):
    """Base of the single-step cells: weight_ih [k H, I], weight_hh [k H, H], bias_ih, bias_hh."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device,
                                         dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device,
                                         dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with no_grad():
            for weight in self.parameters():
                weight.uniform_(-stdv, stdv)

    def _prepare(self, name: str, input: Tensor, hx: tuple) -> tuple:
        """PyTorch's 1-D/2-D handling and the cell checks; returns (batched input, states)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.input_size}")
        states = []
        for k, h in enumerate(hx):
            if h is None:
                h = zeros((input.size(0), self.hidden_size), dtype=input.dtype,
                          device=input.device)
            elif not is_batched:
                h = h.unsqueeze(0)
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} "
                                   f"batch size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")
            states.append(h)
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """One Elman step: `h' = act(W_ih x + b_ih + W_hh h + b_hh)`."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        x, (h,), is_batched = self._prepare("RNNCell", input, (hx,))
        pre = _linear(x, self.weight_ih, self.bias_ih) + _linear(h, self.weight_hh,
                                                                 self.bias_hh)
        if self.nonlinearity == "tanh":
            ret = F.tanh(pre)
        elif self.nonlinearity == "relu":
            ret = F.relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; forward returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        x, (h, c), is_batched = self._prepare("LSTMCell", input,
                                              (None, None) if hx is None else tuple(hx))
        if _fused("LSTM", x, h, c, self.weight_hh, False):
            # one step of the fused layer (PyTorch's LSTMCell is one op too)
            b = None if self.bias_ih is None else self.bias_ih + self.bias_hh
            if _projects(x, self.weight_ih, b):
                ws = D.apply("lstm", [F.unsqueeze(x, 0), h, c, self.weight_ih, self.weight_hh]
                             + ([] if b is None else [b]), {"reverse": False})
            else:
                gi = F.unsqueeze(_linear(x, self.weight_ih, b), 0)
                ws = D.apply("lstm_scan", [gi, h, c, self.weight_hh], {"reverse": False})
            h, c = ws[0, 0], ws[1, 0]
        else:
            gates = _linear(x, self.weight_ih, self.bias_ih) + _linear(h, self.weight_hh,
                                                                       self.bias_hh)
            h, c = _lstm_step(gates, c, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        x, (h,), is_batched = self._prepare("GRUCell", input, (hx,))
        ret = _gru_step(_linear(x, self.weight_ih, self.bias_ih),
                        _linear(h, self.weight_hh, self.bias_hh), h)
        return ret if is_batched else ret.squeeze(0)

"""Recurrent layers (torch.nn.RNN, LSTM, GRU and their cells).

Everything here is a composite of registered ops (linear, sigmoid, tanh, relu,
chunk, cat, stack, dropout), so autograd, tracing and AOT compilation handle
the recurrences with no op of their own. The parameters, their names, shapes,
initialization and the gate order (i, f, g, o for LSTM; r, z, n for GRU) are
PyTorch's, so state dicts move between the two unchanged.

The input-to-hidden projection of a whole layer is one matmul over every time
step; only the hidden-to-hidden product runs step by step.
"""
import math
import numbers
import warnings

from ... import functional as _fn
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from ._factory import factory_kwargs as _factory_kwargs

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# -- one time step of each recurrence ------------------------------------------------
# `gi` is the input projection x @ w_ih.T + b_ih for this step (already computed),
# `state` the previous hidden state (a tuple (h, c) for LSTM).

def _rnn_tanh_step(gi, state, w_hh, b_hh, w_hr):
    return _fn.tanh(gi + F.linear(state, w_hh, b_hh))


def _rnn_relu_step(gi, state, w_hh, b_hh, w_hr):
    return F.relu(gi + F.linear(state, w_hh, b_hh))


def _lstm_step(gi, state, w_hh, b_hh, w_hr):
    h, c = state
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c_next = _fn.sigmoid(f) * c + _fn.sigmoid(i) * _fn.tanh(g)
    h_next = _fn.sigmoid(o) * _fn.tanh(c_next)
    if w_hr is not None:
        h_next = F.linear(h_next, w_hr)
    return h_next, c_next


def _gru_step(gi, state, w_hh, b_hh, w_hr):
    gh = F.linear(state, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = _fn.sigmoid(i_r + h_r)
    z = _fn.sigmoid(i_z + h_z)
    n = _fn.tanh(i_n + r * h_n)
    return (1 - z) * n + z * state


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step,
          "GRU": _gru_step}


def _state_map(fn, state):
    return tuple(fn(s) for s in state) if isinstance(state, tuple) else fn(state)


def _state_cat(a, b):
    if isinstance(a, tuple):
        return tuple(_fn.cat([x, y], 0) for x, y in zip(a, b))
    return _fn.cat([a, b], 0)


def _hidden_of(state):
    return state[0] if isinstance(state, tuple) else state


def _run_direction(step, gi_steps, state, weights, batch_sizes, reverse):
    """Run one layer in one direction.

    gi_steps: the input projection per time step (a list; step t has batch_sizes[t] rows,
    which decrease for a packed batch). state: the initial state for the whole batch.
    Returns (outputs per time step, final state with one row per sequence, each at its
    own last step)."""
    w_hh, b_hh, w_hr = weights
    steps = len(gi_steps)
    outputs = [None] * steps
    if not reverse:
        finished = []                 # rows of sequences that ended, last-ended first
        rows = batch_sizes[0] if steps else 0
        for t in range(steps):
            bs = batch_sizes[t]
            if bs < rows:
                finished.append(_state_map(lambda s: s[bs:rows], state))
                state = _state_map(lambda s: s[:bs], state)
                rows = bs
            state = step(gi_steps[t], state, w_hh, b_hh, w_hr)
            outputs[t] = _hidden_of(state)
        for part in reversed(finished):
            state = _state_cat(state, part)
        return outputs, state
    full = state
    rows = batch_sizes[-1] if steps else 0
    if steps and rows < batch_sizes[0]:
        state = _state_map(lambda s: s[:rows], full)
    for t in range(steps - 1, -1, -1):
        bs = batch_sizes[t]
        if bs > rows:                 # sequences whose last step is t start here from h0
            state = _state_cat(state, _state_map(lambda s: s[rows:bs], full))
            rows = bs
        state = step(gi_steps[t], state, w_hh, b_hh, w_hr)
        outputs[t] = _hidden_of(state)
    return outputs, state


class RNNBase(Module):
    """The parameters and the multi-layer, optionally bidirectional loop shared by RNN,
    LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        for name, n in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(n, int) or isinstance(n, bool):
                raise TypeError(f"{name} should be of type int, got: {type(n).__name__}")
            if n <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool):
            raise TypeError(f"num_layers should be of type int, got: {type(num_layers).__name__}")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if not isinstance(proj_size, int) or isinstance(proj_size, bool) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
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
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        self._weight_roles = []       # per layer and direction: (w_ih, w_hh, b_ih, b_hh, w_hr) names
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input_size)),
                          ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(_fn.empty(shape, **factory_kwargs)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
                roles = dict(zip((base for base, _ in shapes), names))
                self._weight_roles.append(tuple(roles.get(base) for base in
                                                ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                                 "weight_hr")))
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op kept for PyTorch compatibility (there is no fused cuDNN layout here)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # -- argument checks (PyTorch's messages) ------------------------------------------

    def _real_hidden_size(self):
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def check_input(self, input, batch_sizes):
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = batch_sizes[0]
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self._real_hidden_size())

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode == "LSTM":
            self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
            expected_cell = (expected[0], expected[1], self.hidden_size)
            self.check_hidden_size(hidden[1], expected_cell, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hidden, expected)

    @staticmethod
    def permute_hidden(hx, permutation):
        if permutation is None:
            return hx
        return _state_map(lambda h: h.index_select(1, permutation), hx)

    # -- forward -----------------------------------------------------------------------

    def _name(self):
        return "RNN" if self.mode.startswith("RNN") else self.mode

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        num_directions = 2 if self.bidirectional else 1
        packed = isinstance(input, PackedSequence)
        is_batched = True
        if is_lstm and hx is not None:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            hx = tuple(hx)
        if packed:
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(size) for size in batch_sizes_t.tolist()]
            max_batch = batch_sizes[0]
            if hx is not None:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                name = self._name()
                what = " tensor" if name == "RNN" else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{what} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            if hx is not None:
                self._check_hx_dims(hx, is_batched)
                if not is_batched:
                    hx = _state_map(lambda h: h.unsqueeze(1), hx)
            data, sorted_indices, unsorted_indices = input, None, None
            steps, max_batch = input.size(1 - batch_dim), input.size(batch_dim)
            batch_sizes = [max_batch] * steps
        if hx is None:
            shape = (self.num_layers * num_directions, max_batch, self._real_hidden_size())
            h_zeros = _fn.zeros(shape, dtype=data.dtype)
            if is_lstm:
                hx = (h_zeros, _fn.zeros(shape[:2] + (self.hidden_size,), dtype=data.dtype))
            else:
                hx = h_zeros
        self.check_forward_args(data, hx, batch_sizes if packed else None)
        if not batch_sizes:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if self.batch_first and not packed:
            data = data.transpose(0, 1)

        output, h_n = self._layers(data, hx, batch_sizes, packed)

        if packed:
            output = PackedSequence(output, batch_sizes_t, sorted_indices, unsorted_indices)
            h_n = self.permute_hidden(h_n, unsorted_indices)
            return output, h_n
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            h_n = _state_map(lambda h: h.squeeze(1), h_n)
        return output, h_n

    def _check_hx_dims(self, hx, is_batched):
        want, kind = (3, "batched 3-D") if is_batched else (2, "unbatched 2-D")
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        elif hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{hx.dim()}-D tensor")

    def _layers(self, data, hx, batch_sizes, packed):
        """Run every layer. `data` is (T, B, F) or, packed, (sum(batch_sizes), F)."""
        step = _STEPS[self.mode]
        num_directions = 2 if self.bidirectional else 1
        is_lstm = self.mode == "LSTM"
        final_h, final_c = [], []
        layer_input = data
        for layer in range(self.num_layers):
            direction_outputs = []
            for direction in range(num_directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = (
                    None if name is None else getattr(self, name)
                    for name in self._weight_roles[layer * num_directions + direction])
                gi = F.linear(layer_input, w_ih, b_ih)
                if packed:
                    gi_steps = list(gi.split(batch_sizes, 0))
                else:
                    gi_steps = [gi[t] for t in range(gi.size(0))]
                index = layer * num_directions + direction
                if is_lstm:
                    state = (hx[0][index], hx[1][index])
                else:
                    state = hx[index]
                weights = (w_hh, b_hh, w_hr)
                outputs, state = _run_direction(step, gi_steps, state, weights, batch_sizes,
                                                reverse=direction == 1)
                if is_lstm:
                    final_h.append(state[0])
                    final_c.append(state[1])
                else:
                    final_h.append(state)
                if packed:
                    direction_outputs.append(_fn.cat(outputs, 0))
                else:
                    direction_outputs.append(_fn.stack(outputs, 0))
            layer_output = (direction_outputs[0] if num_directions == 1
                            else _fn.cat(direction_outputs, -1))
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output
        h_n = _fn.stack(final_h, 0)
        if is_lstm:
            return layer_input, (h_n, _fn.stack(final_c, 0))
        return layer_input, h_n

    def extra_repr(self):
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


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
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
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def extra_repr(self):
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity!r}"
        return s


class LSTM(RNNBase):
    """Long short-term memory; gates i, f, g, o in that order; optional projection of h
    (proj_size)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit; gates r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# -- cells ---------------------------------------------------------------------------

class RNNCellBase(Module):
    """weight_ih (chunks*hidden, input), weight_hh (chunks*hidden, hidden) and the two biases."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        for name, n in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(n, int) or isinstance(n, bool):
                raise TypeError(f"{name} should be of type int, got: {type(n).__name__}")
            if n <= 0:
                raise ValueError(f"{name} must be greater than zero")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_fn.empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(_fn.empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(_fn.empty((num_chunks * hidden_size,), **factory_kwargs))
            self.bias_hh = Parameter(_fn.empty((num_chunks * hidden_size,), **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, name, input, hx, count):
        """Check dims and sizes; return (batched input, batched states, is_batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = () if hx is None else (tuple(hx) if count == 2 else (hx,))
        for idx, value in enumerate(states):
            if value.dim() not in (1, 2):
                what = f"hx[{idx}]" if count == 2 else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.input_size}")
        if hx is None:
            zeros = _fn.zeros((input.size(0), self.hidden_size), dtype=input.dtype)
            states = (zeros,) * count
        elif not is_batched:
            states = tuple(s.unsqueeze(0) for s in states)
        for idx, s in enumerate(states):
            label = f"hidden{'' if count == 1 else idx}"
            if s.dim() != 2 or s.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match {label} batch "
                                   f"size {s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"{label} has inconsistent hidden_size: got {s.size(1)}, "
                                   f"expected {self.hidden_size}")
        return input, states, is_batched

    def _gi(self, input):
        return F.linear(input, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, (h,), is_batched = self._prepare("RNNCell", input, hx, 1)
        if self.nonlinearity == "tanh":
            step = _rnn_tanh_step
        elif self.nonlinearity == "relu":
            step = _rnn_relu_step
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = step(self._gi(input), h, self.weight_hh, self.bias_hh, None)
        return out if is_batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, state, is_batched = self._prepare("LSTMCell", input, hx, 2)
        h, c = _lstm_step(self._gi(input), state, self.weight_hh, self.bias_hh, None)
        if not is_batched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) * n + z * h."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h,), is_batched = self._prepare("GRUCell", input, hx, 1)
        out = _gru_step(self._gi(input), h, self.weight_hh, self.bias_hh, None)
        return out if is_batched else out.squeeze(0)

"""Sequence packing and padding (torch.nn.utils.rnn).

A PackedSequence holds a batch of variable-length sequences time-major without
padding: `data` is the rows of step 0 of every sequence, then step 1 of those
still running, and so on; `batch_sizes[t]` says how many sequences are still
running at step t (sequences sorted longest first, `sorted_indices` mapping
back to the caller's order). The RNN modules accept one and return their
output packed the same way.

Padding and packing are written with cat/stack/index_select, so gradients flow
through them.
"""
from collections.abc import Iterable
from typing import NamedTuple, Optional


from ... import functional as _fn
from ..._dtype import int64
from ...tensor import Tensor, tensor as _tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


def invert_permutation(permutation):
    """The inverse of a permutation given as an int64 tensor (None stays None)."""
    if permutation is None:
        return None
    return permutation.argsort()      # position of each index: the inverse permutation


class PackedSequence(_PackedSequenceFields):
    """data, batch_sizes, sorted_indices, unsorted_indices (see the module docstring).

    Made by pack_padded_sequence / pack_sequence, not by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self):
        return self

    def double(self):
        return self._with_data(self.data.double())

    def float(self):
        return self._with_data(self.data.float())

    def half(self):
        return self._with_data(self.data.half())

    def long(self):
        return self._with_data(self.data.long())

    def int(self):
        return self._with_data(self.data.int())

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D tensor, got {lengths.dim()}D")
        values = lengths.tolist()
    else:
        values = list(lengths)
    return [int(v) for v in values]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (B, T, * if batch_first) whose sequence b has length
    lengths[b]. With enforce_sorted the lengths must be in decreasing order; otherwise the
    batch is sorted here and the permutation kept in the result."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor, got {type(input).__name__}")
    if input.dim() < 2:
        raise RuntimeError(f"pack_padded_sequence: input must have at least 2 dimensions, got "
                           f"{input.dim()}")
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    batch = input.size(batch_dim)
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        # a stable sort, longest first (written without sorted() so that it traces)
        order = [b for n in range(max([0] + lengths), 0, -1)
                 for b in range(batch) if lengths[b] == n]
        order += [b for b in range(batch) if lengths[b] <= 0]     # rejected just below
        sorted_indices = _tensor(order, dtype=int64)
        lengths = [lengths[b] for b in order]
        input = input.index_select(batch_dim, sorted_indices)
    if any(n <= 0 for n in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    steps = input.size(1 - batch_dim)
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a sequence length ({lengths[0]}) is larger "
                           f"than the input's time dimension ({steps})")
    if batch_first:
        input = input.transpose(0, 1)
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    data = _fn.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _tensor(batch_sizes, dtype=int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded batch, lengths as an int64 tensor), in
    the order the sequences were given to the packing function."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got "
                        f"{type(sequence).__name__}")
    batch_sizes = [int(size) for size in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    rows = []
    for step_data in data.split(batch_sizes, 0):
        missing = batch - step_data.size(0)
        if missing:
            pad = _fn.full((missing,) + trailing, padding_value, dtype=data.dtype)
            step_data = _fn.cat([step_data, pad], 0)
        rows.append(step_data)
    for _ in range(max_seq_length - len(batch_sizes)):
        rows.append(_fn.full((batch,) + trailing, padding_value, dtype=data.dtype))
    padded = _fn.stack(rows, 1 if batch_first else 0)
    lengths = _tensor([sum(1 for bs in batch_sizes if bs > row) for row in range(batch)], dtype=int64)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths.index_select(0, unsorted)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shape (L_i, *) into (T, B, *) (or (B, T, *)), T the longest L_i,
    filling the rest with padding_value on the right (or the left)."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences:
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: expected a sequence of Tensors, got {type(s).__name__}")
        if s.dim() < 1:
            raise RuntimeError("pad_sequence: every sequence must have at least one dimension "
                               "(its length)")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences[1:]:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: all sequences must have the same trailing "
                               f"dimensions, got {list(trailing)} and {list(s.shape[1:])}")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        missing = max_len - s.size(0)
        if missing:
            pad = _fn.full((missing,) + trailing, padding_value, dtype=s.dtype)
            s = _fn.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return _fn.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of sequences of the given lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :n] for b, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) (longest first unless enforce_sorted=False)."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

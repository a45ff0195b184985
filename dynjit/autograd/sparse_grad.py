"""Accumulating gradients into a leaf's .grad when one side is sparse (AccumulateGrad's
sparse half; graph.AccumulateGrad calls it), with PyTorch's rules:

- the first gradient becomes .grad: a sparse one without a copy of its indices and values
  when nothing else refers to them and they are contiguous (PyTorch's "steal"), else a
  copy (a gradient handed to two leaves is copied for one of them);
- later ones are added: sparse + sparse stays sparse (entries side by side, uncoalesced),
  a dense .grad takes a sparse gradient in place, and a sparse .grad plus a dense gradient
  becomes dense;
- under create_graph the sums are ops that keep their history.
"""
import sys

import numpy as np

from ..ops.sparse import SparseCOO
from ..tensor import Tensor
from .grad_mode import state as _grad_state

_UNSHARED_REFS = None


def _refs(grads):
    d = grads[0]._data
    return sys.getrefcount(grads[0]), sys.getrefcount(d), sys.getrefcount(d.values), sys.getrefcount(d.indices)


def _can_steal(grads, variable):
    """Whether the sparse gradient grads[0] may become .grad sharing its indices and values:
    only the engine refers to it, and its parts are contiguous (PyTorch's use-count check;
    the counts of an unshared sparse tensor are measured once, on this code path)."""
    global _UNSHARED_REFS
    if _UNSHARED_REFS is None:
        _UNSHARED_REFS = _refs([Tensor._make(SparseCOO(np.zeros((1, 1), np.int64), np.zeros(1), (1,)))])
    d = grads[0]._data
    if (grads[0]._requires_grad or not d.values.flags.c_contiguous or not d.indices.flags.c_contiguous
            or not d.values.flags.writeable or d.shape != variable._data.shape
            or d.values.dtype != variable._data.dtype):
        return False
    del d
    return all(n <= limit for n, limit in zip(_refs(grads), _UNSHARED_REFS))


def accumulate_sparse(variable, grads):
    """Add grads[0] into variable.grad where the gradient, the leaf or its .grad is sparse."""
    old = variable._grad
    steal = (old is None and not _grad_state.enabled and type(grads[0]._data) is SparseCOO
             and _can_steal(grads, variable))
    g = grads[0]
    if old is None and type(g._data) is not SparseCOO and type(g._data) is not np.ndarray:
        variable._grad = g.clone()          # a compressed layout (CSR, ...): a copy
        return
    if old is None:
        if _grad_state.enabled:
            variable._grad = g.clone()
        elif steal:
            d = g._data
            variable._grad = Tensor._make(SparseCOO(d.indices, d.values, d.shape, d.coalesced))
        elif type(g._data) is SparseCOO:
            d = g._data
            variable._grad = Tensor._make(SparseCOO(np.array(d.indices, copy=True, order="C"),
                                                    np.array(d.values, copy=True, order="C"),
                                                    d.shape, d.coalesced))
        else:
            variable._grad = Tensor._make(np.array(np.broadcast_to(g._data, variable._data.shape), copy=True))
        return
    old_sparse, new_sparse = type(old._data) is SparseCOO, type(g._data) is SparseCOO
    if (type(old._data) is not np.ndarray and not old_sparse) or (type(g._data) is not np.ndarray
                                                                   and not new_sparse):
        variable._grad = old + g            # compressed layouts: the ops say what they support
        return
    if _grad_state.enabled or old._requires_grad:
        variable._grad = g + old if old_sparse and not new_sparse else old + g
    elif old_sparse:
        variable._grad = g + old if not new_sparse else old + g     # dense + sparse is dense
    elif old._data.flags.writeable:
        d = g._data                         # a dense .grad takes the sparse gradient in place
        if d.nnz:
            vals = d.values.astype(old._data.dtype, copy=False)
            if d.sparse_dim == 0:
                old._data += vals.sum(0)
            else:
                np.add.at(old._data, tuple(d.indices), vals)
        old._version_counter[0] += 1
    else:
        variable._grad = old + g

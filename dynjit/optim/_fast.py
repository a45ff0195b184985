"""The default (foreach=None) eager update of Adam/AdamW, SGD and RMSprop, written with
numpy ufuncs into the parameters' and states' own memory.

The reference update (the per-parameter loop, foreach=False) costs a dozen dispatched
tensor ops per parameter; for a small model the dispatch, not the arithmetic, is the step's
time. The functions here run the SAME elementwise operations, in the same order, on the
same dtypes, as the kernels those ops reach (dynjit/ops/pointwise.py) do:

- a Python float hyperparameter meets a float32 array as numpy's weak scalar (cast to the
  array's dtype), as in the ops' kernels; `alpha=`/`value=` scalars are converted with the
  ops' own `scalar_to`;
- a 0-d float64 tensor (the step-derived bias corrections) meeting a float32 tensor is
  first cast to float32, as the dispatcher's promotion does; those 0-d values are computed
  with the kernels the reference's tensor expressions reach, once per distinct step count;
- in-place ops write their result where the reference's copy would: elementwise IEEE
  arithmetic rounds the same whatever the output buffer, so every result bit is the
  reference's (tests/optim/test_fast_step.py compares them bit for bit).

Each function updates the parameters it can and returns the others (with gradients) to
the optimizer's loop: a parameter without state yet (the loop creates it), a 0-d
parameter, a dtype other than float32/float64, sparse or complex tensors, tensor
subclasses other than Parameter, inference tensors, read-only memory. The whole group
goes to the loop when a hyperparameter is not a Python number (a Tensor lr), foreach or
fused or differentiable is set, or a dispatch mode (make_fx, fake tensors) or mutation
observer is active. Under dynjit.compile the frontend traces `_not_taken` instead
(`_dynjit_traced_as`), so a compiled step traces the loop's ops.
"""
import functools

import numpy as np

from ..ops import dispatch as _dispatch
from ..ops.pointwise import scalar_to
from ..nn.parameter import Parameter
from ..tensor import Tensor

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F64 = np.dtype(np.float64)
_PARAM_TYPES = (Tensor, Parameter)


def _quiet(update):
    """Run `update` with numpy's floating-point warnings off, as the ops' kernels run (a NaN
    or an infinity in an update is a value, not a warning)."""
    @functools.wraps(update)
    def run(*args):
        with np.errstate(all="ignore"):
            return update(*args)
    return run


def _not_taken(optimizer, group, *args):
    return group["params"]


def _numbers(*values):
    """Python ints and floats only (a Tensor lr, numpy scalars: the reference handles them);
    ints small enough that every op treats them as the float they convert to."""
    for v in values:
        t = type(v)
        if t is float:
            continue
        if t is not int or not -(2 ** 24) <= v <= 2 ** 24:
            return False
    return True


def _plain_array(t, dtype, shape):
    """t's numpy array if t is a plain, writable, non-inference tensor of dtype and shape."""
    if type(t) not in _PARAM_TYPES or t._is_inference:
        return None
    a = t._data
    if type(a) is not np.ndarray or a.dtype is not dtype or a.shape != shape or not a.flags.writeable:
        return None
    return a


def _group_arrays(optimizer, group, state_names, with_step):
    """([(p, p's array, grad's array, [state arrays], step tensor or None)] for the group's
    parameters with gradients that are plain (see the module doc), [the other parameters,
    for the loop]); or None when the whole group must run the loop."""
    if _dispatch._modes.items or _dispatch._mutation_observers:
        return None
    if group.get("differentiable") or group.get("foreach") is not None or group.get("fused"):
        return None
    states = optimizer.state
    out, left = [], []
    for p in group["params"]:
        g = p.grad
        if g is None:
            continue
        entry = _plain_entry(p, g, states.get(p), state_names, with_step)
        if entry is None:
            left.append(p)
        else:
            out.append(entry)
    return out, left


def _plain_entry(p, g, state, state_names, with_step):
    if type(p) not in _PARAM_TYPES or p._is_inference or type(g) is not Tensor:
        return None
    pa = p._data
    if type(pa) is not np.ndarray or pa.dtype not in _FLOATS or pa.dtype.metadata is not None:
        return None
    if not pa.ndim or not pa.flags.writeable:
        # (0-d parameters: promotion among 0-d tensors makes the loop compute Adam's
        # bias-corrected terms in float64, which these formulas, in the parameter's dtype, do not)
        return None
    dtype = pa.dtype
    ga = _plain_array(g, dtype, pa.shape)
    if ga is None:
        return None
    if not state and (state_names or with_step):
        return None         # the first step: the loop creates the state
    arrays = []
    for name in state_names:
        a = _plain_array(state.get(name), dtype, pa.shape)
        if a is None:
            return None
        arrays.append(a)
    step = None
    if with_step:
        step = state.get("step")
        if type(step) is not Tensor or step._is_inference or type(step._data) is not np.ndarray \
                or step._data.dtype is not _F64 or step._data.shape != () or not step._data.flags.writeable:
            return None
    return p, pa, ga, arrays, step


def _bump(*tensors):
    """Count an in-place change of each tensor, as every in-place op does."""
    for t in tensors:
        t._version_counter[0] += 1


def _count_step(step):
    """step.add_(1) (float64: +1.0); returns the new count."""
    a = step._data
    np.add(a, 1, out=a)
    step._version_counter[0] += 1
    return float(a)


def _scaled(x, alpha, dtype):
    """What add(self, x, alpha=alpha) adds: x itself for the int 1, else x * alpha in dtype."""
    if type(alpha) is int and alpha == 1:
        return x
    return np.multiply(x, scalar_to(alpha, dtype))


def _signed_grad(ga, maximize):
    return np.negative(ga) if maximize else ga


# -- Adam / AdamW ------------------------------------------------------------------

def _adam_corrections(step, beta1, beta2, lr):
    """(bias_correction2_sqrt, step size) from the 0-d float64 step count, as the loop's tensor
    expressions compute them: `1 - beta ** step` is rsub(pow(beta, step), 1), `.sqrt()` sqrt,
    and `-lr / bias_correction1` is Tensor.__rtruediv__'s reciprocal(bias_correction1) * -lr."""
    bias_correction1 = np.subtract(1, np.power(beta1, step))
    bias_correction2_sqrt = np.sqrt(np.subtract(1, np.power(beta2, step)))
    return np.asarray(bias_correction2_sqrt), np.asarray(np.multiply(np.reciprocal(bias_correction1), -lr))


@_quiet
def adam_step(optimizer, group, decoupled):
    """Adam's (AdamW's, `decoupled`) update of `group`, as Adam._update_group's loop does it;
    returns the parameters left to the loop."""
    lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
    weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
    if not _numbers(lr, beta1, beta2, eps, weight_decay):
        return group["params"]
    names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
    found = _group_arrays(optimizer, group, names, with_step=True)
    if found is None:
        return group["params"]
    entries, left = found
    corrections = {}        # step count -> (bias_correction2_sqrt, step size) as 0-d float64 arrays
    for p, pa, ga, arrays, step in entries:
        count = _count_step(step)
        known = corrections.get(count)
        if known is None:
            known = corrections[count] = _adam_corrections(step._data, beta1, beta2, lr)
        dtype = pa.dtype
        # the 0-d float64 values cast to the parameter's dtype, as promotion does before the kernel
        bc2_sqrt, step_size = known[0].astype(dtype), known[1].astype(dtype)
        g = _signed_grad(ga, maximize)
        if weight_decay != 0:
            if decoupled:
                np.multiply(pa, 1 - lr * weight_decay, out=pa)
                _bump(p)
            else:
                g = np.add(g, _scaled(pa, weight_decay, dtype))
        exp_avg, exp_avg_sq = arrays[0], arrays[1]
        # exp_avg.lerp_(g, 1 - beta1): self + weight * (end - self)
        np.add(exp_avg, np.multiply(1 - beta1, np.subtract(g, exp_avg)), out=exp_avg)
        # exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2): self + (g * g) * value
        np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
        np.add(exp_avg_sq, np.multiply(np.multiply(g, g), scalar_to(1 - beta2, dtype)), out=exp_avg_sq)
        state = optimizer.state[p]
        _bump(state["exp_avg"], state["exp_avg_sq"], state["exp_avg_sq"])
        if amsgrad:
            max_sq = arrays[2]
            np.maximum(max_sq, exp_avg_sq, out=max_sq)          # max_sq.clamp_(min=exp_avg_sq)
            _bump(state["max_exp_avg_sq"])
            denom = np.sqrt(max_sq)
        else:
            denom = np.sqrt(exp_avg_sq)
        np.true_divide(denom, bc2_sqrt, out=denom)
        np.add(denom, eps, out=denom)
        update = np.true_divide(exp_avg, denom)
        np.multiply(update, step_size, out=update)
        np.add(pa, update, out=pa)
        _bump(p)
    return left


# -- SGD ---------------------------------------------------------------------------

@_quiet
def sgd_step(optimizer, group):
    """SGD's update of `group`, as SGD._update_group's loop does it;
    returns the parameters left to the loop."""
    lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
    weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
    if not _numbers(lr, momentum, dampening, weight_decay):
        return group["params"]
    names = ("momentum_buffer",) if momentum != 0 else ()
    found = _group_arrays(optimizer, group, names, with_step=False)
    if found is None:
        return group["params"]
    entries, left = found
    for p, pa, ga, arrays, _ in entries:
        dtype = pa.dtype
        g = _signed_grad(ga, maximize)
        if weight_decay != 0:
            g = np.add(g, _scaled(pa, weight_decay, dtype))
        if momentum != 0:
            buf = arrays[0]
            np.multiply(buf, momentum, out=buf)
            np.add(buf, _scaled(g, 1 - dampening, dtype), out=buf)
            _bump(optimizer.state[p]["momentum_buffer"], optimizer.state[p]["momentum_buffer"])
            g = np.add(g, _scaled(buf, momentum, dtype)) if nesterov else buf
        np.add(pa, _scaled(g, -lr, dtype), out=pa)
        _bump(p)
    return left


# -- RMSprop -----------------------------------------------------------------------

@_quiet
def rmsprop_step(optimizer, group):
    """RMSprop's update of `group`, as RMSprop._update_group's loop does it;
    returns the parameters left to the loop."""
    lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
    weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
    if not _numbers(lr, alpha, eps, weight_decay, momentum):
        return group["params"]
    names = ("square_avg",) + (("momentum_buffer",) if momentum > 0 else ()) + (("grad_avg",) if centered else ())
    found = _group_arrays(optimizer, group, names, with_step=True)
    if found is None:
        return group["params"]
    entries, left = found
    for p, pa, ga, arrays, step in entries:
        dtype = pa.dtype
        state = optimizer.state[p]
        g = _signed_grad(ga, group["maximize"])
        _count_step(step)
        if weight_decay != 0:
            g = np.add(g, _scaled(pa, weight_decay, dtype))
        square_avg = arrays[0]
        np.multiply(square_avg, alpha, out=square_avg)
        np.add(square_avg, np.multiply(np.multiply(g, g), scalar_to(1 - alpha, dtype)), out=square_avg)
        _bump(state["square_avg"], state["square_avg"])
        if centered:
            grad_avg = arrays[-1]
            np.add(grad_avg, np.multiply(1 - alpha, np.subtract(g, grad_avg)), out=grad_avg)
            _bump(state["grad_avg"])
            avg = np.add(square_avg, np.multiply(np.multiply(grad_avg, grad_avg), scalar_to(-1, dtype)))
            np.sqrt(avg, out=avg)
        else:
            avg = np.sqrt(square_avg)
        np.add(avg, eps, out=avg)
        if momentum > 0:
            buf = arrays[1]
            np.multiply(buf, momentum, out=buf)
            np.add(buf, np.multiply(np.true_divide(g, avg), scalar_to(1, dtype)), out=buf)
            _bump(state["momentum_buffer"], state["momentum_buffer"])
            np.add(pa, _scaled(buf, -lr, dtype), out=pa)
        else:
            np.add(pa, np.multiply(np.true_divide(g, avg), scalar_to(-lr, dtype)), out=pa)
        _bump(p)
    return left


# a compiled step traces the reference loop: these functions read and write tensors' memory
for _fn in (adam_step, sgd_step, rmsprop_step):
    _fn._dynjit_traced_as = _not_taken
del _fn

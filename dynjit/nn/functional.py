"""`dynjit.nn.functional` (import as F): activations, linear, dropout, normalization,
embedding and losses as functions. Each calls registered ops through the
dispatcher (directly, or as a composite of them), so they trace, differentiate
and compile like any op."""
import math
import warnings

from .. import functional as _fn
from ..ops.dispatch import dispatch
from ..ops.registry import registry as _R
from ..tensor import Tensor

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish",
    "sigmoid", "tanh", "softplus", "softsign", "hardtanh", "threshold", "logsigmoid", "softmax",
    "log_softmax", "softmin", "dropout", "layer_norm", "batch_norm", "embedding", "one_hot",
    "normalize", "pad", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
    "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_similarity", "pairwise_distance", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear",
]

_REDUCTIONS = ("none", "mean", "sum")


def _op(name, *args):
    return dispatch(_R[name], args, {})


def _inplace(input, result):
    """Write `result` into `input` (the `inplace=True` flavour) and return `input`."""
    return input.copy_(result)


# -- linear ----------------------------------------------------------------------

def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    return _op("linear", input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """out[..., o] = input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    out = _fn.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


# -- activations -------------------------------------------------------------------

def relu(input, inplace=False):
    return _op("relu_", input) if inplace else _op("relu", input)


def relu_(input):
    return _op("relu_", input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _op("leaky_relu_" if inplace else "leaky_relu", input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _op("elu_" if inplace else "elu", input, alpha)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _op("gelu", input, approximate)


def silu(input, inplace=False):
    return _op("silu_" if inplace else "silu", input)


def mish(input, inplace=False):
    out = input * _op("tanh", _op("softplus", input, 1, 20))
    return _inplace(input, out) if inplace else out


def sigmoid(input):
    return _op("sigmoid", input)


def tanh(input):
    return _op("tanh", input)


def softplus(input, beta=1.0, threshold=20.0):
    return _op("softplus", input, beta, threshold)


def softsign(input):
    return input / (_op("abs", input) + 1)


def logsigmoid(input):
    return -_op("softplus", -input, 1, 20)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _op("clamp_" if inplace else "clamp", input, min_val, max_val)


def threshold(input, threshold, value, inplace=False):
    """value where input <= threshold, else input."""
    out = _op("where", input > threshold, input, value)
    return _inplace(input, out) if inplace else out


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _op("softmax", input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    return _op("log_softmax", input, dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return softmax(-input, dim, dtype=dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability p and scale the rest by 1/(1-p) (identity when not training)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = dispatch(_R["native_dropout"], (input, p, training), {})[0]
    return _inplace(input, out) if inplace else out


# -- normalization -------------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing `normalized_shape` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != normalized_shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size "
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    var, mean = dispatch(_R["var_mean"], (input, dims, 0, True), {})
    out = (input - mean) * _op("rsqrt", var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) by batch statistics (training) or running statistics.
    In training the running statistics are updated in place (unbiased variance)."""
    if input.ndim < 2:
        raise ValueError(f"expected 2D or higher input (got {input.ndim}D input)")
    c = input.shape[1]
    shape = (1, c) + (1,) * (input.ndim - 2)
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        n = input.numel() // c
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        var, mean = dispatch(_R["var_mean"], (input, dims, 0, False), {})
        if running_mean is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm in eval mode needs running_mean and running_var")
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * _op("rsqrt", var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p along dim, eps)."""
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps)


# -- embedding and shapes -------------------------------------------------------------

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the integer tensor `input` (shape input.shape + (dim,)).
    The row at padding_idx gets no gradient."""
    if not isinstance(input, Tensor) or input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have an integer dtype (Long "
                           f"or Int); but got {getattr(input, 'dtype', type(input).__name__)} instead")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported by dynjit")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a {weight.ndim}-D tensor")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep = _op("ne", _fn.arange(weight.shape[0]), padding_idx).unsqueeze(1).to(weight.dtype)
        # the padding row's value is used, but its gradient is masked out
        weight = weight * keep + (weight * (1 - keep)).detach()
    rows = _op("index_select", weight, 0, input.reshape(-1))
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """In place, without gradient: each row of `weight` that `input` refers to and whose
    `norm_type`-norm exceeds `max_norm` is scaled to norm `max_norm` (by max_norm / (norm +
    1e-7), as PyTorch). Written with shape-static ops (a mask of the rows used, not a
    list of them), so a traced graph renormalizes whichever rows each call refers to."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        n = weight.shape[0]
        used = _op("one_hot", input.reshape(-1), n).sum(0).unsqueeze(1) > 0
        norms = _op("norm", weight, norm_type, 1, True)
        scale = _fn.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale.to(weight.dtype))


# -- upsampling --------------------------------------------------------------------

_UPSAMPLE_OPS = {("nearest", 3): "upsample_nearest1d", ("nearest", 4): "upsample_nearest2d",
                 ("nearest", 5): "upsample_nearest3d", ("linear", 3): "upsample_linear1d",
                 ("bilinear", 4): "upsample_bilinear2d", ("trilinear", 5): "upsample_trilinear3d"}
_LINEAR_DIMS = {"linear": 3, "bilinear": 4, "trilinear": 5}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, d1, ..., dK) input (K = 1, 2, 3) to `size`, or
    by `scale_factor` (output size floor(d * scale_factor)), as torch.nn.functional.interpolate.
    Modes: "nearest" (source index floor(dst * in / out)), "linear" (3D), "bilinear" (4D),
    "trilinear" (5D). With align_corners the corner pixels' centres of input and output
    coincide (source coordinate dst * (in - 1) / (out - 1)); without, source coordinate
    (dst + 0.5) * in / out - 0.5 clamped at 0. A scale_factor given (and not recomputed)
    replaces in / out by 1 / scale_factor in those formulas, as in PyTorch."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input "
                    f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                    f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
        output_size = [math.floor(float(input.shape[i + 2]) * scale_factors[i]) for i in range(dim)]
        if recompute_scale_factor:
            scale_factors = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.ndim == 4):
            raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires "
                             "a 4-D tensor as input")
        raise NotImplementedError("interpolate: antialias=True is not supported by dynjit")
    name = _UPSAMPLE_OPS.get((mode, input.ndim))
    if name is None:
        if mode in _LINEAR_DIMS and input.ndim in (3, 4, 5):
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR_DIMS[mode]}D input")
        if mode in ("bicubic", "area", "nearest-exact") and input.ndim in (3, 4, 5):
            raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by dynjit "
                                      "(nearest | linear | bilinear | trilinear are)")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the modes: "
            f"nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})")
    scales = None if scale_factors is None else tuple(scale_factors)
    if mode == "nearest":
        return _op(name, input, tuple(output_size), scales)
    return _op(name, input, tuple(output_size), bool(align_corners), scales)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate (as in PyTorch)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def one_hot(tensor, num_classes=-1):
    return _op("one_hot", tensor, num_classes)


def pad(input, pad, mode="constant", value=None):
    """Constant padding: `pad` lists (left, right) amounts for the last dims, last dim first."""
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r} is not supported by dynjit (only 'constant')")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length must be divisible by 2 and at most twice the number of "
                         f"dims ({input.ndim}), got {len(pad)}")
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if left < 0:
            out = out.narrow(dim, -left, out.shape[dim] + left)
            left = 0
        if right < 0:
            out = out.narrow(dim, 0, out.shape[dim] + right)
            right = 0
        parts = []
        for n in (left, right):
            shape = list(out.shape)
            shape[dim] = n
            parts.append(_fn.full(shape, 0.0 if value is None else value, dtype=out.dtype))
        out = _fn.cat([parts[0], out, parts[1]], dim)
    return out


# -- losses ----------------------------------------------------------------------------

def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(name, input, target):
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{name}: input and target must be dynjit Tensors")
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("mse_loss", input, target)
    loss = (input - target) ** 2
    return _reduce(loss if weight is None else loss * weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("l1_loss", input, target)
    return _reduce(_op("abs", input - target), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = _op("abs", input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = _op("where", diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_same_size("huber_loss", input, target)
    diff = _op("abs", input - target)
    loss = _op("where", diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


def _flatten_classes(input, target):
    """(N, C, d1, ...) input and (N, d1, ...) target -> (N*d1*..., C) and (N*d1*...,)."""
    c = input.shape[1]
    return input.movedim(1, -1).reshape(-1, c), target.reshape(-1)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] (weighted), for log-probabilities `input` of shape (C,), (N, C) or
    (N, C, d1, ...)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.ndim > 2:
        if target.ndim != input.ndim - 1 or target.shape[0] != input.shape[0] \
                or tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, "
                               f"got {list(target.shape)}")
        flat_input, flat_target = _flatten_classes(input, target)
        loss = _op("nll_loss", flat_input, flat_target, weight, reduction, ignore_index)
        if reduction == "none":
            return loss.reshape(target.shape)
        return loss
    return _op("nll_loss", input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input) followed by nll_loss;
    `target` holds class indices or (same shape as input) class probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    n_classes = input.shape[class_dim]
    wshape = [1] * input.ndim
    wshape[class_dim] = n_classes
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"cross_entropy: class-probability targets must have the input's shape "
                               f"{list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(wshape)
        return _reduce(-terms.sum(class_dim), reduction)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return loss
    valid = (target != ignore_index).to(logp.dtype)
    per_class = logp if weight is None else logp * weight.reshape(wshape)
    smooth = -per_class.sum(class_dim) * valid
    if reduction == "sum":
        smooth = smooth.sum()
    elif weight is None:
        smooth = smooth.sum() / valid.sum()
    else:
        safe_target = target.masked_fill(target == ignore_index, 0)
        smooth = smooth.sum() / (weight.index_select(0, safe_target.reshape(-1)) * valid.reshape(-1)).sum()
    return (1 - label_smoothing) * loss + (label_smoothing / n_classes) * smooth


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target log(input) + (1 - target) log(1 - input)), logs clamped at -100 like PyTorch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("binary_cross_entropy expects a floating point input tensor")
    data = input._data
    if data.size and (data.min() < 0 or data.max() > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_p = _op("clamp", _op("log", input), -100, None)
    log_1mp = _op("clamp", _op("log", 1 - input), -100, None)
    loss = -(target * log_p + (1 - target) * log_1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target), computed stably from the logits."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sig_neg = _op("softplus", -input, 1, 20)      # -log(sigmoid(x))
    if pos_weight is None:
        loss = (1 - target) * input + log_sig_neg
    else:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence with `input` given as log-probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = _op("exp", target) * (target - input)
    else:
        loss = _op("where", target > 0, target * (_op("log", _op("clamp", target, 1e-45, None)) - input),
                   0.0 * input)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    num = (x1 * x2).sum(dim)
    den = _op("sqrt", _op("clamp", (x1 * x1).sum(dim) * (x2 * x2).sum(dim), eps * eps, None))
    return num / den


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


from ._functional_conv import *  # noqa: E402,F401,F403  (conv, pooling, fold/unfold)
from . import _functional_conv  # noqa: E402
__all__ += _functional_conv.__all__

"""`dynjit.nn.functional` (import as F): activations, linear, dropout, normalization,
embedding and losses as functions. Each calls registered ops through the
dispatcher (directly, or as a composite of them), so they trace, differentiate
and compile like any op."""
import math
import warnings

from .. import functional as _fn
from ..ops.dispatch import dispatch
from ..ops.registry import registry as _R
from ..ops.pointwise import scalar_to
from ..tensor import Tensor

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish",
    "sigmoid", "tanh", "softplus", "softsign", "hardtanh", "threshold", "logsigmoid", "softmax",
    "log_softmax", "softmin", "dropout", "layer_norm", "batch_norm", "embedding", "embedding_bag", "one_hot",
    "hardsigmoid", "hardswish", "selu", "celu", "prelu", "glu", "softshrink", "hardshrink", "tanhshrink",
    "affine_grid", "grid_sample", "soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss",
    "poisson_nll_loss", "multi_margin_loss",
    "normalize", "pad", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
    "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_similarity", "pairwise_distance", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "scaled_dot_product_attention", "multi_head_attention_forward", "group_norm",
    "instance_norm", "rms_norm", "local_response_norm", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "pixel_shuffle", "pixel_unshuffle", "triplet_margin_loss", "margin_ranking_loss",
    "cosine_embedding_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _op(name, *args):
    return dispatch(_R[name], args, {})


def _inplace(input, result):
    """Write `result` into `input` (the `inplace=True` flavour) and return `input`."""
    return input.copy_(result)


def _inplace_source(input, inplace):
    """What an in-place composite computes from: a copy of `input` when autograd records it,
    so the values its backward saved are not the ones the write overwrites (PyTorch's
    in-place activations backpropagate; without the copy the backward raised "modified by
    an inplace operation")."""
    return input.clone() if inplace and input.requires_grad else input


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
    source = _inplace_source(input, inplace)
    out = source * _op("tanh", _op("softplus", source, 1, 20))
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


def hardsigmoid(input, inplace=False):
    """0 at or below -3, 1 at or above 3, x / 6 + 1/2 between (gradient 1/6 strictly inside)."""
    out = _fn.where(input <= -3, 0.0, _fn.where(input >= 3, 1.0, (input + 3) / 6)).to(input.dtype)
    return _inplace(input, out) if inplace else out


def hardswish(input, inplace=False):
    """x * hardsigmoid(x); PyTorch's gradient: 0 at or below -3, (2x + 3) / 6 between, 1 at or above 3."""
    x = _inplace_source(input, inplace)
    out = _fn.where(x <= -3, x * 0, _fn.where(x < 3, x * (x + 3) / 6, x)).to(input.dtype)
    return _inplace(input, out) if inplace else out


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al."""
    out = _op("elu", _inplace_source(input, inplace), 1.6732632423543772848170429916717) * 1.0507009873554804934193349852946
    return _inplace(input, out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    x = _inplace_source(input, inplace)
    out = _fn.where(x > 0, x, _op("elu", x / alpha, 1.0) * alpha)
    return _inplace(input, out) if inplace else out


def prelu(input, weight):
    """x where x > 0, else weight * x; a weight of several values is per channel (dim 1)."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim >= 2 else input.shape[0] if input.ndim == 1 else 1
        if input.ndim == 0 or weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.ndim >= 2:
            weight = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return _fn.where(input > 0, input, weight * input)


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the two halves of `input` along `dim`."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size {size}")
    a, b = input.chunk(2, dim)
    return a * _op("sigmoid", b)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        from .._dtype import finfo, scalar_type_name
        raise RuntimeError(f"lambda must be in range [0, {finfo(input.dtype).max:g}] for input dtype "
                           f"{scalar_type_name(input.dtype)}, but found {lambd:g}")
    return _fn.where(input > lambd, input - lambd, _fn.where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _fn.where((input > lambd) | (input < -lambd), input, 0.0).to(input.dtype)


def tanhshrink(input):
    return input - _op("tanh", input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    if not (input.requires_grad and input.dtype.is_floating_point):
        return _op("clamp_" if inplace else "clamp", input, min_val, max_val)
    # clamp's values, with PyTorch's hardtanh gradient: none at the bounds themselves (clamp's
    # gradient passes there), so relu6 at exactly 0 or 6 gets 0 as in PyTorch
    x = _inplace_source(input, inplace)
    out = _fn.where(x <= min_val, min_val, _fn.where(x >= max_val, max_val, x)).to(input.dtype)
    return _inplace(input, out) if inplace else out


def threshold(input, threshold, value, inplace=False):
    """value where input <= threshold, else input."""
    if isinstance(threshold, (bool, int, float)) and not input.dtype.is_floating_point:
        scalar_to(threshold, input.dtype.np)     # PyTorch converts the threshold checked
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
    if scale_grad_by_freq:
        raise NotImplementedError("embedding: scale_grad_by_freq is not supported by dynjit")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a {weight.ndim}-D tensor")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse:      # weight's gradient is sparse: an entry per index, none for padding_idx
        pad = None if padding_idx is None else padding_idx % weight.shape[0]
        rows = _op("_embedding_sparse_rows", weight, input.reshape(-1), pad)
        return rows.reshape(tuple(input.shape) + (weight.shape[1],))
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep = _op("ne", _fn.arange(weight.shape[0]), padding_idx).unsqueeze(1).to(weight.dtype)
        # the padding row's value is used, but its gradient is masked out
        weight = weight * keep + (weight * (1 - keep)).detach()
    rows = _op("index_select", weight, 0, input.reshape(-1))
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of rows of `weight`: a 2-D `input` is one bag per row;
    a 1-D `input` is cut into bags at `offsets`. Rows at `padding_idx` are left out of their
    bag (and of a mean's count); an empty bag gives zeros. Composed of registered ops (the
    bag of each index is computed with tensor ops, so a traced graph reads any offsets)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if (isinstance(weight, Tensor) and isinstance(input, Tensor) and weight.dtype.name == "int64"
            and input.dtype.is_floating_point):
        import warnings     # the old argument order, which PyTorch still takes
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if not isinstance(input, Tensor) or input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError("embedding_bag: Expected tensor for argument #1 'indices' to have an integer dtype "
                           f"(Long or Int); but got {getattr(input, 'dtype', type(input).__name__)} instead")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                             "of fixed length sequences.")
        bags, length = input.shape
        offsets = _fn.arange(0, bags * length, length) if length > 0 else _fn.zeros(bags, dtype=input.dtype)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq is not supported by dynjit")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    starts = offsets[:-1] if include_last_offset else offsets
    n_bags, n_items, dim = starts.shape[0], input.shape[0], weight.shape[1]
    # bag of each index: how many bag starts are at or before its position, less one
    positions = _fn.arange(n_items, dtype=offsets.dtype)
    bag = (positions.unsqueeze(1) >= starts.unsqueeze(0)).long().sum(1) - 1
    keep = bag >= 0
    if include_last_offset:
        keep = keep & (positions < offsets[-1])
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += weight.shape[0]
        keep = keep & (input != padding_idx)
    bag = _fn.where(keep, bag, 0)
    if sparse:      # weight's gradient is sparse: an entry per index, none for padding_idx
        rows = _op("_embedding_sparse_rows", weight, input, padding_idx)
    else:
        rows = _op("index_select", weight, 0, input)
    mask = keep.unsqueeze(1).to(weight.dtype)
    if mode == "max":
        from .._dtype import finfo
        lowest = finfo(weight.dtype).min
        rows = _fn.where(keep.unsqueeze(1), rows, lowest)
        index = bag.unsqueeze(1).expand(n_items, dim)
        out = _fn.full((n_bags, dim), lowest, dtype=weight.dtype).scatter_reduce(0, index, rows, "amax")
        filled = _fn.zeros(n_bags, dtype=weight.dtype).index_add(0, bag, keep.to(weight.dtype)) > 0
        return _fn.where(filled.unsqueeze(1), out, 0.0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    out = _fn.zeros((n_bags, dim), dtype=weight.dtype).index_add(0, bag, rows * mask)
    if mode == "mean":
        counts = _fn.zeros(n_bags, dtype=weight.dtype).index_add(0, bag, mask.squeeze(1))
        out = out / counts.clamp(min=1).unsqueeze(1)
    return out


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


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_dim(x, dim, left, right, mode):
    """x padded by (left, right) along `dim` in a non-constant `mode`, from narrow / flip /
    expand / cat (so it differentiates and compiles into the graph)."""
    size = x.shape[dim]
    if mode == "circular":
        if left > size or right > size:
            raise ValueError("Padding value causes wrapping around more than once.")
        parts = [x.narrow(dim, size - left, left), x, x.narrow(dim, 0, right)]
    elif mode == "replicate":
        def edge(start, n):
            shape = list(x.shape)
            shape[dim] = n
            return x.narrow(dim, start, 1).expand(shape)
        parts = [edge(0, left), x, edge(size - 1, right)]
    else:       # reflect: mirror about the edge element, which is not repeated
        if left >= size or right >= size:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({left}, {right}) at dimension {dim} of input {list(x.shape)}")
        parts = [x.narrow(dim, 1, left).flip([dim]), x, x.narrow(dim, size - 1 - right, right).flip([dim])]
    return _fn.cat([p for p in parts if p.shape[dim] > 0], dim)


_ALIGN_CORNERS_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                          "documentation of grid_sample for details.")


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) of the 2-D affine maps `theta` (N, 2, 3) for an output of
    `size` (N, C, H, W), in grid_sample's normalized [-1, 1] coordinates (x, y)."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D sizes, for 2D affine transformations in dynjit "
                                  f"(5D is not supported). Got size {list(size)}.")
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {list(size)}. Got "
                         f"{list(theta.shape)}.")
    n, _, h, w = size
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")

    def axis(steps):
        if steps == 1:
            return _fn.zeros(1, dtype=theta.dtype)
        coords = _fn.linspace(-1.0, 1.0, steps, dtype=theta.dtype)
        return coords if align_corners else coords * ((steps - 1) / steps)

    xs, ys = axis(w), axis(h)
    base = _fn.stack([xs.unsqueeze(0).expand(h, w), ys.unsqueeze(1).expand(h, w), _fn.ones((h, w), dtype=theta.dtype)],
                     dim=-1)                                                       # (H, W, 3)
    grid = base.reshape(1, h * w, 3) @ theta.transpose(1, 2)                       # (N, H*W, 2)
    return grid.reshape(n, h, w, 2)


def _grid_sample_unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample the 4-D `input` (N, C, H, W) at the normalized (x, y) points of `grid`
    (N, Ho, Wo, 2): bilinear or nearest, points outside read as zeros ("zeros") or as the
    nearest edge ("border"). Composed of gathers, so gradients reach input and grid."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" or padding_mode == "reflection":
        raise NotImplementedError(f"grid_sample: mode='{mode}' with padding_mode='{padding_mode}' is not supported "
                                  "by dynjit (bilinear and nearest with 'zeros' or 'border' padding are)")
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: dynjit supports 4-D input (N, C, H, W), got {input.ndim}-D")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension and the batch size of "
                           f"input ({input.shape[0]}), but got grid with sizes {list(grid.shape)}")
    n, c, h, w = input.shape
    _, h_out, w_out, _ = grid.shape
    ix = _grid_sample_unnormalize(grid[..., 0], w, align_corners)                    # (N, Ho, Wo)
    iy = _grid_sample_unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        # clipped to the edge with no gradient at the edge itself, as PyTorch's clip_coordinates
        ix = _fn.where(ix <= 0, 0.0, _fn.where(ix >= w - 1, float(w - 1), ix)).to(ix.dtype)
        iy = _fn.where(iy <= 0, 0.0, _fn.where(iy >= h - 1, float(h - 1), iy)).to(iy.dtype)
    flat = input.reshape(n, c, h * w)

    def read(x, y):
        """input at integer points (x, y) (N, Ho, Wo), zero outside: (N, C, Ho, Wo)."""
        inside = ((x >= 0) & (x <= w - 1) & (y >= 0) & (y <= h - 1)).to(input.dtype)
        index = (y.clamp(0, h - 1) * w + x.clamp(0, w - 1)).long().reshape(n, 1, h_out * w_out)
        values = flat.gather(2, index.expand(n, c, h_out * w_out)).reshape(n, c, h_out, w_out)
        return values * inside.unsqueeze(1)

    if mode == "nearest":
        # the grid gets a zero gradient (not none), as PyTorch's grid_sampler backward gives
        zero_from_grid = _fn.where(_fn.zeros(()) > 0, grid.sum(), 0.0)
        return read(_fn.round(ix).detach(), _fn.round(iy).detach()) + zero_from_grid
    x0, y0 = _fn.floor(ix).detach(), _fn.floor(iy).detach()
    x1, y1 = x0 + 1, y0 + 1
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (read(x0, y0) * (wx0 * wy0).unsqueeze(1) + read(x1, y0) * (wx1 * wy0).unsqueeze(1)
            + read(x0, y1) * (wx0 * wy1).unsqueeze(1) + read(x1, y1) * (wx1 * wy1).unsqueeze(1))


def pad(input, pad, mode="constant", value=None):
    """Pad the last dims: `pad` lists (left, right) amounts, last dim first. Modes: constant
    (`value`, default 0), reflect, replicate, circular (for the last 1-3 dims of a batched or
    unbatched input, as PyTorch)."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
        n = len(pad) // 2
        if len(pad) % 2 or not 1 <= n <= 3 or input.ndim not in (n + 1, n + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
        out = input
        for i in range(n):
            left, right = int(pad[2 * i]), int(pad[2 * i + 1])
            if left or right:
                out = _pad_dim(out, input.ndim - 1 - i, left, right, mode)
        return out
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


def _refuse_complex(kernel, *tensors):
    """PyTorch implements these losses for real tensors only (l1_loss takes complex ones)."""
    for t in tensors:
        if isinstance(t, Tensor) and t.is_complex():
            from .._dtype import scalar_type_name
            raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(t.dtype)}\'')


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("mse_loss", input, target)
    _refuse_complex("mse_cpu", input, target)
    loss = (input - target) ** 2
    return _reduce(loss if weight is None else loss * weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("l1_loss", input, target)
    return _reduce(_op("abs", input - target), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_same_size("smooth_l1_loss", input, target)
    _refuse_complex("smooth_l1_cpu", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = _op("abs", input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = _op("where", diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_same_size("huber_loss", input, target)
    _refuse_complex("huber_cpu", input, target)
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
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
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
    if reduction == "none":
        pass
    elif reduction == "sum":
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
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim, x1 and x2 broadcast
    (PyTorch's formula: each norm is clamped on its own)."""
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim of the broadcast inputs."""
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        return _op("abs", diff)
    return diff.norm(p, -1, keepdim=keepdim)


# -- attention --------------------------------------------------------------------------

def _attention_bias(attn_mask, dtype):
    """A float mask to add to attention scores: bool masks become 0 (attend) / -inf (don't)."""
    if attn_mask.dtype.name == "bool":
        return _fn.where(attn_mask, 0.0, float("-inf")).to(dtype)
    if not attn_mask.dtype.is_floating_point:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype.name} and  query.dtype: {dtype.name} instead.")
    return attn_mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims (..., L, E) x
    (..., S, E) x (..., S, Ev) -> (..., L, Ev), as torch's math backend: a bool mask says
    where to attend, a float mask is added to the scores; a query row that may attend to
    nothing gives zeros (not NaN); enable_gqa repeats each key/value head for the
    query heads that share it (dim -3)."""
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype.name} key.dtype: {key.dtype.name} and value.dtype: "
                           f"{value.dtype.name} instead.")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention expects query, key and value with at least 2 dims "
                           f"(..., L, E), got {query.ndim}, {key.ndim} and {value.ndim}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length "
                           f"(dim -2), got {key.shape[-2]} and {value.shape[-2]}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key must have the same embedding size "
                           f"(dim -1), got {query.shape[-1]} and {key.shape[-1]}")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk != hv or hq % hk:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hk)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _fn.matmul(query, key.transpose(-2, -1)) * scale_factor
    masked = is_causal or attn_mask is not None
    if is_causal:
        attn_mask = _fn.ones((L, S), dtype=_bool()).tril()
    if attn_mask is not None:
        scores = scores + _attention_bias(attn_mask, query.dtype)
    if masked:
        # a row that may attend to nothing: softmax of zeros (finite gradients), then zeroed
        attends = (scores != float("-inf")).any(-1, keepdim=True)
        scores = _fn.where(attends, scores, 0.0)
        weights = _fn.where(attends, softmax(scores, -1), 0.0)
    else:
        weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return _fn.matmul(weights, value)


def _bool():
    from .. import _dtype
    return _dtype.bool_


def _repeat_heads(x, n):
    """(..., H, S, E) -> (..., H * n, S, E), each head repeated n times in a row."""
    shape = tuple(x.shape)
    expanded = x.unsqueeze(-3).expand(shape[:-2] + (n,) + shape[-2:])
    return expanded.reshape(shape[:-3] + (shape[-3] * n,) + shape[-2:])


def _mha_mask(mask, name, dtype):
    """MultiheadAttention's masks as a float bias: there a bool True means "do not attend"
    (the opposite of scaled_dot_product_attention's bool mask)."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return _fn.where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _mha_static(t, name, batch_heads, head_dim):
    if t.ndim != 3:
        raise AssertionError(f"expecting {name} to be 3-D (N * num_heads, S, head_dim), but got {t.ndim}-D")
    if t.shape[0] != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                                 out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
                                 attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights=True, is_causal=False):
    """Multi-head attention on (L, N, E) query and (S, N, Ek/Ev) key/value (or unbatched
    (L, E), (S, E)), as torch.nn.functional.multi_head_attention_forward. Returns the
    output (L, N, E) and, if need_weights, the attention weights (N, L, S) averaged over
    heads (or (N, H, L, S) when average_attn_weights is False)."""
    batched = query.ndim == 3
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D "
                             "query tensor")
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, expected `key` "
                             f"and `value` to be {query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             "respectively")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                           "module method `generate_square_subsequent_mask` to create this mask.")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if embed_dim % num_heads:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    head_dim = embed_dim // num_heads
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    # input projections
    if use_separate_proj_weight:
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, bq)
        k = linear(key, k_proj_weight, bk)
        v = linear(value, v_proj_weight, bv)
    else:
        wq, wk, wv = in_proj_weight.chunk(3)
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias.chunk(3)
        q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    attn_mask = _mha_mask(attn_mask, "attn_mask", q.dtype)
    key_padding_mask = _mha_mask(key_padding_mask, "key_padding_mask", q.dtype)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, key.shape[0])}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, key.shape[0])}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _fn.cat([k, bias_k.reshape(1, 1, embed_dim).expand((1, bsz, embed_dim))])
        v = _fn.cat([v, bias_v.reshape(1, 1, embed_dim).expand((1, bsz, embed_dim))])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    # (len, N, E) -> (N * heads, len, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    # static_k / static_v (N * heads, S, head_dim) replace the projected key / value
    k = (k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else _mha_static(static_k, "static_k", bsz * num_heads, head_dim))
    v = (v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else _mha_static(static_v, "static_v", bsz * num_heads, head_dim))
    if add_zero_attn:
        k = _fn.cat([k, _fn.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype)], 1)
        v = _fn.cat([v, _fn.zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype)], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand((bsz, num_heads, 1, src_len))
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = _fn.matmul(q * (1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = _fn.matmul(weights, v)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len) if attn_mask.shape[0] != 1 \
                else attn_mask.unsqueeze(0)
        out = scaled_dot_product_attention(q.reshape(bsz, num_heads, tgt_len, head_dim),
                                           k.reshape(bsz, num_heads, src_len, head_dim),
                                           v.reshape(bsz, num_heads, src_len, head_dim), attn_mask, dropout_p)
        out = out.reshape(bsz * num_heads, tgt_len, head_dim)
        weights = None
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if weights is not None:
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights


# -- more normalizations ------------------------------------------------------------------

def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each group of num_groups consecutive channels of (N, C, *) over the group's
    channels and all spatial positions, then scale and shift per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    var, mean = dispatch(_R["var_mean"], (grouped, (2,), 0, True), {})
    out = ((grouped - mean) * _op("rsqrt", var + eps)).reshape(tuple(input.shape))
    return _channel_affine(out, weight, bias)


def _channel_affine(out, weight, bias):
    shape = (1, out.shape[1]) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) of (N, C, *) over its spatial positions. With
    use_input_stats the running statistics (if given) are updated with the batch average of
    the instances' mean and unbiased variance; otherwise they normalize."""
    if input.ndim < 3:
        raise ValueError(f"instance_norm expects an input (N, C, *) with spatial dims, got shape "
                         f"{list(input.shape)}")
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        spatial = input.numel() // (input.shape[0] * input.shape[1]) if input.numel() else 0
        if spatial <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
        var, mean = dispatch(_R["var_mean"], (input, dims, 0, True), {})
        if running_mean is not None:
            from ..autograd.grad_mode import no_grad
            with no_grad():
                flat_mean = mean.detach().reshape(input.shape[0], input.shape[1]).mean(0)
                flat_var = var.detach().reshape(input.shape[0], input.shape[1]).mean(0)
                running_mean.mul_(1 - momentum).add_(flat_mean * momentum)
                running_var.mul_(1 - momentum).add_(flat_var * (momentum * spatial / (spatial - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _channel_affine((input - mean) * _op("rsqrt", var + eps), weight, bias)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2 over the trailing normalized_shape dims) + eps) * weight;
    eps None means the dtype's machine epsilon (as PyTorch)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*{', '.join(map(str, normalized_shape))}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        import numpy as np
        eps = float(np.finfo(input.dtype.np).eps) if input.dtype.is_floating_point else 1.1920928955078125e-07
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * _op("rsqrt", (input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha / size * sum of input^2 over `size` neighbouring channels)^beta,
    the window centred on each channel and zero-padded at the ends (as PyTorch)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = (input * input).movedim(1, -1)
    padded = pad(sq, (size // 2, (size - 1) // 2))
    window = padded.narrow(-1, 0, c)
    for i in range(1, size):
        window = window + padded.narrow(-1, i, c)
    div = (window.movedim(-1, 1) * (alpha / size) + k) ** beta
    return input / div


# -- channel dropout and alpha dropout -------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input, p, training, inplace, batched):
    """Zero whole channels (dim 1 of a batched input, dim 0 of an unbatched one) with
    probability p and scale the kept ones by 1/(1-p)."""
    if not training or p == 0.0:
        return input
    lead = 2 if batched else 1
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    keep = dispatch(_R["native_dropout"], (_fn.ones(mask_shape, dtype=input.dtype), p, True), {})[0]
    out = _inplace_source(input, inplace) * keep
    return _inplace(input, out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, L) or (C, L) inputs."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def _wrong_dims_warning(name, ndim, spatial):
    warnings.warn(f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an "
                  "error in a future release. To retain the behavior and silence this warning, please use "
                  f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
                  f"{spatial} spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                  f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, H, W) inputs. As PyTorch (for now), a 3D input is taken as
    batched (N, C, L), with a warning; other ranks warn and drop elements."""
    _check_p(p)
    if input.ndim not in (3, 4):
        _wrong_dims_warning("dropout2d", input.ndim, 2)
        return dropout(input, p, training, inplace)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _wrong_dims_warning("dropout3d", input.ndim, 3)
        return dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace, input.ndim == 5)


_SELU_ALPHA_PRIME = -1.7580993408473766     # -scale * alpha of SELU


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements are set to
    SELU's negative saturation value, then all are affinely rescaled (Klambauer et al.)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
        return _inplace(input, out) if inplace else out
    keep = dispatch(_R["bernoulli"], (_fn.ones(tuple(input.shape), dtype=input.dtype), 1 - p), {})
    a = ((1 - p) * (1 + p * _SELU_ALPHA_PRIME ** 2)) ** -0.5
    b = -a * _SELU_ALPHA_PRIME * p
    out = (_inplace_source(input, inplace) * keep + _SELU_ALPHA_PRIME * (1 - keep)) * a + b
    return _inplace(input, out) if inplace else out


# -- pixel shuffle -------------------------------------------------------------------

def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    batch = tuple(batch)
    nb = len(batch)
    x = input.reshape(batch + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(nb)) + (nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return x.reshape(batch + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    batch = tuple(batch)
    nb = len(batch)
    x = input.reshape(batch + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(nb)) + (nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return x.reshape(batch + (c * r * r, h // r, w // r))


# -- distance and margin losses -------------------------------------------------------

def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0) with d = pairwise_distance;
    with swap, d(anchor, negative) is replaced by d(positive, negative) where smaller."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
                           f"negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _fn.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), targets +-1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_fn.log1p(_fn.exp(-target * input)), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per sample, the mean over classes of the binary logistic loss of each class."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = _fn.zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    output = _fn.where(target != 1, margin_clamp, zeros) + _fn.where(target != -1, input, zeros)
    return _reduce(output, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Negative log-likelihood of `target` under Poisson(rate): rate = exp(input) with
    log_input, else input (+ eps in the log); `full` adds Stirling's term for targets > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = _fn.exp(input) - target * input
    else:
        loss = input - target * _fn.log(input + eps)
    if full:
        safe = _fn.where(target > 1, target, 1.0).to(target.dtype)     # the term is 0 where target <= 1
        stirling = safe * _fn.log(safe) - safe + 0.5 * _fn.log(2 * math.pi * safe)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample, the mean over classes i != y of max(0, margin - x[y] + x[i]) ** p (times
    weight[y])."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim not in (1, 2) or target.ndim > 1:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    squeeze = input.ndim == 1
    x = input.unsqueeze(0) if squeeze else input
    y = target.reshape(-1)
    classes = x.size(1)
    x_y = x.gather(1, y.unsqueeze(1))
    z = (margin - x_y + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y].unsqueeze(1)
    z = z.masked_fill(_op("one_hot", y, classes) > 0, 0)
    loss = z.sum(1) / classes
    if squeeze and reduction == "none":
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1
    (cos computed over the last dim with 1e-12 added to the squared norms, as PyTorch)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim not in (1, 2) or tuple(input1.shape) != tuple(input2.shape):
        raise RuntimeError(f"cosine_embedding_loss expects 1D or 2D inputs of the same shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    if target.ndim != input1.ndim - 1:
        raise RuntimeError(f"{input1.ndim}D target tensor expects {input1.ndim - 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag = ((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps)
    cos = prod / _op("sqrt", mag)
    loss = _fn.where(target == 1, 1 - cos, 0.0) + _fn.where(target == -1, (cos - margin).clamp_min(0.0), 0.0)
    return _reduce(loss, reduction)


from ._functional_conv import *  # noqa: E402,F401,F403  (conv, pooling, fold/unfold)
from . import _functional_conv  # noqa: E402
__all__ += _functional_conv.__all__
from ._functional_likelihood import gaussian_nll_loss  # noqa: E402,F401
__all__ += ["gaussian_nll_loss"]

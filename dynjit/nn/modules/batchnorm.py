"""BatchNorm1d/2d: per-channel normalization by batch statistics while training
(updating running statistics kept as buffers) and by the running statistics in eval."""
from ... import functional as _fn
from ... import _dtype
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module
from ._factory import factory_kwargs as _factory_kwargs


class _BatchNorm(Module):
    _expected_dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__()
        factory_kwargs = _factory_kwargs(device, dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_fn.empty((num_features,), **factory_kwargs))
            self.bias = Parameter(_fn.empty((num_features,), **factory_kwargs))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _fn.zeros((num_features,), **factory_kwargs))
            self.register_buffer("running_var", _fn.ones((num_features,), **factory_kwargs))
            self.register_buffer("num_batches_tracked", _fn.zeros((), dtype=_dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input):
        if input.ndim not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} input "
                             f"(got {input.ndim}D input)")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels in dim 1, "
                             f"got input of shape {list(input.shape)}")

    def forward(self, input):
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:       # cumulative moving average
                # a 0-d tensor, not float(): a traced graph (AOT) computes the factor from
                # the buffer on each call instead of keeping the first call's value
                momentum = self.num_batches_tracked.double().reciprocal()
        use_batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Input (N, C, D, H, W)."""
    _expected_dims = (5,)


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel normalization over the spatial dims (torch.nn.InstanceNorm*d).
    Unbatched inputs (one dim fewer) are accepted."""
    _batched_dims = 3

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        import warnings
        if input.ndim not in (self._batched_dims - 1, self._batched_dims):
            raise ValueError(f"expected {self._batched_dims - 1}D or {self._batched_dims}D input "
                             f"(got {input.ndim}D input)")
        feature_dim = input.ndim - (self._batched_dims - 1)
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence "
                          "this warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        unbatched = input.ndim == self._batched_dims - 1
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Input (N, C, L) or (C, L)."""
    _batched_dims = 3


class InstanceNorm2d(_InstanceNorm):
    """Input (N, C, H, W) or (C, H, W)."""
    _batched_dims = 4


class InstanceNorm3d(_InstanceNorm):
    """Input (N, C, D, H, W) or (C, D, H, W)."""
    _batched_dims = 5

"""dynjit.cuda.amp: torch.cuda.amp's `autocast` and `GradScaler`. There is no CUDA, so both
warn and disable themselves, as torch's do without a GPU: `autocast` does nothing and
`GradScaler` passes through (`scale(loss)` is `loss`, `step(opt)` is `opt.step()`)."""
from .. import amp as _amp


class autocast(_amp.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


custom_fwd = _amp.custom_fwd
custom_bwd = _amp.custom_bwd

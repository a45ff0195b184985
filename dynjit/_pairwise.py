"""`dynjit.cdist`: the p-norm distance between every row of x1 and every row of x2
(batched), a composite of the registered `norm` reduction over a broadcast difference, so its
gradient at a zero distance is zero as PyTorch's is. Used by k-means, nearest-centroid and
metric-learning code."""
from . import functional as _F


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist(x1, x2, p=2.0): (..., P, M) and (..., R, M) -> (..., P, R)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D"
                           if x1.dim() < 2 else f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.size(-1) != x2.size(-1):
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.size(-1)} X2: {x2.size(-1)}")
    if not (x1.is_floating_point() and x2.is_floating_point()):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _F.norm(diff, p=p, dim=-1)

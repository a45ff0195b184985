"""Flatten parameters into one vector and write a vector back into them."""
from ... import functional as _fn
from ...autograd.grad_mode import no_grad


def parameters_to_vector(parameters):
    return _fn.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].view_as(p))
            offset += n
    if offset != vec.numel():
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements but the "
                           f"parameters have {offset}")

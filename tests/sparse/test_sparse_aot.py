"""Sparse gradients through AOT autograd: a module whose backward makes a sparse gradient
(EmbeddingBag(sparse=True)) compiled with aot_module gives the eager outputs and the same
sparse gradient, with static and with symbolic sizes."""
import numpy as np
import pytest

import dynjit as torch
from dynjit.aot import aot_module, nop


class F(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.EmbeddingBag(100, 8, sparse=True)

    def forward(self, x, y):
        return self.emb(x, y).view(-1)


def verify_aot_autograd(make_module, inputs, dynamic):
    """PyTorch's verify_aot_autograd for a module: outputs and parameter gradients of the
    AOT-compiled module equal eager's (a sparse gradient compared by layout and values)."""
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        mod = make_module()
        fn = aot_module(mod, nop, nop, dynamic=dynamic) if compiled else mod
        out = fn(*inputs)
        (out * torch.arange(out.numel(), dtype=out.dtype)).sum().backward()
        results.append((out.detach(), [p.grad for p in mod.parameters()]))
    (ref_out, ref_grads), (out, grads) = results
    np.testing.assert_allclose(out.numpy(), ref_out.numpy(), rtol=1e-6)
    for a, b in zip(ref_grads, grads):
        assert b.layout == a.layout
        np.testing.assert_allclose(b.to_dense().numpy(), a.to_dense().numpy(), rtol=1e-6)
    return grads


# ports: 001_fdd911346beae147.txt TestAOTAutograd.test_embedding_bag_view_dynamic
@pytest.mark.parametrize("dynamic", [False, True])
def test_embedding_bag_view_dynamic(dynamic):
    x = torch.arange(3)
    y = torch.arange(3)
    grads = verify_aot_autograd(F, [x, y], dynamic=dynamic)
    assert grads[0].is_sparse and grads[0]._nnz() == 3

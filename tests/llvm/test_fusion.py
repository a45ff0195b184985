"""Which nodes fuse into one kernel, and that the fused kernels give eager's results."""
import dynjit

from llvm_helpers import check


def test_pointwise_chain_is_one_kernel():
    a, b, c = dynjit.randn(6, 7), dynjit.randn(6, 7), dynjit.randn(7)
    fn = check(lambda a, b, c: ((a * b + c).sin() * 0.5).exp() - a * c, a, b, c)
    assert fn.stats["kernels"] == 1 and fn.stats["fused_nodes"] == 7


def test_softmax_is_one_kernel_with_three_passes():
    x = dynjit.randn(9, 33)
    fn = check(lambda x: x.softmax(1), x)
    assert fn.stats["kernels"] == 1
    fn = check(lambda x: x.log_softmax(-1), x)
    assert fn.stats["kernels"] == 1


def test_reduction_ends_the_chain_it_consumes():
    a, b = dynjit.randn(5, 40), dynjit.randn(5, 40)
    fn = check(lambda a, b: ((a * b).exp() + 1).sum(1), a, b)
    assert fn.stats["kernels"] == 1


def test_intermediate_used_twice_is_stored_once_in_the_same_kernel():
    a = dynjit.randn(4, 50)
    fn = check(lambda a: (a.sin(), a.sin().sum(1), a.sin().amax(1, keepdim=True)), a)
    assert fn.stats["kernels"] == 1


def test_matmul_calls_numpy_between_kernels():
    x, w, b = dynjit.randn(8, 16), dynjit.randn(4, 16), dynjit.randn(4)
    fn = check(lambda x, w, b: ((x * 2) @ w.t() + b).relu(), x, w, b)
    assert fn.stats["extern"] == 1 and fn.stats["kernels"] == 2

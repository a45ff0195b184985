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


def _exp_calls(fn):
    return fn.ir.count('@"dj.exp.')


def _softmax_by_hand(x, dims=1):
    e = (x - x.amax(dims, keepdim=True)).exp()
    return e / e.sum(dims, keepdim=True)


def test_softmax_computes_exp_once_per_element():
    # exp(x - max) is summed in one pass and stored by the next: it is kept in the
    # output between the two passes instead of computed twice
    x = dynjit.randn(6, 1027)
    sum_only = check(lambda x: (x - x.amax(1, keepdim=True)).exp().sum(1), x)
    for fn in (check(lambda x: x.softmax(1), x), check(_softmax_by_hand, x)):
        assert fn.stats["kernels"] == 1
        assert _exp_calls(fn) == _exp_calls(sum_only) > 0


def test_values_kept_between_passes_give_eagers_results():
    x = dynjit.randn(3, 5, 37)
    x[1, 2, 3] = float("inf")
    x[2, 0, 0] = float("nan")
    check(lambda x: _softmax_by_hand(x, (1, 2)), x)
    check(lambda x: _softmax_by_hand(x, 2) * x, x)
    # the output's dtype differs from the kept value's: computed twice, still right
    fn = check(lambda x: _softmax_by_hand(x, 2).to(dynjit.float64), x)
    assert _exp_calls(fn) > _exp_calls(check(lambda x: (x - x.amax(2, keepdim=True)).exp().sum(2), x))
    # two outputs of the later pass, each reusing a different kept value
    check(lambda x: (_softmax_by_hand(x, 2), x.sin() / x.sin().sum(2, keepdim=True)), x)
    # rows shorter than a vector step, and a single row
    check(_softmax_by_hand, dynjit.randn(4, 3))
    check(_softmax_by_hand, dynjit.randn(1, 100))

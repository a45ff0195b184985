"""Autograd odds and ends: version counters and `.data`, gradient buffers not shared
between leaves, anomaly detection, and backward passes run from several threads."""
import io
import sys
import threading
import traceback
import warnings
import weakref

import numpy as np
import pytest

import dynjit
from dynjit.autograd import Function, detect_anomaly


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_version_counter
def test_version_counter_is_shared_by_views_and_survives_setting_data():
    x = dynjit.randn(1, 2)
    before = x._version
    x.add_(1).add_(1)
    assert x._version == before + 2
    xz = x[:]
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    before = x._version
    x.data = dynjit.randn(2, 3)
    assert x._version == before          # replacing .data is not an in-place change
    x.add_(1)
    assert x._version > before and x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_set_data_preserve_pyobj
def test_setting_data_keeps_the_python_object():
    a, b = dynjit.randn(1, 2), dynjit.randn(1, 2)
    b_id = id(b)
    b.data = a
    assert id(b) == b_id
    assert b.tolist() == a.tolist()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_set_data_self_requires_grad
def test_data_of_a_grad_tensor_must_stay_floating_point():
    a = dynjit.tensor(1.0, requires_grad=True)
    a.data = dynjit.tensor(2.0)
    assert a.item() == 2.0
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        a.data = dynjit.tensor(3, dtype=dynjit.int64)
    assert a.item() == 2.0


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_no_grad_copy
def test_a_gradient_buffer_is_given_to_at_most_one_leaf():
    class AddBoth(Function):
        grad_ptr = None

        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            AddBoth.grad_ptr = grad.data_ptr()
            return grad, grad

    class ExpandedGrad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.size = x.size()
            return dynjit.tensor([1.0])

        @staticmethod
        def backward(ctx, grad):
            return dynjit.ones(1).expand(ctx.size)

    a = dynjit.randn(5, 6, requires_grad=True)
    b = dynjit.randn(5, 6, requires_grad=True)
    ExpandedGrad.apply(AddBoth.apply(a, b)).backward()
    assert a.grad.data_ptr() != AddBoth.grad_ptr and b.grad.data_ptr() != AddBoth.grad_ptr
    a.grad = b.grad = None
    AddBoth.apply(a, b)[1][0].backward()
    p_a, p_b = a.grad.data_ptr(), b.grad.data_ptr()
    assert p_a != p_b
    assert AddBoth.grad_ptr in (p_a, p_b)      # one leaf takes the buffer without a copy
    a.grad.add_(1)
    assert b.grad.sum().item() == 1.0          # the other is unaffected


# -- anomaly detection ---------------------------------------------------------

def _messages(records):
    return [str(r.message) for r in records]


class _NanGrad(Function):
    """Sums its first input; backward puts a NaN in the gradient of input 0 or 1."""

    @staticmethod
    def forward(ctx, inp1, inp2, fail_0th):
        ctx.fail_0th = fail_0th
        ctx.size = inp1.shape[0]
        return inp1.sum(0, keepdim=True)

    @staticmethod
    def backward(ctx, g):
        gi = g.clone().expand(ctx.size).clone()
        gi[0] = 0
        gi[0] /= 0
        return (gi, None, None) if ctx.fail_0th else (None, gi, None)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_anomaly_detect_nan
def test_anomaly_mode_refuses_nan_gradients_and_shows_the_forward_call():
    inp = dynjit.rand(10, requires_grad=True)
    _NanGrad.apply(inp, inp, True).backward()          # not checked without anomaly mode
    assert np.isnan(inp.grad.numpy()[0])

    out = _NanGrad.apply(dynjit.rand(10, requires_grad=True), inp, True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function '_NanGradBackward' returned nan values in its 0th output."):
            with detect_anomaly():
                out.backward()
    messages = _messages(w)
    assert "Anomaly Detection has been enabled" in messages[0]
    assert "No forward pass information" in messages[1]       # made before anomaly mode

    inp = dynjit.rand(10, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function '_NanGradBackward' returned nan values in its 1th output."):
            with detect_anomaly():
                out = _NanGrad.apply(inp, inp, False)
                out.backward()
    assert "_NanGrad.apply" in _messages(w)[1]


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_nested_anomaly_detect_nan
def test_anomaly_mode_shows_the_chain_of_backward_calls_that_made_a_node():
    class Outer(Function):
        @staticmethod
        def forward(ctx, inp1, fail_0th):
            ctx.fail_0th = fail_0th
            ctx.save_for_backward(inp1)
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, g):
            (inp,) = ctx.saved_tensors
            g = g.clone().expand(inp.shape[0])
            return Inner.apply(g * inp, g + inp, ctx.fail_0th), None

    class Inner(Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1 * 2.0 + inp2

        @staticmethod
        def backward(ctx, g):
            g1, g2 = g.clone(), g.clone()
            g1[0] = 0
            g2[0] = 0
            if ctx.fail_0th:
                g1[0] /= 0
            else:
                g2[0] /= 0
            return g1, g2, None

    inp = dynjit.rand(10, requires_grad=True)
    (ginp,) = dynjit.autograd.grad(Outer.apply(inp, True), (inp,), create_graph=True)
    ginp.sum().backward()                              # fine without anomaly mode

    inp = dynjit.rand(10, requires_grad=True)
    (ginp,) = dynjit.autograd.grad(Outer.apply(inp, True), (inp,), create_graph=True)
    gsum = ginp.sum()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'InnerBackward' returned nan values in its 0th output."):
            with detect_anomaly():
                gsum.backward()
    assert "No forward pass information" in _messages(w)[1]

    inp = dynjit.rand(10, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'InnerBackward' returned nan values in its 1th output."):
            with detect_anomaly():
                out = Outer.apply(inp, False)
                (ginp,) = dynjit.autograd.grad(out, (inp,), create_graph=True)
                ginp.sum().backward()
    messages = _messages(w)
    assert "Inner.apply" in messages[1]                   # InnerBackward made in Outer's backward
    assert "Previous calculation was induced by OuterBackward" in messages[2]
    assert "Outer.apply" in messages[2]


def _modify_saved_then_grad():
    a = dynjit.randn(5, requires_grad=True)
    d1 = a + 1
    d2 = d1 ** 2
    d1 += 1
    dynjit.autograd.grad(d2.sum(), a)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_anomaly_grad_warnings
def test_anomaly_report_goes_to_stderr_when_warnings_are_errors():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            with detect_anomaly():
                _modify_saved_then_grad()
    messages = _messages(w)
    assert len(messages) == 2
    assert "Anomaly Detection has been enabled" in messages[0]
    assert "Error detected in PowBackward0" in messages[1]

    stderr = io.StringIO()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            with detect_anomaly():
                warnings.simplefilter("error")
                old, sys.stderr = sys.stderr, stderr
                try:
                    _modify_saved_then_grad()
                finally:
                    sys.stderr = old
    assert len(w) == 1 and "Anomaly Detection has been enabled" in str(w[0].message)
    assert "Error detected in PowBackward0" in stderr.getvalue()


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_anomaly_assign_parent_cleanup
def test_nodes_made_under_anomaly_mode_do_not_keep_the_graph_alive():
    def get_ref():
        x = dynjit.randn(2, 2, requires_grad=True)
        t = x.exp()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with detect_anomaly():
                dynjit.autograd.grad(t, x, dynjit.ones_like(t), create_graph=True)

        class Marker:
            pass

        obj = Marker()
        t.grad_fn.metadata[0] = obj
        return t, weakref.ref(obj)

    t, ref = get_ref()
    assert ref() is not None
    del t
    assert ref() is None


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_nested_anomaly_printstack_cleanup
def test_failed_anomaly_report_does_not_keep_the_graph_alive():
    def get_ref():
        class First(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return Second.apply(x)

        class Second(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g + float("nan")

        inp = dynjit.rand(1, requires_grad=True)
        out = First.apply(inp)
        (ginp,) = dynjit.autograd.grad(out, (inp,), create_graph=True)
        message = None
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            try:        # (not pytest.raises: its kept traceback would hold this frame)
                with detect_anomaly():
                    ginp.backward()
            except RuntimeError as error:
                message = str(error)
        assert message == "Function 'SecondBackward' returned nan values in its 0th output."

        class Marker:
            pass

        obj = Marker()
        out.grad_fn.metadata[0] = obj
        return out, weakref.ref(obj)

    out, ref = get_ref()
    assert ref() is not None
    del out
    assert ref() is None


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_anomaly_mode_no_check_nan
def test_check_nan_can_be_turned_off_and_back_on():
    class NanGrad(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, g):
            return dynjit.tensor(float("nan")).expand(10, 10)

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with dynjit.autograd.detect_anomaly(check_nan=False):
            inp = dynjit.rand(10, 10, requires_grad=True)
            out = NanGrad.apply(inp).sum()
            out.backward(retain_graph=True)
            with dynjit.autograd.detect_anomaly(check_nan=True):
                with pytest.raises(RuntimeError, match="Function 'NanGradBackward' returned nan values in its 0th output."):
                    out.backward(retain_graph=True)
            out.backward()
            assert dynjit.autograd.is_anomaly_enabled() and not dynjit.autograd.is_anomaly_check_nan_enabled()
    assert not dynjit.autograd.is_anomaly_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_naughty_anomaly_access
def test_metadata_of_a_node_after_its_backward_and_its_output_are_gone():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = dynjit.zeros(1, requires_grad=True)
    y = Identity.apply(x)
    y.backward()
    g = y.grad_fn
    del y
    g.metadata["note"] = 1
    assert g.metadata == {"note": 1}


# -- several threads -----------------------------------------------------------

def _run_in_threads(fn, args=(), num_threads=10):
    """Run fn in threads; the first exception a thread raises is raised here."""
    errors = []

    def target():
        try:
            fn(*args)
        except BaseException as e:     # noqa: BLE001  (handed to the caller)
            errors.append(e)

    threads = [threading.Thread(target=target) for _ in range(num_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_multithreaded_exception_propagation
def test_an_exception_in_a_thread_reaches_the_caller():
    def fail():
        assert False, "raised in a thread"

    with pytest.raises(AssertionError, match="raised in a thread"):
        _run_in_threads(fail)


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_simple_backward
def test_independent_backward_passes_in_threads():
    def train():
        x = dynjit.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        assert np.allclose(x.grad.numpy(), x.detach().numpy() + 3.5)

    _run_in_threads(train)


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_simple_backward_same_input
def test_threads_accumulating_into_the_same_leaf():
    def train_backward(x):
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()

    x = dynjit.ones(5, 5, requires_grad=True)
    _run_in_threads(train_backward, (x,))
    np.testing.assert_allclose(x.grad.numpy(), 10 * (x.detach().numpy() + 3.5))

    def train_grad(x):
        y = (x + 3) * (x + 4) * 0.5
        grads = dynjit.autograd.grad(y.sum(), x)
        assert len(grads) == 1
        assert np.allclose(grads[0].numpy(), x.detach().numpy() + 3.5)

    _run_in_threads(train_grad, (x,))


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_python_thread_in_middle
def test_threads_backward_through_a_shared_graph():
    outcomes = {"ok": 0, "freed": 0}

    def without_retain(y):
        z = y + y ** 2
        try:
            z.sum().backward()
            outcomes["ok"] += 1
        except RuntimeError as error:
            assert "Specify retain_graph=True" in str(error)
            outcomes["freed"] += 1

    x = dynjit.ones(5, 5, requires_grad=True)
    y = x + x ** 2
    _run_in_threads(without_retain, (y,), num_threads=5)
    assert outcomes["ok"] >= 1 and outcomes["ok"] + outcomes["freed"] == 5

    def with_retain(y):
        (y + y ** 2).sum().backward(retain_graph=True)

    x = dynjit.ones(5, 5, requires_grad=True)
    y = x + x ** 2
    _run_in_threads(with_retain, (y,), num_threads=5)
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 5 * (4 * xv ** 3 + 6 * xv ** 2 + 4 * xv + 1))


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_preserve_backtrace
def test_error_in_backward_keeps_the_users_frame_in_the_traceback():
    class Fails(Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, *grad):
            raise ValueError("something")

    t = dynjit.rand(10, requires_grad=True)
    with pytest.raises(ValueError, match="something") as info:
        Fails.apply(t).sum().backward()
    assert 'raise ValueError("something")' in "".join(traceback.format_tb(info.value.__traceback__))


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_set_multithreading_enabled_as_context_manager_and_function
def test_set_multithreading_enabled_as_context_manager_and_function():
    enabled = dynjit.autograd.is_multithreading_enabled
    set_enabled = dynjit.autograd.set_multithreading_enabled
    with set_enabled(False):
        assert not enabled()
    assert enabled()
    with set_enabled(True):
        assert enabled()
    assert enabled()
    with set_enabled(False):
        set_enabled(True)
        assert enabled()
    assert enabled()
    set_enabled(False)
    assert not enabled()
    set_enabled(True)
    assert enabled()


# -- gradcheck -----------------------------------------------------------------

from dynjit.autograd import gradcheck, gradgradcheck  # noqa: E402
from dynjit.autograd.gradcheck import (GradcheckError, get_analytical_jacobian,  # noqa: E402
                                       get_numerical_jacobian)


def _shifted_grad(x):
    """x, with a hook that adds 0.01 to its gradient (a wrong analytical gradient)."""
    y = x.clone()
    y.register_hook(lambda g: g + 1e-2)
    return y


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_single_input
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_takes_a_single_tensor(fast_mode):
    assert gradcheck(lambda t: t.mul(5), dynjit.rand(10, dtype=dynjit.float64, requires_grad=True),
                     fast_mode=fast_mode)
    assert gradgradcheck(lambda t: t.mul(5), dynjit.rand(10, dtype=dynjit.float64, requires_grad=True),
                         fast_mode=fast_mode)


class _NonDet(Function):
    @staticmethod
    def forward(ctx, x, jitter=0.0):
        ctx._jitter = jitter
        return x

    @staticmethod
    def backward(ctx, grad_out):
        return _NonDet.apply(grad_out, ctx._jitter) * (1 + dynjit.rand_like(grad_out) * ctx._jitter), None


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_nondeterministic
def test_gradcheck_detects_a_backward_that_is_not_reentrant():
    inp = dynjit.randn(5, 5, dtype=dynjit.double, requires_grad=True)
    assert gradcheck(lambda x: _NonDet.apply(x, 0.0), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        gradcheck(lambda x: _NonDet.apply(x, 1e-6), inp)
    with pytest.raises(RuntimeError, match="Backward is not reentrant"):
        gradgradcheck(lambda x: _NonDet.apply(x, 1e-12), inp)
    assert gradcheck(lambda x: _NonDet.apply(x, 0.0), inp, nondet_tol=1e-5)
    assert gradcheck(lambda x: _NonDet.apply(x, 1e-6), inp, nondet_tol=1e-5)
    assert gradgradcheck(lambda x: _NonDet.apply(x, 1e-12), inp, nondet_tol=1e-5)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_validates_inputs
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_validates_its_inputs(fast_mode):
    # a sparse input: its to_dense gradient is masked to the stored entries, which only a
    # masked check accepts; to_dense(masked_grad=False) passes the unmasked check
    x = dynjit.rand(10, requires_grad=True).to_sparse()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)        # float32 input: the seed's atol covers it
        assert gradcheck(lambda x: x.to_dense(), (x,), check_batched_grad=False, atol=1e-1,
                         fast_mode=fast_mode, masked=True)
        assert not gradcheck(lambda x: x.to_dense(), (x,), masked=False, check_batched_grad=False,
                             raise_exception=False, fast_mode=fast_mode)
        assert gradcheck(lambda x: x.to_dense(masked_grad=False), (x,), masked=False, atol=1e-1,
                         check_batched_grad=False, raise_exception=False, fast_mode=fast_mode)

    x = dynjit.rand(10)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)
    x = dynjit.ones(1, dtype=dynjit.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        assert gradcheck(lambda x: x, (x,), atol=1e-1, fast_mode=fast_mode)
    x = dynjit.ones(1, dtype=dynjit.float64, requires_grad=True).expand((2, 2))
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_check_no_differentiable_outputs
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_outputs_without_grad_must_not_depend_on_the_inputs(fast_mode):
    x = dynjit.ones((1,), requires_grad=True)
    with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
        gradcheck(lambda x: dynjit.tensor([x]), x, fast_mode=fast_mode)
    assert not gradcheck(lambda x: dynjit.tensor([x]), x, raise_exception=False, fast_mode=fast_mode)
    assert gradcheck(lambda x: (), (x,), fast_mode=fast_mode)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_jacobian_mismatch
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_reports_a_jacobian_mismatch(fast_mode):
    x = dynjit.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_shifted_grad, (x,), fast_mode=fast_mode)
    assert not gradcheck(_shifted_grad, (x,), raise_exception=False, fast_mode=fast_mode)

    # C -> C: the imaginary part of the output is checked separately (the seed checks these
    # without fast mode)
    x_c = dynjit.ones(2, 2, requires_grad=True, dtype=dynjit.complex128)
    with pytest.raises(RuntimeError, match="While considering the imaginary part of complex outputs only"):
        gradcheck(_shifted_grad, (x_c,), fast_mode=False)
    assert not gradcheck(_shifted_grad, (x_c,), raise_exception=False, fast_mode=False)

    def real_to_complex(x):     # R -> C
        y = dynjit.complex(x, x)
        y.register_hook(lambda g: g + 1e-2)
        return y

    with pytest.raises(RuntimeError, match="While considering the imaginary part of complex outputs only"):
        gradcheck(real_to_complex, (x,), fast_mode=False)
    assert not gradcheck(real_to_complex, (x,), raise_exception=False, fast_mode=False)

    def complex_to_real(x):     # C -> R
        y = dynjit.real(x)
        y.register_hook(lambda g: g + 1e-2)
        return y

    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(complex_to_real, (x_c,), fast_mode=False)
    assert not gradcheck(complex_to_real, (x_c,), raise_exception=False, fast_mode=False)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_output_shape_or_dtype_depend_on_values
def test_gradcheck_outputs_must_keep_shape_and_dtype_under_perturbation():
    a = dynjit.ones(1, dtype=dynjit.double, requires_grad=True)

    def shape_changes(x):
        return dynjit.cat([x, x]) if dynjit.all(x >= 1) else x

    def dtype_changes(x):
        return x.to(dynjit.float32) if dynjit.all(x >= 1) else x

    with pytest.raises(AssertionError, match="return outputs with the same shape when inputs are perturbed"):
        gradcheck(shape_changes, (a,))
    with pytest.raises(AssertionError, match="return outputs with the same dtype when inputs are perturbed"):
        gradcheck(dtype_changes, (a,))


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_get_numerical_jacobian
def test_deprecated_get_numerical_jacobian():
    def fn(inputs):
        x, y = inputs
        return 2 * x + y, x + 2 * y

    a = dynjit.rand(2, 2, requires_grad=True, dtype=dynjit.float64)
    b = dynjit.rand(2, 2, requires_grad=True, dtype=dynjit.float64)
    with pytest.warns(FutureWarning, match="`get_numerical_jacobian` was part of PyTorch's private API"):
        jacobian = get_numerical_jacobian(fn, (a, b), target=a, eps=1e-6)
    np.testing.assert_allclose(jacobian[0].numpy(), 2 * np.eye(4), atol=1e-6)
    with pytest.warns(FutureWarning, match="`get_numerical_jacobian` was part of PyTorch's private API"):
        jacobian = get_numerical_jacobian(fn, (a, b), eps=1e-6)
    np.testing.assert_allclose(jacobian[0].numpy(), 2 * np.eye(4), atol=1e-6)
    np.testing.assert_allclose(jacobian[1].numpy(), np.eye(4), atol=1e-6)
    with pytest.warns(FutureWarning):
        with pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
            get_numerical_jacobian(fn, (a, b), eps=1e-6, grad_out=2.0)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_get_analytical_jacobian
def test_deprecated_get_analytical_jacobian():
    a = dynjit.rand(2, 2, requires_grad=True, dtype=dynjit.float64)
    b = dynjit.rand(2, 2, requires_grad=True, dtype=dynjit.float64)
    out = 2 * a + b
    with pytest.warns(FutureWarning, match="`get_analytical_jacobian` was part of PyTorch's private API"):
        jacobians, reentrant, sizes_ok, types_ok = get_analytical_jacobian((a, b), out)
    np.testing.assert_allclose(jacobians[0].numpy(), 2 * np.eye(4))
    np.testing.assert_allclose(jacobians[1].numpy(), np.eye(4))
    assert reentrant
    with pytest.warns(FutureWarning):
        _, reentrant, _, _ = get_analytical_jacobian((a,), _NonDet.apply(a, 1e-6))
    assert not reentrant
    with pytest.warns(FutureWarning):
        with pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
            get_analytical_jacobian((a,), _NonDet.apply(a, 1e-6), grad_out=2.0)


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_gradcheck_custom_error
@pytest.mark.parametrize("fast_mode", [True, False])
def test_gradcheck_failures_are_gradcheck_errors_and_other_errors_pass_through(fast_mode):
    x = dynjit.ones(2, 2, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(_shifted_grad, (x,), fast_mode=fast_mode)
    assert issubclass(GradcheckError, RuntimeError)
    assert not gradcheck(_shifted_grad, (x,), raise_exception=False, fast_mode=fast_mode)

    def fails(x):
        raise RuntimeError("Not a GradcheckError!")

    with pytest.raises(RuntimeError, match="Not a GradcheckError!"):
        gradcheck(fails, (x.double(),), fast_mode=fast_mode, raise_exception=False)


# -- multi-grad hooks, node order, grad assignment -------------------------------

from dynjit.autograd.graph import register_multi_grad_hook  # noqa: E402


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_multi_grad_all_hooks
def test_multi_grad_hook_all_mode():
    """(The seed's t4 goes through a C++ custom op backed by an autograd Function; here a
    dynjit custom op with a registered autograd formula stands for it.)"""
    from dynjit.autograd._functions import UndefinedGrad
    from dynjit.library import _scoped_library, custom_op, register_autograd

    t1, t2, t3, t4 = (dynjit.rand(2, requires_grad=True) for _ in range(4))
    t1 = t1.mul(2)

    class Clone(Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    t2 = Clone.apply(t2)
    t3 = UndefinedGrad()(t3)
    with _scoped_library("h42_multi_grad", "FRAGMENT"):
        @custom_op("h42_multi_grad::clone_backed_by_autograd", mutates_args=())
        def clone_op(x: dynjit.Tensor) -> dynjit.Tensor:
            return x.clone()

        register_autograd("h42_multi_grad::clone_backed_by_autograd", lambda ctx, g: g)
        t4 = clone_op(t4)
    calls = []

    def hook(grads):
        calls.append([g is not None for g in grads])

    handle = register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = t2 * t3
    out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert calls == [[False, True, True, False]]
    out.sum().backward(inputs=(t1, t4), retain_graph=True)     # none of them computed
    assert len(calls) == 1
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert calls[-1] == [False, False, True, False] and len(calls) == 2

    class Fails(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("error message")

    out = Fails.apply(t2) * t3
    with pytest.raises(RuntimeError, match="error message"):
        out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert len(calls) == 2          # t2's gradient never came
    handle.remove()
    out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert len(calls) == 2


def test_multi_grad_hook_any_mode_fires_once_per_pass():
    a = dynjit.rand(2, requires_grad=True)
    b = dynjit.rand(2, requires_grad=True)
    x, y = a * 2, b * 3
    seen = []
    register_multi_grad_hook((x, y), lambda g: seen.append(g.tolist()), mode="any")
    (x.sum() + y.sum()).backward()
    assert len(seen) == 1 and seen[0] == [1.0, 1.0]


# ports: 002_7f98adb56adba91b.txt TestProfiler.test_multi_grad_hooks_invalid_mode
def test_multi_grad_hook_mode_must_be_all_or_any():
    t1, t2 = dynjit.rand(2, requires_grad=True), dynjit.rand(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got foo"):
        register_multi_grad_hook((t1, t2), lambda _: None, mode="foo")


# ports: 002_7f98adb56adba91b.txt TestAutogradMultipleDispatch.test_set_sequence_nr
def test_sequence_numbers_decide_which_ready_node_runs_first():
    x, y, z = (dynjit.randn(10, requires_grad=True) for _ in range(3))
    a, b = x + y, y + z
    c = a + b
    assert a.grad_fn is not None and b.grad_fn is not None and c.grad_fn is not None
    a.grad_fn._set_sequence_nr(100)
    b.grad_fn._set_sequence_nr(99)
    c.grad_fn._set_sequence_nr(98)
    assert (a.grad_fn._sequence_nr(), b.grad_fn._sequence_nr(), c.grad_fn._sequence_nr()) == (100, 99, 98)
    order = []
    for t, name in ((a, "a"), (b, "b"), (c, "c")):
        t.register_hook(lambda g, name=name: order.append(name))
    c.sum().backward()
    assert order == ["c", "a", "b"]
    assert x.grad.tolist() == [1.0] * 10
    assert y.grad.tolist() == [2.0] * 10      # y feeds both a and b
    assert z.grad.tolist() == [1.0] * 10


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_grad_assignment
def test_grad_assignment_is_checked():
    x = dynjit.randn(5, 5)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = 0
    with pytest.raises(RuntimeError):
        x.grad = dynjit.randn(2, 2)
    with pytest.raises(RuntimeError):
        x.grad = dynjit.randn(5, 5).long()
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    assert x.grad is None


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_set_requires_grad_only_for_floats
@pytest.mark.parametrize("dtype", [dynjit.float32, dynjit.float64, dynjit.int64, dynjit.bool])
def test_only_floating_point_tensors_can_require_grad(dtype):
    def by_method():
        dynjit.ones(1, dtype=dtype).requires_grad_()

    def by_attribute():
        dynjit.ones(1, dtype=dtype).requires_grad = True

    def by_factory():
        dynjit.ones(1, dtype=dtype, requires_grad=True)

    a = dynjit.ones(1, dtype=dtype)
    a.requires_grad = False           # always allowed
    a.requires_grad_(False)
    for make in (by_method, by_attribute, by_factory):
        if dtype.is_floating_point:
            make()
        else:
            with pytest.raises(RuntimeError, match="floating point"):
                make()


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_copy_
@pytest.mark.parametrize("dtype", [dynjit.float16, dynjit.float32, dynjit.float64])
def test_copying_a_grad_tensor_in_makes_the_target_require_grad(dtype):
    x = dynjit.randn(10, requires_grad=True)
    y = dynjit.empty(10, dtype=dtype)
    y.copy_(x)
    assert y.requires_grad
    assert x.to(dtype).requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [1.0] * 10


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_simple_reentrant_cross_device
def test_reentrant_backward_inside_a_custom_function():
    """(Single device: dynjit runs on the CPU only.)"""
    inner = []

    class Reentrant(Function):
        @staticmethod
        def forward(ctx, x):
            return x * (x + 2)

        @staticmethod
        def backward(ctx, grad_output):
            with dynjit.enable_grad():
                new_param = dynjit.randn(2, 2, requires_grad=True)
                (new_param ** 2).sum().backward()
                inner.append(np.allclose(new_param.grad.numpy(), 2 * new_param.detach().numpy()))
            return grad_output

    for _ in range(3):
        x = dynjit.randn(2, 2, requires_grad=True)
        Reentrant.apply(x).sum().backward()
        assert x.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert inner == [True] * 3


# ports: 002_7f98adb56adba91b.txt TestAutogradDeviceType.test_warning_in_backward
def test_a_warning_raised_in_backward_reaches_the_caller():
    class Warns(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            warnings.warn("Warn from backward", UserWarning)
            return g

    a = dynjit.zeros((), requires_grad=True)
    with pytest.warns(UserWarning, match="Warn from backward"):
        Warns.apply(a).backward()


# ports: 002_7f98adb56adba91b.txt TestAutogradForwardMode.test_detach_view_tracking
def test_detach_does_not_keep_its_source_alive():
    foo = dynjit.rand(2)
    ref = weakref.ref(foo)
    out = foo.detach()
    del foo
    assert ref() is None
    assert out.shape == (2,)


def _grads_from_threads(mode):
    """Five threads run backward over one graph with a multi-grad hook on four tensors;
    then again with a backward that fails in the first thread only."""
    t1, t2, t3, t4 = (dynjit.rand(2, requires_grad=True) for _ in range(4))
    lock = threading.Lock()
    seen = []

    def hook(grads):
        with lock:
            seen.append([g is not None for g in grads] if mode == "all" else "any")

    register_multi_grad_hook((t1, t2, t3, t4), hook, mode=mode)

    def backward(out):
        out.backward(inputs=(t2, t3), retain_graph=True)

    _run_in_threads(backward, ((t2 * t3).sum(),), num_threads=5)
    first = list(seen)
    seen.clear()
    calls, errors = [0], [0]

    class FailsOnce(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            with lock:
                calls[0] += 1
                if calls[0] == 1:
                    raise RuntimeError("error message")
            return g

    def backward_counting_errors(out):
        try:
            out.backward(inputs=(t2, t3), retain_graph=True)
        except RuntimeError:
            with lock:
                errors[0] += 1

    _run_in_threads(backward_counting_errors, ((FailsOnce.apply(t2) * t3).sum(),), num_threads=5)
    return first, list(seen), errors[0]


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_multi_grad_all_hooks
def test_multi_grad_hook_all_mode_with_threads():
    first, second, errors = _grads_from_threads("all")
    assert first == [[False, True, True, False]] * 5
    assert errors == 1
    assert second == [[False, True, True, False]] * 4      # not for the pass that failed


# ports: 002_7f98adb56adba91b.txt TestMultithreadAutograd.test_multi_grad_any_hooks
def test_multi_grad_hook_any_mode_with_threads():
    first, second, errors = _grads_from_threads("any")
    assert first == ["any"] * 5
    assert errors == 1
    # t3's gradient is ready (and fires the hook) before the failing node runs
    assert second == ["any"] * 5


def test_numpy_of_a_tensor_that_requires_grad_works_under_no_grad_only():
    x = dynjit.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with dynjit.no_grad():
        assert x.numpy().tolist() == [1.0, 1.0]

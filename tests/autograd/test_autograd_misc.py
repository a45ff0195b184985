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

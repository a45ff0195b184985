"""Grad mode: no_grad / enable_grad / set_grad_enabled as context managers and
decorators (functions, methods, classes, generators and coroutines), and
custom Functions under no_grad."""
import warnings

import pytest

import dynjit
from dynjit.autograd import Function


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_grad_mode_class_decoration
def test_decorating_a_class_is_deprecated_and_decorates_init():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @dynjit.no_grad()
        class Foo:
            def __init__(self):
                assert not dynjit.is_grad_enabled()

            def foo(self):
                assert dynjit.is_grad_enabled()

        Foo().foo()

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @dynjit.no_grad()
        def foo():
            assert not dynjit.is_grad_enabled()

        foo()

        class Foo2:
            @dynjit.no_grad()
            def __init__(self):
                assert not dynjit.is_grad_enabled()

            @dynjit.no_grad()
            def foo(self):
                assert not dynjit.is_grad_enabled()

        Foo2().foo()
    assert len(w) == 0


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_grad
def test_no_grad_as_context_and_decorator_with_or_without_parentheses():
    x = dynjit.ones(5, 5, requires_grad=True)
    y = dynjit.ones(5, 5) * 4
    with dynjit.no_grad():
        w = x + y

    def adder(x, y):
        return x + y

    for add in (dynjit.no_grad()(adder), dynjit.no_grad(adder)):
        z = add(x, y)
        assert not w.requires_grad
        with pytest.raises(RuntimeError):
            w.backward(dynjit.ones(5, 5))
        assert w.grad_fn is None
        assert not z.requires_grad
        with pytest.raises(RuntimeError):
            z.backward(dynjit.ones(5, 5))
        assert z.grad_fn is None

    with dynjit.no_grad():
        assert not dynjit.is_grad_enabled()
        add(x, y)
        assert not dynjit.is_grad_enabled()
    assert dynjit.is_grad_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_enable_grad_decorator_no_paren
def test_enable_grad_decorator_without_parentheses():
    x = dynjit.ones(1, requires_grad=True)

    @dynjit.enable_grad
    def doubler(x):
        return x * 2

    with dynjit.no_grad():
        z = doubler(x)
    assert z.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_generator_functions
def test_decorated_generators_switch_mode_only_while_running():
    @dynjit.no_grad()
    def gen_no_grad():
        for i in range(10):
            assert not dynjit.is_grad_enabled()
            yield i

    with dynjit.enable_grad():
        for _ in gen_no_grad():
            assert dynjit.is_grad_enabled()

    @dynjit.enable_grad()
    def gen_enable_grad():
        for i in range(10):
            assert dynjit.is_grad_enabled()
            yield i

    with dynjit.no_grad():
        for _ in gen_enable_grad():
            assert not dynjit.is_grad_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_generator_functions_recursive
def test_nested_decorators_and_contexts_restore_the_callers_mode():
    @dynjit.enable_grad()
    def enable_rec(depth):
        assert dynjit.is_grad_enabled()
        if depth > 0:
            no_grad_rec(depth - 1)
            assert dynjit.is_grad_enabled()

    @dynjit.no_grad()
    def no_grad_rec(depth):
        assert not dynjit.is_grad_enabled()
        if depth > 0:
            enable_rec(depth - 1)
            assert not dynjit.is_grad_enabled()

    def enable_ctx_rec(depth):
        with dynjit.enable_grad():
            assert dynjit.is_grad_enabled()
            if depth > 0:
                no_grad_ctx_rec(depth - 1)
                assert dynjit.is_grad_enabled()

    def no_grad_ctx_rec(depth):
        with dynjit.no_grad():
            assert not dynjit.is_grad_enabled()
            if depth > 0:
                enable_ctx_rec(depth - 1)
                assert not dynjit.is_grad_enabled()

    for outer, mode in ((dynjit.enable_grad, True), (dynjit.no_grad, False)):
        with outer():
            assert dynjit.is_grad_enabled() is mode
            enable_rec(10)
            assert dynjit.is_grad_enabled() is mode
            enable_ctx_rec(10)
            assert dynjit.is_grad_enabled() is mode


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_coroutines
def test_decorated_coroutines_receive_sent_values_in_their_mode():
    def make(deco, inner):
        @deco()
        def coro(n=10):
            assert dynjit.is_grad_enabled() is inner
            for i in range(n):
                assert dynjit.is_grad_enabled() is inner
                r = yield i
                assert dynjit.is_grad_enabled() is inner
                assert r == i
            assert dynjit.is_grad_enabled() is inner
        return coro

    for outer, outer_mode, deco, inner in ((dynjit.enable_grad, True, dynjit.no_grad, False),
                                           (dynjit.no_grad, False, dynjit.enable_grad, True)):
        with outer():
            coro, r = make(deco, inner)(), None
            with pytest.raises(StopIteration):
                while True:
                    assert dynjit.is_grad_enabled() is outer_mode
                    r = coro.send(r)
                    assert dynjit.is_grad_enabled() is outer_mode


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_coroutines_benign_exceptions
def test_exceptions_thrown_into_decorated_coroutines_reach_them_in_their_mode():
    class Recoverable(Exception):
        pass

    def make(deco, inner):
        @deco()
        def coro(n=10):
            raised = False
            for i in range(n):
                try:
                    assert dynjit.is_grad_enabled() is inner
                    yield (-i if raised else i)
                except Recoverable:
                    assert dynjit.is_grad_enabled() is inner
                    raised = True
        return coro

    for outer, deco, inner in ((dynjit.enable_grad, dynjit.no_grad, False),
                               (dynjit.no_grad, dynjit.enable_grad, True)):
        with outer():
            coro = make(deco, inner)()
            assert next(coro) == 0
            thrown = 0
            with pytest.raises(StopIteration):
                while True:
                    r = coro.throw(Recoverable)
                    assert r < 0
                    thrown += 1
            assert thrown == 9


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_coroutines_critical_exceptions
def test_exceptions_raised_by_decorated_coroutines_reach_the_caller():
    class Unrecoverable(Exception):
        pass

    class Secondary(Exception):
        pass

    def make(deco, inner):
        @deco()
        def coro(n=10):
            for i in range(n):
                try:
                    assert dynjit.is_grad_enabled() is inner
                    yield i
                except Unrecoverable:
                    assert dynjit.is_grad_enabled() is inner
                    raise Secondary from None
        return coro

    for outer, outer_mode, deco, inner in ((dynjit.enable_grad, True, dynjit.no_grad, False),
                                           (dynjit.no_grad, False, dynjit.enable_grad, True)):
        with outer():
            coro = make(deco, inner)()
            assert next(coro) == 0
            with pytest.raises(Secondary):
                coro.throw(Unrecoverable)
            assert dynjit.is_grad_enabled() is outer_mode


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_coroutines_exit
def test_closing_a_decorated_coroutine_runs_its_cleanup_in_its_mode():
    def make(deco, inner, state):
        @deco()
        def coro():
            for i in range(10):
                try:
                    assert dynjit.is_grad_enabled() is inner
                    yield i
                except GeneratorExit:
                    assert dynjit.is_grad_enabled() is inner
                    state.add("GeneratorExit")
                    raise
        return coro

    for outer, deco, inner in ((dynjit.enable_grad, dynjit.no_grad, False),
                               (dynjit.no_grad, dynjit.enable_grad, True)):
        state = set()
        with outer():
            coro = make(deco, inner, state)()
            for _ in range(5):
                next(coro)
            coro.close()
        assert "GeneratorExit" in state


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_grad_python_function
def test_custom_function_output_does_not_require_grad_under_no_grad():
    x = dynjit.ones(5, 5, requires_grad=True)

    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, dy):
            return dy

    with dynjit.no_grad():
        y = AddOne.apply(x)
    assert not y.requires_grad


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_no_grad_input
def test_custom_function_returning_its_input_under_no_grad_has_no_history():
    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = dynjit.randn(5, requires_grad=True)
    with dynjit.no_grad():
        y = Id.apply(x)
    assert x.requires_grad
    assert y.grad_fn is None


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_enabled
def test_set_grad_enabled_as_context_and_as_a_plain_call():
    x = dynjit.tensor([1.0], requires_grad=True)
    with dynjit.set_grad_enabled(False):
        y = x * 2
    assert not y.requires_grad
    with dynjit.set_grad_enabled(True):
        y = x * 2
    assert y.requires_grad
    with dynjit.set_grad_enabled(False):
        dynjit.set_grad_enabled(True)      # a plain call takes effect at once
        y = x * 2
    assert y.requires_grad
    assert dynjit.is_grad_enabled()


# ports: 002_7f98adb56adba91b.txt TestAutograd.test_set_grad_enabled_wraps
@pytest.mark.parametrize("as_decorator", [True, False])
def test_set_grad_enabled_as_a_decorator_leaves_the_global_mode_alone(as_decorator):
    with dynjit.enable_grad():
        assert dynjit.is_grad_enabled()
        if as_decorator:
            @dynjit.set_grad_enabled(False)
            def inner(x):
                return x.sin()
        else:
            def inner(x):
                return x.sin()

            obj = dynjit.set_grad_enabled(False)
            assert not dynjit.is_grad_enabled()
            inner = obj(inner)          # wrapping restores the mode the call had switched off
            assert dynjit.is_grad_enabled()
        assert dynjit.is_grad_enabled()
        x = dynjit.zeros(1, requires_grad=True)
        assert not inner(x).requires_grad
        assert dynjit.is_grad_enabled()


def test_set_grad_enabled_rejects_non_bools():
    with pytest.raises(TypeError, match="bool"):
        dynjit.set_grad_enabled(1)

"""The dispatch-mode stack is per thread: a mode one thread enters (make_fx, vmap, a
forward-AD level, a profiler) intercepts that thread's ops only."""
import threading

import dynjit
from dynjit.ops.dispatch import DispatchMode, current_modes


class Recorder(DispatchMode):
    def __init__(self):
        self.ops = []

    def __dispatch__(self, op, args, kwargs):
        self.ops.append(op.name)
        return op(*args, **kwargs)


def test_a_mode_entered_in_one_thread_does_not_see_another_threads_ops():
    entered, done = threading.Event(), threading.Event()
    recorder = Recorder()
    seen_in_thread = []

    def traced():
        with recorder:
            dynjit.ones(2).sin()
            entered.set()
            done.wait(10)              # the mode stays entered while the other thread works
            dynjit.ones(2).cos()

    t = threading.Thread(target=traced)
    t.start()
    assert entered.wait(10)
    seen_in_thread.append(current_modes())
    out = (dynjit.ones(3) * 2 + 1).sum()           # this thread: no mode
    done.set()
    t.join()
    assert seen_in_thread == [()]
    assert float(out) == 9.0
    assert "sin" in recorder.ops and "cos" in recorder.ops
    assert not {"mul", "add", "sum"} & set(recorder.ops)


def test_compiling_with_aot_in_one_thread_while_another_runs_eager_ops():
    stop, bad = threading.Event(), []

    def eager_loop():
        a = dynjit.ones(3, 3)
        while not stop.is_set():
            try:
                r = (a * 2 + 1).sum()
                if float(r) != 27.0:
                    bad.append(float(r))
            except Exception as e:              # a mode popped by the other thread
                bad.append(repr(e))

    t = threading.Thread(target=eager_loop)
    t.start()
    try:
        for i in range(6):
            ns = {}
            exec(f"def f(x):\n    return (x * {i} + 1).sin().sum()\n", ns)
            x = dynjit.randn(4, requires_grad=True)
            dynjit.compile(ns["f"], backend="aot_eager")(x).backward()
    finally:
        stop.set()
        t.join()
    assert bad == []

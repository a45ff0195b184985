"""Graph breaks: the graph so far is compiled, the unsupported instruction
runs natively, and the rest of the frame resumes in a function that is
traced in turn. Compiled results and side effects equal eager."""
import dynjit
from dynjit.testing import CompileCounter, same


def compiled_with_counter(fn):
    counter = CompileCounter()
    return dynjit.compile(fn, backend=counter), counter


def test_print_between_two_ops_gives_two_graphs(capsys):
    def fn(x):
        y = x + 1
        print("between")
        return y * 2

    compiled, counter = compiled_with_counter(fn)
    x = dynjit.randn(3)
    assert same(compiled(x), fn(x))
    assert capsys.readouterr().out == "between\nbetween\n"
    assert (counter.frame_count, counter.op_count) == (2, 2)
    assert same(compiled(x), fn(x))            # cached: no new graphs
    assert counter.frame_count == 2
    assert dynjit.utils.counters["graph_break"]["builtin: print"] >= 1


def test_data_dependent_branch_resumes_in_the_branch_taken():
    def fn(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    compiled, counter = compiled_with_counter(fn)
    pos, neg = dynjit.ones(3), -dynjit.ones(3)
    assert same(compiled(pos), fn(pos))
    assert counter.frame_count == 2            # before the branch, and the branch taken
    assert same(compiled(neg), fn(neg))
    assert counter.frame_count == 3            # the other branch's resume graph
    assert same(compiled(pos), fn(pos)) and same(compiled(neg), fn(neg))
    assert counter.frame_count == 3


def _helper(y):
    z = y.sin()
    print("in helper")
    return z.cos()


def test_break_inside_an_inlined_call_breaks_at_the_call_site(capsys):
    def fn(x):
        a = x + 1
        b = _helper(a)
        return b * 3

    compiled, counter = compiled_with_counter(fn)
    x = dynjit.randn(3)
    assert same(compiled(x), fn(x))
    # the caller's graph before, the helper's two graphs, the caller's resume graph
    assert counter.frame_count == 4
    assert capsys.readouterr().out.count("in helper") == 2


def test_break_inside_no_grad_keeps_the_grad_mode_right():
    def fn(x):
        with dynjit.no_grad():
            y = x * 2
            print("inside no_grad")
            z = y * x
        return z, x * 3

    compiled, counter = compiled_with_counter(fn)
    x = dynjit.randn(3).requires_grad_()
    z, w = compiled(x)
    assert not z.requires_grad and w.requires_grad
    assert dynjit.is_grad_enabled()
    ez, ew = fn(x)
    assert same(z, ez) and same(w, ew)
    assert counter.frame_count == 2


def test_break_inside_a_loop_keeps_iterating(capsys):
    def fn(x, n):
        for i in range(n):
            x = x + i
            print(i)
        return x

    compiled, counter = compiled_with_counter(fn)
    x = dynjit.randn(2)
    assert same(compiled(x, 3), fn(x, 3))
    assert capsys.readouterr().out == "0\n1\n2\n" * 2


def test_side_effects_before_a_break_happen_once():
    log = []

    def fn(x):
        log.append(1)
        y = x + 1
        print("break")
        log.append(2)
        return y

    compiled, _ = compiled_with_counter(fn)
    compiled(dynjit.ones(2))
    assert log == [1, 2]


def test_graph_break_function_call():
    def fn(x):
        x = x * 2
        dynjit.graph_break()
        return x + 1

    compiled, counter = compiled_with_counter(fn)
    assert same(compiled(dynjit.ones(2)), fn(dynjit.ones(2)))
    assert counter.frame_count == 2


def _many_locals(x, log):
    a0 = x + 0; a1 = x + 1; a2 = x + 2; a3 = x + 3; a4 = x + 4; a5 = x + 5   # noqa: E702
    a6 = x + 6; a7 = x + 7; a8 = x + 8; a9 = x + 9; a10 = x + 10; a11 = x + 11  # noqa: E702
    a12 = x + 12; a13 = x + 13
    log.append(a0.sum().item())
    dynjit.graph_break()
    s = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12
    dynjit.graph_break()
    return x * a13 + s


def test_resume_functions_with_many_locals_read_the_right_ones():
    # Resume functions take the stack as extra leading arguments, so a local's
    # index grows past what 3.13's two-local instructions can encode.
    cnt = CompileCounter()
    compiled = dynjit.compile(_many_locals, backend=cnt)
    x = dynjit.randn(3)
    log_c, log_e = [], []
    assert same(compiled(x, log_c), _many_locals(x, log_e))
    assert log_c == log_e
    assert cnt.frame_count == 3


def test_break_inside_the_arguments_of_a_pending_call(capsys):
    # print(...) and log.append(...) are already on the stack when .item()
    # breaks the graph: the resume function rebuilds them around the result.
    def fn(x, log):
        y = x.sin()
        print("total", round(y.sum().item(), 3))
        log.append(y.max().item())
        return y * 2

    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    x = dynjit.randn(5)
    log_c, log_e = [], []
    got = compiled(x, log_c)
    printed_compiled = capsys.readouterr().out
    want = fn(x, log_e)
    assert same(got, want)
    assert log_c == log_e
    assert printed_compiled == capsys.readouterr().out
    assert cnt.frame_count == 3      # before .item(), between the two reads, after
    assert cnt.op_count == 4         # sin, sum | max | mul


def test_resume_functions_take_only_the_locals_still_read():
    def fn(x, n, scratch):
        y = x * n + scratch[0]
        dynjit.graph_break()
        return y + 1           # n and scratch are dead here

    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    x = dynjit.randn(3)
    for n in (2, 3):
        scratch = [dynjit.ones(3) * n]
        assert same(compiled(x, n, scratch), fn(x, n, scratch))
    # the part before the break specializes on n twice; the resume function,
    # which never sees n or scratch, compiles once
    assert cnt.frame_count == 3


def test_a_growing_log_list_and_item_values_do_not_recompile():
    # The list is only appended to and the float from .item() is only passed
    # along, so neither its length nor the float's value is guarded.
    def step(x, history):
        loss = (x * x).mean()
        history.append(loss.item())
        return loss * 2

    cnt = CompileCounter()
    compiled = dynjit.compile(step, backend=cnt)
    hist_c, hist_e = [], []
    for i in range(12):
        x = dynjit.randn(4)
        assert same(compiled(x, hist_c), step(x, hist_e))
    assert hist_c == hist_e
    assert cnt.frame_count == 2      # the graph before .item() and its resume, once each


def test_reading_a_list_guards_its_contents():
    def fn(x, items):
        items.append(x)
        return x + len(items)

    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    got_list, want_list = [], []
    for _ in range(3):
        x = dynjit.randn(2)
        assert same(compiled(x, got_list), fn(x, want_list))
    assert len(got_list) == len(want_list) == 3
    assert all(same(a, b) for a, b in zip(got_list, want_list))
    assert cnt.frame_count == 3      # len() read the length: one compile per length


def _triple(grad):
    return grad * 3


def test_tensor_hooks_run_by_a_backward_at_a_graph_break_are_compiled():
    def step(x):
        loss = (x * x).sum()
        loss.backward()          # not traceable: runs natively, and so does the engine's hook call
        return loss.detach() + 1

    cnt = CompileCounter()
    compiled = dynjit.compile(step, backend=cnt)
    x_c = dynjit.randn(3, requires_grad=True)
    x_e = x_c.detach().clone().requires_grad_(True)
    x_c.register_hook(_triple)
    x_e.register_hook(_triple)
    assert same(compiled(x_c), step(x_e))
    assert same(x_c.grad, x_e.grad) and same(x_c.grad, x_e.detach() * 6)
    # the graph before backward(), the hook (its own frame), the resume after backward()
    assert cnt.frame_count == 3


def test_debug_view_shows_break_and_resume_functions(capsys):
    def f(x):
        y = x.sin()
        print("between")
        return y.cos()

    compiled = dynjit.compile(f)
    compiled(dynjit.randn(2))
    view = compiled.debug_view()
    assert "--- graph break: builtin: print ---" in view
    # generated code carries the user's function name (tracebacks read as if it ran plain);
    # the debug view says what each generated code object is
    assert "--- break function of test_debug_view_shows_break_and_resume_functions.<locals>.f at " \
           "instruction" in view and "CALL" in view
    assert "--- resume function of test_debug_view_shows_break_and_resume_functions.<locals>.f at " \
           "instruction" in view
    assert "__break_at" not in view and "__resume_at" not in view
    assert view.count("--- guard ---") == 2          # f and its resume function
    assert "L_x_.sin()" in view and "L_y_.cos()" in view


def test_data_dependent_while_loop():
    # The loop condition reads tensor data. A graph break inside a loop would resume the rest of
    # the frame, loop included, from inside a call, nesting one call deeper per iteration until
    # a RecursionError; so the loop runs plain (as Dynamo skips such frames), for any number of
    # iterations, and the reason is counted.
    def fn(x):
        steps = 0
        while x.sum() < 100:
            x = x * 2
            steps += 1
        return x, steps

    cnt = CompileCounter()
    compiled = dynjit.compile(fn, backend=cnt)
    for start in (1.0, 30.0, 200.0, 1e-300):        # 1e-300 takes over 1000 iterations
        x = dynjit.full((3,), start, dtype=dynjit.float64)
        got, want = compiled(x), fn(x)
        assert same(got[0], want[0]) and got[1] == want[1]
    assert want[1] > 1000
    # one graph: up to the first test of the condition, which CPython places before the loop;
    # the rest (the loop) runs plain
    assert cnt.frame_count == 1
    assert any("inside a loop" in reason for reason in dynjit.utils.counters["graph_break"])


def test_slicing_an_argument_list():
    def fn(xs):
        return [a * i + b for i, (a, b) in enumerate(zip(xs, xs[1:]))]

    xs = [dynjit.ones(2) * i for i in range(4)]
    got, want = dynjit.compile(fn)(xs), fn(xs)
    assert len(got) == len(want) == 3 and all(same(a, b) for a, b in zip(got, want))


class _Double(dynjit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2 + 0

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_function_apply_run_natively_by_a_compiled_frame_compiles_its_forward():
    def fn(x):
        try:
            print("no break in try: this frame runs uncompiled")
            return _Double.apply(x)
        except ValueError:
            return None

    cnt = CompileCounter()
    x = dynjit.randn(3, requires_grad=True)
    out = dynjit.compile(fn, backend=cnt)(x)
    out.sum().backward()
    assert same(x.grad, dynjit.full((3,), 2.0))
    assert (cnt.frame_count, cnt.op_count) == (1, 2)       # _Double.forward: mul, add


def _logging_gen(log):
    for i in range(3):
        log.append(i)
        yield i


def test_generator_with_side_effects_runs_lazily_as_in_eager():
    # the consumer stops early: eager's generator never appends 2
    def fn(x, log):
        for i in _logging_gen(log):
            if i == 1:
                break
        return x * i

    log_c, log_e = [], []
    assert same(dynjit.compile(fn)(dynjit.ones(2), log_c), fn(dynjit.ones(2), log_e))
    assert log_c == log_e == [0, 1]


def _naturals():
    i = 0
    while True:
        yield i
        i += 1


def test_endless_generator_is_a_graph_break_not_a_hang(monkeypatch):
    monkeypatch.setattr(dynjit.config, "max_generator_items", 50)

    def fn(x):
        for i, v in zip(_naturals(), [x, x * 2]):
            x = x + v * i
        return x

    assert same(dynjit.compile(fn)(dynjit.ones(2)), fn(dynjit.ones(2)))


def test_pure_generator_is_traced_into_one_graph():
    def squares(x, n):
        for i in range(n):
            yield x * i

    def fn(x):
        return sum(squares(x, 3))

    cnt = CompileCounter()
    assert same(dynjit.compile(fn, backend=cnt)(dynjit.ones(2)), fn(dynjit.ones(2)))
    assert cnt.frame_count == 1


def test_explain_accepts_what_compile_returned():
    @dynjit.compile
    def f(x):
        y = x.sin()
        print("break")
        return y.cos()

    model = dynjit.compile(dynjit.nn.Linear(2, 2))
    assert dynjit.explain(f)(dynjit.ones(2)).graph_count == 2
    assert dynjit.explain(model)(dynjit.ones(2)).op_count == 1


def _hook_over_a_free_variable(holder):
    def hook(grads):
        holder.seen = tuple(grads)
        for user_hook in holder.user_hooks:
            user_hook(holder.seen)                  # .item() inside: a graph break in the loop
        return tuple(holder.seen[i] * 2 for i in holder.index)    # a closure over `holder`
    return hook


def test_generator_expression_over_a_free_variable_after_a_break(capsys):
    """On 3.13 building the generator's closure loads the free variable's cell with
    LOAD_FAST; it used to break there and crash the interpreter (a NULL left in a tuple)."""
    def make_holder():
        h = type("Holder", (), {})()
        h.user_hooks = [lambda g: print("saw", g[0].sum().item())]
        h.index = [1, 0]
        return h

    grads = (dynjit.ones(2), dynjit.arange(2.0))
    expected = _hook_over_a_free_variable(make_holder())(grads)
    eager_out = capsys.readouterr().out
    compiled = dynjit.compile(_hook_over_a_free_variable(make_holder()), backend="eager")
    for _ in range(2):
        result = compiled(grads)
        assert all(same(a, b) for a, b in zip(result, expected))
        assert capsys.readouterr().out == eager_out


def test_a_break_at_an_instruction_that_only_pushes_keeps_the_nulls_below_it():
    import dis
    from dynjit.frontend.resume import null_slots_after
    load = next(i for i in dis.get_instructions(lambda: x) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME"))  # noqa: F821
    # a pending call's NULL below a value, then the load pushes one more value
    assert null_slots_after(load, [False, True], jump=False) == [False, True, False]

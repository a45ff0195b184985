"""The graph IR: building and editing graphs, the linter, dead-code elimination,
generated code and its readable form, the Interpreter, DOT/SVG export."""
import operator
import shutil

import numpy as np
import pytest

import dynjit
from dynjit.fx import Graph, GraphModule, Interpreter, make_fx
from dynjit.ops import registry as R


def _small_graph():
    g = Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    add = g.call_function(R["add"], (x, y))
    sin = g.call_function(R["sin"], (add,))
    g.output(sin)
    return g, x, y, add, sin


def test_built_graph_prints_and_runs():
    g, *_ = _small_graph()
    assert str(g) == (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %y : [num_users=1] = placeholder[target=y]\n"
        "    %add : [num_users=1] = call_function[target=dynjit.ops.add](args = (%x, %y), kwargs = {})\n"
        "    %sin : [num_users=1] = call_function[target=dynjit.ops.sin](args = (%add,), kwargs = {})\n"
        "    %output : [num_users=0] = output[target=output](args = (%sin,), kwargs = {})")
    gm = GraphModule({}, g)
    assert gm.code == (
        "def forward(self, x, y):\n"
        "    add = dynjit.ops.add(x, y);  x = y = None\n"
        "    sin = dynjit.ops.sin(add);  add = None\n"
        "    return sin\n")
    a, b = dynjit.randn(3), dynjit.randn(3)
    assert dynjit.equal(gm(a, b), (a + b).sin())


def test_insert_after_and_replace_input():
    g, x, y, add, sin = _small_graph()
    with g.inserting_after(add):
        mul = g.call_function(R["mul"], (add, 2))
    sin.replace_input_with(add, mul)
    assert [n.name for n in g.nodes] == ["x", "y", "add", "mul", "sin", "output"]
    assert list(add.users) == [mul] and list(mul.users) == [sin]
    g.lint()
    gm = GraphModule({}, g)
    a, b = dynjit.randn(3), dynjit.randn(3)
    assert dynjit.allclose(gm(a, b), ((a + b) * 2).sin())


def test_insert_before_and_replace_all_uses_with():
    g, x, y, add, sin = _small_graph()
    with g.inserting_before(add):
        cos = g.call_function(R["cos"], (x,))
    users = x.replace_all_uses_with(cos, delete_user_cb=lambda user: user is not cos)
    assert users == [add]
    assert [n.name for n in g.nodes] == ["x", "y", "cos", "add", "sin", "output"]
    assert set(x.users) == {cos}
    g.lint()
    gm = GraphModule({}, g)
    a, b = dynjit.randn(3), dynjit.randn(3)
    assert dynjit.allclose(gm(a, b), (a.cos() + b).sin())


def test_node_prepend_append_move_nodes():
    g, x, y, add, sin = _small_graph()
    with g.inserting_after(sin):
        neg = g.call_function(R["neg"], (y,))
    add.prepend(neg)          # move before its user-independent position
    assert [n.name for n in g.nodes] == ["x", "y", "neg", "add", "sin", "output"]
    assert neg.next is add and add.prev is neg
    g.lint()


def test_erase_node_with_users_raises():
    g, x, y, add, sin = _small_graph()
    with pytest.raises(RuntimeError, match="Tried to erase Node add but it still had 1 users"):
        g.erase_node(add)
    out = g.output_node()
    out.args = (add,)
    g.erase_node(sin)
    assert "sin" not in [n.name for n in g.nodes]
    assert list(add.users) == [out]
    g.lint()


def test_dead_code_elimination_keeps_inplace_ops():
    g = Graph()
    x = g.placeholder("x")
    dead = g.call_function(R["exp"], (x,))
    g.call_function(R["cos"], (dead,))                      # dead chain: exp -> cos
    g.call_function(R["mul_"], (x, 2))                      # in-place: a side effect
    out = g.call_function(R["add"], (x, 1))
    g.output(out)
    assert g.eliminate_dead_code() is True
    assert [n.name for n in g.nodes] == ["x", "mul_", "add", "output"]
    assert g.eliminate_dead_code() is False
    gm = GraphModule({}, g)
    t = dynjit.ones(2)
    assert dynjit.equal(gm(t), dynjit.full((2,), 3.0))
    assert dynjit.equal(t, dynjit.full((2,), 2.0))          # the in-place op ran


def test_random_ops_are_not_dead_code():
    # dropping an unused random draw would shift every later random number
    g = Graph()
    x = g.placeholder("x")
    g.call_function(R["rand"], ((3,),))
    g.output(x)
    g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "rand", "output"]


@pytest.mark.parametrize("breakage, message", [
    ("use_before_def", "Argument 'sin' of Node 'cos' is used before it is defined"),
    ("foreign_node", "is not in the graph"),
    ("no_output", "exactly one output node"),
    ("after_output", "comes after the output node"),
    ("bad_users", "users do not list"),
    ("not_callable", "call_function target of cos is not callable"),
])
def test_lint_catches_broken_graphs(breakage, message):
    g = Graph()
    x = g.placeholder("x")
    y = g.call_function(R["sin"], (x,))
    z = g.call_function(R["cos"], (y,))
    if breakage == "use_before_def":
        g._move(z, 1)
    elif breakage == "foreign_node":
        other = Graph()
        z.args = (other.placeholder("w"),)
    elif breakage == "after_output":
        g.output(z)
        g.call_function(R["neg"], (x,))
    elif breakage == "bad_users":
        y.users.pop(z)
    elif breakage == "not_callable":
        z.target = "cos"
    if breakage not in ("no_output", "after_output"):
        g.output(z)
    with pytest.raises(RuntimeError, match=message):
        g.lint()


def test_names_are_unique_and_valid():
    g = Graph()
    x = g.placeholder("x")
    a = g.call_function(R["sum"], (x,))
    b = g.call_function(R["sum"], (a,))
    c = g.call_function(operator.getitem, ((a, b), 0))
    g.output(c)
    assert [n.name for n in g.nodes] == ["x", "sum_1", "sum_2", "getitem", "output"]
    g.lint()


def _traced_example():
    def f(x, w):
        y = x @ w
        return y.relu().sum(dim=0), y.shape[0]
    return make_fx(f)(dynjit.randn(2, 3), dynjit.randn(3, 4))


def test_graph_module_code_and_print_readable():
    gm = _traced_example()
    assert gm.code == (
        "def forward(self, x_1, w_1):\n"
        "    matmul = dynjit.ops.matmul(x_1, w_1);  x_1 = w_1 = None\n"
        "    relu = dynjit.ops.relu(matmul);  matmul = None\n"
        "    sum_1 = dynjit.ops.sum(relu, dim = 0);  relu = None\n"
        "    return (sum_1, 2)\n")
    readable = gm.print_readable(print_output=False)
    assert readable == (
        "class GraphModule(dynjit.nn.Module):\n"
        '    def forward(self, x_1: "f32[2, 3]", w_1: "f32[3, 4]"):\n'
        '        matmul: "f32[2, 4]" = dynjit.ops.matmul(x_1, w_1);  x_1 = w_1 = None\n'
        '        relu: "f32[2, 4]" = dynjit.ops.relu(matmul);  matmul = None\n'
        '        sum_1: "f32[4]" = dynjit.ops.sum(relu, dim = 0);  relu = None\n'
        "        return (sum_1, 2)\n")
    assert str(gm) == readable


def test_print_readable_prints(capsys):
    gm = make_fx(lambda x: x.double() * 2)(dynjit.ones((), dtype=dynjit.float32))
    gm.print_readable()
    printed = capsys.readouterr().out
    assert 'x_1: "f32[]"' in printed and ': "f64[]" = ' in printed


def test_interpreter_equals_generated_code():
    gm = _traced_example()
    x, w = dynjit.randn(2, 3), dynjit.randn(3, 4)
    by_code = gm(x, w)
    by_interpreter = Interpreter(gm).run(x, w)
    assert by_interpreter[1] == by_code[1] == 2
    assert dynjit.equal(by_interpreter[0], by_code[0])


def test_interpreter_can_be_customised():
    gm = _traced_example()
    seen = []

    class Recording(Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append(target.name)
            return super().call_function(target, args, kwargs)
    Recording(gm).run(dynjit.randn(2, 3), dynjit.randn(3, 4))
    assert seen == ["matmul", "relu", "sum"]


def test_interpreter_wrong_number_of_inputs():
    gm = _traced_example()
    with pytest.raises(TypeError, match="graph expects 2 inputs, got 1"):
        Interpreter(gm).run(dynjit.randn(2, 3))


def test_graph_module_rejects_keyword_inputs():
    gm = _traced_example()
    with pytest.raises(TypeError, match="takes its inputs positionally"):
        gm(x_1=dynjit.randn(2, 3), w_1=dynjit.randn(3, 4))


def test_dot_export():
    gm = _traced_example()
    dot = gm.to_dot()
    assert dot.startswith('digraph "GraphModule" {')
    assert '"matmul" [label="{matmul|call_function|dynjit.ops.matmul|f32[2, 4]}"' in dot
    assert '"x_1" -> "matmul";' in dot and '"relu" -> "sum_1";' in dot
    assert dot.rstrip().endswith("}")


def test_dot_written_to_file(tmp_path):
    gm = _traced_example()
    path = gm.render(str(tmp_path / "g.dot"))
    assert open(path).read() == gm.to_dot()


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's `dot` program is not installed")
def test_svg_export(tmp_path):
    gm = _traced_example()
    path = gm.render(str(tmp_path / "g.svg"))
    svg = open(path).read()
    assert "<svg" in svg and "matmul" in svg


def test_svg_without_graphviz_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    gm = _traced_example()
    with pytest.raises(RuntimeError, match="needs Graphviz's `dot` program"):
        gm.render(str(tmp_path / "g.svg"))


def test_graph_module_with_constant_attribute():
    c = dynjit.tensor([1.0, 2.0, 3.0])
    gm = make_fx(lambda x: x + c)(dynjit.zeros(3))
    assert gm.code == (
        "def forward(self, x_1):\n"
        "    _tensor_constant0 = self._tensor_constant0\n"
        "    add = dynjit.ops.add(x_1, _tensor_constant0);  x_1 = _tensor_constant0 = None\n"
        "    return add\n")
    assert gm._tensor_constant0 is c
    assert np.array_equal(gm(dynjit.ones(3)).numpy(), [2.0, 3.0, 4.0])


def _double(x):
    return x * 2


def test_code_for_plain_functions_methods_and_attributes():
    g = Graph()
    x = g.placeholder("x")
    # a node named like the global the generated code needs for its target
    a = g.call_function(_double, (x,), name="test_graph__double")
    b = g.call_method("sum", (a,), {"dim": 0})
    c = g.call_function(operator.add, (b, g.get_attr("sub.bias")))
    g.output((c, [a]))
    g.lint()

    class Sub:
        bias = dynjit.tensor([1.0, 2.0])

    class Root:
        sub = Sub()
    gm = GraphModule(Root(), g)
    assert gm.code == (
        "def forward(self, x):\n"
        "    test_graph__double = test_graph__double_1(x);  x = None\n"
        "    sum_1 = test_graph__double.sum(dim = 0)\n"
        "    sub_bias = self.sub.bias\n"
        "    add = operator.add(sum_1, sub_bias);  sum_1 = sub_bias = None\n"
        "    return (add, [test_graph__double])\n")
    out, (doubled,) = gm(dynjit.ones(2, 2))
    assert dynjit.equal(out, dynjit.tensor([5.0, 6.0])) and dynjit.equal(doubled, dynjit.full((2, 2), 2.0))
    assert dynjit.equal(Interpreter(gm).run(dynjit.ones(2, 2))[0], out)

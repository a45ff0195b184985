"""dynjit.func (vmap, grad, vjp, jacrev, functionalize), eagerly and traced by make_fx."""
import numpy as np
import pytest

import dynjit
from dynjit.func import functionalize, grad, jacrev, vjp, vmap
from dynjit.fx import make_fx
from dynjit.ops import registry as R


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def close(a, b, **kw):
    a = a.detach().numpy() if isinstance(a, dynjit.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, dynjit.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_vmap
def test_make_fx_of_vmap_records_one_op_on_the_whole_batch():
    f = vmap(dynjit.sin)
    gm = make_fx(f)(dynjit.randn(5, 3))
    assert gm.code == (
        "def forward(self, arg0_1):\n"
        "    sin = dynjit.ops.sin(arg0_1);  arg0_1 = None\n"
        "    return sin\n")
    new = dynjit.randn(5, 3)
    assert dynjit.equal(gm(new), f(new))
    close(f(new), np.sin(new.numpy()))


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_jacrev
def test_make_fx_of_jacrev_of_jacrev_is_the_hessian_and_replays():
    def f(x):
        return x.sin().sum()
    hessian = jacrev(jacrev(f))
    inp = dynjit.randn(3)
    close(hessian(inp), np.diag(-np.sin(inp.numpy())))
    gm = make_fx(hessian)(inp)
    new = dynjit.randn(3)
    close(gm(new), hessian(new))
    close(gm(new), np.diag(-np.sin(new.numpy())))
    targets = _targets(gm)
    assert targets.count(R["eye"]) == 2          # one basis per jacrev
    # the basis rows go through the backward as one batch: the graph's size does not
    # grow with the number of rows
    assert len(make_fx(hessian)(dynjit.randn(7)).graph.nodes) == len(gm.graph.nodes)


# ports: 001_fdd911346beae147.txt TestPythonKey.test_make_fx_functionalize
def test_make_fx_of_functionalize_records_the_out_of_place_op():
    def fn(a):
        a = a * 2
        a.relu_()
        return a
    a = dynjit.randn(3)
    assert R["relu_"] in _targets(make_fx(fn)(a))
    gm = make_fx(functionalize(fn))(a)
    assert gm.code == (
        "def forward(self, a_1):\n"
        "    mul = dynjit.ops.mul(a_1, 2);  a_1 = None\n"
        "    relu = dynjit.ops.relu(mul);  mul = None\n"
        "    return relu\n")
    new = dynjit.randn(3)
    close(gm(new), fn(new.clone()))


def test_functionalize_copies_into_a_mutated_argument_once_at_the_end():
    def fn(x, y):
        x.add_(y)
        x[0].mul_(10)                # through a view
        return x.sum()
    x, y = dynjit.ones(2, 2), dynjit.ones(2, 2)
    gm = make_fx(functionalize(fn))(x, y)
    targets = _targets(gm)
    assert R["add"] in targets and R["mul"] in targets
    assert [t for t in targets if t.kind == "inplace"] == [R["copy_"]]
    x1, x2 = dynjit.ones(2, 2), dynjit.ones(2, 2)
    out = gm(x1, y)
    assert out.item() == fn(x2, y).item() == 44.0
    close(x1, x2)
    # eagerly too
    x3 = dynjit.ones(2, 2)
    assert functionalize(fn)(x3, y).item() == 44.0
    close(x3, x2)


def test_vmap_in_dims_out_dims_and_unbatched_arguments():
    x = dynjit.randn(3, 4)
    w = dynjit.randn(4)
    out = vmap(lambda row, v: (row * v).sum(), in_dims=(0, None))(x, w)
    close(out, (x.numpy() * w.numpy()).sum(1))
    cols = vmap(lambda c: c * 2, in_dims=1, out_dims=1)(x)
    close(cols, x.numpy() * 2)
    # an output that does not depend on the batch is expanded to it
    const = vmap(lambda row: dynjit.ones(2), in_dims=0)(x)
    close(const, np.ones((3, 2)))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(dynjit.ones(3), dynjit.ones(4))
    with pytest.raises(ValueError, match="cannot vmap over non-Tensor arguments"):
        vmap(lambda a, n: a * n)(dynjit.ones(3), 2)


def test_vmap_batching_rules_match_a_python_loop():
    rng = np.random.default_rng(0)
    xs = dynjit.tensor(rng.standard_normal((4, 2, 3)).astype(np.float32))
    m = dynjit.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    v = dynjit.tensor(rng.standard_normal(3).astype(np.float32))

    def f(x):           # logical x: (2, 3)
        a = x @ m                           # matmul with an unbatched matrix
        b = (x @ v).unsqueeze(-1)           # matrix @ vector
        c = x.t().reshape(6).view(3, 2)     # views
        d = x.softmax(-1).sum(dim=0, keepdim=True) + x.mean()
        e = dynjit.cat([x, x * 2], dim=1)[:, 1:4]
        return a.sum(1) + b.squeeze(-1), c.permute(1, 0), d.expand(2, 3) * e

    batched = vmap(f)(xs)
    looped = [f(xs[i]) for i in range(4)]
    for k in range(3):
        close(batched[k], np.stack([r[k].numpy() for r in looped]))


def test_nested_vmap_is_an_outer_product():
    a, b = dynjit.randn(3), dynjit.randn(4)
    out = vmap(lambda x: vmap(lambda y: x * y)(b))(a)
    close(out, np.outer(a.numpy(), b.numpy()))


def test_vmap_without_a_batching_rule_names_the_op():
    with pytest.raises(NotImplementedError, match="no batching rule for dynjit.ops.nonzero"):
        vmap(lambda x: x.nonzero())(dynjit.ones(2, 3))


def test_vmap_refuses_to_write_a_batch_into_an_unbatched_tensor():
    buf = dynjit.zeros(3)
    with pytest.raises(RuntimeError, match="self is not batched"):
        vmap(lambda x: buf.add_(x))(dynjit.ones(2, 3))
    # in place on a batched tensor is fine
    out = vmap(lambda x: x.clone().mul_(3))(dynjit.ones(2, 3))
    close(out, np.full((2, 3), 3.0))


def test_grad_vjp_and_jacrev_against_closed_forms():
    x = dynjit.randn(4)
    close(grad(lambda t: (t * t).sum())(x), 2 * x.numpy())
    out, vjp_fn = vjp(lambda t: t.exp(), x)
    (g,) = vjp_fn(dynjit.ones(4))
    close(g, np.exp(x.numpy()))
    a = dynjit.randn(2, 4)
    close(jacrev(lambda t: a @ t)(x), a.numpy())
    # two arguments, one Jacobian each
    ja, jb = jacrev(lambda p, q: p * q, argnums=(0, 1))(x, 2 * x)
    close(ja, np.diag(2 * x.numpy()))
    close(jb, np.diag(x.numpy()))
    # the caller's tensors are not touched and need no grad
    assert not x.requires_grad and x.grad is None
    with pytest.raises(RuntimeError, match="scalar"):
        grad(lambda t: t * 2)(x)


def test_transforms_compose_with_autograd():
    x = dynjit.randn(3, requires_grad=True)
    g = grad(lambda t: t.sin().sum())(x)       # cos(x), still differentiable w.r.t. x
    g.sum().backward()
    close(x.grad, -np.sin(x.detach().numpy()))


def test_differentiating_batched_tensors_inside_vmap_is_refused_not_wrong():
    xs = dynjit.randn(4, 3)
    with pytest.raises(NotImplementedError, match="inside vmap"):
        vmap(grad(lambda t: t.sin().sum()))(xs)
    w = dynjit.randn(3)
    with pytest.raises(NotImplementedError, match="inside vmap"):
        vmap(lambda b: grad(lambda t: (t * b).sum())(w))(xs)

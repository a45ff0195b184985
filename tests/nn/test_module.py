"""nn.Module: registration and attribute routing, iteration, modes, conversion,
state_dict round trips and repr."""
import copy
import pickle

import numpy as np
import pytest

import dynjit
from dynjit import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2)
        self.scale = nn.Parameter(dynjit.ones(2))
        self.register_buffer("count", dynjit.zeros(()))
        self.register_buffer("scratch", dynjit.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# -- Parameter ---------------------------------------------------------------------

def test_parameter_is_a_leaf_tensor_that_requires_grad_and_shares_memory():
    t = dynjit.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, dynjit.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    with dynjit.no_grad():
        p.mul_(3)
    assert t.tolist() == [3.0, 6.0]
    assert not nn.Parameter(t, requires_grad=False).requires_grad


def test_parameter_repr():
    p = nn.Parameter(dynjit.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"


def test_parameter_ops_return_plain_tensors():
    p = nn.Parameter(dynjit.tensor([1.0, 2.0]))
    out = p * 2
    assert type(out) is dynjit.Tensor and out.grad_fn is not None


def test_parameter_deepcopy_and_pickle_keep_the_type():
    p = nn.Parameter(dynjit.tensor([1.0, 2.0]))
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.0, 2.0]
        assert q.data_ptr() != p.data_ptr()


def test_parameter_of_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(dynjit.tensor([1, 2]))


# -- registration and attribute routing ------------------------------------------------

def test_setattr_routes_parameters_modules_and_buffers():
    net = Net()
    assert list(net._parameters) == ["scale"]
    assert list(net._modules) == ["fc1", "act", "fc2"]
    assert list(net._buffers) == ["count", "scratch"]
    assert "fc1" not in net.__dict__ and "scale" not in net.__dict__
    assert net.fc1 is net._modules["fc1"] and net.scale is net._parameters["scale"]


def test_assigning_a_plain_tensor_to_a_parameter_name_is_an_error():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        net.scale = dynjit.ones(2)
    net.scale = None
    assert net.scale is None and "scale" in net._parameters
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def test_assigning_a_buffer_name_keeps_it_a_buffer():
    net = Net()
    net.count = dynjit.tensor(5.0)
    assert net._buffers["count"].item() == 5.0
    with pytest.raises(TypeError, match="as buffer 'count'"):
        net.count = 3


def test_reassigning_a_name_moves_it_between_stores():
    net = Net()
    net.act = nn.Parameter(dynjit.zeros(1))
    assert "act" in net._parameters and "act" not in net._modules
    del net.act
    assert "act" not in net._parameters
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'act'"):
        net.act


def test_assignment_before_init_is_an_error():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(dynjit.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_register_parameter_checks():
    m = nn.Module()
    with pytest.raises(KeyError, match="name can.+t contain"):
        m.register_parameter("a.b", nn.Parameter(dynjit.zeros(1)))
    with pytest.raises(TypeError, match="dynjit.nn.Parameter or None required"):
        m.register_parameter("w", dynjit.zeros(1))
    m.plain = 3
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_parameter("plain", nn.Parameter(dynjit.zeros(1)))
    with pytest.raises(ValueError, match="non-leaf"):
        m.register_parameter("w", _non_leaf_param())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)


def _non_leaf_param():
    p = nn.Parameter(dynjit.zeros(1))
    q = p * 2
    q.__class__ = nn.Parameter     # a Parameter object that has a grad_fn
    return q


def test_register_buffer_requires_a_tensor():
    m = nn.Module()
    with pytest.raises(TypeError, match="dynjit.Tensor or None required"):
        m.register_buffer("b", [1, 2])
    m.register_buffer("b", None)
    assert m.b is None and list(m.buffers()) == []


def test_forward_is_required():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward"'):
        nn.Module()(1)


# -- iteration ---------------------------------------------------------------------------

def test_named_parameters_buffers_modules_children():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc1.weight", "fc1.bias",
                                                      "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.scale"
    assert [n for n, _ in net.named_buffers()] == ["count", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert list(net.modules())[0] is net
    assert len(list(net.parameters())) == 5 and len(list(net.children())) == 3


def test_shared_parameters_and_modules_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_get_submodule_and_parameter():
    seq = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 3)))
    assert seq.get_submodule("1.0") is seq[1][0]
    assert seq.get_parameter("1.0.bias") is seq[1][0].bias
    with pytest.raises(AttributeError, match="has no attribute `7`"):
        seq.get_submodule("7")


# -- modes, grads, apply ----------------------------------------------------------------------

def test_train_and_eval_recurse():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net
    assert not net.training and not net.fc1.training
    net.train()
    assert net.fc2.training
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_zero_grad_sets_to_none_or_zero():
    net = Net()
    net(dynjit.randn(5, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_and_apply():
    net = Net()
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Linear", "Net"]


def test_to_double_keeps_parameter_identity():
    net = Net()
    w = net.fc1.weight
    net.double()
    assert net.fc1.weight is w and w.dtype is dynjit.float64
    assert net.count.dtype is dynjit.float64
    out = net(dynjit.randn(2, 3, dtype=dynjit.float64))
    assert out.dtype is dynjit.float64
    net.to(dynjit.float32)
    assert w.dtype is dynjit.float32
    with pytest.raises(TypeError, match="floating point"):
        net.to(dynjit.int64)
    with pytest.raises(RuntimeError, match="CPU only"):
        net.to("cuda")


# -- state_dict ---------------------------------------------------------------------------------

def test_state_dict_keys_and_detached_values():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["scale", "count", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert not any(v.requires_grad for v in sd.values())
    assert sd["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()
    assert net.state_dict(keep_vars=True)["scale"] is net.scale


def test_state_dict_round_trip_copies_in_place():
    src, dst = Net(), Net()
    with dynjit.no_grad():
        src.count.fill_(7)
    w = dst.fc1.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.fc1.weight is w
    for (n, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), n
    x = dynjit.randn(4, 3)
    assert dynjit.allclose(src(x), dst(x))


def test_load_state_dict_strict_lists_missing_and_unexpected_keys():
    net = Net()
    sd = net.state_dict()
    del sd["fc1.bias"]
    sd["extra.weight"] = dynjit.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    msg = str(info.value)
    assert "Error(s) in loading state_dict for Net" in msg
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra.weight"]


def test_load_state_dict_size_mismatch_is_an_error_even_when_not_strict():
    net = Net()
    sd = net.state_dict()
    sd["fc1.weight"] = dynjit.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with shape "
                                           r"dynjit.Size\(\[2, 2\]\)"):
        net.load_state_dict(sd, strict=False)


def test_deepcopy_of_a_module_copies_its_parameters():
    net = Net()
    twin = copy.deepcopy(net)
    assert twin.fc1.weight is not net.fc1.weight
    assert isinstance(twin.fc1.weight, nn.Parameter)
    x = dynjit.randn(2, 3)
    assert dynjit.allclose(net(x), twin(x))


# -- repr ---------------------------------------------------------------------------------------

def test_repr_nests_like_pytorch():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Sequential(nn.Linear(256, 10, bias=False)))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Linear(in_features=256, out_features=10, bias=False)\n"
        "  )\n"
        ")")
    assert repr(Net()).startswith("Net(\n  (fc1): Linear(in_features=3, out_features=4, bias=True)\n")


def test_repr_with_multiline_extra_repr():
    class Custom(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"
    assert repr(Custom()) == "Custom(\n  a=1\n  b=2\n)"


def test_pickle_round_trip_of_a_module():
    net = Net()
    twin = pickle.loads(pickle.dumps(net))
    assert isinstance(twin.fc1.weight, nn.Parameter) and twin.fc1.weight.requires_grad
    assert list(twin.state_dict()) == list(net.state_dict())
    x = dynjit.randn(2, 3)
    assert dynjit.allclose(net(x), twin(x))

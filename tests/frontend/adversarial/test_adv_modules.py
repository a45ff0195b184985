"""Adversarial programs: nn.Module forwards with hooks, buffers registered and
mutated, self.training branches, __call__ overrides, attribute mutation in
forward, module containers, parameters replaced."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["forward_hooks_mutating"] = '''
import dynjit
import dynjit.nn as nn
LOG = []
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
    def forward(self, x):
        return self.lin(x).relu()
def pre(mod, args):
    LOG.append(("pre", type(mod).__name__))
    return (args[0] * 2,)
def post(mod, args, out):
    LOG.append(("post", tuple(out.shape)))
    return out + 1
NET = None
def main(x):
    global NET
    if NET is None:
        dynjit.manual_seed(0)
        NET = Net()
        NET.lin.register_forward_pre_hook(pre)
        NET.register_forward_hook(post)
    return NET(x)
def make_args(call):
    return (dynjit.ones(2 + call, 3),)
'''

PROGRAMS["hook_added_between_calls"] = '''
import dynjit
import dynjit.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 2.0
    def forward(self, x):
        return x * self.k
NET = Net()
_HANDLES = []
def main(x, add_hook):
    if add_hook and not _HANDLES:
        _HANDLES.append(NET.register_forward_hook(lambda m, a, o: o - 100))
    elif not add_hook and _HANDLES:
        _HANDLES.pop().remove()
    return NET(x)
def make_args(call):
    return dynjit.ones(2), call == 1
'''

PROGRAMS["buffer_mutation_in_forward"] = '''
import dynjit
import dynjit.nn as nn
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", dynjit.zeros(()))
        self.register_buffer("running", dynjit.zeros(3))
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        self.steps += 1
        self.running.mul_(0.9).add_(x.mean(0) * 0.1)
        return x - self.running
M = Counter()
def main(x):
    return M(x), M.steps, M.calls
def make_args(call):
    return (dynjit.arange(6, dtype=dynjit.float32).reshape(2, 3) * (call + 1),)
'''

PROGRAMS["buffer_reassigned_and_registered_in_forward"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("b", dynjit.ones(2))
    def forward(self, x):
        self.b = self.b * 2
        if not hasattr(self, "extra"):
            self.register_buffer("extra", x.clone())
        return x + self.b + self.extra
NET = M()
def main(x):
    return NET(x), sorted(dict(NET.named_buffers()))
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["training_flag_branch"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(3)
    def forward(self, x):
        y = self.bn(x)
        if self.training:
            y = self.drop(y) + 1
        return y
NET = M()
def main(x, train):
    NET.train(train)
    return NET(x), NET.bn.running_mean, NET.bn.num_batches_tracked
def make_args(call):
    return dynjit.arange(12, dtype=dynjit.float32).reshape(4, 3) + call, call != 1
'''

PROGRAMS["call_override"] = '''
import dynjit
import dynjit.nn as nn
class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0
    def forward(self, x):
        return x * 2
    def __call__(self, x, scale=1.0):
        self.n += 1
        return super().__call__(x) * scale
M = Odd()
def main(x):
    return M(x), M(x, scale=3.0), M.n
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["attribute_mutation_in_forward"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []
        self.last = None
        self.scale = 1.0
        self.lin = nn.Linear(2, 2)
    def forward(self, x):
        self.history.append(x.shape[0])
        self.last = x.detach()
        self.scale = self.scale * 2
        return self.lin(x) * self.scale
dynjit.manual_seed(0)
NET = M()
def main(x):
    return NET(x), NET.scale, list(NET.history)
def make_args(call):
    return (dynjit.ones(1 + call, 2),)
'''

PROGRAMS["submodule_swapped_between_calls"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
    def forward(self, x):
        return self.act(x - 1)
NET = M()
def main(x, use_tanh):
    if use_tanh:
        NET.act = nn.Tanh()
    return NET(x)
def make_args(call):
    return dynjit.arange(4, dtype=dynjit.float32), call == 2
'''

PROGRAMS["parameter_replaced_and_grad"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(dynjit.ones(3))
    def forward(self, x):
        return (self.w * x).sum()
NET = M()
def main(x, replace):
    if replace:
        NET.w = nn.Parameter(dynjit.full((3,), 2.0))
    loss = NET(x)
    loss.backward()
    g = NET.w.grad.clone()
    NET.zero_grad()
    return loss, g, [n for n, _ in NET.named_parameters()]
def make_args(call):
    return dynjit.arange(3, dtype=dynjit.float32), call == 2
'''

PROGRAMS["module_list_dict_iteration"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 1)})
    def forward(self, x):
        for i, l in enumerate(self.layers):
            if i % 2:
                continue
            x = l(x)
        return {k: h(x) for k, h in self.heads.items()}, len(self.layers)
dynjit.manual_seed(1)
NET = M()
def main(x):
    return NET(x)
def make_args(call):
    return (dynjit.ones(2 + call, 2),)
'''

PROGRAMS["forward_with_kwargs_and_defaults"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def forward(self, x, *, bias=None, scale=2, **extra):
        y = x * scale
        if bias is not None:
            y = y + bias
        return y, sorted(extra)
NET = M()
def main(x):
    return NET(x), NET(x, bias=x, scale=3, z=1)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["module_getattr_missing_raises"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def forward(self, x):
        try:
            return self.nope
        except AttributeError as e:
            return str(e), x * 2
NET = M()
def main(x):
    return NET(x)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["forward_hook_with_kwargs_and_always_call"] = '''
import dynjit
import dynjit.nn as nn
LOG = []
class M(nn.Module):
    def forward(self, x, k=1):
        if k < 0:
            raise ValueError("neg k")
        return x * k
NET = M()
NET.register_forward_pre_hook(lambda m, a, kw: (a, {**kw, "k": kw.get("k", 1) + 1}), with_kwargs=True)
NET.register_forward_hook(lambda m, a, o: LOG.append("post"), always_call=True)
def main(x, k):
    try:
        return NET(x, k=k)
    except ValueError as e:
        return str(e)
def make_args(call):
    return dynjit.ones(2), [2, 2, -5][call]
'''

PROGRAMS["state_dict_roundtrip_in_compiled"] = '''
import dynjit
import dynjit.nn as nn
dynjit.manual_seed(2)
A = nn.Linear(2, 2)
B = nn.Linear(2, 2)
def main(x):
    y0 = B(x)
    B.load_state_dict(A.state_dict())
    return y0, B(x), A(x)
def make_args(call):
    return (dynjit.ones(1, 2) * call,)
'''

PROGRAMS["lazy_parameter_and_modulelist_growth"] = '''
import dynjit
import dynjit.nn as nn
class Lazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = None
        self.layers = nn.ModuleList()
    def forward(self, x):
        if self.w is None:
            self.w = nn.Parameter(dynjit.ones(x.shape[-1]))
        if len(self.layers) < 2:
            self.layers.append(nn.Identity())
        for l in self.layers:
            x = l(x)
        return x * self.w, len(list(self.parameters())), len(self.layers)
NET = Lazy()
def main(x):
    return NET(x)
def make_args(call):
    return (dynjit.ones(2, 3) * call,)
'''

PROGRAMS["property_and_parameter_replaced_in_forward"] = '''
import dynjit
import dynjit.nn as nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.scale = 2
    @property
    def eff_scale(self):
        return self.scale * 10
    def forward(self, x):
        self.scale += 1
        return self.lin(x) * self.eff_scale, self.eff_scale
dynjit.manual_seed(0)
NET = M()
NET.lin.register_forward_hook(lambda m, a, o: print("hook", tuple(o.shape)))
def main(x):
    y, s = NET(x)
    del NET.lin.weight
    NET.lin.weight = nn.Parameter(dynjit.ones(2, 2))
    return y, s, NET.lin(x)
def make_args(call):
    return (dynjit.ones(1, 2) * call,)
'''

XFAIL = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name])

"""Adversarial programs, round two: nn.Module behaviour inside compiled code:
forward pre-hooks that replace inputs, forward hooks that replace outputs,
hooks removed inside forward, full backward hooks, state_dict/load_state_dict
inside the compiled function, optimizer.step and zero_grad inside, parameter
and buffer registration and deletion in forward, module attribute mutation
seen by later calls, apply/named_modules traversal order."""
import pytest

from adv_harness import cases, check_program

PROGRAMS = {}

PROGRAMS["pre_hook_replaces_input_and_hook_replaces_output"] = '''
import dynjit
nn = dynjit.nn
LOG = []
def main(x, k):
    m = nn.Linear(2, 2)
    with dynjit.no_grad():
        m.weight.fill_(1.0)
        m.bias.zero_()
    h1 = m.register_forward_pre_hook(lambda mod, inp: (inp[0] * k,))
    h2 = m.register_forward_hook(lambda mod, inp, out: out + 100)
    h3 = m.register_forward_hook(lambda mod, inp, out: LOG.append(out.shape[-1]))
    a = m(x)
    h1.remove()
    b = m(x)
    h2.remove()
    h3.remove()
    c = m(x)
    return a, b, c, len(LOG)
def make_args(call):
    return dynjit.ones(3, 2), call + 1
'''

PROGRAMS["hook_removes_itself_during_forward"] = '''
import dynjit
nn = dynjit.nn
class M(nn.Module):
    def forward(self, t):
        return t * 2
M_INST = M()
CALLS = []
def once(mod, inp, out):
    CALLS.append(1)
    _HANDLE[0].remove()
    return out + 1
_HANDLE = [M_INST.register_forward_hook(once)]   # a handle's id is a process-wide count: not compared
def main(x):
    return M_INST(x), M_INST(x), len(CALLS)
def make_args(call):
    return (dynjit.ones(2) * call,)
'''

PROGRAMS["full_backward_hook_scales_grad_input"] = '''
import dynjit
nn = dynjit.nn
SEEN = []
def main(x, k):
    m = nn.Linear(2, 1)
    with dynjit.no_grad():
        m.weight.copy_(dynjit.tensor([[1.0, -1.0]]))
        m.bias.fill_(0.5)
    def bh(mod, gin, gout):
        SEEN.append((len(gin), gout[0].shape))
        return (gin[0] * k,)
    h = m.register_full_backward_hook(bh)
    y = m(x).sum()
    y.backward()
    h.remove()
    return x.grad, m.weight.grad, len(SEEN)
def make_args(call):
    return dynjit.ones(3, 2, requires_grad=True), call + 1
'''

PROGRAMS["state_dict_and_load_inside_compiled"] = '''
import dynjit
nn = dynjit.nn
def main(x, k):
    a = nn.Linear(2, 2)
    b = nn.Linear(2, 2)
    sd = a.state_dict()
    keys = list(sd)
    with dynjit.no_grad():
        sd["weight"].mul_(k)
    b.load_state_dict(sd)
    same = dynjit.equal(a.weight, b.weight)
    b.weight.data.add_(1)
    return keys, same, dynjit.equal(a.weight, b.weight), b(x) - a(x)
def make_args(call):
    return dynjit.ones(1, 2), call + 1
'''

PROGRAMS["optimizer_step_and_zero_grad_inside"] = '''
import dynjit
nn = dynjit.nn
def main(model, opt, x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss, [p.clone() for p in model.parameters()], [p.grad is None for p in model.parameters()]
MODEL = None
def make_args(call):
    global MODEL
    dynjit.manual_seed(5)
    if call == 0 or MODEL is None:
        MODEL = nn.Linear(2, 1)
        make_args.opt = dynjit.optim.SGD(MODEL.parameters(), lr=0.1, momentum=0.9)
    return MODEL, make_args.opt, dynjit.ones(4, 2) * (call + 1), dynjit.zeros(4, 1)
'''

PROGRAMS["optimizer_zero_grad_set_to_none_false"] = '''
import dynjit
nn = dynjit.nn
def main(x):
    dynjit.manual_seed(0)
    m = nn.Linear(2, 2)
    opt = dynjit.optim.Adam(m.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad(set_to_none=False)
        m(x).pow(2).sum().backward()
        opt.step()
    state = opt.state[m.weight]
    return m.weight, state["step"], state["exp_avg"], sorted(opt.param_groups[0])
def make_args(call):
    return (dynjit.ones(3, 2) * (call + 1),)
'''

PROGRAMS["register_parameter_and_buffer_in_forward"] = '''
import dynjit
nn = dynjit.nn
class Grow(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0
    def forward(self, t):
        self.n += 1
        name = f"p{self.n}"
        self.register_parameter(name, nn.Parameter(dynjit.ones(t.shape[-1]) * self.n))
        self.register_buffer(f"b{self.n}", t.detach().clone(), persistent=self.n % 2 == 0)
        return t * getattr(self, name), [k for k, _ in self.named_parameters()], list(self.state_dict())
M = Grow()
def main(x):
    return M(x)
def make_args(call):
    return (dynjit.ones(2) * (call + 1),)
'''

PROGRAMS["delete_submodule_and_parameter_in_forward"] = '''
import dynjit
nn = dynjit.nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)
        self.scale = nn.Parameter(dynjit.ones(1))
    def forward(self, t):
        out = self.a(t)
        if hasattr(self, "b"):
            out = self.b(out)
            del self.b
        if "scale" in self._parameters:
            out = out * self.scale
            del self.scale
        return out, [n for n, _ in self.named_children()], [n for n, _ in self.named_parameters()]
def main(m, x):
    return m(x)
def make_args(call):
    dynjit.manual_seed(1)
    return M(), dynjit.ones(1, 2)
'''

PROGRAMS["module_apply_and_named_modules_order"] = '''
import dynjit
nn = dynjit.nn
def main(x):
    dynjit.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.Tanh()), nn.Linear(3, 1))
    visited = []
    def init(m):
        visited.append(type(m).__name__)
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.weight, 0.1)
            nn.init.zeros_(m.bias)
    net.apply(init)
    names = [n for n, _ in net.named_modules()]
    return net(x), visited, names, sum(p.numel() for p in net.parameters())
def make_args(call):
    return (dynjit.ones(2, 2) * (call + 1),)
'''

PROGRAMS["module_train_eval_inside_and_mode_flags"] = '''
import dynjit
nn = dynjit.nn
def main(m, x):
    m.eval()
    a = m(x)
    flags = [mod.training for mod in m.modules()]
    m.train()
    b = m(x)
    m[1].eval()
    flags2 = [mod.training for mod in m.modules()]
    return a, b, flags, flags2
def make_args(call):
    dynjit.manual_seed(3)
    return nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)), dynjit.ones(4, 2)
'''

PROGRAMS["parameter_inplace_update_under_no_grad_seen_next_call"] = '''
import dynjit
nn = dynjit.nn
M = nn.Linear(2, 1)
with dynjit.no_grad():
    M.weight.fill_(1.0)
    M.bias.fill_(0.0)
def main(x):
    y = M(x)
    with dynjit.no_grad():
        M.weight.add_(1.0)
        M.bias.sub_(0.5)
    return y, M.weight.clone(), M.weight._version > 0
def make_args(call):
    return (dynjit.ones(1, 2),)
'''

PROGRAMS["module_forward_returns_dict_and_kwargs"] = '''
import dynjit
nn = dynjit.nn
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
    def forward(self, x, *, scale=1.0, return_dict=True, **extra):
        out = self.lin(x) * scale
        if return_dict:
            return {"out": out, "extra": sorted(extra), "n": len(extra)}
        return out
def main(h, x, kw):
    a = h(x, **kw)
    b = h(x, return_dict=False, scale=2.0)
    return a, b
def make_args(call):
    dynjit.manual_seed(2)
    return Head(), dynjit.ones(1, 2), [{"scale": 0.5}, {"scale": 0.5}, {"z": 1, "a": 2}][call]
'''

PROGRAMS["module_setattr_tensor_vs_parameter"] = '''
import dynjit
nn = dynjit.nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(dynjit.ones(2))
    def forward(self, t):
        self.plain = t * 2
        try_names = [n for n, _ in self.named_parameters()]
        return t * self.w, try_names, "plain" in self.__dict__, sorted(self._buffers)
def main(m, x):
    return m(x)
def make_args(call):
    return M(), dynjit.ones(2) * call
'''

PROGRAMS["module_assign_tensor_to_parameter_name_raises"] = '''
import dynjit
nn = dynjit.nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(dynjit.ones(2))
    def forward(self, t, k):
        if k:
            self.w = t * 2
        return t * self.w
def main(m, x, k):
    return m(x, k)
def make_args(call):
    return M(), dynjit.ones(2), call
'''

PROGRAMS["buffers_mutated_batchnorm_running_stats"] = '''
import dynjit
nn = dynjit.nn
BN = nn.BatchNorm1d(2, momentum=0.5)
def main(x, train):
    BN.train(train)
    y = BN(x)
    return y, BN.running_mean.clone(), BN.running_var.clone(), BN.num_batches_tracked.item()
def make_args(call):
    return dynjit.arange(8, dtype=dynjit.float32).reshape(4, 2) * (call + 1), call != 2
'''

PROGRAMS["module_called_via_forward_bypasses_hooks"] = '''
import dynjit
nn = dynjit.nn
LOG = []
class M(nn.Module):
    def forward(self, t):
        return t + 1
M_INST = M()
M_INST.register_forward_hook(lambda m, i, o: LOG.append("hook"))
def main(x):
    a = M_INST.forward(x)
    b = M_INST(x)
    c = nn.Module.__call__(M_INST, x)
    return a, b, c, list(LOG)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["module_list_and_dict_mutated_in_forward"] = '''
import dynjit
nn = dynjit.nn
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Identity()])
        self.heads = nn.ModuleDict({"a": nn.Identity()})
    def forward(self, t):
        self.layers.append(nn.Identity())
        self.heads["b" + str(len(self.layers))] = nn.Identity()
        for l in self.layers:
            t = l(t) * 2
        return t, len(self.layers), list(self.heads.keys())
S = Stack()
def main(x):
    return S(x)
def make_args(call):
    return (dynjit.ones(2),)
'''

PROGRAMS["clip_grad_norm_and_scheduler_inside"] = '''
import dynjit
nn = dynjit.nn
def main(x):
    dynjit.manual_seed(0)
    m = nn.Linear(2, 2)
    opt = dynjit.optim.SGD(m.parameters(), lr=1.0)
    sched = dynjit.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    lrs = []
    norms = []
    for _ in range(3):
        opt.zero_grad()
        (m(x) ** 2).sum().backward()
        norms.append(nn.utils.clip_grad_norm_(m.parameters(), 0.5))
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return m.weight, lrs, norms
def make_args(call):
    return (dynjit.ones(2, 2) * (call + 1),)
'''

PROGRAMS["deepcopy_module_inside_compiled"] = '''
import copy
import dynjit
nn = dynjit.nn
def main(m, x):
    m2 = copy.deepcopy(m)
    with dynjit.no_grad():
        m2.weight.add_(1)
    return m(x).detach(), m2(x).detach(), m2.weight is m.weight, m2.in_features
def make_args(call):
    dynjit.manual_seed(call)
    return nn.Linear(2, 2), dynjit.ones(1, 2)
'''

XFAIL = {}

CALLS = {}


@pytest.mark.parametrize("name", cases(PROGRAMS, XFAIL))
def test_program(name):
    check_program(PROGRAMS[name], calls=CALLS.get(name, 3))

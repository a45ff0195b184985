"""`dynjit demo`: train a small classifier with its loss compiled by dynjit,
then show what the JIT made of it (graphs, graph breaks) and how fast the
compiled step runs against the same step run eagerly."""
import math
import sys
import time

import dynjit
import dynjit.nn.functional as F
from dynjit import nn


def spirals(n_per_class=256, classes=3, seed=0):
    """Points on `classes` interleaved noisy spirals in the plane, and their labels."""
    gen = dynjit.Generator().manual_seed(seed)
    t = dynjit.linspace(0.0, 1.0, n_per_class)
    xs, ys = [], []
    for c in range(classes):
        angle = t * 4.0 + c * (2 * math.pi / classes) + dynjit.randn(n_per_class, generator=gen) * 0.2
        xs.append(dynjit.stack([t * angle.sin(), t * angle.cos()], dim=1))
        ys.append(dynjit.full((n_per_class,), c, dtype=dynjit.int64))
    return dynjit.cat(xs), dynjit.cat(ys)


def make_model(seed=0):
    dynjit.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3))


def train_step(model, opt, x, y, history):
    opt.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    accuracy = (logits.argmax(dim=1) == y).float().mean()
    loss.backward()                      # runs the autograd engine: a graph break
    opt.step()
    history.append(loss.item())          # reads a tensor's value: a graph break
    return loss, accuracy


def _progress(step, total, loss, acc, start, out):
    width = 30
    done = int(width * step / total)
    bar = "#" * done + "." * (width - done)
    line = f"step {step:4d}/{total} [{bar}] loss {loss:.3f}  accuracy {acc * 100:5.1f}%  ({time.perf_counter() - start:.1f}s)"
    if out.isatty():
        out.write("\r" + line)
        if step == total:
            out.write("\n")
    elif step == total:
        out.write(line + "\n")
    out.flush()


def _time_step(step_fn, model, opt, x, y, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step_fn(model, opt, x, y, [])
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def run(backend="llvm", steps=300, out=None, timing_steps=50):
    """Train, explain and time; returns the final (loss, accuracy)."""
    out = out or sys.stdout
    x, y = spirals()
    model = make_model()
    opt = dynjit.optim.Adam(model.parameters(), lr=0.01)
    history = []
    compiled = dynjit.compile(train_step, backend=backend)
    out.write(f"dynjit demo: an MLP (2-64-64-3) learns {x.shape[0]} points on 3 spirals; "
              f"its training step (forward, loss, Adam update) is compiled with backend={backend!r}\n")
    start = time.perf_counter()
    for i in range(1, steps + 1):
        loss, acc = compiled(model, opt, x, y, history)
        if i % 10 == 0 or i == steps:
            _progress(i, steps, history[-1], acc.item(), start, out)

    fresh = make_model()
    explanation = dynjit.explain(train_step)(fresh, dynjit.optim.Adam(fresh.parameters(), lr=0.01), x, y, [])
    out.write(f"\nWhat dynjit made of train_step: {explanation.graph_count} graph(s), "
              f"ops per graph {explanation.ops_per_graph}, {explanation.graph_break_count} graph break(s)\n")
    for brk in explanation.break_reasons:
        out.write(f"  graph break: {brk.reason}\n    at {brk.where}\n    hint: {brk.hint}\n")
    for i, gm in enumerate(explanation.graphs):
        lines = gm.print_readable(print_output=False).rstrip().splitlines()
        if len(lines) > 16:
            lines = lines[:14] + [f"        ... ({len(lines) - 15} more lines)", lines[-1]]
        out.write(f"--- graph {i} ---\n" + "\n".join(lines) + "\n")

    eager_model, timed_model = make_model(), make_model()
    eager_opt = dynjit.optim.Adam(eager_model.parameters(), lr=0.01)
    timed_opt = dynjit.optim.Adam(timed_model.parameters(), lr=0.01)
    for _ in range(5):      # warm up both (the new model and its optimizer state compile once)
        compiled(timed_model, timed_opt, x, y, [])
        train_step(eager_model, eager_opt, x, y, [])
    t_compiled = _time_step(compiled, timed_model, timed_opt, x, y, timing_steps)
    t_eager = _time_step(train_step, eager_model, eager_opt, x, y, timing_steps)
    out.write(f"\nTraining step (forward, backward, Adam), median of {timing_steps}: "
              f"compiled {t_compiled * 1e3:.2f} ms, "
              f"eager {t_eager * 1e3:.2f} ms ({t_eager / t_compiled:.2f}x)\n")
    return history[-1], acc.item()

"""The backend registry: registering, looking up and listing backends, errors
from failing backends and unknown names, and a plugin found through its
entry point (the plugin of docs/backends.md, installed as a .dist-info
directory on sys.path)."""
import os
import re
import textwrap

import pytest

import dynjit
from dynjit.compiler import register_backend, lookup_backend, list_backends, call_backend
from dynjit.compiler import registry
from dynjit.exc import BackendCompilerFailed, InvalidBackend
from dynjit.fx import make_fx

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "backends.md")


@pytest.fixture
def clean_registry(monkeypatch):
    """Backends registered by a test disappear after it."""
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.setattr(registry, "_TAGS", dict(registry._TAGS))


def _graph():
    return make_fx(lambda x: x.sin() * 2)(dynjit.randn(3))


def test_builtin_backends_are_listed():
    names = list_backends()
    assert {"eager", "aot_eager"} <= set(names) and names == sorted(names)
    assert "aot_eager_default_partitioner" not in names             # tagged debug
    assert "aot_eager_default_partitioner" in list_backends(exclude_tags=())


def test_register_lookup_and_use(clean_registry):
    seen = []

    @register_backend
    def recording(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward
    assert lookup_backend("recording") is recording and "recording" in list_backends()

    @dynjit.compile(backend="recording")
    def f(x, y):
        return (x * y).sum()
    x, y = dynjit.randn(2, 3), dynjit.randn(2, 3)
    assert dynjit.allclose(f(x, y), (x * y).sum())
    assert len(seen) == 1 and seen[0][1] == [(2, 3), (2, 3)]


def test_register_with_name_and_tags(clean_registry):
    def compiler(gm, example_inputs):
        return gm.forward
    assert register_backend(compiler, name="tagged", tags=("experimental",)) is compiler
    assert lookup_backend("tagged") is compiler
    assert "tagged" not in list_backends() and "tagged" in list_backends(exclude_tags=())
    register_backend(compiler, name="tagged", tags=("experimental",))     # same function again: fine


def test_registering_a_taken_name_is_an_error(clean_registry):
    with pytest.raises(ValueError, match="a backend named 'eager' is already registered"):
        register_backend(lambda gm, ex: gm.forward, name="eager")
    with pytest.raises(TypeError, match="must be callable"):
        register_backend("not a function", name="x")


def test_lookup_of_a_callable_returns_it():
    def backend(gm, example_inputs):
        return gm.forward
    assert lookup_backend(backend) is backend
    with pytest.raises(TypeError, match="backend must be a name or a callable"):
        lookup_backend(3)


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(InvalidBackend, match=r"Invalid backend: 'no_such_backend', see `dynjit.compiler"
                                             r".list_backends\(\)`.*known: .*aot_eager.*eager"):
        lookup_backend("no_such_backend")
    with pytest.raises(InvalidBackend, match="Invalid backend: 'no_such_backend'"):
        dynjit.compile(lambda x: x, backend="no_such_backend")


def test_failing_backend_raises_backend_compiler_failed(clean_registry):
    @register_backend
    def broken(gm, example_inputs):
        raise ValueError("cannot lower op sin")
    with pytest.raises(BackendCompilerFailed) as info:
        call_backend("broken", _graph(), [dynjit.randn(3)])
    err = info.value
    assert err.backend_name == "broken" and isinstance(err.inner_exception, ValueError)
    assert isinstance(err.__cause__, ValueError)
    assert str(err) == "backend='broken' raised:\nValueError: cannot lower op sin"

    @dynjit.compile(backend="broken")
    def f(x):
        return x.sin() * 2
    with pytest.raises(BackendCompilerFailed, match="backend='broken' raised:\nValueError: cannot lower op sin"):
        f(dynjit.randn(3))


def test_backend_returning_a_non_callable(clean_registry):
    with pytest.raises(BackendCompilerFailed, match="the backend returned int, which is not callable"):
        call_backend(lambda gm, ex: 42, _graph(), [dynjit.randn(3)])


def test_aot_eager_backend_trains_like_eager():
    def f(x, w):
        return (x @ w).tanh().sum()
    compiled = dynjit.compile(f, backend="aot_eager")
    x, w = dynjit.randn(4, 3), dynjit.randn(3, 2, requires_grad=True)
    w_ref = w.detach().clone().requires_grad_()
    compiled(x, w).backward()
    f(x, w_ref).backward()
    assert dynjit.allclose(w.grad, w_ref.grad)


def _docs_blocks():
    text = open(DOCS).read()
    return re.findall(r"```(\w+)\n(.*?)```", text, re.S)


def _plugin_sources():
    blocks = _docs_blocks()
    module = next(code for lang, code in blocks if lang == "python" and code.startswith('"""dynjit_nancheck'))
    entry_points = next(code for lang, code in blocks if lang == "ini")
    return module, entry_points


def test_docs_plugin_is_short():
    module, _ = _plugin_sources()
    assert len(module.strip().splitlines()) <= 30


def test_plugin_found_through_its_entry_point(tmp_path, monkeypatch, clean_registry):
    module, entry_points = _plugin_sources()
    (tmp_path / "dynjit_nancheck.py").write_text(module)
    dist = tmp_path / "dynjit_nancheck-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dynjit-nancheck\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "dynjit_nancheck", raising=False)

    assert "nancheck" in list_backends()
    backend = lookup_backend("nancheck")
    assert "dynjit_nancheck" not in __import__("sys").modules      # imported on first use only

    @dynjit.compile(backend="nancheck")
    def f(x):
        return (x.log() * 2).sum()
    assert dynjit.allclose(f(dynjit.tensor([1.0, 2.0])), dynjit.tensor(2.0).log() * 2)
    assert "dynjit_nancheck" in __import__("sys").modules
    with pytest.raises(FloatingPointError, match=r"log = log\(...\) gave a NaN or an infinity"):
        f(dynjit.tensor([1.0, -1.0]))
    gm = _graph()
    assert dynjit.allclose(backend(gm, [dynjit.ones(3)])(dynjit.ones(3)), gm(dynjit.ones(3)))


def test_broken_entry_point_says_which(tmp_path, monkeypatch, clean_registry):
    dist = tmp_path / "dynjit_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dynjit-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [dynjit.backends]
        broken_plugin = dynjit_missing_module:backend
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    backend = lookup_backend("broken_plugin")
    with pytest.raises(BackendCompilerFailed,
                       match=r"backend 'broken_plugin' \(entry point 'dynjit_missing_module:backend'\) "
                             r"failed to load: ModuleNotFoundError"):
        call_backend("broken_plugin", _graph(), [dynjit.ones(3)])
    with pytest.raises(InvalidBackend):
        backend(_graph(), [dynjit.ones(3)])

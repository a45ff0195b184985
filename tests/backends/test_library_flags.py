"""dynjit.backends holds torch.backends' library flags; the compiler registry moved to
dynjit.compiler and its old names under dynjit.backends still work with a DeprecationWarning."""
import subprocess
import sys
import warnings

import pytest

import dynjit
import dynjit.backends.cudnn as cudnn
from dynjit import compiler


def test_cudnn_flags_are_settable_and_unavailable(monkeypatch):
    assert dynjit.backends.cudnn is cudnn and cudnn.is_available() is False
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    monkeypatch.setattr(cudnn, "benchmark", True)
    dynjit.backends.cudnn.deterministic = True
    try:
        assert cudnn.benchmark is True and dynjit.backends.cudnn.deterministic is True
    finally:
        dynjit.backends.cudnn.deterministic = False


def test_cudnn_flags_context_restores():
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)


def test_other_library_flags():
    b = dynjit.backends
    assert b.cuda.matmul.allow_tf32 is False and b.cuda.is_built() is False
    b.cuda.matmul.allow_tf32 = True
    try:
        assert b.cuda.matmul.allow_tf32 is True
    finally:
        b.cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        b.cuda.matmul.allow_tf33 = True
    assert b.mkldnn.is_available() is False and b.mkldnn.enabled is True
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.opt_einsum.enabled is True and b.opt_einsum.strategy == "auto"
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        b.nonexistent


def test_flags_change_no_result():
    x, w = dynjit.randn(4, 3), dynjit.randn(3, 2)
    before = x @ w
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True, allow_tf32=True):
        dynjit.backends.cuda.matmul.allow_tf32 = True
        try:
            assert dynjit.equal(x @ w, before)
        finally:
            dynjit.backends.cuda.matmul.allow_tf32 = False


@pytest.mark.parametrize("name", ["list_backends", "register_backend", "lookup_backend", "call_backend"])
def test_old_registry_names_warn_and_are_the_same_objects(name):
    with pytest.warns(DeprecationWarning, match=f"dynjit.backends.{name} moved to dynjit.compiler.{name}"):
        old = getattr(dynjit.backends, name)
    assert old is getattr(compiler, name)


def test_old_import_form_warns():
    with pytest.warns(DeprecationWarning, match="moved to dynjit.compiler"):
        from dynjit.backends import list_backends
    assert list_backends() == compiler.list_backends()


def test_internal_registry_module_is_the_compiler_registry():
    from dynjit.backends import registry as old
    from dynjit.compiler import registry as new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("lookup_backend", "call_backend", "register_backend", "list_backends",
                     "contract_error", "ENTRY_POINT_GROUP"):
            assert getattr(old, name) is getattr(new, name)
    assert new.ENTRY_POINT_GROUP == "dynjit.backends"


def test_importing_dynjit_and_compiling_warns_nothing():
    code = ("import warnings; warnings.simplefilter('error'); import dynjit, dynjit.backends.cudnn; "
            "f = dynjit.compile(lambda x: x.sin() + 1, backend='aot_eager'); print(f(dynjit.ones(2)).sum().item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr

"""Compiler helpers for AOT autograd: `nop`, boxed calling convention."""


def make_boxed_func(f):
    """Wrap f(*args) so it is called as g(args_list) (the boxed convention)."""
    from ..fx.graph_module import GraphModule
    if isinstance(f, GraphModule) and f._in_spec is None:
        def g(args):             # straight to the generated code (the hot path of `nop`)
            return f._forward_fn(f, *args)
    else:
        def g(args):
            return f(*args)
    g._boxed_call = True
    return g


def make_boxed_compiler(compiler):
    """Turn compiler(gm, example_inputs) into one whose result uses the boxed convention."""
    def boxed_compiler(gm, example_inputs):
        out = compiler(gm, example_inputs)
        return out if getattr(out, "_boxed_call", False) else make_boxed_func(out)
    boxed_compiler.__name__ = getattr(compiler, "__name__", "boxed_compiler")
    return boxed_compiler


def _nop(gm, example_inputs):
    return gm


nop = make_boxed_compiler(_nop)


def call_compiled(fn, args):
    """Call a compiled function whichever calling convention it uses."""
    if getattr(fn, "_boxed_call", False):
        return fn(list(args))
    return fn(*args)

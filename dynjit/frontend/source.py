"""Sources: where a traced value came from (`L['x']`, `L['self'].weight`,
`G['w']`, `L['xs'][0]`). A source renders as a Python expression that the
generated guard and transformed functions evaluate, and it is how guards and
graph inputs name the user's values."""


class Source:
    def expr(self):
        raise NotImplementedError

    def __repr__(self):
        return self.expr()

    def __eq__(self, other):
        return type(self) is type(other) and self.expr() == other.expr()

    def __hash__(self):
        return hash(self.expr())


def local_name(name):
    """A local's name in generated Python: names that are not identifiers (3.11 comprehensions'
    `.0`, pytest's rewritten asserts' `@py_assert1`) are spelled as identifiers."""
    if name.isidentifier():
        return name
    return "___local_" + "".join(c if c.isalnum() or c == "_" else f"_{ord(c):x}_" for c in name)


class LocalSource(Source):
    """An argument of the compiled function (the generated functions take the same arguments)."""

    def __init__(self, name):
        self.name = name

    def expr(self):
        return local_name(self.name)


class GlobalSource(Source):
    def __init__(self, name):
        self.name = name

    def expr(self):
        return f"G[{self.name!r}]"


class GlobalsSource(Source):
    """The globals dict of the compiled function itself (`G` in generated code)."""

    def expr(self):
        return "G"


class ConstSource(Source):
    """An object stashed in the generated code's namespace (a function's closure cell, ...)."""

    def __init__(self, key):
        self.key = key

    def expr(self):
        return f"K[{self.key!r}]"


class AttrSource(Source):
    def __init__(self, base, attr):
        self.base = base
        self.attr = attr

    def expr(self):
        if self.attr.isidentifier() and not self.attr.startswith("__"):
            return f"{self.base.expr()}.{self.attr}"
        return f"getattr({self.base.expr()}, {self.attr!r})"


class ItemSource(Source):
    def __init__(self, base, key):
        self.base = base
        self.key = key

    def expr(self):
        return f"{self.base.expr()}[{self.key!r}]"


class ClosureCellSource(Source):
    """The cell object `fn.__closure__[index]` (its contents: AttrSource(this, "cell_contents"))."""

    def __init__(self, base, index):
        self.base = base
        self.index = index

    def expr(self):
        return f"{self.base.expr()}.__closure__[{self.index}]"


class DefaultSource(Source):
    def __init__(self, base, index, kw=False):
        self.base = base
        self.index = index
        self.kw = kw

    def expr(self):
        if self.kw:
            return f"{self.base.expr()}.__kwdefaults__[{self.index!r}]"
        return f"{self.base.expr()}.__defaults__[{self.index}]"


class CallSource(Source):
    """The result of a helper function applied to a source (e.g. an iterator's remaining items)."""

    def __init__(self, key, fn, base):
        self.key = key
        self.fn = fn
        self.base = base

    def expr(self):
        return f"K[{self.key!r}]({self.base.expr()})"

    def expr_with(self, guards):
        guards.output.consts[self.key] = self.fn
        return self.expr()


class ObjectKey:
    """A dict key that is an object (a tensor, a module), as the tracer keeps it: equal by
    identity, like the object itself as a key; rendered as the stashed constant."""

    def __init__(self, obj, stash_name):
        self.obj = obj
        self.name = stash_name

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, ObjectKey) and other.obj is self.obj

    def __repr__(self):
        return f"K[{self.name!r}]"


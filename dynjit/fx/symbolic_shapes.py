"""Symbolic sizes while AOT autograd traces: one trace that serves every batch size.

The trace still runs on real values (dynjit.fx.proxy_tensor), but a `ShapeEnv` tells which
sizes are *symbols* (s0, s1, ...): chosen dimensions of the input tensors, and int inputs
that decide shapes. Each symbol is a traced number (dynjit.fx.traced_number) whose node is a
graph input, so:

- reading a size (`x.shape[0]`, `x.size(1)`, `x.numel()`, a derivative's saved input shape)
  gives a traced number, and arithmetic on it records `operator.*` nodes that the graph
  computes from the symbols' inputs; its value as an expression over the symbols is a
  `Poly` (a polynomial with integer coefficients), kept as the node's `meta["sym"]`;
- an op given such a number (`x.view(b * t, -1)`, `grad.expand(self_shape)`) records it as
  an argument instead of specializing it;
- a comparison of sizes (`if n == 1`, `s0 >= 2`) is a *guard*: the relation the trace
  assumed, checked before the graph is reused for other sizes (not a specialization);
- a use that needs the value (`int(n)`, `range(n)`, numpy called with it) *pins* its
  symbols: a guard `s == value`, so the graph holds for that size only.

What an op's result's symbolic shape is comes from its meta function: the meta is run at
the real sizes and at two other assignments of the symbols, and each output dimension is
matched against the expressions at hand (input sizes, their products and numels, the size
arguments). An op whose meta rejects other sizes tells which symbols it ties: a symbol that
must equal another (the inner sizes of a matmul) is unified with it, one that must equal a
constant is pinned. A dimension no expression explains is unknown; reading it pins every
symbol (`give_up`). Sizes 0 and 1 are never symbols. An input's size that shares a symbol
with an equal size (duck sizing) is read from a graph input of its own (`dim_number`), so
that each (tensor, dim) has its node, as PyTorch's sym_size nodes: the partitioners save it
as `sym_size_int(x, d)` (dynjit.aot.partition).
"""
import operator
import threading

from .traced_number import TracedNumber, _state

_RELATIONS = {operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=",
              operator.gt: ">", operator.ge: ">="}


class Poly:
    """A size as a polynomial over the symbols: {monomial (sorted symbol ids): coefficient}."""
    __slots__ = ("terms", "key")

    def __init__(self, terms):
        self.terms = {m: c for m, c in terms.items() if c}
        self.key = tuple(sorted(self.terms.items()))

    @staticmethod
    def const(c):
        return Poly({(): c})

    @staticmethod
    def sym(k):
        return Poly({(k,): 1})

    def is_const(self):
        return all(not m for m in self.terms)

    def const_value(self):
        return self.terms.get((), 0)

    def symbols(self):
        return {k for m in self.terms for k in m}

    def __add__(self, other):
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    def __neg__(self):
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        return self + (-other)

    def __mul__(self, other):
        terms = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    def exact_div(self, other):
        """self / other when other is one term dividing every term of self, else None."""
        if len(other.terms) != 1:
            return None
        (m2, c2), = other.terms.items()
        if c2 == 0:
            return None
        terms = {}
        for m, c in self.terms.items():
            rest = list(m)
            for k in m2:
                if k not in rest:
                    return None
                rest.remove(k)
            if c % c2:
                return None
            terms[tuple(rest)] = c // c2
        return Poly(terms)

    def evaluate(self, values):
        total = 0
        for m, c in self.terms.items():
            v = c
            for k in m:
                v *= values[k]
            total += v
        return total

    def __eq__(self, other):
        return isinstance(other, Poly) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __str__(self):
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
            names = "*".join(f"s{k}" for k in m)
            if not names:
                parts.append(str(c))
            elif c == 1:
                parts.append(names)
            elif c == -1:
                parts.append("-" + names)
            else:
                parts.append(f"{c}*{names}")
        return " + ".join(parts).replace("+ -", "- ")

    __repr__ = __str__


def poly_of(value):
    """The Poly of an int or a traced number with one, else None."""
    t = type(value)
    if t is int:
        return Poly.const(value)
    if t is TracedNumber:
        return value._node.meta.get("sym") if value._node is not None else None
    return None


_ARITHMETIC = {operator.add: lambda a, b: a + b, operator.sub: lambda a, b: a - b,
               operator.mul: lambda a, b: a * b}


def poly_result(fn, args):
    """The Poly of fn(*args) for size arithmetic (args: Polys or None), or None."""
    if any(a is None for a in args):
        return None
    if len(args) == 1:
        if fn is operator.neg:
            return -args[0]
        if fn is operator.pos:
            return args[0]
        return None
    a, b = args
    f = _ARITHMETIC.get(fn)
    if f is not None:
        return f(a, b)
    if fn is operator.floordiv and b.is_const() and b.const_value() > 0:
        return a.exact_div(b)
    return None


class Symbol:
    __slots__ = ("name", "hint", "sources", "number")

    def __init__(self, name, hint, sources, number):
        self.name, self.hint, self.sources, self.number = name, hint, sources, number


class NotSymbolic(Exception):
    """The symbolic trace cannot go on; the caller traces again with concrete sizes."""


class ShapeEnv:
    """The symbols, guards and symbolic tensor shapes of one trace (see the module docstring)."""

    def __init__(self, numbers):
        self.numbers = numbers          # the trace's NumberTracing
        numbers.shape_env = self
        self.symbols = []
        self.replacements = {}          # symbol id -> the Poly it equals (unified or pinned)
        self.guards = []                # (relation, lhs Poly, rhs Poly, result)
        self._guard_keys = set()
        self.shapes = {}                # id(tensor) -> (tensor, tuple of Poly or None)
        self._numbers = {}              # Poly key -> traced number
        self.pinned = {}                # symbol id -> why its value was needed
        self.dim_numbers = {}           # id(input tensor) -> (tensor, {dim: (symbol id, number)})
        self.gave_up = None

    # -- symbols -----------------------------------------------------------------------
    def add_symbol(self, hint, node, sources):
        """A new symbol whose value is `hint` now and the value of graph input `node` later;
        `sources` say where a call's value is read: ("dim", leaf, d) or ("leaf", leaf)."""
        k = len(self.symbols)
        number = TracedNumber(hint, node, self.numbers, frozenset((("sym", k),)))
        node.meta["val"] = hint
        node.meta["sym"] = Poly.sym(k)
        self.symbols.append(Symbol(f"s{k}", hint, list(sources), number))
        self._numbers[Poly.sym(k).key] = number
        return k

    def dim_number(self, k, node, tensor, d):
        """Size `d` of input `tensor` is symbol k, shared with other sizes of equal value (duck
        sizing) but read from graph input `node` of its own, so that each (tensor, dim) has
        its own node, as PyTorch's sym_size: what `tensor.size(d)` gives from now on."""
        number = TracedNumber(self.symbols[k].hint, node, self.numbers, frozenset((("sym", k),)))
        node.meta["val"] = self.symbols[k].hint
        node.meta["sym"] = Poly.sym(k)
        self.dim_numbers.setdefault(id(tensor), (tensor, {}))[1][d] = (k, number)
        return number

    def hints(self):
        return {k: s.hint for k, s in enumerate(self.symbols)}

    def norm(self, p):
        for _ in range(len(self.symbols) + 1):
            if not (p.symbols() & self.replacements.keys()):
                return p
            out = Poly.const(0)
            for m, c in p.terms.items():
                term = Poly.const(c)
                for k in m:
                    term = term * (self.replacements[k] if k in self.replacements else Poly.sym(k))
                out = out + term
            p = out
        return p

    def free(self, p):
        return self.norm(p).symbols()

    # -- guards ------------------------------------------------------------------------
    def guard(self, fn, lhs, rhs):
        """Decide `lhs fn rhs` (Polys) with the real sizes, and record it as a guard."""
        lhs, rhs = self.norm(lhs), self.norm(rhs)
        hints = self.hints()
        result = fn(lhs.evaluate(hints), rhs.evaluate(hints))
        if lhs.is_const() and rhs.is_const():
            return result
        key = (fn, lhs.key, rhs.key)
        if key not in self._guard_keys:
            self._guard_keys.add(key)
            self.guards.append((fn, lhs, rhs, bool(result)))
            if fn is operator.eq and result:
                self._replace(lhs, rhs)
        return result

    def _replace(self, lhs, rhs):
        for a, b in ((lhs, rhs), (rhs, lhs)):
            if len(a.terms) == 1 and a.key[0][1] == 1 and len(a.key[0][0]) == 1:
                k = a.key[0][0][0]
                if k not in b.symbols():
                    self.replacements[k] = b
                    return

    def pin(self, k, why):
        """Symbol k's value is needed (int(), range(), numpy): a guard that it keeps it."""
        if k in self.pinned:
            return
        self.pinned[k] = why
        self.guard(operator.eq, Poly.sym(k), Poly.const(self.symbols[k].hint))

    def give_up(self, why):
        if self.gave_up is None:
            self.gave_up = why
        for k in range(len(self.symbols)):
            self.pin(k, why)

    def check(self, values):
        """Do a call's symbol values (symbol id -> value) satisfy every guard?"""
        for fn, lhs, rhs, result in self.guards:
            if bool(fn(lhs.evaluate(values), rhs.evaluate(values))) != result:
                return False
        return True

    def describe_guards(self):
        return [f"{lhs} {_RELATIONS.get(fn, fn)} {rhs}" if result else f"not ({lhs} {_RELATIONS.get(fn, fn)} {rhs})"
                for fn, lhs, rhs, result in self.guards]

    # -- sizes as traced numbers ---------------------------------------------------------
    def number_for(self, p):
        """An int for a constant Poly, else a traced number computing it from the symbols."""
        p = self.norm(p)
        if p.is_const():
            return p.const_value()
        number = self._numbers.get(p.key)
        if number is not None:
            return number
        total = None
        for m, c in sorted(p.terms.items()):
            term = None
            for k in m:
                s = self.symbols[k].number
                term = s if term is None else term * s
            if term is None:
                term = c
            elif c != 1:
                term = term * c
            total = term if total is None else total + term
        self._numbers[p.key] = total
        return total

    def set_shape(self, tensor, polys):
        self.shapes[id(tensor)] = (tensor, polys)

    def shape_of(self, tensor):
        """The symbolic shape of a tracked tensor: a tuple of Polys (None for an unknown size),
        or None when the trace has no record of it."""
        entry = self.shapes.get(id(tensor))
        if entry is None or entry[0] is not tensor:
            return None
        return entry[1]

    def size_of(self, tensor):
        """What `tensor.shape` gives during the trace: ints and traced numbers."""
        shape = self.shape_of(tensor)
        if shape is None:
            return tuple(tensor._data.shape)
        if any(p is None for p in shape):
            self.give_up("a size that no expression over the symbols explains was read")
            return tuple(tensor._data.shape)
        own = self.dim_numbers.get(id(tensor))
        own = own[1] if own is not None and own[0] is tensor else {}
        # a dim with a number of its own, while it still is that symbol (not pinned, not moved)
        return tuple(own[d][1] if d in own and not self.norm(p).is_const()
                     and self.norm(p) == self.norm(Poly.sym(own[d][0]))
                     else self.number_for(p) for d, p in enumerate(shape))

    def sym_strs(self, polys):
        return tuple("?" if p is None else str(self.norm(p)) for p in polys)

    # -- shapes of op results --------------------------------------------------------------
    def infer(self, op, args, kwargs, result):
        """Record the symbolic shapes of an op's result tensors (see the module docstring)."""
        from ..tensor import Tensor
        outs = [r for r in (result if isinstance(result, (tuple, list)) else (result,)) if isinstance(r, Tensor)]
        if not outs:
            return None
        inputs = []
        _collect_tensors((args, kwargs), inputs)
        input_ids = {id(t) for t in inputs}
        outs = [o for o in outs if id(o) not in input_ids]      # in-place: keeps its shape
        if not outs:
            return None
        polys, unknown = [], False
        for t in inputs:
            s = self.shape_of(t)
            if s is None:
                s = tuple(Poly.const(n) for n in t._data.shape)
            if any(p is None for p in s):
                unknown = True
            else:
                polys.extend(s)
        numbers = []
        _collect_numbers((args, kwargs), numbers)
        for n in numbers:
            p = poly_of(n)
            if p is not None:
                polys.append(p)
        free = set()
        for p in polys:
            free |= self.free(p)
        if unknown:
            return self._set_unknown(outs)
        if not free:
            for o in outs:
                self.set_shape(o, tuple(Poly.const(n) for n in o._data.shape))
            return outs
        return self._infer_with_meta(op, args, kwargs, outs, inputs, polys, sorted(free))

    def _set_unknown(self, outs):
        for o in outs:
            self.set_shape(o, tuple(None for _ in o._data.shape))
        return outs

    def _point(self, free, perturbed, which):
        """Symbol values with the `perturbed` symbols moved away from their hints (two
        different assignments, `which` 1 or 2), the others at their hints."""
        values = self.hints()
        for i, k in enumerate(free):
            if k in perturbed:
                h = values[k]
                values[k] = h + 101 + 7 * i if which == 1 else 2 * h + 211 + 13 * i
        for k in self.replacements:
            values[k] = self.replacements[k].evaluate(values)
        for k in self.replacements:     # replacements of replacements
            values[k] = self.norm(self.replacements[k]).evaluate(values)
        return values

    def _meta_shapes(self, op, args, kwargs, values):
        from ..ops.meta import TensorMeta as MetaT
        from ..tensor import Tensor

        def conv(a):
            if isinstance(a, Tensor):
                s = self.shape_of(a)
                shape = a._data.shape if s is None else tuple(self.norm(p).evaluate(values) for p in s)
                return MetaT(shape, a.dtype)
            if type(a) is TracedNumber:
                p = poly_of(a)
                return self.norm(p).evaluate(values) if p is not None else a._value
            if type(a) in (list, tuple):
                return type(a)(conv(v) for v in a)
            if type(a) is dict:
                return {k: conv(v) for k, v in a.items()}
            return a
        res = op.meta(conv(tuple(args)), conv(dict(kwargs or {})))
        if isinstance(res, list):
            return [tuple(r[0]) for r in res if r is not None and r[0] is not None]
        return [tuple(res[0])]

    def _try(self, op, args, kwargs, values):
        try:
            return self._meta_shapes(op, args, kwargs, values)
        except Exception:
            return None

    def _infer_with_meta(self, op, args, kwargs, outs, inputs, polys, free):
        actual = [tuple(o._data.shape) for o in outs]
        at_hint = self._try(op, args, kwargs, self.hints())
        if at_hint is None or len(at_hint) < len(outs):
            return self._set_unknown(outs)
        at_hint = at_hint[:len(outs)] if len(at_hint) == len(outs) else \
            [s for s in at_hint if len(s) in {len(a) for a in actual}][:len(outs)]
        if [tuple(s) for s in at_hint] != actual:
            return self._set_unknown(outs)
        perturbed = set(free)
        p1 = self._try(op, args, kwargs, self._point(free, perturbed, 1))
        if p1 is None:
            self._discover_ties(op, args, kwargs, free)
            free = sorted({k for p in polys for k in self.free(p)})
            if not free:
                for o in outs:
                    self.set_shape(o, tuple(Poly.const(n) for n in o._data.shape))
                return outs
            perturbed = set(free)
            p1 = self._try(op, args, kwargs, self._point(free, perturbed, 1))
            if p1 is None:
                return self._set_unknown(outs)
        v1 = self._point(free, perturbed, 1)
        v2 = self._point(free, perturbed, 2)
        p2 = self._try(op, args, kwargs, v2)
        if p2 is None or len(p1) < len(outs) or len(p2) < len(outs):
            return self._set_unknown(outs)
        points = (self.hints(), v1, v2)
        vocab = self._vocabulary(inputs, polys)
        for j, o in enumerate(outs):
            if len(p1[j]) != len(actual[j]) or len(p2[j]) != len(actual[j]):
                self._set_unknown([o])
                continue
            dims = []
            for d in range(len(actual[j])):
                dims.append(self._fit((actual[j][d], p1[j][d], p2[j][d]), vocab, points, dims, inputs))
            self.set_shape(o, tuple(dims))
        return outs

    def _discover_ties(self, op, args, kwargs, free):
        """The op rejects other sizes: find the symbols it ties (to another symbol of the same
        value: unified; to a constant: pinned)."""
        bad = [k for k in free if self._try(op, args, kwargs, self._point(free, {k}, 1)) is None]
        for k in bad:
            if k in self.replacements:
                continue
            partner = None
            for j in free:
                if j != k and j not in self.replacements and self.symbols[j].hint == self.symbols[k].hint:
                    values = self._point(free, {k, j}, 1)
                    values[j] = values[k]
                    if self._try(op, args, kwargs, values) is not None:
                        partner = j
                        break
            if partner is not None:
                self.guard(operator.eq, Poly.sym(partner), Poly.sym(k))
            else:
                self.pin(k, f"the sizes {op.name} accepts")

    def _vocabulary(self, inputs, polys):
        vocab = []
        seen = set()

        def add(p):
            p = self.norm(p)
            if not p.is_const() and p.key not in seen:
                seen.add(p.key)
                vocab.append(p)
        for p in polys:
            add(p)
        singles = list(vocab)
        for t in inputs:
            s = self.shape_of(t)
            if s is not None and all(p is not None for p in s):
                n = Poly.const(1)
                for p in s:
                    n = n * p
                add(n)
        if len(singles) <= 12:
            for i, a in enumerate(singles):
                for b in singles[i:]:
                    add(a * b)
        return vocab

    def _fit(self, values, vocab, points, dims_so_far, inputs):
        h, a, b = values
        if h == a == b:
            return Poly.const(h)
        if h in (0, 1):
            return None

        def matches(p):
            return all(self.norm(p).evaluate(pt) == v for pt, v in zip(points, values))
        for p in vocab:
            if matches(p):
                return p
        hints = points[0]
        for p in vocab:
            ph = p.evaluate(hints)
            if ph and h % ph == 0 and matches(p * Poly.const(h // ph)):
                return p * Poly.const(h // ph)
            if h and ph % h == 0:
                q = p.exact_div(Poly.const(ph // h))
                if q is not None and matches(q):
                    return q
        # a reshape's inferred size: some numel over the product of the other sizes
        known = Poly.const(1)
        for p in dims_so_far:
            if p is None:
                return None
            known = known * p
        for p in vocab:
            q = p.exact_div(known) if len(known.terms) == 1 else None
            if q is not None and matches(q):
                return q
        for p in vocab:
            for r in vocab:
                q = p.exact_div(r)
                if q is not None and not q.is_const() and matches(q):
                    return q
        return None


def _collect_tensors(value, out):
    from ..tensor import Tensor
    if isinstance(value, Tensor):
        out.append(value)
    elif type(value) in (list, tuple) or (isinstance(value, tuple)):
        for v in value:
            _collect_tensors(v, out)
    elif type(value) is dict:
        for v in value.values():
            _collect_tensors(v, out)


def _collect_numbers(value, out):
    if type(value) is TracedNumber:
        out.append(value)
    elif type(value) in (list, tuple) or isinstance(value, tuple):
        for v in value:
            _collect_numbers(v, out)
    elif type(value) is dict:
        for v in value.values():
            _collect_numbers(v, out)
    elif type(value) is slice:
        for v in (value.start, value.stop, value.step):
            _collect_numbers(v, out)


# -- Tensor.shape and friends during a symbolic trace -------------------------------------

def sym_size_int(tensor, dim):
    """Size `dim` of `tensor` (PyTorch's aten.sym_size.int): how a partitioned forward graph
    computes a size its backward needs, from an input tensor, to save it (dynjit.aot.partition)."""
    return tensor.size(dim)


class _Active(threading.local):
    def __init__(self):
        self.env = None


_active = _Active()
_patch_lock = threading.Lock()
_patch_users = 0
_originals = {}


def _sym_shape(self):
    env = _active.env
    if env is None or _state.in_op:
        return _originals["shape"].fget(self)
    from ..tensor import Size
    return Size(env.size_of(self))


def _sym_size(self, dim=None):
    env = _active.env
    if env is None or _state.in_op:
        return _originals["size"](self, dim)
    from ..tensor import Size, _wrap_dim
    sizes = env.size_of(self)
    if dim is None:
        return Size(sizes)
    return sizes[_wrap_dim(dim, self._data.ndim)]


def _sym_numel(self):
    env = _active.env
    if env is None or _state.in_op:
        return _originals["numel"](self)
    shape = env.shape_of(self)
    if shape is None:
        return self._data.size
    if any(p is None for p in shape):
        env.give_up("the number of elements of a tensor of unknown size was read")
        return self._data.size
    n = Poly.const(1)
    for p in shape:
        n = n * p
    return env.number_for(n)


def _sym_len(self):
    env = _active.env
    if env is not None and not _state.in_op and self._data.ndim:
        shape = env.shape_of(self)
        if shape is not None and (shape[0] is None or not env.norm(shape[0]).is_const()):
            # len() must return a plain int: the size is pinned
            size = env.size_of(self)[0]
            if type(size) is TracedNumber:
                env.numbers.specialize(size, "len()")
    return _originals["len"](self)


class symbolic_sizes:
    """Within this block (on this thread), tensor sizes are read through `env`."""

    def __init__(self, env):
        self.env = env

    def __enter__(self):
        global _patch_users
        from ..tensor import Tensor
        with _patch_lock:
            if _patch_users == 0:
                _originals.update(shape=Tensor.__dict__["shape"], size=Tensor.__dict__["size"],
                                  numel=Tensor.__dict__["numel"], len=Tensor.__dict__["__len__"])
                Tensor.shape = property(_sym_shape)
                Tensor.size = _sym_size
                Tensor.numel = Tensor.nelement = _sym_numel
                Tensor.__len__ = _sym_len
            _patch_users += 1
        self.prev = _active.env
        _active.env = self.env
        return self.env

    def __exit__(self, *exc):
        global _patch_users
        from ..tensor import Tensor
        _active.env = self.prev
        with _patch_lock:
            _patch_users -= 1
            if _patch_users == 0:
                Tensor.shape = _originals["shape"]
                Tensor.size = _originals["size"]
                Tensor.numel = Tensor.nelement = _originals["numel"]
                Tensor.__len__ = _originals["len"]
        return False


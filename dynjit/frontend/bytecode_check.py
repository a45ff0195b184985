"""A verifier for generated code objects: reject anything that could crash CPython.

`verify(code)` is an abstract interpreter over the code object's real
instructions (decoded from `co_code` exactly as `dis` does, CACHE entries and
EXTENDED_ARG folded in) and its exception table. It walks every reachable
path (a worklist over instructions, states merged at join points) and tracks:

* the stack, one *kind* per slot: VALUE, NULL (PUSH_NULL, the NULL of
  LOAD_GLOBAL's low bit) or MAYBE_NULL (the method forms of LOAD_ATTR /
  LOAD_METHOD / LOAD_SUPER_ATTR, LOAD_FAST_AND_CLEAR of a local not
  definitely bound); only the designated slot of a call may hold a NULL,
  only STORE_FAST (and the 3.13 store superinstructions) may consume a
  MAYBE_NULL of LOAD_FAST_AND_CLEAR, every other consumer needs a VALUE.
  SWAP moves kinds, COPY needs a VALUE. A return leaves an empty stack.
  The depth never goes below 0 or above co_stacksize and is the same from
  every predecessor at a join (differing kinds merge to MAYBE_NULL);
* the definitely bound locals (a bit set over "fast locals plus" slots:
  arguments at entry, STORE_FAST of a VALUE binds, DELETE_FAST and
  LOAD_FAST_AND_CLEAR unbind, intersection at joins). On 3.12+ a plain
  LOAD_FAST (and the loads of LOAD_FAST_LOAD_FAST / STORE_FAST_LOAD_FAST)
  of a local that is not definitely bound would push a NULL: rejected.
  Cells exist once MAKE_CELL / COPY_FREE_VARS ran; *_DEREF needs one.

It also checks jump targets (instruction starts of this code), that no path
falls off the end, the exception table (sorted, in range, handler depth at
most the depth at every covered reachable instruction, handler entered with
depth + 1, + 2 with lasti), const / name / local indexes, and a few pairing
rules the interpreter relies on (3.11 PRECALL then CALL, KW_NAMES before a
call with enough arguments, 3.12+ FOR_ITER jumping to END_FOR).

Every opcode must be in the running version's table (3.11, 3.12 and 3.13 are
listed explicitly in `_VERSIONS`; all per-version differences live there);
anything else is rejected, as is any other Python version.

Speed: `dis.get_instructions` alone costs several microseconds per
instruction, so co_code is decoded here (tests check it agrees with dis);
each (opcode, arg) pair's rule is resolved once and cached (`_RESOLVED`,
independent of any code object; nothing is cached per code object), and
straight-line code runs in place, states being stored and merged only at
jump and handler targets. About 0.3-0.4 ms for 300 instructions.
"""
import dis
import sys

__all__ = ["InvalidBytecode", "verify", "VALUE", "NULL", "MAYBE_NULL"]


class InvalidBytecode(Exception):
    """A code object that could crash or corrupt the interpreter."""


VALUE, NULL, MAYBE_NULL = 0, 1, 2
_KIND_NAME = ("a value", "NULL", "a maybe-NULL")


# --------------------------------------------------------------------------
# Rule forms. A rule is a tuple (form, a, b, check):
#   ("g", pops, peek, check)    generic: `pops` (int or f(arg)) slots are consumed and must
#                               be VALUEs; pushes = pops + dis.stack_effect VALUEs; `peek`
#                               (None or f(arg)): that slot from the top (before popping)
#                               is read in place and must be a VALUE
#   ("push", pops, kinds, chk)  pops VALUEs, pushes the kinds tuple kinds(arg) (bottom first)
#   ("call", npop, free, keep)  a call: npop(arg) slots must be VALUEs except slot `free`
#                               (counted from the bottom of those slots) which may hold
#                               anything (the NULL|callable / NULL|self slot); result VALUE.
#                               keep: check the layout only (3.11 PRECALL)
#   ("local", op)               fast-local instructions, see _step_local
#   ("for", skip)               3.12+ FOR_ITER: exhausted, it pops the iterator and jumps
#                               `skip` instructions past its target, which must be END_FOR
# `check` (generic / push rules): None, or ("const"|"name", f(arg) -> index), or
# ("cell", f) (a slot that must hold a cell), or ("pred", f(arg) -> bool, what).
# --------------------------------------------------------------------------

def _g(pops, peek=None, check=None):
    return ("g", pops, peek, check)


def _push(pops, kinds, check=None):
    return ("push", pops, kinds, check)


def _call(npop, free, keep=False):
    return ("call", npop, free, keep)


def _ident(a):
    return a


def _const(f=_ident):
    return ("const", f)


def _name(f=_ident):
    return ("name", f)


def _cell():
    return ("cell", _ident)


def _pred(f, what):
    return ("pred", f, what)


_NB_OPS = len(getattr(dis, "_nb_ops", ())) or 26

# Instructions with the same meaning on 3.11, 3.12 and 3.13.
_COMMON = {
    "NOP": _g(0), "RESUME": _g(0), "EXTENDED_ARG": _g(0),
    "POP_TOP": _g(1),
    "PUSH_NULL": _push(0, lambda a: (NULL,)),
    "COPY": ("copy", None, None, None),
    "SWAP": ("swap", None, None, None),
    "UNARY_NEGATIVE": _g(1), "UNARY_NOT": _g(1), "UNARY_INVERT": _g(1),
    "BINARY_OP": _g(2, check=_pred(lambda a: 0 <= a < _NB_OPS, "binary operator")),
    "BINARY_SUBSCR": _g(2), "STORE_SUBSCR": _g(3), "DELETE_SUBSCR": _g(2),
    "GET_ITER": _g(1), "GET_YIELD_FROM_ITER": _g(1), "GET_LEN": _g(1),
    "GET_AWAITABLE": _g(1), "GET_AITER": _g(1), "GET_ANEXT": _g(1),
    "LOAD_BUILD_CLASS": _g(0), "LOAD_ASSERTION_ERROR": _g(0),
    "RETURN_VALUE": _g(1),
    "RETURN_GENERATOR": _push(0, lambda a: (VALUE,)),   # resumed with the sent value pushed
    "YIELD_VALUE": _g(1),
    "SEND": _g(2),
    "SETUP_ANNOTATIONS": _g(0),
    "POP_EXCEPT": _g(1),
    "RERAISE": _g(1, peek=lambda a: a + 1 if a else None),
    "PUSH_EXC_INFO": _g(1),
    "CHECK_EXC_MATCH": _g(2), "CHECK_EG_MATCH": _g(2),
    "WITH_EXCEPT_START": _g(4),
    "BEFORE_WITH": _g(1), "BEFORE_ASYNC_WITH": _g(1), "END_ASYNC_FOR": _g(2),
    "STORE_NAME": _g(1, check=_name()), "DELETE_NAME": _g(0, check=_name()),
    "LOAD_NAME": _g(0, check=_name()),
    "STORE_ATTR": _g(2, check=_name()), "DELETE_ATTR": _g(1, check=_name()),
    "STORE_GLOBAL": _g(1, check=_name()), "DELETE_GLOBAL": _g(0, check=_name()),
    "IMPORT_NAME": _g(2, check=_name()), "IMPORT_FROM": _g(1, check=_name()),
    "LOAD_CONST": _g(0, check=_const()),
    "UNPACK_SEQUENCE": _g(1), "UNPACK_EX": _g(1),
    "BUILD_TUPLE": _g(_ident), "BUILD_LIST": _g(_ident), "BUILD_SET": _g(_ident),
    "BUILD_MAP": _g(lambda a: 2 * a), "BUILD_CONST_KEY_MAP": _g(lambda a: a + 1),
    "BUILD_STRING": _g(_ident),
    "BUILD_SLICE": _g(_ident, check=_pred(lambda a: a in (2, 3), "slice arity")),
    "LIST_APPEND": _g(1, peek=lambda a: a + 1), "SET_ADD": _g(1, peek=lambda a: a + 1),
    "LIST_EXTEND": _g(1, peek=lambda a: a + 1), "SET_UPDATE": _g(1, peek=lambda a: a + 1),
    "DICT_UPDATE": _g(1, peek=lambda a: a + 1), "DICT_MERGE": _g(1, peek=lambda a: a + 1),
    "MAP_ADD": _g(2, peek=lambda a: a + 2),
    "IS_OP": _g(2), "CONTAINS_OP": _g(2),
    "JUMP_FORWARD": _g(0), "JUMP_BACKWARD": _g(0), "JUMP_BACKWARD_NO_INTERRUPT": _g(0),
    "RAISE_VARARGS": _g(_ident, check=_pred(lambda a: 0 <= a <= 2, "raise form")),
    "MATCH_CLASS": _g(3), "MATCH_MAPPING": _g(1), "MATCH_SEQUENCE": _g(1), "MATCH_KEYS": _g(2),
    "LOAD_DEREF": _g(0, check=_cell()), "STORE_DEREF": _g(1, check=_cell()),
    "DELETE_DEREF": _g(0, check=_cell()),
    "MAKE_CELL": ("local", "MAKE_CELL"), "COPY_FREE_VARS": ("local", "COPY_FREE_VARS"),
    "LOAD_FAST": ("local", "LOAD_FAST"), "STORE_FAST": ("local", "STORE_FAST"),
    "DELETE_FAST": ("local", "DELETE_FAST"),
}

_CALL_NULL_FIRST = _call(lambda a: a + 2, 0)             # [NULL|callable, callable|self, args...]
_CALL_NULL_SECOND = _call(lambda a: a + 2, 1)            # [callable, NULL|self, args...]
_POP_JUMPS = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")

# Everything that differs between versions, in one place.
_VERSIONS = {
    (3, 11): {
        "load_fast_checks": True,          # LOAD_FAST raises UnboundLocalError by itself
        "for_iter_skip": None,             # FOR_ITER jumps straight past the loop
        "kw_names_call": "PRECALL",        # KW_NAMES is followed by this instruction
        "ops": {
            "LOAD_GLOBAL": _push(0, lambda a: (NULL, VALUE) if a & 1 else (VALUE,), _name(lambda a: a >> 1)),
            "LOAD_ATTR": _g(1, check=_name()),
            "LOAD_METHOD": _push(1, lambda a: (MAYBE_NULL, VALUE), _name()),
            "PRECALL": _call(lambda a: a + 2, 0, keep=True),
            "CALL": _CALL_NULL_FIRST,
            "CALL_FUNCTION_EX": _call(lambda a: 3 + (a & 1), 0),   # [NULL, func, args, kwargs?]
            "KW_NAMES": _g(0, check=_const()),
            "FOR_ITER": _g(1),
            "COMPARE_OP": _g(2, check=_pred(lambda a: 0 <= a < len(dis.cmp_op), "comparison")),
            "FORMAT_VALUE": _g(lambda a: 2 if a & 4 else 1),
            "MAKE_FUNCTION": _g(lambda a: 1 + bin(a & 0xF).count("1")),
            "LOAD_CLOSURE": _g(0, check=_cell()), "LOAD_CLASSDEREF": _g(0, check=_cell()),
            "UNARY_POSITIVE": _g(1), "PRINT_EXPR": _g(1), "IMPORT_STAR": _g(1),
            "ASYNC_GEN_WRAP": _g(1), "LIST_TO_TUPLE": _g(1), "PREP_RERAISE_STAR": _g(2),
            "JUMP_IF_FALSE_OR_POP": _g(1), "JUMP_IF_TRUE_OR_POP": _g(1),
            "POP_JUMP_FORWARD_IF_FALSE": _g(1), "POP_JUMP_FORWARD_IF_TRUE": _g(1),
            "POP_JUMP_FORWARD_IF_NONE": _g(1), "POP_JUMP_FORWARD_IF_NOT_NONE": _g(1),
            "POP_JUMP_BACKWARD_IF_FALSE": _g(1), "POP_JUMP_BACKWARD_IF_TRUE": _g(1),
            "POP_JUMP_BACKWARD_IF_NONE": _g(1), "POP_JUMP_BACKWARD_IF_NOT_NONE": _g(1),
        },
    },
    (3, 12): {
        "load_fast_checks": False,         # LOAD_FAST of an unbound local pushes NULL
        "for_iter_skip": 1,                # exhausted: skips the END_FOR at its target
        "kw_names_call": "CALL",
        "ops": {
            "LOAD_GLOBAL": _push(0, lambda a: (NULL, VALUE) if a & 1 else (VALUE,), _name(lambda a: a >> 1)),
            "LOAD_ATTR": _push(1, lambda a: (MAYBE_NULL, VALUE) if a & 1 else (VALUE,), _name(lambda a: a >> 1)),
            "LOAD_SUPER_ATTR": _push(3, lambda a: (MAYBE_NULL, VALUE) if a & 1 else (VALUE,),
                                     _name(lambda a: a >> 2)),
            "CALL": _CALL_NULL_FIRST,
            "CALL_FUNCTION_EX": _call(lambda a: 3 + (a & 1), 0),   # [NULL, func, args, kwargs?]
            "KW_NAMES": _g(0, check=_const()),
            "FOR_ITER": ("for", 1, None, None),
            "END_FOR": _g(2),
            "COMPARE_OP": _g(2, check=_pred(lambda a: 0 <= a >> 4 < len(dis.cmp_op), "comparison")),
            "FORMAT_VALUE": _g(lambda a: 2 if a & 4 else 1),
            "MAKE_FUNCTION": _g(lambda a: 1 + bin(a & 0xF).count("1")),
            "LOAD_CLOSURE": _g(0, check=_cell()), "LOAD_FROM_DICT_OR_DEREF": _g(1, check=_cell()),
            "LOAD_FROM_DICT_OR_GLOBALS": _g(1, check=_name()), "LOAD_LOCALS": _g(0),
            "LOAD_FAST_CHECK": ("local", "LOAD_FAST_CHECK"),
            "LOAD_FAST_AND_CLEAR": ("local", "LOAD_FAST_AND_CLEAR"),
            "RETURN_CONST": _g(0, check=_const()),
            "CALL_INTRINSIC_1": _g(1), "CALL_INTRINSIC_2": _g(2),
            "BINARY_SLICE": _g(3), "STORE_SLICE": _g(4),
            "END_SEND": _g(2), "CLEANUP_THROW": _g(3),
            **{name: _g(1) for name in _POP_JUMPS},
        },
    },
    (3, 13): {
        "load_fast_checks": False,
        "for_iter_skip": 2,                # exhausted: skips END_FOR and the POP_TOP after it
        "kw_names_call": None,             # no KW_NAMES: CALL_KW
        "ops": {
            "LOAD_GLOBAL": _push(0, lambda a: (VALUE, NULL) if a & 1 else (VALUE,), _name(lambda a: a >> 1)),
            "LOAD_ATTR": _push(1, lambda a: (VALUE, MAYBE_NULL) if a & 1 else (VALUE,), _name(lambda a: a >> 1)),
            "LOAD_SUPER_ATTR": _push(3, lambda a: (VALUE, MAYBE_NULL) if a & 1 else (VALUE,),
                                     _name(lambda a: a >> 2)),
            "CALL": _CALL_NULL_SECOND,
            "CALL_KW": _call(lambda a: a + 3, 1),                  # [callable, NULL|self, args..., names]
            "CALL_FUNCTION_EX": _call(lambda a: 3 + (a & 1), 1),   # [func, NULL, args, kwargs?]
            "FOR_ITER": ("for", 2, None, None),
            "END_FOR": _g(1),
            "COMPARE_OP": _g(2, check=_pred(lambda a: 0 <= a >> 5 < len(dis.cmp_op), "comparison")),
            "CONVERT_VALUE": _g(1, check=_pred(lambda a: 1 <= a <= 3, "conversion")),
            "FORMAT_SIMPLE": _g(1), "FORMAT_WITH_SPEC": _g(2),
            "MAKE_FUNCTION": _g(1),
            "SET_FUNCTION_ATTRIBUTE": _g(2, check=_pred(lambda a: a in (1, 2, 4, 8), "function attribute")),
            "LOAD_FROM_DICT_OR_DEREF": _g(1, check=_cell()),
            "LOAD_FROM_DICT_OR_GLOBALS": _g(1, check=_name()), "LOAD_LOCALS": _g(0),
            "LOAD_FAST_CHECK": ("local", "LOAD_FAST_CHECK"),
            "LOAD_FAST_AND_CLEAR": ("local", "LOAD_FAST_AND_CLEAR"),
            "LOAD_FAST_LOAD_FAST": ("local", "LOAD_FAST_LOAD_FAST"),
            "STORE_FAST_LOAD_FAST": ("local", "STORE_FAST_LOAD_FAST"),
            "STORE_FAST_STORE_FAST": ("local", "STORE_FAST_STORE_FAST"),
            "RETURN_CONST": _g(0, check=_const()),
            "CALL_INTRINSIC_1": _g(1), "CALL_INTRINSIC_2": _g(2),
            "BINARY_SLICE": _g(3), "STORE_SLICE": _g(4),
            "END_SEND": _g(2), "CLEANUP_THROW": _g(3),
            "TO_BOOL": _g(1), "EXIT_INIT_CHECK": _g(1),
            **{name: _g(1) for name in _POP_JUMPS},
        },
    },
}

# no fall-through to the next instruction (the same names on every version)
_TERMINATORS = frozenset(("RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
                          "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"))
_RETURNS = frozenset(("RETURN_VALUE", "RETURN_CONST"))


def _version_table(version):
    """opcode -> (opname, rule, has_arg, caches, is_jump, is_backward, flags) for `version`
    (the running one); flags: 1 no fall-through, 2 a return."""
    spec = _VERSIONS[version]
    rules = dict(_COMMON)
    rules.update(spec["ops"])
    jumps = set(dis.hasjrel) | set(dis.hasjabs)
    hasarg = set(getattr(dis, "hasarg", range(dis.HAVE_ARGUMENT, 256)))
    caches = dis._inline_cache_entries
    table = [None] * 256
    for name, rule in rules.items():
        op = dis.opmap.get(name)
        if op is None or op >= 256:
            raise RuntimeError(f"bytecode_check: {name} is not an opcode of {version}")
        n_caches = caches[op] if isinstance(caches, list) else caches.get(name, 0)
        flags = (1 if name in _TERMINATORS else 0) | (2 if name in _RETURNS else 0)
        rule = (_FORMS[rule[0]],) + tuple(rule[1:])
        table[op] = (name, rule, op in hasarg, n_caches, op in jumps, "JUMP_BACKWARD" in name, flags)
    return table, spec


# forms and fast-local sub-operations, as small ints for the interpreter loop
_G, _PUSH, _CALL, _LOCAL, _COPY, _SWAP, _FOR = range(7)
_FORMS = {"g": _G, "push": _PUSH, "call": _CALL, "local": _LOCAL, "copy": _COPY, "swap": _SWAP,
          "for": _FOR}
(_L_LOAD, _L_STORE, _L_DELETE, _L_CHECK, _L_AND_CLEAR, _L_LOAD_LOAD, _L_STORE_LOAD, _L_STORE_STORE,
 _L_MAKE_CELL, _L_FREE) = range(10)
_LOCAL_OPS = {"LOAD_FAST": _L_LOAD, "STORE_FAST": _L_STORE, "DELETE_FAST": _L_DELETE,
              "LOAD_FAST_CHECK": _L_CHECK, "LOAD_FAST_AND_CLEAR": _L_AND_CLEAR,
              "LOAD_FAST_LOAD_FAST": _L_LOAD_LOAD, "STORE_FAST_LOAD_FAST": _L_STORE_LOAD,
              "STORE_FAST_STORE_FAST": _L_STORE_STORE, "MAKE_CELL": _L_MAKE_CELL,
              "COPY_FREE_VARS": _L_FREE}
_VALUES = ((), (VALUE,), (VALUE, VALUE))   # [1 + lasti]: what a handler starts with above its depth

_HERE = sys.version_info[:2]
_TABLE, _SPEC = _version_table(_HERE) if _HERE in _VERSIONS else (None, None)
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]


# (opcode, arg) -> its resolved rule; depends on nothing but the running interpreter
_RESOLVED = {}


def _resolve(op, arg):
    """(name, form, a, b, c, e, flags, size, jump delta or None, check, error) for one opcode
    and argument; `check` is None or (kind, value) checked against each code object, `error`
    a message if the argument is invalid whatever the code."""
    name, rule, has_arg, caches, is_jump, backward, flags = _TABLE[op]
    size = 2 + 2 * caches
    delta = None
    if is_jump:
        delta = size + (-2 * arg if backward else 2 * arg)
    form = rule[0]
    a = b = c = e = check = error = None
    if form == _G:
        pops = rule[1] if isinstance(rule[1], int) else rule[1](arg)
        try:
            a, b = pops, pops + dis.stack_effect(op, arg, jump=False)
            c = pops + dis.stack_effect(op, arg, jump=True) if is_jump else None
        except ValueError:
            b = -1
        if b < 0 or (c is not None and c < 0):
            error = f"unsupported argument {arg}"
            b = c = 0
        # the kinds pushed (all values), on the jump edge too when that differs
        c = None if c is None or c == b else (VALUE,) * c
        b = (VALUE,) * b
        e = rule[2](arg) if rule[2] is not None else None
    elif form == _PUSH:
        a, b = rule[1], rule[2](arg)
    elif form == _CALL:
        a = rule[1](arg)
        b = a - rule[2]          # the slot that may hold NULL, counted from the top
        c = rule[3]
    elif form == _LOCAL:
        a = _LOCAL_OPS[rule[1]]
        if a == _L_FREE:
            check = ("free", arg)
        elif a in (_L_LOAD_LOAD, _L_STORE_LOAD, _L_STORE_STORE):
            check = ("local", max(arg >> 4, arg & 15))
        else:
            check = ("local", arg)
    elif form == _FOR:
        a = rule[1]
    rcheck = rule[3] if form in (_G, _PUSH) else None
    if rcheck is not None:
        kind = rcheck[0]
        if kind in ("const", "name"):
            check = (kind, rcheck[1](arg))
        elif kind == "cell":
            check = ("local", arg)
            e = (e, arg)                 # a cell must exist there at run time
        elif not rcheck[1](arg):
            error = f"invalid {rcheck[2]} argument {arg}"
    res = (name, form, a, b, c, e, flags, size, delta, check, error)
    if len(_RESOLVED) > 100000:
        _RESOLVED.clear()
    _RESOLVED[op if arg is None else op | (arg + 1) << 8] = res
    return res


def _decode(code):
    """Decode co_code as dis does and resolve every instruction's rule for its argument.

    Returns (records, prefixes): per real instruction a tuple
    (form, a, b, c, e, offset, start, opname, arg, jump target offset or None, flags)
    (start: the offset of its first EXTENDED_ARG; flags: 1 no fall-through, 2 a return;
    a..e: see _resolve and the interpreter loop), and the offsets of the EXTENDED_ARG prefixes.
    """
    raw = code.co_code
    n = len(raw)
    table = _TABLE
    resolved = _RESOLVED
    co_name = code.co_name
    limits = {"const": len(code.co_consts), "name": len(code.co_names), "local": _nlocalsplus(code)}
    n_free = len(code.co_freevars)
    out = []
    prefixes = []
    i = 0
    ext = 0
    start = -1
    while i < n:
        op = raw[i]
        if op == _EXTENDED_ARG:
            ext = (ext | raw[i + 1]) << 8
            prefixes.append(i)
            if start < 0:
                start = i
            i += 2
            continue
        entry = table[op]
        if entry is None:
            raise InvalidBytecode(f"{co_name}: offset {i} {dis.opname[op]}: unknown opcode {op} "
                                  f"for Python {_HERE[0]}.{_HERE[1]}")
        arg = (ext | raw[i + 1]) if entry[2] else None
        ext = 0
        res = resolved.get(op if arg is None else op | (arg + 1) << 8)
        if res is None:
            res = _resolve(op, arg)
        name, form, a, b, c, e, flags, size, delta, check, error = res
        if error is not None:
            _fail_at(co_name, (i, name), error)
        if check is not None:
            kind, value = check
            if kind == "free":
                if value != n_free:
                    _fail_at(co_name, (i, name), f"copies {value} free variables, the code has {n_free}")
            elif not 0 <= value < limits[kind]:
                _fail_at(co_name, (i, name), f"{kind} index {value} out of range ({limits[kind]})")
        out.append((form, a, b, c, e, i, i if start < 0 else start, name, arg,
                    None if delta is None else i + delta, flags))
        start = -1
        i += size
    if start >= 0:
        raise InvalidBytecode(f"{co_name}: offset {start}: EXTENDED_ARG at the end of the code")
    if i != n:
        raise InvalidBytecode(f"{co_name}: the last instruction's inline caches run past the end")
    return out, prefixes


def _fail_at(co_name, where, msg):
    raise InvalidBytecode(f"{co_name}: offset {where[0]} {where[1]}: {msg}")


def _nlocalsplus(code):
    varnames = code.co_varnames
    return len(varnames) + sum(1 for c in code.co_cellvars if c not in varnames) + len(code.co_freevars)


def _entry_bound(code):
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)   # *args, **kwargs
    return (1 << nargs) - 1


def _local_name(code, index):
    names = code.co_varnames + tuple(c for c in code.co_cellvars if c not in code.co_varnames) \
        + code.co_freevars
    return names[index] if index < len(names) else f"#{index}"


def verify(code):
    """Raise InvalidBytecode if `code` could crash the interpreter; return None otherwise."""
    if _TABLE is None:
        raise InvalidBytecode("unsupported Python version")
    co_name = code.co_name
    recs, prefixes = _decode(code)
    if not recs:
        raise InvalidBytecode(f"{co_name}: empty code")
    n_insts = len(recs)
    index_of = {rec[6]: k for k, rec in enumerate(recs)}
    n_local = _nlocalsplus(code)
    max_depth = code.co_stacksize
    load_fast_checks = _SPEC["load_fast_checks"]
    kw_names_call = _SPEC["kw_names_call"]

    def fail(k, msg):
        rec = recs[k]
        raise InvalidBytecode(f"{co_name}: offset {rec[5]} {rec[7]}: {msg}")

    # pairings the interpreter relies on; instructions that more than fall-through reaches
    joins = [False] * n_insts
    joins[0] = True
    for k, rec in enumerate(recs):
        name = rec[7]
        if rec[9] is not None:
            j = index_of.get(rec[9])
            if j is not None:
                joins[j] = True
                if rec[0] == _FOR and j + rec[1] < n_insts:
                    joins[j + rec[1]] = True
        if name == "KW_NAMES":
            names = code.co_consts[rec[8]]
            nxt = recs[k + 1] if k + 1 < n_insts else None
            if not isinstance(names, tuple):
                fail(k, "the keyword names constant is not a tuple")
            if nxt is None or nxt[7] != kw_names_call or nxt[8] < len(names):
                fail(k, f"must be followed by {kw_names_call} with at least {len(names)} arguments")
        elif name == "PRECALL":
            nxt = recs[k + 1] if k + 1 < n_insts else None
            if nxt is None or nxt[7] != "CALL" or nxt[8] != rec[8]:
                fail(k, f"must be followed by CALL {rec[8]}")

    # exception table: per instruction (handler index, depth, lasti, description). The
    # interpreter looks the handler up by the offset of the instruction itself (EXTENDED_ARG
    # dispatches straight into it), so an entry may start or end between a prefix and its
    # instruction; a handler must be an instruction's start.
    handlers = [None] * n_insts
    if code.co_exceptiontable:
        code_len = len(code.co_code)
        boundaries = set(index_of)
        boundaries.update(rec[5] for rec in recs)
        boundaries.update(prefixes)
        boundaries.add(code_len)
        prev_end = 0
        k = 0
        for entry in dis._parse_exception_table(code):
            start, end, target, depth, lasti = entry.start, entry.end, entry.target, entry.depth, entry.lasti
            where = f"{co_name}: exception table entry {start} to {end} -> {target} [{depth}]"
            if start not in boundaries or end not in boundaries or start >= end:
                raise InvalidBytecode(f"{where}: start/end are not instruction boundaries")
            if start < prev_end:
                raise InvalidBytecode(f"{where}: overlaps or precedes the previous entry")
            if target not in index_of:
                raise InvalidBytecode(f"{where}: handler is not an instruction offset")
            if depth + 1 + lasti > max_depth:
                raise InvalidBytecode(f"{where}: handler depth exceeds co_stacksize {max_depth}")
            prev_end = end
            hidx = index_of[target]
            joins[hidx] = True
            info = (hidx, depth, _VALUES[1 + lasti], where)
            while k < n_insts and recs[k][5] < start:
                k += 1
            while k < n_insts and recs[k][5] < end:
                handlers[k] = info
                k += 1

    # the abstract interpretation: states at join points, straight-line code run in place
    states = [None] * n_insts          # (stack kinds tuple, bound mask, cell mask)
    queued = [False] * n_insts
    work = []

    def merge(j, stack, bound, cells, src):
        if len(stack) > max_depth:
            fail(src, f"stack depth {len(stack)} exceeds co_stacksize {max_depth}")
        old = states[j]
        stack = tuple(stack)
        if old is None:
            states[j] = (stack, bound, cells)
        else:
            ostack, obound, ocells = old
            if len(ostack) != len(stack):
                dst = recs[j]
                raise InvalidBytecode(
                    f"{co_name}: offset {dst[5]} {dst[7]}: stack depth mismatch at a join: "
                    f"{len(stack)} from offset {recs[src][5]} {recs[src][7]}, {len(ostack)} from "
                    f"another path")
            bound &= obound
            cells &= ocells
            if stack != ostack:
                stack = tuple(x if x == y else MAYBE_NULL for x, y in zip(ostack, stack))
            if stack == ostack and bound == obound and cells == ocells:
                return
            states[j] = (stack, bound, cells)
        if not queued[j]:
            queued[j] = True
            work.append(j)

    def jump_index(k, target):
        j = index_of.get(target)
        if j is None:
            fail(k, f"jump target {target} is not an instruction offset")
        return j

    def bad_operand(k, stack, first, last, what):
        """Fail on the first non-value among slots first..last from the top."""
        for s in range(first, last + 1):
            if stack[-s]:
                fail(k, f"{what} (stack slot {s} from the top) is {_KIND_NAME[stack[-s]]}, "
                        f"expected a value")

    merge(0, (), _entry_bound(code), 0, 0)
    while work:
        k = work.pop()
        queued[k] = False
        stack_t, bound, cells = states[k]
        stack = list(stack_t)
        while True:
            form, a, b, c, e, off, _, name, arg, target, flags = recs[k]
            d = len(stack)
            h = handlers[k]
            if h is not None:
                hidx, hdepth, pushed, where = h
                if hdepth > d:
                    fail(k, f"stack depth {d} is below the depth {hdepth} of its exception "
                            f"handler ({where})")
                old = states[hidx]
                if old is None or old[1] & ~bound or old[2] & ~cells or \
                        len(old[0]) != hdepth + len(pushed) or old[0][:hdepth] != tuple(stack[:hdepth]):
                    merge(hidx, stack[:hdepth] + list(pushed), bound, cells, k)
            if form == _G:
                # a: pops, b: the values pushed, c: those pushed on the jump edge if
                # different, e: peek or (peek, cell slot)
                if e is not None:
                    if type(e) is tuple:
                        e, cell = e
                        if not (cells >> cell) & 1:
                            fail(k, f"local slot {cell} holds no cell here")
                    if e is not None:
                        if e > d:
                            fail(k, f"stack underflow: reads slot {e} of a stack of depth {d}")
                        if stack[-e]:
                            bad_operand(k, stack, e, e, "the operand it updates in place")
                if a:
                    if a > d:
                        fail(k, f"stack underflow: pops {a} from a stack of depth {d}")
                    if any(stack[d - a:]):
                        bad_operand(k, stack, 1, a, "an operand")
                    del stack[d - a:]
                if target is not None:
                    j = jump_index(k, target)
                    merge(j, stack + list(b if c is None else c), bound, cells, k)
                if b:
                    stack += b
            elif form == _LOCAL:
                if a == _L_LOAD:
                    if not (bound >> arg) & 1:
                        if not load_fast_checks:
                            fail(k, f"local {_local_name(code, arg)!r} may be unbound here "
                                    f"(LOAD_FAST would push NULL; use LOAD_FAST_CHECK)")
                        bound |= 1 << arg
                    stack.append(VALUE)
                elif a == _L_STORE:
                    if not d:
                        fail(k, "stack underflow: pops 1 from an empty stack")
                    if stack.pop() == VALUE:
                        bound |= 1 << arg
                    else:
                        bound &= ~(1 << arg)
                elif a == _L_CHECK:
                    bound |= 1 << arg
                    stack.append(VALUE)
                elif a == _L_AND_CLEAR:
                    # a definitely bound slot (e.g. a cell that a comprehension variable
                    # shadows, 3.13) is saved as a value, anything else as maybe-NULL
                    stack.append(VALUE if (bound >> arg) & 1 else MAYBE_NULL)
                    bound &= ~(1 << arg)
                elif a == _L_DELETE:
                    bound &= ~(1 << arg)
                elif a == _L_LOAD_LOAD:
                    for x in (arg >> 4, arg & 15):
                        if not (bound >> x) & 1:
                            fail(k, f"local {_local_name(code, x)!r} may be unbound here "
                                    f"(the load would push NULL)")
                    stack += (VALUE, VALUE)
                elif a == _L_STORE_LOAD:
                    if not d:
                        fail(k, "stack underflow: pops 1 from an empty stack")
                    x = arg >> 4
                    if stack.pop() == VALUE:
                        bound |= 1 << x
                    else:
                        bound &= ~(1 << x)
                    x = arg & 15
                    if not (bound >> x) & 1:
                        fail(k, f"local {_local_name(code, x)!r} may be unbound here "
                                f"(the load would push NULL)")
                    stack.append(VALUE)
                elif a == _L_STORE_STORE:
                    if d < 2:
                        fail(k, f"stack underflow: pops 2 from a stack of depth {d}")
                    for x in (arg >> 4, arg & 15):
                        if stack.pop() == VALUE:
                            bound |= 1 << x
                        else:
                            bound &= ~(1 << x)
                elif a == _L_MAKE_CELL:
                    bound |= 1 << arg
                    cells |= 1 << arg
                else:  # _L_FREE
                    mask = ((1 << arg) - 1) << (n_local - arg)
                    bound |= mask
                    cells |= mask
            elif form == _PUSH:
                # a: pops (values), b: the kinds pushed, bottom first
                if a:
                    if a > d:
                        fail(k, f"stack underflow: pops {a} from a stack of depth {d}")
                    if any(stack[d - a:]):
                        bad_operand(k, stack, 1, a, "an operand")
                    del stack[d - a:]
                stack += b
            elif form == _CALL:
                # a: slots the call uses, b: the slot (from the top) that may hold NULL,
                # c: check only (3.11 PRECALL)
                if a > d:
                    fail(k, f"stack underflow: the call needs {a} slots, the stack has {d}")
                for s in range(1, a + 1):
                    if stack[-s] and s != b:
                        # b == a: [NULL|callable, callable|self, args...]; b == a - 1:
                        # [callable, NULL|self, args...]
                        what = "the callable" if s == a else \
                            "the callable (or self)" if s == a - 1 and b == a else "an argument"
                        bad_operand(k, stack, s, s, what)
                if not c:
                    del stack[d - a:]
                    stack.append(VALUE)
            elif form == _SWAP:
                if not 1 <= arg <= d:
                    fail(k, f"stack underflow: swaps slot {arg} of a stack of depth {d}")
                stack[-1], stack[-arg] = stack[-arg], stack[-1]
            elif form == _COPY:
                if not 1 <= arg <= d:
                    fail(k, f"stack underflow: copies slot {arg} of a stack of depth {d}")
                if stack[-arg]:
                    bad_operand(k, stack, arg, arg, "the copied slot")
                stack.append(VALUE)
            else:  # _FOR
                # 3.12+ FOR_ITER: falls through with [iter, next]; exhausted, it pops the
                # iterator and resumes `a` instructions after its target, which must be END_FOR
                if not d:
                    fail(k, "stack underflow: no iterator")
                if stack[-1]:
                    bad_operand(k, stack, 1, 1, "the iterator")
                t = jump_index(k, target)
                if recs[t][7] != "END_FOR":
                    fail(k, f"jump target {target} is {recs[t][7]}, not END_FOR (the exhausted "
                            f"iterator skips the instruction there)")
                if a == 2 and (t + 1 >= n_insts or recs[t + 1][7] != "POP_TOP"):
                    fail(k, "END_FOR at the jump target is not followed by POP_TOP")
                if t + a >= n_insts:
                    fail(k, "the exhausted loop falls off the end of the code")
                merge(t + a, stack[:-1], bound, cells, k)
                stack.append(VALUE)

            if flags:
                if flags & 2 and stack:
                    fail(k, f"returns with {len(stack)} values left on the stack")
                break                   # no fall-through
            k += 1
            if k >= n_insts:
                fail(k - 1, "execution falls off the end of the code")
            if len(stack) > max_depth:
                fail(k - 1, f"stack depth {len(stack)} exceeds co_stacksize {max_depth}")
            if joins[k]:
                merge(k, stack, bound, cells, k - 1)
                break

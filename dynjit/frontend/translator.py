"""InstructionTranslator: symbolic interpretation of a function's bytecode.

One handler per opcode, for the instruction sets of CPython 3.11, 3.12 and
3.13 (version differences are handled inside the handlers). Values on the
stack and in locals are VariableTrackers; tensor operations are recorded into
the OutputGraph; Python-only work is evaluated at trace time; user function
calls are inlined by a child translator.
"""
import builtins
import dis
import inspect
import operator
import types

from .. import config
from .bytecode_info import code_info, PY312, PY313
from .opcode_support import unsupported_reason
from .exc import unimplemented, fold, frame_runs_plain, DataDependent, Unsupported, BreakKind
from .source import GlobalSource, GlobalsSource, ConstSource, ItemSource, ClosureCellSource, DefaultSource
from .variables import (ConstantVariable, NULL, wrap, TensorVariable, TupleVariable,
                        ListVariable, DictVariable, IteratorVariable, FunctionVariable,
                        NestedFunctionVariable, CellVariable, RealCellVariable, GradModeVariable,
                        UserObjectVariable, NewObjectVariable, SuperVariable, ModuleVariable)
from .variables.objects import class_attribute
from .dynamic_marks import ConstraintViolationError
from .frame_view import GlobalLookup
from . import operators, trace_rules
from .trace_rules import Action
from .operators import BINARY_OPS
from .variables.containers import live_iter, set_of, equal_as_contains
from .variables.builder import is_constant_value

CO_GENERATOR = inspect.CO_GENERATOR
CO_VARARGS = inspect.CO_VARARGS
CO_VARKEYWORDS = inspect.CO_VARKEYWORDS

class _Unbound:
    def describe(self):
        return "an unbound local"


UNBOUND = _Unbound()


_NOT_AN_OBJECT = object()


def _real_object(var):
    """The existing object a tracker stands for (a function, a user object, a module, a
    cell), or _NOT_AN_OBJECT for values made while tracing and constants."""
    for cls, attr in ((FunctionVariable, "fn"), (UserObjectVariable, "value"), (ModuleVariable, "module"),
                      (RealCellVariable, "cell")):
        if type(var) is cls:
            return getattr(var, attr)
    return _NOT_AN_OBJECT


class InstructionTranslator:
    def __init__(self, code, f_globals, f_locals, cells, output, parent=None, globals_source=None,
                 fn_var=None):
        self.code = code
        self.info = code_info(code)
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", builtins)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.locals = f_locals
        self.cells = cells
        self.output = output
        self.parent = parent
        output.translators.append(self)
        self.depth = 0 if parent is None else parent.depth + 1
        self.globals_source = globals_source
        self.fn_var = fn_var
        self.stack = []
        self.kw_names = None
        self.ip = 0
        self.returned = None
        self.yields = None
        self.pause_on_yield = False   # a generator's body: run() returns _PAUSED at each yield
        self.current = None
        self.steps = 0
        self.stop_at_step = None      # restart analysis: stop before this root instruction
        self.stopped = None

    # -- the main loop -------------------------------------------------------------------
    def run(self):
        insts = self.info.instructions
        steps = 0
        while True:
            inst = insts[self.ip]
            if self.stop_at_step is not None and self.steps == self.stop_at_step:
                self.stopped = (self.ip, list(self.stack), dict(self.locals))
                return None
            self.steps += 1
            self.current = inst
            self.ip += 1
            handler = getattr(self, inst.opname, None)
            if handler is None:
                unimplemented(BreakKind.UNSUPPORTED_BYTECODE, unsupported_reason(inst.opname) or f"the bytecode instruction {inst.opname}")
            try:
                result = handler(inst)
                if result is _RETURN:
                    return self.returned
                if result is _PAUSED:
                    return _PAUSED
            except Unsupported as e:
                if not hasattr(e, "_tx_location"):
                    e._tx_location = self.lineno()   # the innermost frame: the user's line
                if getattr(e, "frame_plain", False):
                    pass                # no break point: the frame runs plain
                elif self.parent is None:
                    e._break_step = self.steps - 1
                    e._break_index = self.ip - 1
                else:
                    e._in_inlined_call = True
                raise
            except ConstraintViolationError as e:
                if not getattr(e, "_located", False):   # the innermost frame: the user's line
                    e._located = True
                    filename, line = self.lineno()
                    e.args = (f"{e.args[0]}\n  at {filename}:{line}",)
                raise
            steps += 1
            if steps > config.max_loop_unroll * 20:
                unimplemented(BreakKind.TOO_DEEP_OR_LONG, "tracing took too many steps (a very long or unbounded loop)")

    def push(self, v):
        self.stack.append(v)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        vals = self.stack[-n:]
        del self.stack[-n:]
        return vals

    def jump(self, inst):
        self.ip = self.info.index_of[inst.argval]

    def lineno(self):
        inst = self.current
        pos = getattr(inst, "positions", None)
        line = pos.lineno if pos is not None and pos.lineno is not None else inst.starts_line
        return self.code.co_filename, line

    # -- helpers used by trackers -----------------------------------------------------------
    def truth(self, v):
        return v.truth(self)

    def getattr(self, obj, name):
        return obj.getattr(self, name)

    def getitem(self, obj, key):
        if isinstance(key, TensorVariable) and not isinstance(obj, (TensorVariable, DictVariable)):
            unimplemented(BreakKind.DATA_DEPENDENT_BRANCH, "indexing a Python container with a tensor")
        return obj.getitem(self, key)

    def contains(self, container, item):
        """`item in container`: the container's own rule where its tracker has one (dicts, their
        views, sets, modules); otherwise Python's, item by item: the same object, or equal."""
        if hasattr(container, "contains"):
            return ConstantVariable(container.contains(self, item))
        if isinstance(container, TensorVariable):
            raise DataDependent(BreakKind.DATA_DEPENDENT_BRANCH, "`in` on a tensor (data-dependent)")
        if container.is_python_constant() and item.is_python_constant():
            return ConstantVariable(fold(operator.contains, container.as_python_constant(), item.as_python_constant()))
        return ConstantVariable(any(equal_as_contains(self, other, item) for other in container.iterate(self)))

    def binary_op(self, fn, a, b):
        return operators.binary(self, fn, a, b)

    def unary_op(self, fn, a):
        return operators.unary(self, fn, a)

    def is_same(self, a, b):
        """`a is b` for two trackers. Objects reached through two sources are compared as
        the objects they are now, and the answer is guarded (the two sources stay one object,
        or stay two), since the trackers' own guards may not pin identity (a function is
        guarded by its code, an object by its type)."""
        if a is b:
            return True
        real_a, real_b = _real_object(a), _real_object(b)
        if real_a is not _NOT_AN_OBJECT and real_b is not _NOT_AN_OBJECT:
            same = real_a is real_b
            if a.source is not None and b.source is not None and a.source != b.source:
                if same:
                    self.output.guards.alias(a.source, b.source)
                else:
                    self.output.guards.distinct([a.source, b.source], 2)
            return same
        if a.is_python_constant() and b.is_python_constant():
            return a.as_python_constant() is b.as_python_constant()
        if isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
            return a.node is b.node
        return False

    def implicit_super(self):
        cell = self.cells.get("__class__")
        if cell is None:
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, "super() without a __class__ cell")
        cls = cell.load(self, "__class__")
        first = self.locals.get(self.code.co_varnames[0]) if self.code.co_argcount else None
        if first is None:
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, "super() in a function without arguments")
        return SuperVariable(cls.as_python_constant(), first)

    def global_source(self, name):
        if self.globals_source is None:
            return GlobalSource(name)
        return ItemSource(self.globals_source, name)

    # -- calls ----------------------------------------------------------------------------------
    def call_function(self, fn, args, kwargs):
        if isinstance(fn, _NullType):
            raise AssertionError("calling NULL (internal error)")
        if isinstance(getattr(fn, "value", None), GlobalLookup) and not args and not kwargs:
            return self._global_value(fn.value.name)     # generated code's LOAD_GLOBAL locals/vars
        target = fn.as_python_constant() if fn.is_python_constant() else getattr(fn, "fn", None)
        if target is not None:
            why = trace_rules.frame_plain_reason(target, self.parent is not None, args, kwargs)
            if why is not None:
                frame_runs_plain(BreakKind.UNSUPPORTED_VALUE, f"{why} (the frame runs plain)")
            if self.parent is not None and trace_rules.reads_call_stack(target, args, kwargs):
                e = Unsupported(BreakKind.UNSUPPORTED_VALUE, f"{trace_rules.callable_name(target)}() reads "
                                "the call stack (the call that reached it runs plain)")
                e.callee_runs_plain = True      # not through the JIT: no frames of dynjit's below it
                raise e
        return fn.call(self, list(args), dict(kwargs))

    def inline_call(self, fn_var, args, kwargs):
        if self.depth + 1 > config.max_inline_depth:
            unimplemented(BreakKind.TOO_DEEP_OR_LONG, "call depth limit reached while inlining (recursion?)")
        code = fn_var.get_code()
        if isinstance(fn_var, FunctionVariable):
            fn = fn_var.fn
            src = fn_var.source
            fn_src = src if src is not None else ConstSource(self.output.stash(fn))
            defaults = [wrap(self, v, DefaultSource(fn_src, i))
                        for i, v in enumerate(fn.__defaults__ or ())]
            kwdefaults = {k: wrap(self, v, DefaultSource(fn_src, k, kw=True))
                          for k, v in (fn.__kwdefaults__ or {}).items()}
            cells = {}
            for i, name in enumerate(code.co_freevars):
                cells[name] = wrap(self, fn.__closure__[i], ClosureCellSource(fn_src, i))
            f_globals = fn.__globals__
        else:
            defaults = list(fn_var.defaults.items) if fn_var.defaults is not None else []
            kwdefaults = dict(fn_var.kwdefaults.items) if fn_var.kwdefaults is not None else {}
            cells = {name: cell for name, cell in zip(code.co_freevars, fn_var.closure or ())}
            f_globals = fn_var.f_globals
        f_locals = bind_arguments(code, defaults, kwdefaults, args, kwargs, getattr(fn_var, "describe")())
        g_src = None if f_globals is self.output.root_globals else ConstSource(self.output.stash(f_globals))
        child = InstructionTranslator(code, f_globals, f_locals, cells, self.output, parent=self,
                                      globals_source=g_src, fn_var=fn_var)
        if code.co_flags & CO_GENERATOR:
            if _has_handlers(code):
                # its except/finally/with exit runs when plain Python closes it: maybe later,
                # maybe never (a consumer that stops early); a graph break would hand the
                # generator to the resume function, which holds it past the user's last reference
                frame_runs_plain(BreakKind.UNSUPPORTED_BYTECODE, "a generator with a try or with block (it "
                                 "runs lazily in eager, and its cleanup when it is closed)")
            return GeneratorVariable(child)
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, "async functions")
        return child.run()

    def _call(self, argc, kwnames):
        args = self.popn(argc)
        a, b = self.popn(2)
        if a is NULL:
            fn = b
        elif b is NULL:
            fn = a
        else:
            fn, args = a, [b] + args
        kwargs = {}
        if kwnames:
            n = len(kwnames)
            kwargs = dict(zip(kwnames, args[-n:]))
            args = args[:-n]
        self.push(self.call_function(fn, args, kwargs))

    def PRECALL(self, inst):
        pass

    def KW_NAMES(self, inst):
        self.kw_names = inst.argval if isinstance(inst.argval, tuple) else self.code.co_consts[inst.arg]

    def CALL(self, inst):
        kwnames, self.kw_names = self.kw_names, None
        self._call(inst.arg, kwnames)

    def CALL_KW(self, inst):
        kwnames = self.pop().as_python_constant()
        self._call(inst.arg, kwnames)

    def CALL_FUNCTION_EX(self, inst):
        kwargs_var = self.pop() if inst.arg & 1 else None
        args_var = self.pop()
        a, b = self.popn(2)
        fn = b if a is NULL else a
        if a is not NULL and b is not NULL:
            raise AssertionError("CALL_FUNCTION_EX with a bound self (internal)")
        args = args_var.iterate(self)
        kwargs = {}
        if kwargs_var is not None:
            if not isinstance(kwargs_var, DictVariable):
                unimplemented(BreakKind.USER_EXCEPTION, "**kwargs that is not a dict")
            kwargs = dict(kwargs_var.items)
        self.push(self.call_function(fn, args, kwargs))

    def PUSH_NULL(self, inst):
        self.push(NULL)

    def _push_callable(self, fn, self_var=None):
        """Push a callable the way LOAD_ATTR/LOAD_GLOBAL with the call bit do."""
        if self_var is None:
            if PY313:
                self.push(fn)
                self.push(NULL)
            else:
                self.push(NULL)
                self.push(fn)
        else:
            self.push(fn)
            self.push(self_var)

    # -- loads and stores ---------------------------------------------------------------------
    def RESUME(self, inst):
        pass

    NOP = CACHE = EXTENDED_ARG = COPY_FREE_VARS = RESUME

    def _load_local(self, name):
        # 3.13 compiles LOAD_CLOSURE (the cell itself, for a closure being built) to LOAD_FAST; a
        # cell variable's slot holds its cell (but see LOAD_FAST_AND_CLEAR)
        if PY313 and name in self.cells and (name in self.info.cellvars or name in self.info.freevars):
            return self.cells[name]
        v = self.locals.get(name, UNBOUND)
        if v is UNBOUND:
            unimplemented(BreakKind.USER_EXCEPTION, f"local variable {name!r} referenced before assignment")
        return v

    def LOAD_FAST(self, inst):
        self.push(self._load_local(inst.argval))

    LOAD_FAST_CHECK = LOAD_FAST

    def LOAD_FAST_AND_CLEAR(self, inst):
        name = inst.argval
        if name in self.info.cellvars and name in self.cells:
            # a comprehension inlined by PEP 709 (3.12+) reusing a cell variable's name: the slot
            # holds the function's cell, saved here and put back by the STORE_FAST after the
            # comprehension; inside, the name is the comprehension's own (a value, or a new cell)
            self.push(self.cells.pop(name))
            return
        self.push(self.locals.pop(name, NULL))

    def LOAD_FAST_LOAD_FAST(self, inst):
        a, b = inst.argval
        self.push(self._load_local(a))
        self.push(self._load_local(b))

    def STORE_FAST(self, inst):
        v = self.pop()
        if v is NULL:
            self.locals.pop(inst.argval, None)
        elif isinstance(v, (CellVariable, RealCellVariable)) and inst.argval in self.info.cellvars:
            self.locals.pop(inst.argval, None)      # the function's cell put back (see LOAD_FAST_AND_CLEAR)
            self.cells[inst.argval] = v
        else:
            self._store_local(inst.argval, v)

    def STORE_FAST_LOAD_FAST(self, inst):
        store, load = inst.argval
        self._store_local(store, self.pop())
        self.push(self._load_local(load))

    def STORE_FAST_STORE_FAST(self, inst):
        a, b = inst.argval
        self._store_local(a, self.pop())
        self._store_local(b, self.pop())

    def _store_local(self, name, v):
        """Bind a local; a tensor computed in the graph takes the first variable name it is
        stored in as its node's name (a readable graph: `new_grad`, not `clone_3`)."""
        self.locals[name] = v
        node = getattr(v, "node", None)
        if (isinstance(v, TensorVariable) and node.op == "call_function"
                and not node.meta.get("name_hinted")):
            node.meta["name_hinted"] = True
            node.name = node.graph._names.create(name)

    def DELETE_FAST(self, inst):
        self.locals.pop(inst.argval, None)

    def LOAD_CONST(self, inst):
        self.push(wrap(self, inst.argval))

    def RETURN_VALUE(self, inst):
        self.returned = self.pop()
        return _RETURN

    def RETURN_CONST(self, inst):
        self.returned = wrap(self, inst.argval)
        return _RETURN

    def RETURN_GENERATOR(self, inst):
        if self.yields is None:
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, "calling a generator function")
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        if self.yields is None:
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, "yield inside a compiled function")
        if len(self.yields) >= config.max_generator_items:
            unimplemented(BreakKind.TOO_DEEP_OR_LONG, f"a generator yielding more than {config.max_generator_items} items "
                          "(endless?) at trace time")
        self.yields.append(self.pop())
        self.push(ConstantVariable(None))      # what the yield expression evaluates to (next())
        if self.pause_on_yield:
            return _PAUSED

    def LOAD_GLOBAL(self, inst):
        name = inst.argval
        self._push_global(name, inst.arg & 1)

    def _push_global(self, name, with_null):
        value = self._global_value(name)
        if with_null:
            self._push_callable(value)
        else:
            self.push(value)

    def _global_value(self, name):
        overrides = self.output.side_effects.global_overrides(self.f_globals)
        if name in overrides:
            return overrides[name]
        if name in self.f_globals:
            return wrap(self, self.f_globals[name], self.global_source(name))
        if name in self.f_builtins:
            # a builtin: guarded to stay one (no global of that name defined later, the
            # builtin itself not replaced)
            guards = self.output.guards
            guards.absent_key(self.globals_source or GlobalsSource(), name)
            value = self.f_builtins[name]
            builtins_src = ConstSource(self.output.stash(self.f_builtins))
            if is_constant_value(value):
                guards.constant(ItemSource(builtins_src, name), value)
            else:
                guards.identity(ItemSource(builtins_src, name), value)
            return wrap(self, value)
        unimplemented(BreakKind.USER_EXCEPTION, f"name {name!r} is not defined (NameError at trace time)")

    def STORE_GLOBAL(self, inst):
        self.output.side_effects.store_global(self.f_globals, inst.argval, self.pop(),
                                              self.global_source(inst.argval))

    def LOAD_NAME(self, inst):
        self.push(self._global_value(inst.argval))

    def LOAD_DEREF(self, inst):
        cell = self.cells.get(inst.argval)
        if cell is None:
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"free variable {inst.argval!r}")
        self.push(cell.load(self, inst.argval))

    def STORE_DEREF(self, inst):
        cell = self.cells.get(inst.argval)
        if cell is None:
            cell = self.cells[inst.argval] = CellVariable()
        cell.store(self, self.pop())

    def DELETE_DEREF(self, inst):
        cell = self.cells.get(inst.argval)
        if type(cell) is not CellVariable:
            unimplemented(BreakKind.MUTATION, "deleting a closure variable of a function defined outside the compiled code")
        cell.contents = None

    def MAKE_CELL(self, inst):
        name = inst.argval
        if name not in self.cells:
            self.cells[name] = CellVariable(self.locals.pop(name, None))

    def LOAD_CLOSURE(self, inst):
        name = inst.argval
        if name not in self.cells:
            self.cells[name] = CellVariable()
        self.push(self.cells[name])

    def _load_attr(self, obj, name):
        try:
            return self.getattr(obj, name)
        except AttributeError as e:     # the user's program raises it: natively, at a break
            raise Unsupported(BreakKind.USER_EXCEPTION, f"reading attribute {name!r} raises AttributeError (raises natively)") from e

    def LOAD_ATTR(self, inst):
        obj = self.pop()
        name = inst.argval
        method_form = PY312 and inst.arg & 1
        value = self._load_attr(obj, name)
        if method_form:
            self._push_callable(value)
        else:
            self.push(value)

    def LOAD_METHOD(self, inst):
        obj = self.pop()
        self._push_callable(self._load_attr(obj, inst.argval))

    def LOAD_SUPER_ATTR(self, inst):
        self_var = self.pop()
        cls = self.pop()
        self.pop()   # the global `super`
        value = SuperVariable(cls.as_python_constant(), self_var).getattr(self, inst.argval)
        if inst.arg & 1:
            self._push_callable(value)
        else:
            self.push(value)

    def STORE_ATTR(self, inst):
        obj = self.pop()
        value = self.pop()
        obj.setattr(self, inst.argval, value)

    def DELETE_ATTR(self, inst):
        unimplemented(BreakKind.MUTATION, "del obj.attr inside a compiled function")

    def IMPORT_NAME(self, inst):
        fromlist = self.pop().as_python_constant()
        level = self.pop().as_python_constant()
        module = __import__(inst.argval, self.f_globals, None, fromlist, level)
        self.push(wrap(self, module))

    def IMPORT_FROM(self, inst):
        module = self.stack[-1]
        self.push(self.getattr(module, inst.argval))

    # -- stack manipulation -----------------------------------------------------------------
    def POP_TOP(self, inst):
        self.pop()

    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    def SWAP(self, inst):
        i = inst.arg
        self.stack[-1], self.stack[-i] = self.stack[-i], self.stack[-1]

    def END_FOR(self, inst):
        self.pop()
        if not PY313:
            self.pop()

    def POP_ITER(self, inst):
        self.pop()

    # -- operators --------------------------------------------------------------------------
    def BINARY_OP(self, inst):
        b = self.pop()
        a = self.pop()
        fn = BINARY_OPS[inst.argrepr][0]
        self.push(self.binary_op(fn, a, b))

    def COMPARE_OP(self, inst):
        b = self.pop()
        a = self.pop()
        sym = inst.argrepr
        if sym.startswith("bool("):
            sym = sym[5:-1]
        result = self.binary_op(BINARY_OPS[sym][0], a, b)
        if PY313 and inst.arg & 16:
            result = ConstantVariable(self.truth(result))
        self.push(result)

    def IS_OP(self, inst):
        b = self.pop()
        a = self.pop()
        same = self.is_same(a, b)
        self.push(ConstantVariable(same != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        container = self.pop()
        item = self.pop()
        result = self.contains(container, item).as_python_constant()
        self.push(ConstantVariable(result != bool(inst.arg)))

    def UNARY_NEGATIVE(self, inst):
        self.push(self.unary_op(operator.neg, self.pop()))

    def UNARY_POSITIVE(self, inst):
        self.push(self.unary_op(operator.pos, self.pop()))

    def UNARY_INVERT(self, inst):
        self.push(self.unary_op(operator.invert, self.pop()))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.truth(self.pop())))

    def TO_BOOL(self, inst):
        self.push(ConstantVariable(self.truth(self.pop())))

    def BINARY_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        self.push(self.getitem(obj, key))

    def STORE_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        value = self.pop()
        obj.setitem(self, key, value)

    def DELETE_SUBSCR(self, inst):
        key = self.pop()
        obj = self.pop()
        obj.delitem(self, key)

    def BINARY_SLICE(self, inst):
        end = self.pop()
        start = self.pop()
        obj = self.pop()
        self.push(self.getitem(obj, self._slice([start, end])))

    def STORE_SLICE(self, inst):
        end = self.pop()
        start = self.pop()
        obj = self.pop()
        value = self.pop()
        obj.setitem(self, self._slice([start, end]), value)

    def _slice(self, parts):
        if all(p.is_python_constant() for p in parts):
            return ConstantVariable(slice(*[p.as_python_constant() for p in parts]))
        unimplemented(BreakKind.DATA_DEPENDENT_BRANCH, "a slice bound that is not a constant (a tensor?)")

    def BUILD_SLICE(self, inst):
        self.push(self._slice(self.popn(inst.arg)))

    # -- building containers ----------------------------------------------------------------
    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self, inst):
        items = self.popn(inst.arg)
        self.push(self._set_of(items))

    def _set_of(self, items):
        return set_of(self, items)

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        items = {}
        for k, v in zip(flat[::2], flat[1::2]):
            items[k.as_python_constant()] = v
        self.push(DictVariable(items))

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().as_python_constant()
        values = self.popn(inst.arg)
        self.push(DictVariable(dict(zip(keys, values))))

    def BUILD_STRING(self, inst):
        parts = self.popn(inst.arg)
        self.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def LIST_APPEND(self, inst):
        v = self.pop()
        self.stack[-inst.arg].items.append(v)

    def LIST_EXTEND(self, inst):
        v = self.pop()
        self.stack[-inst.arg].items.extend(v.iterate(self))

    def SET_ADD(self, inst):
        v = self.pop()
        self.stack[-inst.arg].call_method(self, "add", [v], {})

    def SET_UPDATE(self, inst):
        v = self.pop()
        self.stack[-inst.arg].call_method(self, "update", [v], {})

    def MAP_ADD(self, inst):
        value = self.pop()
        key = self.pop()
        self.stack[-inst.arg].items[key.as_python_constant()] = value

    def DICT_UPDATE(self, inst):
        v = self.pop()
        d = self.stack[-inst.arg]
        if isinstance(v, DictVariable):
            d.items.update(v.items)
        else:
            unimplemented(BreakKind.UNSUPPORTED_BUILTIN, "dict update from a non-dict")

    DICT_MERGE = DICT_UPDATE

    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().iterate(self)))

    def CALL_INTRINSIC_1(self, inst):
        name = inst.argrepr
        if name == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVariable(self.pop().iterate(self)))
        elif name == "INTRINSIC_UNARY_POSITIVE":
            self.push(self.unary_op(operator.pos, self.pop()))
        else:
            unimplemented(BreakKind.UNSUPPORTED_BYTECODE, f"intrinsic {name}")

    def UNPACK_SEQUENCE(self, inst):
        seq = self.pop()
        items = self._unpackable(seq)
        if len(items) != inst.arg:
            unimplemented(BreakKind.USER_EXCEPTION, f"unpacking {len(items)} values into {inst.arg} names (ValueError at trace time)")
        for item in reversed(items):
            self.push(item)

    def _unpackable(self, seq):
        if isinstance(seq, TensorVariable):
            return seq.iterate(self)
        return seq.iterate(self)

    def UNPACK_EX(self, inst):
        before = inst.arg & 0xFF
        after = inst.arg >> 8
        items = self._unpackable(self.pop())
        if len(items) < before + after:
            unimplemented(BreakKind.USER_EXCEPTION, "not enough values to unpack (ValueError at trace time)")
        star = ListVariable(items[before:len(items) - after])
        out = items[:before] + [star] + items[len(items) - after:]
        for item in reversed(out):
            self.push(item)

    # -- strings -------------------------------------------------------------------------------
    def FORMAT_VALUE(self, inst):
        have_spec = (inst.arg & 0x04) == 0x04
        spec = self.pop().as_python_constant() if have_spec else ""
        value = self.pop()
        conv = inst.arg & 0x03
        self.push(ConstantVariable(self._format(value, conv, spec)))

    def _format(self, value, conv, spec):
        if isinstance(value, TensorVariable):
            raise DataDependent(BreakKind.TENSOR_DATA_READ, "formatting a tensor into a string (data-dependent)")
        v = value.as_python_constant()
        if conv == 1:
            v = str(v)
        elif conv == 2:
            v = repr(v)
        elif conv == 3:
            v = ascii(v)
        return format(v, spec)

    def CONVERT_VALUE(self, inst):
        value = self.pop()
        if isinstance(value, TensorVariable):
            raise DataDependent(BreakKind.TENSOR_DATA_READ, "formatting a tensor into a string (data-dependent)")
        fn = {1: str, 2: repr, 3: ascii}[inst.arg]
        self.push(ConstantVariable(fn(value.as_python_constant())))

    def FORMAT_SIMPLE(self, inst):
        self.push(ConstantVariable(self._format(self.pop(), 0, "")))

    def FORMAT_WITH_SPEC(self, inst):
        spec = self.pop().as_python_constant()
        self.push(ConstantVariable(self._format(self.pop(), 0, spec)))

    # -- control flow ------------------------------------------------------------------------
    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = JUMP = JUMP_NO_INTERRUPT = JUMP_FORWARD

    def _pop_jump(self, inst, jump_when):
        v = self.pop()
        if jump_when is None:      # jump if None
            cond = v.is_python_constant() and v.as_python_constant() is None
        elif jump_when == "not_none":
            cond = not (v.is_python_constant() and v.as_python_constant() is None)
        else:
            cond = self.truth(v) == jump_when
        if cond:
            self.jump(inst)

    def POP_JUMP_IF_FALSE(self, inst):
        self._pop_jump(inst, False)

    def POP_JUMP_IF_TRUE(self, inst):
        self._pop_jump(inst, True)

    def POP_JUMP_IF_NONE(self, inst):
        self._pop_jump(inst, None)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        self._pop_jump(inst, "not_none")

    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = POP_JUMP_IF_FALSE
    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = POP_JUMP_IF_TRUE
    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = POP_JUMP_IF_NONE
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = POP_JUMP_IF_NOT_NONE

    def JUMP_IF_TRUE_OR_POP(self, inst):
        if self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_FALSE_OR_POP(self, inst):
        if not self.truth(self.stack[-1]):
            self.jump(inst)
        else:
            self.pop()

    def GET_ITER(self, inst):
        self.push(live_iter(self, self.pop()))

    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, IteratorVariable):
            unimplemented(BreakKind.UNSUPPORTED_VALUE, f"iterating over {it.describe()} (an iterator dynjit "
                          "does not model, e.g. a generator that runs lazily)")
        item = it.next()
        if item is not None:
            self.push(item)
            return
        self.pop()
        self.jump(inst)
        insts = self.info.instructions
        if PY312 and insts[self.ip].opname == "END_FOR":
            self.ip += 1
            if PY313 and insts[self.ip].opname == "POP_TOP":
                self.ip += 1

    # -- with blocks: grad modes, and managers whose __enter__/__exit__ are Python functions --
    def BEFORE_WITH(self, inst):
        ctx = self.pop()
        if isinstance(ctx, GradModeVariable):
            self.push(ctx.getattr(self, "__exit__"))
            self.push(ctx.enter(self))
            return
        if not isinstance(ctx, (UserObjectVariable, NewObjectVariable)):
            unimplemented(BreakKind.GRAD_MODE, f"a `with` block over {ctx.describe()} (traced: grad modes and "
                          "context managers written in Python)")
        cls = ctx.python_type()
        rule = trace_rules.with_block(cls)
        if rule.action is Action.BREAK:
            unimplemented(rule.kind, rule.detail)
        # as Python does: both methods looked up on the type, __exit__ first
        exit_fn = class_attribute(self, ctx, cls, "__exit__")
        enter_fn = class_attribute(self, ctx, cls, "__enter__")
        self.push(exit_fn)
        self.push(enter_fn.call(self, [], {}))

    # -- functions --------------------------------------------------------------------------
    def MAKE_FUNCTION(self, inst):
        code = self.pop().as_python_constant()
        flags = 0 if PY313 else inst.arg
        closure = self.pop().iterate(self) if flags & 0x08 else None
        if flags & 0x04:
            self.pop()
        kwdefaults = self.pop() if flags & 0x02 else None
        defaults = self.pop() if flags & 0x01 else None
        fn = NestedFunctionVariable(code, self.f_globals, code.co_name, defaults, kwdefaults, closure)
        fn.globals_source = self.globals_source
        self.push(fn)

    def SET_FUNCTION_ATTRIBUTE(self, inst):
        fn = self.pop()
        value = self.pop()
        if inst.arg == 0x08:
            fn.closure = value.iterate(self)
        elif inst.arg == 0x02:
            fn.kwdefaults = value
        elif inst.arg == 0x01:
            fn.defaults = value
        self.push(fn)

    def RAISE_VARARGS(self, inst):
        unimplemented(BreakKind.USER_EXCEPTION, "raising an exception inside a compiled function")

    def LOAD_ASSERTION_ERROR(self, inst):
        unimplemented(BreakKind.USER_EXCEPTION, "an assert that fails while tracing")


class _NullType:
    pass


_RETURN = object()
_PAUSED = object()      # a generator's body stopped at a yield (run() resumes it)


class GeneratorVariable(IteratorVariable):
    """A generator made by a call in traced code. Its body runs as plain Python runs it: each
    next() runs it from where it stopped to its next yield, so what it reads (a variable of
    the enclosing function rebound meanwhile, a list appended to) and the effects it has
    happen between the consumer's steps, in plain Python's order; consuming it all (list(),
    a for loop) runs it to its end."""

    def __init__(self, child):
        super().__init__([], generator=True)
        self._child = child
        child.yields = self._items
        child.pause_on_yield = True

    def _step(self):
        """Run the body to its next yield: True if it yielded, False once it has returned."""
        child = self._child
        if child is None:
            return False
        if child.run() is _PAUSED:
            return True
        self._child = None
        return False

    @property
    def items(self):
        while self._step():
            pass
        return self._items

    @items.setter
    def items(self, value):
        self._items = value

    def next(self):
        if self.index >= len(self._items) and not self._step():
            return None
        item = self._items[self.index]
        self.index += 1
        return item


def _has_handlers(code):
    """Whether `code` has an except, finally or with block of its own (each handler starts with
    PUSH_EXC_INFO; a generator's implicit StopIteration handler does not)."""
    return any(inst.opname == "PUSH_EXC_INFO" for inst in dis.get_instructions(code))


def bind_arguments(code, defaults, kwdefaults, args, kwargs, what):
    """Map call arguments to the code's local names, as Python's call does."""
    argcount = code.co_argcount
    kwonly = code.co_kwonlyargcount
    posonly = code.co_posonlyargcount
    names = code.co_varnames
    pos_names = names[:argcount]
    kw_names = names[argcount:argcount + kwonly]
    idx = argcount + kwonly
    varargs = names[idx] if code.co_flags & CO_VARARGS else None
    if varargs:
        idx += 1
    varkw = names[idx] if code.co_flags & CO_VARKEYWORDS else None
    f_locals = {}
    args = list(args)
    for name, value in zip(pos_names, args):
        f_locals[name] = value
    extra = args[argcount:]
    if extra:
        if varargs is None:
            unimplemented(BreakKind.USER_EXCEPTION, f"{what} takes {argcount} positional arguments but {len(args)} were given")
        f_locals[varargs] = TupleVariable(extra)
    elif varargs:
        f_locals[varargs] = TupleVariable([])
    rest = {}
    for k, v in kwargs.items():
        if k in pos_names[posonly:] or k in kw_names:
            if k in f_locals:
                unimplemented(BreakKind.USER_EXCEPTION, f"{what} got multiple values for argument {k!r}")
            f_locals[k] = v
        elif varkw is not None:
            rest[k] = v
        else:
            unimplemented(BreakKind.USER_EXCEPTION, f"{what} got an unexpected keyword argument {k!r}")
    if varkw is not None:
        f_locals[varkw] = DictVariable(rest)
    n_def = len(defaults)
    for i, name in enumerate(pos_names):
        if name not in f_locals:
            j = i - (argcount - n_def)
            if j < 0:
                unimplemented(BreakKind.USER_EXCEPTION, f"{what} missing required argument {name!r}")
            f_locals[name] = defaults[j]
    for name in kw_names:
        if name not in f_locals:
            if name not in kwdefaults:
                unimplemented(BreakKind.USER_EXCEPTION, f"{what} missing keyword-only argument {name!r}")
            f_locals[name] = kwdefaults[name]
    return f_locals

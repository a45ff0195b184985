"""Python side effects of a traced function (list/dict mutations, attribute
writes on objects that outlive the frame, global assignments), recorded while
tracing and replayed by the transformed function after the graph runs."""
import itertools


class SideEffects:
    def __init__(self):
        self._objects = {}        # id(real object) -> (object, tracker)
        self._mutated = []
        self._mutated_ids = set()
        self._globals = {}        # id(globals dict) -> {name: (tracker, source)}
        self._grads = {}          # id(real tensor) -> (tensor, its tracker, new .grad tracker)
        self.count = 0            # effects recorded so far (a trace can tell whether code had any)
        self._calls = []          # trackers whose reconstruction performs a call (hook registration)
        self._cells = {}          # id(real cell) -> its tracker, whose contents were written

    def track_existing(self, value, var):
        self._objects[id(value)] = (value, var)

    def existing_object(self, value):
        entry = self._objects.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None

    def mutated(self, var):
        self.count += 1
        if var.source is None or id(var) in self._mutated_ids:
            return
        self._mutated_ids.add(id(var))
        self._mutated.append(var)

    def store_global(self, f_globals, name, value, source):
        self.count += 1
        self._globals.setdefault(id(f_globals), {})[name] = (value, source)

    def global_overrides(self, f_globals):
        d = self._globals.get(id(f_globals))
        return {k: v for k, (v, _) in d.items()} if d else {}

    def write_grad(self, real, tensor_var, value):
        self.count += 1
        self._grads[id(real)] = (real, tensor_var, value)

    def grad_written(self, real):
        entry = self._grads.get(id(real))
        return entry[2] if entry is not None and entry[0] is real else None

    def write_cell(self, cell_var):
        self.count += 1
        self._cells[id(cell_var.cell)] = cell_var

    def call_later(self, var):
        self.count += 1
        self._calls.append(var)

    def has_effects(self):
        return bool(self._mutated or self._globals or self._grads or self._calls or self._cells)

    def codegen(self, cg):
        """Statements replaying the effects: first every new value, then every write."""
        from .variables import ListVariable, DictVariable, UserObjectVariable, ModuleVariable
        from .variables.containers import ExistingIteratorVariable
        writes = []
        for var in self._mutated:
            target = var.source.expr()
            if isinstance(var, ExistingIteratorVariable):
                # consume what the trace consumed (islice(it, n, n) skips n items, yields none), to
                # the end where the trace saw the end
                if var.exhausted:
                    writes.append(f"[None for ___ in {target}]")
                else:
                    writes.append(f"next({cg.constant(itertools.islice)}({target}, {var.index}, {var.index}), None)")
            elif getattr(var, "append_only", False):
                writes.append(f"{target}.extend({cg.temp('[' + ', '.join(cg.value(v) for v in var.appended) + ']')})")
            elif isinstance(var, ListVariable):
                writes.append(f"{target}[:] = {cg.temp('[' + ', '.join(cg.value(v) for v in var.items) + ']')}")
            elif isinstance(var, DictVariable):
                tmp = cg.temp("{" + ", ".join(f"{cg.constant(k)}: {cg.value(v)}" for k, v in var.items.items()) + "}")
                writes.append(f"{target}.clear(); {target}.update({tmp})")
            elif isinstance(var, (UserObjectVariable, ModuleVariable)):
                for name in var.written:
                    writes.append(f"setattr({target}, {name!r}, {cg.temp(cg.value(var.attrs[name]))})")
        for var in self._calls:
            cg.value(var)            # performs the call once, unless the return value already did
        for cell_var in self._cells.values():
            writes.append(f"{cg.value(cell_var)}.cell_contents = {cg.temp(cg.value(cell_var.contents))}")
        for _, tensor_var, value in self._grads.values():
            writes.append(f"{tensor_var.source.expr()}.grad = {cg.temp(cg.value(value))}")
        for entries in self._globals.values():
            for name, (value, source) in entries.items():
                writes.append(f"{source.expr()} = {cg.temp(cg.value(value))}")
        return writes

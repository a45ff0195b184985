"""Variable trackers: what each value is while the translator runs."""
from .base import VariableTracker, ConstantVariable, NULL
from .builder import build
from .tensor import TensorVariable, TensorMethodVariable
from .containers import TupleVariable, ListVariable, DictVariable, NamedTupleVariable, IteratorVariable
from .functions import (FunctionVariable, NestedFunctionVariable, BoundMethodVariable, BuiltinVariable,
                        DynjitFunctionVariable, GradModeVariable, CellVariable,
                        RealCellVariable)
from .objects import (UserObjectVariable, NewObjectVariable, ClassVariable, PythonModuleVariable,
                      ModuleVariable, SuperVariable)

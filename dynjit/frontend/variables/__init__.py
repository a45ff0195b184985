"""Variable trackers: what each value is while the translator runs."""
from .base import VariableTracker, ConstantVariable, NULL
from .builder import wrap, build
from .tensor import TensorVariable, TensorMethodVariable
from .containers import TupleVariable, ListVariable, DictVariable, NamedTupleVariable, IteratorVariable
from .functions import (FunctionVariable, NestedFunctionVariable, BoundMethodVariable, BuiltinVariable,
                        DynjitFunctionVariable, GradModeVariable, CellVariable,
                        RealCellVariable)
from .objects import (UserObjectVariable, NewObjectVariable, ClassVariable, PythonModuleVariable,
                      ModuleVariable, SuperVariable)
from . import autograd_function  # noqa: F401  (registers its wrap rule)

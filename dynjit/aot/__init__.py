"""dynjit.aot: ahead-of-time autograd — trace forward and backward into graphs,
functionalize, partition, and compile each half."""
from .aot_autograd import aot_function, aot_module, aot_module_simplified, get_aot_compilation_context
from .compilers import make_boxed_compiler, make_boxed_func, nop, call_compiled
from .partition import default_partition, min_cut_rematerialization_partition
from .functional_call import functional_call

__all__ = ["aot_function", "aot_module", "aot_module_simplified", "make_boxed_compiler",
           "make_boxed_func", "nop", "default_partition", "min_cut_rematerialization_partition",
           "functional_call"]
from .export import aot_export_module, aot_export_joint_simple, GraphSignature, BackwardSignature

__all__ += ["aot_export_module", "aot_export_joint_simple", "GraphSignature", "BackwardSignature"]

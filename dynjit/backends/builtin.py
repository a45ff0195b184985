"""The backends that ship in the core: `eager` (run the graph as generated
Python, op by op) and `aot_eager` (AOT autograd's forward/backward split, then
eager)."""
from .registry import register_backend


@register_backend(name="eager")
def eager(gm, example_inputs, **kwargs):
    return gm.forward


@register_backend(name="aot_eager")
def aot_eager(gm, example_inputs, **kwargs):
    from ..aot import aot_module_simplified, nop
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop)


@register_backend(name="aot_eager_default_partitioner", tags=("debug",))
def aot_eager_default_partitioner(gm, example_inputs, **kwargs):
    from ..aot import aot_module_simplified, nop, default_partition
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop,
                                 partition_fn=default_partition)

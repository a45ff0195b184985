"""The backends that ship in the core: `eager` (run the graph as generated
Python, op by op) and `aot_eager` (AOT autograd: the graph is traced with its
backward, functionalized, split by the min-cut partitioner, and both halves
run as generated Python); `aot_eager_default_partitioner` is the same with
the default partitioner (tagged debug)."""
from .registry import register_backend


@register_backend(name="eager")
def eager(gm, example_inputs, **kwargs):
    return gm.forward


eager.dynjit_scalar_inputs = True    # runs the graph as is: dynamic numbers stay graph inputs


@register_backend(name="aot_eager")
def aot_eager(gm, example_inputs, **kwargs):
    from ..aot import aot_module_simplified, nop, min_cut_rematerialization_partition
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop,
                                 partition_fn=min_cut_rematerialization_partition,
                                 keep_inference_input_mutations=True)


# AOT autograd traces a number input as a number (dynjit.fx.traced_number): one trace serves
# every value of it unless the graph needs the value itself (then it traces per value)
aot_eager.dynjit_scalar_inputs = True


@register_backend(name="aot_eager_default_partitioner", tags=("debug",))
def aot_eager_default_partitioner(gm, example_inputs, **kwargs):
    from ..aot import aot_module_simplified, nop, default_partition
    return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop,
                                 partition_fn=default_partition, keep_inference_input_mutations=True)


aot_eager_default_partitioner.dynjit_scalar_inputs = True

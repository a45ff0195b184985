"""The `llvm` backend: graphs lowered to fused loop kernels, compiled with llvmlite.

- `llvm_backend(gm, example_inputs)`: the backend (registered as `llvm`
  through the `dynjit.backends` entry point). When an example input requires
  grad, the graph goes through AOT autograd with `compile_graph` as forward
  and backward compiler, so both halves of a training step run fused kernels.
- `compile_graph(gm, example_inputs)`: compile one graph as it is (no autograd).

Modules: lowering (grouping and the wrapper), op_lowerings (ops as kernel
primitives), layouts (views as strides), kernel (the kernel description),
codegen (LLVM IR), mathlib (vectorizable exp/log/sin/...), jit (compilation
and the on-disk cache), threads, runtime, compiler.
"""
from .compiler import compile_graph


def llvm_backend(gm, example_inputs, **kwargs):
    if any(getattr(x, "requires_grad", False) for x in example_inputs):
        from dynjit.aot import aot_module_simplified, min_cut_rematerialization_partition
        return aot_module_simplified(gm, example_inputs, fw_compiler=compile_graph, bw_compiler=compile_graph,
                                     partition_fn=min_cut_rematerialization_partition,
                                     keep_inference_input_mutations=True)
    return compile_graph(gm, example_inputs)


# graphs may take Python numbers as inputs (a learning rate, a step, x.shape[0]): those used in
# pointwise math are kernel arguments, those that decide shapes are guarded by value
llvm_backend.dynjit_scalar_inputs = True

__all__ = ["llvm_backend", "compile_graph"]

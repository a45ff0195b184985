"""Count the graphs and graph breaks torch.compile makes for programs of tests/programs (the
numbers test_programs.GRAPH_COUNTS holds). A development tool, run with a Python that has
PyTorch (never a dependency of dynjit):

    /path/to/torch/python tests/programs/torch_graph_counts.py 'NAME|STEPS|{"kwarg": value}' ...
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(specs):
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    from compare_with_torch import load_program
    for spec in specs:
        name, steps, kwargs = spec.split("|")
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        program = load_program(HERE / f"{name}.py", torch_source=True, name=name)
        counter = CompileCounter()
        program.run(steps=int(steps), backend=counter, **json.loads(kwargs))
        breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
        print(f"{name} {kwargs}: graphs {counter.frame_count} breaks {breaks}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The `dynjit` command: demo, explain, backends."""
import io
import textwrap

from dynjit import cli, demo


def test_demo_trains_and_reports_graphs_breaks_and_speed():
    out = io.StringIO()
    loss, accuracy = demo.run(backend="aot_eager", steps=60, out=out, timing_steps=5)
    text = out.getvalue()
    assert accuracy > 0.6 and loss < 0.9          # it learned (chance is 1/3, loss 1.1)
    # forward + loss, and the Adam update; backward() and .item() break the graph
    summary = next(line for line in text.splitlines() if "graph(s)" in line)
    assert summary.endswith("2 graph(s), ops per graph [10, 116], 2 graph break(s)"), text[:3000]
    assert "Tensor.backward() inside a compiled function" in text
    assert "Tensor.item() reads a tensor's data" in text and "demo.py" in text
    assert 'loss: "f32[]" = dynjit.nn.functional.cross_entropy' in text and "more lines)" in text
    assert "Training step (forward, backward, Adam)" in text


def test_explain_command_on_a_users_file(tmp_path, capsys):
    src = tmp_path / "model.py"
    src.write_text(textwrap.dedent("""
        import dynjit

        def f(x):
            y = x.sin()
            print("between")
            return y.cos()

        def f_example_inputs():
            return (dynjit.randn(3),)
    """))
    assert cli.main(["explain", f"{src}:f"]) == 0
    text = capsys.readouterr().out
    assert "Graph count: 2" in text and "Graph break count: 1" in text
    assert "builtin: print" in text and f"{src}:6" in text


def test_backends_command_lists_the_builtin_and_plugin_backends(capsys):
    cli.main(["backends"])
    names = capsys.readouterr().out.split()
    assert {"eager", "aot_eager", "llvm"} <= set(names)


def test_readme_example_and_its_output_are_real():
    import pathlib
    import re
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    blocks = re.findall(r"```(?:python)?\n(.*?)```", readme, re.S)
    example = (root / "examples" / "quickstart.py").read_text()
    assert example in blocks                      # the README shows the file as it is
    shown_output = blocks[blocks.index(example) + 1]
    run = subprocess.run([sys.executable, str(root / "examples" / "quickstart.py")],
                         capture_output=True, text=True, check=True)
    assert run.stdout == shown_output


def test_bench_command_prints_one_row_per_workload(capsys):
    assert cli.main(["bench", "--size", "4096", "--repeat", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[-3:] == ["llvm", "vs", "numpy"]
    assert len(lines) == 4 and all(line.rstrip().endswith("x") for line in lines[1:])
    assert "softmax over rows, 4x1024" in lines[2]

import dynjit
from dynjit.testing import CompileCounter

counter = CompileCounter()          # a backend that counts what it is given

@dynjit.compile(backend=counter)
def f(x):
    y = x.sin() * 2
    print("print() is not traced: a graph break")
    return (y + 1).relu()

print(f(dynjit.arange(4.0)))
print(counter.frame_count, "graphs,", counter.op_count, "ops")

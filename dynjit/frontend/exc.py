"""Why tracing stopped: the reasons a construct cannot be traced."""
from ..exc import Unsupported


def unimplemented(msg):
    raise Unsupported(msg)


class DataDependent(Unsupported):
    """A Python decision depends on a tensor's values (a graph break point)."""

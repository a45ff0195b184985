"""DYNJIT_LOGS / dynjit.set_logs: switch on the JIT's debug loggers.

Topics: graph_breaks, recompiles, guards, graph_code, bytecode, compiled_autograd
(captures, cache hits and passes left to the engine, with the reason), dynamic (which
numbers automatic dynamic made symbolic, and which a trace specialized, where). Each is the
standard `logging` logger `dynjit.<topic>`; they are silent (and cost one
level check) unless switched on.
"""
import logging
import os

TOPICS = ("graph_breaks", "recompiles", "guards", "graph_code", "bytecode", "compiled_autograd", "dynamic")
_handler = None


def set_logs(*topics, **flags):
    """set_logs("recompiles", "graph_breaks") or set_logs(recompiles=True); set_logs() turns all off."""
    global _handler
    wanted = set(topics) | {k for k, v in flags.items() if v}
    unknown = wanted - set(TOPICS) - {"all"}
    if unknown:
        raise ValueError(f"unknown dynjit log topic(s) {sorted(unknown)}; known: {', '.join(TOPICS)}, all")
    if "all" in wanted:
        wanted = set(TOPICS)
    root = logging.getLogger("dynjit")
    if _handler is None:
        _handler = logging.StreamHandler()
        _handler.setFormatter(logging.Formatter("[dynjit.%(topic)s] %(message)s"))
        _handler.addFilter(_TopicFilter())
    if wanted and _handler not in root.handlers:
        root.addHandler(_handler)
    for topic in TOPICS:
        logging.getLogger(f"dynjit.{topic}").setLevel(logging.DEBUG if topic in wanted else logging.WARNING)


class _TopicFilter(logging.Filter):
    def filter(self, record):
        record.topic = record.name.split(".", 1)[-1]
        return True


def init_from_env():
    value = os.environ.get("DYNJIT_LOGS", "").strip()
    if value:
        set_logs(*[t.strip().lstrip("+") for t in value.split(",") if t.strip()])

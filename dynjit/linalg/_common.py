"""What the dynjit.linalg modules share: the refusal of out=."""


def _no_out(out, name):
    if out is not None:
        raise NotImplementedError(f"dynjit.linalg.{name}: out= is not supported; use the returned value")

"""A helper the live figures' unit tests share."""


def strings(obj):
    """Every string of a figure's state (readout, captions, table cells), recursively."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from strings(v)

"""The mark of a figure-making function: ``@live_figure`` (see ``mha_book.figures``)."""

__all__ = ["live_figure"]


def live_figure(function=None, /, **example):
    """Mark ``function`` as one of the book's live figures (it returns a ``mha.live.figure.Figure``);
    ``example`` are the keyword arguments a test builds it with (by default none: the
    function's own defaults). The function is returned unchanged::

        @live_figure
        def dk_softmax(d_k=1, scaled=False): ...

        @live_figure(scores=[2.1, 0.3], tokens=["a", "b"])
        def temperature_bars(scores, tokens, *, value=1.0): ...
    """
    def mark(f):
        f.live_figure_example = dict(example)
        return f

    return mark if function is None else mark(function)

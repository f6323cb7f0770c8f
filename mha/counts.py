from .widgets import count_flops, count_parameters  # noqa: F401

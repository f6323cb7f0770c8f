"""Submodules imported on first access (``mha.viz``), for a package's ``__init__``."""

import importlib


def lazy_submodules(package, names, namespace):
    """``(__getattr__, __dir__)`` for the package ``package`` whose submodules ``names`` load
    when first asked for; ``namespace`` is the package's ``globals()``. A submodule whose own
    dependency is missing raises that ModuleNotFoundError (it says which); any other name is an
    AttributeError."""

    def __getattr__(name):
        if name in names:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise  # a dependency of the submodule is missing: say which
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(list(namespace) + list(names))

    return __getattr__, __dir__

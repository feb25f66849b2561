"""UNIPO: the course's package, in four layers: core/, trainers/, site/ and cli/ (tests/test_layers.py).

``unipo_build.__version__`` is the installed distribution's version, read by importlib.metadata from what
pyproject.toml says (the one place it is typed), when first asked for.
"""


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import version

        return version("unipo")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

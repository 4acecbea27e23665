"""hookcode's version (``hookcode.__version__``), in a module of its own so the plugin manager
can name core's version without importing the public API package."""

__all__ = ["__version__"]

__version__ = "0.1.0"

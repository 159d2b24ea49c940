"""kladder's version, in a module of its own: every layer may read it without importing the package."""
__version__ = "0.1.0"

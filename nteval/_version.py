"""The package version (one place: the front door re-exports it)."""
__version__ = "0.1.0"

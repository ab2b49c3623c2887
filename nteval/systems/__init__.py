"""Search methods: a System is a name + an algorithm + parameters, declared as data (YAML)."""
from .base import ALGORITHMS, System, load_systems

__all__ = ["ALGORITHMS", "System", "load_systems"]

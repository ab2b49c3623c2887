"""Judge-free parameter tuning: a parameter grid evaluated under the NT protocols (and human
judgments when given), parallel across cells and resumable cell by cell."""
from .run import run_grid
from .spec import Axis, parse_axis

__all__ = ["Axis", "parse_axis", "run_grid"]

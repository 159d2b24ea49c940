"""The report: a data model (model.py) and renderers that return text (terminal, JSON).
Renderers never compute; the ladder never formats."""
from .model import ClimbReport, RungReport

__all__ = ["ClimbReport", "RungReport"]

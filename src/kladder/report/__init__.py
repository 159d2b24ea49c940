"""The report: its data (data.py), the words for typed facts (words/), and renderers that
return text (terminal.py, jsonout.py). Renderers never compute and never parse English;
the ladder never formats."""
from .data import ClimbReport, RungReport

__all__ = ["ClimbReport", "RungReport"]

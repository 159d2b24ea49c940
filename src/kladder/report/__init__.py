"""The report: the words for typed facts (words/), the grouping keys from the facts (data.py),
and renderers that return text (terminal.py, jsonout.py) of the climb's results (results.py).
Renderers never compute and never parse English; the ladder never formats."""

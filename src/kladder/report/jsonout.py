"""The report as data: per point its id, rung, status, why, pattern and repro command."""
from __future__ import annotations

import json

from .model import ClimbReport


def render_json(report: ClimbReport) -> str:
    return json.dumps(report.to_dict(), indent=1, default=str)

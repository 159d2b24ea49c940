"""The terminal report against golden text (as pyperf tests its output): each typed report
under tests/golden/ rendered again must give its .txt byte for byte. A change to the words is
then a change to a file a reviewer reads (regenerate with `python tests/golden/make.py`)."""
import json
import os
import sys

import pytest

HERE = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, HERE)
NAMES = sorted(f[:-5] for f in os.listdir(HERE) if f.endswith(".json"))


def test_there_are_golden_reports():
    assert len(NAMES) >= 8


@pytest.mark.parametrize("name", NAMES)
def test_the_report_renders_as_its_golden_text(name):
    from make import report_of

    from kladder.report.terminal import render_text
    with open(os.path.join(HERE, name + ".json")) as f:
        doc = json.load(f)
    with open(os.path.join(HERE, name + ".txt")) as f:
        want = f.read()
    assert render_text(report_of(doc)) == want

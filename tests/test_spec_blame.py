"""Blame where it belongs (issue 34 item 4): a reference whose output shape disagrees with
returns= is BROKEN, the reference named, never a FAILED point of the kernel. (The mistakes a spec
can be refused for when it loads are in tests/test_malformed_specs.py's CASES.)"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(__file__)


def test_a_reference_of_the_wrong_shape_is_broken_not_the_kernels_failure(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", os.path.join(HERE, "specs", "ref_shape.py"),
                        "--rungs", "1", "--device", "cpu", "--json", str(out), "--no-history", "--shrink-s", "0"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    report = json.loads(out.read_text())
    points = [o for r in report["rungs"] for o in r.get("points", [])]
    assert points and all(o["status"] == "broken" for o in points), [o["status"] for o in points]
    assert {o["note"]["kind"] for o in points} == {"reference_shape"}
    assert "the reference returned `out` of shape" in p.stdout and "not a kernel failure" in p.stdout
    assert "failed" not in {o["status"] for o in points}

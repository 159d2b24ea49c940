"""`kladder climb --ray ADDRESS` on a local Ray instance (two workers, on the CPU) gives the
report a local climb gives: each point's status and failure, the verdicts, the exit status; a
crashing point is still one point's crash (kladder's own worker, inside the Ray actor, died)."""
import json
import os
import subprocess
import sys

import pytest
from conftest import report_json

pytest.importorskip("ray")

HERE = os.path.dirname(__file__)
SPEC = os.path.join("specs", "crash_and_tail.py")     # 9 rung-1 points: a crash (N = 1), a wrong element (N = 3)


def climb(json_path, *extra):
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", SPEC, "--rungs", "1", "--device", "cpu", "-j", "2",
                        "-q", "--log", os.devnull, "--json", str(json_path), *extra],
                       capture_output=True, text=True, timeout=600, cwd=HERE)
    if p.returncode == 2 and "Ray did not start" in p.stderr:
        # Ray's node waits 30 s (fixed in ray/_private/node.py) for its raylet: a host loaded past that is not kladder's
        pytest.skip("Ray's local node did not start on this loaded host: " + p.stderr.strip()[-300:])
    assert p.returncode in (0, 1), p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return p.returncode, report_json(json_path)


def _points(doc) -> dict:
    return {json.dumps(pt["point"], sort_keys=True): (pt["status"], pt["failure"]) for r in doc["rungs"] for pt in r["points"]}


def test_a_climb_on_local_ray_gives_the_local_climbs_report(tmp_path):
    rc, local = climb(tmp_path / "local.json")
    ray_rc, on_ray = climb(tmp_path / "ray.json", "--ray", "local")
    assert rc == ray_rc == local["exit_code"] == on_ray["exit_code"] == 1
    assert _points(on_ray) == _points(local)
    statuses = {s for s, _ in _points(local).values()}
    assert {"passed", "failed"} <= statuses
    failures = {f for _, f in _points(local).values() if f}
    assert "crashed" in failures and len(failures) >= 2      # the crash and the wrong element, each its own point's
    assert [(r["rung"], r["verdict"], r["counts"]) for r in on_ray["rungs"]] == \
        [(r["rung"], r["verdict"], r["counts"]) for r in local["rungs"]]
    assert on_ray["device_name"] == local["device_name"] and on_ray["fingerprint"]["torch"] == local["fingerprint"]["torch"]


def test_ray_with_a_cuda_device_on_a_cpu_cluster_is_a_usage_error(monkeypatch):
    from kladder.climbing.ladder import UsageError
    from kladder.run import ray_lanes

    class CpuCluster:                   # what ray.cluster_resources() says of a cluster without GPUs
        @staticmethod
        def cluster_resources():
            return {"CPU": 2.0}
    monkeypatch.setattr(ray_lanes, "connect", lambda address: CpuCluster)
    assert ray_lanes.cluster_device("local", "auto") == "cpu"
    with pytest.raises(UsageError, match="--device cuda --ray 'local': the cluster has no GPU"):
        ray_lanes.cluster_device("local", "cuda")
    with pytest.raises(UsageError, match="--device 'gpu'"):
        ray_lanes.cluster_device("local", "gpu")

"""Regenerate the golden reports: `python tests/golden/make.py [NAME...]` (a few minutes on the
CPU); `--render` only renders the stored JSON again (after a change to the words).

Each climb's typed report (outcomes as Outcome.to_dict, times set to fixed values) goes to
NAME.json and its terminal text to NAME.txt; tests/test_golden.py renders the JSON again and
compares with the text byte for byte (as pyperf tests its output). Read the new .txt files
before committing them: they are what users see."""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "..", "specs")
sys.path.insert(0, os.path.join(HERE, ".."))
os.environ.setdefault("TRITON_INTERPRET", "1")

CLIMBS = {
    "faulty": (os.path.join(SPECS, "faulty.py"), (1,), {"timeout_s": 3}),
    "flaky": (os.path.join(SPECS, "flaky.py"), (1,), {}),
    "stateful": (os.path.join(SPECS, "stateful.py"), (1, 4), {}),
    "exits": (os.path.join(SPECS, "exits.py"), (1,), {}),
    "assumes_contiguous": ("kladder.zoo.assumes_contiguous::spec", (3,), {}),
    "padding_scale_read": ("kladder.zoo.padding_scale_read::spec", (3,), {}),
    "shared_kernel_reference": ("kladder.zoo.shared_kernel_reference::spec", (3,), {}),
    "rmsnorm_n_tail": ("kladder.zoo.rmsnorm_n_tail::spec", (1,), {}),
    "compounding_bias": ("kladder.zoo.compounding_bias::spec", (2,), {}),
}


def typed(report) -> dict:
    """The report as typed data, times fixed so that the text is the same every time."""
    rungs = []
    for i, r in enumerate(report.rungs):
        outs = []
        for j, o in enumerate(r.outcomes):
            d = o.to_dict()
            d["seconds"] = 0.01 * (j + 1)
            outs.append(d)
        rungs.append({"rung": r.rung, "title": r.title, "climbed": r.climbed, "note": r.note,
                      "interrupted": r.interrupted, "seconds": 1.5 * (i + 1), "outcomes": outs})
    return {"spec": report.spec, "ref": report.ref.replace(os.path.abspath(SPECS), "tests/specs"), "device": report.device,
            "device_name": report.device_name, "seconds": 12.5, "interrupted": report.interrupted,
            "log_path": "log.jsonl", "kladder_version": report.kladder_version, "rungs": rungs}


def report_of(doc: dict):
    from kladder.core.outcome import Outcome
    from kladder.core.results import ClimbReport, RungReport
    rungs = [RungReport(r["rung"], r["title"], [Outcome.from_dict(o) for o in r["outcomes"]], r["seconds"], r["climbed"],
                        r["note"], r["interrupted"]) for r in doc["rungs"]]
    return ClimbReport(doc["spec"], doc["ref"], doc["device"], doc["device_name"], rungs, doc["seconds"],
                       doc["interrupted"], doc["log_path"], "", doc["kladder_version"])


def local(text: str) -> str:
    """Paths of this checkout written as the repository's own ('tests/specs/faulty.py')."""
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    return text.replace(os.path.join(root, "tests", "golden", "..", "specs"), "tests/specs").replace(root + os.sep, "")


def render(name: str) -> None:
    from kladder.report.terminal import render_text
    with open(os.path.join(HERE, name + ".json")) as f:
        doc = json.load(f)
    with open(os.path.join(HERE, name + ".txt"), "w") as f:
        f.write(render_text(report_of(doc)))


def main() -> None:
    import kladder as kl
    names = [a for a in sys.argv[1:] if not a.startswith("-")] or list(CLIMBS)
    for name in names:
        if "--render" not in sys.argv:
            ref, rungs, kw = CLIMBS[name]
            rep = kl.climb(ref, rungs=rungs, device="cpu", log_path=os.devnull, jobs=2, **kw)
            with open(os.path.join(HERE, name + ".json"), "w") as f:
                f.write(local(json.dumps(typed(rep), indent=1, default=str)))
            print(name, len(rep.outcomes), "points")
        render(name)


if __name__ == "__main__":
    main()

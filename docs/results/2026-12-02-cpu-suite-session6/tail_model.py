"""A model (not a measurement) of what collecting the costliest tests first does to the suite's
wall time on 2 xdist workers: session 3's idle durations of its 40 slowest tests
(docs/results/2026-12-01-cpu-zoo-session3/suite.txt), the rest of its 2 x 2,140 worker-seconds
as 1-second tests spread over the files in pytest's order; each free worker takes the next test
(xdist's load scheduling, groups aside). Prints the wall time in pytest's order and costliest first."""
import pathlib
import re

# the files the 40 slowest tests are in, by their cost there
COSTLIEST_FIRST = ["test_zoo.py", "test_rung8.py", "test_pytest_plugin.py", "test_cli.py", "test_modes.py",
                   "test_readme.py", "test_rung6.py", "test_isolation.py"]
HERE = pathlib.Path(__file__).resolve().parent
SUITE = HERE.parent / "2026-12-01-cpu-zoo-session3" / "suite.txt"


def tests():
    slow = {}
    for line in SUITE.read_text().splitlines():
        m = re.match(r"([0-9.]+)s (call|setup|teardown) +(\S+)", line)
        if m:
            slow[m.group(3)] = slow.get(m.group(3), 0.0) + float(m.group(1))
    files = sorted({t.split("::")[0] for t in slow} | {f"tests/{p.name}" for p in (HERE.parents[2] / "tests").glob("test_*.py")})
    rest = 2 * 2140 - sum(slow.values())
    filler = {f: rest / len(files) for f in files}
    out = []
    for f in files:                                      # pytest's order: files by name, then their tests
        out += [(t, s) for t, s in slow.items() if t.startswith(f + "::")]
        out += [(f"{f}::small{i}", 1.0) for i in range(int(filler[f]))]
    return out


def wall(order):
    free = [0.0, 0.0]
    for _, s in order:
        i = free.index(min(free))
        free[i] += s
    return max(free)


def main():
    order = tests()
    files = list(COSTLIEST_FIRST)

    def rank(t):
        f = t[0].split("::")[0].split("/")[-1]
        return (files.index(f), -t[1]) if f in COSTLIEST_FIRST else (len(files), 0)
    print(f"pytest's order:   {wall(order):7.0f} s")
    print(f"costliest first:  {wall(sorted(order, key=rank)):7.0f} s")
    print(f"lower bound:      {sum(s for _, s in order) / 2:7.0f} s (the work over 2 workers)")


if __name__ == "__main__":
    main()

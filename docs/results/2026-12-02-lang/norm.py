"""A climb's JSON without what differs run to run: times, paths, run ids, logs, versions
(keys by name; durations inside sentences as '<t> s'). usage: norm.py FILE.json"""
import json, re, sys
TIMEY = re.compile(r"(seconds|_s$|time|started|ended|elapsed|duration|calls_s|wall|date|host|pid|path|file|dir|stages|"
                   r"fingerprint|version|commit|python|torch|triton|cwd|run_id|^log$)", re.I)
def clean(v):
    if isinstance(v, dict):
        return {a: ("<t>" if TIMEY.search(a) else clean(b)) for a, b in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, str):
        v = re.sub(r"/work/(main|wt/lang)/|/tmp/lang/base/", "/ROOT/", v)
        return re.sub(r"\b\d+(\.\d+)? s\b", "<t> s", v)
    return v
print(json.dumps(clean(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))

"""kladder's memory: every climb and repro in one SQLite file (store.py), what changed between
two of them (diff.py), and the output hashes kept as golden for a (device, toolchain)
(golden.py). Only the standard library's sqlite3."""

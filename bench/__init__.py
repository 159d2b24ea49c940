"""kladder's benchmarks, as a tool: `python -m bench list`, `python -m bench NAME [ARGS...]`
(bench/run.py). Each bench is also a script of its own (`python bench/NAME.py --help`)."""

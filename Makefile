# The two commands the README shows: `make book` and `make test`. Both set everything up first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BOOK := _build/html/index.html
# 2 workers for the unit tests and nbval (CI's machines have 2 cores)
JOBS ?= 2

.PHONY: help setup frontend-deps frontend assets book student-notebooks assignments assignments-test course-test test unit notebooks colab-check lint browser lab clean
help:
	@echo "make book   build the HTML book (all notebooks executed) into _build/html"
	@echo "make test   unit tests, the nbgrader course, nbval over every notebook, the book build and a headless-browser test"
	@echo "make lab    open JupyterLab on the chapters"
	@echo "make colab-check   run every chapter outside the checkout with only mha[book] installed"
	@echo "make student-notebooks   the notebooks without exercise solutions (_build/student-notebooks)"
	@echo "make assignments   an nbgrader course, one assignment per chapter (course/, kept by make clean; own venv)"
	@echo "make course-test   one assignment through a real JupyterHub: a teacher, four students, the exchange"
	@echo "make frontend   rebuild the live figures' committed bundles from their ES modules (after editing mha/static/src or mha_book/static/src)"
	@echo "make clean  remove build outputs (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

setup: $(STAMP)

assets:
	bash scripts/offline_assets.sh

# the live figures' front end: ES modules (mha/static/src/, mha_book/static/src/) bundled by
# esbuild into mha/static/live.js, mha/static/widget.js and mha_book/static/book.js, which are
# committed (Colab and pip users have no npm); eslint and prettier check the sources. The tools
# come from frontend/package-lock.json (npm ci); after that everything runs offline.
FRONTEND_STAMP := frontend/node_modules/.installed
$(FRONTEND_STAMP): frontend/package.json frontend/package-lock.json
	npm ci --prefix frontend --no-audit --no-fund --loglevel=error
	touch $@

frontend-deps: $(FRONTEND_STAMP)

frontend: $(FRONTEND_STAMP)
	node frontend/build.mjs

# transformers (requirements-parity.txt), installed into .venv for the parity tests
# (tests/test_parity_hf.py, `make unit`) and for the book's build (`make book`: chapter 10 draws
# a tiny random BERT's heads with mha.head_view); never a dependency of the mha package, and a
# chapter run without it (Colab, `make colab-check`) prints how to get that figure instead
PARITY_STAMP := $(VENV)/.installed-parity
$(PARITY_STAMP): requirements-parity.txt $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-parity.txt
	touch $@

# --all: every build executes every notebook afresh (an incremental build would keep old outputs
# after a change to the package)
book: setup assets $(PARITY_STAMP)
	$(BIN)/jupyter-book build . --all -W -n --keep-going
	@echo "The book is at $(abspath $(BOOK)) (open it in a browser, or: $(BIN)/python -m http.server -d _build/html)"

# copies of the notebooks without exercise solutions, for assessed labs
student-notebooks: setup
	$(BIN)/python scripts/student_notebooks.py _build/student-notebooks

# nbgrader lives in its own venv (requirements-nbgrader.txt: nbgrader, its Jupyter stack, the
# chapters' libraries, CPU torch), never in the book's .venv nor in the package's dependencies
NBG_VENV := .venv-nbgrader
NBG_BIN := $(NBG_VENV)/bin
NBG_STAMP := $(NBG_VENV)/.installed
# the course lives outside _build, so that `make clean` never touches its gradebook, submissions
# and feedback (git ignores course/); `make assignments FORCE=1` replaces files a teacher changed
# (scripts/assignments.py keeps a copy in course/backup/), HINTS=off leaves the hints out
COURSE ?= course

$(NBG_STAMP): requirements-nbgrader.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "nbgrader 0.9.6 needs Python 3.11 or later; got " + sys.version.split()[0] + " (try: make assignments PYTHON=python3.11)")'
	test -x $(NBG_BIN)/python || $(PYTHON) -m venv $(NBG_VENV)
	$(NBG_BIN)/python -m pip install --quiet --upgrade pip
	$(NBG_BIN)/python -m pip install --quiet -r requirements-nbgrader.txt
	$(NBG_BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# the course directory for nbgrader: source/ (solutions marked) and release/ (student copies);
# see appendix/teachers.md. nbgrader runs `alembic` from PATH, hence the PATH.
assignments: $(NBG_STAMP)
	$(NBG_BIN)/python scripts/assignments.py $(COURSE) $(if $(FORCE),--force) $(if $(filter off,$(HINTS)),--no-hints)
	cd $(COURSE) && PATH="$(abspath $(NBG_BIN)):$$PATH" $(abspath $(NBG_BIN))/nbgrader generate_assignment "*" --force
	@echo "The course is in $(COURSE): hand out $(COURSE)/release/<chapter>/ (appendix/teachers.md)"

# generate, autograde and feedback with the real nbgrader (tests/assignments, in its own venv)
assignments-test: $(NBG_STAMP)
	$(NBG_BIN)/python -m pytest tests/assignments --noconftest -v -s -p no:cacheprovider --durations=5

# one assignment through a real JupyterHub on 127.0.0.1 (tests/course_hub, scripts/hub_course.py):
# JupyterHub in the nbgrader venv (requirements-hub.txt), its proxy configurable-http-proxy from
# npm (pinned in tests/course_hub/package-lock.json); about 2 minutes on 2 cores
HUB_STAMP := $(NBG_VENV)/.installed-hub
CHP := tests/course_hub/node_modules/.bin/configurable-http-proxy
$(HUB_STAMP): requirements-hub.txt $(NBG_STAMP)
	$(NBG_BIN)/python -m pip install --quiet -r requirements-hub.txt
	touch $@

$(CHP): tests/course_hub/package.json tests/course_hub/package-lock.json
	npm ci --prefix tests/course_hub --no-audit --no-fund --loglevel=error
	touch $@

course-test: $(HUB_STAMP) $(CHP)
	$(NBG_BIN)/python -m pytest tests/course_hub --noconftest -v -s -p no:cacheprovider

JS_SOURCES := mha/static/src mha_book/static/src
lint: setup $(FRONTEND_STAMP)
	$(BIN)/ruff check mha mha_book tests benchmarks scripts
	$(BIN)/lint-imports
	frontend/node_modules/.bin/eslint -c frontend/eslint.config.js $(JS_SOURCES) frontend
	frontend/node_modules/.bin/prettier --config frontend/.prettierrc.json --check $(JS_SOURCES) frontend/*.mjs frontend/*.js
	node frontend/build.mjs --check

unit: setup $(PARITY_STAMP) $(FRONTEND_STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/built_book --ignore=tests/assignments --ignore=tests/course_hub -n $(JOBS) -q

notebooks: setup
	$(BIN)/python -m pytest --nbval-lax --nbval-current-env -n $(JOBS) --dist loadfile -v -p no:cacheprovider chapters

# every chapter run outside the checkout with only the `mha` wheel (+ [book]) installed, in a
# Colab-like environment (ipywidgets 7.7.1, the extra's floors) and in the newest one
colab-check: setup
	$(BIN)/python scripts/colab_check.py --jobs $(JOBS)

# the browser tests in $(JOBS) processes, each with its own Chromium; one page's checks stay in
# one process (--dist loadgroup), so a page is loaded once for them
browser: setup
	$(BIN)/python -m pytest tests/built_book -n $(JOBS) --dist loadgroup -v -p no:cacheprovider --durations=10

test: lint unit assignments-test course-test notebooks colab-check book browser
	@echo "make test: all checks passed"

# JupyterLab's settings for the book (lab-settings/overrides.json: defaults a reader may change):
# a notebook saves its widgets' state, so a saved chapter shows its explorer again with no kernel
lab: setup
	$(BIN)/jupyter lab --LabApp.app_settings_dir=$(CURDIR)/lab-settings chapters

clean:
	rm -rf _build _static_offline .pytest_cache .hypothesis

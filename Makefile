# Two entry points for a new user: `make reproduce` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= all
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: venv lock reproduce smoke test lint datasets report bundle clean-results

# The environment is installed from requirements.lock (exact versions and hashes of every package, the build backend
# included), then the package itself without touching its dependencies. `make lock` refreshes the lock.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

venv: $(STAMP)

# Re-resolve every dependency (pyproject.toml: the package, its `test` and `cluster` extras, the build backend) to
# the newest versions allowed, for Python 3.11 and later on every platform, with hashes. Commit the result.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile --quiet pyproject.toml --extra test --extra cluster --group pyproject.toml:build \
	    --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock" \
	    -o requirements.lock

reproduce: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)
	@echo "Reproduction report: $(CURDIR)/results/report/index.html"

smoke: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config/smoke.yaml
	@echo "Reproduction report: $(CURDIR)/results/report/index.html"

datasets: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) datasets

test: $(STAMP)
	$(BIN)/python -m pytest -q

report: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) report
	$(BIN)/snakemake --report results/report/snakemake-report.html
	@echo "Reproduction report: $(CURDIR)/results/report/index.html"

# One archive of a finished run's results (metrics, notebooks, figures, report, provenance) with a checksum manifest.
bundle: $(STAMP)
	$(BIN)/repro-dpadmm bundle

lint: $(STAMP)
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results/*/ logs/

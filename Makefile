# Two entry points for a new user: `make reproduce` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORES  ?= all
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: venv reproduce smoke test lint datasets report clean-results

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,cluster]'
	touch $(STAMP)

venv: $(STAMP)

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

lint: $(STAMP)
	$(BIN)/snakemake --lint

clean-results:
	rm -rf results/*/ logs/

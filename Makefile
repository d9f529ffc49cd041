# perfmodel developer shortcuts. The README's two commands are the reference; these wrap the same steps.
PY ?= .venv/bin/python
export PERFMODEL_DATA ?= $(abspath ../shared/datasets)

.PHONY: venv install test verify summary features-table bench ci clean

venv:
	python3 -m venv .venv
	.venv/bin/pip install torch==2.13.0

install: venv
	.venv/bin/pip install -e ".[torch,tests,notebooks]"

test:
	$(PY) -m pytest --nbmake tests notebooks

verify:
	.venv/bin/perfmodel data verify

summary:
	.venv/bin/perfmodel data summary

features-table:
	$(PY) -m perfmodel.features.zoo_table

bench:
	$(PY) benchmarks/bench_features.py

ci:
	bash .ci/run

clean:
	rm -rf build dist *.egg-info .pytest_cache .hypothesis

"""Data that ships with perfmodel (installed as ``perfmodel._data``).

* ``registry.csv`` — every upstream file perfmodel uses: path in its repository, sha256, repository, pinned commit, licence.
* ``reference/`` — numbers the papers *report* (tables, figure values, arrays hard-coded in the authors' notebooks), each row cited.
* ``measurements/`` — measurements made by perfmodel itself.

No upstream data file is stored here; they are fetched (pooch) or read from ``PERFMODEL_DATA``.
"""

"""Fitted tree ensembles stored as plain arrays: a file that cannot run code when it is loaded.

perfmodel ships its fitted operator model (:mod:`perfmodel.models.op_latency`) and writes a user's refit in one format:
a ZIP of ``.npy`` arrays (NumPy's ``.npz``), read with ``numpy.load(allow_pickle=False)`` — numbers and a JSON header,
never a pickle. The file's bytes are deterministic (fixed member order and time stamps, no compression), so a rebuild
from the same data and code gives the same content (and, with the same zlib, the same sha256); the loader checks the
sha256 before it reads anything:

* the shipped artifact's sha256 is pinned in the code (:data:`perfmodel.models.op_latency.SHIPPED_SHA256`);
* a file written by :func:`save` gets a ``<file>.sha256`` beside it, written after the file itself.

A gradient-boosted regressor (scikit-learn's ``HistGradientBoostingRegressor``) is exported tree by tree as the arrays
of its nodes (feature, threshold, children, leaf value, where a missing value goes) and evaluated by
:class:`TreeEnsemble` exactly as scikit-learn does — the same comparisons (``x <= threshold`` goes left), the leaf
values added in the same order to the same baseline — so a loaded model predicts bit for bit what the fitted one did.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["TreeEnsemble", "from_sklearn", "save", "load", "recorded_sha256", "sha256_of", "ArtifactError", "FORMAT"]

#: Format name and version written into every artifact's header.
FORMAT = "perfmodel-trees/1"

_NODE_FIELDS = ("feature", "threshold", "left", "right", "value", "is_leaf", "missing_left")
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class ArtifactError(ValueError):
    """A fitted-model artifact is missing, altered, truncated or of another format; the message says which file."""


class TreeEnsemble:
    """A sum of regression trees over numeric features: ``baseline + Σ_t leaf_t(x)``, trees added in order.

    Parameters
    ----------
    baseline : float
        The constant the sum starts from.
    offsets : array of int, shape (n_trees + 1,)
        Tree ``t`` holds the nodes ``offsets[t]:offsets[t + 1]``; its root is the first.
    feature, threshold, left, right, value, is_leaf, missing_left : arrays, one entry per node
        ``left``/``right`` are absolute node indices. At an inner node a row goes left when its feature is
        ``<= threshold`` (or is NaN and ``missing_left``); a leaf contributes ``value``.
    """

    def __init__(self, baseline, offsets, feature, threshold, left, right, value, is_leaf, missing_left):
        self.baseline = float(baseline)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.left = np.asarray(left, dtype=np.int64)
        self.right = np.asarray(right, dtype=np.int64)
        self.value = np.asarray(value, dtype=np.float64)
        self.is_leaf = np.asarray(is_leaf, dtype=bool)
        self.missing_left = np.asarray(missing_left, dtype=bool)
        n = len(self.value)
        if not (self.offsets.ndim == 1 and len(self.offsets) >= 1 and self.offsets[0] == 0 and self.offsets[-1] == n
                and (np.diff(self.offsets) > 0).all()):
            raise ArtifactError("tree offsets must start at 0, grow strictly and end at the number of nodes.")
        if any(len(getattr(self, f)) != n for f in _NODE_FIELDS):
            raise ArtifactError("every node array of a tree ensemble must have one entry per node.")
        inner = ~self.is_leaf
        for side in (self.left, self.right):
            if inner.any() and not ((side[inner] > np.flatnonzero(inner)) & (side[inner] < n)).all():
                raise ArtifactError("a child index points outside its ensemble or backwards (a corrupt artifact).")
        if not np.isfinite(self.value[self.is_leaf]).all():
            raise ArtifactError("a leaf value is not finite (a corrupt artifact).")
        if (self.feature[inner] < 0).any():
            raise ArtifactError("a split on a negative feature index (a corrupt artifact).")

    def _walk(self):
        """Arrays of the NumPy walk (built on first use): a leaf is its own child (feature 0, any comparison leads back
        to it), and the depth of the deepest leaf."""
        if getattr(self, "_walk_arrays", None) is None:
            n = len(self.value)
            idx = np.arange(n)
            inner = ~self.is_leaf
            depth = np.zeros(n, dtype=np.int64)
            for i in np.flatnonzero(inner):  # children come after their parent: one pass in index order sets every depth
                depth[self.left[i]] = depth[self.right[i]] = depth[i] + 1
            self._walk_arrays = (np.where(self.is_leaf, 0, self.feature), np.where(self.is_leaf, 0.0, self.threshold),
                                 np.where(self.is_leaf, idx, self.left), np.where(self.is_leaf, idx, self.right),
                                 self.missing_left | self.is_leaf, int(depth.max()) if n else 0)
        return self._walk_arrays

    @property
    def n_trees(self) -> int:
        return len(self.offsets) - 1

    def _compiled(self):
        """scikit-learn's compiled tree walker over these nodes (its ``TreePredictor``), or None where the installed
        scikit-learn does not offer it. Built from the arrays, never unpickled; it gives the same numbers as the
        NumPy walk below (a test checks both against scikit-learn's own estimator)."""
        if getattr(self, "_sk", False) is not False:
            return self._sk
        self._sk = None
        try:
            from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE, X_BITSET_INNER_DTYPE
            from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor

            preds = []
            for t in range(self.n_trees):
                a, b = self.offsets[t], self.offsets[t + 1]
                nodes = np.zeros(b - a, dtype=PREDICTOR_RECORD_DTYPE)
                nodes["value"] = self.value[a:b]
                nodes["feature_idx"] = self.feature[a:b]
                nodes["num_threshold"] = self.threshold[a:b]
                nodes["missing_go_to_left"] = self.missing_left[a:b]
                nodes["left"] = np.where(self.is_leaf[a:b], 0, self.left[a:b] - a)
                nodes["right"] = np.where(self.is_leaf[a:b], 0, self.right[a:b] - a)
                nodes["is_leaf"] = self.is_leaf[a:b]
                empty = np.zeros((0, 8), dtype=X_BITSET_INNER_DTYPE)
                preds.append(TreePredictor(nodes, empty, empty))
            f_idx_map = np.zeros(int(self.feature.max()) + 1 if len(self.feature) else 1, dtype=np.uint32)
            self._sk = (preds, np.zeros((0, 8), dtype=X_BITSET_INNER_DTYPE), f_idx_map)
        except Exception:  # pragma: no cover - a scikit-learn without this private API: the NumPy walk answers
            self._sk = None
        return self._sk

    def predict(self, X, *, method: str = "auto") -> np.ndarray:
        """Sum of the trees' leaves for each row of ``X`` (2-D, float64), added tree by tree as scikit-learn does.

        ``method``: ``"auto"`` (scikit-learn's compiled walker where available, else NumPy) or ``"numpy"``."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x features); got shape {X.shape}.")
        n_rows = X.shape[0]
        out = np.full(n_rows, self.baseline)
        if n_rows == 0:
            return out
        sk = self._compiled() if method == "auto" else None
        if sk is not None:
            preds, bitsets, f_idx_map = sk
            for p in preds:
                out += p.predict(X, bitsets, f_idx_map, 1)
            return out
        # every (tree, row) pair walks down together; a leaf points at itself, so walking on from it stays there
        feature, threshold, left, right, missing_left, depth = self._walk()
        node = np.repeat(self.offsets[:-1, None], n_rows, axis=1)  # (trees, rows): every row at every root
        cols = np.arange(n_rows)
        for _ in range(depth):
            x = X[cols, feature[node]]
            go_left = np.where(np.isnan(x), missing_left[node], x <= threshold[node])
            node = np.where(go_left, left[node], right[node])
        leaves = self.value[node]
        for t in range(leaves.shape[0]):
            out += leaves[t]
        return out

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The node arrays in their smallest exact dtypes (indices as int32, flags as bool; values as float64)."""
        small = {"feature": np.int32, "left": np.int32, "right": np.int32, "offsets": np.int64}
        out = {f"{prefix}/offsets": self.offsets}
        for f in _NODE_FIELDS:
            a = getattr(self, f)
            if f in small:
                if len(a) and (a.max() > np.iinfo(np.int32).max or a.min() < 0):
                    raise ValueError(f"{f} does not fit int32")
                a = a.astype(small[f])
            out[f"{prefix}/{f}"] = a
        return out

    @classmethod
    def from_arrays(cls, arrays, prefix: str, baseline: float) -> "TreeEnsemble":
        return cls(baseline, arrays[f"{prefix}/offsets"], *(arrays[f"{prefix}/{f}"] for f in _NODE_FIELDS))


def from_sklearn(est) -> TreeEnsemble:
    """The trees of a fitted ``HistGradientBoostingRegressor`` (numeric features, one tree per iteration)."""
    preds = est._predictors
    if any(len(it) != 1 for it in preds):
        raise ValueError("only single-output regressors (one tree per iteration) can be exported.")
    nodes = [it[0].nodes for it in preds]
    if any(n["is_categorical"].any() for n in nodes):
        raise ValueError("trees with categorical splits cannot be exported (perfmodel's features are numeric).")
    sizes = np.array([len(n) for n in nodes], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    cat = np.concatenate(nodes)
    shift = np.repeat(offsets[:-1], sizes)
    baseline = np.asarray(est._baseline_prediction, dtype=np.float64).ravel()
    if baseline.size != 1:
        raise ValueError("only single-output regressors can be exported.")
    return TreeEnsemble(baseline[0], offsets, cat["feature_idx"], cat["num_threshold"], cat["left"].astype(np.int64) + shift,
                        cat["right"].astype(np.int64) + shift, cat["value"], cat["is_leaf"].astype(bool),
                        cat["missing_go_to_left"].astype(bool))


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def to_bytes(header: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """The artifact's bytes: ``header.json`` then the arrays in sorted order, deflated at level 9, with fixed dates."""
    for k, a in arrays.items():
        if a.dtype.hasobject:
            raise TypeError(f"array {k!r} holds Python objects; an artifact holds numbers only.")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        head = json.dumps({"format": FORMAT, **header}, sort_keys=True, indent=1).encode()
        for name, data in [("header.json", head), *((f"{k}.npy", _npy_bytes(arrays[k])) for k in sorted(arrays))]:
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return buf.getvalue()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write the fitted model to {path}: a folder is there. Remove it or choose another path.")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(path, header: dict, arrays: dict[str, np.ndarray]) -> str:
    """Write the artifact atomically (a temporary file renamed over ``path``), then ``<path>.sha256``; returns the sha256.

    Callers that may race (several processes refitting into one cache) hold a lock on the path around the fit and
    the save (:func:`perfmodel.models.op_latency.fit_op_model`)."""
    path = Path(path)
    data = to_bytes(header, arrays)
    digest = sha256_of(data)
    _write_atomic(path, data)
    _write_atomic(path.with_name(path.name + ".sha256"), f"{digest}  {path.name}\n".encode())
    return digest


def recorded_sha256(path) -> str:
    """The sha256 :func:`save` recorded in ``<path>.sha256`` beside an artifact."""
    path = Path(path)
    side = path.with_name(path.name + ".sha256")
    if not side.is_file():
        raise ArtifactError(f"{path} has no {side.name} beside it, so its integrity cannot be checked; "
                            "rebuild it with `perfmodel fit` (which writes both).")
    words = side.read_text(encoding="ascii", errors="replace").split()
    return words[0] if words else ""


def load(path, *, sha256: str | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """Read an artifact after checking its sha256 (``sha256`` given, or the ``<path>.sha256`` written beside it).

    Raises
    ------
    ArtifactError
        No such file, no recorded hash, a hash that differs (an altered or truncated file), or not this format.
    """
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"no fitted-model artifact at {path}.")
    data = path.read_bytes()
    if sha256 is None:
        sha256 = recorded_sha256(path)
    got = sha256_of(data)
    if got != sha256:
        raise ArtifactError(f"the fitted-model artifact {path} has sha256 {got[:16]}…, expected {sha256[:16]}…: it was altered "
                            "or truncated after it was written. perfmodel refuses it; rebuild it with `perfmodel fit`.")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            header = json.loads(z.read("header.json"))
            arrays = {}
            for name in z.namelist():
                if name.endswith(".npy"):
                    arrays[name[:-4]] = np.lib.format.read_array(io.BytesIO(z.read(name)), allow_pickle=False)
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ArtifactError(f"{path} is not a perfmodel fitted-model artifact ({exc}).") from exc
    if header.get("format") != FORMAT:
        raise ArtifactError(f"{path} is of format {header.get('format')!r}; this perfmodel reads {FORMAT!r}.")
    return header, arrays

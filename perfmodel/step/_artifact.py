"""Fitted tree ensembles stored as plain arrays: a file that cannot run code when it is loaded.

perfmodel ships its fitted operator model (:mod:`perfmodel.step.op_latency`) and writes a user's refit in one format:
a ZIP of ``.npy`` arrays (NumPy's ``.npz``), read with ``numpy.load(allow_pickle=False)`` — numbers and a JSON header,
never a pickle. The file's bytes are deterministic (fixed member order and time stamps, no compression), so a rebuild
from the same data and code gives the same content (and, with the same zlib, the same sha256); the loader checks the
sha256 before it reads anything:

* the shipped artifact's sha256 is pinned in the code (:data:`perfmodel.step.op_latency.SHIPPED_SHA256`);
* a file written by :func:`save` gets a ``<file>.sha256`` beside it (see :func:`save` for the order of the writes).

A hash proves that a file was not altered after it was written, not that it is well-formed, so the loader then checks
its structure before anything uses it, and refuses a malformed file with one :class:`ArtifactError` that names the file,
says what is wrong and how to fix it:

* sizes before reading: the file (:data:`MAX_FILE_BYTES`), the members' declared uncompressed sizes
  (:data:`MAX_HEADER_BYTES`, :data:`MAX_UNCOMPRESSED_BYTES`), and each ``.npy`` header's shape and dtype against the
  bytes the member holds — nothing is inflated or allocated beyond what the file declares and the limits allow;
* the header's form (:func:`check_bundle`): a JSON object with every field the model needs, of the right type;
* every node array before a tree walker touches it (:func:`check_bundle`, :class:`TreeEnsemble`): dtypes and shapes,
  split features within the model's features, children within their own tree and after their parent, thresholds not
  NaN, baselines and values finite and bounded by :data:`MAX_ABS_OUTPUT`.

A gradient-boosted regressor (scikit-learn's ``HistGradientBoostingRegressor``) is exported tree by tree as the arrays
of its nodes (feature, threshold, children, leaf value, where a missing value goes) and evaluated by
:class:`TreeEnsemble` exactly as scikit-learn does — the same comparisons (``x <= threshold`` goes left), the leaf
values added in the same order to the same baseline — so a loaded model predicts bit for bit what the fitted one did.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

__all__ = ["TreeEnsemble", "from_sklearn", "save", "load", "recorded_sha256", "recorded_sha256s", "sha256_of", "check_bundle",
           "ArtifactError", "FORMAT", "MAX_ABS_OUTPUT", "MAX_FILE_BYTES", "MAX_HEADER_BYTES", "MAX_UNCOMPRESSED_BYTES"]

#: Format name and version written into every artifact's header.
FORMAT = "perfmodel-trees/1"

_NODE_FIELDS = ("feature", "threshold", "left", "right", "value", "is_leaf", "missing_left")
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)

#: Largest artifact file read (bytes). The shipped operator model is 7 MB; a refit with ten times its trees stays far below.
MAX_FILE_BYTES = 512 * 2**20
#: Largest ``header.json`` (uncompressed bytes) read; perfmodel writes about 10 kB.
MAX_HEADER_BYTES = 16 * 2**20
#: Largest total of the members' uncompressed sizes (bytes); the shipped operator model inflates to 15 MB.
MAX_UNCOMPRESSED_BYTES = 1024 * 2**20
#: Most members a ZIP may have (the shipped operator model has 239).
MAX_MEMBERS = 100_000
#: Largest ``.sha256`` file read (bytes).
MAX_SIDECAR_BYTES = 4096
#: Bound on ``|baseline| + Σ_trees max |leaf|``, the largest prediction an ensemble can give. perfmodel's ensembles predict
#: log10 of a time ratio (the efficiency factor of :mod:`perfmodel.step.op_latency`): the shipped ones reach 7.4 at
#: most, and a factor of 10**100 could not occur in a time model; below it, ``10 ** prediction`` times any roofline time
#: stays finite (float64 overflows past 1.8e308).
MAX_ABS_OUTPUT = 100.0
#: Bound on a launch overhead in a header (s): a host takes microseconds to launch a kernel, never a second.
MAX_LAUNCH_OVERHEAD_S = 1.0

_FIX = "Refit it with `perfmodel fit` (which writes a well-formed file and its .sha256), or restore the file it wrote"
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError, KeyError, OSError,
               struct.error, OverflowError, IndexError, TypeError, SyntaxError, MemoryError)


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

    Raises
    ------
    ArtifactError
        Arrays that a walker could not follow safely or that give a non-finite or absurd prediction
        (:func:`_node_problem`): offsets that do not partition the nodes, a child outside its own tree or not after
        its parent, a negative split feature, a NaN threshold, a non-finite baseline or value, a prediction that could
        exceed :data:`MAX_ABS_OUTPUT` in magnitude.
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
        problem = _node_problem(self.baseline, self.offsets, self.feature, self.threshold, self.left, self.right,
                                self.value, self.is_leaf, self.missing_left)
        if problem:
            raise ArtifactError(f"{problem} (a corrupt artifact).")
        inner = ~self.is_leaf
        #: the largest feature index a split reads (-1 without splits): X needs more columns than this
        self.max_feature = int(self.feature[inner].max()) if inner.any() else -1

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
                nodes["feature_idx"] = np.where(self.is_leaf[a:b], 0, self.feature[a:b])
                nodes["num_threshold"] = self.threshold[a:b]
                nodes["missing_go_to_left"] = self.missing_left[a:b]
                nodes["left"] = np.where(self.is_leaf[a:b], 0, self.left[a:b] - a)
                nodes["right"] = np.where(self.is_leaf[a:b], 0, self.right[a:b] - a)
                nodes["is_leaf"] = self.is_leaf[a:b]
                empty = np.zeros((0, 8), dtype=X_BITSET_INNER_DTYPE)
                preds.append(TreePredictor(nodes, empty, empty))
            f_idx_map = np.zeros(self.max_feature + 1 if self.max_feature >= 0 else 1, dtype=np.uint32)
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
        if X.shape[1] <= self.max_feature:  # the walkers would read past the end of a row
            raise ValueError(f"X has {X.shape[1]} features (columns), but the ensemble splits on feature {self.max_feature}; "
                             f"give it at least {self.max_feature + 1} columns.")
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


def _node_problem(baseline, offsets, feature, threshold, left, right, value, is_leaf, missing_left,
                  n_features=None) -> str | None:
    """What makes these node arrays unsafe to walk or their predictions absurd, in words; None when nothing does.

    Checked in this order, each check relying on the ones before it: one-dimensional arrays of one entry per node;
    offsets from 0, strictly growing, to the number of nodes; a finite baseline; at every inner node both children
    after it and within its own tree (so every walk ends at a leaf of the tree it started in); split features from 0
    and, where ``n_features`` is given, below it; thresholds not NaN (``+inf`` is scikit-learn's "only missing values
    go right"); finite values; ``|baseline| + Σ_trees max |leaf|`` at most :data:`MAX_ABS_OUTPUT`."""
    n = len(value)
    if any(np.ndim(a) != 1 or len(a) != n for a in (feature, threshold, left, right, value, is_leaf, missing_left)):
        return "every node array of a tree ensemble must be one-dimensional with one entry per node"
    if not (offsets.ndim == 1 and len(offsets) >= 1 and offsets[0] == 0 and offsets[-1] == n and (np.diff(offsets) > 0).all()):
        return "tree offsets must start at 0, grow strictly and end at the number of nodes"
    if not math.isfinite(baseline):
        return f"the baseline is {baseline}, not a finite number"
    inner = ~is_leaf
    idx = np.arange(n)
    tree = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    end = offsets[1:][tree]
    for side_name, side in (("left", left), ("right", right)):
        bad = inner & ~((side > idx) & (side < end))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            t = int(tree[i])
            return (f"a child index points outside its own tree or backwards: the {side_name} child of node {i} is "
                    f"{int(side[i])}, where its tree {t} holds nodes {int(offsets[t])}-{int(offsets[t + 1]) - 1} and a child "
                    "comes after its parent")
    if (feature[inner] < 0).any():
        return f"a split on a negative feature index ({int(feature[inner].min())})"
    if n_features is not None and (feature[inner] >= n_features).any():
        return (f"a split on feature {int(feature[inner].max())}, but the model has {n_features} features "
                f"(indices 0-{n_features - 1})")
    if np.isnan(threshold[inner]).any():
        return "a split threshold is NaN (a split compares with a number, or +inf for missing values only)"
    if not np.isfinite(value).all():
        return f"a node value is not finite ({value[~np.isfinite(value)][0]})"
    worst = abs(baseline) + (float(np.maximum.reduceat(np.where(is_leaf, np.abs(value), 0.0), offsets[:-1]).sum())
                             if n else 0.0)
    if not worst <= MAX_ABS_OUTPUT:
        return (f"its predictions could reach {worst:.4g} in magnitude (|baseline| + the largest leaf of every tree), "
                f"beyond the {MAX_ABS_OUTPUT:g} allowed: a log10 time ratio that large could not occur")
    return None


# ----------------------------------------------------------------------------------------------------- writing


def _fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable (where the platform allows a folder to be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - a file system that cannot sync a folder
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` into a temporary file beside ``path`` (synced, mode 0644), renamed over ``path`` in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write the fitted model to {path}: a folder is there. Remove it or choose another path.")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; a model is read by other users and services too
                os.fchmod(f.fileno(), 0o644)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sidecar_text(digests, name: str) -> bytes:
    return "".join(f"{d}  {name}\n" for d in digests).encode("ascii")


def _current_digest(path: Path) -> str | None:
    """The sha256 of the file at ``path`` when its ``.sha256`` accepts it (a model a reader can load now), else None."""
    try:
        digest = sha256_of(_read_bounded(path, MAX_FILE_BYTES, "fitted-model artifact"))
        return digest if digest in recorded_sha256s(path) else None
    except ArtifactError:
        return None


def save(path, header: dict, arrays: dict[str, np.ndarray]) -> str:
    """Write the artifact and ``<path>.sha256`` so that a reader always finds a file its ``.sha256`` accepts; returns
    the sha256.

    Each file is replaced in one step (a temporary file beside it, synced, mode 0644, renamed over it), and a
    ``.sha256`` may list several hashes, one a line (``sha256sum`` format): the file is accepted when its hash is any
    of them. The writes go in this order:

    1. ``<path>.sha256`` listing the new hash and the previous file's (where a previous file was accepted);
    2. the new file;
    3. ``<path>.sha256`` listing the new hash only.

    Killed after step 1 the folder holds the previous model, accepted; after step 2 the new one, accepted; there is no
    instant at which the file on disk and the ``.sha256`` on disk disagree. A reader that read the file before step 2
    and the ``.sha256`` after step 3 sees a mismatch and reads both again (:func:`load`).

    Callers that may race (several processes refitting into one cache) hold a lock on the path around the fit and
    the save (:func:`perfmodel.step.op_latency.fit_op_model`)."""
    path = Path(path)
    data = to_bytes(header, arrays)
    digest = sha256_of(data)
    previous = _current_digest(path)
    digests = [digest] + ([previous] if previous and previous != digest else [])
    side = _sidecar(path)
    _write_atomic(side, _sidecar_text(digests, path.name))
    _write_atomic(path, data)
    if len(digests) > 1:
        _write_atomic(side, _sidecar_text([digest], path.name))
    _fsync_dir(path.parent)
    return digest


# ----------------------------------------------------------------------------------------------------- reading


class _Header(dict):
    """An artifact's header, which remembers the file it was read from (``source``) for the messages of
    :func:`check_bundle`; otherwise the plain dict of ``header.json``."""

    source: Path | None = None


def _read_bounded(path: Path, limit: int, what: str, missing: str | None = None) -> bytes:
    """The bytes of ``path``, refused beyond ``limit`` before they are read; any failure to read is an ArtifactError
    (``missing``, where given, is its message when there is no such file)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise ArtifactError(f"the {what} {path} is {size / 2**20:.1f} MiB, over the {limit / 2**20:g} MiB perfmodel "
                                    f"reads: it is not a file `perfmodel fit` wrote. {_FIX}.")
            data = f.read(size + 1)  # not limit + 1: read(n) sets n bytes aside before it reads
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ArtifactError(missing or f"no {what} at {path}.") from None
    except OSError as exc:
        raise ArtifactError(f"the {what} {path} cannot be read ({exc.strerror or exc}): make it readable (chmod a+r), "
                            "or refit it with `perfmodel fit`.") from exc
    if len(data) > limit:
        raise ArtifactError(f"the {what} {path} grew past {limit / 2**20:g} MiB while it was read; {_FIX}.")
    return data


def recorded_sha256s(path) -> list[str]:
    """The hashes ``<path>.sha256`` lists, newest first (one usually; two while :func:`save` replaces the file)."""
    path = Path(path)
    side = _sidecar(path)
    text = _read_bounded(side, MAX_SIDECAR_BYTES, "hash file",
                         missing=f"{path} has no {side.name} beside it, so its integrity cannot be checked; rebuild it "
                                 "with `perfmodel fit` (which writes both).").decode("ascii", errors="replace")
    digests = [w[0].lower() for w in (line.split() for line in text.splitlines()) if w]
    digests = [d for d in digests if len(d) == 64 and all(c in "0123456789abcdef" for c in d)]
    if not digests:
        raise ArtifactError(f"{side} lists no sha256 (64 hexadecimal digits, then the file name); rebuild both with "
                            "`perfmodel fit`.")
    return digests


def recorded_sha256(path) -> str:
    """The sha256 :func:`save` recorded in ``<path>.sha256`` for the artifact at ``path``: the one listed hash, or of
    several (a save under way, or interrupted), the one the file now has."""
    path = Path(path)
    digests = recorded_sha256s(path)
    if len(digests) > 1:
        got = sha256_of(_read_bounded(path, MAX_FILE_BYTES, "fitted-model artifact"))
        if got in digests:
            return got
    return digests[0]


def load(path, *, sha256: str | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """Read an artifact after checking its sha256 (``sha256`` given, or one that ``<path>.sha256`` lists) and the sizes
    and form of its members.

    Returns the header (a dict; its ``source`` attribute is ``path``) and the arrays. The trees are checked against
    the model that reads them by :func:`check_bundle`.

    Raises
    ------
    ArtifactError
        No such file, a file that cannot be read, no recorded hash, a hash that differs (an altered or truncated file),
        not this format, a member or an array larger than the limits (:data:`MAX_FILE_BYTES`,
        :data:`MAX_HEADER_BYTES`, :data:`MAX_UNCOMPRESSED_BYTES`) or than its bytes, an array of other than numbers,
        a header that is not a JSON object.
    """
    path = Path(path)
    for attempt in range(3):
        data = _read_bounded(path, MAX_FILE_BYTES, "fitted-model artifact")
        want = [sha256] if sha256 is not None else recorded_sha256s(path)
        got = sha256_of(data)
        if got in want:
            break
        if sha256 is not None or attempt == 2:  # with a .sha256, read both again: a save may have run between the reads
            raise ArtifactError(f"the fitted-model artifact {path} has sha256 {got[:16]}…, expected {want[0][:16]}…: it was "
                                "altered or truncated after it was written. perfmodel refuses it; rebuild it with "
                                "`perfmodel fit`.")
    header, arrays = _parse(path, data)
    out = _Header(header)
    out.source = path
    return out, arrays


def _parse(path: Path, data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    def bad(what):
        return ArtifactError(f"{path} is not a perfmodel fitted-model artifact: {what}. {_FIX}.")

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if len(infos) > MAX_MEMBERS:
                raise bad(f"its ZIP has {len(infos)} members, over the {MAX_MEMBERS} an artifact may have")
            names = [i.filename for i in infos]
            if len(set(names)) != len(names):
                raise bad("its ZIP holds two members of one name")
            if "header.json" not in names:
                raise bad("it has no header.json")
            info = z.getinfo("header.json")
            if info.file_size > MAX_HEADER_BYTES:
                raise bad(f"its header.json declares {info.file_size / 2**20:.1f} MiB uncompressed, over the "
                          f"{MAX_HEADER_BYTES / 2**20:g} MiB a header may have (perfmodel writes about 10 kB)")
            total = sum(i.file_size for i in infos)
            if total > MAX_UNCOMPRESSED_BYTES:
                big = max(infos, key=lambda i: i.file_size)
                raise bad(f"its members declare {total / 2**20:.1f} MiB uncompressed ({big.filename} "
                          f"{big.file_size / 2**20:.1f} MiB), over the {MAX_UNCOMPRESSED_BYTES / 2**20:g} MiB perfmodel inflates")
            try:
                header = json.loads(_member(z, info, bad))
            except (ValueError, RecursionError) as exc:
                raise bad(f"its header.json is not JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
            if not isinstance(header, dict):
                raise bad(f"its header.json is a JSON {type(header).__name__}, not an object of named fields")
            if header.get("format") != FORMAT:
                raise ArtifactError(f"{path} is of format {str(header.get('format'))[:80]!r}; this perfmodel reads "
                                    f"{FORMAT!r}. {_FIX}.")
            arrays = {i.filename[:-4]: _npy(z, i, bad) for i in infos if i.filename.endswith(".npy")}
    except ArtifactError:
        raise
    except _ZIP_ERRORS as exc:
        raise bad(f"its ZIP cannot be read ({type(exc).__name__}: {str(exc)[:160]})") from None
    return header, arrays


def _member(z: zipfile.ZipFile, info: zipfile.ZipInfo, bad) -> bytes:
    """A member's bytes, never more than it declares (the declared sizes were checked against the limits)."""
    with z.open(info) as f:
        data = f.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise bad(f"its member {info.filename} declares {info.file_size} bytes and inflates to {len(data)}")
    return data


def _npy(z: zipfile.ZipFile, info: zipfile.ZipInfo, bad) -> np.ndarray:
    """An array member, read only once its header's dtype (numbers) and shape (the bytes that follow) check out."""
    name = info.filename[:-4]
    raw = _member(z, info, bad)
    fp = io.BytesIO(raw)
    try:  # numpy parses the header's Python literal (ast, tokenize): any error there is a malformed header
        version = np.lib.format.read_magic(fp)
        if version not in ((1, 0), (2, 0)):
            raise bad(f"array {name} is in .npy version {version}; perfmodel writes 1.0")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(fp)
    except ArtifactError:
        raise
    except Exception as exc:
        raise bad(f"array {name} has no readable .npy header ({type(exc).__name__}: {str(exc)[:120]})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in "biuf":
        raise bad(f"array {name} is of dtype {dtype}; an artifact holds booleans, integers and floats only")
    if not (isinstance(shape, tuple) and len(shape) <= 8 and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise bad(f"array {name} declares the shape {str(shape)[:80]}")
    need = math.prod(shape) * dtype.itemsize
    have = len(raw) - fp.tell()
    if need != have:
        raise bad(f"array {name} declares the shape {shape} of {dtype} ({need} bytes), but its member holds {have} bytes "
                  "after the .npy header")
    return np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)


# ------------------------------------------------------------------------------------------------ the bundle's form

_INT, _FLOAT, _BOOL = "integer", "float64", "bool"
_NODE_DTYPES = {"offsets": _INT, "feature": _INT, "left": _INT, "right": _INT, "threshold": _FLOAT, "value": _FLOAT,
                "is_leaf": _BOOL, "missing_left": _BOOL}
_STEP_ARRAYS = {"seq_len": _INT, "batch_size": _INT, "measured_s": _FLOAT, "predicted_s": _FLOAT, "score": _FLOAT}


def _number(v) -> bool:
    """A finite JSON number (not a boolean)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def check_bundle(header: dict, arrays: dict, *, model_version: str, params: dict, n_features: int, source=None) -> None:
    """Check the header and arrays of an operator-model artifact (:func:`perfmodel.step.op_latency.bundle_arrays`)
    before anything uses them; raise one :class:`ArtifactError` that names the file (``source``, else the header's
    ``source``) and says what is wrong and what was expected.

    ``model_version`` is the version the reader needs, ``params`` the model's parameters (the names a header may give)
    and ``n_features`` the number of features its trees split on. Checked: the version; every header field the model
    reads, of its JSON type (numbers finite, launch overheads in [0, :data:`MAX_LAUNCH_OVERHEAD_S`] s); a pooled tree
    ensemble for every class; each ensemble's arrays present, one-dimensional, of their dtype (indices integers, values
    float64, flags booleans of 0 or 1), ``n_trees`` + 1 offsets, and their nodes (:func:`_node_problem`, features below
    ``n_features``); the step scores' and leave-one-GPU-out arrays finite, of their length.
    """
    c = _BundleCheck(source or getattr(header, "source", None) or "the fitted-model artifact", header, arrays)
    if not isinstance(header, dict):
        raise c.bad(f"its header is a {type(header).__name__}", "a JSON object")
    if header.get("model_version") != model_version:
        raise ArtifactError(f"{c.src} holds an operator model of version {str(header.get('model_version'))[:40]!r}; this "
                            f"perfmodel needs version {model_version!r}. Rebuild it with `perfmodel fit`.")
    classes = c.header_fields(params)
    pooled = {name[1] for name in (c.tree(t, classes, n_features) for t in c.field("trees", list, "a list of tree ensembles"))
              if name[0] == "pooled"}
    missing = sorted(set(classes) - pooled)
    if missing:
        raise c.bad(f"the classes {missing} have no pooled tree ensemble", "one per class")
    c.array("logo_predictions", _FLOAT, finite=True)
    c.step_scores()


class _BundleCheck:
    """The checks of :func:`check_bundle`, each raising one :class:`ArtifactError` that names the file ``src``."""

    def __init__(self, src: str, header, arrays: dict):
        self.src, self.header, self.arrays = src, header, arrays
        self.names, self.prefixes = set(), set()

    def bad(self, what, expected) -> ArtifactError:
        return ArtifactError(f"{self.src} is not a perfmodel fitted-model artifact: {what}; expected {expected}. {_FIX}.")

    def field(self, name, kind, expected):
        if name not in self.header:
            raise self.bad(f"its header lacks the field {name!r}", expected)
        v = self.header[name]
        if not isinstance(v, kind):
            raise self.bad(f"its header field {name!r} is a {type(v).__name__}", expected)
        return v

    def header_fields(self, params: dict) -> list:
        """Every header field the model reads, of its JSON type; the classes."""
        bad, field, header = self.bad, self.field, self.header
        p = field("params", dict, "an object of the model's parameters")
        unknown = sorted(map(str, set(p) - set(params)))
        if unknown:
            raise bad(f"its parameters {unknown} are not the model's", f"some of {sorted(params)}")
        for k, v in p.items():
            if not (v is None or isinstance(v, (bool, str)) or _number(v)):
                raise bad(f"its parameter {k!r} is {str(v)[:40]}", "a finite number, a boolean, a string or null")
        classes = field("classes", list, "a list of operator classes")
        if not classes or not all(isinstance(c, str) for c in classes) or len(set(classes)) != len(classes):
            raise bad("its classes are not distinct names", "a non-empty list of distinct operator classes")
        for name in ("key", "provenance"):
            field(name, str, "a string")
        for name in ("fitted_with", "sklearn_version"):
            if not isinstance(header.get(name, ""), str):
                raise bad(f"its header field {name!r} is not a string", "a string")
        devices = field("training_devices", list, "a list of GPU names")
        if not all(isinstance(d, str) for d in devices):
            raise bad("its training_devices are not all names", "a list of GPU names")
        rows = field("n_training_rows", dict, "an object of row counts per class")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in rows.values()):
            raise bad("its n_training_rows are not all counts", "a whole number >= 0 per class")
        scores = field("scores", dict, "an object of a score per GPU")
        if not all(_number(v) for v in scores.values()):
            raise bad("a score is not a finite number", "a finite number per GPU")
        self.launch_overheads(classes)
        return classes

    def launch_overheads(self, classes: list) -> None:
        for entry in self.field("launch_overhead_s", list, "a list of [GPU, class, seconds]"):
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str) and entry[1] in classes
                    and _number(entry[2]) and 0 <= entry[2] <= MAX_LAUNCH_OVERHEAD_S):
                raise self.bad(f"launch_overhead_s holds {str(entry)[:80]}",
                               f"[GPU, one of the classes, seconds in [0, {MAX_LAUNCH_OVERHEAD_S:g}]]")
        for c, v in self.field("launch_overhead_pooled_s", dict, "an object of seconds per class").items():
            if not (_number(v) and 0 <= v <= MAX_LAUNCH_OVERHEAD_S):
                raise self.bad(f"launch_overhead_pooled_s of {c!r} is {str(v)[:40]}",
                               f"seconds in [0, {MAX_LAUNCH_OVERHEAD_S:g}]")

    def array(self, name, kind, length=None, finite=False):
        bad = self.bad
        if name not in self.arrays:
            raise bad(f"it has no array {name}", f"the member {name}.npy")
        a = self.arrays[name]
        ok = {_INT: a.dtype.kind == "i", _FLOAT: a.dtype == np.float64, _BOOL: a.dtype == np.bool_}[kind]
        if not ok or a.ndim != 1:
            raise bad(f"array {name} is {a.ndim}-D of {a.dtype}", f"a 1-D array of {kind}")
        if kind == _BOOL and len(a) and a.view(np.uint8).max() > 1:
            raise bad(f"array {name} holds a boolean that is neither 0 nor 1", "booleans of 0 or 1")
        if finite and not np.isfinite(a).all():
            raise bad(f"array {name} holds a value that is not finite", "finite numbers")
        if length is not None and len(a) != length:
            raise bad(f"array {name} has {len(a)} entries", f"{length}, one per row")
        return a

    def tree(self, t, classes: list, n_features: int) -> list:
        """One tree ensemble's entry, arrays and nodes checked; its name."""
        bad = self.bad
        if not (isinstance(t, dict) and {"name", "prefix", "baseline", "n_trees"} <= set(t)):
            raise bad(f"a tree entry is {str(t)[:80]}", "an object of name, prefix, baseline and n_trees")
        name, prefix = t["name"], t["prefix"]
        if not (isinstance(name, list) and all(isinstance(w, str) for w in name)
                and ((len(name) == 2 and name[0] == "pooled") or (len(name) == 3 and name[0] == "gpu")) and name[-1] in classes):
            raise bad(f"a tree ensemble is named {str(name)[:80]}", '["pooled", class] or ["gpu", GPU, class] of its classes')
        if not isinstance(prefix, str) or prefix in self.prefixes or tuple(name) in self.names:
            raise bad(f"the tree ensemble {name} has the prefix {str(prefix)[:40]!r}", "a prefix and a name of its own")
        self.names.add(tuple(name))
        self.prefixes.add(prefix)
        if not _number(t["baseline"]):
            raise bad(f"the baseline of tree ensemble {prefix} {name} is {str(t['baseline'])[:40]}", "a finite number")
        n_trees = t["n_trees"]
        if not (isinstance(n_trees, int) and not isinstance(n_trees, bool) and n_trees >= 0):
            raise bad(f"tree ensemble {prefix} has n_trees {str(n_trees)[:40]}", "a whole number >= 0")
        a = {f: self.array(f"{prefix}/{f}", kind) for f, kind in _NODE_DTYPES.items()}
        if len(a["offsets"]) != n_trees + 1:
            raise bad(f"array {prefix}/offsets has {len(a['offsets'])} entries", f"{n_trees + 1} (n_trees + 1)")
        n = len(a["value"])
        for f in _NODE_FIELDS:
            if len(a[f]) != n:
                raise bad(f"array {prefix}/{f} has {len(a[f])} entries", f"{n}, one per node as {prefix}/value has")
        problem = _node_problem(float(t["baseline"]), a["offsets"].astype(np.int64), a["feature"].astype(np.int64),
                                a["threshold"], a["left"].astype(np.int64), a["right"].astype(np.int64), a["value"],
                                a["is_leaf"], a["missing_left"], n_features)
        if problem:
            raise bad(f"in tree ensemble {prefix} {name}, {problem}", "trees that a walker can follow to a finite leaf")
        return name

    def step_scores(self) -> None:
        steps = self.header.get("step_scores") or {}
        if not isinstance(steps, dict):
            raise self.bad(f"its step_scores is a {type(steps).__name__}", "an object of columns")
        if not steps:
            return
        if set(steps) != {"gpu", "model", "mode"} or not all(isinstance(v, list) for v in steps.values()):
            raise self.bad(f"its step_scores has the columns {sorted(map(str, steps))[:6]}", "lists gpu, model and mode")
        n = len(steps["gpu"])
        if any(len(v) != n or not all(isinstance(w, str) for w in v) for v in steps.values()):
            raise self.bad("its step_scores columns differ in length or hold other than strings", "as many strings in each")
        for c, kind in _STEP_ARRAYS.items():
            self.array(f"step_scores/{c}", kind, length=n, finite=kind == _FLOAT)

"""Command line: ``perfmodel reproduce | predict | layouts | plan | plan-cloud | fit | measure | features | data``.

Exit status: 0 on success, 1 when a check fails (e.g. a file whose hash does not match), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys

from perfmodel.cli import data, fit, layouts, measure, plan, predict, reproduce
from perfmodel.cli._common import _DefaultsFormatter, _show_progress, _UsageError  # noqa: F401 - _show_progress: re-exported
from perfmodel.cli.plan import _default_samples  # noqa: F401 - re-exported (tests import it from perfmodel.cli)

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    from perfmodel import __version__

    fmt = _DefaultsFormatter
    p = argparse.ArgumentParser(prog="perfmodel", description="Training-performance models of deep networks on cloud GPU clusters.")
    p.add_argument("--version", action="version", version=f"perfmodel {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    reproduce.add_parser(sub, fmt)
    fit.add_parser(sub, fmt)
    predict.add_parser(sub, fmt)
    layouts.add_parser(sub, fmt)
    plan.add_parser(sub, fmt)  # plan, plan-cloud
    data.add_zoo_parser(sub, fmt)
    measure.add_parser(sub, fmt)
    data.add_parser(sub, fmt)
    data.add_features_parser(sub, fmt)
    return p


def main(argv: list[str] | None = None) -> int:
    from perfmodel._errors import (
        DataFormatError,
        DataIntegrityError,
        DataNotAvailableError,
        NotADataFileError,
        UnknownNameError,
    )

    args = build_parser().parse_args(argv)
    errors: tuple = (DataNotAvailableError, DataIntegrityError, NotADataFileError, DataFormatError, UnknownNameError)
    if args.command in ("predict", "layouts", "plan", "plan-cloud", "fit"):
        errors += (ValueError,)
    if args.command == "fit":
        errors += (OSError,)
    if args.command == "measure":
        from perfmodel.measure import MeasurementFileError

        errors += (MeasurementFileError, ValueError, OSError)  # OSError: a file or folder that refuses (message names it)
    if args.command in ("features", "predict", "layouts", "plan", "plan-cloud"):  # a model that cannot run on the input asked for
        from perfmodel.features import FeatureExtractionError

        errors += (FeatureExtractionError,)
    import warnings

    seen: set = set()

    def one_line(message, category, filename, lineno, file=None, line=None):
        text = f"perfmodel: warning ({category.__name__}): {message}"
        if text not in seen:  # the same warning from several call sites once
            seen.add(text)
            print(text, file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = one_line
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `perfmodel zoo | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
    except _UsageError as exc:
        sub = getattr(args, f"{args.command}_command", None)  # measure step, data verify ...
        print(f"perfmodel {args.command}{' ' + sub if sub else ''}: {exc}", file=sys.stderr)
        return 2
    except errors as exc:
        print(f"perfmodel: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

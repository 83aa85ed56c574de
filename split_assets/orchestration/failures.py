"""Expected errors inside Dagster: raised as ``dagster.Failure`` with the one-line message as
the step's failure description (what the UI shows first) and the exit code in its metadata, so
the CLI and the UI show the same line and no stack trace for what the user must fix."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from dagster import Failure, MetadataValue

from split_assets.app.messages import as_user_error
from split_assets.errors import SplitAssetsError, environment_error
from split_assets.lib import interrupts
from split_assets.split.impossible import SplitImpossible

F = TypeVar("F", bound=Callable[..., Any])
EXIT_CODE_KEY = "exit_code"


def as_failure(exc: SplitAssetsError, **metadata: Any) -> Failure:
    """The dagster.Failure of an expected error."""
    return Failure(description=exc.line(), allow_retries=False, metadata={
        "error": type(exc).__name__, EXIT_CODE_KEY: exc.exit_code,
        "what": exc.what, "where": MetadataValue.text(exc.where or "-"),
        "how to fix": MetadataValue.text(exc.fix or "-"),
        **{k: MetadataValue.json(v) if isinstance(v, list | dict) else v
           for k, v in exc.figures.items()}, **metadata})


def fails_cleanly(fn: F) -> F:
    """Run an asset or check body; an expected error (ours, or an OS / SQLite problem the user
    must fix) leaves it as a dagster.Failure with one line, not a traceback."""

    if inspect.isgeneratorfunction(fn):  # a multi-asset check yields its results

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with _translated():
                yield from fn(*args, **kwargs)

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _translated():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@contextmanager
def _translated() -> Iterator[None]:
    interrupts.check()  # a Ctrl-C Dagster's handler dropped stops the run here
    try:
        yield
        interrupts.check()
    except Failure:
        raise
    except SplitAssetsError as exc:
        raise as_failure(exc) from None
    except SplitImpossible as exc:  # the split core's data, as_user_error once (app/messages.py)
        raise as_failure(as_user_error(exc)) from None
    except Exception as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        raise as_failure(mapped) from exc

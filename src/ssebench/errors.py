"""The errors ssebench raises on purpose.

    SsebenchError                 anything ssebench reports as one clear line
    ├── UserError                 bad input or a missing prerequisite the user can fix
    │   ├── ImageUnavailableError an image that cannot be built, pulled or found
    │   └── TaskError             a malformed task or dataset (names the file and field)
    └── BackendError              a run that cannot be started, watched or reached
        └── ResultsGoneError      the run's results were gone before they were read

The CLI prints an SsebenchError as one line and exits non-zero; anything else is a bug
and shows its traceback. A message never contains a run's environment: callers build
messages from names and IDs only, never from RunSpec.env.
"""

from __future__ import annotations


class SsebenchError(Exception):
    """Base of every error ssebench reports as one line to the user."""


class UserError(SsebenchError):
    """Bad input or a missing prerequisite; the message says what to do."""


class ImageUnavailableError(UserError):
    """An image could not be built, pulled or found."""

    def __init__(self, message: str, *, image: str | None = None) -> None:
        super().__init__(message)
        self.image = image


class TaskError(UserError):
    """A task or dataset file is malformed; the message names the file and the field."""

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        super().__init__(message)
        self.path = path
        self.field = field


class BackendError(SsebenchError):
    """A run that cannot be started, watched or reached."""

    def __init__(
        self, message: str, *, backend: str | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.backend = backend
        self.run_id = run_id


class ResultsGoneError(BackendError):
    """collect_results found nothing to read: the run's storage went before its
    results were read (its pod was deleted, a deadline passed, a node failed). The
    runner records the run as one without a grade, with this message as the reason."""

"""semver - semantic version parsing, comparison and ranges.

>>> from semver import Version, satisfies
>>> Version.parse("1.4.0-beta.2") < Version.parse("1.4.0")
True
>>> satisfies("1.4.2", "^1.2")
True
"""

from .ranges import InvalidRange, Range, max_satisfying, min_satisfying, satisfies
from .version import InvalidVersion, Version, parse


def sort_versions(versions, reverse=False):
    """Sort version strings (or Version objects) by precedence.

    The sort is stable: versions of equal precedence (such as ones that
    differ only in build metadata) keep their input order.
    """
    return sorted(
        versions,
        key=lambda v: v if isinstance(v, Version) else Version.parse(v),
        reverse=reverse,
    )


__all__ = [
    "InvalidRange",
    "InvalidVersion",
    "Range",
    "Version",
    "max_satisfying",
    "min_satisfying",
    "parse",
    "satisfies",
    "sort_versions",
]
__version__ = "0.4.1"

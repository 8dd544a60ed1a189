"""Semantic version values: parsing, formatting, precedence and bumping."""

import functools
import re

__all__ = ["Version", "InvalidVersion", "parse"]

_NUM = r"0|[1-9]\d*"
_IDENT = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_VERSION_RE = re.compile(
    r"^v?(?P<major>{n})\.(?P<minor>{n})\.(?P<patch>{n})"
    r"(?:-(?P<pre>{i}(?:\.{i})*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$".format(n=_NUM, i=_IDENT)
)


class InvalidVersion(ValueError):
    """Raised when a string is not a valid semantic version."""


def _split_identifiers(text):
    if not text:
        return ()
    return tuple(text.split("."))


def _prerelease_key(identifiers):
    # A release (no pre-release identifiers) sorts after every pre-release
    # of the same major.minor.patch.
    if not identifiers:
        return (1, ())
    return (0, identifiers)


@functools.total_ordering
class Version:
    """An immutable semantic version (https://semver.org, 2.0.0)."""

    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major, minor=0, patch=0, prerelease=(), build=()):
        for name, value in (("major", major), ("minor", minor), ("patch", patch)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidVersion("%s must be a non-negative integer, got %r" % (name, value))
        if isinstance(prerelease, str):
            prerelease = _split_identifiers(prerelease)
        if isinstance(build, str):
            build = _split_identifiers(build)
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "prerelease", tuple(str(p) for p in prerelease))
        object.__setattr__(self, "build", tuple(str(b) for b in build))

    def __setattr__(self, name, value):
        raise AttributeError("Version objects are immutable")

    @classmethod
    def parse(cls, text):
        """Parse ``text`` (an optional leading ``v`` is accepted)."""
        if not isinstance(text, str):
            raise InvalidVersion("expected a string, got %r" % (text,))
        match = _VERSION_RE.match(text.strip())
        if match is None:
            raise InvalidVersion("invalid semantic version: %r" % (text,))
        return cls(
            int(match.group("major")),
            int(match.group("minor")),
            int(match.group("patch")),
            _split_identifiers(match.group("pre")),
            _split_identifiers(match.group("build")),
        )

    # -- formatting -------------------------------------------------------

    def __str__(self):
        text = "%d.%d.%d" % (self.major, self.minor, self.patch)
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self):
        return "Version(%r)" % str(self)

    # -- precedence -------------------------------------------------------

    def _key(self):
        # Build metadata does not take part in precedence.
        return (self.major, self.minor, self.patch, _prerelease_key(self.prerelease))

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def compare(self, other):
        """Return -1, 0 or 1 like a classic ``cmp``; accepts strings too."""
        if isinstance(other, str):
            other = Version.parse(other)
        if self < other:
            return -1
        if self == other:
            return 0
        return 1

    @property
    def is_prerelease(self):
        return bool(self.prerelease)

    def release(self):
        """The same version without pre-release and build parts."""
        return Version(self.major, self.minor, self.patch)

    # -- bumping ----------------------------------------------------------

    def bump_major(self):
        # 1.0.0-rc.1 -> 1.0.0 would be a minor surprise; npm bumps a
        # pre-release of x.0.0 to x.0.0 itself.
        if self.prerelease and self.minor == 0 and self.patch == 0:
            return self.release()
        return Version(self.major + 1, 0, 0)

    def bump_minor(self):
        if self.prerelease and self.patch == 0:
            return self.release()
        return Version(self.major, self.minor + 1, 0)

    def bump_patch(self):
        if self.prerelease:
            return self.release()
        return Version(self.major, self.minor, self.patch + 1)

    def bump_prerelease(self, tag="rc"):
        """Increment the last numeric pre-release identifier.

        ``1.2.3`` becomes ``1.2.4-rc.0``; ``1.2.4-rc.0`` becomes ``1.2.4-rc.1``;
        ``1.2.4-beta`` becomes ``1.2.4-beta.0``.
        """
        if not self.prerelease:
            return Version(self.major, self.minor, self.patch + 1, (tag, "0"))
        parts = list(self.prerelease)
        for index in range(len(parts) - 1, -1, -1):
            if parts[index].isdigit():
                parts[index] = str(int(parts[index]) + 1)
                break
        else:
            parts.append("0")
        return Version(self.major, self.minor, self.patch, parts)


def parse(text):
    """Shortcut for :meth:`Version.parse`."""
    return Version.parse(text)

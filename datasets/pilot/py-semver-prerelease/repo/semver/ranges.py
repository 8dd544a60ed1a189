"""Version ranges in the familiar npm-like syntax.

Supported forms::

    *  x  ""                     any version
    1.2.3  =1.2.3                exactly 1.2.3
    >1.2.3 >=1.2 <2 <=1.4.x      comparisons, partial versions allowed
    ^1.2.3                       compatible with 1.2.3 (same left-most non-zero part)
    ~1.2.3                       patch-level changes only
    1.2.x  1.x  1                wildcards
    1.2.3 - 2.0                  hyphen ranges (inclusive)
    >=1.2 <2 || ^3.1             spaces mean AND, ``||`` means OR

Pre-release versions only match a comparator set in which some comparator
names a pre-release of the same major.minor.patch, unless
``include_prerelease`` is given.
"""

import re

from .version import InvalidVersion, Version

__all__ = ["Range", "InvalidRange", "satisfies", "max_satisfying", "min_satisfying"]


class InvalidRange(ValueError):
    """Raised when a range expression cannot be parsed."""


_WILDCARDS = ("x", "X", "*")
_PARTIAL_RE = re.compile(
    r"^v?(?P<major>\d+|[xX*])(?:\.(?P<minor>\d+|[xX*])(?:\.(?P<patch>\d+|[xX*])"
    r"(?P<rest>[-+].*)?)?)?$"
)
_OP_RE = re.compile(r"^(>=|<=|>|<|=|\^|~>?)?\s*(.*)$")


class _Comparator:
    __slots__ = ("op", "version", "synthetic")

    def __init__(self, op, version, synthetic=False):
        self.op = op
        self.version = version
        # synthetic comparators are the "-0" upper bounds made while
        # desugaring; they never allow pre-releases to match.
        self.synthetic = synthetic

    def test(self, version):
        if self.op == "*":
            return True
        c = version.compare(self.version)
        if self.op == "=":
            return c == 0
        if self.op == ">":
            return c > 0
        if self.op == ">=":
            return c >= 0
        if self.op == "<":
            return c < 0
        if self.op == "<=":
            return c <= 0
        raise AssertionError(self.op)

    def __repr__(self):
        return "" if self.op == "*" else "%s%s" % (self.op, self.version)


def _lower_bound(major, minor=0, patch=0):
    return Version(major, minor, patch, ("0",))


def _parse_partial(text, source):
    match = _PARTIAL_RE.match(text)
    if match is None:
        raise InvalidRange("invalid version %r in range %r" % (text, source))
    parts = []
    for name in ("major", "minor", "patch"):
        value = match.group(name)
        if value is None or value in _WILDCARDS:
            break
        parts.append(int(value))
    if len(parts) == 3:
        try:
            return Version.parse(text), parts
        except InvalidVersion as exc:
            raise InvalidRange(str(exc)) from None
    if match.group("rest"):
        raise InvalidRange("pre-release on a partial version in %r" % (source,))
    return Version(*(parts + [0] * (3 - len(parts)))), parts


def _next_after(parts):
    """The first version that is *not* covered by a partial version."""
    if len(parts) == 1:
        return _lower_bound(parts[0] + 1)
    if len(parts) == 2:
        return _lower_bound(parts[0], parts[1] + 1)
    return None


def _desugar(op, text, source):
    if text in ("", "x", "X", "*"):
        return [_Comparator("*", None)]
    version, parts = _parse_partial(text, source)
    if not parts:
        if op in ("<", ">"):
            return [_Comparator("<", _lower_bound(0), True)]
        return [_Comparator("*", None)]
    full = len(parts) == 3
    if op in ("", "="):
        if full:
            return [_Comparator("=", version)]
        return [_Comparator(">=", version), _Comparator("<", _next_after(parts), True)]
    if op == ">":
        if full:
            return [_Comparator(">", version)]
        return [_Comparator(">=", _next_after(parts))]
    if op == ">=":
        return [_Comparator(">=", version)]
    if op == "<":
        if full:
            return [_Comparator("<", version)]
        return [_Comparator("<", _lower_bound(*parts), True)]
    if op == "<=":
        if full:
            return [_Comparator("<=", version)]
        return [_Comparator("<", _next_after(parts), True)]
    if op in ("~", "~>"):
        upper = _next_after(parts[:2]) if len(parts) >= 2 else _next_after(parts)
        return [_Comparator(">=", version), _Comparator("<", upper, True)]
    if op == "^":
        major, minor, patch = (parts + [None, None])[:3]
        if major != 0 or minor is None:
            upper = _lower_bound(major + 1)
        elif minor != 0 or patch is None:
            upper = _lower_bound(0, minor + 1)
        else:
            upper = _lower_bound(0, 0, patch + 1)
        return [_Comparator(">=", version), _Comparator("<", upper, True)]
    raise InvalidRange("unknown operator %r in %r" % (op, source))


def _parse_set(text, source):
    tokens = text.split()
    comparators = []
    if len(tokens) == 3 and tokens[1] == "-":
        low, _ = _parse_partial(tokens[0], source)
        comparators.append(_Comparator(">=", low))
        comparators.extend(_desugar("<=", tokens[2], source))
        return comparators
    index = 0
    while index < len(tokens):
        token = tokens[index]
        # allow a space between the operator and the version: ">= 1.2"
        if token in (">=", "<=", ">", "<", "=", "^", "~") and index + 1 < len(tokens):
            token += tokens[index + 1]
            index += 1
        op, rest = _OP_RE.match(token).groups()
        comparators.extend(_desugar(op or "", rest, source))
        index += 1
    return comparators or [_Comparator("*", None)]


class Range:
    """A parsed range expression; test versions with :meth:`test`."""

    def __init__(self, text, include_prerelease=False):
        if not isinstance(text, str):
            raise InvalidRange("expected a string, got %r" % (text,))
        self.text = text
        self.include_prerelease = include_prerelease
        self.sets = [_parse_set(part.strip(), text) for part in text.split("||")]

    def __repr__(self):
        return "Range(%r)" % " || ".join(" ".join(map(repr, s)) for s in self.sets)

    def _set_allows(self, comparators, version):
        if not all(c.test(version) for c in comparators):
            return False
        if not version.prerelease or self.include_prerelease:
            return True
        release = version.release()
        for c in comparators:
            if c.synthetic or c.version is None or not c.version.prerelease:
                continue
            if c.version.release() == release:
                return True
        return False

    def test(self, version):
        if isinstance(version, str):
            version = Version.parse(version)
        return any(self._set_allows(s, version) for s in self.sets)

    __contains__ = test


def _as_range(spec, include_prerelease):
    if isinstance(spec, Range):
        return spec
    return Range(spec, include_prerelease=include_prerelease)


def satisfies(version, spec, include_prerelease=False):
    """True when ``version`` matches the range ``spec``."""
    return _as_range(spec, include_prerelease).test(version)


def _matching(versions, spec, include_prerelease):
    rng = _as_range(spec, include_prerelease)
    found = []
    for item in versions:
        version = Version.parse(item) if isinstance(item, str) else item
        if rng.test(version):
            found.append((version, item))
    return found


def max_satisfying(versions, spec, include_prerelease=False):
    """The highest of ``versions`` matching ``spec`` (as given), or None."""
    found = _matching(versions, spec, include_prerelease)
    if not found:
        return None
    return max(found, key=lambda pair: pair[0])[1]


def min_satisfying(versions, spec, include_prerelease=False):
    """The lowest of ``versions`` matching ``spec`` (as given), or None."""
    found = _matching(versions, spec, include_prerelease)
    if not found:
        return None
    return min(found, key=lambda pair: pair[0])[1]

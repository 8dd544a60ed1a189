"""In-memory configuration: sections of case-insensitive keys."""

import re
from collections import OrderedDict

__all__ = ["Config", "Section", "Entry", "InterpolationError"]

_MISSING = object()
_REF_RE = re.compile(r"\$(\$|\{([^}:]*)(?::([^}]+))?\})")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
MAX_DEPTH = 10


class InterpolationError(ValueError):
    """A ``${...}`` reference that cannot be resolved."""


class Entry:
    """A stored value. ``literal`` values are never interpolated."""

    __slots__ = ("value", "literal", "quoted")

    def __init__(self, value, literal=False, quoted=False):
        self.value = value
        self.literal = literal
        self.quoted = quoted

    def __repr__(self):
        return "Entry(%r, literal=%r)" % (self.value, self.literal)


class Section:
    """An ordered mapping of lower-cased keys to raw :class:`Entry` values."""

    def __init__(self, config, name):
        self.config = config
        self.name = name
        self._entries = OrderedDict()

    def __contains__(self, key):
        return key.lower() in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __getitem__(self, key):
        return self.config.get(self.name, key)

    def __setitem__(self, key, value):
        self.config.set(self.name, key, value)

    def __delitem__(self, key):
        del self._entries[key.lower()]

    def entry(self, key):
        return self._entries[key.lower()]

    def set_entry(self, key, entry):
        self._entries[key.lower()] = entry

    def items(self):
        return [(key, self[key]) for key in self._entries]


class Config:
    """A parsed configuration. Section ``""`` holds keys outside any section."""

    def __init__(self):
        self._sections = OrderedDict()
        self.add_section("")

    def add_section(self, name):
        if name in self._sections:
            raise KeyError("section %r already exists" % name)
        section = Section(self, name)
        self._sections[name] = section
        return section

    def has_section(self, name):
        return name in self._sections

    def sections(self):
        """Names of the named sections, in file order (the global one excluded)."""
        return [name for name in self._sections if name]

    def __getitem__(self, name):
        return self._sections[name]

    def __contains__(self, name):
        return name in self._sections

    def remove_section(self, name):
        if not name:
            raise KeyError("the global section cannot be removed")
        del self._sections[name]

    # -- values -----------------------------------------------------------

    def set(self, section, key, value, literal=False):
        if section not in self._sections:
            self.add_section(section)
        if not isinstance(value, str):
            raise TypeError("values must be strings, got %r" % (value,))
        self._sections[section].set_entry(key, Entry(value, literal=literal))

    def get_raw(self, section, key, default=_MISSING):
        try:
            return self._sections[section].entry(key).value
        except KeyError:
            if default is _MISSING:
                raise KeyError("%s.%s" % (section or "<global>", key)) from None
            return default

    def get(self, section, key, default=_MISSING):
        """The value of ``key`` in ``section`` with references expanded."""
        try:
            entry = self._sections[section].entry(key)
        except KeyError:
            if default is _MISSING:
                raise KeyError("%s.%s" % (section or "<global>", key)) from None
            return default
        if entry.literal:
            return entry.value
        return self._expand(section, entry.value, 0, (section, key.lower()))

    def _expand(self, section, value, depth, origin):
        if depth > MAX_DEPTH:
            raise InterpolationError("reference loop while expanding %s.%s" % origin)

        def replace(match):
            if match.group(1) == "$":
                return "$"
            if match.group(3) is None:
                ref_section, ref_key = section, match.group(2)
            else:
                ref_section, ref_key = match.group(2), match.group(3)
            try:
                entry = self._sections[ref_section].entry(ref_key.strip())
            except KeyError:
                raise InterpolationError(
                    "%s.%s refers to missing %s" % (origin[0] or "<global>", origin[1], match.group(0))
                ) from None
            if entry.literal:
                return entry.value
            return self._expand(ref_section, entry.value, depth + 1, origin)

        return _REF_RE.sub(replace, value)

    def getint(self, section, key, default=_MISSING):
        value = self.get(section, key, default)
        return value if value is default else int(value.strip(), 0)

    def getfloat(self, section, key, default=_MISSING):
        value = self.get(section, key, default)
        return value if value is default else float(value)

    def getbool(self, section, key, default=_MISSING):
        value = self.get(section, key, default)
        if value is default:
            return value
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError("not a boolean: %r" % value)

    def getlist(self, section, key, default=_MISSING, sep=","):
        value = self.get(section, key, default)
        if value is default:
            return value
        parts = value.replace("\n", sep).split(sep)
        return [part.strip() for part in parts if part.strip()]

    def as_dict(self):
        """Every section as a plain dict of expanded values."""
        return {name: dict(section.items()) for name, section in self._sections.items()}

"""Serialise a :class:`~confini.config.Config` back to INI text."""

__all__ = ["dumps", "encode_value"]

_SPECIAL = set(";#\"'\\\n\t\r\0")
_REVERSE_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", '"': '\\"', "\0": "\\0"}


def _double_quote(value):
    return '"' + "".join(_REVERSE_ESCAPES.get(c, c) for c in value) + '"'


def encode_value(value, literal=False):
    """The source form of ``value`` such that parsing it gives it back.

    Plain values are written bare. Values that need quoting are written in
    single quotes when that needs no escaping at all (handy for Windows
    paths and regular expressions), otherwise in double quotes.
    """
    if value == "":
        return ""
    if literal and "$" in value:
        if "'" not in value and not set("\n\r\0") & set(value):
            return "'" + value + "'"
        return _double_quote(value.replace("$", "$$"))
    bare_ok = (
        value == value.strip()
        and not _SPECIAL & set(value)
        and not value.startswith("[")
    )
    if bare_ok:
        return value
    if ("\\" in value or '"' in value) and "'" not in value and not set("\n\r\0\t") & set(value):
        return "'" + value + "'" if "$" not in value else _double_quote(value)
    return _double_quote(value)


def dumps(config):
    """INI text for ``config``; the global section comes first, unlabelled."""
    lines = []
    for name in [""] + config.sections():
        section = config[name]
        if name:
            if lines:
                lines.append("")
            lines.append("[%s]" % name)
        for key in section:
            entry = section.entry(key)
            encoded = encode_value(entry.value, entry.literal)
            lines.append(("%s = %s" % (key, encoded)).rstrip())
    return "\n".join(lines) + "\n" if lines else ""

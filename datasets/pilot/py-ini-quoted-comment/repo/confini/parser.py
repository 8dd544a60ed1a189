"""Turn INI text into a :class:`~confini.config.Config`."""

from .config import Config, Entry

__all__ = ["ParseError", "parse", "split_comment", "decode_value"]

_COMMENT_CHARS = ";#"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


class ParseError(ValueError):
    """A syntax error, with the 1-based line number where it was found."""

    def __init__(self, message, lineno=None, line=None):
        self.message = message
        self.lineno = lineno
        self.line = line
        text = message if lineno is None else "line %d: %s" % (lineno, message)
        if line is not None:
            text += ": %r" % line
        super().__init__(text)


def _scan_double_quoted(text):
    """Index just past the closing quote of the string opening ``text``."""
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index + 1
        index += 1
    raise ParseError("unterminated quoted string")


def split_comment(text):
    """Split a value from a trailing comment.

    Returns ``(value, comment)`` with the value still in its source form
    (quotes included). A comment starts at ``;`` or ``#`` when it is the
    first character or follows whitespace; inside a quoted value these
    characters are ordinary text.
    """
    text = text.strip()
    if text.startswith('"'):
        end = _scan_double_quoted(text)
        rest = text[end:].strip()
        if rest and rest[0] not in _COMMENT_CHARS:
            raise ParseError("unexpected text after quoted value")
        return text[:end], rest
    for index, char in enumerate(text):
        if char in _COMMENT_CHARS and (index == 0 or text[index - 1] in " \t"):
            return text[:index].rstrip(), text[index:]
    return text, ""


def _decode_double(body):
    out = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            if index + 1 >= len(body):
                raise ParseError("dangling backslash in quoted string")
            code = body[index + 1]
            if code not in _ESCAPES:
                raise ParseError("unknown escape \\%s" % code)
            out.append(_ESCAPES[code])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def decode_value(token):
    """Decode a value token returned by :func:`split_comment`.

    Returns ``(value, literal)``. Single-quoted values are literal: no
    escapes and no ``${...}`` interpolation. Double-quoted values understand
    backslash escapes. Bare values are taken as they are.
    """
    if token.startswith('"'):
        if len(token) < 2 or not token.endswith('"'):
            raise ParseError("unterminated quoted string")
        return _decode_double(token[1:-1]), False
    if token.startswith("'"):
        if len(token) < 2 or not token.endswith("'"):
            raise ParseError("unterminated quoted string")
        return token[1:-1], True
    return token, False


def _split_key(line):
    positions = [p for p in (line.find("="), line.find(":")) if p > 0]
    if not positions:
        raise ParseError("expected 'key = value'")
    cut = min(positions)
    key = line[:cut].strip()
    if not key or any(c in key for c in "[]\"'"):
        raise ParseError("invalid key")
    return key, line[cut + 1:]


def parse(text, strict=True):
    """Parse INI ``text``.

    Keys before the first section header belong to the global section
    ``""``. Indented lines continue the value of the previous (bare) key.
    In strict mode a key repeated within a section is an error; otherwise
    the last value wins.
    """
    config = Config()
    section = config[""]
    current = None  # (key, entry) whose value may be continued
    for lineno, raw in enumerate(text.splitlines(), 1):
        try:
            stripped = raw.strip()
            if not stripped or stripped[0] in _COMMENT_CHARS:
                continue
            if raw[0] in " \t" and current is not None:
                key, entry = current
                if entry.quoted:
                    raise ParseError("a quoted value cannot be continued")
                more, _ = split_comment(stripped)
                entry.value = entry.value + "\n" + more if entry.value else more
                continue
            current = None
            if stripped.startswith("["):
                value, _ = split_comment(stripped)
                if not value.endswith("]") or len(value) < 3:
                    raise ParseError("malformed section header")
                name = value[1:-1].strip()
                if not name:
                    raise ParseError("empty section name")
                section = config.add_section(name) if not config.has_section(name) else config[name]
                continue
            key, rest = _split_key(stripped)
            token, _ = split_comment(rest)
            value, literal = decode_value(token)
            if strict and key.lower() in section:
                raise ParseError("duplicate key %r in section %r" % (key, section.name))
            entry = Entry(value, literal=literal, quoted=token[:1] in ('"', "'"))
            section.set_entry(key, entry)
            current = (key, entry)
        except ParseError as exc:
            if exc.lineno is not None:
                raise
            raise ParseError(exc.message, lineno, raw) from None
    return config

"""confini - a small INI configuration reader and writer.

>>> import confini
>>> cfg = confini.loads('''
... [server]
... host = example.org   ; where to listen
... port = 8080
... banner = "Welcome; enjoy"
... ''')
>>> cfg.getint("server", "port")
8080
>>> cfg.get("server", "banner")
'Welcome; enjoy'
"""

from .config import Config, Entry, InterpolationError, Section
from .parser import ParseError, parse
from .writer import dumps, encode_value

__all__ = [
    "Config",
    "Entry",
    "InterpolationError",
    "ParseError",
    "Section",
    "dumps",
    "encode_value",
    "load",
    "loads",
    "parse",
]
__version__ = "1.3.0"


def loads(text, strict=True):
    """Parse INI text into a :class:`Config`."""
    return parse(text, strict=strict)


def load(path, strict=True, encoding="utf-8"):
    """Read and parse the INI file at ``path``."""
    with open(path, encoding=encoding) as handle:
        return parse(handle.read(), strict=strict)

import os
import tempfile
import textwrap
import unittest

import confini
from confini import InterpolationError, ParseError


def ini(text, **kwargs):
    return confini.loads(textwrap.dedent(text), **kwargs)


README_EXAMPLE = r"""
; global keys come before the first section
name = demo

[server]
host = 0.0.0.0          ; inline comments need whitespace before them
port = 8080
motd = "Hello; world\n" # double quotes: backslash escapes, ; and # are text
root = 'C:\srv\www'     # single quotes: literal text, no escapes, no ${...}
url = http://${host}:${port}/
paths =
    /var/lib/demo
    /opt/demo           ; indented lines continue the value

[client]
server = ${server:url}
"""


class BasicParsing(unittest.TestCase):
    def test_readme_example(self):
        cfg = confini.loads(README_EXAMPLE)
        self.assertEqual(cfg.sections(), ["server", "client"])
        self.assertEqual(cfg.get("", "name"), "demo")
        self.assertEqual(cfg.get("server", "host"), "0.0.0.0")
        self.assertEqual(cfg.getint("server", "port"), 8080)
        self.assertEqual(cfg.get("server", "motd"), "Hello; world\n")
        self.assertEqual(cfg.get("server", "root"), "C:\\srv\\www")
        self.assertEqual(cfg.get("client", "server"), "http://0.0.0.0:8080/")
        self.assertEqual(cfg.getlist("server", "paths"), ["/var/lib/demo", "/opt/demo"])

    def test_separators_and_case(self):
        cfg = ini("""
            [Main]
            Colour: blue
            size=10
            """)
        self.assertEqual(cfg.get("Main", "colour"), "blue")
        self.assertEqual(cfg.get("Main", "SIZE"), "10")
        self.assertNotIn("main", cfg)
        self.assertIn("Main", cfg)

    def test_comments(self):
        cfg = ini("""
            # full line
            ; also full line
            [s]
            a = 1 ; trailing
            b = 2 # trailing
            c = x;y#z
            d = ; nothing but a comment
            """)
        self.assertEqual(cfg.get("s", "a"), "1")
        self.assertEqual(cfg.get("s", "b"), "2")
        self.assertEqual(cfg.get("s", "c"), "x;y#z")
        self.assertEqual(cfg.get("s", "d"), "")

    def test_double_quoted(self):
        cfg = ini(r'''
            [s]
            a = "  padded  "
            b = "semi ; colon # hash"   ; comment
            c = "tab\there \"quoted\" back\\slash"
            d = ""
            ''')
        self.assertEqual(cfg.get("s", "a"), "  padded  ")
        self.assertEqual(cfg.get("s", "b"), "semi ; colon # hash")
        self.assertEqual(cfg.get("s", "c"), 'tab\there "quoted" back\\slash')
        self.assertEqual(cfg.get("s", "d"), "")

    def test_single_quoted_is_literal(self):
        cfg = ini(r"""
            [s]
            re = '^\d+\.\d+$'
            tpl = '${not_expanded}'
            both = 'say "hi"'
            """)
        self.assertEqual(cfg.get("s", "re"), r"^\d+\.\d+$")
        self.assertEqual(cfg.get("s", "tpl"), "${not_expanded}")
        self.assertEqual(cfg.get("s", "both"), 'say "hi"')

    def test_bare_value_with_apostrophe(self):
        cfg = ini("""
            [s]
            motd = it's fine ; really
            """)
        self.assertEqual(cfg.get("s", "motd"), "it's fine")

    def test_continuation(self):
        cfg = ini("""
            [s]
            hosts = a
              b ; comment
              ; a comment line inside
              c
            next = 1
            """)
        self.assertEqual(cfg.get("s", "hosts"), "a\nb\nc")
        self.assertEqual(cfg.getlist("s", "hosts"), ["a", "b", "c"])
        self.assertEqual(cfg.get("s", "next"), "1")

    def test_repeated_section_merges(self):
        cfg = ini("""
            [a]
            x = 1
            [b]
            [a]
            y = 2
            """)
        self.assertEqual(cfg.sections(), ["a", "b"])
        self.assertEqual(cfg.as_dict()["a"], {"x": "1", "y": "2"})

    def test_duplicate_key(self):
        text = "[s]\nk = 1\nK = 2\n"
        with self.assertRaises(ParseError) as ctx:
            confini.loads(text)
        self.assertEqual(ctx.exception.lineno, 3)
        self.assertEqual(confini.loads(text, strict=False).get("s", "k"), "2")

    def test_errors_carry_line_numbers(self):
        cases = {
            "[s]\njust words\n": 2,
            "[s\n": 1,
            "[]\n": 1,
            "[s]\nk = \"open\n": 2,
            "[s]\nk = \"a\" trailing\n": 2,
            "[s]\nk = \"bad \\q\"\n": 2,
            "[s]\nk = \"x\"\n  more\n": 3,
            "\n\n= value\n": 3,
        }
        for text, lineno in cases.items():
            with self.subTest(text=text):
                with self.assertRaises(ParseError) as ctx:
                    confini.loads(text)
                self.assertEqual(ctx.exception.lineno, lineno)
                self.assertIn("line %d" % lineno, str(ctx.exception))

    def test_load_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "app.ini")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("[app]\nname = caf\u00e9\n")
            self.assertEqual(confini.load(path).get("app", "name"), "caf\u00e9")


class TypedGetters(unittest.TestCase):
    def setUp(self):
        self.cfg = ini("""
            [t]
            n = 42
            hex = 0x1F
            f = 2.5
            yes = Yes
            off = off
            maybe = perhaps
            items = a, b,, c ,
            """)

    def test_numbers(self):
        self.assertEqual(self.cfg.getint("t", "n"), 42)
        self.assertEqual(self.cfg.getint("t", "hex"), 31)
        self.assertEqual(self.cfg.getfloat("t", "f"), 2.5)
        with self.assertRaises(ValueError):
            self.cfg.getint("t", "f")

    def test_bools(self):
        self.assertTrue(self.cfg.getbool("t", "yes"))
        self.assertFalse(self.cfg.getbool("t", "off"))
        with self.assertRaises(ValueError):
            self.cfg.getbool("t", "maybe")

    def test_lists(self):
        self.assertEqual(self.cfg.getlist("t", "items"), ["a", "b", "c"])

    def test_defaults(self):
        self.assertEqual(self.cfg.getint("t", "missing", 7), 7)
        self.assertIsNone(self.cfg.get("nosuch", "x", None))
        with self.assertRaises(KeyError):
            self.cfg.get("t", "missing")


class Interpolation(unittest.TestCase):
    def test_local_and_cross_section(self):
        cfg = ini("""
            root = /srv
            [paths]
            base = ${:root}
            data = ${base}/data
            [app]
            cache = ${paths:data}/cache
            price = $$5
            """)
        # "${:root}" names the global section explicitly
        self.assertEqual(cfg.get("paths", "data"), "/srv/data")
        self.assertEqual(cfg.get("app", "cache"), "/srv/data/cache")
        self.assertEqual(cfg.get("app", "price"), "$5")
        self.assertEqual(cfg.get_raw("app", "cache"), "${paths:data}/cache")

    def test_missing_and_loops(self):
        cfg = ini("""
            [s]
            a = ${b}
            b = ${a}
            c = ${nope}
            """)
        with self.assertRaises(InterpolationError):
            cfg.get("s", "a")
        with self.assertRaises(InterpolationError):
            cfg.get("s", "c")


if __name__ == "__main__":
    unittest.main()

import textwrap
import unittest

import confini
from confini import Config, ParseError


class SingleQuotedCommentChars(unittest.TestCase):
    def test_semicolon_inside_single_quotes(self):
        cfg = confini.loads("[clean]\npattern = '*.log ; *.tmp'\n")
        self.assertEqual(cfg.get("clean", "pattern"), "*.log ; *.tmp")

    def test_hash_inside_single_quotes_then_comment(self):
        cfg = confini.loads(textwrap.dedent("""
            [db]
            probe = 'SELECT 1 # keep' ; real comment
            color = '#ff0000'   # red
            note = ' ; '
            """))
        self.assertEqual(cfg.get("db", "probe"), "SELECT 1 # keep")
        self.assertEqual(cfg.get("db", "color"), "#ff0000")
        self.assertEqual(cfg.get("db", "note"), " ; ")

    def test_single_quoted_stays_literal(self):
        cfg = confini.loads("[s]\nx = 1\ntpl = '${x} ; $$ # \\n'\n")
        self.assertEqual(cfg.get("s", "tpl"), "${x} ; $$ # \\n")

    def test_text_after_single_quoted_value_is_an_error(self):
        with self.assertRaises(ParseError) as ctx:
            confini.loads("[s]\nk = 'a ; b' junk\n")
        self.assertEqual(ctx.exception.lineno, 2)
        with self.assertRaises(ParseError):
            confini.loads("[s]\nk = 'never closed ; oops\n")

    def test_round_trip_windows_path_with_comment_chars(self):
        cfg = Config()
        cfg.set("backup", "target", "D:\\backups ; old")
        cfg.set("backup", "exclude", 'C:\\tmp\\"cache" #1')
        cfg.set("backup", "label", "${host} ; nightly", literal=True)
        text = confini.dumps(cfg)
        again = confini.loads(text)
        self.assertEqual(again.get("backup", "target"), "D:\\backups ; old")
        self.assertEqual(again.get("backup", "exclude"), 'C:\\tmp\\"cache" #1')
        self.assertEqual(again.get("backup", "label"), "${host} ; nightly")

    def test_double_quoted_still_works(self):
        cfg = confini.loads('[s]\na = "x ; y" # c\nb = "it\'s ; ok"\n')
        self.assertEqual(cfg.get("s", "a"), "x ; y")
        self.assertEqual(cfg.get("s", "b"), "it's ; ok")


if __name__ == "__main__":
    unittest.main()

import unittest

import confini
from confini import Config, encode_value


class EncodeValue(unittest.TestCase):
    def test_bare(self):
        self.assertEqual(encode_value("plain"), "plain")
        self.assertEqual(encode_value("with spaces inside"), "with spaces inside")
        self.assertEqual(encode_value(""), "")
        self.assertEqual(encode_value("${a}/b"), "${a}/b")

    def test_double_quoted(self):
        self.assertEqual(encode_value(" padded "), '" padded "')
        self.assertEqual(encode_value("a;b"), '"a;b"')
        self.assertEqual(encode_value("two\nlines"), '"two\\nlines"')
        self.assertEqual(encode_value("[not a section]"), '"[not a section]"')
        self.assertEqual(encode_value("it's"), '"it\'s"')

    def test_single_quoted_when_cleaner(self):
        self.assertEqual(encode_value("C:\\temp"), "'C:\\temp'")
        self.assertEqual(encode_value('say "hi"'), "'say \"hi\"'")

    def test_literal_dollars(self):
        self.assertEqual(encode_value("${x}", literal=True), "'${x}'")
        self.assertEqual(encode_value("it's ${x}", literal=True), '"it\'s $${x}"')


class RoundTrip(unittest.TestCase):
    VALUES = [
        "plain",
        "  padded  ",
        "semi;colon",
        "hash # mark",
        "tab\tand\nnewline",
        'say "hi"',
        "C:\\Users\\me",
        "it's",
        "[bracketed]",
        "${ref}",
        "$$",
        "",
    ]

    def test_values_survive_dump_and_load(self):
        cfg = Config()
        cfg.set("", "top", "level")
        cfg.set("ref", "x", "expanded")
        for index, value in enumerate(self.VALUES):
            cfg.set("values", "k%d" % index, value)
        cfg.set("values", "lit", "${not} it's", literal=True)
        text = confini.dumps(cfg)
        again = confini.loads(text)
        self.assertEqual(again.sections(), ["ref", "values"])
        self.assertEqual(again.get("", "top"), "level")
        for index, value in enumerate(self.VALUES):
            with self.subTest(value=value):
                self.assertEqual(again.get_raw("values", "k%d" % index), value)
        self.assertEqual(again.get("values", "lit"), "${not} it's")

    def test_dump_layout(self):
        cfg = confini.loads("a = 1\n[s]\nB = two words\n[t]\n")
        self.assertEqual(confini.dumps(cfg), "a = 1\n\n[s]\nb = two words\n\n[t]\n")
        self.assertEqual(confini.dumps(Config()), "")

    def test_set_rejects_non_strings(self):
        with self.assertRaises(TypeError):
            Config().set("s", "k", 3)


if __name__ == "__main__":
    unittest.main()

import contextlib
import io
import unittest

from semver import InvalidRange, Range, max_satisfying, min_satisfying, satisfies
from semver.__main__ import main


class RangeTests(unittest.TestCase):
    def check(self, spec, yes=(), no=(), **kwargs):
        for version in yes:
            with self.subTest(spec=spec, version=version):
                self.assertTrue(satisfies(version, spec, **kwargs))
        for version in no:
            with self.subTest(spec=spec, version=version):
                self.assertFalse(satisfies(version, spec, **kwargs))

    def test_any(self):
        self.check("*", yes=["0.0.0", "9.9.9"], no=["1.0.0-rc.1"])
        self.check("", yes=["1.2.3"])
        self.check("x", yes=["1.2.3"])

    def test_exact(self):
        self.check("1.2.3", yes=["1.2.3", "1.2.3+b1"], no=["1.2.4", "1.2.2"])
        self.check("=1.2.3", yes=["1.2.3"], no=["1.2.4"])

    def test_comparisons(self):
        self.check(">1.2.3", yes=["1.2.4", "2.0.0"], no=["1.2.3", "1.0.0"])
        self.check(">=1.2", yes=["1.2.0", "1.3.0"], no=["1.1.9"])
        self.check("<2", yes=["1.9.9"], no=["2.0.0", "2.0.1"])
        self.check("<=1.4", yes=["1.4.9"], no=["1.5.0"])
        self.check(">1", yes=["2.0.0"], no=["1.9.9"])
        self.check(">= 1.2 < 1.4", yes=["1.2.0", "1.3.5"], no=["1.4.0", "1.1.0"])

    def test_wildcards(self):
        self.check("1.2.x", yes=["1.2.0", "1.2.9"], no=["1.3.0", "1.1.9"])
        self.check("1.x", yes=["1.0.0", "1.9.0"], no=["2.0.0", "0.9.0"])
        self.check("1", yes=["1.4.0"], no=["2.0.0"])

    def test_caret(self):
        self.check("^1.2.3", yes=["1.2.3", "1.9.0"], no=["1.2.2", "2.0.0"])
        self.check("^0.2.3", yes=["0.2.3", "0.2.9"], no=["0.3.0"])
        self.check("^0.0.3", yes=["0.0.3"], no=["0.0.4"])
        self.check("^1.2", yes=["1.2.0", "1.8.1"], no=["2.0.0"])
        self.check("^0.0", yes=["0.0.7"], no=["0.1.0"])

    def test_tilde(self):
        self.check("~1.2.3", yes=["1.2.3", "1.2.8"], no=["1.3.0", "1.2.2"])
        self.check("~1.2", yes=["1.2.0"], no=["1.3.0"])
        self.check("~1", yes=["1.9.0"], no=["2.0.0"])

    def test_hyphen(self):
        self.check("1.2.3 - 2.3.4", yes=["1.2.3", "2.3.4"], no=["2.3.5", "1.2.2"])
        self.check("1.2 - 2.3", yes=["2.3.9"], no=["2.4.0"])

    def test_or(self):
        self.check("^1.2 || >=3.1 <3.2", yes=["1.5.0", "3.1.4"], no=["2.0.0", "3.2.0"])

    def test_prerelease_excluded_by_default(self):
        self.check("^1.2.0", no=["1.3.0-beta"])
        self.check("^1.2.0", yes=["1.3.0-beta"], include_prerelease=True)
        self.check(">=1.3.0-beta <1.4", yes=["1.3.0-beta", "1.3.0-rc.1", "1.3.0"],
                   no=["1.3.0-alpha", "1.3.1-beta"])
        self.check("<2", no=["2.0.0-rc.1"], include_prerelease=True)

    def test_range_object(self):
        rng = Range("~2.1")
        self.assertIn("2.1.7", rng)
        self.assertNotIn("2.2.0", rng)
        self.assertTrue(satisfies("2.1.0", rng))

    def test_invalid(self):
        for spec in ["1.2.3.4", "^a.b", "1.2-beta", ">=1.2.3-01", None]:
            with self.subTest(spec=spec):
                with self.assertRaises(InvalidRange):
                    Range(spec)

    def test_max_min_satisfying(self):
        versions = ["1.2.0", "1.9.3", "2.0.0", "1.10.1", "1.10.0-beta"]
        self.assertEqual(max_satisfying(versions, "^1.2"), "1.10.1")
        self.assertEqual(min_satisfying(versions, "^1.2"), "1.2.0")
        self.assertEqual(max_satisfying(versions, "^3"), None)
        self.assertEqual(min_satisfying(versions, "^3"), None)
        self.assertEqual(max_satisfying(versions, ">=1.10.0-alpha <1.10.1"), "1.10.0-beta")


class CliTests(unittest.TestCase):
    def run_cli(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()):
            code = main(list(argv), out=out)
        return code, out.getvalue()

    def test_sort(self):
        self.assertEqual(self.run_cli("sort", "1.10.0", "1.2.0", "1.2.0-beta"),
                         (0, "1.2.0-beta\n1.2.0\n1.10.0\n"))

    def test_compare(self):
        self.assertEqual(self.run_cli("compare", "1.0.0", "1.0.0-rc.1"), (0, "1\n"))

    def test_satisfies_and_max(self):
        self.assertEqual(self.run_cli("satisfies", "~1.2", "1.2.5", "1.3.0"), (0, "1.2.5\n"))
        self.assertEqual(self.run_cli("satisfies", "~1.2", "1.3.0"), (1, ""))
        self.assertEqual(self.run_cli("max", "^1", "1.0.0", "1.4.0", "2.0.0"), (0, "1.4.0\n"))

    def test_bump(self):
        self.assertEqual(self.run_cli("bump", "minor", "1.4.2"), (0, "1.5.0\n"))
        self.assertEqual(self.run_cli("bump", "pre", "1.4.2"), (0, "1.4.3-rc.0\n"))

    def test_errors(self):
        self.assertEqual(self.run_cli("compare", "1.0", "1.0.0")[0], 2)
        self.assertEqual(self.run_cli("frobnicate")[0], 2)
        self.assertEqual(self.run_cli()[0], 2)


if __name__ == "__main__":
    unittest.main()

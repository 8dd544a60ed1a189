import unittest

from semver import InvalidVersion, Version, parse, sort_versions


class ParseTests(unittest.TestCase):
    def test_plain(self):
        v = parse("1.2.3")
        self.assertEqual((v.major, v.minor, v.patch), (1, 2, 3))
        self.assertEqual(v.prerelease, ())
        self.assertEqual(v.build, ())

    def test_leading_v_and_whitespace(self):
        self.assertEqual(str(parse(" v0.9.12 ")), "0.9.12")

    def test_prerelease_and_build(self):
        v = parse("1.0.0-alpha.1+exp.sha.5114f85")
        self.assertEqual(v.prerelease, ("alpha", "1"))
        self.assertEqual(v.build, ("exp", "sha", "5114f85"))
        self.assertEqual(str(v), "1.0.0-alpha.1+exp.sha.5114f85")
        self.assertTrue(v.is_prerelease)

    def test_invalid(self):
        for text in ["", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.3-", "1.2.3-01",
                     "1.2.3+", "1.2.3-a..b", "a.b.c", "1.2.-3"]:
            with self.subTest(text=text):
                with self.assertRaises(InvalidVersion):
                    parse(text)

    def test_not_a_string(self):
        with self.assertRaises(InvalidVersion):
            parse(123)

    def test_constructor_validates(self):
        with self.assertRaises(InvalidVersion):
            Version(-1, 0, 0)
        with self.assertRaises(InvalidVersion):
            Version(1, True, 0)
        self.assertEqual(str(Version(1, 2, 3, "rc.1", "b7")), "1.2.3-rc.1+b7")

    def test_immutable(self):
        v = parse("1.2.3")
        with self.assertRaises(AttributeError):
            v.major = 2


class PrecedenceTests(unittest.TestCase):
    def assertOrdered(self, *texts):
        versions = [parse(t) for t in texts]
        for low, high in zip(versions, versions[1:]):
            self.assertLess(low, high, "%s < %s" % (low, high))
            self.assertGreater(high, low)
            self.assertEqual(low.compare(high), -1)
            self.assertEqual(high.compare(low), 1)

    def test_numeric_parts(self):
        self.assertOrdered("0.0.1", "0.1.0", "0.9.0", "0.10.0", "1.0.0", "1.2.9", "1.2.10", "10.0.0")

    def test_prerelease_before_release(self):
        self.assertOrdered("1.0.0-rc.1", "1.0.0")
        self.assertOrdered("1.9.9", "2.0.0-alpha", "2.0.0")

    def test_spec_example(self):
        # The ordering example from the SemVer 2.0.0 specification, section 11.
        self.assertOrdered("1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                           "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.3",
                           "1.0.0-rc.1", "1.0.0")

    def test_build_metadata_ignored(self):
        a, b = parse("1.0.0+build.1"), parse("1.0.0+build.2")
        self.assertEqual(a, b)
        self.assertEqual(hash(a), hash(b))
        self.assertEqual(a.compare("1.0.0"), 0)

    def test_compare_with_other_types(self):
        self.assertNotEqual(parse("1.0.0"), "1.0.0")
        with self.assertRaises(TypeError):
            parse("1.0.0") < "1.0.0"

    def test_sort_versions(self):
        self.assertEqual(
            sort_versions(["1.10.0", "1.2.0", "1.2.0-beta", "0.9.1"]),
            ["0.9.1", "1.2.0-beta", "1.2.0", "1.10.0"],
        )
        self.assertEqual(sort_versions(["1.0.0", "2.0.0"], reverse=True), ["2.0.0", "1.0.0"])

    def test_sort_is_stable_for_equal_precedence(self):
        self.assertEqual(
            sort_versions(["1.0.0+b", "0.1.0", "1.0.0+a"]),
            ["0.1.0", "1.0.0+b", "1.0.0+a"],
        )


class BumpTests(unittest.TestCase):
    def test_release_bumps(self):
        v = parse("1.4.2")
        self.assertEqual(str(v.bump_major()), "2.0.0")
        self.assertEqual(str(v.bump_minor()), "1.5.0")
        self.assertEqual(str(v.bump_patch()), "1.4.3")

    def test_prerelease_bumps_to_release(self):
        self.assertEqual(str(parse("2.0.0-rc.1").bump_major()), "2.0.0")
        self.assertEqual(str(parse("2.1.0-rc.1").bump_minor()), "2.1.0")
        self.assertEqual(str(parse("2.1.3-rc.1").bump_patch()), "2.1.3")
        self.assertEqual(str(parse("2.1.3-rc.1").bump_minor()), "2.2.0")

    def test_bump_prerelease(self):
        self.assertEqual(str(parse("1.2.3").bump_prerelease()), "1.2.4-rc.0")
        self.assertEqual(str(parse("1.2.4-rc.0").bump_prerelease()), "1.2.4-rc.1")
        self.assertEqual(str(parse("1.2.4-beta").bump_prerelease()), "1.2.4-beta.0")
        self.assertEqual(str(parse("1.2.4-beta.1.x").bump_prerelease()), "1.2.4-beta.2.x")
        self.assertEqual(str(parse("1.2.3").bump_prerelease("alpha")), "1.2.4-alpha.0")

    def test_bump_drops_build(self):
        self.assertEqual(str(parse("1.2.3+b5").bump_patch()), "1.2.4")


if __name__ == "__main__":
    unittest.main()

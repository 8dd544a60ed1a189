import unittest

from semver import Version, max_satisfying, parse, sort_versions


class NumericPrereleaseOrderTests(unittest.TestCase):
    def test_numeric_identifiers_compare_as_numbers(self):
        self.assertLess(parse("1.0.0-alpha.2"), parse("1.0.0-alpha.10"))
        self.assertLess(parse("1.0.0-rc.9"), parse("1.0.0-rc.10"))
        self.assertLess(parse("1.0.0-2"), parse("1.0.0-11"))
        self.assertEqual(parse("1.0.0-beta.10").compare("1.0.0-beta.9"), 1)

    def test_numeric_identifiers_sort_before_alphanumeric(self):
        self.assertLess(parse("1.0.0-999"), parse("1.0.0-a"))
        self.assertLess(parse("1.0.0-alpha.100"), parse("1.0.0-alpha.beta"))
        self.assertLess(parse("1.0.0-alpha.1"), parse("1.0.0-alpha.1a"))

    def test_shorter_prerelease_sorts_first(self):
        self.assertLess(parse("1.0.0-alpha"), parse("1.0.0-alpha.0"))
        self.assertLess(parse("1.0.0-alpha.10"), parse("1.0.0-alpha.10.1"))

    def test_sort_versions_with_many_release_candidates(self):
        versions = ["2.0.0-rc.10", "2.0.0-rc.2", "2.0.0", "2.0.0-rc.1", "2.0.0-rc.11", "2.0.0-beta.12"]
        self.assertEqual(
            sort_versions(versions),
            ["2.0.0-beta.12", "2.0.0-rc.1", "2.0.0-rc.2", "2.0.0-rc.10", "2.0.0-rc.11", "2.0.0"],
        )

    def test_max_satisfying_picks_latest_release_candidate(self):
        versions = ["3.1.0-rc.9", "3.1.0-rc.10", "3.1.0-rc.3"]
        self.assertEqual(max_satisfying(versions, ">=3.1.0-rc.0 <3.1.0"), "3.1.0-rc.10")

    def test_bump_prerelease_keeps_increasing(self):
        v = parse("4.0.0-rc.8")
        seen = [v]
        for _ in range(4):
            v = v.bump_prerelease()
            seen.append(v)
        self.assertEqual(str(seen[-1]), "4.0.0-rc.12")
        self.assertEqual(sorted(seen), seen)
        self.assertEqual(max(seen), Version.parse("4.0.0-rc.12"))

    def test_equal_and_hash_consistent(self):
        self.assertEqual(parse("1.0.0-rc.10+a"), parse("1.0.0-rc.10+b"))
        self.assertEqual(len({parse("1.0.0-rc.10+a"), parse("1.0.0-rc.10")}), 1)


if __name__ == "__main__":
    unittest.main()

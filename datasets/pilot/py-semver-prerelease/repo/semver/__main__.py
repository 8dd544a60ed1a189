"""Command line: ``python3 -m semver COMMAND ...``.

Commands::

    sort VERSION...              print versions in ascending order
    compare A B                  print -1, 0 or 1
    satisfies RANGE VERSION...   print the versions that match RANGE
    max RANGE VERSION...         print the highest matching version
    bump PART VERSION            PART is major, minor, patch or pre
"""

import sys

from . import InvalidRange, InvalidVersion, Version, max_satisfying, satisfies, sort_versions

USAGE = __doc__.split("Commands::", 1)[1]


def _bump(part, text):
    version = Version.parse(text)
    if part == "major":
        return version.bump_major()
    if part == "minor":
        return version.bump_minor()
    if part == "patch":
        return version.bump_patch()
    if part == "pre":
        return version.bump_prerelease()
    raise InvalidVersion("unknown part %r (use major, minor, patch or pre)" % part)


def main(argv=None, out=None):
    argv = sys.argv[1:] if argv is None else argv
    out = sys.stdout if out is None else out
    if not argv or argv[0] in ("-h", "--help"):
        out.write("usage: python3 -m semver COMMAND ...\n" + USAGE)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    try:
        if command == "sort":
            for item in sort_versions(args):
                out.write(item + "\n")
        elif command == "compare" and len(args) == 2:
            out.write("%d\n" % Version.parse(args[0]).compare(args[1]))
        elif command == "satisfies" and args:
            matched = [v for v in args[1:] if satisfies(v, args[0])]
            for item in matched:
                out.write(item + "\n")
            return 0 if matched else 1
        elif command == "max" and args:
            best = max_satisfying(args[1:], args[0])
            if best is None:
                return 1
            out.write(best + "\n")
        elif command == "bump" and len(args) == 2:
            out.write("%s\n" % _bump(args[0], args[1]))
        else:
            sys.stderr.write("semver: bad command line; try --help\n")
            return 2
    except (InvalidVersion, InvalidRange) as exc:
        sys.stderr.write("semver: %s\n" % exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

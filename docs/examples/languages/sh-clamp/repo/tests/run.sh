#!/bin/sh
# The project's tests: sh tests/run.sh; exit 1 when one fails.
. ./clamp.sh
failed=0
check() { got=$(clamp "$1" "$2" "$3"); [ "$got" = "$4" ] || { echo "FAIL clamp $1 $2 $3: $got, not $4"; failed=1; }; }
check 3 1 5 3
check -2 1 5 1
exit $failed

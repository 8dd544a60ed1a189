#!/bin/sh
. ./clamp.sh
failed=0
check() { got=$(clamp "$1" "$2" "$3"); [ "$got" = "$4" ] || { echo "FAIL clamp $1 $2 $3: $got, not $4"; failed=1; }; }
check 9 1 5 5
check 5 1 5 5
exit $failed

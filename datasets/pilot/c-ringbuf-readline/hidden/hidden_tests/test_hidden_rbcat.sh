#!/bin/sh
# Hidden smoke test: rbcat with a buffer much smaller than the input.
rbcat=${1:?usage: test_hidden_rbcat.sh PATH/TO/rbcat}
passed=0
failed=0

check() { # name bufsize
    want=$(printf '%s' "$input" | awk '{ printf "%6d  %s\n", NR, $0 }')
    got=$(printf '%s' "$input" | "$rbcat" -b "$2" 2>&1)
    if [ "$got" = "$want" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf 'FAIL %s (-b %s)\n--- want\n%s\n--- got\n%s\n' "$1" "$2" "$want" "$got" >&2
    fi
}

input='alpha
beta
gamma
delta
'
check small-buffer 8
check tiny-buffer 7

input=$(i=1; while [ $i -le 40 ]; do echo "line number $i here"; i=$((i + 1)); done)
input="$input
"
check many-lines 32
check many-lines-odd 23
check many-lines-default 64

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

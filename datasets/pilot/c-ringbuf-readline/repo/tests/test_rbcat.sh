#!/bin/sh
# Smoke tests for the rbcat demo program. Usage: sh tests/test_rbcat.sh PATH/TO/rbcat
rbcat=${1:?usage: test_rbcat.sh PATH/TO/rbcat}
passed=0
failed=0

expect() { # name expected-output rbcat-args... (stdin from $input)
    name=$1 want=$2
    shift 2
    got=$(printf '%s' "$input" | "$rbcat" "$@" 2>&1)
    if [ "$got" = "$want" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf 'FAIL %s\n--- want\n%s\n--- got\n%s\n' "$name" "$want" "$got" >&2
    fi
}

input='alpha
beta
gamma
'
expect basic "$(printf '     1  alpha\n     2  beta\n     3  gamma')"

input='no newline at end'
expect last-line "     1  no newline at end"

input=''
expect empty ""

input='short
this line is far too long
'
expect too-long "$(printf '     1  short\nrbcat: line 2 is too long')" -b 8

input='x'
expect bad-usage "usage: rbcat [-b BUFSIZE] < file" -b 1

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/sh
# Command line tests for the varint tool. Usage: sh tests/cli.sh ./varint
varint=${1:?usage: cli.sh PATH/TO/varint}
passed=0
failed=0

t() { # expected-output expected-status args...
    want=$1 want_status=$2
    shift 2
    got=$("$varint" "$@" 2>&1)
    status=$?
    if [ "$got" = "$want" ] && [ "$status" -eq "$want_status" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf 'FAIL: varint %s\n  want (%s): %s\n  got  (%s): %s\n' "$*" "$want_status" "$want" "$status" "$got" >&2
    fi
}

t "ac02" 0 encode 300
t "$(printf '00\n7f\n8001')" 0 encode 0 127 128
t "03" 0 -s encode -2
t "varint: not a valid number: 0x10x" 1 encode 0x10x
t "varint: not a valid number: -5" 1 encode -5
t "$(printf '300\n1\n0')" 0 decode ac020100
t "-2" 0 -s decode 03
t "4294967295" 0 decode ffffffff0f
t "$(printf '150\nvarint: at byte 2: truncated varint')" 1 decode 960180
t "varint: odd number of hex digits" 1 decode abc
t "varint: bad hex digit" 1 decode zz
t "$(printf 'usage: varint [-s|-i] encode NUMBER...\n       varint [-s|-i] decode HEX')" 2 frob

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/sh
# clamp VALUE LOW HIGH: prints VALUE limited to [LOW, HIGH].
clamp() {
    if [ "$2" -gt "$3" ]; then echo "clamp: low > high" >&2; return 2; fi
    if [ "$1" -lt "$2" ]; then echo "$2"; return 0; fi
    if [ "$1" -ge "$3" ]; then echo "$1"; return 0; fi
    echo "$1"
}

#!/bin/sh
# 200000 bytes to stderr, then 200000 to stdout, then 100000 more to stderr:
# more than a pipe holds, so both pipes must be read as they fill.
head -c 200000 /dev/zero | tr '\0' e >&2
head -c 200000 /dev/zero | tr '\0' o
head -c 100000 /dev/zero | tr '\0' E >&2

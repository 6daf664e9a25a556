#!/bin/sh
# Writes $1 bytes of "x" to stderr, then "boom: disk full", and exits with $2.
head -c "$1" /dev/zero | tr '\0' x >&2
printf '\nboom: disk full\n' >&2
exit "$2"

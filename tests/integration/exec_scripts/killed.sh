#!/bin/sh
# Dies by signal $1 (sent to itself) after a line on stderr.
echo "about to die" >&2
kill -"$1" $$
sleep 5

#!/bin/sh
# Leaves a sleep running in the background, holding stdout and stderr, and
# exits at once; the sleep's pid goes to the file params {"pidfile"}.
params=$(cat)
pidfile=$(printf '%s' "$params" | sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
sleep 120 &
echo "$!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
echo '"left a sleep behind"'

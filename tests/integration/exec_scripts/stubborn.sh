#!/bin/sh
# Ignores SIGTERM (so does its sleep, which inherits it): only SIGKILL ends
# it. Records its pid in the file named by params {"pidfile"}.
trap '' TERM
params=$(cat)
pidfile=$(printf '%s' "$params" | sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
sleep 60 &
echo "$$ $!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
wait
wait
echo '"survived"'

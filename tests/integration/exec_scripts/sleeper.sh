#!/bin/sh
# Records its pid in the file named by params {"pidfile"}, then sleeps
# (in a child process: both must be stopped) for params {"seconds"}.
params=$(cat)
pidfile=$(printf '%s' "$params" | sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
seconds=$(printf '%s' "$params" | sed -n 's/.*"seconds": *\([0-9]*\).*/\1/p')
sleep "$seconds" &
echo "$$ $!" > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
wait
echo '"woke up"'

#!/bin/sh
# Starts a daemon meant to outlive its task, as workers/exec/README.md
# says: "setsid -w" returns once the daemon is in a session of its own
# (so out of the task's process group, which is killed when this script
# exits), its stdio away from the task's pipes. The daemon (a sleep) writes
# nothing; its pid goes to the file params {"pidfile"}.
params=$(cat)
pidfile=$(printf '%s' "$params" | sed -n 's/.*"pidfile": *"\([^"]*\)".*/\1/p')
setsid -w sh -c 'sleep 120 </dev/null >/dev/null 2>&1 & echo "$!" > "$1"' daemon "$pidfile"
echo '"started"'

#!/bin/sh
# Writes params {"branch"} (when given, verbatim) to ACTD_BRANCH_FILE and
# prints {"took": that}.
params=$(cat)
branch=$(printf '%s' "$params" | sed -n 's/.*"branch": *"\([^"]*\)".*/\1/p')
if [ -n "$branch" ]; then
    printf '%s\n' "$branch" > "$ACTD_BRANCH_FILE"
fi
printf '{"took": "%s"}\n' "$branch"

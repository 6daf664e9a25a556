#!/bin/sh
# Writes its discard and branches variables to the file params {"file"}.
params=$(cat)
file=$(printf '%s' "$params" | sed -n 's/.*"file": *"\([^"]*\)".*/\1/p')
printf '%s %s\n' "$ACTD_DISCARD" "$ACTD_BRANCHES" > "$file.tmp" && mv "$file.tmp" "$file"
echo '"recorded"'

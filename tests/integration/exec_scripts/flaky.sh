#!/bin/sh
# Fails (exit 75) on the first attempt, succeeds on the next ones.
if [ "$ACTD_ATTEMPT" = 1 ]; then
    echo "try again" >&2
    exit 75
fi
echo "{\"attempt\": $ACTD_ATTEMPT}"

#!/bin/sh
# Makes $ACTD_BRANCH_FILE a directory that holds files, and leaves a file
# beside it in the worker's private directory; exits 0.
mkdir -p "$ACTD_BRANCH_FILE/sub" && echo 1 > "$ACTD_BRANCH_FILE/sub/file"
echo junk > "$ACTD_BRANCH_FILE.junk"
echo '"made a directory"'

#!/bin/sh
# The params from stdin and the task's environment, as one JSON object.
params=$(cat)
printf '{"params": %s, "context": "%s", "call_id": "%s", "task_id": "%s",' \
    "$params" "$ACTD_CONTEXT" "$ACTD_CALL_ID" "$ACTD_TASK_ID"
printf ' "attempt": "%s", "deadline_ms": "%s", "instance": "%s",' \
    "$ACTD_ATTEMPT" "$ACTD_DEADLINE_MS" "${ACTD_INSTANCE-(unset)}"
printf ' "branches": "%s", "discard": "%s", "activity": "%s", "meta": %s,' \
    "$ACTD_BRANCHES" "$ACTD_DISCARD" "$ACTD_ACTIVITY" "$ACTD_META"
printf ' "trace": "%s",' "${TRACEPARENT-(unset)}"
printf ' "branch_file_set": %s, "args": "%s"}\n' \
    "$([ -n "$ACTD_BRANCH_FILE" ] && echo true || echo false)" "$*"

#!/bin/sh
# The command of test_languages.py's actd-exec worker. One script serves
# four activities; ACTD_ACTIVITY says which task this is:
#   sh_json: the params (stdin) and the activity, as a JSON object
#   sh_text: two lines of plain text (not JSON)
#   sh_exit: two lines on stderr, then exit status 3
#   sh_slow: sleeps far longer than any test's _timeout
case "$ACTD_ACTIVITY" in
    sh_json)
        params=$(cat)
        printf '{"activity": "%s", "params": %s}\n' "$ACTD_ACTIVITY" "$params"
        ;;
    sh_text)
        printf 'it is sunny\nin Oslo\n'
        ;;
    sh_exit)
        echo "warming up" >&2
        echo "no forecast: disk full" >&2
        exit 3
        ;;
    sh_slow)
        exec sleep 300
        ;;
    *)
        echo "unknown activity $ACTD_ACTIVITY" >&2
        exit 64
        ;;
esac

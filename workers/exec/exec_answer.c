/*  =========================================================================
    exec_answer - how a job's end answers its task (README.md, "What the
    command answers"): RESULT from stdout and the branch file when the
    command exited 0, else FAIL with a code and a message from stderr's
    tail. Why the worker stopped a command, if it did, wins over its exit.
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "actd_exec.h"

#define S_MAX_BRANCH        1000000     //  Largest branch number the broker takes

//  A copy of size bytes at data that is valid UTF-8 for a JSON string in
//  actd: each invalid byte and each NUL becomes U+FFFD. Caller frees.
static char *
s_utf8_clean (const char *data, size_t size)
{
    char *clean = malloc (size * 3 + 1);
    size_t length = 0;
    for (size_t at = 0; at < size;) {
        unsigned char lead = (unsigned char) data [at];
        size_t width = lead < 0x80? 1: (lead & 0xE0) == 0xC0? 2:
                       (lead & 0xF0) == 0xE0? 3: (lead & 0xF8) == 0xF0? 4: 0;
        if (lead && width && at + width <= size && act_utf8_valid (data + at, width, NULL)) {
            memcpy (clean + length, data + at, width);
            length += width;
            at += width;
        }
        else {
            memcpy (clean + length, "\xEF\xBF\xBD", 3);
            length += 3;
            at++;
        }
    }
    clean [length] = 0;
    return clean;
}

//  The message of a failure from the tail of stderr: the last EXEC_ERR_TAIL
//  bytes, a character cut at the start dropped, white space around it
//  removed, made valid UTF-8. NULL when nothing is left. Caller frees.
static char *
s_tail_message (const char *data, size_t size)
{
    size_t skip = 0;
    while (skip < 3 && skip < size && ((unsigned char) data [skip] & 0xC0) == 0x80)
        skip++;
    while (skip < size && strchr (" \t\r\n\v\f", data [skip]) && data [skip])
        skip++;
    char *message = s_utf8_clean (data + skip, size - skip);
    size_t length = strlen (message);
    while (length && strchr (" \t\r\n\v\f", message [length - 1]))
        message [--length] = 0;
    if (!length)
        zstr_free (&message);
    return message;
}

//  The branch the command wrote to ACTD_BRANCH_FILE: 0 when it wrote none.
//  Returns -1 with message (size bytes) set when the file holds anything
//  but a branch number the output path has.
static long long
s_job_branch (exec_job_t *self, char *message, size_t size)
{
    int fd = open (self->branch_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        if (errno == ENOENT)
            return 0;
        snprintf (message, size, "cannot read ACTD_BRANCH_FILE: %s", strerror (errno));
        return -1;
    }
    char text [40];
    ssize_t length = read (fd, text, sizeof text - 1);
    close (fd);
    if (length < 0) {
        snprintf (message, size, "cannot read ACTD_BRANCH_FILE: %s", strerror (errno));
        return -1;
    }
    text [length] = 0;
    const char *at = text;
    while (*at && strchr (" \t\r\n", *at))
        at++;
    if (!*at)
        return 0;               //  Empty: no branch chosen
    long long branch = 0;
    const char *digits = at;
    while (*at >= '0' && *at <= '9' && branch <= S_MAX_BRANCH)
        branch = branch * 10 + (*at++ - '0');
    while (*at && strchr (" \t\r\n", *at))
        at++;
    if (at == digits || *at || (size_t) length == sizeof text - 1 || branch > S_MAX_BRANCH) {
        //  Shown without the white space around it
        size_t end = (size_t) length;
        while (end && strchr (" \t\r\n", text [end - 1]))
            end--;
        char *shown = s_utf8_clean (digits, end - (size_t) (digits - text));
        snprintf (message, size, "ACTD_BRANCH_FILE holds \"%.40s\", not a branch number", shown);
        free (shown);
        return -1;
    }
    long long branches = act_task_branches (self->task);
    if (branches > 0 && branch >= branches) {
        snprintf (message, size, "the command chose branch %lld; the output path has %lld "
                  "alternative%s", branch, branches, branches == 1? "": "s");
        return -1;
    }
    return branch;
}

//  Stdout as the result's JSON text, each byte looked at a few times at
//  most (a result of hundreds of MB must not hold the loop for seconds):
//  when it is one JSON text (act_scan: what act_json_parse accepts), that
//  text without the white space around it, sent as it is (the broker
//  keeps a worker's text, PROTOCOL.md section 3.4); else stdout as a JSON
//  string. Sets *data and *size to the text, and *text to what the
//  caller frees (NULL when the text is in stdout); returns 0, or -1 with
//  message (length bytes) set when stdout is neither JSON nor a string's.
static int
s_job_text (exec_job_t *self, const char **data, size_t *size, char **text,
            char *message, size_t length)
{
    const char *out = self->out? self->out: "";
    size_t first = 0, last = self->out_size;
    *text = NULL;
    while (first < last && out [first] && strchr (" \t\r\n", out [first]))
        first++;
    //  A JSON text starts with one of these: others are not scanned (a
    //  scan reads a word of letters to its end)
    act_err_t err = { 0 };
    if (first < last && out [first] && strchr ("{[\"-0123456789tfn", out [first])
    &&  act_scan (self->server->scan, out, last, &err) == 0) {
        while (last > first && strchr (" \t\r\n", out [last - 1]))
            last--;
        *data = out + first;
        *size = last - first;
        return 0;
    }
    size_t offset = 0;
    const char *nul = memchr (out, 0, self->out_size);
    if (!act_utf8_valid (out, self->out_size, &offset)) {
        snprintf (message, length, "stdout is neither JSON nor UTF-8 text "
                  "(bad UTF-8 at byte %zu)", offset);
        return -1;
    }
    if (nul) {
        snprintf (message, length, "stdout is not JSON and holds a NUL byte "
                  "(at byte %zu), which no result string may carry", (size_t) (nul - out));
        return -1;
    }
    *text = act_json_quoten (out, self->out_size);
    if (!*text) {
        snprintf (message, length, "out of memory for a result of %zu bytes", self->out_size);
        return -1;
    }
    *size = strlen (*text);
    *data = *text;
    return 0;
}

//  Answer the task of a command that exited with status 0: RESULT, or FAIL
//  when its stdout or branch is unfit
static void
s_job_succeed (exec_job_t *self)
{
    char message [256];
    long long branch = s_job_branch (self, message, sizeof message);
    if (branch < 0) {
        act_task_fail (self->task, "bad_branch", message, false);
        return;
    }
    if (self->out_size >= EXEC_LARGE_OUTPUT)
        //  What follows holds the loop a while (some 0.3 s per 100 MB):
        //  the broker must not count it as silence on top of the time
        //  since the last heartbeat
        act_worker_heartbeat (self->server->worker);
    const char *data = NULL;
    size_t size = 0;
    char *text = NULL;
    if (s_job_text (self, &data, &size, &text, message, sizeof message)) {
        act_task_fail (self->task, "bad_output", message, false);
        return;
    }
    if (size > self->server->max_output) {
        snprintf (message, sizeof message, "the result is %zu bytes as JSON, over "
                  "--max-output (%zu)", size, self->server->max_output);
        act_task_fail (self->task, "output_too_large", message, false);
    }
    else
    if (act_task_result_text (self->task, data, size, (int) branch))
        exec_log ("task %s: could not send RESULT", self->task_id);
    free (text);
}

//  Answer the task from how the command ended
void
exec_answer (exec_job_t *self, int status, bool have_status)
{
    char text [256];
    char code [32];
    if (self->stop == EXEC_STOP_CANCELLED)
        act_task_fail (self->task, "cancelled",
                       "the broker cancelled the task; the command was stopped", false);
    else
    if (self->stop == EXEC_STOP_TIMEOUT) {
        snprintf (text, sizeof text, "the command ran past its deadline of %lld ms "
                  "and was stopped", self->deadline_ms);
        act_task_fail (self->task, "timeout", text, true);
    }
    else
    if (self->stop == EXEC_STOP_TOO_LARGE) {
        snprintf (text, sizeof text, "stdout went over --max-output (%zu bytes); "
                  "the command was stopped", self->server->max_output);
        act_task_fail (self->task, "output_too_large", text, false);
    }
    else
    if (!have_status)
        act_task_fail (self->task, "spawn_failed", "the command's exit status was lost", true);
    else
    if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
        s_job_succeed (self);
    else {
        char *message = s_tail_message (self->err, self->err_size);
        if (WIFEXITED (status)) {
            snprintf (code, sizeof code, "exit_%d", WEXITSTATUS (status));
            snprintf (text, sizeof text, "the command exited with status %d",
                      WEXITSTATUS (status));
        }
        else {
            int number = WIFSIGNALED (status)? WTERMSIG (status): 0;
            snprintf (code, sizeof code, "signal_%d", number);
            snprintf (text, sizeof text, "the command was killed by signal %d (%s)",
                      number, strsignal (number));
        }
        act_task_fail (self->task, code, message? message: text, true);
        free (message);
    }
}

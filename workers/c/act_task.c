/*  =========================================================================
    act_task - one task a C worker received: what it asks, and its answer
    (a result, a failure) or progress, sent on the connection it came on.

    A task remembers its link and that link's connection number: an
    answer to a task from an older connection is not sent (the broker has
    given that task to someone else as a new attempt).
    ========================================================================= */

#include "actd/act_worker.h"
#include "actd/act_json.h"
#include "actd/act_wire.h"
#include "act_worker_int.h"

char *
act_task_key (act_worker_link_t *link, uint64_t connection, const char *id)
{
    return zsys_sprintf ("%p.%" PRIu64 ".%s", (void *) link, connection, id);
}

//  Why meta is not a task's meta as PROTOCOL.md section 2 has it (an
//  object whose attempt and branches are integers, deadline_ms an integer
//  or null, instance a string or null), checked as the Python library
//  checks it; NULL when it is (the caller frees the reason)
static char *
s_meta_wrong (const json_t *meta)
{
    if (!json_is_object (meta))
        return strdup ("the meta is not an object");
    static const char *integers [] = { "attempt", "branches", "deadline_ms" };
    for (size_t i = 0; i < sizeof integers / sizeof integers [0]; i++) {
        json_t *value = json_object_get (meta, integers [i]);
        if (value && !json_is_integer (value)
        &&  !(json_is_null (value) && streq (integers [i], "deadline_ms")))
            return zsys_sprintf ("%s is not an integer", integers [i]);
    }
    json_t *instance = json_object_get (meta, "instance");
    if (instance && !json_is_string (instance) && !json_is_null (instance))
        return strdup ("instance is not a string");
    return NULL;
}

act_task_t *
act_task_new (act_worker_link_t *link, zmsg_t *msg)
{
    act_task_t *self = calloc (1, sizeof *self);
    self->worker = link->worker;
    self->link = link;
    self->connection = link->connection;
    self->id = zmsg_popstr (msg);
    self->key = act_task_key (link, self->connection, self->id);
    self->activity = zmsg_popstr (msg);
    char *params = zmsg_popstr (msg);
    char *meta = zmsg_popstr (msg);
    json_error_t error;
    self->params = params? json_loads (params, JSON_DECODE_ANY, &error): NULL;
    if (params && !self->params)
        self->unreadable = zsys_sprintf ("the task does not parse: params: %s", error.text);
    self->meta = meta? json_loads (meta, JSON_DECODE_ANY, &error): NULL;
    if (meta && !self->meta && !self->unreadable)
        self->unreadable = zsys_sprintf ("the task does not parse: meta: %s", error.text);
    char *wrong = self->meta? s_meta_wrong (self->meta): NULL;
    if (wrong && !self->unreadable)
        self->unreadable = zsys_sprintf ("the task does not parse: %s", wrong);
    free (wrong);
    free (params);
    free (meta);
    return self;
}

void
act_task_destroy (act_task_t **self_p)
{
    act_task_t *self = *self_p;
    if (self) {
        free (self->id);
        free (self->key);
        free (self->unreadable);
        free (self->activity);
        json_decref (self->params);
        json_decref (self->meta);
        free (self);
        *self_p = NULL;
    }
}

const char *act_task_id (act_task_t *self) { return self->id; }
const char *act_task_activity (act_task_t *self) { return self->activity; }
json_t *act_task_params (act_task_t *self) { return self->params; }
json_t *act_task_meta (act_task_t *self) { return self->meta; }
act_worker_t *act_task_worker (act_task_t *self) { return self->worker; }
bool act_task_cancelled (act_task_t *self) { return self->cancelled; }

static const char *
s_meta_string (act_task_t *self, const char *name)
{
    return json_string_value (json_object_get (self->meta, name));
}

static long long
s_meta_integer (act_task_t *self, const char *name)
{
    return (long long) json_integer_value (json_object_get (self->meta, name));
}

const char *act_task_context (act_task_t *self) { return s_meta_string (self, "context"); }
const char *act_task_call_id (act_task_t *self) { return s_meta_string (self, "call_id"); }
const char *act_task_instance (act_task_t *self) { return s_meta_string (self, "instance"); }
const char *act_task_trace (act_task_t *self) { return s_meta_string (self, "trace"); }
long long act_task_deadline_ms (act_task_t *self) { return s_meta_integer (self, "deadline_ms"); }
long long act_task_attempt (act_task_t *self) { return s_meta_integer (self, "attempt"); }
long long act_task_branches (act_task_t *self) { return s_meta_integer (self, "branches"); }

bool
act_task_discard (act_task_t *self)
{
    return json_is_true (json_object_get (self->meta, "discard"));
}

void
act_task_on_cancel (act_task_t *self, act_task_cancel_fn *fn, void *arg)
{
    self->on_cancel = fn;
    self->cancel_arg = arg;
}

//  Send an answer for the task on its connection, then forget the task
static int
s_answer (act_task_t *self, const char *command, zmsg_t *args)
{
    act_worker_t *worker = self->worker;
    int rc = 0;
    if (self->connection == self->link->connection) {
        zmsg_pushstr (args, self->id);
        rc = act_worker_link_send (self->link, command, args);
    }
    else
        zmsg_destroy (&args);   //  The broker gave this task to someone else
    act_worker_task_forget (worker, self);
    act_task_destroy (&self);
    return rc;
}

int
act_task_result (act_task_t *self, const json_t *result, int branch)
{
    char *text = act_json_dump (result? result: json_null ());
    int rc = act_task_result_text (self, text, strlen (text), branch);
    free (text);
    return rc;
}

int
act_task_result_text (act_task_t *self, const char *text, size_t size, int branch)
{
    //  actd fails a result over its max_message_bytes, and past four times
    //  that drops the connection, and every task on it with it: one is
    //  not sent. A fire-and-forget call's result is thrown away at actd
    size_t most = act_worker_max_message_bytes (self->worker);
    if (size > most && act_task_discard (self)) {
        text = "null";
        size = 4;
    }
    else
    if (size > most) {
        char *message = zsys_sprintf ("the result is %zu bytes, over max_message_bytes (%zu)",
                                      size, most);
        zsys_warning ("actd worker: task %s: %s: failed instead", self->id, message);
        int rc = act_task_fail (self, "activity_failed", message, false);
        zstr_free (&message);
        return rc;
    }
    zmsg_t *args = zmsg_new ();
    zmsg_addmem (args, text, size);
    if (branch)
        zmsg_addstrf (args, "%d", branch);
    return s_answer (self, "RESULT", args);
}

//  The failure's text with its message cut to ACT_WORKER_MAX_FAIL_MESSAGE
//  bytes, or half of most (the worker's max_message_bytes) when that is
//  less, backed up to a UTF-8 character's start (jansson refuses half a
//  character), for a failure whose text was size bytes
static char *
s_fail_cut (json_t *error, const char *message, size_t size, size_t most)
{
    size_t cut = strlen (message);
    size_t keep = most / 2 < ACT_WORKER_MAX_FAIL_MESSAGE? most / 2: ACT_WORKER_MAX_FAIL_MESSAGE;
    if (cut > keep) {
        cut = keep;
        while (cut > 0 && ((unsigned char) message [cut] & 0xC0) == 0x80)
            cut--;
    }
    char *shown = zsys_sprintf ("%.*s... (cut: the failure was %zu bytes)",
                                (int) cut, message, size);
    json_object_set_new (error, "message", json_string (shown));
    zstr_free (&shown);
    return act_json_dump (error);
}

//  A copy of text with each byte that is not part of well-formed UTF-8
//  written '?' (the caller frees it): a message that is not UTF-8 (a
//  strerror in another locale, a program's output) made jansson refuse the
//  FAIL's body, and the worker crashed sending none
static char *
s_utf8_fixed (const char *text)
{
    char *fixed = strdup (text);
    size_t size = strlen (fixed), from = 0, bad;
    while (!act_utf8_valid (fixed + from, size - from, &bad)) {
        fixed [from + bad] = '?';
        from += bad + 1;
    }
    return fixed;
}

int
act_task_fail (act_task_t *self, const char *code, const char *message, bool retryable)
{
    char *fixed = s_utf8_fixed (message? message: "failed");
    message = fixed;
    json_t *error = json_pack ("{sssb}", "message", message, "retryable", retryable);
    if (code) {
        char *code_fixed = s_utf8_fixed (code);
        json_object_set_new (error, "code", json_string (code_fixed));
        free (code_fixed);
    }
    zmsg_t *args = zmsg_new ();
    char *text = act_json_dump (error);
    //  actd reads a FAIL over its max_message_bytes as {}: retried as
    //  activity_failed, the code lost
    size_t most = act_worker_max_message_bytes (self->worker);
    if (text && strlen (text) > most) {
        char *cut = s_fail_cut (error, message, strlen (text), most);
        free (text);
        text = cut;
    }
    zmsg_addstr (args, text);
    free (text);
    json_decref (error);
    free (fixed);
    return s_answer (self, "FAIL", args);
}

int
act_task_progress (act_task_t *self, const json_t *details)
{
    //  A string or key that is not UTF-8 (json_string_nocheck's) is dumped
    //  as its bytes, which actd refused (it ignored the PROGRESS): they are
    //  only ever inside a JSON string, where '?' is fine. NULL details (a
    //  json_pack that refused such a string) aborted the worker
    char *text = act_json_dump (details);
    if (!text)
        return -1;
    char *fixed = s_utf8_fixed (text);
    free (text);
    int rc = 0;
    size_t most = act_worker_max_message_bytes (self->worker);
    if (strlen (fixed) > most) {
        //  Over actd's limit it would be ignored, and past four times that
        //  cost the connection and every task on it
        zsys_warning ("actd worker: task %s: progress of %zu bytes, over max_message_bytes "
                      "(%zu), not sent", self->id, strlen (fixed), most);
        rc = -1;
    }
    else
    if (self->connection == self->link->connection) {
        zmsg_t *args = zmsg_new ();
        zmsg_addstr (args, self->id);
        zmsg_addstr (args, fixed);
        rc = act_worker_link_send (self->link, "PROGRESS", args);
    }
    free (fixed);
    return rc;
}

/*  =========================================================================
    actctl_contexts - actctl's commands about contexts: append, resolve, view, history,
    tail, contexts, delete.
    ========================================================================= */

#include "actctl.h"

#include <signal.h>

//  How often tail wakes to see whether a signal came just before it waited
#define S_TAIL_WAKE_MS      1000

//  The body of a message as a new string: data's data, error's error, and
//  for another type (text, note, ...) its fields but the metadata (type,
//  kind and the _ fields the line shows or the broker keeps) as one
//  compact object, so that what the message says is never left out
static char *
s_body (const json_t *message)
{
    json_t *body = json_object_get (message, "data");
    if (!body)
        body = json_object_get (message, "error");
    if (body)
        return act_json_dump (body);
    json_t *rest = json_object ();
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) message, key, value)
        if (*key != '_' && !streq (key, "type") && !streq (key, "kind"))
            json_object_set (rest, key, value);
    char *text = json_object_size (rest)? act_json_dump (rest): strdup ("");
    json_decref (rest);
    return text;
}

//  A stored message on one line: #seq date type [kind] [@instance]
//  [output path] [(call id)] body
static void
s_print_message (const json_t *message)
{
    const char *kind = json_string_value (json_object_get (message, "kind"));
    const char *instance = json_string_value (json_object_get (message, "_instance"));
    const char *path = json_string_value (json_object_get (message, "_outputPath"));
    const char *call = json_string_value (json_object_get (message, "_callId"));
    char *text = s_body (message);
    char *from_call = call? zsys_sprintf (" (call %s)", call): strdup ("");
    printf ("#%" JSON_INTEGER_FORMAT " %s %s%s%s%s%s%s%s%s %s\n",
            json_integer_value (json_object_get (message, "_seq")),
            actctl_field (message, "_date"),
            actctl_field (message, "type"),
            kind? " ": "", kind? kind: "",
            instance? " @": "", instance? instance: "",
            path? " ": "", path? path: "",
            from_call, text);
    free (from_call);
    free (text);
}

//  A HISTORY page asked from from: an array of objects, each with an
//  integer _seq, increasing and at least from (and 1). Sets *next to the
//  from of the following page (the last _seq plus one; from when the page
//  is empty) and returns 0; or -1 with err set (bad_json): a page that
//  does not say where it ends must not be taken for one that does, and
//  --all asks again only from a _seq past the last one
static int
s_history_checked (const json_t *page, uint64_t from, uint64_t *next, act_err_t *err)
{
    if (!json_is_array (page))
        return act_err_set (err, ACT_E_BAD_JSON, "HISTORY did not answer an array");
    *next = from;
    size_t index;
    json_t *message;
    json_array_foreach (page, index, message) {
        json_t *seq = json_object_get (message, "_seq");
        json_int_t value = json_integer_value (seq);
        if (!json_is_integer (seq) || value < 1 || (uint64_t) value < *next)
            return act_err_set (err, ACT_E_BAD_JSON, "HISTORY from %" PRIu64 ": message %zu "
                                "has no integer _seq of at least %" PRIu64, from, index,
                                *next > 1? *next: 1);
        *next = (uint64_t) value + 1;
    }
    return 0;
}

//  history: the page from --from, or with --all every page to the first
//  empty one (actd stops a page early at max_reply_bytes), as lines or as
//  one JSON array. A page of the wrong shape is bad_json (exit 1) before
//  anything is printed
int
actctl_history (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *context = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    uint64_t from = options->from;
    json_t *all = json_array ();
    while (true) {
        json_t *page = act_client_history (client, context, from, options->limit, &err);
        uint64_t next = from;
        if (!page || s_history_checked (page, from, &next, &err)) {
            json_decref (page);
            json_decref (all);
            return actctl_fail (options, &err);
        }
        size_t size = json_array_size (page);
        json_array_extend (all, page);
        json_decref (page);
        from = next;
        if (!options->all || size == 0)
            break;
    }
    if (options->json)
        actctl_print_json (all);
    else {
        size_t index;
        json_t *message;
        json_array_foreach (all, index, message)
            s_print_message (message);
    }
    json_decref (all);
    return 0;
}

//  tail's events, one a line: a message as history prints it, a call's
//  change of state, the end of the context; or with --json each as the
//  broker sent it
static void
s_print_event (const actctl_options_t *options, act_watch_t *watch, const char *context,
               const json_t *event)
{
    json_t *call = json_object_get (event, "call");
    if (options->json)
        printf ("%s\n", act_watch_text (watch));
    else
    if (json_object_get (event, "message"))
        s_print_message (json_object_get (event, "message"));
    else
    if (call) {
        json_int_t attempts = json_integer_value (json_object_get (call, "attempts"));
        printf ("call %s: %s, %" JSON_INTEGER_FORMAT " attempt%s\n",
                actctl_field (call, "call_id"),
                actctl_field (call, "state"), attempts,
                actctl_plural (attempts));
    }
    else
    if (json_object_get (event, "deleted"))
        printf ("context %s deleted\n", context);
    fflush (stdout);
}

//  Set by SIGINT or SIGTERM during tail: the wait it interrupts returns,
//  and tail ends as if the stream had
static volatile sig_atomic_t s_interrupted;

static void
s_on_signal (int signal)
{
    (void) signal;
    s_interrupted = 1;
}

//  tail: the context's messages from --from (1: all of them; 0: only new
//  ones), then each one as it is stored, until Ctrl-C or the context is
//  deleted; the library watches again after a broker restart. No broker
//  answering at the start exits 3 after --timeout
int
actctl_tail (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *context = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    //  The broker does not acknowledge WATCH, and a watch of a context with
    //  nothing to tell yet is silent: a PING first (it needs no right)
    //  says within --timeout whether a broker is there at all, as every
    //  other command does. Once the watch is open, tail waits as long as
    //  it takes, across restarts of the broker. Ctrl-C meanwhile kills
    //  actctl as it does any other command (the handler below would only
    //  be seen when the PING gives up)
    if (act_client_ping (client, &err))
        return actctl_fail (options, &err);
    //  No SA_RESTART: the signal ends the poll the watch waits in
    struct sigaction action = { .sa_handler = s_on_signal };
    sigemptyset (&action.sa_mask);
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGTERM, &action, NULL);
    act_watch_t *watch = act_client_watch (client, context, options->from, options->calls,
                                           &err);
    if (!watch)
        return actctl_fail (options, &err);
    int rc = 0;
    while (!s_interrupted) {
        //  Waking now and then closes the gap between the test of
        //  s_interrupted and the poll, where a signal would go unseen
        json_t *event = act_watch_next (watch, S_TAIL_WAKE_MS, &err);
        if (!event && err.code) {
            rc = actctl_fail (options, &err);
            break;
        }
        if (!event)
            continue;
        s_print_event (options, watch, context, event);
        bool deleted = json_object_get (event, "deleted") != NULL;
        json_decref (event);
        if (deleted)
            break;
    }
    act_watch_destroy (&watch);
    return rc;
}

//  A CONTEXTS page asked after after (NULL: the first): an object whose
//  contexts is an array of objects each with a string context, and whose
//  next, when there, is a string after after in byte order (asking from
//  a next that does not advance would ask for ever). Returns 0, or -1
//  with err set (bad_json)
static int
s_contexts_checked (const json_t *page, const char *after, act_err_t *err)
{
    json_t *contexts = json_object_get (page, "contexts");
    if (!json_is_object (page) || !json_is_array (contexts))
        return act_err_set (err, ACT_E_BAD_JSON,
                            "CONTEXTS did not answer an object with a contexts array");
    size_t index;
    json_t *entry;
    json_array_foreach (contexts, index, entry)
        if (!json_is_string (json_object_get (entry, "context")))
            return act_err_set (err, ACT_E_BAD_JSON, "CONTEXTS: entry %zu is not an object "
                                "with a string context", index);
    json_t *next = json_object_get (page, "next");
    const char *text = json_string_value (next);
    if (next && (!text || !*text || (after && strcmp (text, after) <= 0)))
        return act_err_set (err, ACT_E_BAD_JSON, "CONTEXTS: next is not a context id after "
                            "'%.100s'", after? after: "");
    return 0;
}

//  contexts: every page, as a table or one JSON object a line; a page of
//  the wrong shape is bad_json (exit 1), after the pages before it
int
actctl_contexts (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *prefix = nargs? args [0]: NULL;
    act_err_t err = { 0 };
    char *after = NULL;
    if (!options->json)
        printf ("%-32s %9s %9s %8s  %s\n", "CONTEXT", "MESSAGES", "LAST_SEQ", "PENDING",
                "UPDATED");
    do {
        json_t *page = act_client_contexts (client, prefix, after, options->limit, &err);
        if (!page || s_contexts_checked (page, after, &err)) {
            json_decref (page);
            free (after);
            return actctl_fail (options, &err);
        }
        free (after);
        after = NULL;
        size_t index;
        json_t *entry;
        json_array_foreach (json_object_get (page, "contexts"), index, entry) {
            const char *updated = json_string_value (json_object_get (entry, "updated"));
            if (options->json)
                actctl_print_line (entry);
            else
                printf ("%-32s %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT
                        " %8" JSON_INTEGER_FORMAT "  %s\n",
                        actctl_field (entry, "context"),
                        json_integer_value (json_object_get (entry, "messages")),
                        json_integer_value (json_object_get (entry, "last_seq")),
                        json_integer_value (json_object_get (entry, "pending")),
                        updated? updated: "-");
        }
        const char *next = json_string_value (json_object_get (page, "next"));
        after = next? strdup (next): NULL;
        json_decref (page);
    } while (after);
    return 0;
}

//  delete: the context, printing the counts DELETE answers (an object;
//  another answer is bad_json, exit 1)
int
actctl_delete (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *context = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    json_t *counts = NULL;
    if (act_client_delete (client, context, &counts, &err) == 0)
        counts = actctl_expect (counts, JSON_OBJECT, "DELETE", &err);
    if (!counts)
        return actctl_fail (options, &err);
    json_int_t messages = json_integer_value (json_object_get (counts, "messages"));
    json_int_t cancelled = json_integer_value (json_object_get (counts, "cancelled"));
    if (options->json)
        actctl_print_line (counts);
    else
        printf ("deleted context %s: %" JSON_INTEGER_FORMAT " message%s, %"
                JSON_INTEGER_FORMAT " call%s cancelled\n", context, messages,
                actctl_plural (messages), cancelled, actctl_plural (cancelled));
    json_decref (counts);
    return 0;
}

int
actctl_append (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    (void) nargs;
    act_err_t err = { 0 };
    uint64_t seq;
    if (act_client_append_key (client, args [0], args [1], options->key, &seq, &err))
        return actctl_fail (options, &err);
    printf (options->json? "{\"seq\":%" PRIu64 "}\n": "appended: seq %" PRIu64 "\n", seq);
    return 0;
}

int
actctl_resolve (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    (void) nargs;
    act_err_t err = { 0 };
    return actctl_print_answer (options, act_client_resolve (client, args [0], args [1],
                                                        options->instance, &err), &err);
}

//  view: the merged view as JSON (VIEW must answer an array; another
//  answer is bad_json, exit 1), or with --text its text rendering
int
actctl_view (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *context = args [0];
    (void) nargs;
    act_err_t err = { 0 };
    if (options->text) {
        char *text = act_client_view_text (client, context, &err);
        if (!text)
            return actctl_fail (options, &err);
        printf ("%s", text);
        free (text);
        return 0;
    }
    return actctl_print_answer (options, actctl_expect (act_client_view (client, context, &err),
                                                        JSON_ARRAY, "VIEW", &err), &err);
}

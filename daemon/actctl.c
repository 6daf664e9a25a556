/*  =========================================================================
    actctl - the actd command line, on the C client library.

    Human-readable output by default, --json for scripts. A broker ERROR
    prints its code and message and exits 1; no reply in time exits 3;
    a bad command line exits 2.
    ========================================================================= */

#include <getopt.h>
#include <signal.h>
#include <unistd.h>
#include "actd/act_client.h"
#include "actd/act_json.h"

//  The command line
typedef struct {
    const char *endpoint;       //  Broker's client endpoint
    bool json;                  //  Print raw JSON
    bool wait;                  //  call/plan: wait for the outcome
    bool text;                  //  view: the text rendering
    bool all;                   //  history: every page
    const char *instance;       //  resolve: the instance
    const char *dir;            //  keygen: where to write
    const char *curve_server;   //  The broker's public key (CURVE)
    const char *curve_cert;     //  This client's certificate file (CURVE)
    uint64_t from;              //  history: first _seq
    uint64_t limit;             //  history: page size
    int timeout;                //  Milliseconds to wait for a reply (0: not given)
    bool live;                  //  --wait on a terminal: show the call's state
    bool calls;                 //  tail: the calls' changes of state too
    const char *key;            //  append: the idempotency key
} s_options_t;

//  How long to wait for a reply unless --timeout says otherwise. A ping
//  asks only whether a broker is there, so it gives up sooner.
#define S_TIMEOUT_MS        30000
#define S_PING_TIMEOUT_MS   2000
//  How often --wait on a terminal asks STATUS
#define S_LIVE_INTERVAL_MS  250
//  How often tail wakes to see whether a signal came just before it waited
#define S_TAIL_WAKE_MS      1000

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: actctl [options] COMMAND [ARGS]\n"
        "commands:\n"
        "  call CONTEXT JSON [--wait]      submit a call; --wait: until it ends\n"
        "  plan CONTEXT JSON-ARRAY [--wait]\n"
        "  append CONTEXT JSON [--key K]   append a message (once per key)\n"
        "  resolve CONTEXT EXPR [--instance NAME]\n"
        "  view CONTEXT [--text]           the merged view\n"
        "  history CONTEXT [--from N] [--limit N] [--all]\n"
        "  tail CONTEXT [--from N] [--calls]   follow its messages live (Ctrl-C ends)\n"
        "  contexts [PREFIX]               list the contexts\n"
        "  delete CONTEXT                  delete a context, cancelling its calls\n"
        "  status CALL_ID\n"
        "  cancel CALL_ID\n"
        "  stats\n"
        "  ping\n"
        "  keygen NAME [--dir DIR]         write a CURVE keypair NAME.key, NAME.key_secret\n"
        "options:\n"
        "  --endpoint EP     broker's client endpoint ($ACTD_ENDPOINT, else %s)\n"
        "  --json            print JSON, for scripts\n"
        "  --timeout MS      how long to wait for a reply (30000; ping: 2000)\n"
        "  --curve-server KEY --curve-cert FILE   connect with CURVE\n"
        "                    ($ACTD_SERVER_KEY, $ACTD_CERT)\n"
        "  --version         print actctl's version\n"
        "exit: 0 ok, 1 the broker refused or the call failed, 2 usage, 3 no reply\n",
        ACT_CLIENT_ENDPOINT);
}

static void
s_print_json (const json_t *value)
{
    char *text = act_json_dumps (value, JSON_INDENT (2));
    printf ("%s\n", text);
    free (text);
}

//  One JSON value on one line, for scripts that read a line per value
static void
s_print_line (const json_t *value)
{
    char *text = act_json_dump (value);
    printf ("%s\n", text);
    free (text);
}

//  Print a failed request; returns the exit code. No reply at all is
//  mostly a broker that is not there, or one that refused our key at the
//  CURVE handshake (which a client cannot see), so say what to check.
static int
s_fail (const s_options_t *options, act_err_t *err)
{
    fprintf (stderr, "actctl: %s: %s\n", err->code, err->message);
    if (!streq (err->code, "timeout"))
        return 1;
    fprintf (stderr, "actctl: no reply: is actd running at %s?\n", options->endpoint);
    if (options->curve_server)
        fprintf (stderr, "actctl: with CURVE: is --curve-server the broker's public key, "
                         "and is this client's key allowed?\n");
    return 3;
}

static const char *
s_plural (json_int_t count)
{
    return count == 1? "": "s";
}

//  Print a call's outcome; returns the exit code (0 when it ended ok)
static int
s_outcome (s_options_t *options, const json_t *outcome)
{
    const char *status = json_string_value (json_object_get (outcome, "status"));
    if (options->json)
        s_print_json (outcome);
    else {
        printf ("call %s: %s", json_string_value (json_object_get (outcome, "call_id")), status);
        json_t *written = json_object_get (outcome, "written");
        if (json_object_get (outcome, "branch"))
            printf (", branch %" JSON_INTEGER_FORMAT,
                    json_integer_value (json_object_get (outcome, "branch")));
        if (json_array_size (written)) {
            char *refs = act_json_dump (written);
            char *seqs = act_json_dump (json_object_get (outcome, "seqs"));
            printf (", wrote %s at seqs %s", refs, seqs);
            free (refs);
            free (seqs);
        }
        json_int_t attempts = json_integer_value (json_object_get (outcome, "attempts"));
        printf (" (%" JSON_INTEGER_FORMAT " attempt%s)\n", attempts, s_plural (attempts));
        json_t *error = json_object_get (outcome, "error");
        if (error)
            printf ("error %s: %s\n", json_string_value (json_object_get (error, "code")),
                    json_string_value (json_object_get (error, "message")));
        if (json_object_get (outcome, "result"))
            s_print_json (json_object_get (outcome, "result"));
    }
    return status && streq (status, "ok")? 0: 1;
}

//  The live line of --wait on a terminal: the call's state, attempts and
//  last progress, written over the previous line. The progress is cut so
//  the line stays one line, which the carriage return can overwrite.
static void
s_live_show (const char *call_id, const json_t *status)
{
    json_int_t attempts = json_integer_value (json_object_get (status, "attempts"));
    json_t *details = json_object_get (status, "progress");
    char *progress = details? act_json_dump (details): NULL;
    if (progress && strlen (progress) > 50)
        strcpy (progress + 47, "...");
    printf ("\r\033[Kcall %s: %s, %" JSON_INTEGER_FORMAT " attempt%s%s%s", call_id,
            json_string_value (json_object_get (status, "state")), attempts,
            s_plural (attempts), progress? ", progress ": "", progress? progress: "");
    fflush (stdout);
    free (progress);
}

static void
s_live_clear (void)
{
    printf ("\r\033[K");
    fflush (stdout);
}

//  The live line of --wait on a terminal: ask STATUS every
//  S_LIVE_INTERVAL_MS and show it until the call has ended (its worker's
//  progress is no change of state, so no watch event says it). Returns
//  the last STATUS, or NULL with err set.
static json_t *
s_live_wait (act_client_t *client, s_options_t *options, const char *call_id,
             act_err_t *err)
{
    int64_t deadline = zclock_mono () + options->timeout;
    json_t *status = NULL;
    while (true) {
        json_decref (status);
        status = act_client_status (client, call_id, err);
        if (!status
        ||  act_client_state_ended (json_string_value (json_object_get (status, "state")))
        ||  zclock_mono () > deadline)
            break;
        s_live_show (call_id, status);
        zclock_sleep (S_LIVE_INTERVAL_MS);
    }
    s_live_clear ();
    return status;
}

//  Wait for a call to end: a fire-and-forget call, which has no DONE, from
//  a watch of its calls (act_client_wait_call), or any call under --wait
//  on a terminal, showing its state meanwhile. With outcome, print the
//  outcome as DONE carries it (STATUS holds the same object), else the
//  final state.
static int
s_wait_status (act_client_t *client, s_options_t *options, const char *call_id,
               bool outcome)
{
    act_err_t err = { 0 };
    json_t *status = options->live? s_live_wait (client, options, call_id, &err)
                                  : act_client_wait_call (client, call_id, &err);
    if (!status && !streq (err.code, ACT_E_TIMEOUT))
        return s_fail (options, &err);
    const char *state = json_string_value (json_object_get (status, "state"));
    int rc;
    if (!act_client_state_ended (state)) {
        fprintf (stderr, "actctl: timeout: call %s has not ended\n", call_id);
        rc = 3;
    }
    else
    if (outcome && json_object_get (status, "outcome"))
        rc = s_outcome (options, json_object_get (status, "outcome"));
    else {
        if (options->json)
            s_print_json (status);
        else
            printf ("call %s: %s\n", call_id, state);
        rc = streq (state, "ok")? 0: 1;
    }
    json_decref (status);
    return rc;
}

static bool
s_has_output (const char *call)
{
    json_t *parsed = act_json_parse (call, strlen (call), NULL);
    bool has_output = json_object_get (parsed, "_outputPath") != NULL;
    json_decref (parsed);
    return has_output;
}

static int
s_call (act_client_t *client, s_options_t *options, char **args, int nargs)
{
    if (nargs != 2)
        return -1;
    act_err_t err = { 0 };
    char *call_id = NULL;
    json_t *outcome = NULL;
    //  Live, actctl asks STATUS itself instead of waiting for DONE
    bool done = options->wait && !options->live;
    if (act_client_call (client, args [0], args [1], done, &call_id, &outcome, &err)) {
        free (call_id);
        return s_fail (options, &err);
    }
    int rc = 0;
    if (outcome)
        rc = s_outcome (options, outcome);
    else
    if (options->wait)
        rc = s_wait_status (client, options, call_id, options->live && s_has_output (args [1]));
    else
    if (options->json)
        printf ("{\"call_id\":\"%s\"}\n", call_id);
    else
        printf ("accepted: call %s\n", call_id);
    json_decref (outcome);
    free (call_id);
    return rc;
}

static int
s_plan (act_client_t *client, s_options_t *options, char **args, int nargs)
{
    if (nargs != 2)
        return -1;
    act_err_t err = { 0 };
    json_t *ids = NULL, *outcomes = NULL;
    if (act_client_plan (client, args [0], args [1], options->wait, &ids,
                         options->wait? &outcomes: NULL, &err)) {
        json_decref (ids);
        json_decref (outcomes);
        return s_fail (options, &err);
    }
    int rc = 0;
    if (options->json)
        s_print_json (outcomes? outcomes: ids);
    else {
        char *list = act_json_dump (ids);
        printf ("accepted: calls %s\n", list);
        free (list);
        const char *id;
        json_t *outcome;
        json_object_foreach (outcomes, id, outcome)
            rc |= s_outcome (options, outcome);
    }
    json_decref (ids);
    json_decref (outcomes);
    return rc;
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
    json_t *body = json_object_get (message, "data");
    if (!body)
        body = json_object_get (message, "error");
    char *text = body? act_json_dump (body): strdup ("");
    char *from_call = call? zsys_sprintf (" (call %s)", call): strdup ("");
    printf ("#%" JSON_INTEGER_FORMAT " %s %s%s%s%s%s%s%s%s %s\n",
            json_integer_value (json_object_get (message, "_seq")),
            json_string_value (json_object_get (message, "_date")),
            json_string_value (json_object_get (message, "type")),
            kind? " ": "", kind? kind: "",
            instance? " @": "", instance? instance: "",
            path? " ": "", path? path: "",
            from_call, text);
    free (from_call);
    free (text);
}

static int
s_history (act_client_t *client, s_options_t *options, const char *context)
{
    act_err_t err = { 0 };
    uint64_t from = options->from;
    json_t *all = json_array ();
    while (true) {
        json_t *page = act_client_history (client, context, from, options->limit, &err);
        if (!page) {
            json_decref (all);
            return s_fail (options, &err);
        }
        size_t size = json_array_size (page);
        json_array_extend (all, page);
        if (size)
            from = (uint64_t) json_integer_value (json_object_get (
                       json_array_get (page, size - 1), "_seq")) + 1;
        json_decref (page);
        //  Only an empty page is the end: actd stops a page early at
        //  max_reply_bytes
        if (!options->all || size == 0)
            break;
    }
    if (options->json)
        s_print_json (all);
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
s_print_event (const s_options_t *options, act_watch_t *watch, const char *context,
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
                json_string_value (json_object_get (call, "call_id")),
                json_string_value (json_object_get (call, "state")), attempts,
                s_plural (attempts));
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
//  deleted; the library watches again after a broker restart
static int
s_tail (act_client_t *client, s_options_t *options, const char *context)
{
    //  No SA_RESTART: the signal ends the poll the watch waits in
    struct sigaction action = { .sa_handler = s_on_signal };
    sigemptyset (&action.sa_mask);
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGTERM, &action, NULL);
    act_err_t err = { 0 };
    act_watch_t *watch = act_client_watch (client, context, options->from, options->calls,
                                           &err);
    if (!watch)
        return s_fail (options, &err);
    int rc = 0;
    while (!s_interrupted) {
        //  Waking now and then closes the gap between the test of
        //  s_interrupted and the poll, where a signal would go unseen
        json_t *event = act_watch_next (watch, S_TAIL_WAKE_MS, &err);
        if (!event && err.code) {
            rc = s_fail (options, &err);
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

//  contexts: every page, as a table or one JSON object a line
static int
s_contexts (act_client_t *client, s_options_t *options, const char *prefix)
{
    act_err_t err = { 0 };
    char *after = NULL;
    if (!options->json)
        printf ("%-32s %9s %9s %8s  %s\n", "CONTEXT", "MESSAGES", "LAST_SEQ", "PENDING",
                "UPDATED");
    do {
        json_t *page = act_client_contexts (client, prefix, after, options->limit, &err);
        free (after);
        after = NULL;
        if (!page)
            return s_fail (options, &err);
        size_t index;
        json_t *entry;
        json_array_foreach (json_object_get (page, "contexts"), index, entry) {
            const char *updated = json_string_value (json_object_get (entry, "updated"));
            if (options->json)
                s_print_line (entry);
            else
                printf ("%-32s %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT
                        " %8" JSON_INTEGER_FORMAT "  %s\n",
                        json_string_value (json_object_get (entry, "context")),
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

static int
s_delete (act_client_t *client, s_options_t *options, const char *context)
{
    act_err_t err = { 0 };
    json_t *counts = NULL;
    if (act_client_delete (client, context, &counts, &err))
        return s_fail (options, &err);
    json_int_t messages = json_integer_value (json_object_get (counts, "messages"));
    json_int_t cancelled = json_integer_value (json_object_get (counts, "cancelled"));
    if (options->json)
        s_print_line (counts);
    else
        printf ("deleted context %s: %" JSON_INTEGER_FORMAT " message%s, %"
                JSON_INTEGER_FORMAT " call%s cancelled\n", context, messages,
                s_plural (messages), cancelled, s_plural (cancelled));
    json_decref (counts);
    return 0;
}

static int
s_status (act_client_t *client, s_options_t *options, const char *call_id)
{
    act_err_t err = { 0 };
    json_t *status = act_client_status (client, call_id, &err);
    if (!status)
        return s_fail (options, &err);
    if (options->json)
        s_print_json (status);
    else {
        json_int_t attempts = json_integer_value (json_object_get (status, "attempts"));
        printf ("call %s in context %s: %s, %" JSON_INTEGER_FORMAT " attempt%s\n", call_id,
                json_string_value (json_object_get (status, "context")),
                json_string_value (json_object_get (status, "state")),
                attempts, s_plural (attempts));
        const char *keys [] = { "waiting_on", "progress", "outcome" };
        for (size_t i = 0; i < 3; i++)
            if (json_object_get (status, keys [i])) {
                char *text = act_json_dump (json_object_get (status, keys [i]));
                printf ("%s: %s\n", keys [i], text);
                free (text);
            }
    }
    json_decref (status);
    return 0;
}

static int
s_stats (act_client_t *client, s_options_t *options)
{
    act_err_t err = { 0 };
    json_t *stats = act_client_stats (client, &err);
    if (!stats)
        return s_fail (options, &err);
    if (options->json)
        s_print_json (stats);
    else {
        json_t *calls = json_object_get (stats, "calls");
        printf ("up %.1f s; %" JSON_INTEGER_FORMAT " contexts, %" JSON_INTEGER_FORMAT " messages\n",
                json_integer_value (json_object_get (stats, "uptime_ms")) / 1000.0,
                json_integer_value (json_object_get (stats, "contexts")),
                json_integer_value (json_object_get (stats, "messages")));
        printf ("calls:");
        const char *key;
        json_t *value;
        json_object_foreach (calls, key, value)
            printf (" %s %" JSON_INTEGER_FORMAT, key, json_integer_value (value));
        printf ("\n");
        json_object_foreach (json_object_get (stats, "activities"), key, value)
            printf ("activity %s: %" JSON_INTEGER_FORMAT " workers, %" JSON_INTEGER_FORMAT
                    " queued, %" JSON_INTEGER_FORMAT " running, %" JSON_INTEGER_FORMAT " done\n",
                    key, json_integer_value (json_object_get (value, "workers")),
                    json_integer_value (json_object_get (value, "queued")),
                    json_integer_value (json_object_get (value, "running")),
                    json_integer_value (json_object_get (value, "done")));
        size_t index;
        json_array_foreach (json_object_get (stats, "workers"), index, value) {
            char *names = act_json_dump (json_object_get (value, "activities"));
            printf ("worker %s (%s): %s, %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT " busy\n",
                    json_string_value (json_object_get (value, "name")),
                    json_string_value (json_object_get (value, "lang")), names,
                    json_integer_value (json_object_get (value, "running")),
                    json_integer_value (json_object_get (value, "capacity")));
            free (names);
        }
    }
    json_decref (stats);
    return 0;
}

static int
s_keygen (s_options_t *options, const char *name)
{
    zcert_t *cert = zcert_new ();
    zcert_set_meta (cert, "name", "%s", name);
    char *path = zsys_sprintf ("%s/%s.key", options->dir, name);
    int rc = zcert_save (cert, path);
    if (rc == 0 && options->json)
        printf ("{\"public\":\"%s\",\"file\":\"%s\",\"secret_file\":\"%s_secret\"}\n",
                zcert_public_txt (cert), path, path);
    else
    if (rc == 0)
        printf ("public key %s\nwrote %s (public) and %s_secret (keep it private)\n",
                zcert_public_txt (cert), path, path);
    else
        fprintf (stderr, "actctl: cannot write %s: %s\n", path, strerror (errno));
    zstr_free (&path);
    zcert_destroy (&cert);
    return rc? 1: 0;
}

static int
s_append (act_client_t *client, s_options_t *options, char **args)
{
    act_err_t err = { 0 };
    uint64_t seq;
    if (act_client_append_key (client, args [0], args [1], options->key, &seq, &err))
        return s_fail (options, &err);
    printf (options->json? "{\"seq\":%" PRIu64 "}\n": "appended: seq %" PRIu64 "\n", seq);
    return 0;
}

//  Print a JSON answer and drop it; or, when there is none, the failure
static int
s_print_answer (const s_options_t *options, json_t *answer, act_err_t *err)
{
    if (!answer)
        return s_fail (options, err);
    s_print_json (answer);
    json_decref (answer);
    return 0;
}

static int
s_resolve (act_client_t *client, s_options_t *options, char **args)
{
    act_err_t err = { 0 };
    return s_print_answer (options, act_client_resolve (client, args [0], args [1],
                                                        options->instance, &err), &err);
}

static int
s_view (act_client_t *client, s_options_t *options, const char *context)
{
    act_err_t err = { 0 };
    if (options->text) {
        char *text = act_client_view_text (client, context, &err);
        if (!text)
            return s_fail (options, &err);
        printf ("%s", text);
        free (text);
        return 0;
    }
    return s_print_answer (options, act_client_view (client, context, &err), &err);
}

static int
s_cancel (act_client_t *client, s_options_t *options, const char *call_id)
{
    act_err_t err = { 0 };
    if (act_client_cancel (client, call_id, &err))
        return s_fail (options, &err);
    printf (options->json? "{\"cancelled\":\"%s\"}\n"
                         : "call %s cancelled (or it had already ended)\n", call_id);
    return 0;
}

static int
s_ping (act_client_t *client, s_options_t *options)
{
    act_err_t err = { 0 };
    int64_t start = zclock_usecs ();
    if (act_client_ping (client, &err))
        return s_fail (options, &err);
    printf (options->json? "{\"pong\":true,\"ms\":%.3f}\n": "pong from broker in %.3f ms\n",
            (zclock_usecs () - start) / 1000.0);
    return 0;
}

//  Run a command that talks to the broker; -1 for a bad command line
static int
s_command (act_client_t *client, s_options_t *options, const char *command,
           char **args, int nargs)
{
    if (streq (command, "call"))
        return s_call (client, options, args, nargs);
    if (streq (command, "plan"))
        return s_plan (client, options, args, nargs);
    if (streq (command, "append") && nargs == 2)
        return s_append (client, options, args);
    if (streq (command, "resolve") && nargs == 2)
        return s_resolve (client, options, args);
    if (streq (command, "view") && nargs == 1)
        return s_view (client, options, args [0]);
    if (streq (command, "history") && nargs == 1)
        return s_history (client, options, args [0]);
    if (streq (command, "tail") && nargs == 1)
        return s_tail (client, options, args [0]);
    if (streq (command, "contexts") && nargs <= 1)
        return s_contexts (client, options, nargs? args [0]: NULL);
    if (streq (command, "delete") && nargs == 1)
        return s_delete (client, options, args [0]);
    if (streq (command, "status") && nargs == 1)
        return s_status (client, options, args [0]);
    if (streq (command, "cancel") && nargs == 1)
        return s_cancel (client, options, args [0]);
    if (streq (command, "stats") && nargs == 0)
        return s_stats (client, options);
    if (streq (command, "ping") && nargs == 0)
        return s_ping (client, options);
    return -1;
}

//  Parse the options into options; returns -1 to go on, else the exit code
static int
s_parse (int argc, char *argv [], s_options_t *options)
{
    static struct option long_options [] = {
        { "endpoint", required_argument, 0, 'e' }, { "json", no_argument, 0, 'j' },
        { "timeout", required_argument, 0, 't' }, { "wait", no_argument, 0, 'w' },
        { "text", no_argument, 0, 'x' }, { "instance", required_argument, 0, 'i' },
        { "from", required_argument, 0, 'f' }, { "limit", required_argument, 0, 'l' },
        { "all", no_argument, 0, 'a' }, { "dir", required_argument, 0, 'd' },
        { "curve-server", required_argument, 0, 's' },
        { "curve-cert", required_argument, 0, 'c' }, { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'v' }, { "calls", no_argument, 0, 'C' },
        { "key", required_argument, 0, 'k' }, { 0, 0, 0, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
        switch (option) {
            case 'e': options->endpoint = optarg; break;
            case 'j': options->json = true; break;
            case 't': options->timeout = atoi (optarg) > 0? atoi (optarg): -1; break;
            case 'w': options->wait = true; break;
            case 'x': options->text = true; break;
            case 'i': options->instance = optarg; break;
            case 'f': options->from = strtoull (optarg, NULL, 10); break;
            case 'l': options->limit = strtoull (optarg, NULL, 10); break;
            case 'a': options->all = true; break;
            case 'd': options->dir = optarg; break;
            case 's': options->curve_server = optarg; break;
            case 'c': options->curve_cert = optarg; break;
            case 'C': options->calls = true; break;
            case 'k': options->key = optarg; break;
            case 'h': s_usage (stdout); return 0;
            case 'v': printf ("actctl %s\n", ACTD_VERSION); return 0;
            default: s_usage (stderr); return 2;
        }
    }
    if (optind >= argc || options->timeout < 0 || options->limit == 0 || options->limit > 1000) {
        s_usage (stderr);
        return 2;
    }
    if (!options->curve_server != !options->curve_cert && !streq (argv [optind], "keygen")) {
        //  Half of CURVE would silently talk in plain text (keygen talks
        //  to nobody, so a half-set environment does not stop it)
        fprintf (stderr, "actctl: --curve-server and --curve-cert go together "
                         "(or $ACTD_SERVER_KEY and $ACTD_CERT)\n");
        return 2;
    }
    if (options->timeout == 0)
        options->timeout = streq (argv [optind], "ping")? S_PING_TIMEOUT_MS: S_TIMEOUT_MS;
    //  The live line is for people: never in a pipe or a file, nor in JSON
    options->live = options->wait && !options->json && isatty (STDOUT_FILENO);
    return -1;
}

//  A client for the broker as the options say, or NULL after saying why
static act_client_t *
s_connect (s_options_t *options)
{
    act_client_t *client = act_client_new (options->endpoint);
    if (!client) {
        fprintf (stderr, "actctl: bad endpoint %s\n", options->endpoint);
        return NULL;
    }
    act_client_set_timeout (client, options->timeout);
    if (options->curve_server
    &&  act_client_set_curve (client, options->curve_server, options->curve_cert)) {
        fprintf (stderr, "actctl: cannot read certificate %s\n", options->curve_cert);
        act_client_destroy (&client);
    }
    return client;
}

int
main (int argc, char *argv [])
{
    s_options_t options = { 0 };
    options.endpoint = getenv ("ACTD_ENDPOINT")? getenv ("ACTD_ENDPOINT"): ACT_CLIENT_ENDPOINT;
    //  The names the Python and Node libraries read too
    options.curve_server = getenv ("ACTD_SERVER_KEY");
    options.curve_cert = getenv ("ACTD_CERT");
    options.from = 1;
    options.limit = 1000;
    options.dir = ".";
    int rc = s_parse (argc, argv, &options);
    if (rc >= 0)
        return rc;
    const char *command = argv [optind];
    char **args = argv + optind + 1;
    int nargs = argc - optind - 1;
    if (streq (command, "keygen")) {
        if (nargs != 1) {
            s_usage (stderr);
            return 2;
        }
        return s_keygen (&options, args [0]);
    }
    zsys_handler_set (NULL);
    act_client_t *client = s_connect (&options);
    if (!client)
        return 2;
    rc = s_command (client, &options, command, args, nargs);
    act_client_destroy (&client);
    if (rc < 0) {
        s_usage (stderr);
        return 2;
    }
    return rc;
}

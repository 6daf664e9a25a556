/*  =========================================================================
    fuzz_broker - the harness of the broker targets (see fuzz_broker.h).

    What the broker sends is read on its way out: the harness is the
    broker's sender (act_broker_set_sender), so each message a pass
    sends comes here: ACCEPTED gives call ids, TASK gives task ids,
    DISCONNECT to the harness's own worker makes it send READY again, and
    DONE counts a completed call. With FUZZ_EXPECT_DONE set, a run that
    saw no DONE at all exits non-zero: run.sh replays the seed corpus so,
    and a harness that stops seeing the broker's output fails at once.

    The client target has a worker of its own, "auto", that serves the
    common activities and answers every task after each pass: mostly
    RESULT (values of every JSON type, sometimes branch 1), sometimes FAIL
    (retryable or not), PROGRESS then RESULT, or a late RESULT at the next
    input. So calls complete, outputs are written, dependencies are met and
    DONE is sent, and the fuzzer's client commands meet those states.

    The worker target submits two calls from a fixed list before each
    input, so the fuzzer's workers have tasks to answer.
    ========================================================================= */

#include <czmq.h>
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#include "act_broker.h"
#include "fuzz_broker.h"
#include "fuzz_common.h"

#define S_RESET         1000        //  Inputs per broker
#define S_HISTORY_MAX   (4 << 20)   //  A broker's history, at most (bytes)
#define S_CALLS         16          //  Call ids remembered
#define S_TASKS         32          //  Task ids remembered
#define S_AUTO_MAX      64          //  Tasks the auto worker holds
#define S_MAX_MESSAGE   2048        //  max_message_bytes of the broker
#define S_AUTO          6           //  Index of "auto" among the peers

static const char *s_peers [] = {
    "peer0", "peer1", "peer2", "peer3", "peer4", "peer5", "auto"
};

typedef struct {
    char peer [16];
    char task [48];
} s_task_t;

static struct {
    bool started;
    bool replay;                    //  FUZZ_REPLAY: fresh broker, no own traffic
    bool to_worker;                 //  The target's default socket
    act_settings_t *settings;
    act_broker_t *broker;
    size_t inputs;                  //  Inputs since the broker started
    size_t total;                   //  Inputs in all
    uint64_t done;                  //  DONE replies seen (calls completed)
    uint64_t seen;                  //  Messages the broker sent
    bool verbose;                   //  FUZZ_VERBOSE: log, and each message fed
    char calls [S_CALLS][24];       //  Ring of accepted call ids
    size_t ncalls;
    s_task_t tasks [S_TASKS];       //  Ring of task ids sent
    size_t ntasks;
    char auto_tasks [S_AUTO_MAX][48];   //  Tasks "auto" must answer now
    size_t nauto;
    char auto_late [S_AUTO_MAX][48];    //  Tasks "auto" answers next input
    size_t nlate;
    bool auto_ready;                //  "auto" registered
    uint64_t answers;               //  Answers "auto" gave
    size_t setup;                   //  Next setup call (worker target)
    const char *peer;               //  Peer of the line being decoded
    fuzz_buf_t history;             //  Messages fed since the broker started
    fuzz_buf_t field;               //  Scratch
    char *history_path;             //  $FUZZ_HISTORY
} s;


//  --------------------------------------------------------------------------
//  Reading what the broker sends

static bool
s_is (zframe_t *frame, const char *text)
{
    return frame && zframe_size (frame) == strlen (text)
        && memcmp (zframe_data (frame), text, zframe_size (frame)) == 0;
}

static bool
s_is_byte (zframe_t *frame, byte value)
{
    return frame && zframe_size (frame) == 1 && zframe_data (frame) [0] == value;
}

static void
s_remember_call (const char *id, size_t size)
{
    if (size == 0 || size >= sizeof s.calls [0])
        return;
    char *slot = s.calls [s.ncalls++ % S_CALLS];
    memcpy (slot, id, size);
    slot [size] = 0;
}

static void
s_remember_task (zframe_t *peer, zframe_t *task)
{
    if (!task || zframe_size (task) >= sizeof s.tasks [0].task
    ||  zframe_size (peer) >= sizeof s.tasks [0].peer)
        return;
    s_task_t *slot = &s.tasks [s.ntasks++ % S_TASKS];
    memcpy (slot->peer, zframe_data (peer), zframe_size (peer));
    slot->peer [zframe_size (peer)] = 0;
    memcpy (slot->task, zframe_data (task), zframe_size (task));
    slot->task [zframe_size (task)] = 0;
    if (streq (slot->peer, "auto") && s.nauto < S_AUTO_MAX)
        strcpy (s.auto_tasks [s.nauto++], slot->task);
}

static void
s_observe (zmsg_t *msg)
{
    zframe_t *peer = zmsg_first (msg);
    zframe_t *f1 = zmsg_next (msg);
    zframe_t *f2 = zmsg_next (msg);
    zframe_t *f3 = zmsg_next (msg);
    zframe_t *f4 = zmsg_next (msg);
    s.seen++;
    if (s_is (f1, "ACTC01") && s_is (f2, "DONE"))
        s.done++;
    else
    if (s_is (f1, "ACTC01") && s_is (f2, "ACCEPTED") && f4) {
        //  [peer][ACTC01][ACCEPTED][request][id or JSON array of ids]
        const char *body = (const char *) zframe_data (f4);
        size_t size = zframe_size (f4);
        if (size && body [0] == '[') {
            json_t *ids = json_loadb (body, size, 0, NULL);
            size_t index;
            json_t *id;
            json_array_foreach (ids, index, id)
                if (json_is_string (id))
                    s_remember_call (json_string_value (id), json_string_length (id));
            json_decref (ids);
        }
        else
            s_remember_call (body, size);
    }
    else
    if (s_is (f1, "ACTW01") && s_is (f2, "TASK"))
        s_remember_task (peer, f3);
    else
    if (s_is (f1, "ACTW01") && s_is (f2, "DISCONNECT") && s_is (peer, "auto")) {
        s.auto_ready = false;
        s.nauto = s.nlate = 0;
    }
    else
    if (s_is (f1, "MDPW02") && s_is_byte (f2, 0x02))
        s_remember_task (peer, f3);
    else
    if (f1 && zframe_size (f1) == 0 && s_is (f2, "MDPW01") && s_is_byte (f3, 0x02))
        s_remember_task (peer, f4);
}

//  The broker's sender: every message a pass sends is looked at here
static bool
s_sent (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts)
{
    zmsg_t *msg = zmsg_new ();
    for (size_t i = 0; i < nparts; i++)
        zmsg_addmem (msg, zmq_msg_data (&parts [i]), zmq_msg_size (&parts [i]));
    s_observe (msg);
    zmsg_destroy (&msg);
    return true;
}


//  --------------------------------------------------------------------------
//  The broker's life

static void
s_death (void)
{
    if (!s.history_path || !s.history.size)
        return;
    FILE *file = fopen (s.history_path, "wb");
    if (file) {
        fwrite (s.history.data, 1, s.history.size, file);
        fclose (file);
        fprintf (stderr, "fuzz_broker: %zu bytes of history (%zu inputs) written to %s; "
                 "replay with FUZZ_REPLAY=1\n", s.history.size, s.inputs, s.history_path);
    }
}

static act_settings_t *
s_settings (void)
{
    act_settings_t *settings = act_settings_new ();
    free (settings->store);
    settings->store = strdup (":memory:");
    settings->heartbeat_ms = 100;
    settings->liveness = 3;
    settings->max_message_bytes = S_MAX_MESSAGE;
    settings->context_idle_ms = 300;    //  Contexts leave memory and come
    settings->max_contexts = 6;         //  back from the store often
    settings->log_syslog = false;
    settings->log_stderr = false;
    settings->defaults = (act_activity_settings_t) { 2000, { 3, 1, 2.0, 20 }, 40, 500 };
    //  "fast": timers fire at once, the queue is short (busy)
    act_activity_settings_t *fast = malloc (sizeof *fast);
    *fast = (act_activity_settings_t) { 1, { 2, 0, 2.0, 5 }, 3, 1 };
    zhashx_insert (settings->activities, "fast", fast);
    act_activity_settings_t *slow = malloc (sizeof *slow);
    *slow = (act_activity_settings_t) { 100000, { 1, 1000, 2.0, 1000 }, 1000, 100000 };
    zhashx_insert (settings->activities, "slow", slow);
    //  "lonely": nobody serves it; two calls fill its queue (busy)
    act_activity_settings_t *lonely = malloc (sizeof *lonely);
    *lonely = (act_activity_settings_t) { 1000, { 1, 0, 2.0, 0 }, 2, 50 };
    zhashx_insert (settings->activities, "lonely", lonely);
    return settings;
}

//  Destroy the broker, then look for leaks: libFuzzer's own check after
//  each input cannot tell state kept on purpose from a leak (run.sh gives
//  these targets -detect_leaks=0), but once the broker is gone nothing of
//  it may remain
static void
s_broker_stop (void)
{
    act_broker_destroy (&s.broker);
    if (__lsan_do_recoverable_leak_check ()) {
        fprintf (stderr, "fuzz_broker: memory leaked by a broker that ran %zu inputs\n",
                 s.inputs);
        s_death ();             //  The history, for a replay
        abort ();
    }
    s.inputs = 0;
    s.ncalls = s.ntasks = s.nauto = s.nlate = 0;
    s.auto_ready = false;
    fuzz_buf_reset (&s.history);
}

static void
s_broker_start (void)
{
    act_err_t err = { 0 };
    s.broker = act_broker_new (s.settings, false, &err);
    if (!s.broker) {
        fprintf (stderr, "fuzz_broker: cannot make a broker: %s\n", err.message);
        abort ();
    }
    act_broker_set_sender (s.broker, s_sent, NULL);
}

static void
s_exit (void)
{
    //  Everything freed before LeakSanitizer's own check at exit
    s_broker_stop ();
    act_settings_destroy (&s.settings);
    fuzz_buf_free (&s.history);
    fuzz_buf_free (&s.field);
    free (s.history_path);
    fprintf (stderr, "fuzz_broker: %zu inputs, %" PRIu64 " messages sent by the broker, "
             "%" PRIu64 " calls completed (DONE)\n", s.total, s.seen, s.done);
    if (getenv ("FUZZ_EXPECT_DONE") && s.done == 0) {
        fprintf (stderr, "fuzz_broker: broken: the run completed no call; the harness "
                 "does not see what the broker sends\n");
        _exit (1);
    }
}

static void
s_start (bool to_worker)
{
    s.started = true;
    s.to_worker = to_worker;
    s.replay = getenv ("FUZZ_REPLAY") != NULL;
    const char *path = getenv ("FUZZ_HISTORY");
    s.history_path = path? strdup (path): NULL;
    zsys_handler_set (NULL);
    s.verbose = getenv ("FUZZ_VERBOSE") != NULL;
    if (s.verbose)
        zsys_set_logstream (stderr);
    else
        zsys_set_logstream (NULL);
    zsys_set_logsystem (false);
    act_log_threshold = LOG_DEBUG;      //  Every log line is formatted
    s.settings = s_settings ();
    __sanitizer_set_death_callback (s_death);
    atexit (s_exit);
}


//  --------------------------------------------------------------------------
//  Feeding messages

static void s_pass (void);

//  Record msg in the history as a line that decodes to the same message
static void
s_record (zmsg_t *msg, size_t peer, bool to_worker)
{
    if (s.history.size > S_HISTORY_MAX)
        return;
    size_t start = s.history.size;
    char prefix [5] = { '@', (char) ('0' + peer), 0, 0, 0 };
    size_t length = 2;
    if (to_worker != s.to_worker)
        prefix [length++] = '>';
    prefix [length++] = '!';
    fuzz_buf_add (&s.history, prefix, length);
    //  Every frame after the routing id, one field each
    size_t index = 0;
    for (zframe_t *frame = zmsg_first (msg); frame; frame = zmsg_next (msg), index++) {
        if (index == 0)
            continue;
        if (index > 1)
            fuzz_buf_byte (&s.history, '\t');
        fuzz_field_encode ((const char *) zframe_data (frame), zframe_size (frame), &s.history);
    }
    fuzz_buf_byte (&s.history, '\n');
    if (s.verbose)
        fprintf (stderr, "fuzz_broker: fed %s", s.history.data + start);
}

//  Hand msg to the broker (without a pass)
static void
s_feed (zmsg_t *msg, size_t peer, bool to_worker)
{
    s_record (msg, peer, to_worker);
    if (to_worker)
        act_broker_worker_message (s.broker, &msg);
    else
        act_broker_client_message (s.broker, &msg);
}

//  A message from the auto worker: ACTW01 command [args...]
static void
s_auto_send (const char *command, const char *a1, const char *a2, const char *a3)
{
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, "auto");
    zmsg_addstr (msg, "ACTW01");
    zmsg_addstr (msg, command);
    if (a1)
        zmsg_addstr (msg, a1);
    if (a2)
        zmsg_addstr (msg, a2);
    if (a3)
        zmsg_addstr (msg, a3);
    s_feed (msg, S_AUTO, true);
}

static void
s_auto_ready (void)
{
    s_auto_send ("READY", "{\"activities\": [\"t\", \"u\", \"v\", \"echo\", \"fast\", \"slow\"],"
                 " \"capacity\": 8, \"name\": \"auto\", \"lang\": \"c\"}", NULL, NULL);
    s.auto_ready = true;
}

//  Answer one task, the way the answer counter says
static void
s_auto_answer (const char *task)
{
    static const char *values [] = {
        "{\"n\": 1, \"items\": [1, 2], \"name\": \"x\"}", "[1, \"two\", null]",
        "\"text\"", "42", "null", "{\"a\": {\"b\": [true]}}", "{}", "[]", "-0.5"
    };
    uint64_t n = s.answers++;
    const char *value = values [n % (sizeof values / sizeof values [0])];
    switch (n % 11) {
        case 3:
            s_auto_send ("RESULT", task, value, "1");
            break;
        case 5:
            s_auto_send ("FAIL", task, n % 2? "{\"message\": \"boom\", \"code\": \"e_fuzz\","
                         " \"retryable\": false, \"detail\": [1]}": "{\"message\": \"again\"}",
                         NULL);
            break;
        case 7:
            s_auto_send ("PROGRESS", task, "{\"pct\": 50}", NULL);
            s_auto_send ("RESULT", task, value, NULL);
            break;
        case 9:
            if (s.nlate < S_AUTO_MAX)   //  Answer at the next input: late
                strcpy (s.auto_late [s.nlate++], task);
            break;
        case 10:
            s_auto_send ("RESULT", task, value, NULL);
            s_auto_send ("RESULT", task, value, NULL);  //  A repeated result
            break;
        default:
            s_auto_send ("RESULT", task, value, NULL);
    }
}

//  A pass, then the auto worker's answers and their passes
static void
s_pass (void)
{
    for (int round = 0; round < 8; round++) {
        act_broker_pass (s.broker);
        if (s.replay || s.to_worker || s.nauto == 0)
            break;
        char tasks [S_AUTO_MAX][48];
        size_t count = s.nauto;
        memcpy (tasks, s.auto_tasks, sizeof tasks);
        s.nauto = 0;
        for (size_t i = 0; i < count; i++)
            s_auto_answer (tasks [i]);
    }
}

static const char *
s_token (char kind, int digit, void *arg)
{
    if (kind == 'C') {
        if ((size_t) digit >= s.ncalls || digit >= S_CALLS)
            return NULL;
        return s.calls [(s.ncalls - 1 - digit) % S_CALLS];
    }
    //  'T': this peer's d-th newest task, else anyone's
    size_t known = s.ntasks < S_TASKS? s.ntasks: S_TASKS;
    int seen = 0;
    for (size_t i = 0; i < known; i++) {
        s_task_t *task = &s.tasks [(s.ntasks - 1 - i) % S_TASKS];
        if (s.peer && streq (task->peer, s.peer) && seen++ == digit)
            return task->task;
    }
    if ((size_t) digit < known)
        return s.tasks [(s.ntasks - 1 - digit) % S_TASKS].task;
    return NULL;
}

//  One line of the input: one message
static void
s_line (const char *line, size_t size, void *arg)
{
    size_t peer = 0;
    bool to_worker = s.to_worker;
    bool raw = false;
    size_t pos = 0;
    for (int prefixes = 0; prefixes < 3 && pos < size; prefixes++) {
        if (line [pos] == '@' && pos + 1 < size) {
            peer = (size_t) ((unsigned char) line [pos + 1] - '0') % 7;
            pos += 2;
        }
        else
        if (line [pos] == '>') {
            to_worker = !s.to_worker;
            pos++;
        }
        else
        if (line [pos] == '!') {
            raw = true;
            pos++;
        }
        else
            break;
    }
    s.peer = s_peers [peer];
    zmsg_t *msg = zmsg_new ();
    zmsg_addstr (msg, s_peers [peer]);
    if (!raw)
        zmsg_addstr (msg, to_worker? "ACTW01": "ACTC01");
    const char *body = line + pos;
    size_t body_size = size - pos;
    const char *field;
    size_t field_size;
    for (size_t index = 0; fuzz_field (body, body_size, index, &field, &field_size); index++) {
        fuzz_field_decode (field, field_size, &s.field, S_MAX_MESSAGE + 1, s_token, NULL);
        zmsg_addmem (msg, s.field.data, s.field.size);
    }
    s_feed (msg, peer, to_worker);
    s_pass ();
}

//  The worker target's own calls: two before each input
static const char *s_setup [] = {
    "CALL\ts0\tw1\t{\"_tool\": \"t\", \"_outputPath\": \"" ACT_DAGGER "state.a\", \"x\": 1}",
    "CALL\ts1\tw1\t{\"_tool\": \"t\", \"_outputPath\": \"" ACT_DAGGER "state.b || "
        ACT_DAGGER "state.err\", \"y\": \"" ACT_DAGGER "state.a\"}",
    "CALL\ts2\tw2\t{\"_tool\": \"u\", \"z\": [1, 2]}",
    "CALL\ts3\tw1\t{\"_tool\": \"echo\", \"_outputPath\": \"" ACT_DAGGER "state.list.-\","
        " \"_outputMethod\": \"push\", \"v\": \"" ACT_DAGGER "state.none || " ACT_DAGGER "state.a\"}",
    "PLAN\ts4\tw2\t[{\"_tool\": \"t\", \"_outputPath\": \"" ACT_DAGGER "plan.x && "
        ACT_DAGGER "plan.y\"}, {\"_tool\": \"u\", \"_outputPath\": \"" ACT_DAGGER "plan.z\","
        " \"in\": \"" ACT_DAGGER "plan.x\"}]",
    "CALL\ts5\tw1\t{\"_tool\": \"t\", \"_outputPath\": \"" ACT_DAGGER "state.c\", \"_timeout\": 5,"
        " \"_retry\": {\"max_attempts\": 2, \"initial_ms\": 1}}",
    "CALL\ts6\tw3\t{\"_tool\": \"t\", \"_outputPath\": \"" ACT_DAGGER "data.i\", \"_instance\": \"i1\","
        " \"_outputMethod\": \"merge\", \"_id\": \"k1\"}",
    "CALL\ts7\tw3\t{\"_tool\": \"echo\", \"_outputPath\": \"" ACT_DAGGER "data.e <|> " ACT_DAGGER
        "data.f <|> " ACT_DAGGER "data.g\", \"_outputMethod\": \"concat\"}",
};

void
fuzz_broker_input (const uint8_t *data, size_t size, bool to_worker)
{
    if (!s.started)
        s_start (to_worker);
    if (s.broker && (s.replay || s.inputs >= S_RESET))
        s_broker_stop ();
    if (!s.broker)
        s_broker_start ();
    s.inputs++;
    s.total++;
    if (!s.replay) {
        if (!s.to_worker) {
            if (s.auto_ready)
                s_auto_send ("HEARTBEAT", NULL, NULL, NULL);
            else
                s_auto_ready ();
            char late [S_AUTO_MAX][48];
            size_t count = s.nlate;
            memcpy (late, s.auto_late, sizeof late);
            s.nlate = 0;
            for (size_t i = 0; i < count; i++)
                s_auto_send ("RESULT", late [i], "\"late\"", NULL);
            s_pass ();
        }
        else
            for (int i = 0; i < 2; i++) {
                const char *line = s_setup [s.setup++ % (sizeof s_setup / sizeof s_setup [0])];
                //  Setup lines go to the client socket
                char *copy = zsys_sprintf (">%s", line);
                s_line (copy, strlen (copy), NULL);
                zstr_free (&copy);
            }
    }
    fuzz_lines (data, size, s_line, NULL);
}

/*  =========================================================================
    test_commands - the client command table (PROTOCOL.md section 1)
    through a real broker without sockets: a store in memory, messages fed
    as if from the client socket, replies seen through the sender seam
    after each pass.

    Every command in the table is served at its smallest arity; every
    arity outside the table's range is bad_frame naming the command; the
    dispatcher's checks (unknown command, request id, frame size, context
    id) answer with the codes of PROTOCOL.md section 3; a message too short
    to carry a request id, or with a wrong header, gets no reply; every
    reply echoes its request id.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_broker.h"
#include "act_commands.h"
#include "unit_support.h"

#define S_CLIENT    "client-1"      //  The routing id requests come from

typedef struct {
    act_settings_t *settings;       //  Defaults, store in memory
    act_broker_t *broker;           //  No sockets
    unit_sent_t sent;               //  What its passes sent
} s_world_t;

static int
s_setup (void **state)
{
    act_log_threshold = LOG_ERR;    //  Refusals are logged at info
    act_log_stream = NULL;
    s_world_t *world = calloc (1, sizeof (s_world_t));
    world->settings = act_settings_new ();
    free (world->settings->store);
    world->settings->store = strdup (":memory:");
    world->settings->log_stderr = false;
    act_err_t err = { 0 };
    world->broker = act_broker_new (world->settings, false, &err);
    if (!world->broker)
        fail_msg ("no broker: %s", err.message);
    act_broker_set_sender (world->broker, unit_sent_capture, &world->sent);
    *state = world;
    return 0;
}

static int
s_teardown (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    act_broker_destroy (&world->broker);
    act_settings_destroy (&world->settings);
    unit_sent_release (&world->sent);
    free (world);
    return 0;
}


//  --------------------------------------------------------------------------
//  Requests and replies

//  Feed msg ([routing id][frames...]) to the broker and end the pass
static void
s_feed (s_world_t *world, zmsg_t *msg)
{
    act_broker_client_message (world->broker, &msg);
    assert_null (msg);
    act_broker_pass (world->broker);
}

//  A message of the NULL-ended string frames, the routing id first
static zmsg_t *
s_frames (const char *first, ...)
{
    zmsg_t *msg = zmsg_new ();
    va_list args;
    va_start (args, first);
    for (const char *text = first; text; text = va_arg (args, const char *))
        zmsg_addstr (msg, text);
    va_end (args);
    return msg;
}

//  Send [client][ACTC01][command][request][args...], the arguments a
//  NULL-ended list of strings
static void
s_request (s_world_t *world, const char *command, const char *request, ...)
{
    zmsg_t *msg = s_frames (S_CLIENT, "ACTC01", command, request, NULL);
    va_list args;
    va_start (args, request);
    for (const char *arg = va_arg (args, const char *); arg; arg = va_arg (args, const char *))
        zmsg_addstr (msg, arg);
    va_end (args);
    s_feed (world, msg);
}

//  The one reply the last requests got, [client][ACTC01][verb][request]
//  checked; the caller reads its body frames (after the request id) and
//  clears the world's sent list
static zmsg_t *
s_reply (s_world_t *world, const char *request, const char *verb)
{
    if (world->sent.size != 1)
        fail_msg ("%zu replies to request %s, not 1", world->sent.size, request);
    assert_false (world->sent.to_worker [0]);
    zmsg_t *msg = world->sent.messages [0];
    assert_true (zmsg_size (msg) >= 4);
    assert_true (zframe_streq (zmsg_first (msg), S_CLIENT));
    assert_true (zframe_streq (zmsg_next (msg), "ACTC01"));
    char *got = zframe_strdup (zmsg_next (msg));
    if (strcmp (got, verb) != 0) {
        zframe_t *code = zmsg_next (msg);
        zframe_t *message = code? zmsg_next (msg): NULL;
        fail_msg ("request %s: %s (%s %s), not %s", request, got,
                  code? zframe_strdup (code): "",
                  message? zframe_strdup (message): "", verb);
    }
    free (got);
    zframe_t *echoed = zmsg_next (msg);
    assert_int_equal (zframe_size (echoed), strlen (request));
    assert_memory_equal (zframe_data (echoed), request, strlen (request));
    return msg;
}

//  The frame after the request id, as a string (the caller frees); NULL
//  when there is none
static char *
s_body (zmsg_t *msg, size_t index)
{
    zframe_t *frame = zmsg_first (msg);
    for (size_t i = 0; i < 4 + index && frame; i++)
        frame = zmsg_next (msg);
    return frame? zframe_strdup (frame): NULL;
}

//  Assert the one reply is verb with no body
static void
s_expect_bare (s_world_t *world, const char *request, const char *verb)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 4);
    unit_sent_clear (&world->sent);
}

//  Assert the one reply is verb with one body frame, JSON equal to json
static void
s_expect_json (s_world_t *world, const char *request, const char *verb, const char *json)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 5);
    char *body = s_body (msg, 0);
    json_t *got = json_loads (body, JSON_DECODE_ANY, NULL);
    json_t *expected = json_loads (json, JSON_DECODE_ANY, NULL);
    assert_non_null (expected);
    if (!got || !json_equal (got, expected))
        fail_msg ("request %s: %s %s, not %s", request, verb, body, json);
    json_decref (got);
    json_decref (expected);
    free (body);
    unit_sent_clear (&world->sent);
}

//  Assert the one reply is verb with one body frame holding text
static void
s_expect_frame (s_world_t *world, const char *request, const char *verb, const char *text)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 5);
    char *body = s_body (msg, 0);
    assert_string_equal (body, text);
    free (body);
    unit_sent_clear (&world->sent);
}

//  The one reply's JSON body (the caller frees)
static json_t *
s_take_json (s_world_t *world, const char *request, const char *verb)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 5);
    char *body = s_body (msg, 0);
    json_t *value = json_loads (body, JSON_DECODE_ANY, NULL);
    if (!value)
        fail_msg ("request %s: %s body is not JSON: %s", request, verb, body);
    free (body);
    unit_sent_clear (&world->sent);
    return value;
}

//  Assert the one reply is ERROR code; message, when not NULL, is its
//  exact message
static void
s_expect_error (s_world_t *world, const char *request, const char *code, const char *message)
{
    zmsg_t *msg = s_reply (world, request, "ERROR");
    assert_int_equal (zmsg_size (msg), 6);
    char *got_code = s_body (msg, 0);
    char *got_message = s_body (msg, 1);
    if (strcmp (got_code, code) != 0)
        fail_msg ("request %s: ERROR %s (%s), not %s", request, got_code, got_message, code);
    if (message)
        assert_string_equal (got_message, message);
    else
        assert_true (strlen (got_message) > 0);
    free (got_code);
    free (got_message);
    unit_sent_clear (&world->sent);
}

//  Assert the last message got no reply at all
static void
s_expect_nothing (s_world_t *world)
{
    assert_int_equal (world->sent.size, 0);
}


//  --------------------------------------------------------------------------
//  The table

//  The smallest valid request of each command of PROTOCOL.md section 1,
//  in a world holding context "ctx" with one data message and call "1"
typedef struct {
    const char *name;
    const char *args [3];       //  Its fewest arguments
    const char *verb;           //  The reply it gets
} s_valid_t;

static const s_valid_t s_valid [] = {
    { "CALL",    { "ctx", "{\"_tool\":\"upper\"}" }, "ACCEPTED" },
    { "PLAN",    { "ctx", "[{\"_tool\":\"upper\"}]" }, "ACCEPTED" },
    { "APPEND",  { "ctx", "{\"type\":\"data\",\"kind\":\"input\",\"data\":2}" }, "OK" },
    { "RESOLVE", { "ctx", "†input" }, "VALUE" },
    { "VIEW",    { "ctx" }, "VALUE" },
    { "HISTORY", { "ctx", "1", "10" }, "VALUE" },
    { "STATUS",  { "1" }, "VALUE" },
    { "CANCEL",  { "1" }, "OK" },
    { "STATS",   { NULL }, "VALUE" },
    { "PING",    { NULL }, "PONG" },
    { "WATCH",   { "ctx", "2" }, "EVENT" },         //  The backlog: APPEND above gave _seq 2
    { "UNWATCH", { "smallest-WATCH" }, "OK" },      //  Ends the watch above
    { "CONTEXTS", { NULL }, "VALUE" },
    { "TOOLS",   { NULL }, "VALUE" },
    { "DELETE",  { "ctx" }, "OK" },                  //  Last: it ends ctx
};
#define S_NVALID (sizeof s_valid / sizeof s_valid [0])

static const s_valid_t *
s_valid_of (const char *name)
{
    for (size_t i = 0; i < S_NVALID; i++)
        if (streq (s_valid [i].name, name))
            return &s_valid [i];
    return NULL;
}

//  Send name with request id request and the first nargs of args ("ctx"
//  beyond the three given)
static void
s_request_args (s_world_t *world, const char *name, const char *request, const char **args,
                size_t nargs)
{
    zmsg_t *msg = s_frames (S_CLIENT, "ACTC01", name, request, NULL);
    for (size_t i = 0; i < nargs; i++)
        zmsg_addstr (msg, i < 3 && args [i]? args [i]: "ctx");
    s_feed (world, msg);
}

//  The table holds the commands of PROTOCOL.md sections 1 and 1.1, and each,
//  with its fewest arguments, valid, is served with its reply.
static void
test_every_command_at_its_smallest_arity_is_served (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "setup-1", "ctx",
               "{\"type\":\"data\",\"kind\":\"input\",\"data\":1}", NULL);
    s_expect_json (world, "setup-1", "OK", "{\"seq\":1}");
    s_request (world, "CALL", "setup-2", "ctx", "{\"_tool\":\"upper\"}", NULL);
    s_expect_frame (world, "setup-2", "ACCEPTED", "1");

    bool listed [S_NVALID] = { false };
    for (size_t index = 0; index < act_commands_count (); index++) {
        size_t least, most;
        const char *name = act_commands_name (index, &least, &most);
        assert_non_null (name);
        assert_true (least <= most);
        const s_valid_t *valid = s_valid_of (name);
        if (!valid)
            fail_msg ("the table has %s, which this test does not know: "
                      "add its smallest valid request to s_valid", name);
        listed [valid - s_valid] = true;
        char request [32];
        snprintf (request, sizeof request, "smallest-%s", name);
        s_request_args (world, name, request, (const char **) valid->args, least);
        s_reply (world, request, valid->verb);
        unit_sent_clear (&world->sent);
    }
    for (size_t i = 0; i < S_NVALID; i++)
        if (!listed [i])
            fail_msg ("PROTOCOL.md section 1 has %s; the table does not", s_valid [i].name);
    size_t least, most;
    assert_null (act_commands_name (act_commands_count (), &least, &most));
}

//  A wrong number of argument frames (one fewer than the least, one more
//  than the most) is bad_frame, and the message names the command.
static void
test_every_wrong_arity_is_bad_frame_naming_the_command (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    const char *args [3] = { "ctx", "x", "y" };
    size_t checked = 0;
    for (size_t index = 0; index < act_commands_count (); index++) {
        size_t least, most;
        const char *name = act_commands_name (index, &least, &most);
        size_t wrong [2] = { least - 1, most + 1 };
        for (size_t w = least? 0: 1; w < 2; w++) {
            char request [32], message [128];
            snprintf (request, sizeof request, "%s/%zu", name, wrong [w]);
            snprintf (message, sizeof message, "%s takes %zu to %zu argument frames, not %zu",
                      name, least, most, wrong [w]);
            s_request_args (world, name, request, args, wrong [w]);
            s_expect_error (world, request, "bad_frame", message);
            checked++;
        }
    }
    //  Every command once for too many, and once for too few but those that
    //  take no argument at least (STATS, PING, CONTEXTS, TOOLS)
    size_t none = 0;
    for (size_t index = 0; index < act_commands_count (); index++) {
        size_t least, most;
        act_commands_name (index, &least, &most);
        none += least == 0;
    }
    assert_int_equal (none, 4);
    assert_int_equal (checked, 2 * act_commands_count () - none);
}

//  A message with more frames than any command takes (more than the
//  receive path keeps) is refused with its true count, and the request id
//  is echoed.
static void
test_many_frames_are_bad_frame_with_their_count (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    const char *args [3] = { "ctx", "{}", "x" };
    s_request_args (world, "CALL", "many", args, 40);
    s_expect_error (world, "many", "bad_frame", "CALL takes 2 to 2 argument frames, not 40");
    s_request_args (world, "PING", "many2", args, 12);
    s_expect_error (world, "many2", "bad_frame", "PING takes 0 to 0 argument frames, not 12");
}

//  A command not in the table is unknown_command (names are upper case,
//  exactly as in the table).
static void
test_unknown_command (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "FROB", "r1", NULL);
    s_expect_error (world, "r1", "unknown_command", "unknown command");
    s_request (world, "ping", "r2", NULL);
    s_expect_error (world, "r2", "unknown_command", "unknown command");
    s_request (world, "", "r3", "ctx", NULL);
    s_expect_error (world, "r3", "unknown_command", "unknown command");
    s_request (world, "PINGS", "r4", NULL);
    s_expect_error (world, "r4", "unknown_command", "unknown command");
}


//  --------------------------------------------------------------------------
//  The dispatcher's checks

//  request-id is 1-255 bytes, opaque, echoed: an empty one or one of 256
//  bytes is bad_frame (echoed as it came).
static void
test_request_id_is_1_to_255_bytes (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    char id [257];
    memset (id, 'r', 256);
    id [256] = 0;

    s_request (world, "PING", "", NULL);
    s_expect_error (world, "", "bad_frame", "a request id is 1 to 255 bytes");
    s_request (world, "PING", id, NULL);
    s_expect_error (world, id, "bad_frame", "a request id is 1 to 255 bytes");
    id [255] = 0;
    s_request (world, "PING", id, NULL);
    s_expect_bare (world, id, "PONG");
    s_request (world, "PING", "1", NULL);
    s_expect_bare (world, "1", "PONG");

    //  Opaque: any bytes, NUL included, come back as they were
    zmsg_t *msg = s_frames (S_CLIENT, "ACTC01", "PING", NULL);
    zmsg_addmem (msg, "\x00\xff\x01", 3);
    s_feed (world, msg);
    assert_int_equal (world->sent.size, 1);
    zframe_t *echoed = zframe_new ("\x00\xff\x01", 3);
    zmsg_t *reply = world->sent.messages [0];
    zframe_t *frame = zmsg_first (reply);
    for (int i = 0; i < 3; i++)
        frame = zmsg_next (reply);
    assert_true (zframe_eq (frame, echoed));
    assert_int_equal (zmsg_size (reply), 4);
    zframe_destroy (&echoed);
    unit_sent_clear (&world->sent);
}

//  A frame over max_message_bytes (default 1048576) is too_large; one of
//  exactly that size is taken.
static void
test_frame_over_max_message_bytes_is_too_large (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    long long max = world->settings->max_message_bytes;
    assert_int_equal (max, 1048576);
    //  A data message padded with spaces to max bytes, then to max + 1
    const char *head = "{\"type\":\"data\",\"kind\":\"input\",\"data\":1}";
    char *message = malloc ((size_t) max + 2);
    memset (message, ' ', (size_t) max + 1);
    memcpy (message, head, strlen (head));
    message [max + 1] = 0;

    s_request (world, "APPEND", "r1", "ctx", message, NULL);
    char expected [128];
    snprintf (expected, sizeof expected,
              "a frame of %lld bytes is over max_message_bytes (%lld)", max + 1, max);
    s_expect_error (world, "r1", "too_large", expected);
    message [max] = 0;
    s_request (world, "APPEND", "r2", "ctx", message, NULL);
    s_expect_json (world, "r2", "OK", "{\"seq\":1}");
    free (message);
}

//  A context id is 1 to 128 bytes of [A-Za-z0-9._:@/-]: anything else is
//  bad_context, for every command that takes one.
static void
test_bad_context_id (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    char longest [130];
    memset (longest, 'c', 129);
    longest [129] = 0;                      //  129 bytes: one too many
    const char *bad [] = { "", "a b", "ctx#1", "ctx\xE2\x80\xA0", longest };
    struct { const char *name; const char *args [2]; } commands [] = {
        { "CALL",    { "{\"_tool\":\"upper\"}" } },
        { "PLAN",    { "[{\"_tool\":\"upper\"}]" } },
        { "APPEND",  { "{\"type\":\"data\",\"data\":1}" } },
        { "RESOLVE", { "†input" } },
        { "VIEW",    { NULL } },
        { "HISTORY", { "1", "10" } },
    };
    for (size_t c = 0; c < sizeof commands / sizeof commands [0]; c++)
        for (size_t b = 0; b < sizeof bad / sizeof bad [0]; b++) {
            s_request (world, commands [c].name, "r", bad [b], commands [c].args [0],
                       commands [c].args [1], NULL);
            s_expect_error (world, "r", "bad_context",
                            "a context id is 1 to 128 bytes of [A-Za-z0-9._:@/-]");
        }

    //  A NUL inside is refused too (a frame is bytes, not a C string)
    zmsg_t *msg = s_frames (S_CLIENT, "ACTC01", "VIEW", "r", NULL);
    zmsg_addmem (msg, "ctx\0x", 5);
    s_feed (world, msg);
    s_expect_error (world, "r", "bad_context", NULL);

    //  128 bytes of the alphabet is a context id: this one has no messages
    longest [128] = 0;
    s_request (world, "VIEW", "r", longest, NULL);
    s_expect_error (world, "r", "not_found", NULL);
    s_request (world, "APPEND", "r", "a-Z.0_9:@/x", "{\"type\":\"data\",\"data\":1}", NULL);
    s_expect_json (world, "r", "OK", "{\"seq\":1}");
}

//  A message too short to carry a request id (fewer than 3 frames after
//  the routing id), or with a wrong protocol header, cannot be answered:
//  it is dropped, and the broker still answers the next one.
static void
test_too_short_or_wrong_header_gets_no_reply (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_feed (world, zmsg_new ());
    s_expect_nothing (world);

    s_feed (world, s_frames (S_CLIENT, NULL));
    s_expect_nothing (world);
    s_feed (world, s_frames (S_CLIENT, "ACTC01", NULL));
    s_expect_nothing (world);
    s_feed (world, s_frames (S_CLIENT, "ACTC01", "PING", NULL));
    s_expect_nothing (world);

    const char *headers [] = { "ACTC02", "actc01", "ACTW01", "ACTC01 ", "" };
    for (size_t h = 0; h < sizeof headers / sizeof headers [0]; h++) {
        s_feed (world, s_frames (S_CLIENT, headers [h], "PING", "r1", NULL));
        s_expect_nothing (world);
    }

    s_request (world, "PING", "after", NULL);
    s_expect_bare (world, "after", "PONG");
}

//  A client may pipeline requests: each reply echoes its own request id,
//  in the order the requests came.
static void
test_pipelined_requests_each_echo_their_id (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    zmsg_t *msgs [3] = {
        s_frames (S_CLIENT, "ACTC01", "PING", "a", NULL),
        s_frames (S_CLIENT, "ACTC01", "PING", "b", NULL),
        s_frames (S_CLIENT, "ACTC01", "FROB", "c", NULL)
    };
    for (int i = 0; i < 3; i++)
        act_broker_client_message (world->broker, &msgs [i]);
    assert_int_equal (act_broker_pass (world->broker), 3);
    unit_assert_sent (&world->sent, 0, false, S_CLIENT, "ACTC01", "PONG", "a", NULL);
    unit_assert_sent (&world->sent, 1, false, S_CLIENT, "ACTC01", "PONG", "b", NULL);
    unit_assert_sent (&world->sent, 2, false, S_CLIENT, "ACTC01", "ERROR", "c",
                      "unknown_command", "unknown command", NULL);
}


//  --------------------------------------------------------------------------
//  Each command's reply

//  PING -> PONG, nothing else.
static void
test_ping_is_answered_pong (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "PING", "p", NULL);
    s_expect_bare (world, "p", "PONG");
}

//  APPEND -> OK {"seq": N}: the broker numbers a context's messages 1,
//  2, 3 ...; a frame that is not JSON is bad_json; a message without
//  type is bad_argument and takes no number.
static void
test_append_answers_its_seq (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "a1", "ctx", "{\"type\":\"data\",\"data\":{\"x\":1}}", NULL);
    s_expect_json (world, "a1", "OK", "{\"seq\":1}");
    s_request (world, "APPEND", "a2", "ctx", "{\"type\":\"text\",\"text\":\"hello\"}", NULL);
    s_expect_json (world, "a2", "OK", "{\"seq\":2}");
    s_request (world, "APPEND", "a3", "ctx", "{\"type\":", NULL);
    s_expect_error (world, "a3", "bad_json", NULL);
    s_request (world, "APPEND", "a4", "ctx", "{\"data\":1}", NULL);
    s_expect_error (world, "a4", "bad_argument", NULL);
    s_request (world, "APPEND", "a5", "other", "{\"type\":\"data\",\"data\":1}", NULL);
    s_expect_json (world, "a5", "OK", "{\"seq\":1}");         //  Per context
    s_request (world, "APPEND", "a6", "ctx", "{\"type\":\"data\",\"data\":{\"y\":2}}", NULL);
    s_expect_json (world, "a6", "OK", "{\"seq\":3}");
}

//  RESOLVE of what was appended -> VALUE; an absent value is not_found;
//  an instance read sees global messages; not a reference: bad_reference.
static void
test_resolve_what_was_appended (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "a", "trip",
               "{\"type\":\"data\",\"kind\":\"input\",\"data\":{\"city\":\"Paris\"}}", NULL);
    s_expect_json (world, "a", "OK", "{\"seq\":1}");
    s_request (world, "RESOLVE", "r1", "trip", "†input.city", NULL);
    s_expect_json (world, "r1", "VALUE", "\"Paris\"");
    s_request (world, "RESOLVE", "r2", "trip", "†input", NULL);
    s_expect_json (world, "r2", "VALUE", "{\"city\":\"Paris\"}");
    s_request (world, "RESOLVE", "r3", "trip", "†input.city", "i1", NULL);
    s_expect_json (world, "r3", "VALUE", "\"Paris\"");
    s_request (world, "RESOLVE", "r4", "trip", "†input.country || †input.city", NULL);
    s_expect_json (world, "r4", "VALUE", "\"Paris\"");
    s_request (world, "RESOLVE", "r5", "trip", "†input.country", NULL);
    s_expect_error (world, "r5", "not_found", "'†input.country' is absent");
    s_request (world, "RESOLVE", "r6", "trip", "input.city", NULL);
    s_expect_error (world, "r6", "bad_reference", NULL);
    s_request (world, "RESOLVE", "r7", "nowhere", "†input.city", NULL);
    s_expect_error (world, "r7", "not_found", NULL);

    //  The instance is 1 to 128 bytes of UTF-8
    char instance [130];
    memset (instance, 'i', 129);
    instance [129] = 0;
    s_request (world, "RESOLVE", "r8", "trip", "†input.city", instance, NULL);
    s_expect_error (world, "r8", "bad_argument", "an instance is 1 to 128 bytes of UTF-8");
    s_request (world, "RESOLVE", "r9", "trip", "†input.city", "", NULL);
    s_expect_error (world, "r9", "bad_argument", "an instance is 1 to 128 bytes of UTF-8");
    s_request (world, "RESOLVE", "r10", "trip", "†input.city", "\xff", NULL);
    s_expect_error (world, "r10", "bad_argument", "an instance is 1 to 128 bytes of UTF-8");
    instance [128] = 0;
    s_request (world, "RESOLVE", "r11", "trip", "†input.city", instance, NULL);
    s_expect_json (world, "r11", "VALUE", "\"Paris\"");
}

//  VIEW -> VALUE: the merged view as JSON (the default, or "json") or as
//  text (SEMANTICS.md section 6); another format is bad_argument.
static void
test_view_json_and_text (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "a", "ctx",
               "{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"name\":\"Alex\"}}", NULL);
    s_expect_json (world, "a", "OK", "{\"seq\":1}");
    const char *view = "[{\"type\":\"data\",\"kind\":\"user\",\"data\":{\"name\":\"Alex\"}}]";
    s_request (world, "VIEW", "v1", "ctx", NULL);
    s_expect_json (world, "v1", "VALUE", view);
    s_request (world, "VIEW", "v2", "ctx", "json", NULL);
    s_expect_json (world, "v2", "VALUE", view);

    s_request (world, "VIEW", "v3", "ctx", "text", NULL);
    zmsg_t *msg = s_reply (world, "v3", "VALUE");
    assert_int_equal (zmsg_size (msg), 5);
    char *text = s_body (msg, 0);
    assert_string_equal (text, "## Data: \xC2\xB6user\n{\n  \"name\": \"Alex\"\n}\n");
    free (text);
    unit_sent_clear (&world->sent);

    s_request (world, "VIEW", "v4", "ctx", "xml", NULL);
    s_expect_error (world, "v4", "bad_argument", "VIEW format is json or text");
}

//  HISTORY -> VALUE: the stored messages from from-seq, oldest first, at
//  most limit of them (limit at most 1000).
static void
test_history_returns_stored_messages (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "a1", "ctx", "{\"type\":\"data\",\"data\":{\"x\":1}}", NULL);
    s_expect_json (world, "a1", "OK", "{\"seq\":1}");
    s_request (world, "APPEND", "a2", "ctx", "{\"type\":\"text\",\"text\":\"hi\"}", NULL);
    s_expect_json (world, "a2", "OK", "{\"seq\":2}");

    s_request (world, "HISTORY", "h1", "ctx", "1", "10", NULL);
    json_t *page = s_take_json (world, "h1", "VALUE");
    assert_true (json_is_array (page));
    assert_int_equal (json_array_size (page), 2);
    json_t *first = json_array_get (page, 0), *second = json_array_get (page, 1);
    assert_int_equal (json_integer_value (json_object_get (first, "_seq")), 1);
    assert_string_equal (json_string_value (json_object_get (first, "type")), "data");
    assert_int_equal (json_integer_value (json_object_get (json_object_get (first, "data"),
                                                          "x")), 1);
    assert_true (json_is_string (json_object_get (first, "_date")));
    assert_int_equal (json_integer_value (json_object_get (second, "_seq")), 2);
    assert_string_equal (json_string_value (json_object_get (second, "text")), "hi");
    json_decref (page);

    s_request (world, "HISTORY", "h2", "ctx", "2", "10", NULL);
    page = s_take_json (world, "h2", "VALUE");
    assert_int_equal (json_array_size (page), 1);
    assert_int_equal (json_integer_value (json_object_get (json_array_get (page, 0), "_seq")),
                      2);
    json_decref (page);
    s_request (world, "HISTORY", "h3", "ctx", "1", "1", NULL);
    page = s_take_json (world, "h3", "VALUE");
    assert_int_equal (json_array_size (page), 1);
    json_decref (page);
    s_request (world, "HISTORY", "h4", "ctx", "3", "10", NULL);
    s_expect_json (world, "h4", "VALUE", "[]");

    s_request (world, "HISTORY", "h0", "ctx", "1", "0", NULL);
    s_expect_json (world, "h0", "VALUE", "[]");
    s_request (world, "HISTORY", "h5", "ctx", "1", "1001", NULL);
    s_expect_error (world, "h5", "bad_argument", "limit must be a decimal number up to 1000");
    s_request (world, "HISTORY", "h6", "ctx", "one", "10", NULL);
    s_expect_error (world, "h6", "bad_argument", NULL);
    s_request (world, "HISTORY", "h7", "nowhere", "1", "10", NULL);
    s_expect_error (world, "h7", "not_found", NULL);
}

//  CALL -> ACCEPTED call-id; STATUS -> VALUE, queued while no worker
//  serves its activity; CANCEL -> OK, then STATUS says cancelled; CANCEL
//  of an ended call is OK and changes nothing; an unknown call is
//  not_found.
static void
test_call_status_cancel (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "CALL", "c1", "ctx", "{\"_tool\":\"upper\",\"text\":\"hi\"}", NULL);
    s_expect_frame (world, "c1", "ACCEPTED", "1");

    s_request (world, "STATUS", "s1", "1", NULL);
    s_expect_json (world, "s1", "VALUE",
                   "{\"call_id\":\"1\",\"context\":\"ctx\",\"state\":\"queued\",\"attempts\":0,"
                   "\"tool\":\"upper\"}");

    s_request (world, "CANCEL", "x1", "1", NULL);
    s_expect_bare (world, "x1", "OK");                  //  Fire-and-forget: no DONE
    s_request (world, "STATUS", "s2", "1", NULL);
    json_t *status = s_take_json (world, "s2", "VALUE");
    assert_string_equal (json_string_value (json_object_get (status, "call_id")), "1");
    assert_string_equal (json_string_value (json_object_get (status, "state")), "cancelled");
    assert_int_equal (json_integer_value (json_object_get (status, "attempts")), 0);
    json_t *outcome = json_object_get (status, "outcome");
    assert_string_equal (json_string_value (json_object_get (outcome, "status")), "cancelled");
    assert_string_equal (json_string_value (json_object_get (json_object_get (outcome, "error"),
                                                             "code")), "cancelled");
    json_decref (status);

    s_request (world, "CANCEL", "x2", "1", NULL);
    s_expect_bare (world, "x2", "OK");
    s_request (world, "STATUS", "s3", "2", NULL);
    s_expect_error (world, "s3", "not_found", "no call 2");
    s_request (world, "CANCEL", "x3", "2", NULL);
    s_expect_error (world, "x3", "not_found", "no call 2");
    s_request (world, "STATUS", "s4", "one", NULL);
    s_expect_error (world, "s4", "not_found", "no call (not a call id)");
}

//  A call with _outputPath is answered DONE when it ends: cancelled by
//  another client, it gets its DONE, and the canceller its OK.
static void
test_cancelled_call_with_output_path_is_done (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "CALL", "c1", "ctx",
               "{\"_tool\":\"upper\",\"_outputPath\":\"†state.out\"}", NULL);
    s_expect_frame (world, "c1", "ACCEPTED", "1");

    s_feed (world, s_frames ("client-2", "ACTC01", "CANCEL", "x1", "1", NULL));
    assert_int_equal (world->sent.size, 2);
    size_t done = 0, ok = 0;
    for (size_t i = 0; i < 2; i++) {
        zmsg_t *reply = world->sent.messages [i];
        if (zframe_streq (zmsg_first (reply), "client-2")) {
            unit_assert_frames (reply, "client-2", "ACTC01", "OK", "x1", NULL);
            ok++;
            continue;
        }
        //  [client][ACTC01][DONE][request][call-id][outcome]
        assert_int_equal (zmsg_size (reply), 6);
        assert_true (zframe_streq (zmsg_first (reply), S_CLIENT));
        assert_true (zframe_streq (zmsg_next (reply), "ACTC01"));
        assert_true (zframe_streq (zmsg_next (reply), "DONE"));
        assert_true (zframe_streq (zmsg_next (reply), "c1"));
        assert_true (zframe_streq (zmsg_next (reply), "1"));
        char *body = zframe_strdup (zmsg_next (reply));
        json_t *outcome = json_loads (body, 0, NULL);
        //  Cancelled before any attempt: nothing written, no branch
        json_t *expected = json_loads ("{\"call_id\":\"1\",\"status\":\"cancelled\","
            "\"written\":[],\"seqs\":[],\"attempts\":0,"
            "\"error\":{\"code\":\"cancelled\",\"message\":\"cancelled by a client\"}}",
            0, NULL);
        if (!json_equal (outcome, expected))
            fail_msg ("DONE %s", body);
        json_decref (expected);
        json_decref (outcome);
        free (body);
        done++;
    }
    assert_int_equal (done, 1);
    assert_int_equal (ok, 1);
    unit_sent_clear (&world->sent);
}

//  PLAN -> ACCEPTED, a JSON array of call ids in order; an empty or a
//  non-array plan is bad_call, and nothing is accepted.
static void
test_plan_accepts_calls_in_order (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "PLAN", "p1", "ctx",
               "[{\"_tool\":\"a\",\"_outputPath\":\"†state.x\"},"
               "{\"_tool\":\"b\",\"v\":\"†state.x\"}]", NULL);
    s_expect_json (world, "p1", "ACCEPTED", "[\"1\",\"2\"]");
    s_request (world, "STATUS", "s2", "2", NULL);
    json_t *status = s_take_json (world, "s2", "VALUE");
    assert_string_equal (json_string_value (json_object_get (status, "state")), "waiting");
    json_decref (status);

    s_request (world, "PLAN", "p2", "ctx", "[]", NULL);
    s_expect_error (world, "p2", "bad_call", "a plan is a non-empty JSON array of calls");
    s_request (world, "PLAN", "p3", "ctx", "{\"_tool\":\"a\"}", NULL);
    s_expect_error (world, "p3", "bad_call", "a plan is a non-empty JSON array of calls");
    s_request (world, "CALL", "c4", "ctx", "{\"_tool\":\"a\"}", NULL);
    s_expect_frame (world, "c4", "ACCEPTED", "3");         //  No number was taken
}

//  Every malformed or refused request gets an ERROR reply and changes
//  nothing: a refused APPEND, CALL or PLAN naming a new context does not
//  create it, and takes no _seq or call number.
static void
test_refused_request_changes_nothing (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "APPEND", "a1", "fresh", "{\"data\":1}", NULL);
    s_expect_error (world, "a1", "bad_argument", NULL);
    s_request (world, "CALL", "c1", "fresh", "{\"_tool\":\"a\",\"x\":\"†state.nothing\"}", NULL);
    s_expect_error (world, "c1", "unresolved_reference", NULL);
    s_request (world, "CALL", "c2", "fresh", "{\"x\":1}", NULL);
    s_expect_error (world, "c2", "bad_call", NULL);
    s_request (world, "PLAN", "p1", "fresh",
               "[{\"_tool\":\"a\"},{\"_tool\":\"b\",\"_outputMethod\":\"smash\"}]", NULL);
    s_expect_error (world, "p1", "bad_method", NULL);
    s_request (world, "VIEW", "v1", "fresh", NULL);
    s_expect_error (world, "v1", "not_found", NULL);
    s_request (world, "HISTORY", "h1", "fresh", "1", "10", NULL);
    s_expect_error (world, "h1", "not_found", NULL);
    s_request (world, "STATUS", "s1", "1", NULL);
    s_expect_error (world, "s1", "not_found", "no call 1");

    //  The next message is the context's first. Call numbers are the one
    //  thing a refusal uses up (act_flow.c: a wait a refused call
    //  registered must never match a later call): the unresolved CALL
    //  took 1 and the plan's valid first entry 2; neither is a call
    s_request (world, "APPEND", "a2", "fresh", "{\"type\":\"data\",\"data\":1}", NULL);
    s_expect_json (world, "a2", "OK", "{\"seq\":1}");
    s_request (world, "CALL", "c3", "fresh", "{\"_tool\":\"a\"}", NULL);
    s_expect_frame (world, "c3", "ACCEPTED", "3");
    s_request (world, "STATUS", "s3", "2", NULL);
    s_expect_error (world, "s3", "not_found", "no call 2");
    s_request (world, "STATS", "s2", NULL);
    json_t *stats = s_take_json (world, "s2", "VALUE");
    assert_int_equal (json_integer_value (json_object_get (stats, "contexts")), 1);
    assert_int_equal (json_integer_value (json_object_get (stats, "messages")), 1);
    assert_int_equal (json_integer_value (json_object_get (json_object_get (stats, "calls"),
                                                          "accepted")), 1);
    json_decref (stats);
}

//  STATS -> VALUE with the keys of PROTOCOL.md section 4, counting what
//  the broker holds.
static void
test_stats_has_the_section_4_keys (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    s_request (world, "STATS", "s1", NULL);
    json_t *stats = s_take_json (world, "s1", "VALUE");
    const char *keys [] = { "uptime_ms", "contexts", "messages", "calls", "activities",
                            "workers" };
    for (size_t k = 0; k < sizeof keys / sizeof keys [0]; k++)
        if (!json_object_get (stats, keys [k]))
            fail_msg ("STATS has no %s", keys [k]);
    const char *call_keys [] = { "accepted", "ok", "error", "timeout", "skipped",
                                 "cancelled", "running", "queued", "waiting" };
    json_t *calls = json_object_get (stats, "calls");
    for (size_t k = 0; k < sizeof call_keys / sizeof call_keys [0]; k++) {
        json_t *count = json_object_get (calls, call_keys [k]);
        if (!json_is_integer (count) || json_integer_value (count) != 0)
            fail_msg ("STATS calls.%s is not 0 in a new broker", call_keys [k]);
    }
    assert_int_equal (json_object_size (calls), 9);
    assert_true (json_integer_value (json_object_get (stats, "uptime_ms")) >= 0);
    assert_int_equal (json_integer_value (json_object_get (stats, "contexts")), 0);
    assert_int_equal (json_integer_value (json_object_get (stats, "messages")), 0);
    assert_true (json_is_object (json_object_get (stats, "activities")));
    assert_int_equal (json_object_size (json_object_get (stats, "activities")), 0);
    assert_true (json_is_array (json_object_get (stats, "workers")));
    assert_int_equal (json_array_size (json_object_get (stats, "workers")), 0);
    json_decref (stats);

    //  One message and one queued call later
    s_request (world, "APPEND", "a", "ctx", "{\"type\":\"data\",\"data\":1}", NULL);
    s_expect_json (world, "a", "OK", "{\"seq\":1}");
    s_request (world, "CALL", "c", "ctx", "{\"_tool\":\"upper\"}", NULL);
    s_expect_frame (world, "c", "ACCEPTED", "1");
    s_request (world, "STATS", "s2", NULL);
    stats = s_take_json (world, "s2", "VALUE");
    assert_int_equal (json_integer_value (json_object_get (stats, "contexts")), 1);
    assert_int_equal (json_integer_value (json_object_get (stats, "messages")), 1);
    calls = json_object_get (stats, "calls");
    assert_int_equal (json_integer_value (json_object_get (calls, "accepted")), 1);
    assert_int_equal (json_integer_value (json_object_get (calls, "queued")), 1);
    assert_int_equal (json_integer_value (json_object_get (calls, "running")), 0);
    //  The latency histograms are STATS' own addition: present, then set
    //  aside (test_broker's StatsTest checks their counts)
    json_t *upper = json_object_get (json_object_get (stats, "activities"), "upper");
    assert_non_null (json_object_get (json_object_get (upper, "latency_ms"), "total"));
    json_object_del (upper, "latency_ms");
    //  So are the calls done per outcome, none yet
    json_t *outcomes = json_loads ("{\"ok\":0,\"error\":0,\"timeout\":0,\"skipped\":0,"
                                   "\"cancelled\":0}", 0, NULL);
    assert_true (json_equal (json_object_get (upper, "outcomes"), outcomes));
    json_decref (outcomes);
    json_object_del (upper, "outcomes");
    json_t *expected = json_loads ("{\"upper\":{\"workers\":0,\"queued\":1,\"running\":0,"
                                   "\"done\":0}}", 0, NULL);
    if (!json_equal (json_object_get (stats, "activities"), expected)) {
        char *got = json_dumps (json_object_get (stats, "activities"), 0);
        fail_msg ("STATS activities: %s", got);
    }
    json_decref (expected);
    json_decref (stats);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_every_command_at_its_smallest_arity_is_served,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_every_wrong_arity_is_bad_frame_naming_the_command,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_many_frames_are_bad_frame_with_their_count,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_unknown_command, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_request_id_is_1_to_255_bytes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_frame_over_max_message_bytes_is_too_large,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_bad_context_id, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_too_short_or_wrong_header_gets_no_reply,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pipelined_requests_each_echo_their_id,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ping_is_answered_pong, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_append_answers_its_seq, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resolve_what_was_appended, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_view_json_and_text, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_history_returns_stored_messages,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_call_status_cancel, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cancelled_call_with_output_path_is_done,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_plan_accepts_calls_in_order, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_refused_request_changes_nothing,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_stats_has_the_section_4_keys, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

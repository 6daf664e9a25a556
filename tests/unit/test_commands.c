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

    Each command's reply is in test_commands_replies; the broker and the
    helpers both files use are in commands_fixture.h.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "act_commands.h"
#include "commands_fixture.h"

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
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

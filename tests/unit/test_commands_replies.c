/*  =========================================================================
    test_commands_replies - each client command's reply (PROTOCOL.md
    section 1) through a real broker without sockets, as test_commands:
    PING, APPEND, RESOLVE, VIEW, HISTORY, CALL, STATUS, CANCEL (and the
    DONE of a cancelled call with an output path), PLAN and STATS; a
    refused request changes nothing.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "commands_fixture.h"
#include "json_count.h"

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

//  Append to context ctx a data message of kind big whose list is the
//  numbers 0 to 19,999; returns the list's text (the caller frees it)
static char *
s_append_big_list (s_world_t *world)
{
    char *message = malloc (200000);
    size_t at = (size_t) sprintf (message, "{\"type\":\"data\",\"kind\":\"big\",\"data\":"
                                           "{\"list\":[0");
    for (int i = 1; i < 20000; i++)
        at += (size_t) sprintf (message + at, ",%d", i);
    strcpy (message + at, "]}}");
    s_request (world, "APPEND", "a", "ctx", message, NULL);
    s_expect_json (world, "a", "OK", "{\"seq\":1}");
    char *list = strdup (strstr (message, "[0"));
    strchr (list, ']') [1] = 0;
    free (message);
    return list;
}

//  VIEW writes its answer from the context's values, copying none, and
//  gives up as soon as it passes max_reply_bytes: a view too large was
//  built whole, every value copied, then refused (an audit: 3.2 GB and
//  12.4 s of actd's loop for one VIEW), and the text form copied each
//  instance's value again (20,000 instances, 33.5 s). Counted in
//  jansson's allocations, not timed
static void
test_view_copies_no_value (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    //  A global list of 20,000 numbers, and 300 instances of another kind
    free (s_append_big_list (world));
    char instance [128], request [32];
    for (int i = 0; i < 300; i++) {
        snprintf (instance, sizeof instance, "{\"type\":\"data\",\"kind\":\"t\","
                  "\"_instance\":\"i%d\",\"data\":{\"n\":{\"v\":%d}}}", i, i);
        snprintf (request, sizeof request, "a%d", i);
        s_request (world, "APPEND", request, "ctx", instance, NULL);
        s_reply (world, request, "OK");
        unit_sent_clear (&world->sent);
    }
    //  Within the bound: the instances' folds are made at the first VIEW;
    //  the next one copies nothing of them
    for (int text = 0; text < 2; text++)
        for (int round = 0; round < 2; round++) {
            unit_json_count_start ();
            s_request (world, "VIEW", "v", "ctx", text? "text": "json", NULL);
            size_t allocations = unit_json_count_stop ();
            zmsg_t *msg = s_reply (world, "v", "VALUE");
            assert_int_equal (zmsg_size (msg), 5);
            unit_sent_clear (&world->sent);
            print_message ("VIEW %s of 301 entries: %zu allocations\n",
                           text? "text": "json", allocations);
            if (round)
                assert_in_range (allocations, 0, 200);
        }
    //  Over the bound: refused before the first entry is written whole
    world->settings->max_reply_bytes = 4096;
    for (int text = 0; text < 2; text++) {
        unit_json_count_start ();
        s_request (world, "VIEW", "v", "ctx", text? "text": "json", NULL);
        size_t allocations = unit_json_count_stop ();
        zmsg_t *msg = s_reply (world, "v", "ERROR");
        char *code = s_body (msg, 0), *why = s_body (msg, 1);
        unit_sent_clear (&world->sent);
        print_message ("VIEW %s refused: %zu allocations (%s)\n",
                       text? "text": "json", allocations, why);
        assert_string_equal (code, "too_large");
        assert_in_range (allocations, 0, 200);
        assert_string_equal (why, "the view is over max_reply_bytes (4096); "
                                  "resolve a part of it");
        free (code);
        free (why);
    }
}

//  RESOLVE writes the value straight from the stored one and gives up past
//  max_reply_bytes: a global list of 20,000 numbers is resolved without a
//  copy (json_deep_copy made 20,000 allocations, then the whole text was
//  written before a value over the bound was refused: a value of 200 MB
//  cost 200 MB twice). Counted in jansson's allocations, not timed
static void
test_resolve_copies_no_value (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    char *list = s_append_big_list (world);
    for (int bounded = 0; bounded < 2; bounded++) {
        if (bounded)
            world->settings->max_reply_bytes = 4096;
        unit_json_count_start ();
        s_request (world, "RESOLVE", "r", "ctx", "\u2020big.list", NULL);
        size_t allocations = unit_json_count_stop ();
        zmsg_t *msg = s_reply (world, "r", bounded? "ERROR": "VALUE");
        char *first = s_body (msg, 0), *second = bounded? s_body (msg, 1): NULL;
        unit_sent_clear (&world->sent);
        print_message ("RESOLVE of 20,000 items%s: %zu allocations\n",
                       bounded? ", refused": "", allocations);
        assert_in_range (allocations, 0, 100);
        if (bounded) {
            assert_string_equal (first, "too_large");
            assert_string_equal (second, "the value is over max_reply_bytes (4096); "
                                         "resolve a part of it");
        }
        else    //  The text the list was appended as
            assert_string_equal (first, list);
        free (first);
        free (second);
    }
    //  In an instance with writes of its own, once its fold is made
    world->settings->max_reply_bytes = 8 << 20;
    s_request (world, "APPEND", "a2", "ctx", "{\"type\":\"data\",\"kind\":\"big\","
               "\"_instance\":\"i1\",\"data\":{\"mine\":1}}", NULL);
    s_reply (world, "a2", "OK");
    unit_sent_clear (&world->sent);
    for (int round = 0; round < 2; round++) {
        unit_json_count_start ();
        s_request (world, "RESOLVE", "r", "ctx", "\u2020big.list", "i1", NULL);
        size_t allocations = unit_json_count_stop ();
        s_reply (world, "r", "VALUE");
        unit_sent_clear (&world->sent);
        print_message ("RESOLVE of 20,000 items in an instance: %zu allocations\n",
                       allocations);
        if (round)
            assert_in_range (allocations, 0, 100);
    }
    //  Absent is still not_found
    s_request (world, "RESOLVE", "r", "ctx", "\u2020big.nothing", NULL);
    s_reply (world, "r", "ERROR");
    free (list);
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

//  The state of call id (STATUS), in state (size bytes)
static void
s_state_of (s_world_t *world, const char *id, char *state, size_t size)
{
    s_request (world, "STATUS", "s", id, NULL);
    json_t *status = s_take_json (world, "s", "VALUE");
    snprintf (state, size, "%s", json_string_value (json_object_get (status, "state")));
    json_decref (status);
}

//  A call waits for every earlier call that could write what it reads,
//  and is resolved again when they have all finished (SEMANTICS.md
//  section 7): what it reads written meanwhile, by an APPEND or by some
//  of them, does not let it go while one is pending, whatever order
//  they end in.
static void
test_a_waiting_call_waits_for_every_producer (void **state)
{
    s_world_t *world = (s_world_t *) *state;
    //  The producers' places in their plan, in the order they end
    const size_t orders [][3] = { { 3, 1, 2 }, { 3, 2, 1 }, { 1, 3, 2 } };
    for (size_t o = 0; o < 3; o++) {
        char context [16], ids [64];
        snprintf (context, sizeof context, "ctx%zu", o);
        s_request (world, "PLAN", "p", context,
                   "[{\"_tool\":\"a\",\"_outputPath\":\"†r.a\"},"
                   "{\"_tool\":\"a\",\"_outputPath\":\"†r.b\"},"
                   "{\"_tool\":\"a\",\"_outputPath\":\"†r.c\"},"
                   "{\"_tool\":\"b\",\"x\":\"†r\"}]", NULL);
        size_t first = 4 * o + 1;
        snprintf (ids, sizeof ids, "[\"%zu\",\"%zu\",\"%zu\",\"%zu\"]",
                  first, first + 1, first + 2, first + 3);
        s_expect_json (world, "p", "ACCEPTED", ids);
        s_request (world, "APPEND", "a", context,
                   "{\"type\":\"data\",\"kind\":\"r\",\"data\":{\"d\":1}}", NULL);
        s_expect_json (world, "a", "OK", "{\"seq\":1}");
        char reader [16];
        snprintf (reader, sizeof reader, "%zu", first + 3);
        char state [16];
        for (size_t i = 0; i < 3; i++) {
            s_state_of (world, reader, state, sizeof state);
            if (strcmp (state, "waiting") != 0)
                fail_msg ("order %zu: the reader is %s with %zu of its producers ended",
                          o, state, i);
            char producer [16];
            snprintf (producer, sizeof producer, "%zu", first - 1 + orders [o][i]);
            s_request (world, "CANCEL", "x", producer, NULL);
            unit_sent_clear (&world->sent);         //  Its OK and its DONE
        }
        s_state_of (world, reader, state, sizeof state);
        assert_string_equal (state, "queued");
    }
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
        cmocka_unit_test_setup_teardown (test_ping_is_answered_pong, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_append_answers_its_seq, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resolve_what_was_appended, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_view_json_and_text, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_view_copies_no_value, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_resolve_copies_no_value, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_history_returns_stored_messages,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_call_status_cancel, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_cancelled_call_with_output_path_is_done,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_plan_accepts_calls_in_order, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_a_waiting_call_waits_for_every_producer,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_refused_request_changes_nothing,
                                         s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_stats_has_the_section_4_keys, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

/*  =========================================================================
    commands_fixture - what the client command tests share (test_commands.c,
    test_commands_replies.c): a real broker without sockets, a store in
    memory (the world s_setup gives each test), requests fed to it as if
    from the client socket, and assertions on the one reply each got.

    Include after <cmocka.h>.
    ========================================================================= */

#ifndef COMMANDS_FIXTURE_H_INCLUDED
#define COMMANDS_FIXTURE_H_INCLUDED

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "act_broker.h"
#include "unit_support.h"

#define S_CLIENT    "client-1"      //  The routing id requests come from

typedef struct {
    act_settings_t *settings;       //  Defaults, store in memory
    act_broker_t *broker;           //  No sockets
    unit_sent_t sent;               //  What its passes sent
} s_world_t;

//  A world for one test: a broker with defaults and a store in memory,
//  its sends captured; in *state
static inline int
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

//  Destroy the world s_setup made
static inline int
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
static inline void
s_feed (s_world_t *world, zmsg_t *msg)
{
    act_broker_client_message (world->broker, &msg);
    assert_null (msg);
    act_broker_pass (world->broker);
}

//  A message of the NULL-ended string frames, the routing id first
static inline zmsg_t *
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
static inline void
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
static inline zmsg_t *
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
static inline char *
s_body (zmsg_t *msg, size_t index)
{
    zframe_t *frame = zmsg_first (msg);
    for (size_t i = 0; i < 4 + index && frame; i++)
        frame = zmsg_next (msg);
    return frame? zframe_strdup (frame): NULL;
}

//  Assert the one reply is verb with no body
static inline void
s_expect_bare (s_world_t *world, const char *request, const char *verb)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 4);
    unit_sent_clear (&world->sent);
}

//  Assert the one reply is verb with one body frame, JSON equal to json
static inline void
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
static inline void
s_expect_frame (s_world_t *world, const char *request, const char *verb, const char *text)
{
    zmsg_t *msg = s_reply (world, request, verb);
    assert_int_equal (zmsg_size (msg), 5);
    char *body = s_body (msg, 0);
    assert_string_equal (body, text);
    free (body);
    unit_sent_clear (&world->sent);
}

//  Assert the one reply is ERROR code; message, when not NULL, is its
//  exact message
static inline void
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

#endif

/*  =========================================================================
    unit_support - what the broker's unit tests share: a seeded random
    number generator, a sender (act_outbox_send_fn) that keeps a copy of
    every message handed to it, with an assertion on a message's frames,
    and the removal of a SQLite file with its WAL and shared memory.

    Include after <cmocka.h> and <czmq.h>.
    ========================================================================= */

#ifndef UNIT_SUPPORT_H_INCLUDED
#define UNIT_SUPPORT_H_INCLUDED

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  splitmix64: a seed gives the same run everywhere
static inline uint64_t
unit_random (uint64_t *rng)
{
    uint64_t z = (*rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

//  A number in [0, bound)
static inline uint64_t
unit_below (uint64_t *rng, uint64_t bound)
{
    return unit_random (rng) % bound;
}

//  The seed of a random test: $name, else fallback; printed for replay
static inline uint64_t
unit_seed (const char *name, uint64_t fallback)
{
    const char *env = getenv (name);
    uint64_t seed = env? strtoull (env, NULL, 0): fallback;
    printf ("seed %llu (replay: %s=%llu)\n", (unsigned long long) seed, name,
            (unsigned long long) seed);
    return seed;
}


//  --------------------------------------------------------------------------
//  A capturing sender

typedef struct {
    zmsg_t **messages;          //  Copies of the frames, in the order sent
    bool *to_worker;            //  Which socket each was for
    size_t size;                //  Messages handed over
    size_t room;                //  Slots allocated
    bool refuse_workers;        //  Return false for messages to workers
} unit_sent_t;

//  The send function: arg is a unit_sent_t
static inline bool
unit_sent_capture (void *arg, bool to_worker, zmq_msg_t *parts, size_t nparts)
{
    unit_sent_t *sent = (unit_sent_t *) arg;
    if (sent->size == sent->room) {
        sent->room = sent->room? sent->room * 2: 64;
        sent->messages = realloc (sent->messages, sent->room * sizeof (zmsg_t *));
        sent->to_worker = realloc (sent->to_worker, sent->room * sizeof (bool));
        assert_non_null (sent->messages);
        assert_non_null (sent->to_worker);
    }
    zmsg_t *msg = zmsg_new ();
    for (size_t i = 0; i < nparts; i++)
        zmsg_addmem (msg, zmq_msg_data (&parts [i]), zmq_msg_size (&parts [i]));
    sent->to_worker [sent->size] = to_worker;
    sent->messages [sent->size++] = msg;
    return !(to_worker && sent->refuse_workers);
}

//  Forget what was captured
static inline void
unit_sent_clear (unit_sent_t *sent)
{
    for (size_t i = 0; i < sent->size; i++)
        zmsg_destroy (&sent->messages [i]);
    sent->size = 0;
}

//  Forget it and free the slots
static inline void
unit_sent_release (unit_sent_t *sent)
{
    unit_sent_clear (sent);
    free (sent->messages);
    free (sent->to_worker);
    *sent = (unit_sent_t) { .refuse_workers = false };
}

//  Assert msg holds exactly the frames in args, as strings (a NULL ends
//  the list)
static inline void
unit_assert_framesv (zmsg_t *msg, va_list args)
{
    zframe_t *frame = zmsg_first (msg);
    size_t count = 0;
    for (const char *text = va_arg (args, const char *); text;
         text = va_arg (args, const char *)) {
        if (!frame)
            fail_msg ("frame %zu ('%s') is missing", count, text);
        if (zframe_size (frame) != strlen (text)
        ||  memcmp (zframe_data (frame), text, strlen (text)) != 0)
            fail_msg ("frame %zu is '%.*s', not '%s'", count, (int) zframe_size (frame),
                      (const char *) zframe_data (frame), text);
        frame = zmsg_next (msg);
        count++;
    }
    assert_int_equal (zmsg_size (msg), count);
}

//  The same with the frames as arguments
static inline void
unit_assert_frames (zmsg_t *msg, ...)
{
    va_list args;
    va_start (args, msg);
    unit_assert_framesv (msg, args);
    va_end (args);
}

//  Assert message index of sent went to the socket to_worker says and has
//  exactly the frames given (a NULL ends the list)
static inline void
unit_assert_sent (unit_sent_t *sent, size_t index, bool to_worker, ...)
{
    assert_true (index < sent->size);
    assert_int_equal (sent->to_worker [index], to_worker);
    va_list args;
    va_start (args, to_worker);
    unit_assert_framesv (sent->messages [index], args);
    va_end (args);
}

//  Remove the SQLite file path and its -wal and -shm, those that exist
static inline void
unit_remove_sqlite (const char *path)
{
    const char *endings [] = { "", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        char *file = zsys_sprintf ("%s%s", path, endings [i]);
        zsys_file_delete (file);
        zstr_free (&file);
    }
}

#endif

/*  =========================================================================
    cmp_rss - fills actd with messages and touches its contexts, for the
    memory figure of bench/compare.sh (RSS after 1 000 000 stored messages
    in 10 000 contexts). The caller reads actd's VmRSS and VmHWM between
    the steps.

      append   APPEND --messages data messages (about 150 bytes each) over
               --contexts contexts, message i to context i mod K (as many
               agents writing at once), at most --window outstanding.
               Mostly merges into kind "state" (keys k0..k19 rewritten),
               one in ten a "notes" message.
      touch    one RESOLVE †state.k3 in each context (a context not in
               memory is loaded from the store), one at a time.

    Prints one line: RESULT step=.. count=N seconds=S rate=PER_S errors=E

    cmp_rss append|touch --endpoint EP [--messages M] [--contexts K]
            [--window W]
    ========================================================================= */

#include <errno.h>
#include <zmq.h>
#include "cmp_common.h"

static void *s_socket;
static uint64_t s_request = 0;

static void
s_send (const char *command, const char *context, const char *arg, size_t size)
{
    char id [32];
    int length = snprintf (id, sizeof id, "%llu", (unsigned long long) ++s_request);
    zmq_send (s_socket, "ACTC01", 6, ZMQ_SNDMORE);
    zmq_send (s_socket, command, strlen (command), ZMQ_SNDMORE);
    zmq_send (s_socket, id, (size_t) length, ZMQ_SNDMORE);
    zmq_send (s_socket, context, strlen (context), ZMQ_SNDMORE);
    zmq_send (s_socket, arg, size, 0);
}

//  Receive one reply; returns true if it was not an ERROR. Prints the
//  first error.
static bool
s_recv_reply (size_t *errors)
{
    bool ok = true;
    char verb [16] = "";
    char detail [256] = "";
    int index = 0, more = 1;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init (&part);
        if (zmq_msg_recv (&part, s_socket, 0) < 0) {
            zmq_msg_close (&part);
            fprintf (stderr, "cmp_rss: receive failed: %s\n", zmq_strerror (errno));
            exit (1);
        }
        more = zmq_msg_more (&part);
        size_t size = zmq_msg_size (&part);
        if (index == 1)
            snprintf (verb, sizeof verb, "%.*s", (int) (size < 15? size: 15),
                      (char *) zmq_msg_data (&part));
        if (index >= 3 && strlen (detail) < 200)
            snprintf (detail + strlen (detail), sizeof detail - strlen (detail), " %.*s",
                      (int) (size < 100? size: 100), (char *) zmq_msg_data (&part));
        zmq_msg_close (&part);
        index++;
    }
    if (!strcmp (verb, "ERROR")) {
        ok = false;
        if ((*errors)++ == 0)
            fprintf (stderr, "cmp_rss: ERROR%s\n", detail);
    }
    return ok;
}

static bool
s_wait_readable (int timeout_ms)
{
    zmq_pollitem_t item = { s_socket, 0, ZMQ_POLLIN, 0 };
    return zmq_poll (&item, 1, timeout_ms) > 0;
}

int
main (int argc, char *argv [])
{
    const char *endpoint = NULL;
    size_t messages = 1000000, contexts = 10000, window = 1000;
    if (argc < 2 || (strcmp (argv [1], "append") && strcmp (argv [1], "touch"))) {
        fprintf (stderr, "usage: cmp_rss append|touch --endpoint EP [--messages M] "
                 "[--contexts K] [--window W]\n");
        return 2;
    }
    bool append = !strcmp (argv [1], "append");
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp (argv [i], "--endpoint"))
            endpoint = argv [i + 1];
        else if (!strcmp (argv [i], "--messages"))
            messages = strtoul (argv [i + 1], NULL, 10);
        else if (!strcmp (argv [i], "--contexts"))
            contexts = strtoul (argv [i + 1], NULL, 10);
        else if (!strcmp (argv [i], "--window"))
            window = strtoul (argv [i + 1], NULL, 10);
        else {
            fprintf (stderr, "cmp_rss: unknown option %s\n", argv [i]);
            return 2;
        }
    }
    if (!endpoint || contexts < 1 || window < 1) {
        fprintf (stderr, "cmp_rss: bad arguments\n");
        return 2;
    }
    void *context = zmq_ctx_new ();
    s_socket = zmq_socket (context, ZMQ_DEALER);
    int hwm = 0, linger = 0;
    zmq_setsockopt (s_socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s_socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s_socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect (s_socket, endpoint);

    const char *text = "the quick brown fox jumps over the lazy dog, "
                       "then writes a note about it in the context";
    size_t errors = 0, count = append? messages: contexts;
    size_t sent = 0, received = 0;
    double start = cmp_now ();
    char name [64], body [512];
    while (received < count) {
        while (sent < count && sent - received < (append? window: 1)) {
            snprintf (name, sizeof name, "rss-%05zu", sent % contexts);
            if (append) {
                size_t j = sent / contexts;
                int size = snprintf (body, sizeof body, "{\"type\":\"data\",\"kind\":\"%s\","
                    "\"description\":\"bench message\",\"data\":{\"k%zu\":{\"j\":%zu,"
                    "\"text\":\"%s\"}}}", j % 10 == 9? "notes": "state", j % 20, j, text);
                s_send ("APPEND", name, body, (size_t) size);
            }
            else
                s_send ("RESOLVE", name, "\xE2\x80\xA0state.k3", 11);
            sent++;
        }
        if (!s_wait_readable (120000)) {
            fprintf (stderr, "cmp_rss: no reply for 120 s (%zu sent, %zu answered)\n",
                     sent, received);
            return 1;
        }
        s_recv_reply (&errors);
        received++;
    }
    double seconds = cmp_now () - start;
    printf ("RESULT step=%s count=%zu seconds=%.3f rate=%.1f errors=%zu\n", argv [1], count,
            seconds, count / seconds, errors);
    zmq_close (s_socket);
    zmq_ctx_term (context);
    return 0;
}

/*  =========================================================================
    bench_numbers - the cost of writing a real: act_dtoa (the shortest form
    SEMANTICS 1 asks for) against snprintf "%.17g" (what jansson's
    json_dumps does for every real) over the same random doubles; then the
    same through the JSON writers, act_json_dump against json_dumpb.

    Two sets of doubles: random bit patterns of every exponent (most need
    16 or 17 digits), and "short" ones such as prices and measures (k / 100,
    k / 1000), which an agent's data is mostly made of. Each figure is the
    best of --repeat passes over --count numbers, in ns per number; the
    ratio is ours / snprintf (below 1: ours is cheaper). Nothing asserts.

    bench_numbers [--count N] [--repeat R]
    ========================================================================= */

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "actd/act.h"

//  xorshift64*, fixed seed: the same numbers in every run
static uint64_t
s_next (uint64_t *rng)
{
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return *rng * 2685821657736338717ULL;
}

static double
s_now_ns (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e9 + now.tv_nsec;
}

//  What one pass writes: kept so the compiler cannot drop the work
static volatile size_t s_sink;

//  One way of writing a real; returns the bytes written
typedef size_t (s_writer_fn) (double value, char *buffer);

static size_t
s_write_ours (double value, char *buffer)
{
    return act_dtoa (value, buffer);
}

static size_t
s_write_printf (double value, char *buffer)
{
    return (size_t) snprintf (buffer, 32, "%.17g", value);
}

static size_t
s_write_act_json (double value, char *buffer)
{
    json_t *real = json_real (value);
    char *text = act_json_dump (real);
    size_t length = strlen (text);
    buffer [0] = text [0];
    free (text);
    json_decref (real);
    return length;
}

static size_t
s_write_jansson (double value, char *buffer)
{
    json_t *real = json_real (value);
    size_t length = json_dumpb (real, buffer, 32, JSON_ENCODE_ANY);
    json_decref (real);
    return length;
}

//  Best ns per number of writer over values, in repeat passes
static double
s_time (s_writer_fn *writer, const double *values, size_t count, int repeat)
{
    double best = 0;
    char buffer [64];
    for (int pass = 0; pass < repeat; pass++) {
        size_t bytes = 0;
        double start = s_now_ns ();
        for (size_t i = 0; i < count; i++)
            bytes += writer (values [i], buffer);
        double spent = (s_now_ns () - start) / (double) count;
        s_sink += bytes;
        if (pass == 0 || spent < best)
            best = spent;
    }
    return best;
}

static void
s_compare (const char *set, const char *what, s_writer_fn *ours, s_writer_fn *theirs,
           const char *their_name, const double *values, size_t count, int repeat)
{
    double ours_ns = s_time (ours, values, count, repeat);
    double theirs_ns = s_time (theirs, values, count, repeat);
    printf ("%-7s %-22s %7.1f ns/number   %-20s %7.1f ns/number   ratio %.2f\n",
            set, what, ours_ns, their_name, theirs_ns, ours_ns / theirs_ns);
}

int
main (int argc, char **argv)
{
    size_t count = 1000000;
    int repeat = 5;
    static const struct option options [] = {
        { "count", required_argument, NULL, 'n' },
        { "repeat", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        if (option == 'n')
            count = strtoul (optarg, NULL, 10);
        else
        if (option == 'r')
            repeat = atoi (optarg);
        else {
            printf ("bench_numbers [--count N] [--repeat R]\n");
            return option == 'h'? 0: 2;
        }
    }
    if (count == 0 || repeat < 1)
        return 2;
    double *random = malloc (count * sizeof (double));
    double *short_ = malloc (count * sizeof (double));
    uint64_t rng = 0x243F6A8885A308D3ULL;
    for (size_t i = 0; i < count; i++) {
        uint64_t bits;
        do                      //  Finite doubles only: JSON has no others
            bits = s_next (&rng);
        while (((bits >> 52) & 0x7FF) == 0x7FF);
        memcpy (&random [i], &bits, sizeof bits);
        uint64_t k = s_next (&rng) % 10000000;
        short_ [i] = i % 2? (double) k / 100: (double) k / 1000;
    }
    printf ("%zu doubles, best of %d passes\n", count, repeat);
    s_compare ("random", "act_dtoa", s_write_ours, s_write_printf, "snprintf %.17g",
               random, count, repeat);
    s_compare ("short", "act_dtoa", s_write_ours, s_write_printf, "snprintf %.17g",
               short_, count, repeat);
    s_compare ("random", "act_json_dump (real)", s_write_act_json, s_write_jansson,
               "json_dumpb (real)", random, count, repeat);
    s_compare ("short", "act_json_dump (real)", s_write_act_json, s_write_jansson,
               "json_dumpb (real)", short_, count, repeat);
    free (random);
    free (short_);
    return 0;
}

/*  =========================================================================
    cmp_common - what the comparison programs (bench/compare.sh) share:
    a clock, percentiles, the call payload, and a shared counter file in
    which workers publish how many tasks they have answered (so a client
    can tell when fire-and-forget work is done without asking the broker).

    Header only: each program includes it once.
    ========================================================================= */

#ifndef CMP_COMMON_H_INCLUDED
#define CMP_COMMON_H_INCLUDED

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

//  Slots in a counter file (one per worker process)
#define CMP_SLOTS 64

static inline double
cmp_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int
cmp_compare (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y? -1: x > y? 1: 0;
}

//  CPU time (user + system) process pid has used, in ms; 0 when unknown
static inline double
cmp_cpu_ms (int pid)
{
    if (pid <= 0)
        return 0;
    char path [64], line [4096];
    snprintf (path, sizeof path, "/proc/%d/stat", pid);
    FILE *file = fopen (path, "r");
    if (!file)
        return 0;
    size_t size = fread (line, 1, sizeof line - 1, file);
    fclose (file);
    line [size] = 0;
    //  Fields after the command (which may hold spaces) in parentheses:
    //  utime is field 14, stime 15
    char *at = strrchr (line, ')');
    unsigned long long utime = 0, stime = 0;
    if (!at || sscanf (at + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                       &utime, &stime) != 2)
        return 0;
    return (double) (utime + stime) * 1000.0 / (double) sysconf (_SC_CLK_TCK);
}

//  The p-th percentile (0..100) of n values (sorts them in place)
static inline double
cmp_percentile (double *values, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort (values, n, sizeof *values, cmp_compare);
    size_t index = (size_t) (p / 100.0 * (double) (n - 1) + 0.5);
    return values [index < n? index: n - 1];
}

//  Map the counter file path (created zeroed if absent): CMP_SLOTS
//  64-bit counters. Exits on failure.
static inline _Atomic uint64_t *
cmp_counter_map (const char *path)
{
    int fd = open (path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate (fd, CMP_SLOTS * sizeof (uint64_t))) {
        fprintf (stderr, "cannot open the counter file %s\n", path);
        exit (1);
    }
    void *map = mmap (NULL, CMP_SLOTS * sizeof (uint64_t), PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd, 0);
    close (fd);
    if (map == MAP_FAILED) {
        fprintf (stderr, "cannot map the counter file %s\n", path);
        exit (1);
    }
    return (_Atomic uint64_t *) map;
}

//  The sum of all slots
static inline uint64_t
cmp_counter_sum (_Atomic uint64_t *counter)
{
    uint64_t sum = 0;
    for (int i = 0; i < CMP_SLOTS; i++)
        sum += atomic_load_explicit (&counter [i], memory_order_relaxed);
    return sum;
}

//  The payload of call index: a JSON call of about size bytes. output:
//  with "_outputPath": "†state.<tag>.k<index>" (a distinct path per
//  call); else fire-and-forget. The same bytes go through every broker.
//  Writes into buffer (at least size + 256 bytes); returns the length.
static inline size_t
cmp_payload (char *buffer, size_t size, size_t index, bool output, const char *tag)
{
    int length = output
        ? sprintf (buffer, "{\"_tool\":\"echo\",\"_outputPath\":\"\xE2\x80\xA0state.%s.k%zu\","
                   "\"i\":%zu,\"text\":\"", tag, index, index)
        : sprintf (buffer, "{\"_tool\":\"echo\",\"run\":\"%s\",\"i\":%zu,\"text\":\"",
                   tag, index);
    size_t pad = size > (size_t) length + 2? size - (size_t) length - 2: 8;
    for (size_t i = 0; i < pad; i++)
        buffer [length + i] = (char) ('a' + (index + i) % 26);
    memcpy (buffer + length + pad, "\"}", 3);
    return (size_t) length + pad + 2;
}

#endif

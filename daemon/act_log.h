/*  =========================================================================
    act_log - actd's log: syslog levels through zsys (syslog, facility
    daemon, ident actd), and with -v a copy on stderr.

    The level test is in the macro, so a disabled line costs one compare
    and never formats its arguments.
    ========================================================================= */

#ifndef ACT_LOG_H_INCLUDED
#define ACT_LOG_H_INCLUDED

#include <stdbool.h>
#include <syslog.h>

//  The level below which act_log drops messages (set from settings).
extern int act_log_threshold;

//  Copy every message to stderr besides syslog. (CZMQ 4.2 sends its log
//  either to syslog or to a stream, never both, so -v prints here.)
extern bool act_log_stderr;

//  Log at a syslog level, when the level is enabled.
#define act_log(level, ...) \
    do { if ((level) <= act_log_threshold) act_log_emit ((level), __VA_ARGS__); } while (0)

//  Log one line at level, unconditionally (act_log checks the level).
void act_log_emit (int level, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

//  Parse a log level name (error, warning, notice, info, debug); -1 if unknown.
int act_log_level_parse (const char *name);

#endif

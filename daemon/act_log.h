/*  =========================================================================
    act_log - actd's log: syslog levels through zsys (syslog, facility
    daemon, ident actd), and with -v a copy on stderr.

    The level test is in the macro, so a disabled line costs one compare
    and never formats its arguments.
    ========================================================================= */

#ifndef ACT_LOG_H_INCLUDED
#define ACT_LOG_H_INCLUDED

#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

//  The level below which act_log drops messages (set from settings).
extern int act_log_threshold;

//  Where each message is also written, in actd's own format ("N: actd
//  <RFC 3339 date> message"), or NULL: stderr with -v, stdout or stderr
//  without syslog. (CZMQ 4.2 sends its log either to syslog or to a
//  stream, never both, and writes its own date format.)
extern FILE *act_log_stream;

//  Whether each message also goes to zsys (syslog under actd; CZMQ's
//  stream in the tests, before actd configures its log).
extern bool act_log_zsys;

//  Log at a syslog level, when the level is enabled.
#define act_log(level, ...) \
    do { if ((level) <= act_log_threshold) act_log_emit ((level), __VA_ARGS__); } while (0)

//  Log one line at level, unconditionally (act_log checks the level).
void act_log_emit (int level, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

//  Log a line about a peer's misbehaviour (peer: its key or routing id;
//  reason: what it did, a fixed code such as a PROTOCOL.md error code or
//  a constant kind, never text with what the peer sent in it), at most
//  once per peer and reason in ACT_LOG_REPEAT_MS: the repeats are counted,
//  and the next line says how many there were ("... (and 1234 more like
//  it from PEER in the last 10 s)"). 256 peers are followed, each with at
//  most 16 reasons; the repeats of the others are counted per reason (16
//  of them, then together). A flood of messages, of reasons or of peers
//  costs a few lines.
#define act_log_peer(level, peer, reason, ...) \
    do { if ((level) <= act_log_threshold) \
        act_log_peer_emit ((level), (peer), (reason), __VA_ARGS__); } while (0)

//  How long repeats of one peer's misbehaviour are counted, not logged
#define ACT_LOG_REPEAT_MS 10000

//  Log a line of a kind that peers can make come in floods (reason: the
//  kind, the same text each time, such as "worker joined"): at most
//  ACT_LOG_BURST lines of that kind each ACT_LOG_REPEAT_MS, whoever the
//  peers are; past them the lines are counted, and the count is logged
//  when the interval ends. A worker that joins and leaves in a loop
//  wrote thousands of lines a second.
#define act_log_burst(level, reason, ...) \
    do { if ((level) <= act_log_threshold) \
        act_log_burst_emit ((level), (reason), __VA_ARGS__); } while (0)

//  Lines of one kind logged in an interval (act_log_burst)
#define ACT_LOG_BURST 50

void act_log_burst_emit (int level, const char *reason, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

void act_log_peer_emit (int level, const char *peer, const char *reason,
                        const char *format, ...) __attribute__ ((format (printf, 4, 5)));

//  Log the counts of repeats (and of act_log_burst's lines left out)
//  whose interval is over and forget them; call it now and then (the
//  broker does every second).
void act_log_peer_flush (void);

//  Bytes of a text from a peer that a log line shows (act_log_cut)
#define ACT_LOG_CUT 200

//  text as a log line shows it: at most its first ACT_LOG_CUT bytes, cut
//  where a UTF-8 character starts, then "..." (written into shown); text
//  itself when short enough; "(none)" for NULL. A peer's text (a worker's
//  error message) may be as long as a message may be, a flood of them
//  filled a log at 34 MB/s, and it may carry a call's parameters.
const char *act_log_cut (const char *text, char shown [ACT_LOG_CUT + 4]);

//  Parse a log level name (error, warning, notice, info, debug); -1 if unknown.
int act_log_level_parse (const char *name);

#endif

/*  =========================================================================
    act_log - actd's log (see act_log.h).
    ========================================================================= */

#include <czmq.h>
#include "actd/act_json.h"
#include "act_log.h"

int act_log_threshold = LOG_INFO;
FILE *act_log_stream = NULL;
bool act_log_zsys = true;

//  Hand text to zsys at its level (syslog under actd)
static void
s_zsys (int level, const char *text)
{
    if (level <= LOG_ERR)
        zsys_error ("%s", text);
    else
    if (level == LOG_WARNING)
        zsys_warning ("%s", text);
    else
    if (level == LOG_NOTICE)
        zsys_notice ("%s", text);
    else
    if (level == LOG_INFO)
        zsys_info ("%s", text);
    else
        zsys_debug ("%s", text);
}

//  text with its control characters written as \n, \r, \t or \xNN, so
//  that a name or a tool a peer chose cannot forge a line of the log;
//  text itself (taken) when it has none
static char *
s_escape (char *text)
{
    size_t controls = 0, length = 0;
    for (; text [length]; length++)
        controls += (unsigned char) text [length] < 0x20 || text [length] == 0x7f;
    if (!controls)
        return text;
    char *escaped = (char *) malloc (length + 4 * controls + 1);
    if (!escaped)
        return text;
    char *at = escaped;
    for (const char *from = text; *from; from++) {
        unsigned char c = (unsigned char) *from;
        if (c >= 0x20 && c != 0x7f)
            *at++ = (char) c;
        else
            at += sprintf (at, c == '\n'? "\\n": c == '\r'? "\\r": c == '\t'? "\\t"
                                                                          : "\\x%02x", c);
    }
    *at = 0;
    zstr_free (&text);
    return escaped;
}

void
act_log_emit (int level, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *text = zsys_vprintf (format, args);
    va_end (args);
    if (!text)
        return;
    text = s_escape (text);
    if (act_log_stream) {
        static const char letters [] = "EEEEWNID";
        char date [32];
        act_date_now (date);
        fprintf (act_log_stream, "%c: actd %s %s\n", letters [level & 7], date, text);
        fflush (act_log_stream);
    }
    if (act_log_zsys)
        s_zsys (level, text);
    zstr_free (&text);
}


//  --------------------------------------------------------------------------
//  Repeated misbehaviour of peers

//  Peers followed at once: beyond that, repeats of peers not followed are
//  counted together, so a flood of distinct peers cannot grow the table
#define S_PEERS         256
#define S_PEER_SIZE     72      //  A routing id in hex, a key, an address
#define S_REASON_SIZE   96
//  Slots one peer may hold (reasons are fixed codes, far fewer): beyond
//  them its repeats go with the other peers', so no peer fills the table
#define S_PEER_REASONS  16
//  Reasons of the other peers counted apart; more are counted together
#define S_OTHERS        16

typedef struct {
    char peer [S_PEER_SIZE];    //  Whose repeats are counted ("other peers")
    char reason [S_REASON_SIZE];    //  Their kind, a fixed code
    int level;                  //  Of the line the repeats are like
    long long since;            //  When its line was logged; 0: free slot
    unsigned long long repeats; //  Not logged since
} s_peer_t;

static s_peer_t s_peers [S_PEERS];
static s_peer_t s_others [S_OTHERS];    //  Repeats from peers the table had
                                        //  no room for, per reason
static s_peer_t s_rest;         //  Theirs of reasons s_others had no room for

//  Log text, with the count of the slot's repeats when there were some
static void
s_peer_line (int level, s_peer_t *slot, const char *text, long long now)
{
    if (slot->repeats)
        act_log_emit (level, "%s (and %llu more like it from %s in the last %lld s)", text,
                      slot->repeats, slot->peer, (now - slot->since) / 1000);
    else
        act_log_emit (level, "%s", text);
}

//  Log the count of a slot's repeats, if any, and free the slot
static void
s_peer_close (s_peer_t *slot, long long now)
{
    if (slot->repeats && slot->level <= act_log_threshold)
        s_peer_line (slot->level, slot, slot->reason, now);
    slot->since = 0;
    slot->repeats = 0;
}

//  Among count slots, the one of peer and reason, else a free one taken
//  for them while peer holds fewer than most slots, else NULL. Closes the
//  slots whose interval is over on the way.
static s_peer_t *
s_peer_slot (s_peer_t *slots, size_t count, const char *peer, const char *reason,
             size_t most, long long now)
{
    s_peer_t *free_slot = NULL;
    size_t held = 0;
    for (s_peer_t *slot = slots; slot < slots + count; slot++) {
        bool same_peer = slot->since && strncmp (slot->peer, peer, S_PEER_SIZE - 1) == 0;
        if (same_peer && strncmp (slot->reason, reason, S_REASON_SIZE - 1) == 0)
            return slot;
        if (slot->since && now - slot->since >= ACT_LOG_REPEAT_MS)
            s_peer_close (slot, now);
        held += same_peer && slot->since;
        if (!slot->since && !free_slot)
            free_slot = slot;
    }
    if (held >= most)
        return NULL;
    if (free_slot) {
        snprintf (free_slot->peer, S_PEER_SIZE, "%s", peer);
        snprintf (free_slot->reason, S_REASON_SIZE, "%s", reason);
    }
    return free_slot;
}

void
act_log_peer_emit (int level, const char *peer, const char *reason, const char *format, ...)
{
    long long now = act_clock_ms ();
    s_peer_t *slot = s_peer_slot (s_peers, S_PEERS, peer, reason, S_PEER_REASONS, now);
    if (!slot)
        slot = s_peer_slot (s_others, S_OTHERS, "other peers", reason, S_OTHERS, now);
    if (!slot) {
        if (s_rest.since && now - s_rest.since >= ACT_LOG_REPEAT_MS)
            s_peer_close (&s_rest, now);
        slot = &s_rest;
        snprintf (slot->peer, S_PEER_SIZE, "other peers");
        snprintf (slot->reason, S_REASON_SIZE, "misbehaviour of other kinds");
    }
    slot->level = level;
    if (slot->since && now - slot->since < ACT_LOG_REPEAT_MS) {
        slot->repeats++;
        return;
    }
    va_list args;
    va_start (args, format);
    char *text = zsys_vprintf (format, args);
    va_end (args);
    if (text)
        s_peer_line (level, slot, text, now);
    zstr_free (&text);
    slot->since = now;
    slot->repeats = 0;
}

//  --------------------------------------------------------------------------
//  Kinds of lines that come in floods

//  Kinds followed at once (a few call sites)
#define S_BURSTS 8

typedef struct {
    char reason [S_REASON_SIZE];    //  The kind; "" for a free slot
    int level;                  //  Of its lines
    long long since;            //  Start of the interval
    unsigned count;             //  Lines logged in it
    unsigned long long left_out;    //  Lines not logged in it
} s_burst_t;

static s_burst_t s_bursts [S_BURSTS];

//  End slot's interval: log how many of its lines were left out, if any
static void
s_burst_close (s_burst_t *slot, long long now)
{
    if (slot->left_out && slot->level <= act_log_threshold)
        act_log_emit (slot->level, "%llu more '%s' lines left out in the last %lld s "
                      "(at most %d each %d s)", slot->left_out, slot->reason,
                      (now - slot->since) / 1000, ACT_LOG_BURST, ACT_LOG_REPEAT_MS / 1000);
    slot->since = now;
    slot->count = 0;
    slot->left_out = 0;
}

void
act_log_burst_emit (int level, const char *reason, const char *format, ...)
{
    long long now = act_clock_ms ();
    s_burst_t *slot = NULL;
    for (s_burst_t *each = s_bursts; each < s_bursts + S_BURSTS && !slot; each++)
        if (!*each->reason || strncmp (each->reason, reason, S_REASON_SIZE - 1) == 0)
            slot = each;
    if (slot && !*slot->reason) {
        snprintf (slot->reason, S_REASON_SIZE, "%s", reason);
        slot->since = now;
    }
    if (slot) {
        slot->level = level;
        if (now - slot->since >= ACT_LOG_REPEAT_MS)
            s_burst_close (slot, now);
        if (slot->count == ACT_LOG_BURST) {
            slot->left_out++;
            return;
        }
        slot->count++;
    }
    va_list args;
    va_start (args, format);
    char *text = zsys_vprintf (format, args);
    va_end (args);
    if (text)
        act_log_emit (level, "%s", text);
    zstr_free (&text);
}

void
act_log_peer_flush (void)
{
    long long now = act_clock_ms ();
    for (s_burst_t *slot = s_bursts; slot < s_bursts + S_BURSTS; slot++)
        if (*slot->reason && slot->left_out && now - slot->since >= ACT_LOG_REPEAT_MS)
            s_burst_close (slot, now);
    for (s_peer_t *slot = s_peers; slot < s_peers + S_PEERS; slot++)
        if (slot->since && now - slot->since >= ACT_LOG_REPEAT_MS)
            s_peer_close (slot, now);
    for (s_peer_t *slot = s_others; slot < s_others + S_OTHERS; slot++)
        if (slot->since && now - slot->since >= ACT_LOG_REPEAT_MS)
            s_peer_close (slot, now);
    if (s_rest.since && now - s_rest.since >= ACT_LOG_REPEAT_MS)
        s_peer_close (&s_rest, now);
}

int
act_log_level_parse (const char *name)
{
    static const char *names [] = { "error", "warning", "notice", "info", "debug" };
    static const int levels [] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };
    for (int i = 0; name && i < 5; i++)
        if (streq (name, names [i]))
            return levels [i];
    return -1;
}

const char *
act_log_cut (const char *text, char shown [ACT_LOG_CUT + 4])
{
    if (!text)
        return "(none)";
    size_t size = strlen (text);
    if (size <= ACT_LOG_CUT)
        return text;
    size = ACT_LOG_CUT;
    while (size && (text [size] & 0xC0) == 0x80)
        size--;
    memcpy (shown, text, size);
    memcpy (shown + size, "...", 4);
    return shown;
}

/*  =========================================================================
    act_log - actd's log (see act_log.h).
    ========================================================================= */

#include <czmq.h>
#include "actd/act_json.h"
#include "act_log.h"

int act_log_threshold = LOG_INFO;
bool act_log_stderr = false;

void
act_log_emit (int level, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *text = zsys_vprintf (format, args);
    va_end (args);
    if (!text)
        return;
    if (act_log_stderr) {
        static const char letters [] = "EEEEWNID";
        char date [32];
        act_date_now (date);
        fprintf (stderr, "%c: actd %s %s\n", letters [level & 7], date, text);
        fflush (stderr);
    }
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
    zstr_free (&text);
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


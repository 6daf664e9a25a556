/*  =========================================================================
    actctl_broker - actctl's commands about the broker: stats, ping, and keygen (which
    talks to no broker).
    ========================================================================= */

#include <sys/stat.h>
#include "actctl.h"

//  stats: the broker's STATS (an object), as lines or as JSON
int
actctl_stats (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    (void) args;
    (void) nargs;
    act_err_t err = { 0 };
    json_t *stats = actctl_expect (act_client_stats (client, &err), JSON_OBJECT, "STATS", &err);
    if (!stats)
        return actctl_fail (options, &err);
    if (options->json)
        actctl_print_json (stats);
    else {
        json_t *calls = json_object_get (stats, "calls");
        printf ("up %.1f s; %" JSON_INTEGER_FORMAT " contexts, %" JSON_INTEGER_FORMAT " messages\n",
                json_integer_value (json_object_get (stats, "uptime_ms")) / 1000.0,
                json_integer_value (json_object_get (stats, "contexts")),
                json_integer_value (json_object_get (stats, "messages")));
        printf ("calls:");
        const char *key;
        json_t *value;
        json_object_foreach (calls, key, value)
            printf (" %s %" JSON_INTEGER_FORMAT, key, json_integer_value (value));
        printf ("\n");
        json_object_foreach (json_object_get (stats, "activities"), key, value)
            printf ("activity %s: %" JSON_INTEGER_FORMAT " workers, %" JSON_INTEGER_FORMAT
                    " queued, %" JSON_INTEGER_FORMAT " running, %" JSON_INTEGER_FORMAT " done\n",
                    key, json_integer_value (json_object_get (value, "workers")),
                    json_integer_value (json_object_get (value, "queued")),
                    json_integer_value (json_object_get (value, "running")),
                    json_integer_value (json_object_get (value, "done")));
        size_t index;
        json_array_foreach (json_object_get (stats, "workers"), index, value) {
            char *names = act_json_dump (json_object_get (value, "activities"));
            printf ("worker %s (%s): %s, %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT " busy\n",
                    actctl_field (value, "name"),
                    actctl_field (value, "lang"), names,
                    json_integer_value (json_object_get (value, "running")),
                    json_integer_value (json_object_get (value, "capacity")));
            free (names);
        }
        //  STATS stops listing them at max_reply_bytes
        json_int_t activities = json_integer_value (json_object_get (stats,
                                                                     "activities_left_out"));
        json_int_t workers = json_integer_value (json_object_get (stats, "workers_left_out"));
        if (activities || workers)
            printf ("not listed (over max_reply_bytes): %" JSON_INTEGER_FORMAT " activities, %"
                    JSON_INTEGER_FORMAT " workers\n", activities, workers);
    }
    json_decref (stats);
    return 0;
}

//  True, after saying so, when path is there (a file, or anything else
//  keygen would write over or fail on)
static bool
s_taken (const char *path)
{
    struct stat info;
    if (lstat (path, &info) != 0)
        return false;
    fprintf (stderr, "actctl: %s is there: keygen writes over a keypair only with "
                     "--force\n", path);
    return true;
}

//  keygen: a new keypair in dir/name.key and dir/name.key_secret. Never
//  over a keypair that is there unless --force says so: the secret key
//  of a broker (keygen server --dir /etc/actd) cannot be made again.
//  --json prints one object built with jansson (a path may hold any byte)
int
actctl_keygen (actctl_options_t *options, const char *name)
{
    char *path = zsys_sprintf ("%s/%s.key", options->dir, name);
    char *secret = zsys_sprintf ("%s_secret", path);
    zcert_t *cert = zcert_new ();
    json_t *answer = json_pack ("{ssssss}", "public", zcert_public_txt (cert),
                                "file", path, "secret_file", secret);
    //  Both are named when both are there
    bool taken = !options->force && s_taken (path);
    taken = (!options->force && s_taken (secret)) || taken;
    int rc = 0;
    if (taken)
        rc = 1;
    else
    if (options->json && !answer) {
        fprintf (stderr, "actctl: --json: the path %s is not UTF-8\n", path);
        rc = 2;
    }
    else {
        zcert_set_meta (cert, "name", "%s", name);
        if (zcert_save (cert, path)) {
            fprintf (stderr, "actctl: cannot write %s: %s\n", path, strerror (errno));
            rc = 1;
        }
        else
        if (options->json)
            actctl_print_line (answer);
        else
            printf ("public key %s\nwrote %s (public) and %s (keep it private)\n",
                    zcert_public_txt (cert), path, secret);
    }
    json_decref (answer);
    zcert_destroy (&cert);
    zstr_free (&secret);
    zstr_free (&path);
    return rc;
}

int
actctl_ping (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    (void) args;
    (void) nargs;
    act_err_t err = { 0 };
    int64_t start = zclock_usecs ();
    if (act_client_ping (client, &err))
        return actctl_fail (options, &err);
    printf (options->json? "{\"pong\":true,\"ms\":%.3f}\n": "pong from broker in %.3f ms\n",
            (zclock_usecs () - start) / 1000.0);
    return 0;
}

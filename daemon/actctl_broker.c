/*  =========================================================================
    actctl_broker - actctl's commands about the broker: stats, ping, and keygen (which
    talks to no broker).
    ========================================================================= */

#include "actctl.h"

int
actctl_stats (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    (void) args;
    (void) nargs;
    act_err_t err = { 0 };
    json_t *stats = act_client_stats (client, &err);
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
                    json_string_value (json_object_get (value, "name")),
                    json_string_value (json_object_get (value, "lang")), names,
                    json_integer_value (json_object_get (value, "running")),
                    json_integer_value (json_object_get (value, "capacity")));
            free (names);
        }
    }
    json_decref (stats);
    return 0;
}

int
actctl_keygen (actctl_options_t *options, const char *name)
{
    zcert_t *cert = zcert_new ();
    zcert_set_meta (cert, "name", "%s", name);
    char *path = zsys_sprintf ("%s/%s.key", options->dir, name);
    int rc = zcert_save (cert, path);
    if (rc == 0 && options->json)
        printf ("{\"public\":\"%s\",\"file\":\"%s\",\"secret_file\":\"%s_secret\"}\n",
                zcert_public_txt (cert), path, path);
    else
    if (rc == 0)
        printf ("public key %s\nwrote %s (public) and %s_secret (keep it private)\n",
                zcert_public_txt (cert), path, path);
    else
        fprintf (stderr, "actctl: cannot write %s: %s\n", path, strerror (errno));
    zstr_free (&path);
    zcert_destroy (&cert);
    return rc? 1: 0;
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

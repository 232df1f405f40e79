/* Placeholder while the glue is written: every call reports that it is missing. */
#include "recon_db.h"

#include <stdio.h>

int recon_db_reconcile_window(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                              struct recon_db_stats *st, char *err, size_t errlen)
{
    (void)db;
    (void)cfg;
    (void)window_start_us;
    (void)st;
    snprintf(err, errlen, "recon_db_reconcile_window: not built yet");
    return -1;
}

int recon_db_pending_windows(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t *out,
                             size_t max, size_t *n, char *err, size_t errlen)
{
    (void)db;
    (void)cfg;
    (void)now_us;
    (void)out;
    (void)max;
    *n = 0;
    snprintf(err, errlen, "recon_db_pending_windows: not built yet");
    return -1;
}

int recon_db_mark_done(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                       int64_t seen_last_data_at_us, char *err, size_t errlen)
{
    (void)db;
    (void)cfg;
    (void)window_start_us;
    (void)seen_last_data_at_us;
    snprintf(err, errlen, "recon_db_mark_done: not built yet");
    return -1;
}

/* A webhook receiver for the alert-delivery tests (standing in for Alertmanager's
 * /api/v2/alerts): a loopback listener, one thread per connection (each reconciler keeps its own
 * open), every request recorded with its arrival time and answered 200, or 503 for the first
 * fail_first. One receiver per test process. */
#ifndef WL_TEST_FX_HOOK_H
#define WL_TEST_FX_HOOK_H

#include <stdint.h>

#define FX_HOOK_MAX 64 /* requests recorded; later ones are answered, not kept */

struct fx_hook_post {
    int64_t at_ns;           /* monotonic */
    int64_t wall_us;         /* wall clock, to compare with endsAt */
    int status;              /* what the receiver answered */
    const char *path, *body; /* valid until fx_hook_stop */
};

void fx_hook_start(int fail_first);
int fx_hook_port(void);
/* Requests recorded so far. */
int fx_hook_count(void);
/* Waits until at least n requests arrived (timeout_s); returns how many there are. */
int fx_hook_wait(int n, int timeout_s);
/* Request i (0-based, below fx_hook_count()). */
struct fx_hook_post fx_hook_get(int i);
/* Stops the listener and every connection thread; frees the records. */
void fx_hook_stop(void);

#endif

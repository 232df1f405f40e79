/* The throttle panel of the cell page: rules proposed for this pair's saturation alerts and
 * live rules on the workflows seen on it, with what their hosts passed, delayed and dropped. */
#ifndef WL_HM_THROTTLE_H
#define WL_HM_THROTTLE_H

#include <event2/buffer.h>
#include <libpq-fe.h>

/* 0, or -1 (the panel then says it could not be read; the page still renders). */
int hm_throttle_panel(struct evbuffer *out, PGconn *db, const char *src, const char *dst);

#endif

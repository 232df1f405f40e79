/* The frame every wanledger HTML document shares: doctype, head with the one stylesheet, the top
 * bar, and the closing tags. No JavaScript, no external resources. */
#ifndef WL_HM_HTML_H
#define WL_HM_HTML_H

#include <event2/buffer.h>

/* title is escaped. home: link target of the top bar's name (NULL: no link). refresh_seconds > 0
 * makes the browser reload the page that often (the latest-window view on a wall screen). */
void hm_html_open(struct evbuffer *out, const char *title, const char *home, int refresh_seconds);
void hm_html_close(struct evbuffer *out, int64_t generated_us);

#endif

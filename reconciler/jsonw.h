/* Writing JSON text into libevent buffers: escaped strings, and the API's error object. */
#ifndef WL_JSONW_H
#define WL_JSONW_H

#include <event2/buffer.h>

/* Appends s as a JSON string literal (quotes included); NULL becomes null. Bytes that are not
 * UTF-8 (a message cut inside a character) become U+FFFD, so the output is always valid JSON. */
void jw_str(struct evbuffer *out, const char *s);
/* Appends {"error": msg, "path": path}. */
void jw_error(struct evbuffer *out, const char *msg, const char *path);

#endif

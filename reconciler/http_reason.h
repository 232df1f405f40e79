/* The reason phrase of an HTTP status (RFC 9110), for the status lines the server (evhttp) and
 * the gate (its own refusals) write. */
#ifndef WL_HTTP_REASON_H
#define WL_HTTP_REASON_H

/* "OK", "Not Found", ...; "Status" for a code not in the table. */
const char *http_reason(int status);

#endif

/* Escaping of every name that comes from outside (sites, workflows, users, programs, hosts) into
 * HTML/SVG text and attributes, URL query values and Markdown table cells. Invalid UTF-8 and
 * control characters become U+FFFD so the output always parses as XML. */
#ifndef WL_HM_ESC_H
#define WL_HM_ESC_H

#include <event2/buffer.h>

/* Text or attribute value (double or single quoted): & < > " ' escaped. NULL writes nothing. */
void hm_esc_html(struct evbuffer *out, const char *s);
/* Percent-encodes everything but unreserved characters (RFC 3986). */
void hm_esc_url(struct evbuffer *out, const char *s);
/* A Markdown table cell: HTML-escaped, and Markdown's punctuation (| * _ ` [ ] \ # ~) preceded
 * by a backslash, so a name never turns into a link, emphasis or a new column. */
void hm_esc_md(struct evbuffer *out, const char *s);
/* Terminal text: control characters (ESC included) become '?', so a name cannot move the cursor
 * or change colours. */
void hm_esc_term(struct evbuffer *out, const char *s);

#endif

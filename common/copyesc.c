/* COPY text-format escaping (see copyesc.h). */
#include "copyesc.h"

size_t copyesc_text(char *out, const char *s, size_t n)
{
    char *w = out;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        switch (ch) {
        case '\\':
            *w++ = '\\', *w++ = '\\';
            break;
        case '\n':
            *w++ = '\\', *w++ = 'n';
            break;
        case '\r':
            *w++ = '\\', *w++ = 'r';
            break;
        case '\t':
            *w++ = '\\', *w++ = 't';
            break;
        default:
            *w++ = ch;
        }
    }
    return (size_t)(w - out);
}

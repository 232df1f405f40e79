/* One Prometheus label writer for every /metrics in the tree (see promhttp.h): the agent's,
 * the reconciler's, the poller's and ship's. */
#include "promhttp.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void promhttp_label(FILE *f, const char *name, const char *value, bool comma)
{
    size_t n = value ? strlen(value) : 0;
    char *clean = malloc(UTF8_SANITIZE_LEN(n));
    fprintf(f, "%s%s=\"", comma ? "," : "", name);
    if (clean) {
        utf8_sanitize(value ? value : "", n, clean, UTF8_SANITIZE_LEN(n));
        for (const char *p = clean; *p; p++) {
            if (*p == '\\' || *p == '"')
                fputc('\\', f);
            if (*p == '\n')
                fputs("\\n", f);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
    free(clean);
}

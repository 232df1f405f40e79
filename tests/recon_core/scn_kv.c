/* The scenario format's line tokenizer (see scn_kv.h). */
#include "scn_kv.h"

#include <string.h>

/* Words separated by blanks; key="a value with blanks" keeps its blanks (no escapes). */
void scn_kv_split(char *line, struct scn_kv *kv)
{
    kv->n = kv->n_pos = 0;
    char *p = line;
    for (;;) {
        p += strspn(p, " \t\r\n");
        if (!*p)
            break;
        char *tok = p, *eq = NULL;
        while (*p && !strchr(" \t\r\n", *p)) {
            if (*p == '=' && !eq) {
                eq = p;
                if (p[1] == '"') {
                    char *close = strchr(p + 2, '"');
                    if (close) {
                        memmove(p + 1, p + 2, (size_t)(close - p - 2));
                        close[-1] = '\0';
                        p = close + 1;
                        break;
                    }
                }
            }
            p++;
        }
        if (*p)
            *p++ = '\0';
        if (eq && kv->n < 32) {
            *eq = '\0';
            kv->key[kv->n] = tok;
            kv->val[kv->n++] = eq + 1;
        } else if (!eq && kv->n_pos < 32) {
            kv->pos[kv->n_pos++] = tok;
        }
    }
}

const char *scn_kv_get(const struct scn_kv *kv, const char *key)
{
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->key[i], key) == 0)
            return kv->val[i];
    return NULL;
}

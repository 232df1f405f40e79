/* Listening-socket tables per network namespace, for the roles of pre-existing connections. */
#include "listenroles.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "socket.h"

#define MAX_NS 64

struct ns_listen {
    uint32_t netns;
    bool ok;
    size_t n;
    uint16_t ports[1024];
};

/* Adds the local ports of LISTEN (state 0A) rows of one /proc/net/tcp{,6} file. */
static bool read_table(const char *path, struct ns_listen *t)
{
    FILE *f = fopen(path, "re");
    char line[512];
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        char local[128], remote[128];
        unsigned st;
        if (sscanf(line, " %*u: %127s %127s %x", local, remote, &st) != 3 || st != 0x0A)
            continue;
        char *colon = strrchr(local, ':');
        if (!colon || t->n >= sizeof(t->ports) / sizeof(t->ports[0]))
            continue;
        t->ports[t->n++] = (uint16_t)strtoul(colon + 1, NULL, 16);
    }
    fclose(f);
    return true;
}

void listenroles_fill(struct flowset *fs, const char *proc_root)
{
    struct ns_listen *tabs = calloc(MAX_NS, sizeof(*tabs));
    size_t ntabs = 0;
    const char *root = proc_root ? proc_root : "/proc";
    if (!tabs)
        return;
    for (size_t i = 0; i < fs->n; i++) {
        struct flow_rec *r = &fs->v[i];
        if (r->source != FLOW_SRC_SOCKET || r->proto != IPPROTO_TCP || r->role != WL_ROLE_UNKNOWN)
            continue;
        struct ns_listen *t = NULL;
        for (size_t j = 0; j < ntabs; j++)
            if (tabs[j].netns == r->netns && tabs[j].ok)
                t = &tabs[j];
        if (!t && ntabs < MAX_NS) {
            char path[192];
            struct ns_listen *c = &tabs[ntabs];
            memset(c, 0, sizeof(*c));
            c->netns = r->netns;
            snprintf(path, sizeof(path), "%s/%u/net/tcp", root, r->owner.pid);
            bool a = read_table(path, c);
            snprintf(path, sizeof(path), "%s/%u/net/tcp6", root, r->owner.pid);
            bool b = read_table(path, c);
            /* a process that exited, or one in another namespace now, tells us nothing */
            char nspath[192], link[64];
            snprintf(nspath, sizeof(nspath), "%s/%u/ns/net", root, r->owner.pid);
            ssize_t n = readlink(nspath, link, sizeof(link) - 1);
            unsigned ino = 0;
            if (n > 0) {
                link[n] = '\0';
                sscanf(link, "net:[%u]", &ino);
            }
            c->ok = (a || b) && ino == r->netns;
            if (c->ok) {
                t = c;
                ntabs++;
            }
        }
        if (!t)
            continue;
        r->role = WL_ROLE_CLIENT;
        for (size_t p = 0; p < t->n; p++) {
            if (t->ports[p] == r->lport) {
                r->role = WL_ROLE_SERVER;
                break;
            }
        }
    }
    free(tabs);
}

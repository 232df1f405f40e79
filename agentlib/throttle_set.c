/* Rules -> kernel classes, and processes -> rules (see throttle_set.h). */
#include "throttle_set.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowset.h"
#include "log.h"
#include "procmeta.h"
#include "throttle_peers.h"

#define MAX_ALLOW   64
#define PRUNE_SCANS 3

struct applied {
    bool used;
    bool peer; /* the sender side of rule r.id: its class limits peer sockets, no processes */
    struct throttle_rule r;
};

struct mapped {
    uint32_t pid;
    int cls;
};

struct throttle_set {
    struct throttle_probe *tp;
    struct procmeta *pm;
    uint32_t netns_ino;
    uint32_t self;
    struct applied slot[THROTTLE_MAX_CLASSES];
    struct throttle_selector allow[MAX_ALLOW];
    size_t n_allow;
    struct mapped *map; /* processes mapped in the kernel, sorted by pid */
    size_t n_map, cap_map;
    struct throttle_peer *peers; /* the peer sockets in the kernel, with their classes */
    size_t n_peers;
    /* what freed sender-side slots counted, per rule: reports stay cumulative when a rule's
     * connections end (its slot goes) and new ones come (a fresh slot) */
    struct {
        int64_t id;
        struct throttle_counts c;
    } retired[THROTTLE_MAX_CLASSES];
    size_t n_retired;
};

static const char *const sel_names[] = {"workflow", "user", "program", "container"};

int throttle_sel_parse(const char *s, enum throttle_sel *out)
{
    for (size_t i = 0; i < sizeof(sel_names) / sizeof(sel_names[0]); i++)
        if (strcmp(s, sel_names[i]) == 0) {
            *out = (enum throttle_sel)i;
            return 0;
        }
    return -1;
}

const char *throttle_sel_name(enum throttle_sel k)
{
    return (unsigned)k < 4 ? sel_names[k] : "?";
}

struct throttle_set *throttle_set_new(struct throttle_probe *tp, const char *const *workflow_env,
                                      size_t n_env, uint32_t netns_ino, char *err, size_t errlen)
{
    struct throttle_set *ts = calloc(1, sizeof(*ts));
    if (!ts) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ts->pm = procmeta_new(workflow_env, n_env, NULL, NULL, err, errlen);
    if (!ts->pm) {
        free(ts);
        return NULL;
    }
    ts->tp = tp;
    ts->netns_ino = netns_ino;
    ts->self = (uint32_t)getpid();
    return ts;
}

void throttle_set_free(struct throttle_set *ts)
{
    if (!ts)
        return;
    throttle_set_clear(ts);
    procmeta_free(ts->pm);
    free(ts->map);
    free(ts->peers);
    free(ts);
}

static bool sel_matches(const struct throttle_selector *s, const struct flow_meta *m,
                        const char *comm)
{
    const char *have = s->kind == THROTTLE_SEL_WORKFLOW    ? m->workflow
                       : s->kind == THROTTLE_SEL_USER      ? m->user
                       : s->kind == THROTTLE_SEL_PROGRAM   ? comm
                       : s->kind == THROTTLE_SEL_CONTAINER ? m->container
                                                           : "";
    return have[0] && strcmp(have, s->value) == 0;
}

static bool in_netns(const struct throttle_set *ts, uint32_t pid)
{
    if (!ts->netns_ino)
        return true;
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
    return stat(path, &st) == 0 && (uint32_t)st.st_ino == ts->netns_ino;
}

/* The class of a live process: the slowest matching rule; -1 for none, allow-listed or gone. */
static int class_of(struct throttle_set *ts, uint32_t pid)
{
    const struct flow_meta *m;
    char comm[32];
    if (pid == ts->self || !in_netns(ts, pid) ||
        procmeta_live(ts->pm, pid, &m, comm, sizeof(comm)) != 0)
        return -1;
    for (size_t i = 0; i < ts->n_allow; i++)
        if (sel_matches(&ts->allow[i], m, comm))
            return -1;
    int best = -1;
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++) {
        const struct applied *a = &ts->slot[c];
        if (a->used && !a->peer && sel_matches(&a->r.sel, m, comm) &&
            (best < 0 || a->r.rate_bps < ts->slot[best].r.rate_bps))
            best = c;
    }
    return best;
}

static int cmp_mapped(const void *a, const void *b)
{
    uint32_t x = ((const struct mapped *)a)->pid, y = ((const struct mapped *)b)->pid;
    return x < y ? -1 : x > y;
}

static struct mapped *find_mapped(struct throttle_set *ts, uint32_t pid)
{
    struct mapped key = {.pid = pid};
    return ts->n_map ? bsearch(&key, ts->map, ts->n_map, sizeof(key), cmp_mapped) : NULL;
}

static unsigned active_count(const struct throttle_set *ts)
{
    unsigned n = 0;
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++)
        n += ts->slot[c].used;
    return n;
}

void throttle_set_rescan(struct throttle_set *ts)
{
    struct mapped *next = NULL;
    size_t n = 0, cap = 0;
    if (active_count(ts)) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char *end;
            unsigned long pid = strtoul(de->d_name, &end, 10);
            if (*end || pid == 0 || pid > UINT32_MAX)
                continue;
            int cls = class_of(ts, (uint32_t)pid);
            if (cls < 0)
                continue;
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                struct mapped *g = realloc(next, nc * sizeof(*g));
                if (!g)
                    break;
                next = g;
                cap = nc;
            }
            next[n++] = (struct mapped){.pid = (uint32_t)pid, .cls = cls};
        }
        if (d)
            closedir(d);
        if (n)
            qsort(next, n, sizeof(*next), cmp_mapped);
    }
    /* kernel: drop the ones gone, set the new and changed */
    size_t i = 0, j = 0;
    while (i < ts->n_map || j < n) {
        if (j == n || (i < ts->n_map && ts->map[i].pid < next[j].pid)) {
            if (throttle_probe_map_tgid(ts->tp, ts->map[i].pid, -1) != 0)
                log_warn("throttle", "cannot unmap pid %u", ts->map[i].pid);
            throttle_probe_forget(ts->tp, ts->map[i].pid);
            i++;
        } else {
            bool same = i < ts->n_map && ts->map[i].pid == next[j].pid;
            if ((!same || ts->map[i].cls != next[j].cls) &&
                throttle_probe_map_tgid(ts->tp, next[j].pid, next[j].cls) != 0)
                log_warn("throttle", "cannot map pid %u (%u processes mapped)", next[j].pid,
                         (unsigned)n);
            i += same;
            j++;
        }
    }
    free(ts->map);
    ts->map = next;
    ts->n_map = n;
    ts->cap_map = cap;
    throttle_probe_commit(ts->tp);
    struct flowset none = {0};
    procmeta_join(ts->pm, &none); /* one scan = one "window" for pruning */
    procmeta_prune(ts->pm, PRUNE_SCANS);
}

static void on_tgid(uint32_t tgid, void *arg)
{
    struct throttle_set *ts = arg;
    if (find_mapped(ts, tgid))
        return;
    int cls = class_of(ts, tgid);
    if (cls < 0)
        return;
    if (ts->n_map == ts->cap_map) {
        size_t nc = ts->cap_map ? ts->cap_map * 2 : 64;
        struct mapped *g = realloc(ts->map, nc * sizeof(*g));
        if (!g)
            return;
        ts->map = g;
        ts->cap_map = nc;
    }
    if (throttle_probe_map_tgid(ts->tp, tgid, cls) != 0)
        return;
    ts->map[ts->n_map++] = (struct mapped){.pid = tgid, .cls = cls};
    qsort(ts->map, ts->n_map, sizeof(*ts->map), cmp_mapped);
    throttle_probe_commit(ts->tp);
    log_debug("throttle", "pid %u -> rule %lld", tgid, (long long)ts->slot[cls].r.id);
}

void throttle_set_on_events(struct throttle_set *ts)
{
    throttle_probe_events(ts->tp, on_tgid, ts);
}

static bool same_scope(const struct throttle_rule *a, const struct throttle_rule *b)
{
    return a->scoped == b->scoped && a->n_remote == b->n_remote &&
           memcmp(a->remote, b->remote, a->n_remote * sizeof(a->remote[0])) == 0;
}

static void counts_add(struct throttle_counts *a, const struct throttle_counts *b)
{
    a->pass_bytes += b->pass_bytes;
    a->pass_pkts += b->pass_pkts;
    a->mark_pkts += b->mark_pkts;
    a->delay_bytes += b->delay_bytes;
    a->delay_pkts += b->delay_pkts;
    a->drop_bytes += b->drop_bytes;
    a->drop_pkts += b->drop_pkts;
}

/* Keeps what sender-side slot c counted under its rule (the oldest entry goes when full). */
static void retire(struct throttle_set *ts, int c)
{
    struct throttle_counts cnt;
    if (throttle_probe_counts(ts->tp, (unsigned)c, &cnt) != 0)
        return;
    int64_t id = ts->slot[c].r.id;
    for (size_t i = 0; i < ts->n_retired; i++)
        if (ts->retired[i].id == id) {
            counts_add(&ts->retired[i].c, &cnt);
            return;
        }
    if (ts->n_retired == THROTTLE_MAX_CLASSES) {
        memmove(&ts->retired[0], &ts->retired[1],
                (THROTTLE_MAX_CLASSES - 1) * sizeof(ts->retired[0]));
        ts->n_retired--;
    }
    ts->retired[ts->n_retired].id = id;
    ts->retired[ts->n_retired++].c = cnt;
}

static void free_slot(struct throttle_set *ts, int c)
{
    if (ts->slot[c].peer)
        retire(ts, c);
    if (throttle_probe_set_class(ts->tp, (unsigned)c, 0, THROTTLE_OFF, 0) != 0 ||
        throttle_probe_set_scope(ts->tp, (unsigned)c, false, NULL, 0) != 0)
        log_warn("throttle", "cannot turn off class %d", c);
    ts->slot[c].used = false;
    ts->slot[c].peer = false;
}

/* Drops the peer sockets whose class was freed from the kernel's set. */
static void prune_peers(struct throttle_set *ts)
{
    size_t k = 0;
    for (size_t i = 0; i < ts->n_peers; i++) {
        int c = ts->peers[i].cls;
        if (c >= 0 && c < THROTTLE_MAX_CLASSES && ts->slot[c].used && ts->slot[c].peer)
            ts->peers[k++] = ts->peers[i];
    }
    if (k == ts->n_peers)
        return;
    ts->n_peers = k;
    if (throttle_probe_set_peers(ts->tp, ts->peers, k) != 0)
        log_warn("throttle", "cannot write all of the %zu peer sockets", k);
}

size_t throttle_set_apply(struct throttle_set *ts, const struct throttle_rule *rules, size_t n,
                          const struct throttle_selector *allow, size_t n_allow, int64_t now_us)
{
    ts->n_allow = n_allow < MAX_ALLOW ? n_allow : MAX_ALLOW;
    if (ts->n_allow)
        memcpy(ts->allow, allow, ts->n_allow * sizeof(*allow));
    /* remove what is no longer listed (or expired) */
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++) {
        if (!ts->slot[c].used || ts->slot[c].peer)
            continue;
        bool keep = false;
        for (size_t k = 0; k < n && !keep; k++)
            keep = rules[k].id == ts->slot[c].r.id && rules[k].expires_at_us > now_us;
        if (!keep)
            free_slot(ts, c);
    }
    size_t applied = 0;
    for (size_t k = 0; k < n; k++) {
        const struct throttle_rule *r = &rules[k];
        if (r->expires_at_us <= now_us || r->rate_bps == 0)
            continue;
        int c = -1, fresh = 0;
        for (int s = 0; s < THROTTLE_MAX_CLASSES && c < 0; s++)
            if (ts->slot[s].used && !ts->slot[s].peer && ts->slot[s].r.id == r->id)
                c = s;
        for (int s = 0; s < THROTTLE_MAX_CLASSES && c < 0; s++)
            if (!ts->slot[s].used)
                c = s, fresh = 1;
        if (c < 0) {
            log_warn("throttle", "rule %lld not applied: %d rules already", (long long)r->id,
                     THROTTLE_MAX_CLASSES);
            continue;
        }
        struct applied *a = &ts->slot[c];
        /* a new mode is a new measurement: the counters start again */
        int reset = fresh || a->r.mode != r->mode;
        if (fresh || reset || a->r.rate_bps != r->rate_bps) {
            if (throttle_probe_set_class(ts->tp, (unsigned)c, r->rate_bps, r->mode, reset) != 0) {
                log_warn("throttle", "rule %lld: cannot set its class", (long long)r->id);
                if (fresh)
                    continue;
            }
        }
        if ((fresh || !same_scope(&a->r, r)) &&
            throttle_probe_set_scope(ts->tp, (unsigned)c, r->scoped, r->remote, r->n_remote) != 0)
            log_warn("throttle", "rule %lld: cannot set all of its scope", (long long)r->id);
        a->used = true;
        a->r = *r;
        applied++;
    }
    throttle_probe_set_active(ts->tp, active_count(ts));
    throttle_set_rescan(ts);
    return applied;
}

void throttle_set_clear(struct throttle_set *ts)
{
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++)
        if (ts->slot[c].used)
            free_slot(ts, c);
    ts->n_retired = 0;
    prune_peers(ts);
    throttle_probe_set_active(ts->tp, 0);
    throttle_set_rescan(ts);
}

size_t throttle_set_expire(struct throttle_set *ts, int64_t now_us)
{
    size_t n = 0;
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++)
        if (ts->slot[c].used && ts->slot[c].r.expires_at_us <= now_us) {
            log_info("throttle", "rule %lld expired", (long long)ts->slot[c].r.id);
            free_slot(ts, c);
            n++;
        }
    if (n) {
        prune_peers(ts);
        throttle_probe_set_active(ts->tp, active_count(ts));
        throttle_set_rescan(ts);
    }
    return n;
}

size_t throttle_set_peer_sockets(const struct throttle_set *ts)
{
    return ts->n_peers;
}

size_t throttle_set_count(const struct throttle_set *ts)
{
    return active_count(ts);
}

size_t throttle_set_stats(const struct throttle_set *ts, struct throttle_rule_stat *out, size_t max)
{
    size_t n = 0;
    for (int c = 0; c < THROTTLE_MAX_CLASSES && n < max; c++) {
        const struct applied *a = &ts->slot[c];
        if (!a->used)
            continue;
        struct throttle_counts cnt;
        if (throttle_probe_counts(ts->tp, (unsigned)c, &cnt) != 0)
            log_warn("throttle", "rule %lld: cannot read its counters", (long long)a->r.id);
        /* a rule's own class and its sender side (peer class) are one rule to the reconciler */
        struct throttle_rule_stat *s = NULL;
        for (size_t i = 0; i < n && !s; i++)
            if (out[i].id == a->r.id)
                s = &out[i];
        if (!s) {
            s = &out[n++];
            memset(s, 0, sizeof(*s));
            s->id = a->r.id;
            s->mode = a->r.mode;
        }
        if (!a->peer)
            s->rate_bps = a->r.rate_bps;
        for (size_t i = 0; i < ts->n_map; i++)
            s->processes += ts->map[i].cls == c;
        counts_add(&s->c, &cnt);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < ts->n_retired; k++)
            if (ts->retired[k].id == out[i].id)
                counts_add(&out[i].c, &ts->retired[k].c);
    return n;
}

/* The slot of rule id's sender side: its own, else a free one (fresh); -1 when none is left. */
static int peer_slot(struct throttle_set *ts, int64_t id, int *fresh)
{
    *fresh = 0;
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++)
        if (ts->slot[c].used && ts->slot[c].peer && ts->slot[c].r.id == id)
            return c;
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++)
        if (!ts->slot[c].used) {
            *fresh = 1;
            return c;
        }
    return -1;
}

size_t throttle_set_peers(struct throttle_set *ts, const struct throttle_peer_set *ps,
                          int64_t now_us)
{
    for (int c = 0; c < THROTTLE_MAX_CLASSES; c++) {
        if (!ts->slot[c].used || !ts->slot[c].peer)
            continue;
        bool keep = false;
        for (size_t k = 0; k < ps->n && !keep; k++)
            keep = ps->rule[k].id == ts->slot[c].r.id && ps->rule[k].expires_at_us > now_us &&
                   ps->rule[k].n > 0;
        if (!keep)
            free_slot(ts, c);
    }
    struct throttle_peer *next = ps->n_sock ? malloc(ps->n_sock * sizeof(*next)) : NULL;
    size_t n = 0, rules = 0;
    for (size_t k = 0; k < ps->n; k++) {
        const struct throttle_peer_rule *r = &ps->rule[k];
        if (r->expires_at_us <= now_us || r->rate_bps == 0 || r->n == 0 || !next)
            continue;
        int fresh, c = peer_slot(ts, r->id, &fresh);
        if (c < 0) {
            log_warn("throttle", "rule %lld: no class left for its sender side", (long long)r->id);
            continue;
        }
        struct applied *a = &ts->slot[c];
        int reset = fresh || a->r.mode != r->mode;
        if ((reset || a->r.rate_bps != r->rate_bps) &&
            throttle_probe_set_class(ts->tp, (unsigned)c, r->rate_bps, r->mode, reset) != 0) {
            log_warn("throttle", "rule %lld: cannot set its sender-side class", (long long)r->id);
            if (fresh)
                continue;
        }
        if (fresh && throttle_probe_set_scope(ts->tp, (unsigned)c, false, NULL, 0) != 0)
            log_warn("throttle", "rule %lld: cannot clear its sender-side scope", (long long)r->id);
        if (fresh)
            log_info("throttle", "rule %lld: sending side for %zu connections at %llu bit/s",
                     (long long)r->id, r->n, (unsigned long long)r->rate_bps);
        a->used = true;
        a->peer = true;
        memset(&a->r, 0, sizeof(a->r));
        a->r.id = r->id;
        a->r.mode = r->mode;
        a->r.rate_bps = r->rate_bps;
        a->r.expires_at_us = r->expires_at_us;
        for (size_t i = 0; i < r->n && r->first + i < ps->n_sock; i++) {
            next[n] = ps->sock[r->first + i];
            next[n++].cls = c;
        }
        rules++;
    }
    /* a rule neither applied here nor with connections here is gone: so is what it counted */
    size_t kept = 0;
    for (size_t i = 0; i < ts->n_retired; i++) {
        bool live = false;
        for (int c = 0; c < THROTTLE_MAX_CLASSES && !live; c++)
            live = ts->slot[c].used && ts->slot[c].r.id == ts->retired[i].id;
        if (live)
            ts->retired[kept++] = ts->retired[i];
    }
    ts->n_retired = kept;
    free(ts->peers);
    ts->peers = next;
    ts->n_peers = n;
    if (throttle_probe_set_peers(ts->tp, next, n) != 0)
        log_warn("throttle", "cannot write all of the %zu peer sockets", n);
    throttle_probe_set_active(ts->tp, active_count(ts));
    return rules;
}

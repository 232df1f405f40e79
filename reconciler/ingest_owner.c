/* The process behind a flow ("owner"): its members validated, and written into a flow row. A
 * version 1 report carries them in every flow; a version 2 report once per process, in procs[],
 * each flow naming its entry with "proc" (docs/design.md, "Agent report (`/v1/attributions`)"). */
#include "ingest_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int ing_owner_parse(struct vctx *c, const struct jv *const *m, struct loc l, struct ing_owner *o)
{
    memset(o, 0, sizeof *o);
    if (ing_opt_uint(c, m[F_PID - F_PID], ing_at_key(l, "pid"), INT32_MAX, &o->pid, &o->has_pid) <
            0 ||
        ing_opt_uint(c, m[F_UID - F_PID], ing_at_key(l, "uid"), UINT32_MAX, &o->uid, &o->has_uid) <
            0 ||
        ing_want_name(c, m[F_USER - F_PID], ing_at_key(l, "user"), true, &o->user) < 0 ||
        ing_want_name(c, m[F_PROGRAM - F_PID], ing_at_key(l, "program"), true, &o->program) < 0 ||
        ing_want_name(c, m[F_WORKFLOW - F_PID], ing_at_key(l, "workflow"), true, &o->workflow) <
            0 ||
        ing_want_name(c, m[F_CONTAINER - F_PID], ing_at_key(l, "container"), true, &o->container) <
            0 ||
        ing_want_name(c, m[F_NAMESPACE - F_PID], ing_at_key(l, "namespace"), true, &o->kns) < 0 ||
        ing_want_name(c, m[F_POD - F_PID], ing_at_key(l, "pod"), true, &o->kpod) < 0 ||
        ing_want_name(c, m[F_CONTAINER_NAME - F_PID], ing_at_key(l, "container_name"), true,
                      &o->kcont) < 0)
        return -1;
    if (o->has_uid && o->uid > INT32_MAX)
        return ing_bad(c, ing_at_key(l, "uid"), "uid %" PRIu64 " does not fit the uid column",
                       o->uid);
    return 0;
}

int ing_procs_parse(struct vctx *c, const struct jv *procs, struct ing_owner **owners, size_t *n)
{
    struct loc top = {.idx = -1};
    *owners = NULL;
    *n = 0;
    if (!procs || procs->type == JV_NULL)
        return 0; /* a flow's "proc" then names no entry: refused there */
    if (procs->type != JV_ARRAY)
        return ing_bad(c, ing_at_key(top, "procs"), "expected an array of processes, got %s",
                       jv_type_name(procs));
    if (procs->n == 0)
        return 0;
    struct ing_owner *o = calloc(procs->n, sizeof *o);
    if (!o)
        return ing_oom(c);
    long i = 0;
    for (const struct jv *p = procs->child; p; p = p->next, i++) {
        struct loc l = {.arr = "procs", .idx = i};
        const struct jv *m[F_OWNER_N] = {0};
        if (ing_want_object(c, p, l) < 0) {
            free(o);
            return -1;
        }
        for (const struct jv *k = p->child; k; k = k->next) {
            int slot = ing_flow_slot(k); /* anything else (ppid, exe, cgroup, ...) is ignored */
            if (slot >= F_PID && slot <= F_CONTAINER_NAME)
                m[slot - F_PID] = k;
        }
        if (ing_owner_parse(c, m, l, &o[i]) < 0) {
            free(o);
            return -1;
        }
    }
    *owners = o;
    *n = (size_t)i;
    return 0;
}

void ing_owner_row(struct flow_row *row, const struct ing_owner *o)
{
    if (o->has_pid)
        flow_row_int(row, FR_PID, o->pid);
    if (o->has_uid)
        flow_row_int(row, FR_UID, o->uid);
    const struct jv *names[] = {o->user, o->program, o->workflow, o->container};
    for (int k = 0; k < 4; k++)
        if (names[k] && names[k]->type == JV_STRING)
            ing_row_jtext(row, FR_USER_NAME + k, names[k]);
    const struct jv *kube[] = {o->kns, o->kpod, o->kcont}; /* '' outside pods: the owner's key */
    for (int k = 0; k < 3; k++)
        if (kube[k] && kube[k]->type == JV_STRING)
            ing_row_jtext(row, FR_NAMESPACE + k, kube[k]);
        else
            flow_row_text_plain(row, FR_NAMESPACE + k, "", 0);
}

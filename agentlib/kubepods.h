/* Kubernetes identity of a pod cgroup from what the node holds: the kubelet's pod log
 * directories, <root>/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log, and the CRI
 * symlinks <root>/containers/<pod>_<namespace>_<container>-<container id>.log pointing into them
 * (kubernetes pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory /
 * BuildContainerLogsDirectory / buildContainerLogsPath, and kuberuntime_container.go
 * legacyLogSymlink / logSymlink). A pod uid (from the cgroup path) gives namespace and pod; a
 * container id gives the container name, or, without a symlink, the pod's only container.
 * Directory listings are cached: rescanned every KUBEPODS_REFRESH_S, and on a miss at most once
 * per KUBEPODS_MISS_S. */
#ifndef WL_KUBEPODS_H
#define WL_KUBEPODS_H

#include <stdbool.h>
#include <stddef.h>

#define KUBEPODS_REFRESH_S 30
#define KUBEPODS_MISS_S    2
#define KUBEPODS_MAX_PODS  1024 /* kubelet's max-pods is 110 by default */
#define KUBEPODS_MAX_CTRS  4096

struct kubepods;

struct kube_identity {
    char namespace_[64]; /* DNS-1123 label, at most 63 */
    char pod[254];       /* DNS-1123 subdomain, at most 253 */
    char container[64];  /* "" when the pod has several containers and no symlink names it */
};

/* log_root: the directory holding pods/ and containers/ (NULL: "/var/log"). Never fails on a
 * missing directory (a node without pods): lookups then find nothing. NULL only when out of
 * memory. */
struct kubepods *kubepods_new(const char *log_root);
void kubepods_free(struct kubepods *k);

/* Identity of the pod with this uid ("1b2c...-..."), the container with this 64-hex id (may be
 * "" or NULL). Returns true and fills *out when the pod is known. */
bool kubepods_lookup(struct kubepods *k, const char *pod_uid, const char *container_id,
                     struct kube_identity *out);

/* Rereads the directories now (tests; lookups do it when due). */
void kubepods_rescan(struct kubepods *k);

#endif

/* Who owns a flow: user name, program, cgroup (container, Kubernetes pod, systemd unit, Slurm
 * job) and workflow, joined from /proc and the cgroup tree and cached per (pid, start time) so
 * pid reuse never mislabels. A process that already exited keeps what the kernel recorded (comm,
 * uid, cgroup id) and inherits its parent's workflow. */
#ifndef WL_PROCMETA_H
#define WL_PROCMETA_H

#include <stddef.h>

#include "flowset.h"

struct procmeta;

/* Where cgroup v2 is mounted ("/sys/fs/cgroup", or "/sys/fs/cgroup/unified" on hybrid hosts), from
 * /proc/self/mountinfo. Returns 0, or -1 when there is no cgroup2 mount. */
int procmeta_cgroup2_root(char *out, size_t outlen) __attribute__((warn_unused_result));

/* workflow_env: environment variable names tried in order (e.g. WANLEDGER_WORKFLOW,
 * SLURM_JOB_ID); proc_root defaults to "/proc", cgroup_root to procmeta_cgroup2_root(). */
struct procmeta *procmeta_new(const char *const *workflow_env, size_t n_env, const char *proc_root,
                              const char *cgroup_root, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void procmeta_free(struct procmeta *pm);

/* Where the kubelet's pod log directories are (the directory holding pods/ and containers/;
 * default "/var/log"); pod namespace, name and container name come from there (kubepods.h). */
int procmeta_set_kube_logs(struct procmeta *pm, const char *log_root)
    __attribute__((warn_unused_result));

/* Points every record's meta at its cached owner metadata (resolving new processes now). */
void procmeta_join(struct procmeta *pm, struct flowset *fs);
/* The same for another flowset of the window just joined (not counted as a window by prune). */
void procmeta_join_more(struct procmeta *pm, struct flowset *fs);

/* The owner of a live process (the throttle's lookup): its cached metadata (resolved now when new
 * or after an exec) and its current comm. 0, or -1 when pid is gone. */
int procmeta_live(struct procmeta *pm, uint32_t pid, const struct flow_meta **m, char *comm,
                  size_t commlen) __attribute__((warn_unused_result));

/* Forgets processes not seen in the last `windows` joins; invalidates meta pointers of older
 * flowsets. */
void procmeta_prune(struct procmeta *pm, unsigned windows);

/* Derives container id, pod uid, systemd unit and Slurm job from a cgroup path such as
 * "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c_..slice/cri-containerd-
 * <64 hex>.scope" or "/system.slice/slurmstepd.scope/job_42/step_0". Fills only those fields. */
void procmeta_parse_cgroup(const char *path, struct flow_meta *m);

#endif

/* From saturation alert to throttle proposal (issue 12). Every pass of the reconcile loop: each
 * open saturation alert without a rule since it opened gets proposals for the top workflows on
 * its link in its last saturated window (workflows without a live rule: one rule at a time per
 * workflow), capped at the max-min fair share that brings the link back under the saturation
 * threshold (never below $.throttle.floor_bps; a workflow's demand is the larger of its rate
 * then and in the window before the saturation began, since a full link squeezes the others
 * below what they ask for; what no workflow in the list sent is a fixed load), as dry_run
 * proposals waiting for approval — or enforced at once for $.throttle.auto_enforce_workflows. A
 * rule from an alert is revoked automatically (wrong target) when the alert stays open for
 * wrong_target_windows windows after the rule while its workflow's share of the pair's bytes is
 * below wrong_target_share. */
#ifndef WL_THROTTLE_PROPOSE_H
#define WL_THROTTLE_PROPOSE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "config.h"

/* The max-min fair level L for demands rates[0..n) (any order) sharing budget: the workflows
 * above L are capped at L and sum(min(rate, L)) <= budget. Never below floor. Returns -1 when
 * every demand fits (nothing to cap). */
double thr_maxmin_level(const double *rates, size_t n, double budget, double floor);

/* Appends " Throttle rule ID: KIND VALUE at R Mbit/s (mode, approval)." to buf for each rule
 * (at most 4) proposed for the saturation of src->dst since the window `since` (RFC 3339): the
 * alert's summary names its proposals. Nothing when they cannot be read. */
void thr_propose_note(PGconn *db, const char *src, const char *dst, const char *since, char *buf,
                      size_t len);

/* One pass: proposals for new alerts, wrong-target revocations. Returns the number of rules
 * created, or -1 with err. */
int thr_propose_run(PGconn *db, const struct cfg *cfg, char *err, size_t errlen);

#endif

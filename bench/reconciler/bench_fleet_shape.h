/* The fleet the fleet benchmarks reconcile (bench_fleet: through PostgreSQL and ClickHouse;
 * bench_recon_run: recon_run alone): 500 sites, site i with circuits to i+1..i+10 (5,000), and
 * report r of a window from the agent of site r % 500 (host r / 500), 1,000 socket flows each:
 * 10/12 to the site's neighbours, 2/12 two hops or more. One definition of both for the two. */
#ifndef WL_BENCH_FLEET_SHAPE_H
#define WL_BENCH_FLEET_SHAPE_H

#include "bench_util.h"

#define N_SITES          500
#define N_NEIGHBOURS     10 /* circuits per site: 500 x 10 = 5,000 */
#define FLOWS_PER_REPORT 1000

/* The configuration (JSON) with this database and listen port. */
void fleet_config(struct str *s, const char *conninfo, int port);

/* Flow k of report r: local 10.A.B.C:lport, remote 10.D.E.F:5201, the owner's indexes. */
struct fleet_flow {
    int src, host, dst;
    int local[3], remote[3];
    int local_port;
    long long tx, rx;
    int pid, uid, user, program, workflow;
};
void fleet_flow(int r, int k, struct fleet_flow *f);

#endif

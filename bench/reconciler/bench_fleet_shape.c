/* The fleet benchmarks' sites, circuits and flows (bench_fleet_shape.h). */
#include "bench_fleet_shape.h"

void fleet_config(struct str *s, const char *conninfo, int port)
{
    sadd(s,
         "{\"window_seconds\": 60, \"grace_seconds\": 90, \"tick_seconds\": 3600,\n"
         " \"database\": \"%s\", \"listen\": \"127.0.0.1:%d\", \"tokens_file\": \"tokens.json\",\n"
         " \"limits\": {\"max_body_bytes\": 67108864},\n \"sites\": [",
         conninfo, port);
    for (int i = 0; i < N_SITES; i++)
        sadd(s, "%s{\"name\": \"s%03d\", \"prefixes\": [\"10.%d.%d.0/24\"]}", i ? ", " : "", i,
             1 + i / 200, i % 200);
    sadd(s, "],\n \"devices\": [");
    for (int i = 0; i < N_SITES; i++)
        sadd(s, "%s{\"name\": \"r%03d\", \"site\": \"s%03d\", \"gnmi\": {}}", i ? ", " : "", i, i);
    sadd(s, "],\n \"links\": [");
    for (int i = 0; i < N_SITES; i++)
        for (int d = 1; d <= N_NEIGHBOURS; d++) {
            int j = (i + d) % N_SITES;
            sadd(s,
                 "%s{\"device\": \"r%03d\", \"interface\": \"to-s%03d\", \"site\": \"s%03d\","
                 " \"peer_site\": \"s%03d\", \"circuit\": \"c%03d-%03d\","
                 " \"capacity_bps\": 100000000000}\n",
                 i || d > 1 ? ", " : "", i, j, i, j, i, j);
        }
    sadd(s, "]}\n");
}

void fleet_flow(int r, int k, struct fleet_flow *f)
{
    int src = r % N_SITES, host = r / N_SITES, j = k % 12;
    int dst = j < N_NEIGHBOURS ? (src + 1 + j) % N_SITES
                               : (src + 2 * N_NEIGHBOURS + (k / 12) % 200) % N_SITES;
    long long tx = 100000 + ((long long)r * 7919 + (long long)k * 104729) % 900000;
    *f = (struct fleet_flow){.src = src,
                             .host = host,
                             .dst = dst,
                             .local = {1 + src / 200, src % 200, 1 + host % 250},
                             .remote = {1 + dst / 200, dst % 200, 1 + k % 250},
                             .local_port = 10000 + k,
                             .tx = tx,
                             .rx = tx / 50,
                             .pid = 1000 + k % 97,
                             .uid = 1000 + (k / 12) % 4,
                             .user = (k / 12) % 4,
                             .program = (k / 12) % 2,
                             .workflow = src * 3 + (k / 12) % 3};
}

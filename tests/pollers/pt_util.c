/* Poller test helpers (see pt_util.h). */
#include "pt_util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "timeutil.h"

static void add(struct pt_samples *s, const struct pt_sample *x)
{
    s->v = realloc(s->v, (s->n + 1) * sizeof(*s->v));
    s->v[s->n++] = *x;
}

static uint64_t num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
}

int pt_parse_batch(const char *body, size_t len, struct pt_samples *out)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "samples");
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        struct pt_sample s = {0};
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "device");
        const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, "interface");
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "at");
        snprintf(s.device, sizeof(s.device), "%s", cJSON_IsString(d) ? d->valuestring : "");
        snprintf(s.interface, sizeof(s.interface), "%s", cJSON_IsString(i) ? i->valuestring : "");
        if (!cJSON_IsString(at) || tm_parse_rfc3339(at->valuestring, &s.at_us) != 0)
            s.at_us = 0;
        s.uptime_cs =
            cJSON_GetObjectItemCaseSensitive(o, "uptime_cs") ? (int64_t)num(o, "uptime_cs") : -1;
        s.in_octets = num(o, "in_octets");
        s.out_octets = num(o, "out_octets");
        s.in_pkts = num(o, "in_pkts");
        s.out_pkts = num(o, "out_pkts");
        s.speed_bps = num(o, "speed_bps");
        s.counter_bits = (int)num(o, "counter_bits");
        s.discontinuity_cs = (int64_t)num(o, "discontinuity_cs");
        add(out, &s);
    }
    cJSON_Delete(root);
    return 1;
}

int pt_parse_batches(const char *text, struct pt_samples *out)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0) {
            if (pt_parse_batch(p, len, out) < 0)
                return -1;
            n++;
        }
        p += len + (nl ? 1 : 0);
    }
    return n;
}

void pt_samples_free(struct pt_samples *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void pt_filter(const struct pt_samples *all, const char *device, const char *interface,
               struct pt_samples *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < all->n; i++)
        if (strcmp(all->v[i].device, device) == 0 && strcmp(all->v[i].interface, interface) == 0)
            add(out, &all->v[i]);
}

char *pt_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return calloc(1, 1);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        buf[0] = '\0';
    fclose(f);
    return buf;
}

void pt_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fchmod(fileno(f), 0600); /* secret files (tokens, communities) must not be group-readable */
    fputs(text, f);
    fclose(f);
}

int pt_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

int pt_snmpd_start(const char *dir, const char *ns, int port)
{
    th_sh("rm -f %s/snmpd.pid", dir);
    if (th_sh("MIBS= SNMP_PERSISTENT_DIR=%s/persist ip netns exec %s snmpd -C -c %s/snmpd.conf "
              "-p %s/snmpd.pid -Lf %s/snmpd.log -I -smux",
              dir, ns, dir, dir, dir) != 0)
        return -1;
    for (int i = 0; i < 100; i++) {
        if (th_sh("MIBS= ip netns exec %s snmpget -v2c -c public -t 0.2 -r 0 127.0.0.1:%d "
                  "1.3.6.1.2.1.1.3.0 >/dev/null 2>&1",
                  ns, port) == 0)
            return 0;
        usleep(50000);
    }
    return -1;
}

void pt_snmpd_kill(const char *dir, int sig)
{
    th_sh("[ -f %s/snmpd.pid ] && kill -%d $(cat %s/snmpd.pid); sleep 0.3", dir, sig, dir);
}

static struct sockaddr_in loopback(int port)
{
    return (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

int pt_connect_tcp(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback(port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

int pt_send_all(int fd, const char *s)
{
    size_t n = strlen(s);
    return write(fd, s, n) == (ssize_t)n ? 0 : -1;
}

int pt_send_udp(int port, const char *s)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = loopback(port);
    ssize_t n = fd >= 0 ? sendto(fd, s, strlen(s), 0, (struct sockaddr *)&a, sizeof(a)) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Internal to the configuration parser (common/cfg_*.c); not installed, not for other modules:
 * they use config.h. The typed-member readers report a wrong or missing value with its JSON path
 * ("$.links[2].peer_site") into the error list and return the default, so one pass over a file
 * collects every error. */
#ifndef WL_CFG_INTERNAL_H
#define WL_CFG_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The state of one parse. */
struct cfg_pctx {
    const char *file;
    char *dir; /* directory of file, for relative secret paths */
    struct cfg_errors *errs;
    struct cfg *cfg;
};

/* Appends one error (jpath, printf-style message). */
__attribute__((format(printf, 3, 4))) void cfg_err(struct cfg_pctx *c, const char *jpath,
                                                   const char *fmt, ...);

/* Builds "base.key" / "base[i]" paths into a caller buffer; returns buf. */
const char *cfg_jp_key(char *buf, size_t len, const char *base, const char *key);
const char *cfg_jp_idx(char *buf, size_t len, const char *base, int i);
/* "a string", "an array", ... for messages; "nothing" for NULL. */
const char *cfg_type_name(const cJSON *v);

/* Reports keys of obj that are not in allowed (NULL-terminated) and duplicate keys. */
void cfg_check_keys(struct cfg_pctx *c, const cJSON *obj, const char *path,
                    const char *const *allowed);

/* Member readers: obj.key under path. A missing optional member gives def (strings: strdup'd). */
char *cfg_get_str(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                  int required, const char *def);
/* A number in [lo, hi]; integer != 0 also requires an integral value. */
double cfg_get_num(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                   double lo, double hi, double def, int integer);
int cfg_get_bool(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path, int def);
/* An object / array member, or NULL (absent, or the wrong type: reported). */
const cJSON *cfg_get_obj(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                         int required);
const cJSON *cfg_get_arr(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                         int required);
/* Array (may be NULL) of non-empty strings / of port numbers; *n set. */
char **cfg_get_str_list(struct cfg_pctx *c, const cJSON *arr, const char *path, size_t *n);
uint16_t *cfg_get_port_list(struct cfg_pctx *c, const cJSON *arr, const char *path, size_t *n);

/* p relative to the configuration file's directory (absolute paths unchanged). malloc'd. */
char *cfg_resolve_path(struct cfg_pctx *c, const char *p);
/* Reads the secret file named by obj.key (path relative to the config file); NULL if absent or
 * unreadable (reported). *file_out (if given) gets the resolved file name. */
char *cfg_load_secret(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                      char **file_out);
int cfg_valid_hostport(const char *s);
int cfg_valid_http_url(const char *s);

/* 1 if a link joins sites a and b (either direction). */
int cfg_sites_linked(const struct cfg *cfg, int a, int b);

/* The larger section parsers, one file each (cfg_<section>.c), given the section's member once
 * cfg_parse.c's table has checked its type; the table's entry sets the defaults. */
void cfg_parse_tokens(struct cfg_pctx *c); /* after $.tokens_file is read */
void cfg_parse_sites(struct cfg_pctx *c, const cJSON *arr);
void cfg_parse_devices(struct cfg_pctx *c, const cJSON *arr);
void cfg_parse_links(struct cfg_pctx *c, const cJSON *arr);
void cfg_parse_routes(struct cfg_pctx *c, const cJSON *arr);
void cfg_parse_dedup(struct cfg_pctx *c, const cJSON *obj);
void cfg_parse_retention(struct cfg_pctx *c, const cJSON *root); /* $.retention (optional) */
/* cfg_server.c: $.server, and the hardening members of $.limits (li may be NULL: defaults). */
void cfg_parse_server(struct cfg_pctx *c, const cJSON *root);
void cfg_parse_limits_hardening(struct cfg_pctx *c, const cJSON *li);
void cfg_dump_server(const struct cfg *cfg, cJSON *root, cJSON *limits);
void cfg_free_server(struct cfg *cfg);
void cfg_parse_endpoints(struct cfg_pctx *c, const cJSON *arr);
void cfg_free_endpoints(struct cfg *cfg);
/* A device's "flows" object at path p (cfg_flows.c). */
void cfg_parse_device_flows(struct cfg_pctx *c, const cJSON *o, const char *p,
                            struct cfg_flows *fl);
void cfg_parse_delivery(struct cfg_pctx *c, const cJSON *obj); /* NULL obj: defaults */
void cfg_free_delivery(struct cfg_delivery *d);
void cfg_parse_throttle(struct cfg_pctx *c, const cJSON *root);  /* $.throttle, may be absent */
void cfg_parse_analytics(struct cfg_pctx *c, const cJSON *root); /* $.analytics, may be absent */
void cfg_free_analytics(struct cfg *cfg);
void cfg_dump_analytics(const struct cfg *cfg, cJSON *root);

#endif

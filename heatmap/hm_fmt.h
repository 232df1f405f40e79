/* Figures for people: byte volumes and rates with SI units, percentages, durations and UTC
 * times. Every function writes into the caller's buffer and returns it. */
#ifndef WL_HM_FMT_H
#define WL_HM_FMT_H

#include <stddef.h>
#include <stdint.h>

#define HM_FMT_LEN 48

/* 3 significant digits, decimal units: "950 B", "12.4 kB", "1.23 GB", "-3.10 MB". */
char *hm_fmt_bytes(int64_t bytes, char buf[HM_FMT_LEN]);
/* Bits per second, decimal units: "1.65 Gbit/s". */
char *hm_fmt_bps(double bps, char buf[HM_FMT_LEN]);
/* ratio 0.873 -> "87.3 %"; NAN -> "n/a". */
char *hm_fmt_pct(double ratio, char buf[HM_FMT_LEN]);
/* Seconds -> "45 s", "12 min", "3 h 10 min", "2 d 4 h". */
char *hm_fmt_duration(int64_t seconds, char buf[HM_FMT_LEN]);
/* us -> "2026-11-29 18:53 UTC" (seconds shown only when not zero). */
char *hm_fmt_time(int64_t us, char buf[HM_FMT_LEN]);
/* us -> "18:53" (UTC, hour and minute). */
char *hm_fmt_hhmm(int64_t us, char buf[HM_FMT_LEN]);
/* us -> "2026-11-29T18:53:00Z" (for URLs and machine-readable attributes). */
char *hm_fmt_rfc3339(int64_t us, char buf[HM_FMT_LEN]);

#endif

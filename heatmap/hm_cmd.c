/* Placeholder until the component lands: each subcommand reports that it is missing. */
#include "hm_cmd.h"

#include <stdio.h>

int hm_cmd_heatmap(const struct cfg *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    fprintf(stderr, "wanledger %s: not built yet\n", argv[0]);
    return 1;
}

int hm_cmd_report(const struct cfg *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    fprintf(stderr, "wanledger %s: not built yet\n", argv[0]);
    return 1;
}

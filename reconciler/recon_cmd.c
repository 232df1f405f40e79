/* Placeholder until the component lands: each subcommand reports that it is missing. */
#include "recon_cmd.h"

#include <stdio.h>

int recon_cmd_reconcile(const struct cfg *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    fprintf(stderr, "wanledger %s: not built yet\n", argv[0]);
    return 1;
}

int recon_cmd_top(const struct cfg *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    fprintf(stderr, "wanledger %s: not built yet\n", argv[0]);
    return 1;
}

int recon_cmd_alerts(const struct cfg *cfg, int argc, char **argv)
{
    (void)cfg;
    (void)argc;
    fprintf(stderr, "wanledger %s: not built yet\n", argv[0]);
    return 1;
}

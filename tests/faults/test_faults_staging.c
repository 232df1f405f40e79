/* After a rolled-back counters transaction every later batch is stored: a test-only CHECK
 * constraint makes batches naming interface "poison" fail inside the transaction that also
 * created the worker's temporary staging tables (ROLLBACK drops them); 20 good batches sent
 * afterwards, to whichever of the reconciler's workers, must all be answered 200 and stored.
 * Before the fix a worker kept believing its staging tables existed, and every batch it took
 * after the failure failed with "relation wl_counter_in does not exist". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

static struct fx F;

static int post_counters(const char *iface, int64_t at)
{
    char *body = fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":["
                        "{\"device\":\"nyc-border-1\",\"interface\":\"%s\",\"at\":\"%s\","
                        "\"in_octets\":%lld,\"out_octets\":1}]}",
                        iface, fx_ts(at), (long long)(at / 1000000));
    char *resp = NULL;
    int st = fx_http(&F, "POST", "/v1/counters", FX_TOKEN_POLLER, NULL, body, strlen(body), &resp);
    if (st != 200)
        fprintf(stderr, "POST /v1/counters (%s) -> %d %s", iface, st, resp ? resp : "\n");
    free(resp);
    free(body);
    return st;
}

static void test_batches_after_a_rollback(void **state)
{
    (void)state;
    fx_setup(&F, "faults-staging", "");
    PGresult *r = PQexec(F.db, "ALTER TABLE counter_samples ADD CONSTRAINT wl_test_poison"
                               " CHECK (interface <> 'poison')");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    fx_start(&F);
    int64_t base = fx_window_ago(30, 60);
    /* fresh workers: the first batch of each creates its staging tables in the transaction */
    int failed = 0;
    for (int i = 0; i < 6; i++)
        failed += post_counters("poison", base + (int64_t)i * TM_USEC_PER_SEC) != 200;
    assert_int_equal(failed, 6);
    int ok = 0;
    for (int i = 0; i < 20; i++)
        ok += post_counters("et-0/0/1", base + (int64_t)(10 + i) * TM_USEC_PER_SEC) == 200;
    printf("after 6 rolled-back batches: %d of 20 good batches stored\n", ok);
    assert_int_equal(ok, 20);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM counter_samples"), 20);
    fx_stop(&F);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_after_a_rollback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Status strings are complete and distinct; the RNG is deterministic and its state round-trips. */
#include <stdlib.h>

#include "common/st.h"
#include "tests/check.h"

int main(void)
{
    st_global_init();
    for (int s = 0; s <= ST_ENETWORK; s++) {
        CHECK(strcmp(st_strerror((st_status)s), "unknown status") != 0);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(st_strerror((st_status)s), st_strerror((st_status)t)) != 0);
    }
    CHECK(strcmp(st_strerror((st_status)9999), "unknown status") == 0);

    st_rng *a, *b;
    CHECK_ST(st_rng_create(42, &a), ST_OK);
    CHECK_ST(st_rng_create(42, &b), ST_OK);
    for (int i = 0; i < 10; i++)
        CHECK(st_rng_gaussian(a) == st_rng_gaussian(b));
    size_t sz = st_rng_state_size(a);
    void *buf = malloc(sz);
    st_rng_state_get(a, buf);
    double want = st_rng_uniform(a);
    CHECK_ST(st_rng_state_set(b, buf, sz), ST_OK);
    CHECK(st_rng_uniform(b) == want);
    CHECK_ST(st_rng_state_set(b, buf, sz - 1), ST_EFORMAT);
    /* uniform_pos never returns 0; uniform_int stays below n */
    int ok = 1;
    for (int i = 0; i < 10000; i++)
        ok &= st_rng_uniform_pos(a) > 0 && st_rng_uniform_int(a, 7) < 7;
    CHECK(ok);
    free(buf);
    st_rng_destroy(a);
    st_rng_destroy(b);
    st_rng_destroy(NULL);
    st_global_cleanup();
    return check_summary("common.status");
}

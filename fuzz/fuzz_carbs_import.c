/*
 * libFuzzer target for carbs_import(): optimizer state bytes come from files and stores, so any
 * input must give ST_OK or an error status, never a crash; a state that imports must suggest.
 */
#include <stddef.h>
#include <stdint.h>

#include "carbs/carbs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    carbs *c = NULL;
    char msg[ST_ERRMSG_MAX];
    if (carbs_import(data, size, &c, msg) == ST_OK) {
        double x[64];
        uint64_t id;
        if (carbs_dim(c) <= 64)
            carbs_suggest(c, x, &id);
        carbs_destroy(c);
    }
    return 0;
}

/*
 * libFuzzer target for fit_table_read_csv() (`scaletune fit --data FILE`): any bytes, with the
 * default column mapping and with an explicit one, must give ST_OK or an error status with a
 * message, never a crash; a table that reads must answer its accessors for every row and column.
 * The bytes reach the reader through a memfd (/proc/self/fd/N), as a file would.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fit/fit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const fit_table *t)
{
    size_t rows = fit_table_n_rows(t), cols = fit_table_n_cols(t);
    static const char *const names[] = {"N", "D", "C", "loss", "lr", "nope"};
    for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
        const double *c = fit_table_column(t, names[j]);
        for (size_t i = 0; c && i < rows; i++)
            (void)c[i];
        for (size_t i = 0; i < rows; i++)
            (void)fit_table_text(t, names[j], i);
    }
    for (size_t i = 0; i < rows; i++)
        (void)fit_table_line(t, i);
    (void)cols;
    (void)fit_table_exclusions(t);
}

static void read_one(const char *path, const char *mapping)
{
    fit_table *t = NULL;
    char err[ST_ERRMSG_MAX];
    err[0] = 0;
    if (fit_table_read_csv(path, mapping, &t, err) == ST_OK) {
        exercise(t);
        fit_table_exclude_top_loss(t, 1);
        fit_table_destroy(t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("csv", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        read_one(path, NULL);
        read_one(path, "N=params,D=tokens,loss=val_loss");
    }
    close(fd);
    return 0;
}

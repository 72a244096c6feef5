/*
 * supervise_main.c — `scaletune-supervise`, the local backend's per-attempt supervisor as a
 * program of its own (runner/supervise.c does the work). A controller that knows its path
 * starts it with posix_spawn instead of forking itself: the fork of a controller copies its
 * page tables and makes its memory copy-on-write for as long as the attempt runs. Links libc
 * only. Not meant to be run by hand.
 */
#include "runner/runner_int.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    runner_job_spec spec;
    if (runner_supervise_parse(argc, argv, &spec) != 0) {
        fprintf(stderr, "usage: scaletune-supervise --dir DIR [--workdir DIR] [--env K=V]... -- "
                        "PROGRAM [ARG]...\n(the scaletune controller starts it, once per "
                        "attempt)\n");
        return 2;
    }
    runner_supervise(&spec);
}

/*
 * test_study_stop.c — the study mode's early-stopping rule (study/study_stop.c) against the
 * compute-optimal allocation worked out by hand from a Chinchilla law (Hoffmann et al. 2022's
 * fitted values): N_opt = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)),
 * L_opt = L(N_opt, C/(6 N_opt)). A run far from N_opt whose loss cannot fall below L_opt is
 * stopped; one inside the band, or one that might still beat the frontier, is not.
 */
#include <math.h>
#include <string.h>

#include "study/study.h"
#include "tests/check.h"

int main(void)
{
    st_global_init();
    double A = 406.4, B = 410.7, E = 1.69, al = 0.34, be = 0.28;
    double nat[5] = {A, B, E, al, be}, C = 1e21;
    double G = pow(al * A / (be * B), 1 / (al + be));
    double N_opt = G * pow(C / 6, be / (al + be)), D_opt = C / (6 * N_opt);
    double L_opt = E + A / pow(N_opt, al) + B / pow(D_opt, be);
    int stop = -1;
    char why[200];

    /* 5x the optimal N at the same compute: far; its bound above the frontier by 2% */
    double N = 5 * N_opt, D = C / (6 * N);
    study_stop_rule(nat, N, D, L_opt * 1.02, 0.01, &stop, why);
    CHECK(stop == 1 && strstr(why, "compute-optimal"));
    /* the same run might still reach the frontier (bound within the margin): kept */
    study_stop_rule(nat, N, D, L_opt * 1.005, 0.01, &stop, why);
    CHECK(stop == 0);
    /* 5x too small: far the other way */
    N = N_opt / 5, D = C / (6 * N);
    study_stop_rule(nat, N, D, L_opt * 1.02, 0.01, &stop, NULL);
    CHECK(stop == 1);
    /* inside the band (2x, under STUDY_STOP_BAND): it pins the frontier down, kept */
    N = 2 * N_opt, D = C / (6 * N);
    study_stop_rule(nat, N, D, L_opt * 1.5, 0.01, &stop, why);
    CHECK(stop == 0);
    /* the band's edge on both sides of STUDY_STOP_BAND */
    N = 0.99 * STUDY_STOP_BAND * N_opt, D = C / (6 * N);
    study_stop_rule(nat, N, D, L_opt * 1.5, 0.01, &stop, why);
    CHECK(stop == 0);
    N = 1.01 * STUDY_STOP_BAND * N_opt, D = C / (6 * N);
    study_stop_rule(nat, N, D, L_opt * 1.5, 0.01, &stop, why);
    CHECK(stop == 1);
    /* unknown bound or size: no stop */
    study_stop_rule(nat, NAN, D, L_opt * 1.5, 0.01, &stop, why);
    CHECK(stop == 0);
    study_stop_rule(nat, N, D, NAN, 0.01, &stop, why);
    CHECK(stop == 0);
    st_global_cleanup();
    return check_summary("test_study_stop");
}

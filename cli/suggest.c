/*
 * suggest.c — "did you mean": the closest known word to a mistyped one (Damerau-Levenshtein
 * distance with adjacent transpositions, as git's help.autocorrect does), for commands and
 * subcommands. CLI code only.
 */
#include <string.h>

#include "cli/cli.h"

/* Optimal string alignment distance between a and b (each at most 63 characters). */
static size_t distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

const char *cli_nearest(const char *word, const char *const *known, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1, wl = strlen(word);
    for (size_t i = 0; i < n; i++) {
        size_t d = distance(word, known[i]);
        /* a prefix of a command ("stat") is also a good guess */
        if (wl >= 2 && !strncmp(word, known[i], wl))
            d = 1;
        if (d < best_d) {
            best_d = d;
            best = known[i];
        }
    }
    /* at most 2 edits, and fewer than half the word: "xyz" is no typo of "fit" */
    return best && best_d <= 2 && 2 * best_d < (wl > 2 ? wl : 2) + 1 ? best : NULL;
}

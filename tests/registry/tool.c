/* tests/registry/tool.c - the registry's command line, for the Python side:
 *
 *   tg_registry manifest         one JSON line per row
 *   tg_registry samples          the rows, each followed by its f64 samples
 *   tg_registry run [ROW]        every f64 sample (of ROW) with what tapegrad gives
 *
 * Exit status 0, or 2 for a usage error. */
#include <stdio.h>
#include <string.h>

#include "registry.h"

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "manifest")) {
        tgr_manifest(stdout, false);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "samples")) {
        tgr_manifest(stdout, true);
        return 0;
    }
    if ((argc == 2 || argc == 3) && !strcmp(argv[1], "run")) {
        tgr_run_json(stdout, argc == 3 ? argv[2] : NULL);
        return 0;
    }
    fprintf(stderr, "usage: tg_registry manifest | samples | run [ROW]\n");
    return 2;
}

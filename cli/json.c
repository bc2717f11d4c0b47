/* cli/json.c - the JSON writer of the command's --json lines (contract:
 * cli/json.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "json.h"

cli_json cli_json_begin(FILE *f) {
    fputc('{', f);
    return (cli_json){f, 0};
}

void cli_json_key(cli_json *j, const char *key) {
    fprintf(j->f, "%s\"%s\":", j->fields++ ? "," : "", key);
}

void cli_json_str(cli_json *j, const char *key, const char *val) {
    cli_json_key(j, key);
    if (!val) {
        fputs("null", j->f);
        return;
    }
    fputc('"', j->f);
    for (const unsigned char *p = (const unsigned char *)val; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(j->f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(j->f, "\\u%04x", *p);
        else
            fputc(*p, j->f);
    }
    fputc('"', j->f);
}

void cli_json_int(cli_json *j, const char *key, int64_t val) {
    cli_json_key(j, key);
    fprintf(j->f, "%" PRId64, val);
}

void cli_json_uint(cli_json *j, const char *key, uint64_t val) {
    cli_json_key(j, key);
    fprintf(j->f, "%" PRIu64, val);
}

void cli_json_bool(cli_json *j, const char *key, bool val) {
    cli_json_key(j, key);
    fputs(val ? "true" : "false", j->f);
}

void cli_json_num(cli_json *j, const char *key, const char *fmt, double val) {
    cli_json_key(j, key);
    if (isfinite(val))
        fprintf(j->f, fmt, val);
    else
        fputs("null", j->f);
}

void cli_json_end(cli_json *j) {
    fputs("}\n", j->f);
    fflush(j->f);
}

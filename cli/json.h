/* cli/json.h - the one JSON writer of the `tapegrad` command: every --json
 * line (demos, benches) is an object written field by field through it.
 *
 * Contract:
 *  - cli_json_begin writes "{"; each field call writes ,"key":value;
 *    cli_json_end writes "}" and a newline and flushes: one object per line,
 *    nothing else on it.
 *  - Strings are escaped as RFC 8259 asks (quote, backslash, control
 *    characters as \uXXXX); a NULL string is written as null.
 *  - Numbers: integers exactly; a double with the caller's printf format
 *    ("%.4f", "%.8g") when finite, null otherwise (JSON has no NaN or
 *    infinity, and "nan" would make the line unreadable for every parser).
 *  - Keys are the caller's literals, written as they are (no escaping).
 *  - cli_json_key writes ,"key": and leaves the value to the caller (a
 *    nested object written by the library: tg_leak_report_json).
 */
#ifndef TAPEGRAD_CLI_JSON_H
#define TAPEGRAD_CLI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cli_json {
    FILE *f;
    int fields; /* written so far in this object */
} cli_json;

/* Starts an object on f ("{"). */
cli_json cli_json_begin(FILE *f);

void cli_json_str(cli_json *j, const char *key, const char *val);
void cli_json_int(cli_json *j, const char *key, int64_t val);
void cli_json_uint(cli_json *j, const char *key, uint64_t val);
void cli_json_bool(cli_json *j, const char *key, bool val);
/* val with fmt (one double conversion) when finite; null otherwise. */
void cli_json_num(cli_json *j, const char *key, const char *fmt, double val);
/* ,"key": with the value left to the caller. */
void cli_json_key(cli_json *j, const char *key);

/* Ends the object: "}", a newline, fflush. */
void cli_json_end(cli_json *j);

#endif

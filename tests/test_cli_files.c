/* tests/test_cli_files.c - what the `tapegrad` subcommands share
 * (cli/common.c): files written whole or not at all (cli_file_*, and the .npy
 * writer built on them), options read from a command's table
 * (cli/options.c: parsing and help), and bounded text (cli_appendf). The command-line checks of the same are in tests/cli/. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "npy.h"
#include "tg_json_check.h"
#include "tg_test_util.h"

TestSuite(cli_files, .init = tgt_setup, .fini = tgt_teardown);

/* ---- helpers -------------------------------------------------------------------------------- */

typedef struct tmpdir {
    char path[64];
} tmpdir;

static void make_dir(tmpdir *d) {
    snprintf(d->path, sizeof d->path, "/tmp/tapegrad-cli-files.XXXXXX");
    cr_assert_not_null(mkdtemp(d->path), "mkdtemp: %s", strerror(errno));
}

/* Entries of the directory (not . and ..). */
static int entries(const tmpdir *d) {
    DIR *dir = opendir(d->path);
    cr_assert_not_null(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dir);
    return n;
}

static void remove_dir(tmpdir *d) {
    DIR *dir = opendir(d->path);
    if (!dir)
        return;
    for (struct dirent *e; (e = readdir(dir));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", d->path, e->d_name);
        remove(p);
    }
    closedir(dir);
    rmdir(d->path);
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* The file's content (malloc'd). */
static char *get(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    char *b = calloc(1, 1 << 20);
    size_t n = fread(b, 1, (1 << 20) - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* A file size limit of `bytes`, with SIGXFSZ ignored so that a write past it
 * fails with EFBIG (as under `ulimit -f` in a shell that ignores the signal). */
static void limit_file_size(rlim_t bytes) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &r), 0);
    r.rlim_cur = bytes;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
}

/* ---- files written whole or not at all -------------------------------------------------------- */

Test(cli_files, a_committed_file_replaces_the_old_one_and_keeps_its_mode) {
    tmpdir d;
    make_dir(&d);
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", d.path);
    put(path, "old");
    cr_assert_eq(chmod(path, 0640), 0);
    cli_file cf;
    cr_assert_eq(cli_file_open(&cf, path), 0);
    cr_assert_not_null(cf.f);
    fputs("new text", cf.f);
    char *now = get(path);
    cr_assert_str_eq(now, "old", "the name is untouched until the commit");
    free(now);
    cr_assert_eq(entries(&d), 2, "the file and its temporary");
    cr_assert_eq(cli_file_commit(&cf), 0);
    now = get(path);
    cr_assert_str_eq(now, "new text");
    free(now);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0640);
    cr_assert_eq(entries(&d), 1, "no temporary file left");
    remove_dir(&d);
}

Test(cli_files, a_new_file_gets_the_mode_of_a_new_file) {
    tmpdir d;
    make_dir(&d);
    char path[128];
    snprintf(path, sizeof path, "%s/new.txt", d.path);
    mode_t old = umask(022);
    cli_file cf;
    cr_assert_eq(cli_file_open(&cf, path), 0);
    fputs("x", cf.f);
    cr_assert_eq(cli_file_commit(&cf), 0);
    umask(old);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0644, "mode %o", (unsigned)(st.st_mode & 07777));
    remove_dir(&d);
}

Test(cli_files, a_discarded_or_failed_file_leaves_the_old_one) {
    tmpdir d;
    make_dir(&d);
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", d.path);
    put(path, "old");
    cli_file cf;
    cr_assert_eq(cli_file_open(&cf, path), 0);
    fputs("half", cf.f);
    cli_file_discard(&cf);
    char *now = get(path);
    cr_assert_str_eq(now, "old");
    free(now);
    cr_assert_eq(entries(&d), 1);

    /* a write past the file size limit fails at the commit */
    limit_file_size(4096);
    cr_assert_eq(cli_file_open(&cf, path), 0);
    for (int i = 0; i < 2000; i++) fputs("0123456789", cf.f);
    cr_assert_eq(cli_file_commit(&cf), EFBIG);
    now = get(path);
    cr_assert_str_eq(now, "old");
    free(now);
    cr_assert_eq(entries(&d), 1, "the temporary file was removed");
    remove_dir(&d);
}

Test(cli_files, a_symbolic_link_is_followed_and_kept) {
    tmpdir d;
    make_dir(&d);
    char target[128], link[128];
    snprintf(target, sizeof target, "%s/real.txt", d.path);
    snprintf(link, sizeof link, "%s/link.txt", d.path);
    put(target, "old");
    cr_assert_eq(symlink("real.txt", link), 0);
    cli_file cf;
    cr_assert_eq(cli_file_open(&cf, link), 0);
    fputs("new", cf.f);
    cr_assert_eq(cli_file_commit(&cf), 0);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced by a file");
    char *now = get(target);
    cr_assert_str_eq(now, "new");
    free(now);
    remove_dir(&d);
}

Test(cli_files, names_that_cannot_be_written) {
    cli_file cf;
    cr_assert_eq(cli_file_open(&cf, "/nonexistent-dir-tg/x"), ENOENT);
    cr_assert_null(cf.f);
    cr_assert_eq(cli_file_open(&cf, "/tmp"), EISDIR);
    struct stat st;
    if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) { /* written in place */
        cr_assert_eq(cli_file_open(&cf, "/dev/full"), 0);
        fputs("x", cf.f);
        cr_assert_eq(cli_file_commit(&cf), ENOSPC);
        cr_assert_eq(stat("/dev/full", &st), 0, "the device is still there");
    }
    if (stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode)) {
        cr_assert_eq(cli_file_open(&cf, "/dev/null"), 0);
        fputs("x", cf.f);
        cr_assert_eq(cli_file_commit(&cf), 0);
    }
}

/* A .npy file that cannot be written whole leaves the earlier file as it
 * was (it was removed before, and a partial file left when the write failed
 * after the open). */
Test(cli_files, npy_save_is_all_or_nothing) {
    tmpdir d;
    make_dir(&d);
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", d.path);
    put(path, "old");
    tg_tensor *t = tg_zeros(TG_F64, TG_SHAPE(1000));
    limit_file_size(2048);
    cr_assert_eq(tgcli_npy_save(path, t), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, path, "write failed: ", strerror(EFBIG), NULL);
    tg_release(t);
    char *now = get(path);
    cr_assert_str_eq(now, "old");
    free(now);
    cr_assert_eq(entries(&d), 1);
    tg_clear_error();
    tg_tensor *small = tg_zeros(TG_F64, TG_SHAPE(4));
    cr_assert_eq(tgcli_npy_save(path, small), TG_OK, "%s", tg_last_error());
    now = get(path);
    cr_assert_eq(memcmp(now, "\x93NUMPY", 6), 0);
    free(now);
    tg_release(small);
    remove_dir(&d);
}

/* ---- options from a table (cli/options.c) ---------------------------------------------------- */

typedef struct parsed {
    int64_t seq, range[4];
    int n_range;
    uint64_t seed;
    int device, impls[3], n_impls;
    bool detach, json, grad;
    const char *file;
    double custom;
    cli_outputs out;
    const char *args[4];
    int nargs;
} parsed;

static const cli_word DEV_WORDS[] = {{"cpu", 7}, {"cuda", 9}, {NULL, 0}};
static const cli_word IMPL_WORDS[] = {{"fused", 1}, {"composite", 2}, {NULL, 0}};

/* A custom value: a decimal number > 0. */
static bool parse_positive(const char *name, const char *val, void *field) {
    char *end = NULL;
    double v = strtod(val, &end);
    if (*end || !(v > 0.0))
        return cli_usage_error("bad %s", name) == 0;
    *(double *)field = v;
    return true;
}

static const cli_opt TEST_OPTS[] = {
    {.name = "--seq", CLI_INT(parsed, seq, -5, 100), .help = "rows"},
    {.name = "--range", CLI_INT_LIST(parsed, range, n_range, 0, 9), .help = "a list"},
    {.name = "--seed", CLI_SEED(parsed, seed), .help = "a seed"},
    {.name = "--device", CLI_WORD(parsed, device, DEV_WORDS), .help = "where"},
    {.name = "--impl", CLI_WORD_LIST(parsed, impls, n_impls, IMPL_WORDS), .help = "which"},
    {.name = "--grad", CLI_SWITCH(parsed, grad), .help = "on or off"},
    {.name = "--detach", CLI_FLAG(parsed, detach), .help = "a flag"},
    {.name = "--json", CLI_FLAG(parsed, json), .help = "another"},
    {.name = "--file", CLI_TEXT(parsed, file), .meta = "F.npy", .help = "a file"},
    {.name = "--scale", CLI_CUSTOM(parsed, custom, parse_positive), .meta = "X",
     .help = "a number > 0, written as people write decimal numbers (2, 0.5 or 1e-3), never "
             "a hexadecimal or an infinite one", .default_text = "1"},
    CLI_OUTPUT_OPTS(parsed, out, "the test's loss"),
};

static int take_arg(const char *arg, void *opts) {
    parsed *p = opts;
    if (p->nargs == 4)
        return cli_usage_error("too many");
    p->args[p->nargs++] = arg;
    return CLI_EXIT_OK;
}

static cli_command test_command(bool positional, bool file_required) {
    static cli_opt rows[CLI_N(TEST_OPTS)];
    memcpy(rows, TEST_OPTS, sizeof rows);
    rows[8].required = file_required;
    return (cli_command){.name = "demo test", .opts = rows, .n_opts = CLI_N(rows),
                         .arg = positional ? take_arg : NULL,
                         .args = positional ? "[ARG...]" : NULL,
                         .about = "A command made for the tests.\n",
                         .exit_status = "0 success, 2 bad usage."};
}

static parsed defaults(void) {
    parsed p;
    memset(&p, 0, sizeof p);
    p.seq = 3;
    p.range[0] = 1;
    p.range[1] = 2;
    p.n_range = 2;
    p.seed = 42;
    p.device = 7;
    p.impls[0] = 1;
    p.n_impls = 1;
    p.grad = true;
    return p;
}

/* Parses with the test table from the defaults; CLI_EXIT_OK or USAGE. */
static int parse_given(parsed *p, bool positional, uint64_t *given, int argc, char **argv) {
    *p = defaults();
    cli_command cmd = test_command(positional, false);
    return cli_options_parse(&cmd, argc, argv, p, given);
}
static int parse(parsed *p, bool positional, int argc, char **argv) {
    return parse_given(p, positional, NULL, argc, argv);
}

#define ARGV(...) (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), ((char *[]){__VA_ARGS__})

Test(cli_files, every_kind_of_option_stores_its_value) {
    parsed p;
    cr_assert_eq(parse(&p, false, ARGV("--seq", "-5", "--range=0,9,4", "--seed",
                                       "18446744073709551615", "--device", "cuda", "--impl",
                                       "composite,fused,composite", "--grad", "off", "--detach",
                                       "--file", "-x.npy", "--scale=0.25", "--dot", "g.dot")),
                 CLI_EXIT_OK);
    cr_assert_eq(p.seq, -5);
    cr_assert_eq(p.n_range, 3);
    cr_assert(p.range[0] == 0 && p.range[1] == 9 && p.range[2] == 4);
    cr_assert_eq(p.seed, UINT64_MAX);
    cr_assert_eq(p.device, 9);
    cr_assert_eq(p.n_impls, 3);
    cr_assert(p.impls[0] == 2 && p.impls[1] == 1 && p.impls[2] == 2);
    cr_assert(!p.grad && p.detach && !p.json);
    cr_assert_str_eq(p.file, "-x.npy");
    cr_assert_float_eq(p.custom, 0.25, 0.0);
    cr_assert_str_eq(p.out.dot, "g.dot");
    cr_assert_null(p.out.trace);
    /* nothing given: the defaults stay as they were */
    uint64_t given = 1;
    cr_assert_eq(parse_given(&p, false, &given, 0, NULL), CLI_EXIT_OK);
    cr_assert_eq(given, 0);
    parsed d = defaults();
    cr_assert(p.seq == d.seq && p.n_range == d.n_range && p.range[0] == d.range[0] &&
              p.range[1] == d.range[1] && p.seed == d.seed && p.device == d.device &&
              p.n_impls == d.n_impls && p.impls[0] == d.impls[0] && p.grad == d.grad &&
              !p.detach && !p.json && !p.file && p.custom == 0.0 && !p.out.trace &&
              !p.out.plot && !p.out.dot && p.nargs == 0);
}

Test(cli_files, the_last_of_a_repeated_option_counts_and_given_says_which) {
    parsed p;
    uint64_t given = 0;
    cli_command cmd = test_command(false, false);
    cr_assert_eq(parse_given(&p, false, &given,
                             ARGV("--seq", "1", "--seq=2", "--range", "3", "--seq", "4")),
                 CLI_EXIT_OK);
    cr_assert_eq(p.seq, 4);
    cr_assert_eq(p.n_range, 1, "a list replaces the whole default list");
    cr_assert(cli_option_given(&cmd, given, "--seq") && cli_option_given(&cmd, given, "--range"));
    cr_assert(!cli_option_given(&cmd, given, "--seed"));
    cr_assert(!cli_option_given(&cmd, given, "--nosuch"));
    cr_assert_eq(parse(&p, false, ARGV("--detach", "--json", "--detach", "--json")),
                 CLI_EXIT_OK);
    cr_assert(p.detach && p.json);
    cr_assert_eq(parse(&p, false, ARGV("--trace", "a.json", "--trace=b.json", "--dot", "g")),
                 CLI_EXIT_OK);
    cr_assert_str_eq(p.out.trace, "b.json");
    cr_assert_str_eq(p.out.dot, "g");
    /* values that look like options or numbers are values */
    cr_assert_eq(parse(&p, false, ARGV("--file", "--seq", "--seq", "-5")), CLI_EXIT_OK);
    cr_assert_str_eq(p.file, "--seq");
    cr_assert_eq(p.seq, -5);
}

Test(cli_files, misuse_is_a_usage_error) {
    parsed p;
    const char *const bad[][3] = {
        {"--bogus"},           {"--seq"},             {"--seq="},
        {"--detach=1"},        {"--json=yes"},        {"extra"},
        {"-"},                 {"-s", "1"},           {"--trace"},
        {"--plot="},           {"--seqq=1"},          {"--seq", "-6"},
        {"--seq", "101"},      {"--seq", "1x"},       {"--seq", " 1"},
        {"--range", "1,,2"},   {"--range", "1,10"},   {"--range", "0,1,2,3,4"},
        {"--range", "1,"},     {"--seed", "-1"},      {"--seed", "18446744073709551616"},
        {"--device", "gpu"},   {"--device", "cpu,cuda"}, {"--impl", "fused,"},
        {"--impl", "fast"},    {"--impl", "fused,fused,fused,fused"},
        {"--grad", "yes"},     {"--grad", "ON"},      {"--scale", "0"},
        {"--file", ""},        {"--SEQ", "1"},        {"---seq", "1"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *argv[3] = {(char *)bad[k][0], (char *)bad[k][1], (char *)bad[k][2]};
        int argc = argv[1] ? (argv[2] ? 3 : 2) : 1;
        cr_assert_eq(parse(&p, false, argc, argv), CLI_EXIT_USAGE, "%s %s accepted", bad[k][0],
                     bad[k][1] ? bad[k][1] : "");
    }
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    memcpy(longname, "--seq", 5); /* starts like a known option */
    longname[sizeof longname - 1] = '\0';
    cr_assert_eq(parse(&p, false, ARGV(longname)), CLI_EXIT_USAGE);
    /* two options that write files may not name one file; other text options may */
    cr_assert_eq(parse(&p, false, ARGV("--trace", "a", "--dot", "a")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--plot=b", "--trace", "a", "--dot", "b")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--trace", "a", "--dot", "a", "--dot", "c")), CLI_EXIT_OK,
                 "the last --dot counts");
    cr_assert_eq(parse(&p, false, ARGV("--file", "a", "--trace", "a")), CLI_EXIT_OK,
                 "--file is read, not written");
    /* a required option missing */
    cli_command req = test_command(false, true);
    p = defaults();
    cr_assert_eq(cli_options_parse(&req, ARGV("--seq", "1"), &p, NULL), CLI_EXIT_USAGE);
    p = defaults();
    cr_assert_eq(cli_options_parse(&req, ARGV("--file", "f"), &p, NULL), CLI_EXIT_OK);
    /* positional arguments, when the command takes them, before or after options */
    cr_assert_eq(parse(&p, true, ARGV("a", "--seq", "1", "b")), CLI_EXIT_OK);
    cr_assert_eq(p.nargs, 2);
    cr_assert_str_eq(p.args[1], "b");
    cr_assert(cli_wants_help(ARGV("--seq", "1", "-h")));
    cr_assert(!cli_wants_help(ARGV("--seq", "1", "--helpme")));
}

/* The help of the test command, as text (malloc'd). */
static char *help_text(const cli_command *cmd, const void *defaults_of) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cli_help(f, cmd, defaults_of);
    fclose(f);
    return buf;
}

Test(cli_files, the_help_shows_every_option_its_range_and_default_in_79_columns) {
    cli_command cmd = test_command(true, true);
    parsed d = defaults();
    d.file = "in.npy";
    char *h = help_text(&cmd, &d);
    const char *want[] = {
        "Usage: tapegrad demo test [--seq N]", "--file F.npy",  "[ARG...]",
        "rows (-5..100, default 3)",          "(0..9, default 1,2)", "a seed (default 42)",
        "--device cpu|cuda",                  "where (default cpu)", "--impl fused,composite",
        "which (default fused)",              "--grad on|off",  "on or off (default on)",
        "a file (default in.npy)",            "one (default 1)",
        "A command made for the tests.",      "Exit status: 0 success, 2 bad usage.",
        "Options are --name value or --name=value",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        cr_assert_not_null(strstr(h, want[k]), "help lacks '%s':\n%s", want[k], h);
    cr_assert_null(strstr(h, "[--file"), "a required option is shown without brackets");
    cr_assert_null(strstr(h, "a flag (default"), "a flag shows no default");
    for (int k = 0; k < cmd.n_opts; k++)
        cr_assert_not_null(strstr(h, cmd.opts[k].name));
    for (const char *line = h; *line;) {
        size_t n = strcspn(line, "\n");
        cr_assert_leq(n, 79, "a line of %zu columns: %.*s", n, (int)n, line);
        line += n + (line[n] == '\n');
    }
    free(h);
}

/* ---- the JSON writer (cli/json.c) ------------------------------------------------------------ */

Test(cli_files, json_lines_escape_strings_and_write_null_for_what_json_cannot_say) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cli_json j = cli_json_begin(f);
    cli_json_str(&j, "name", "H200 \"SXM\" \\ tab\tline\n\x01");
    cli_json_str(&j, "none", NULL);
    cli_json_int(&j, "neg", INT64_MIN);
    cli_json_uint(&j, "big", UINT64_MAX);
    cli_json_bool(&j, "yes", true);
    cli_json_num(&j, "ms", "%.4f", 1.5);
    cli_json_num(&j, "nan", "%.4f", NAN);
    cli_json_num(&j, "inf", "%.3g", -INFINITY);
    cli_json_key(&j, "nested");
    fputs("{\"a\":1}", f);
    cli_json_end(&j);
    fclose(f);
    cr_assert_str_eq(buf, "{\"name\":\"H200 \\\"SXM\\\" \\\\ tab\\u0009line\\u000a\\u0001\","
                          "\"none\":null,\"neg\":-9223372036854775808,"
                          "\"big\":18446744073709551615,\"yes\":true,\"ms\":1.5000,"
                          "\"nan\":null,\"inf\":null,\"nested\":{\"a\":1}}\n");
    json js;
    assert_json_object(buf, &js);
    cr_assert_eq(json_key_count(&js, "name"), 1);
    free(buf);
}

/* ---- bounded text ------------------------------------------------------------------------------ */

Test(cli_files, appendf_cuts_with_dots_on_a_character_boundary) {
    char b[8];
    size_t k = cli_appendf(b, sizeof b, 0, "abc");
    k = cli_appendf(b, sizeof b, k, "%d", 1234);
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "abc1234");
    k = cli_appendf(b, sizeof b, k, "x");
    cr_assert_str_eq(b, "abc1...");
    k = cli_appendf(b, sizeof b, 0, "ab\xE2\x82\xAC\xE2\x82\xAC"); /* "ab€€", 8 bytes */
    cr_assert_eq(k, 7);
    cr_assert_str_eq(b, "ab...");
    cr_assert_eq(cli_appendf(b, sizeof b, k, "more"), 7);
    cr_assert_str_eq(b, "ab...");
    cr_assert_eq(cli_appendf(NULL, 0, 0, "x"), 0);
    char one[1];
    cr_assert_eq(cli_appendf(one, 1, 0, "x"), 0);
    cr_assert_str_eq(one, "");
}

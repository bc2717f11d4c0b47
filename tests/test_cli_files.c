/* tests/test_cli_files.c - what the `tapegrad` subcommands share
 * (cli/common.c): files written whole or not at all (cli_file_*, and the .npy
 * writer built on them), the option rule (cli_next_opt), and bounded text
 * (cli_appendf). The command-line checks of the same are in tests/cli/. */
#include <dirent.h>
#include <errno.h>
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

/* ---- the option rule -------------------------------------------------------------------------- */

typedef struct parsed {
    const char *seq, *chunk;
    bool detach, json;
    cli_outputs out;
    const char *args[4];
    int nargs;
} parsed;

/* Runs the shared option loop over the arguments; CLI_EXIT_OK or USAGE. */
static int parse(parsed *p, bool positional, int argc, char **argv) {
    static const char *const VALUED[] = {"--seq", "--chunk", NULL};
    static const char *const FLAGS[] = {"--detach", NULL};
    memset(p, 0, sizeof *p);
    const cli_optspec spec = {"demo test", VALUED, FLAGS, &p->out, &p->json, positional};
    for (int i = 0; i < argc; i++) {
        char name[32];
        const char *val;
        int r = cli_next_opt(&spec, argc, argv, &i, name, sizeof name, &val);
        if (r == CLI_EXIT_USAGE)
            return r;
        if (r == CLI_OPT_ARG)
            p->args[p->nargs++] = argv[i];
        else if (r == CLI_OPT_NAMED && !strcmp(name, "--detach"))
            p->detach = true;
        else if (r == CLI_OPT_NAMED)
            *(!strcmp(name, "--seq") ? &p->seq : &p->chunk) = val;
    }
    return CLI_EXIT_OK;
}

#define ARGV(...) (sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), ((char *[]){__VA_ARGS__})

Test(cli_files, the_last_of_a_repeated_option_counts) {
    parsed p;
    cr_assert_eq(parse(&p, false, ARGV("--seq", "1", "--seq=2", "--chunk", "3", "--seq", "4")),
                 CLI_EXIT_OK);
    cr_assert_str_eq(p.seq, "4");
    cr_assert_str_eq(p.chunk, "3");
    cr_assert_eq(parse(&p, false, ARGV("--detach", "--json", "--detach", "--json")),
                 CLI_EXIT_OK);
    cr_assert(p.detach && p.json);
    cr_assert_eq(parse(&p, false, ARGV("--trace", "a.json", "--trace=b.json", "--dot", "g")),
                 CLI_EXIT_OK);
    cr_assert_str_eq(p.out.trace, "b.json");
    cr_assert_str_eq(p.out.dot, "g");
    /* values that look like options or numbers are values */
    cr_assert_eq(parse(&p, false, ARGV("--seq", "-5", "--chunk", "--seq")), CLI_EXIT_OK);
    cr_assert_str_eq(p.seq, "-5");
    cr_assert_str_eq(p.chunk, "--seq");
}

Test(cli_files, misuse_is_a_usage_error) {
    parsed p;
    cr_assert_eq(parse(&p, false, ARGV("--bogus")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--seq")), CLI_EXIT_USAGE, "missing value");
    cr_assert_eq(parse(&p, false, ARGV("--seq=")), CLI_EXIT_USAGE, "empty value");
    cr_assert_eq(parse(&p, false, ARGV("--detach=1")), CLI_EXIT_USAGE, "a flag's value");
    cr_assert_eq(parse(&p, false, ARGV("--json=yes")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("extra")), CLI_EXIT_USAGE, "a positional argument");
    cr_assert_eq(parse(&p, false, ARGV("-")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("-s", "1")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--trace")), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--plot=")), CLI_EXIT_USAGE);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    memcpy(longname, "--seq", 5); /* starts like a known option, longer than the name buffer */
    longname[sizeof longname - 1] = '\0';
    cr_assert_eq(parse(&p, false, ARGV(longname)), CLI_EXIT_USAGE);
    cr_assert_eq(parse(&p, false, ARGV("--seqq=1")), CLI_EXIT_USAGE);
    /* positional arguments, when the command takes them, before or after options */
    cr_assert_eq(parse(&p, true, ARGV("a", "--seq", "1", "b")), CLI_EXIT_OK);
    cr_assert_eq(p.nargs, 2);
    cr_assert_str_eq(p.args[1], "b");
    cr_assert(cli_wants_help(ARGV("--seq", "1", "-h")));
    cr_assert(!cli_wants_help(ARGV("--seq", "1", "--helpme")));
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
    char name[8];
    cli_split_opt("--abcdefghijk", name, sizeof name); /* no '=': cut like any text */
    cr_assert_str_eq(name, "--ab...");
}

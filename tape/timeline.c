/* tape/timeline.c - the memory timeline (include/tapegrad/timeline.h).
 *
 * Contract:
 * - While on, every allocation and free of the allocator (with its device,
 *   category, size, the op that allocated it, the graph node backward was
 *   running on that thread, and the device's live bytes per category and
 *   saved bytes after it), every change of the saved bytes, every graph node
 *   run by backward (a begin and an end) and every tg_step_mark is appended to
 *   one event buffer, in the order they happened (allocator events are
 *   appended under the allocator lock, so their figures are in order too).
 * - Off, the hooks cost one relaxed load and a predictable branch at the call
 *   site (tg__timeline_on() in core.h).
 * - The recorder's own memory (events, interned names) comes from plain
 *   malloc/realloc: it is not counted in the byte figures and allocation
 *   failures injected by tg_fault_inject do not reach it. When the buffer
 *   cannot grow the event is dropped and counted; no op ever fails because
 *   of the timeline, and the hooks never touch the thread's error.
 * - Names (ops, nodes, step labels) are copied (interned, up to 63 bytes, cut
 *   on a UTF-8 boundary), so they may die before the recording is written.
 * - The writers hold the timeline lock while writing (allocations on other
 *   threads wait meanwhile). The Chrome trace is written here; the SVG plot
 *   in tape/timeline_svg.c from a copy of the events made under the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "errors.h"
#include "timeline_hooks.h"
#include "timeline_internal.h"

atomic_int tg__timeline_flag;

#define TL_NAME_MAX 63
#define TL_MAX_TID 255 /* threads after the 255th share the last track */

static pthread_mutex_t g_tl = PTHREAD_MUTEX_INITIALIZER;

static struct {
    tg__tl_event *ev;
    size_t n, cap;
    size_t limit;           /* 0: none (tests set one to exercise dropping) */
    uint64_t dropped;
    bool recording, have;   /* have: a recording exists (since start, until clear) */
    uint32_t gen;           /* recording number; tags carry it */
    struct timespec t0;
    uint64_t t_end_ns;      /* when stopped */
    char **str;             /* interned names; str[0] is unused (id 0 = unknown) */
    uint32_t nstr, capstr;
    uint32_t *hash;         /* open addressing: string id, 0 = empty */
    uint32_t hcap;
    unsigned ntid;
} R;

static _Thread_local uint64_t tl_last_op; /* tag of the op last named on this thread */
static _Thread_local uint64_t tl_node;    /* tag of the node backward runs on this thread */
static _Thread_local uint32_t tl_tid_gen;
static _Thread_local uint8_t tl_tid;

/* ---- helpers (called with g_tl held) ---------------------------------------------- */

static uint64_t now_ns_locked(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t ns = (int64_t)(t.tv_sec - R.t0.tv_sec) * 1000000000 + (t.tv_nsec - R.t0.tv_nsec);
    return ns > 0 ? (uint64_t)ns : 0;
}

static uint64_t make_tag(uint32_t id) { return id ? ((uint64_t)R.gen << 32) | id : 0; }

/* The string id a tag names in this recording (0 if none or stale). */
static uint32_t tag_id(uint64_t tag) {
    return tag != TG__TL_LAST_OP && (uint32_t)(tag >> 32) == R.gen ? (uint32_t)tag : 0;
}

static uint32_t hash_str(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static bool rehash(uint32_t cap) {
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h) return false;
    for (uint32_t id = 1; id < R.nstr; id++) {
        uint32_t i = hash_str(R.str[id], strlen(R.str[id])) & (cap - 1);
        while (h[i]) i = (i + 1) & (cap - 1);
        h[i] = id;
    }
    free(R.hash);
    R.hash = h;
    R.hcap = cap;
    return true;
}

/* The id of s (copied on first sight), 0 for NULL or when out of memory. */
static uint32_t intern(const char *s) {
    if (!s) return 0;
    size_t n = strlen(s);
    if (n > TL_NAME_MAX) { /* cut, but not inside a UTF-8 character */
        n = TL_NAME_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    uint32_t h = hash_str(s, n);
    if (R.hcap) {
        for (uint32_t i = h & (R.hcap - 1); R.hash[i]; i = (i + 1) & (R.hcap - 1)) {
            const char *c = R.str[R.hash[i]];
            if (strncmp(c, s, n) == 0 && c[n] == '\0') return R.hash[i];
        }
    }
    if (R.nstr == UINT32_MAX - 1) return 0;
    if ((uint64_t)(R.nstr + 1) * 2 > R.hcap && !rehash(R.hcap ? 2 * R.hcap : 256)) return 0;
    if (R.nstr == R.capstr) {
        uint32_t cap = R.capstr ? 2 * R.capstr : 64;
        char **v = realloc(R.str, cap * sizeof *v);
        if (!v) return 0;
        R.str = v;
        R.capstr = cap;
    }
    if (R.nstr == 0) R.str[R.nstr++] = NULL; /* id 0 */
    char *c = malloc(n + 1);
    if (!c) return 0;
    memcpy(c, s, n);
    c[n] = '\0';
    uint32_t id = R.nstr++;
    R.str[id] = c;
    uint32_t i = h & (R.hcap - 1);
    while (R.hash[i]) i = (i + 1) & (R.hcap - 1);
    R.hash[i] = id;
    return id;
}

static uint8_t thread_track_locked(void) {
    if (tl_tid_gen != R.gen) {
        tl_tid_gen = R.gen;
        tl_tid = (uint8_t)(R.ntid < TL_MAX_TID ? ++R.ntid : TL_MAX_TID);
    }
    return tl_tid;
}

/* Appends e (stamped with the time and thread here), or counts it dropped. */
static void push_locked(tg__tl_event e) {
    e.t_ns = now_ns_locked();
    e.tid = thread_track_locked();
    if (R.limit && R.n >= R.limit) {
        R.dropped++;
        return;
    }
    if (R.n == R.cap) {
        size_t cap = R.cap ? 2 * R.cap : 1024;
        tg__tl_event *v = cap > SIZE_MAX / sizeof *v ? NULL : realloc(R.ev, cap * sizeof *v);
        if (!v) {
            R.dropped++;
            return;
        }
        R.ev = v;
        R.cap = cap;
    }
    R.ev[R.n++] = e;
}

static tg__tl_event mem_event(uint8_t kind, tg_device dev, tg_mem_category cat, size_t nbytes,
                              const tg_mem_stats *after) {
    tg__tl_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.dev = (uint8_t)dev;
    e.cat = (uint8_t)cat;
    e.bytes = nbytes;
    for (int c = 0; c < TG_MEM_NCAT; c++) e.live[c] = after->live[c];
    e.saved = after->saved;
    return e;
}

static void free_recording_locked(void) {
    free(R.ev);
    for (uint32_t i = 1; i < R.nstr; i++) free(R.str[i]);
    free(R.str);
    free(R.hash);
    R.ev = NULL;
    R.n = R.cap = 0;
    R.str = NULL;
    R.nstr = R.capstr = 0;
    R.hash = NULL;
    R.hcap = 0;
    R.dropped = 0;
    R.have = false;
}

/* ---- hooks ---------------------------------------------------------------------- */

uint64_t tg__tl_alloc(tg_device dev, tg_mem_category cat, size_t nbytes,
                      const tg_mem_stats *after, const char *op) {
    pthread_mutex_lock(&g_tl);
    uint64_t tag = 0;
    if (R.recording) {
        tg__tl_event e = mem_event(TG__TL_ALLOC, dev, cat, nbytes, after);
        e.name = op ? intern(op) : tag_id(tl_last_op);
        e.node = tag_id(tl_node);
        tag = make_tag(e.name);
        if (op) tl_last_op = tag;
        push_locked(e);
    }
    pthread_mutex_unlock(&g_tl);
    return tag;
}

void tg__tl_free(tg_device dev, tg_mem_category cat, size_t nbytes, const tg_mem_stats *after,
                 uint64_t tag) {
    pthread_mutex_lock(&g_tl);
    if (R.recording) {
        tg__tl_event e = mem_event(TG__TL_FREE, dev, cat, nbytes, after);
        e.name = tag_id(tag == TG__TL_LAST_OP ? tl_last_op : tag);
        e.node = tag_id(tl_node);
        push_locked(e);
    }
    pthread_mutex_unlock(&g_tl);
}

void tg__tl_saved(tg_device dev, const tg_mem_stats *after) {
    pthread_mutex_lock(&g_tl);
    if (R.recording) push_locked(mem_event(TG__TL_SAVED, dev, TG_MEM_LEAF, 0, after));
    pthread_mutex_unlock(&g_tl);
}

static void push_named_locked(uint8_t kind, uint32_t name, uint64_t value) {
    tg__tl_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.name = name;
    e.bytes = value;
    push_locked(e);
}

uint64_t tg__tl_span_begin(const char *node) {
    uint64_t prev = tl_node;
    pthread_mutex_lock(&g_tl);
    if (R.recording) {
        uint32_t id = intern(node);
        push_named_locked(TG__TL_BEGIN, id, 0);
        tl_node = make_tag(id);
    }
    pthread_mutex_unlock(&g_tl);
    return prev;
}

void tg__tl_span_end(const char *node, uint64_t token) {
    pthread_mutex_lock(&g_tl);
    if (R.recording) push_named_locked(TG__TL_END, intern(node), 0);
    pthread_mutex_unlock(&g_tl);
    tl_node = token;
}

void tg__tl_step(uint64_t step, const char *label) {
    char buf[40];
    if (!label || !*label) {
        snprintf(buf, sizeof buf, "step %llu", (unsigned long long)step);
        label = buf;
    }
    pthread_mutex_lock(&g_tl);
    if (R.recording) push_named_locked(TG__TL_STEP, intern(label), step);
    pthread_mutex_unlock(&g_tl);
}

void tg__timeline_set_limit(size_t max_events) {
    pthread_mutex_lock(&g_tl);
    R.limit = max_events;
    pthread_mutex_unlock(&g_tl);
}

uint64_t tg__timeline_dropped(void) {
    pthread_mutex_lock(&g_tl);
    uint64_t d = R.dropped;
    pthread_mutex_unlock(&g_tl);
    return d;
}

/* ---- public: start, stop, count, clear --------------------------------------------- */

tg_status tg_timeline_start(void) {
    tg__mem_lock(); /* no allocation between the first sample and the flag */
    pthread_mutex_lock(&g_tl);
    tg_status st = TG_OK;
    if (R.recording) {
        st = TG_ERR_STATE;
    } else {
        free_recording_locked();
        R.ev = malloc(1024 * sizeof *R.ev);
        if (!R.ev) {
            st = TG_ERR_NOMEM;
        } else {
            R.cap = 1024;
            R.gen++;
            if (R.gen == 0) R.gen = 1;
            R.ntid = 0;
            clock_gettime(CLOCK_MONOTONIC, &R.t0);
            R.t_end_ns = 0;
            R.recording = R.have = true;
            for (int d = TG_CPU; d <= TG_CUDA; d++) {
                const tg_mem_stats *m = tg__mem_stats_locked((tg_device)d);
                if (m && (d == TG_CPU || m->live_total || m->saved))
                    push_locked(mem_event(TG__TL_STATE, (tg_device)d, TG_MEM_LEAF, 0, m));
            }
            atomic_store(&tg__timeline_flag, 1);
        }
    }
    pthread_mutex_unlock(&g_tl);
    tg__mem_unlock();
    if (st == TG_ERR_STATE)
        return tg__set_error(st, "tg_timeline_start: the timeline is already recording "
                                 "(call tg_timeline_stop first)");
    if (st == TG_ERR_NOMEM)
        return tg__set_error(st, "tg_timeline_start: out of memory for the event buffer");
    return TG_OK;
}

tg_status tg_timeline_stop(void) {
    pthread_mutex_lock(&g_tl);
    bool was = R.recording;
    if (was) {
        R.t_end_ns = now_ns_locked();
        R.recording = false;
        atomic_store(&tg__timeline_flag, 0);
    }
    pthread_mutex_unlock(&g_tl);
    if (!was)
        return tg__set_error(TG_ERR_STATE,
                             "tg_timeline_stop: the timeline is not recording "
                             "(call tg_timeline_start first)");
    return TG_OK;
}

size_t tg_timeline_events(void) {
    pthread_mutex_lock(&g_tl);
    size_t n = R.have ? R.n : 0;
    pthread_mutex_unlock(&g_tl);
    return n;
}

void tg_timeline_clear(void) {
    pthread_mutex_lock(&g_tl);
    R.recording = false;
    atomic_store(&tg__timeline_flag, 0);
    free_recording_locked();
    pthread_mutex_unlock(&g_tl);
}

/* ---- writers ---------------------------------------------------------------------- */

const char *tg__tl_name(const tg__tl_recording *r, uint32_t id) {
    return id && id < r->nstr && r->str[id] ? r->str[id] : "(unknown op)";
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
size_t tg__tl_utf8_len(const unsigned char *s) {
    size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
             : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 2 && s[0] < 0xC2) return 0; /* overlong */
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n;
}

/* The inside of a JSON string: control characters escaped, invalid UTF-8 as
 * '?'. */
static void json_chars(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = tg__tl_utf8_len(p);
        if (n == 0) {
            fputc('?', f);
            p++;
        } else if (n > 1) {
            fwrite(p, 1, n, f);
            p += n;
        } else {
            unsigned char c = *p++;
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else if (c == '\n') fputs("\\n", f);
            else if (c == '\t') fputs("\\t", f);
            else if (c < 0x20 || c == 0x7F) fprintf(f, "\\u%04x", c);
            else fputc(c, f);
        }
    }
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    json_chars(f, s);
    fputc('"', f);
}

/* Holds g_tl on success (caller unlocks); on failure returns the error set. */
static tg_status begin_write(const char *fn, const char *path) {
    if (!path) return tg__set_error(TG_ERR_NULL, "%s: argument 'path' is NULL", fn);
    pthread_mutex_lock(&g_tl);
    if (!R.have || R.n == 0) {
        pthread_mutex_unlock(&g_tl);
        return tg__set_error(TG_ERR_STATE,
                             "%s: nothing recorded (call tg_timeline_start, run the code to "
                             "measure, then tg_timeline_stop)", fn);
    }
    return TG_OK;
}

static tg__tl_recording view_locked(void) {
    tg__tl_recording r = {R.ev, R.n, R.dropped, R.recording ? now_ns_locked() : R.t_end_ns,
                          R.str, R.nstr};
    return r;
}

static tg_status open_out(const char *fn, const char *path, FILE **f) {
    errno = 0;
    *f = fopen(path, "w");
    if (!*f)
        return tg__set_error(TG_ERR_IO, "%s: cannot open '%s' for writing: %s", fn, path,
                             strerror(errno));
    errno = 0; /* what tg__tl_close reports comes from the writes */
    return TG_OK;
}

/* Closes f, turning a write error into TG_ERR_IO. */
tg_status tg__tl_close(const char *fn, const char *path, FILE *f) {
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (err)
        return tg__set_error(TG_ERR_IO, "%s: cannot write '%s': %s", fn, path, strerror(err));
    return TG_OK;
}

static void counter_live(FILE *f, const char *ts, const tg__tl_event *e) {
    fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"C\",\"ts\":%s,\"pid\":1,\"tid\":0,\"args\":{",
            e->dev == TG_CPU ? "live bytes" : "live bytes (cuda)", ts);
    for (int c = 0; c < TG_MEM_NCAT; c++)
        fprintf(f, "%s\"%s\":%llu", c ? "," : "", tg_mem_category_name((tg_mem_category)c),
                (unsigned long long)e->live[c]);
    fputs("}}", f);
}

static void counter_saved(FILE *f, const char *ts, const tg__tl_event *e) {
    fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"C\",\"ts\":%s,\"pid\":1,\"tid\":0,"
               "\"args\":{\"saved\":%llu}}",
            e->dev == TG_CPU ? "saved bytes" : "saved bytes (cuda)", ts,
            (unsigned long long)e->saved);
}

static void write_trace_events(FILE *f, const tg__tl_recording *r) {
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"tapegrad\"}}", f);
    fputs(",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"memory\"}}", f);
    unsigned ntid = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->ev[i].tid > ntid) ntid = r->ev[i].tid;
    for (unsigned t = 1; t <= ntid; t++)
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
                   "\"args\":{\"name\":\"thread %u\"}}", t, t);
    unsigned depth[TL_MAX_TID + 1] = {0};
    char ts[32];
    for (size_t i = 0; i < r->n; i++) {
        const tg__tl_event *e = &r->ev[i];
        snprintf(ts, sizeof ts, "%.3f", (double)e->t_ns / 1e3);
        switch (e->kind) {
        case TG__TL_STATE:
            counter_live(f, ts, e);
            counter_saved(f, ts, e);
            break;
        case TG__TL_ALLOC:
        case TG__TL_FREE: {
            counter_live(f, ts, e);
            const char *op = tg__tl_name(r, e->name);
            fprintf(f, ",\n{\"name\":\"%s ", e->kind == TG__TL_ALLOC ? "alloc" : "free");
            json_chars(f, op);
            fprintf(f, "\",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%s,\"pid\":1,"
                       "\"tid\":%u,\"args\":{\"bytes\":%llu,\"device\":\"%s\",\"category\":\"%s\","
                       "\"op\":", ts, e->tid, (unsigned long long)e->bytes,
                    e->dev == TG_CPU ? "cpu" : "cuda",
                    tg_mem_category_name((tg_mem_category)e->cat));
            json_str(f, op);
            if (e->node) {
                fputs(",\"node\":", f);
                json_str(f, tg__tl_name(r, e->node));
            }
            fputs("}}", f);
            break;
        }
        case TG__TL_SAVED:
            counter_saved(f, ts, e);
            break;
        case TG__TL_BEGIN:
        case TG__TL_END:
            if (e->kind == TG__TL_END && depth[e->tid] == 0) break; /* began before start */
            if (e->kind == TG__TL_BEGIN) depth[e->tid]++;
            else depth[e->tid]--;
            fputs(",\n{\"name\":", f);
            json_str(f, tg__tl_name(r, e->name));
            fprintf(f, ",\"cat\":\"backward\",\"ph\":\"%s\",\"ts\":%s,\"pid\":1,\"tid\":%u}",
                    e->kind == TG__TL_BEGIN ? "B" : "E", ts, e->tid);
            break;
        case TG__TL_STEP:
            fputs(",\n{\"name\":", f);
            json_str(f, tg__tl_name(r, e->name));
            fprintf(f, ",\"cat\":\"step\",\"ph\":\"i\",\"s\":\"g\",\"ts\":%s,\"pid\":1,\"tid\":%u,"
                       "\"args\":{\"step\":%llu}}", ts, e->tid, (unsigned long long)e->bytes);
            break;
        default: break;
        }
    }
    snprintf(ts, sizeof ts, "%.3f", (double)r->t_end_ns / 1e3);
    for (unsigned t = 0; t <= TL_MAX_TID; t++) /* close spans still open at the end */
        for (; depth[t] > 0; depth[t]--)
            fprintf(f, ",\n{\"name\":\"(unfinished)\",\"cat\":\"backward\",\"ph\":\"E\","
                       "\"ts\":%s,\"pid\":1,\"tid\":%u}", ts, t);
    fprintf(f, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"tapegrad\","
               "\"events\":%zu,\"dropped_events\":%llu,\"units\":\"bytes, microseconds\"}}\n",
            r->n, (unsigned long long)r->dropped);
}

tg_status tg_timeline_write_trace(const char *path) {
    static const char fn[] = "tg_timeline_write_trace";
    tg_status st = begin_write(fn, path);
    if (st != TG_OK) return st;
    FILE *f;
    st = open_out(fn, path, &f);
    if (st == TG_OK) {
        tg__tl_recording r = view_locked();
        write_trace_events(f, &r);
        st = tg__tl_close(fn, path, f);
    }
    pthread_mutex_unlock(&g_tl);
    return st;
}

tg_status tg_timeline_write_svg(const char *path, const char *title) {
    static const char fn[] = "tg_timeline_write_svg";
    tg_status st = begin_write(fn, path);
    if (st != TG_OK) return st;
    FILE *f;
    st = open_out(fn, path, &f);
    if (st == TG_OK) {
        tg__tl_recording r = view_locked();
        st = tg__tl_write_svg(f, &r, title);
        tg_status cst = tg__tl_close(fn, path, f);
        if (st == TG_OK) st = cst;
    }
    pthread_mutex_unlock(&g_tl);
    return st;
}

/* tape/timeline_svg.c - draws a memory timeline as a self-contained SVG.
 *
 * Contract: tg__tl_write_svg (called by tg_timeline_write_svg with the
 * timeline lock held) writes one <svg> document, 960 x 540, with no external
 * fonts, scripts or images: a title and a one-line summary (peak live bytes
 * and when, peak saved bytes, event count), live bytes of every device
 * summed, stacked by category (leaf, activation, gradient, workspace; one
 * colour each) as step areas, the saved bytes as a line, light bands where
 * backward was running graph nodes, a dashed vertical line per step mark with
 * its label (in up to 3 rows; labels that would still overlap are left out),
 * axes in milliseconds and
 * MiB (KiB or bytes when the peak is smaller) with ticks and grid lines, and a
 * legend giving each category's peak. Every number written is finite. With
 * more than 2000 memory events the series are reduced to 1000 time buckets of
 * at most 2 points each: the state with the highest total in the bucket and
 * the last one, so peaks survive exactly (saved bytes: the bucket's highest
 * value is drawn at its first point). Scratch memory is plain malloc (not
 * counted, not fault-injected).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "timeline_internal.h"

#define SVG_W 960
#define SVG_H 540
#define PL 84.0  /* plot area */
#define PR 762.0
#define PT 74.0
#define PB 466.0
#define LEG_X 784.0
#define MAX_POINTS 2000
#define BUCKETS (MAX_POINTS / 2)
#define NDEV 2
/* labels drawn over the areas stay readable: a white outline under the glyphs */
#define HALO "stroke=\"#ffffff\" stroke-width=\"3\" stroke-opacity=\"0.85\" paint-order=\"stroke\""
#define STEP_ROWS 3 /* rows of step labels before labels are left out */

static const char *const k_color[TG_MEM_NCAT] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                                 "#9c755f"};
_Static_assert(TG_MEM_NCAT == 5, "a colour for every memory category");
static const char k_saved_color[] = "#1b1b1b";
static const char k_step_color[] = "#6b6b6b";
static const char k_band_color[] = "#e9eef5";
static const char k_peak_color[] = "#d62728";

typedef struct pt {
    uint64_t t_ns;
    uint64_t v[TG_MEM_NCAT]; /* live bytes by category, all devices */
    uint64_t saved;
} pt;

typedef struct span {
    uint64_t a, b;
} span;

static bool is_mem(const tg__tl_event *e) {
    return e->kind <= TG__TL_SAVED && e->dev < NDEV;
}

static uint64_t total(const pt *p) {
    uint64_t s = 0;
    for (int c = 0; c < TG_MEM_NCAT; c++) s += p->v[c];
    return s;
}

/* ---- scales and labels --------------------------------------------------------------- */

/* A "nice" tick step (1, 2, 2.5 or 5 times a power of ten) giving about n
 * ticks up to v. */
static double nice_step(double v, double n) {
    if (!(v > 0) || !isfinite(v)) return 1;
    double raw = v / n, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    double k = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
    return k * mag;
}

/* Digits after the point that print every multiple of step exactly. */
static int step_decimals(double step) {
    for (int d = 0; d < 6; d++) {
        double x = step * pow(10, d);
        if (fabs(x - round(x)) < 1e-6 * (x > 1 ? x : 1)) return d;
    }
    return 6;
}

static const char *fmt_bytes(char *buf, size_t n, uint64_t b) {
    double v = (double)b;
    if (v >= 1024.0 * 1024 * 1024) snprintf(buf, n, "%.2f GiB", v / (1024.0 * 1024 * 1024));
    else if (v >= 10.0 * 1024 * 1024) snprintf(buf, n, "%.1f MiB", v / (1024.0 * 1024));
    else if (v >= 1024.0 * 1024) snprintf(buf, n, "%.2f MiB", v / (1024.0 * 1024));
    else if (v >= 1024.0) snprintf(buf, n, "%.1f KiB", v / 1024.0);
    else snprintf(buf, n, "%llu B", (unsigned long long)b);
    return buf;
}

static const char *fmt_ms(char *buf, size_t n, uint64_t t_ns) {
    double ms = (double)t_ns / 1e6;
    snprintf(buf, n, ms >= 100 ? "%.0f ms" : ms >= 1 ? "%.1f ms" : "%.3f ms", ms);
    return buf;
}

/* Text content or attribute value: XML-escaped, invalid UTF-8 as '?', at most
 * max characters (then an ellipsis). */
static void svg_text(FILE *f, const char *s, size_t max) {
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; chars++) {
        if (chars == max) {
            fputs("\xE2\x80\xA6", f);
            return;
        }
        size_t n = tg__tl_utf8_len(p);
        if (n == 0) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n == 1) {
            switch (*p) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&apos;", f); break;
            default: fputc(*p < 0x20 || *p == 0x7F ? ' ' : *p, f);
            }
        } else {
            fwrite(p, 1, n, f);
        }
        p += n;
    }
}

/* Characters in s (UTF-8 sequences count once), up to max. */
static size_t text_chars(const char *s, size_t max) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < max; n++) {
        size_t k = tg__tl_utf8_len(p);
        p += k ? k : 1;
    }
    return n;
}

/* ---- the data ---------------------------------------------------------------------- */

typedef struct plot {
    pt *pts;
    size_t npts;
    span *bands;
    size_t nbands, capbands;
    pt peak;               /* the state with the highest total */
    uint64_t peak_cat[TG_MEM_NCAT], peak_saved;
    size_t n_mem;
} plot;

static void add_band(plot *p, uint64_t a, uint64_t b, uint64_t merge) {
    if (p->nbands && a <= p->bands[p->nbands - 1].b + merge) {
        p->bands[p->nbands - 1].b = b;
        return;
    }
    if (p->nbands == p->capbands) {
        size_t cap = p->capbands ? 2 * p->capbands : 64;
        span *v = realloc(p->bands, cap * sizeof *v);
        if (!v) return; /* the bands are a help, not the data: go without */
        p->bands = v;
        p->capbands = cap;
    }
    p->bands[p->nbands++] = (span){a, b};
}

/* Fills p from the events. false when out of memory. */
static bool build(plot *p, const tg__tl_recording *r) {
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < r->n; i++) p->n_mem += is_mem(&r->ev[i]);
    bool bucketed = p->n_mem > MAX_POINTS;
    p->pts = malloc((p->n_mem < MAX_POINTS ? p->n_mem : MAX_POINTS) * sizeof *p->pts + 1);
    if (!p->pts) return false;
    pt dev[NDEV];
    memset(dev, 0, sizeof dev);
    pt bmax = {0}, blast = {0};
    uint64_t bsaved = 0;
    long bucket = -1;
    unsigned open = 0;
    uint64_t band_start = 0, merge = r->t_end_ns / 700;
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
        const tg__tl_event *e = &r->ev[i];
        if (e->kind == TG__TL_BEGIN) {
            if (open++ == 0) band_start = e->t_ns;
            continue;
        }
        if (e->kind == TG__TL_END) {
            if (open && --open == 0) add_band(p, band_start, e->t_ns, merge);
            continue;
        }
        if (!is_mem(e)) continue;
        memcpy(dev[e->dev].v, e->live, sizeof e->live);
        dev[e->dev].saved = e->saved;
        pt s = {e->t_ns, {0}, 0};
        for (int d = 0; d < NDEV; d++) {
            for (int c = 0; c < TG_MEM_NCAT; c++) s.v[c] += dev[d].v[c];
            s.saved += dev[d].saved;
        }
        if (first || total(&s) > total(&p->peak)) p->peak = s;
        first = false;
        for (int c = 0; c < TG_MEM_NCAT; c++)
            if (s.v[c] > p->peak_cat[c]) p->peak_cat[c] = s.v[c];
        if (s.saved > p->peak_saved) p->peak_saved = s.saved;
        if (!bucketed) {
            p->pts[p->npts++] = s;
            continue;
        }
        long b = r->t_end_ns ? (long)((double)s.t_ns / (double)r->t_end_ns * BUCKETS) : 0;
        if (b >= BUCKETS) b = BUCKETS - 1;
        if (b != bucket) {
            if (bucket >= 0) { /* flush: the bucket's highest state, then its last */
                bmax.saved = bsaved;
                p->pts[p->npts++] = bmax;
                if (blast.t_ns != bmax.t_ns || total(&blast) != total(&bmax))
                    p->pts[p->npts++] = blast;
            }
            bucket = b;
            bmax = blast = s;
            bsaved = s.saved;
            continue;
        }
        if (total(&s) > total(&bmax)) bmax = s;
        if (s.saved > bsaved) bsaved = s.saved;
        blast = s;
    }
    if (bucketed && bucket >= 0) {
        bmax.saved = bsaved;
        p->pts[p->npts++] = bmax;
        if (blast.t_ns != bmax.t_ns || total(&blast) != total(&bmax)) p->pts[p->npts++] = blast;
    }
    if (open) add_band(p, band_start, r->t_end_ns, merge);
    return true;
}

/* ---- drawing ------------------------------------------------------------------------- */

typedef struct scale {
    double tmax_ns, ymax;  /* axis ends (time, bytes) */
} scale;

static double x_of_time(const scale *s, uint64_t t) {
    double x = PL + (double)t / s->tmax_ns * (PR - PL);
    return x < PL ? PL : x > PR ? PR : x;
}

static double y_of_bytes(const scale *s, uint64_t v) {
    double y = PB - (double)v / s->ymax * (PB - PT);
    return y < PT ? PT : y > PB ? PB : y;
}

/* Stacked area of category c: its top edge left to right (steps after each
 * point), then its bottom edge back. */
static void draw_area(FILE *f, const plot *p, const scale *s, int c, uint64_t t_end) {
    fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.9\" stroke=\"none\" d=\"", k_color[c]);
    for (size_t i = 0; i < p->npts; i++) {
        uint64_t hi = 0;
        for (int k = 0; k <= c; k++) hi += p->pts[i].v[k];
        double x = x_of_time(s, p->pts[i].t_ns);
        if (i == 0) fprintf(f, "M%.1f %.1f", x, y_of_bytes(s, hi));
        else fprintf(f, "H%.1f V%.1f", x, y_of_bytes(s, hi));
    }
    fprintf(f, "H%.1f", x_of_time(s, t_end));
    for (size_t i = p->npts; i-- > 0;) {
        uint64_t lo = 0;
        for (int k = 0; k < c; k++) lo += p->pts[i].v[k];
        fprintf(f, "V%.1f H%.1f", y_of_bytes(s, lo), x_of_time(s, p->pts[i].t_ns));
    }
    fputs("Z\"/>\n", f);
}

static void draw_saved(FILE *f, const plot *p, const scale *s, uint64_t t_end) {
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" d=\"", k_saved_color);
    for (size_t i = 0; i < p->npts; i++) {
        double x = x_of_time(s, p->pts[i].t_ns), y = y_of_bytes(s, p->pts[i].saved);
        if (i == 0) fprintf(f, "M%.1f %.1f", x, y);
        else fprintf(f, "H%.1f V%.1f", x, y);
    }
    fprintf(f, "H%.1f\"/>\n", x_of_time(s, t_end));
}

static void draw_axes(FILE *f, const scale *s, double tstep_ms, double ystep, double unit,
                      const char *unit_name) {
    char buf[32];
    int yd = step_decimals(ystep / unit), td = step_decimals(tstep_ms);
    fputs("<g font-size=\"12\" fill=\"#333\">\n", f);
    for (int k = 0; k * ystep <= s->ymax * (1 + 1e-9); k++) {
        double y = PB - k * ystep / s->ymax * (PB - PT);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d9d9d9\" "
                   "stroke-width=\"1\"/>\n", PL, y, PR, y);
        snprintf(buf, sizeof buf, "%.*f", yd, k * ystep / unit);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", PL - 7, y + 4,
                buf);
    }
    double tmax_ms = s->tmax_ns / 1e6;
    for (int k = 0; k * tstep_ms <= tmax_ms * (1 + 1e-9); k++) {
        double x = PL + k * tstep_ms / tmax_ms * (PR - PL);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
                   "stroke-width=\"1\"/>\n", x, PB, x, PB + 5);
        snprintf(buf, sizeof buf, "%.*f", td, k * tstep_ms);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, PB + 19,
                buf);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
               "stroke-width=\"1.2\"/>\n", PL, PT, PL, PB);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
               "stroke-width=\"1.2\"/>\n", PL, PB, PR, PB);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">time (ms)"
               "</text>\n", (PL + PR) / 2, PB + 42);
    fprintf(f, "<text x=\"22\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\" "
               "transform=\"rotate(-90 22 %.1f)\">live memory (%s)</text>\n",
            (PT + PB) / 2, (PT + PB) / 2, unit_name);
    fputs("</g>\n", f);
}

static void draw_steps(FILE *f, const tg__tl_recording *r, const scale *s) {
    double row_end[STEP_ROWS];
    for (int k = 0; k < STEP_ROWS; k++) row_end[k] = -1e9;
    fprintf(f, "<g font-size=\"11\" fill=\"#333\" %s>\n", HALO);
    for (size_t i = 0; i < r->n; i++) {
        const tg__tl_event *e = &r->ev[i];
        if (e->kind != TG__TL_STEP) continue;
        double x = x_of_time(s, e->t_ns);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"1.2\" stroke-dasharray=\"5 4\"/>\n", x, PT, x, PB, k_step_color);
        const char *label = tg__tl_name(r, e->name);
        double w = 6.2 * (double)text_chars(label, 24) + 4;
        bool right = x + 3 + w <= PR; /* else the label goes to the left of the line */
        double x0 = right ? x + 3 : x - 3 - w;
        int row = 0; /* the first row where it overlaps no other label */
        while (row < STEP_ROWS && x0 < row_end[row] + 6) row++;
        if (row == STEP_ROWS || x0 < PL) continue; /* no room: the line only */
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", right ? x + 3 : x - 3,
                PT + 12 + 14 * row, right ? "start" : "end");
        svg_text(f, label, 24);
        fputs("</text>\n", f);
        row_end[row] = x0 + w;
    }
    fputs("</g>\n", f);
}

static void draw_legend(FILE *f, const plot *p, bool any_bands, bool any_steps) {
    char buf[32];
    double y = PT;
    fputs("<g font-size=\"12\" fill=\"#222\">\n", f);
    for (int c = TG_MEM_NCAT - 1; c >= 0; c--, y += 36) { /* top to bottom as stacked */
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", LEG_X,
                y, k_color[c]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", LEG_X + 20, y + 11,
                tg_mem_category_name((tg_mem_category)c));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">peak %s</text>\n",
                LEG_X + 20, y + 25, fmt_bytes(buf, sizeof buf, p->peak_cat[c]));
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"1.6\"/>\n", LEG_X, y + 7, LEG_X + 14, y + 7, k_saved_color);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">saved for backward</text>\n", LEG_X + 20, y + 11);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">peak %s</text>\n",
            LEG_X + 20, y + 25, fmt_bytes(buf, sizeof buf, p->peak_saved));
    y += 36;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", LEG_X + 7, y + 7,
            k_peak_color);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">peak live</text>\n", LEG_X + 20, y + 11);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">%s</text>\n",
            LEG_X + 20, y + 25, fmt_bytes(buf, sizeof buf, total(&p->peak)));
    y += 36;
    if (any_steps) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"1.2\" stroke-dasharray=\"5 4\"/>\n", LEG_X + 7, y, LEG_X + 7,
                y + 14, k_step_color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">step mark</text>\n", LEG_X + 20, y + 11);
        y += 24;
    }
    if (any_bands) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\" "
                   "stroke=\"#c5cfdc\"/>\n", LEG_X, y, k_band_color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">backward running</text>\n", LEG_X + 20, y + 11);
    }
    fputs("</g>\n", f);
}

tg_status tg__tl_write_svg(FILE *f, const tg__tl_recording *r, const char *title) {
    plot p;
    if (!build(&p, r)) {
        free(p.bands);
        return tg__set_error(TG_ERR_NOMEM, "tg_timeline_write_svg: out of memory");
    }
    uint64_t t_end = r->t_end_ns;
    if (p.npts && p.pts[p.npts - 1].t_ns > t_end) t_end = p.pts[p.npts - 1].t_ns;
    bool any_steps = false;
    for (size_t i = 0; i < r->n; i++) any_steps |= r->ev[i].kind == TG__TL_STEP;

    /* scales: time in ms; bytes in MiB, or KiB / bytes for small recordings */
    double tmax_ms = t_end > 0 ? (double)t_end / 1e6 : 1e-3;
    double tstep = nice_step(tmax_ms, 7);
    scale s;
    s.tmax_ns = tmax_ms * 1e6; /* the axis ends with the recording, between ticks */
    uint64_t top = total(&p.peak) > p.peak_saved ? total(&p.peak) : p.peak_saved;
    double unit = top >= (1u << 20) ? 1048576.0 : top >= 1024 ? 1024.0 : 1.0;
    const char *unit_name = unit == 1048576.0 ? "MiB" : unit == 1024.0 ? "KiB" : "bytes";
    double ymax_u = top ? (double)top / unit : 1.0;
    double ystep_u = nice_step(ymax_u, 5);
    if (unit == 1.0 && ystep_u < 1) ystep_u = 1;
    s.ymax = ceil(ymax_u / ystep_u - 1e-9) * ystep_u * unit;
    if (!(s.ymax > 0)) s.ymax = unit;
    if (!(s.tmax_ns > 0)) s.tmax_ns = 1e3;

    char b1[32], b2[32], b3[32];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
            SVG_W, SVG_H, SVG_W, SVG_H);
    const char *t = title && *title ? title : "tapegrad memory timeline";
    fputs("<title>", f);
    svg_text(f, t, 200);
    fputs("</title>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", SVG_W,
            SVG_H);
    /* the title fits in the width: smaller type for long titles, then cut */
    bool long_title = text_chars(t, 200) > 74;
    fprintf(f, "<text x=\"%.1f\" y=\"30\" font-size=\"%d\" font-weight=\"bold\" fill=\"#111\">",
            PL, long_title ? 14 : 18);
    svg_text(f, t, long_title ? 96 : 74);
    fputs("</text>\n", f);
    fprintf(f, "<text x=\"%.1f\" y=\"52\" font-size=\"12\" fill=\"#444\">peak live %s at %s"
               " \xC2\xB7 peak saved %s \xC2\xB7 %zu events",
            PL, fmt_bytes(b1, sizeof b1, total(&p.peak)), fmt_ms(b2, sizeof b2, p.peak.t_ns),
            fmt_bytes(b3, sizeof b3, p.peak_saved), r->n);
    if (r->dropped) fprintf(f, " (%llu dropped)", (unsigned long long)r->dropped);
    if (p.n_mem > p.npts) fprintf(f, " \xC2\xB7 drawn from %zu points", p.npts);
    fputs("</text>\n", f);

    fputs("<g>\n", f);
    for (size_t i = 0; i < p.nbands; i++) {
        double x0 = x_of_time(&s, p.bands[i].a), x1 = x_of_time(&s, p.bands[i].b);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                x0, PT, x1 - x0 > 1 ? x1 - x0 : 1, PB - PT, k_band_color);
    }
    fputs("</g>\n", f);
    draw_axes(f, &s, tstep, ystep_u * unit, unit, unit_name);
    fputs("<g>\n", f);
    if (p.npts)
        for (int c = 0; c < TG_MEM_NCAT; c++) draw_area(f, &p, &s, c, t_end);
    if (p.npts) draw_saved(f, &p, &s, t_end);
    fputs("</g>\n", f);
    draw_steps(f, r, &s);
    if (total(&p.peak) > 0) /* mark the peak (its value is in the summary line) */
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"#ffffff\" "
                   "stroke-width=\"1.5\"/>\n", x_of_time(&s, p.peak.t_ns), y_of_bytes(&s, total(&p.peak)),
                k_peak_color);
    draw_legend(f, &p, p.nbands > 0, any_steps);
    fputs("</svg>\n", f);
    free(p.pts);
    free(p.bands);
    return TG_OK;
}

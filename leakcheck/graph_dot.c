/* leakcheck/graph_dot.c - tg_graph_dot(): the graph reachable from some root
 * tensors, written as a Graphviz DOT digraph for people.
 *
 * Contract (see include/tapegrad/graph.h):
 *   - Roots are drawn as notes (each distinct tensor once, first name wins),
 *     graph nodes as boxes (op, creation site, step, saved slots and their
 *     total), leaves as ellipses (name, dtype, shape, bytes, .grad). Edges go
 *     the way gradients flow: root -> its grad_fn -> input nodes / leaves;
 *     rankdir=BT puts the roots at the bottom and the leaves on top, so the
 *     picture reads like the forward pass.
 *   - A root whose graph holds a node created before the current step
 *     (tg_step_mark) is drawn red, labelled "RETAINED since step k"; so are
 *     the edges from it and the outlived nodes (pink).
 *   - Objects are named by id (r<i> roots, n<id> nodes, t<id> leaves); nodes
 *     and leaves shared by several roots appear once; output order is
 *     deterministic (roots as given, then nodes and leaves by id).
 *   - The walk is iterative (an explicit stack): chains of 10^5+ nodes are
 *     fine. Everything is collected before the first byte is written, so an
 *     allocation failure (TG_ERR_NOMEM, through tg__xmalloc and friends, so
 *     fault injection reaches it) writes nothing and frees everything.
 *   - Labels are escaped for DOT: '"' and '\' backslashed, newlines as \n,
 *     other control bytes and invalid UTF-8 replaced.
 *   - Errors: TG_ERR_NULL (f, roots or roots[i] NULL; a pending error is
 *     kept), TG_ERR_VALUE (n < 1), TG_ERR_IO (a write or the final fflush
 *     failed, or f already had its error flag set), TG_ERR_NOMEM.
 * It reads graph objects without taking references or changing them; run it
 * while no other thread changes the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "leakcheck_internal.h"

/* ---- a pointer -> index map (open addressing, linear probing) ----------- */

typedef struct {
    const void **keys;
    int64_t *vals;
    size_t cap, n;   /* cap is 0 or a power of two */
} pmap;

static size_t pmap_hash(const void *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static int64_t pmap_get(const pmap *m, const void *key) {
    if (!m->cap) return -1;
    for (size_t i = pmap_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return -1;
        if (m->keys[i] == key) return m->vals[i];
    }
}

/* Inserts key (not present yet). false on NOMEM (map unchanged). */
static bool pmap_put(pmap *m, const void *key, int64_t val) {
    if (2 * (m->n + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        const void **keys = tg__xcalloc(cap, sizeof *keys);
        int64_t *vals = keys ? tg__xmalloc(cap * sizeof *vals) : NULL;
        if (!vals) {
            free(keys);
            return false;
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->keys[j]) continue;
            size_t i = pmap_hash(m->keys[j], cap);
            while (keys[i]) i = (i + 1) & (cap - 1);
            keys[i] = m->keys[j];
            vals[i] = m->vals[j];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = pmap_hash(key, m->cap);
    while (m->keys[i]) i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return true;
}

/* Changes the value of a key that is present. */
static void pmap_set(pmap *m, const void *key, int64_t val) {
    for (size_t i = pmap_hash(key, m->cap);; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
}

static void pmap_free(pmap *m) {
    free(m->keys);
    free(m->vals);
}

/* Grows *arr (elements of size sz) to hold at least need; false on NOMEM. */
static bool reserve(void **arr, size_t *cap, size_t need, size_t sz) {
    if (need <= *cap) return true;
    size_t c = *cap ? 2 * *cap : 64;
    while (c < need) c *= 2;
    void *p = tg__xrealloc(*arr, c * sz);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

/* ---- what the walk collects -------------------------------------------- */

typedef struct {
    const tg__node *n;
    uint64_t minstep;        /* smallest step of a node in its subgraph */
} gnode;

typedef struct {
    const tg__node *n;
    int next;                /* next edge to look at */
} frame;

typedef struct {
    gnode *nodes;
    size_t nn, cap_n;
    const tg_tensor **leaves;
    size_t nl, cap_l;
    frame *stack;
    size_t cap_s;
    int *roots;              /* indices of the distinct roots */
    size_t nr;
    pmap nmap, lmap, rmap, smap; /* nodes, leaves, roots, saved storages */
    uint64_t saved_bytes;    /* live saved storages, each once */
    int64_t edges;
} walk;

static void walk_free(walk *w) {
    free(w->nodes);
    free(w->leaves);
    free(w->stack);
    free(w->roots);
    pmap_free(&w->nmap);
    pmap_free(&w->lmap);
    pmap_free(&w->rmap);
    pmap_free(&w->smap);
}

static bool add_node(walk *w, const tg__node *n) {
    if (!reserve((void **)&w->nodes, &w->cap_n, w->nn + 1, sizeof *w->nodes) ||
        !pmap_put(&w->nmap, n, (int64_t)w->nn))
        return false;
    w->nodes[w->nn].n = n;
    w->nodes[w->nn].minstep = n->step;
    w->nn++;
    for (int k = 0; k < n->n_saved; k++) {
        const tg__storage *s = n->saved[k].storage;
        if (!s || pmap_get(&w->smap, s) >= 0) continue;
        if (!pmap_put(&w->smap, s, 0)) return false;
        w->saved_bytes += s->nbytes;
    }
    return true;
}

/* Depth-first from start (not seen yet), iteratively; on leaving a node its
 * minstep takes the smallest of its inputs' (the graph is acyclic: an edge
 * only points to a node that existed before). */
static bool visit(walk *w, const tg__node *start) {
    size_t sp = 0;
    if (!reserve((void **)&w->stack, &w->cap_s, 1, sizeof *w->stack) || !add_node(w, start))
        return false;
    w->stack[sp++] = (frame){start, 0};
    while (sp) {
        frame *top = &w->stack[sp - 1];
        const tg__node *n = top->n;
        if (top->next < n->n_in) {
            const tg__edge *e = &n->edge[top->next++];
            tg_tensor *leaf = tg__edge_leaf(e); /* NULL: the leaf is gone */
            if (leaf) {
                w->edges++;
                if (pmap_get(&w->lmap, leaf) >= 0) continue;
                if (!reserve((void **)&w->leaves, &w->cap_l, w->nl + 1, sizeof *w->leaves) ||
                    !pmap_put(&w->lmap, leaf, (int64_t)w->nl))
                    return false;
                w->leaves[w->nl++] = leaf;
            } else if (e->kind == TG__EDGE_NODE) {
                w->edges++;
                if (pmap_get(&w->nmap, e->node) >= 0) continue;
                if (!reserve((void **)&w->stack, &w->cap_s, sp + 1, sizeof *w->stack) ||
                    !add_node(w, e->node))
                    return false;
                w->stack[sp++] = (frame){e->node, 0};
            }
            continue;
        }
        gnode *g = &w->nodes[pmap_get(&w->nmap, n)];
        for (int i = 0; i < n->n_in; i++) {
            if (n->edge[i].kind != TG__EDGE_NODE) continue;
            uint64_t m = w->nodes[pmap_get(&w->nmap, n->edge[i].node)].minstep;
            if (m < g->minstep) g->minstep = m;
        }
        sp--;
    }
    return true;
}

static bool collect(walk *w, tg_tensor *const *roots, int n) {
    w->roots = tg__xmalloc((size_t)n * sizeof *w->roots);
    if (!w->roots) return false;
    for (int i = 0; i < n; i++) {
        if (pmap_get(&w->rmap, roots[i]) >= 0) continue;
        if (!pmap_put(&w->rmap, roots[i], i)) return false;
        w->roots[w->nr++] = i;
        const tg__node *g = roots[i]->grad_fn;
        if (!g) continue;
        w->edges++;
        if (pmap_get(&w->nmap, g) < 0 && !visit(w, g)) return false;
    }
    return true;
}

static int cmp_gnode(const void *a, const void *b) {
    uint64_t x = ((const gnode *)a)->n->id, y = ((const gnode *)b)->n->id;
    return x < y ? -1 : x > y;
}

static int cmp_leaf(const void *a, const void *b) {
    uint64_t x = (*(const tg_tensor *const *)a)->id, y = (*(const tg_tensor *const *)b)->id;
    return x < y ? -1 : x > y;
}

/* ---- writing ------------------------------------------------------------ */

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF
 * (contract in leakcheck_internal.h). */
int tg__utf8_len(const unsigned char *s) {
    int len;
    if (s[0] < 0x80) return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef) len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) len = 4;
    else return 0;
    for (int k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) return 0;
    if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))) return 0;
    return len;
}

/* Writes s inside a DOT double-quoted string. */
static void put_escaped(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p++, f);
        } else if (*p == '\n') {
            fputs("\\n", f);
            p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            fputc(' ', f);
            p++;
        } else {
            int len = tg__utf8_len(p);
            if (len == 0) {
                fputc('?', f);
                p++;
            } else {
                fwrite(p, 1, (size_t)len, f);
                p += len;
            }
        }
    }
}

static const char *site_file(tg_site s) { return s.file ? s.file : "?"; }

/* "128 B", or "16 B (view of a 1.0 MiB storage)" when the storage is larger. */
static void bytes_desc(FILE *f, size_t view, size_t storage) {
    char b[32], c[32];
    fputs(tg__fmt_bytes(b, sizeof b, (double)view), f);
    if (view < storage)
        fprintf(f, " (view of a %s storage)", tg__fmt_bytes(c, sizeof c, (double)storage));
}

static size_t meta_bytes(tg_dtype dt, int ndim, const int64_t *shape) {
    return (size_t)tg__k_numel(ndim, shape) * tg_dtype_size(dt);
}

/* "f32 [4, 8] 128 B" for a tensor. */
static void tensor_desc(FILE *f, const tg_tensor *t) {
    char sh[128];
    fprintf(f, "%s %s ", tg_dtype_name(t->dtype), tg__shape_str(sh, sizeof sh, t->ndim, t->shape));
    bytes_desc(f, meta_bytes(t->dtype, t->ndim, t->shape), t->storage->nbytes);
}

static void write_root(FILE *f, const walk *w, int i, const tg_tensor *t, const char *name) {
    const gnode *g = NULL;
    if (t->grad_fn) g = &w->nodes[pmap_get(&w->nmap, t->grad_fn)];
    uint64_t cur = tg__current_step_locked(); /* under tg__quiesce_begin */
    bool retained = g && g->minstep < cur;
    fprintf(f, "  r%d [shape=note, style=\"filled%s\", fillcolor=\"%s\", color=\"%s\", "
               "penwidth=%s, label=\"",
            i, retained ? ",bold" : "", retained ? "#ffb3b3" : "#fff2b3",
            retained ? "#d00000" : "#806600", retained ? "3" : "1.5");
    if (name) put_escaped(f, name);
    else if (t->name[0]) put_escaped(f, t->name);
    else fprintf(f, "tensor #%llu", (unsigned long long)t->id);
    fputs("\\n", f);
    tensor_desc(f, t);
    fprintf(f, "\\nroot, created at ");
    put_escaped(f, site_file(t->site));
    fprintf(f, ":%d, step %llu", t->site.line, (unsigned long long)t->step);
    if (!t->grad_fn) fputs("\\n(no graph: a leaf)", f);
    if (retained)
        fprintf(f, "\\nRETAINED since step %llu (current step %llu)",
                (unsigned long long)g->minstep, (unsigned long long)cur);
    fputs("\"", f);
    if (retained) fputs(", fontcolor=\"#a00000\"", f);
    fputs("];\n", f);
}

static void write_saved(FILE *f, const tg__node *n, const tg__saved *sv) {
    char sh[128];
    fputs("\\nsaved: ", f);
    if (sv->name[0]) {
        fputc('\'', f);
        put_escaped(f, sv->name);
        fputs("' ", f);
    } else if (sv->is_output) {
        if (n->n_out > 1) fprintf(f, "own output %d ", sv->io_index);
        else fputs("own output ", f);
    } else if (sv->io_index >= 0) {
        fprintf(f, "input %d ", sv->io_index);
    }
    fprintf(f, "%s %s ", tg_dtype_name(sv->meta.dtype),
            tg__shape_str(sh, sizeof sh, sv->meta.ndim, sv->meta.shape));
    if (!sv->storage) fputs("freed", f);
    else bytes_desc(f, meta_bytes(sv->meta.dtype, sv->meta.ndim, sv->meta.shape), sv->storage->nbytes);
}

static void write_node(FILE *f, const gnode *g, uint64_t cur) {
    const tg__node *n = g->n;
    bool old = n->step < cur;
    fprintf(f, "  n%llu [shape=box, style=\"rounded,filled%s\", fillcolor=\"%s\", label=\"",
            (unsigned long long)n->id, n->freed ? ",dashed" : "", old ? "#f8d0d0" : "#dbe9f6");
    put_escaped(f, n->name ? n->name : "?");
    fputs("\\n", f);
    put_escaped(f, site_file(n->site));
    fprintf(f, ":%d, step %llu%s", n->site.line, (unsigned long long)n->step,
            old ? " (earlier step)" : "");
    uint64_t total = 0;
    int live = 0;
    for (int k = 0; k < n->n_saved; k++) {
        const tg__saved *sv = &n->saved[k];
        write_saved(f, n, sv);
        if (!sv->storage) continue;
        live++;
        bool dup = false; /* a storage saved twice by one node counts once */
        for (int j = 0; j < k; j++) dup |= n->saved[j].storage == sv->storage;
        if (!dup) total += sv->storage->nbytes;
    }
    char b[32];
    if (n->n_saved && live)
        fprintf(f, "\\nsaved total: %s", tg__fmt_bytes(b, sizeof b, (double)total));
    else if (n->n_saved)
        fputs("\\nsaved total: 0 B (freed by backward)", f);
    else
        fputs("\\nsaves nothing", f);
    if (n->state_bytes)
        fprintf(f, "\\nstate: %s", tg__fmt_bytes(b, sizeof b, (double)n->state_bytes));
    fputs("\"];\n", f);
}

static void write_leaf(FILE *f, const tg_tensor *t) {
    fprintf(f, "  t%llu [shape=ellipse, style=filled, fillcolor=\"#d8f0d8\", label=\"",
            (unsigned long long)t->id);
    if (t->name[0]) put_escaped(f, t->name);
    else fprintf(f, "leaf #%llu", (unsigned long long)t->id);
    fputs("\\n", f);
    tensor_desc(f, t);
    if (t->grad) {
        char b[32];
        fprintf(f, "\\n.grad %s", tg__fmt_bytes(b, sizeof b, (double)t->grad->storage->nbytes));
    }
    fputs("\\n", f);
    put_escaped(f, site_file(t->site));
    fprintf(f, ":%d\"];\n", t->site.line);
}

static void write_edges(FILE *f, const tg__node *n) {
    for (int i = 0; i < n->n_in; i++) {
        const tg__edge *e = &n->edge[i];
        if (tg__edge_leaf(e)) {
            fprintf(f, "  n%llu -> t%llu;\n", (unsigned long long)n->id,
                    (unsigned long long)tg__edge_leaf(e)->id);
        } else if (e->kind == TG__EDGE_NODE) {
            fprintf(f, "  n%llu -> n%llu", (unsigned long long)n->id,
                    (unsigned long long)e->node->id);
            if (e->node->n_out > 1) fprintf(f, " [label=\"output %d\"]", e->output_nr);
            fputs(";\n", f);
        }
    }
}

static void write_dot(FILE *f, const walk *w, tg_tensor *const *roots, const char *const *names) {
    uint64_t cur = tg__current_step_locked(); /* under tg__quiesce_begin */
    char b[32];
    fputs("digraph tapegrad {\n", f);
    fprintf(f, "  graph [rankdir=BT, fontname=\"Helvetica\", fontsize=11, labelloc=t, "
               "label=\"tapegrad graph: %zu node%s, %zu lea%s, %lld edge%s; saved tensors "
               "held: %s; current step %llu\"];\n",
            w->nn, w->nn == 1 ? "" : "s", w->nl, w->nl == 1 ? "f" : "ves", (long long)w->edges,
            w->edges == 1 ? "" : "s", tg__fmt_bytes(b, sizeof b, (double)w->saved_bytes),
            (unsigned long long)cur);
    fputs("  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [color=\"#555555\", arrowsize=0.7, fontname=\"Helvetica\", fontsize=9];\n",
          f);
    for (size_t k = 0; k < w->nr; k++) {
        int i = w->roots[k];
        write_root(f, w, i, roots[i], names ? names[i] : NULL);
    }
    for (size_t k = 0; k < w->nn; k++) write_node(f, &w->nodes[k], cur);
    for (size_t k = 0; k < w->nl; k++) write_leaf(f, w->leaves[k]);
    for (size_t k = 0; k < w->nr; k++) {
        int i = w->roots[k];
        const tg__node *g = roots[i]->grad_fn;
        if (!g) continue;
        bool retained = w->nodes[pmap_get(&w->nmap, g)].minstep < cur;
        fprintf(f, "  r%d -> n%llu", i, (unsigned long long)g->id);
        if (retained || g->n_out > 1) {
            fputs(" [", f);
            if (g->n_out > 1) fprintf(f, "label=\"output %d\"%s", roots[i]->output_nr, retained ? ", " : "");
            if (retained) fputs("color=\"#d00000\", penwidth=2.5", f);
            fputs("]", f);
        }
        fputs(";\n", f);
    }
    for (size_t k = 0; k < w->nn; k++) write_edges(f, w->nodes[k].n);
    fputs("}\n", f);
}

tg_status tg_graph_dot(FILE *f, tg_tensor *const *roots, int n, const char *const *names) {
    static const char *fn = "tg_graph_dot";
    if (tg__null_arg(f, fn, "f") || tg__null_arg(roots, fn, "roots")) return tg_last_status();
    if (n < 1) return tg__set_error(TG_ERR_VALUE, "%s: n is %d, expected at least one root", fn, n);
    for (int i = 0; i < n; i++) {
        if (roots[i]) continue;
        char arg[32];
        snprintf(arg, sizeof arg, "roots[%d]", i);
        tg__null_arg(NULL, fn, arg);
        return tg_last_status();
    }
    walk w = {0};
    tg__quiesce_begin(); /* no backward frees what it reads, no leaf handle goes */
    if (!collect(&w, roots, n)) {
        tg__quiesce_end();
        walk_free(&w);
        return tg__set_error(TG_ERR_NOMEM, "%s: out of memory", fn);
    }
    if (w.nn) qsort(w.nodes, w.nn, sizeof *w.nodes, cmp_gnode);
    if (w.nl) qsort(w.leaves, w.nl, sizeof *w.leaves, cmp_leaf);
    /* the nodes moved: point the map at their new places */
    for (size_t k = 0; k < w.nn; k++) pmap_set(&w.nmap, w.nodes[k].n, (int64_t)k);
    write_dot(f, &w, roots, names);
    tg__quiesce_end();
    walk_free(&w);
    if (fflush(f) != 0 || ferror(f))
        return tg__set_error(TG_ERR_IO, "%s: write failed", fn);
    return TG_OK;
}

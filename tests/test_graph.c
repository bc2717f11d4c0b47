/* tests/test_graph.c - tg_graph_dot: what a small loss's DOT says (ops, saved
 * shapes and bytes, leaves, edges), saved tensors freed by backward, retained
 * roots highlighted, shared subgraphs emitted once, escaping, deep chains,
 * every error path, allocation-failure sweep, write failure. The DOT is
 * checked structurally here; Graphviz is not needed to run these tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg_test_util.h"

TestSuite(graph, .init = tgt_setup, .fini = tgt_teardown);

/* ---- helpers ------------------------------------------------------------- */

/* Runs tg_graph_dot into memory; returns the status, *out the text (free it). */
static tg_status dot_to_string(tg_tensor *const *roots, int n, const char *const *names,
                               char **out) {
    size_t len = 0;
    *out = NULL;
    FILE *f = open_memstream(out, &len);
    cr_assert_not_null(f);
    tg_status st = tg_graph_dot(f, roots, n, names);
    cr_assert_eq(fclose(f), 0);
    return st;
}

/* Occurrences of sub in s (a plain loop: strstr under ASan rescans the
 * whole haystack each call, quadratic on the 100k-node output). */
static int count_of(const char *s, const char *sub) {
    int k = 0;
    size_t n = strlen(sub);
    for (const char *p = s; *p; p++)
        if (*p == sub[0] && strncmp(p, sub, n) == 0) {
            k++;
            p += n - 1;
        }
    return k;
}

/* The line that starts (after indentation) with `prefix`, copied into buf. */
static const char *line_of(const char *s, const char *prefix, char *buf, size_t n) {
    size_t pl = strlen(prefix);
    for (const char *p = s; p && *p;) {
        while (*p == ' ') p++;
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= pl && strncmp(p, prefix, pl) == 0) {
            snprintf(buf, n, "%.*s", (int)len, p);
            return buf;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

/* Structural check of DOT: header and footer, quotes closed on every line
 * (escapes honoured), braces balanced outside quotes, every statement inside
 * the graph ends with ';'. */
static void assert_plausible_dot(const char *s) {
    cr_assert(strncmp(s, "digraph tapegrad {\n", 19) == 0, "bad header: %.40s", s);
    size_t len = strlen(s);
    cr_assert(len >= 2 && strcmp(s + len - 2, "}\n") == 0, "bad footer");
    int depth = 0;
    bool inq = false;
    for (const char *p = s; *p; p++) {
        if (inq) {
            cr_assert(*p != '\n', "raw newline inside a quoted string");
            if (*p == '\\') {
                cr_assert(p[1] != '\0' && p[1] != '\n', "dangling backslash");
                p++;
            } else if (*p == '"') {
                inq = false;
            }
            continue;
        }
        if (*p == '"') inq = true;
        else if (*p == '{') depth++;
        else if (*p == '}') cr_assert(--depth >= 0, "unbalanced '}'");
        else if (*p == '\n' && p[1] && p[1] != '}') {
            /* the next line is a statement: it must end with ';' */
            const char *end = strchr(p + 1, '\n');
            cr_assert_not_null(end);
            cr_assert_eq(end[-1], ';', "statement without ';': %.*s", (int)(end - p - 1), p + 1);
        }
    }
    cr_assert_not(inq, "unterminated quoted string");
    cr_assert_eq(depth, 0, "unbalanced braces");
}

typedef struct {
    tg_tensor *logits, *targets, *w, *loss;
} small_loss;

/* loss = sum(exp(logprob) * entropy * w) over 4 rows of 8 logits:
 * nodes SumBackward -> MulBackward -> {MulBackward, leaf w};
 * MulBackward -> {ExpBackward, LogprobEntropyBackward (output 1)};
 * ExpBackward -> LogprobEntropyBackward (output 0) -> leaf logits.
 * 5 nodes, 2 leaves, 8 edges with the root's. */
static small_loss make_small_loss(void) {
    small_loss m;
    m.logits = tg_set_name(tg_randn(TG_F32, TG_SHAPE(4, 8), 7, 0.0, 1.0), "logits");
    cr_assert_eq(tg_set_requires_grad(m.logits, true), TG_OK);
    m.targets = tg_set_name(tg_from_data(TG_I64, TG_SHAPE(4), (const int64_t[]){1, 0, 7, 3}),
                            "targets");
    m.w = tg_set_name(tg_ones(TG_F32, TG_SHAPE(4)), "w");
    cr_assert_eq(tg_set_requires_grad(m.w, true), TG_OK);
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(m.logits, m.targets, NULL, &lp, &h), TG_OK, "%s",
                 tg_last_error());
    int tok = tg_scope_begin();
    m.loss = tg_sum(tg_mul(tg_mul(tg_exp(lp), h), m.w));
    cr_assert_not_null(m.loss, "%s", tg_last_error());
    tg_scope_keep(m.loss);
    cr_assert_eq(tg_scope_end(tok), TG_OK);
    tg_set_name(m.loss, "loss");
    tg_release(lp);
    tg_release(h);
    return m;
}

static void free_small_loss(small_loss *m) {
    tg_release(m->loss);
    tg_release(m->w);
    tg_release(m->targets);
    tg_release(m->logits);
}

/* A chain y = -(-(...x)) of n NegBackward nodes over one leaf. */
static tg_tensor *make_chain(tg_tensor *x, int n) {
    tg_tensor *y = tg_retain(x);
    for (int i = 0; i < n; i++) {
        tg_tensor *z = tg_neg(y);
        cr_assert_not_null(z, "%s", tg_last_error());
        tg_release(y);
        y = z;
    }
    return y;
}

/* ---- content --------------------------------------------------------------- */

Test(graph, small_loss_ops_saved_leaves_edges) {
    small_loss m = make_small_loss();
    char *s;
    cr_assert_eq(dot_to_string(&m.loss, 1, NULL, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    const char *ops[] = {"LogprobEntropyBackward", "ExpBackward", "SumBackward"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(count_of(s, ops[i]), 1, "%s:\n%s", ops[i], s);
    cr_assert_eq(count_of(s, "MulBackward"), 2, "%s", s);
    cr_assert_eq(count_of(s, "shape=box"), 5, "%s", s);
    cr_assert_eq(count_of(s, "shape=ellipse"), 2, "%s", s);
    cr_assert_eq(count_of(s, "shape=note"), 1, "%s", s);
    cr_assert_eq(count_of(s, " -> "), 8, "%s", s);
    cr_assert(strstr(s, "5 nodes, 2 leaves, 8 edges") != NULL, "%s", s);
    /* saved tensors: the logits by reference, targets, per-row stats */
    cr_assert(strstr(s, "saved: 'logits' f32 [4, 8] 128 B") != NULL, "%s", s);
    cr_assert(strstr(s, "saved: 'targets' i64 [4] 32 B") != NULL, "%s", s);
    cr_assert(strstr(s, "saved: own output f32 [4] 16 B") != NULL, "%s", s); /* exp's output */
    cr_assert(strstr(s, "saved total:") != NULL, "%s", s);
    cr_assert(strstr(s, "saves nothing") != NULL, "%s", s); /* SumBackward */
    cr_assert(strstr(s, "test_graph.c:") != NULL, "creation sites: %s", s);
    cr_assert(strstr(s, "step 0") != NULL, "%s", s);
    /* leaves with name, dtype, shape, bytes; the root with its name */
    cr_assert(strstr(s, "label=\"logits\\nf32 [4, 8] 128 B") != NULL, "%s", s);
    cr_assert(strstr(s, "label=\"w\\nf32 [4] 16 B") != NULL, "%s", s);
    cr_assert(strstr(s, "label=\"loss\\nf32 [] 4 B") != NULL, "%s", s);
    /* the multi-output node's edges say which output */
    cr_assert(strstr(s, "[label=\"output 1\"]") != NULL, "%s", s);
    cr_assert(strstr(s, "[label=\"output 0\"]") != NULL, "%s", s);
    cr_assert_null(strstr(s, "RETAINED"), "%s", s);
    cr_assert_null(strstr(s, "freed"), "%s", s);
    free(s);
    /* a name given for the root wins over the tensor's */
    const char *names[] = {"my loss"};
    cr_assert_eq(dot_to_string(&m.loss, 1, names, &s), TG_OK);
    cr_assert(strstr(s, "label=\"my loss\\n") != NULL, "%s", s);
    free(s);
    free_small_loss(&m);
}

Test(graph, saved_tensors_show_freed_after_backward) {
    small_loss m = make_small_loss();
    cr_assert_eq(tg_backward(m.loss, NULL, false), TG_OK, "%s", tg_last_error());
    char *s;
    cr_assert_eq(dot_to_string(&m.loss, 1, NULL, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    cr_assert(strstr(s, "saved: 'logits' f32 [4, 8] freed") != NULL, "%s", s);
    cr_assert(strstr(s, "saved: 'targets' i64 [4] freed") != NULL, "%s", s);
    cr_assert_null(strstr(s, "128 B\\nsaved"), "%s", s);
    cr_assert_eq(count_of(s, "saved total: 0 B (freed by backward)"), 4, "%s", s);
    cr_assert(strstr(s, "saved tensors held: 0 B") != NULL, "%s", s);
    cr_assert_eq(count_of(s, "rounded,filled,dashed"), 4, "freed nodes dashed: %s", s);
    /* the leaves now carry their gradients */
    cr_assert(strstr(s, "logits\\nf32 [4, 8] 128 B\\n.grad 128 B") != NULL, "%s", s);
    cr_assert(strstr(s, "w\\nf32 [4] 16 B\\n.grad 16 B") != NULL, "%s", s);
    free(s);
    free_small_loss(&m);
}

Test(graph, retained_root_is_highlighted_fresh_one_is_not) {
    tg_tensor *x = tg_set_name(tg_ones(TG_F64, TG_SHAPE(3)), "x");
    tg_set_requires_grad(x, true);
    tg_tensor *e = tg_exp(x);
    tg_tensor *kept = tg_set_name(tg_sum(e), "losses[0]"); /* logged without detach */
    tg_release(e);
    cr_assert_eq(tg_step_mark("microbatch 0"), 1u);
    e = tg_exp(x);
    tg_tensor *fresh = tg_set_name(tg_sum(e), "loss");
    tg_release(e);
    tg_tensor *roots[] = {kept, fresh};
    char *s, buf[1024];
    cr_assert_eq(dot_to_string(roots, 2, NULL, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    cr_assert_not_null(line_of(s, "r0 [", buf, sizeof buf), "%s", s);
    cr_assert(strstr(buf, "RETAINED since step 0 (current step 1)") != NULL, "%s", buf);
    cr_assert(strstr(buf, "bold") != NULL && strstr(buf, "#d00000") != NULL, "%s", buf);
    cr_assert_not_null(line_of(s, "r1 [", buf, sizeof buf), "%s", s);
    cr_assert_null(strstr(buf, "RETAINED"), "%s", buf);
    cr_assert_null(strstr(buf, "bold"), "%s", buf);
    cr_assert_not_null(line_of(s, "r0 -> ", buf, sizeof buf));
    cr_assert(strstr(buf, "penwidth") != NULL, "%s", buf);
    cr_assert_not_null(line_of(s, "r1 -> ", buf, sizeof buf));
    cr_assert_null(strstr(buf, "penwidth"), "%s", buf);
    cr_assert_eq(count_of(s, "(earlier step)"), 2, "%s", s);
    /* the leaf x is shared by both graphs: once */
    cr_assert_eq(count_of(s, "shape=ellipse"), 1, "%s", s);
    free(s);
    /* the fresh root alone is not retained */
    cr_assert_eq(dot_to_string(&fresh, 1, NULL, &s), TG_OK);
    cr_assert_null(strstr(s, "RETAINED"), "%s", s);
    cr_assert_null(strstr(s, "earlier step"), "%s", s);
    free(s);
    tg_release(kept);
    tg_release(fresh);
    tg_release(x);
}

Test(graph, shared_subgraph_emitted_once) {
    tg_tensor *x = tg_set_name(tg_ones(TG_F32, TG_SHAPE(2, 2)), "x");
    tg_set_requires_grad(x, true);
    tg_tensor *a = tg_exp(x); /* shared by both roots */
    tg_tensor *b1 = tg_sum(a);
    tg_tensor *aa = tg_mul(a, a);
    tg_tensor *b2 = tg_sum(aa);
    tg_tensor *roots[] = {b1, b2, b1}; /* b1 twice: drawn once */
    const char *names[] = {"first", NULL, "again"};
    char *s;
    cr_assert_eq(dot_to_string(roots, 3, names, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    cr_assert_eq(count_of(s, "ExpBackward"), 1, "%s", s);
    cr_assert_eq(count_of(s, "shape=box"), 4, "%s", s);     /* Exp, Sum, Mul, Sum */
    cr_assert_eq(count_of(s, "shape=note"), 2, "%s", s);
    cr_assert_eq(count_of(s, "shape=ellipse"), 1, "%s", s);
    /* r0->Sum, r1->Sum, Sum->Exp, Sum->Mul, Mul->Exp twice, Exp->x */
    cr_assert_eq(count_of(s, " -> "), 7, "%s", s);
    cr_assert(strstr(s, "label=\"first\\n") != NULL, "%s", s);
    cr_assert_null(strstr(s, "again"), "%s", s);
    cr_assert(strstr(s, "r1 [") != NULL && strstr(s, "r2 [") == NULL, "%s", s);
    /* no name given and none set: the tensor's id */
    cr_assert(strstr(s, "label=\"tensor #") != NULL, "%s", s);
    free(s);
    tg_release(b2);
    tg_release(aa);
    tg_release(b1);
    tg_release(a);
    tg_release(x);
}

Test(graph, output_is_deterministic_and_ordered_by_id) {
    small_loss m = make_small_loss();
    char *s1, *s2, buf[256];
    cr_assert_eq(dot_to_string(&m.loss, 1, NULL, &s1), TG_OK);
    cr_assert_eq(dot_to_string(&m.loss, 1, NULL, &s2), TG_OK);
    cr_assert_str_eq(s1, s2);
    /* node statements appear in increasing id order */
    unsigned long long prev = 0;
    int seen = 0;
    for (const char *p = strstr(s1, "\n  n"); p; p = strstr(p + 1, "\n  n")) {
        unsigned long long id;
        if (sscanf(p + 4, "%llu [", &id) != 1 || !strchr(line_of(p + 1, "n", buf, sizeof buf), '['))
            continue;
        if (strstr(buf, " -> ")) continue;
        cr_assert_gt(id, prev, "node n%llu after n%llu", id, prev);
        prev = id;
        seen++;
    }
    cr_assert_eq(seen, 5);
    free(s1);
    free(s2);
    free_small_loss(&m);
}

Test(graph, saved_view_names_its_storage) {
    tg_tensor *x = tg_set_name(tg_ones(TG_F32, TG_SHAPE(4, 8)), "x");
    tg_set_requires_grad(x, true);
    tg_tensor *v = tg_slice(x, 0, 0, 1, 1); /* [1, 8] view of 128 B */
    tg_tensor *y = tg_mul(v, v);
    char *s;
    cr_assert_eq(dot_to_string(&y, 1, NULL, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    cr_assert(strstr(s, "f32 [1, 8] 32 B (view of a 128 B storage)") != NULL, "%s", s);
    /* MulBackward saves the one storage twice: its total counts it once */
    cr_assert(strstr(s, "saved total: 128 B") != NULL, "%s", s);
    cr_assert(strstr(s, "SliceBackward") != NULL, "%s", s);
    free(s);
    tg_release(y);
    tg_release(v);
    tg_release(x);
}

Test(graph, labels_are_escaped) {
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(2));
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_sum(x);
    const char *names[] = {"say \"hi\" \\ back\nslash\t\xff end"};
    char *s;
    cr_assert_eq(dot_to_string(&y, 1, names, &s), TG_OK);
    assert_plausible_dot(s);
    cr_assert(strstr(s, "label=\"say \\\"hi\\\" \\\\ back\\nslash ? end\\n") != NULL, "%s", s);
    /* a leaf root has no graph */
    free(s);
    cr_assert_eq(dot_to_string(&x, 1, NULL, &s), TG_OK);
    assert_plausible_dot(s);
    cr_assert(strstr(s, "(no graph: a leaf)") != NULL, "%s", s);
    cr_assert(strstr(s, "0 nodes, 0 leaves, 0 edges") != NULL, "%s", s);
    free(s);
    tg_release(y);
    tg_release(x);
}

Test(graph, composite_chunked_custom_function_node) {
    tg_tensor *z = tg_randn(TG_F64, TG_SHAPE(6, 5), 3, 0.0, 1.0);
    tg_set_requires_grad(z, true);
    tg_tensor *y = tg_from_data(TG_I64, TG_SHAPE(6), (const int64_t[]){0, 1, 2, 3, 4, 0});
    tg_logprob_opts o = tg_logprob_opts_default();
    o.impl = TG_LOGPROB_COMPOSITE;
    o.chunk_size = 2;
    tg_tensor *lp = NULL, *h = NULL;
    cr_assert_eq(tg_logprob_entropy(z, y, &o, &lp, &h), TG_OK, "%s", tg_last_error());
    tg_tensor *loss = tg_sum(lp);
    char *s;
    cr_assert_eq(dot_to_string(&loss, 1, NULL, &s), TG_OK, "%s", tg_last_error());
    assert_plausible_dot(s);
    cr_assert(strstr(s, "SumBackward") != NULL, "%s", s);
    free(s);
    tg_release(loss);
    tg_release(lp);
    tg_release(h);
    tg_release(y);
    tg_release(z);
}

Test(graph, deep_chain_exports_without_recursion, .timeout = 120) {
    tg_tensor *x = tg_set_name(tg_ones(TG_F32, TG_SHAPE(1)), "x");
    tg_set_requires_grad(x, true);
    tg_tensor *y = make_chain(x, 100000);
    FILE *f = fopen("/dev/null", "w");
    cr_assert_not_null(f);
    cr_assert_eq(tg_graph_dot(f, &y, 1, NULL), TG_OK, "%s", tg_last_error());
    fclose(f);
    char *s;
    cr_assert_eq(dot_to_string(&y, 1, NULL, &s), TG_OK);
    cr_assert(strstr(s, "100000 nodes, 1 leaf, 100001 edges") != NULL, "%.300s", s);
    cr_assert_eq(count_of(s, "NegBackward"), 100000);
    free(s);
    tg_release(y);
    tg_release(x);
}

/* ---- errors -------------------------------------------------------------------- */

Test(graph, null_and_value_errors) {
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(2));
    tg_tensor *roots[] = {x, NULL};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_graph_dot(NULL, roots, 1, NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "tg_graph_dot", "'f'", NULL);
    tg_clear_error();
    cr_assert_eq(tg_graph_dot(f, NULL, 1, NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "'roots'", NULL);
    tg_clear_error();
    cr_assert_eq(tg_graph_dot(f, roots, 2, NULL), TG_ERR_NULL);
    tgt_assert_error(TG_ERR_NULL, "'roots[1]'", NULL);
    tg_clear_error();
    cr_assert_eq(tg_graph_dot(f, roots, 0, NULL), TG_ERR_VALUE);
    tgt_assert_error(TG_ERR_VALUE, "tg_graph_dot", "n is 0", NULL);
    cr_assert_eq(tg_graph_dot(f, roots, -3, NULL), TG_ERR_VALUE);
    tg_clear_error();
    /* NULL propagation: a root that failed to build keeps the first error */
    tg_tensor *three = tg_ones(TG_F32, TG_SHAPE(3));
    tg_tensor *bad = tg_add(x, three); /* shape error */
    cr_assert_null(bad);
    tg_release(three);
    tg_status first = tg_last_status();
    cr_assert_eq(first, TG_ERR_SHAPE);
    cr_assert_eq(tg_graph_dot(f, &bad, 1, NULL), TG_ERR_SHAPE);
    tgt_assert_error(TG_ERR_SHAPE, NULL);
    fclose(f);
    cr_assert_eq(len, 0u, "nothing is written on argument errors: %s", buf);
    free(buf);
    tg_release(x);
}

Test(graph, write_failure_is_io_error) {
    small_loss m = make_small_loss();
    FILE *f = fopen("/dev/full", "w");
    if (!f) cr_skip_test("no /dev/full");
    cr_assert_eq(tg_graph_dot(f, &m.loss, 1, NULL), TG_ERR_IO);
    tgt_assert_error(TG_ERR_IO, "tg_graph_dot", "write failed", NULL);
    fclose(f);
    free_small_loss(&m);
}

Test(graph, fault_injection_sweep) {
    small_loss m = make_small_loss();
    tg_tensor *x = tg_ones(TG_F32, TG_SHAPE(1));
    tg_set_requires_grad(x, true);
    tg_tensor *chain = make_chain(x, 300); /* enough to grow every table */
    tg_tensor *roots[] = {m.loss, chain};
    char *want;
    cr_assert_eq(dot_to_string(roots, 2, NULL, &want), TG_OK);
    int nomem = 0;
    for (uint64_t k = 1;; k++) {
        cr_assert_lt(k, 1000u, "no success after 1000 injected failures");
        tg_clear_error();
        char *s;
        tg_fault_inject(k, false);
        tg_status st = dot_to_string(roots, 2, NULL, &s);
        uint64_t fired = tg_fault_inject(0, false);
        if (st == TG_OK) {
            cr_assert_eq(fired, 0u);
            cr_assert_str_eq(s, want);
            free(s);
            break;
        }
        cr_assert_eq(st, TG_ERR_NOMEM, "k=%llu: %s", (unsigned long long)k, tg_last_error());
        cr_assert_gt(fired, 0u);
        tgt_assert_error(TG_ERR_NOMEM, "tg_graph_dot", "out of memory", NULL);
        cr_assert_str_eq(s, "", "nothing written on NOMEM");
        free(s);
        nomem++;
    }
    cr_assert_geq(nomem, 5, "only %d allocation points", nomem);
    /* persistent failure too */
    char *s;
    tg_fault_inject(1, true);
    cr_assert_eq(dot_to_string(roots, 2, NULL, &s), TG_ERR_NOMEM);
    tg_fault_inject(0, false);
    free(s);
    free(want);
    tg_release(chain);
    tg_release(x);
    free_small_loss(&m);
}

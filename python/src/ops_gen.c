/* python/src/ops_gen.c - written by scripts/gen_python_ops.py from the public
 * headers: do not edit by hand (regenerate; python/tests/test_ops.py fails when
 * this is stale). One parameter table and one call stub per op; the module
 * function and the Tensor method both run python/src/ops_run.c. */
#include "tgpy.h"

#define FUNCTION(NAME)                                                              \
    static PyObject *F_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t n,         \
                              PyObject *kw) {                                         \
        (void)m;                                                                    \
        return tgpy_run_op(&D_##NAME, NULL, args, n, kw);                            \
    }
#define METHOD(NAME)                                                                \
    static PyObject *M_##NAME(PyObject *self, PyObject *const *args, Py_ssize_t n,      \
                              PyObject *kw) {                                         \
        return tgpy_run_op(&D_##NAME, self, args, n, kw);                            \
    }

static const char *const E_tg_agg_mode_names[] = {"token_mean", "seq_mean_token_sum", "seq_mean_token_mean"};
static const int E_tg_agg_mode_values[] = {0, 1, 2};
static const tgpy_enum_def E_tg_agg_mode = {"tg_agg_mode", "tg_agg_", 3, E_tg_agg_mode_names, E_tg_agg_mode_values};

static const char *const E_tg_device_names[] = {"cpu", "cuda"};
static const int E_tg_device_values[] = {0, 1};
static const tgpy_enum_def E_tg_device = {"tg_device", "tg_", 2, E_tg_device_names, E_tg_device_values};

static const char *const E_tg_dtype_names[] = {"f32", "f64", "i64", "bool", "bf16"};
static const int E_tg_dtype_values[] = {0, 1, 2, 3, 4};
static const tgpy_enum_def E_tg_dtype = {"tg_dtype", "tg_", 5, E_tg_dtype_names, E_tg_dtype_values};

static const char *const E_tg_gelu_approx_names[] = {"none", "tanh"};
static const int E_tg_gelu_approx_values[] = {0, 1};
static const tgpy_enum_def E_tg_gelu_approx = {"tg_gelu_approx", "tg_gelu_", 2, E_tg_gelu_approx_names, E_tg_gelu_approx_values};

static const char *const E_tg_reduction_names[] = {"none", "mean", "sum", "batchmean"};
static const int E_tg_reduction_values[] = {0, 1, 2, 3};
static const tgpy_enum_def E_tg_reduction = {"tg_reduction", "tg_reduction_", 4, E_tg_reduction_names, E_tg_reduction_values};

static const tgpy_param P_abs[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_abs(tg_site s, tgpy_arg *a) {
    return tg_abs_at(s, a[0].t);
}
static const tgpy_op_def D_abs = {"abs", "Tensor.abs", 1, P_abs, false,
    C_abs, NULL};
FUNCTION(abs)
METHOD(abs)

static const tgpy_param P_add[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_add(tg_site s, tgpy_arg *a) {
    return tg_add_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_add = {"add", "Tensor.add", 2, P_add, false,
    C_add, NULL};
FUNCTION(add)
METHOD(add)

static const tgpy_param P_add_[] = {{"t", TGPY_TENSOR, NULL}, {"other", TGPY_TENSOR, NULL}};
static tg_status C_add_(tg_site s, tgpy_arg *a) {
    return tg_add__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_add_ = {"add_", "Tensor.add_", 2, P_add_, true,
    NULL, C_add_};
FUNCTION(add_)
METHOD(add_)

static const tgpy_param P_add_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"k", TGPY_DOUBLE, NULL}};
static tg_tensor *C_add_scalar(tg_site s, tgpy_arg *a) {
    return tg_add_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_add_scalar = {"add_scalar", "Tensor.add_scalar", 2, P_add_scalar, false,
    C_add_scalar, NULL};
FUNCTION(add_scalar)
METHOD(add_scalar)

static const tgpy_param P_agg_loss[] = {{"loss", TGPY_TENSOR, NULL}, {"mask", TGPY_TENSOR, NULL}, {"mode", TGPY_ENUM, &E_tg_agg_mode}};
static tg_tensor *C_agg_loss(tg_site s, tgpy_arg *a) {
    return tg_agg_loss_at(s, a[0].t, a[1].t, a[2].i);
}
static const tgpy_op_def D_agg_loss = {"agg_loss", "Tensor.agg_loss", 3, P_agg_loss, false,
    C_agg_loss, NULL};
FUNCTION(agg_loss)
METHOD(agg_loss)

static const tgpy_param P_all[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_all(tg_site s, tgpy_arg *a) {
    return tg_all_at(s, a[0].t);
}
static const tgpy_op_def D_all = {"all", "Tensor.all", 1, P_all, false,
    C_all, NULL};
FUNCTION(all)
METHOD(all)

static const tgpy_param P_all_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_all_dim(tg_site s, tgpy_arg *a) {
    return tg_all_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_all_dim = {"all_dim", "Tensor.all_dim", 3, P_all_dim, false,
    C_all_dim, NULL};
FUNCTION(all_dim)
METHOD(all_dim)

static const tgpy_param P_amax[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_amax(tg_site s, tgpy_arg *a) {
    return tg_amax_at(s, a[0].t);
}
static const tgpy_op_def D_amax = {"amax", "Tensor.amax", 1, P_amax, false,
    C_amax, NULL};
FUNCTION(amax)
METHOD(amax)

static const tgpy_param P_amax_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_amax_dim(tg_site s, tgpy_arg *a) {
    return tg_amax_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_amax_dim = {"amax_dim", "Tensor.amax_dim", 3, P_amax_dim, false,
    C_amax_dim, NULL};
FUNCTION(amax_dim)
METHOD(amax_dim)

static const tgpy_param P_amax_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_amax_dims(tg_site s, tgpy_arg *a) {
    return tg_amax_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].b);
}
static const tgpy_op_def D_amax_dims = {"amax_dims", "Tensor.amax_dims", 3, P_amax_dims, false,
    C_amax_dims, NULL};
FUNCTION(amax_dims)
METHOD(amax_dims)

static const tgpy_param P_amin[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_amin(tg_site s, tgpy_arg *a) {
    return tg_amin_at(s, a[0].t);
}
static const tgpy_op_def D_amin = {"amin", "Tensor.amin", 1, P_amin, false,
    C_amin, NULL};
FUNCTION(amin)
METHOD(amin)

static const tgpy_param P_amin_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_amin_dim(tg_site s, tgpy_arg *a) {
    return tg_amin_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_amin_dim = {"amin_dim", "Tensor.amin_dim", 3, P_amin_dim, false,
    C_amin_dim, NULL};
FUNCTION(amin_dim)
METHOD(amin_dim)

static const tgpy_param P_amin_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_amin_dims(tg_site s, tgpy_arg *a) {
    return tg_amin_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].b);
}
static const tgpy_op_def D_amin_dims = {"amin_dims", "Tensor.amin_dims", 3, P_amin_dims, false,
    C_amin_dims, NULL};
FUNCTION(amin_dims)
METHOD(amin_dims)

static const tgpy_param P_any[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_any(tg_site s, tgpy_arg *a) {
    return tg_any_at(s, a[0].t);
}
static const tgpy_op_def D_any = {"any", "Tensor.any", 1, P_any, false,
    C_any, NULL};
FUNCTION(any)
METHOD(any)

static const tgpy_param P_any_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_any_dim(tg_site s, tgpy_arg *a) {
    return tg_any_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_any_dim = {"any_dim", "Tensor.any_dim", 3, P_any_dim, false,
    C_any_dim, NULL};
FUNCTION(any_dim)
METHOD(any_dim)

static const tgpy_param P_arange[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"start", TGPY_DOUBLE, NULL}, {"end", TGPY_DOUBLE, NULL}, {"step", TGPY_DOUBLE, NULL}};
static tg_tensor *C_arange(tg_site s, tgpy_arg *a) {
    return tg_arange_at(s, a[0].i, a[1].d, a[2].d, a[3].d);
}
static const tgpy_op_def D_arange = {"arange", "Tensor.arange", 4, P_arange, false,
    C_arange, NULL};
FUNCTION(arange)

static const tgpy_param P_argmax[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_argmax(tg_site s, tgpy_arg *a) {
    return tg_argmax_at(s, a[0].t);
}
static const tgpy_op_def D_argmax = {"argmax", "Tensor.argmax", 1, P_argmax, false,
    C_argmax, NULL};
FUNCTION(argmax)
METHOD(argmax)

static const tgpy_param P_argmax_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_argmax_dim(tg_site s, tgpy_arg *a) {
    return tg_argmax_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_argmax_dim = {"argmax_dim", "Tensor.argmax_dim", 3, P_argmax_dim, false,
    C_argmax_dim, NULL};
FUNCTION(argmax_dim)
METHOD(argmax_dim)

static const tgpy_param P_argmin[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_argmin(tg_site s, tgpy_arg *a) {
    return tg_argmin_at(s, a[0].t);
}
static const tgpy_op_def D_argmin = {"argmin", "Tensor.argmin", 1, P_argmin, false,
    C_argmin, NULL};
FUNCTION(argmin)
METHOD(argmin)

static const tgpy_param P_argmin_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_argmin_dim(tg_site s, tgpy_arg *a) {
    return tg_argmin_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_argmin_dim = {"argmin_dim", "Tensor.argmin_dim", 3, P_argmin_dim, false,
    C_argmin_dim, NULL};
FUNCTION(argmin_dim)
METHOD(argmin_dim)

static const tgpy_param P_argsort[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"descending", TGPY_BOOL, NULL}};
static tg_tensor *C_argsort(tg_site s, tgpy_arg *a) {
    return tg_argsort_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_argsort = {"argsort", "Tensor.argsort", 3, P_argsort, false,
    C_argsort, NULL};
FUNCTION(argsort)
METHOD(argsort)

static const tgpy_param P_binary_cross_entropy_with_logits[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"pos_weight", TGPY_TENSOR_OPT, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}};
static tg_tensor *C_binary_cross_entropy_with_logits(tg_site s, tgpy_arg *a) {
    return tg_binary_cross_entropy_with_logits_at(s, a[0].t, a[1].t, a[2].t, a[3].i);
}
static const tgpy_op_def D_binary_cross_entropy_with_logits = {"binary_cross_entropy_with_logits", "Tensor.binary_cross_entropy_with_logits", 4, P_binary_cross_entropy_with_logits, false,
    C_binary_cross_entropy_with_logits, NULL};
FUNCTION(binary_cross_entropy_with_logits)
METHOD(binary_cross_entropy_with_logits)

static const tgpy_param P_cat[] = {{"tensors", TGPY_TENSORS, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_cat(tg_site s, tgpy_arg *a) {
    return tg_cat_at(s, a[0].arr.n, (tg_tensor *const *)a[0].arr.v, a[1].i);
}
static const tgpy_op_def D_cat = {"cat", "Tensor.cat", 2, P_cat, false,
    C_cat, NULL};
FUNCTION(cat)

static const tgpy_param P_ceil[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_ceil(tg_site s, tgpy_arg *a) {
    return tg_ceil_at(s, a[0].t);
}
static const tgpy_op_def D_ceil = {"ceil", "Tensor.ceil", 1, P_ceil, false,
    C_ceil, NULL};
FUNCTION(ceil)
METHOD(ceil)

static const tgpy_param P_clamp[] = {{"t", TGPY_TENSOR, NULL}, {"lo", TGPY_DOUBLE, NULL}, {"hi", TGPY_DOUBLE, NULL}};
static tg_tensor *C_clamp(tg_site s, tgpy_arg *a) {
    return tg_clamp_at(s, a[0].t, a[1].d, a[2].d);
}
static const tgpy_op_def D_clamp = {"clamp", "Tensor.clamp", 3, P_clamp, false,
    C_clamp, NULL};
FUNCTION(clamp)
METHOD(clamp)

static const tgpy_param P_clamp_tensor[] = {{"t", TGPY_TENSOR, NULL}, {"min", TGPY_TENSOR_OPT, NULL}, {"max", TGPY_TENSOR_OPT, NULL}};
static tg_tensor *C_clamp_tensor(tg_site s, tgpy_arg *a) {
    return tg_clamp_tensor_at(s, a[0].t, a[1].t, a[2].t);
}
static const tgpy_op_def D_clamp_tensor = {"clamp_tensor", "Tensor.clamp_tensor", 3, P_clamp_tensor, false,
    C_clamp_tensor, NULL};
FUNCTION(clamp_tensor)
METHOD(clamp_tensor)

static const tgpy_param P_clone[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_clone(tg_site s, tgpy_arg *a) {
    return tg_clone_at(s, a[0].t);
}
static const tgpy_op_def D_clone = {"clone", "Tensor.clone", 1, P_clone, false,
    C_clone, NULL};
FUNCTION(clone)
METHOD(clone)

static const tgpy_param P_contiguous[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_contiguous(tg_site s, tgpy_arg *a) {
    return tg_contiguous_at(s, a[0].t);
}
static const tgpy_op_def D_contiguous = {"contiguous", "Tensor.contiguous", 1, P_contiguous, false,
    C_contiguous, NULL};
FUNCTION(contiguous)
METHOD(contiguous)

static const tgpy_param P_copy_[] = {{"t", TGPY_TENSOR, NULL}, {"src", TGPY_TENSOR, NULL}};
static tg_status C_copy_(tg_site s, tgpy_arg *a) {
    return tg_copy__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_copy_ = {"copy_", "Tensor.copy_", 2, P_copy_, true,
    NULL, C_copy_};
FUNCTION(copy_)
METHOD(copy_)

static const tgpy_param P_count_nonzero[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}};
static tg_tensor *C_count_nonzero(tg_site s, tgpy_arg *a) {
    return tg_count_nonzero_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v);
}
static const tgpy_op_def D_count_nonzero = {"count_nonzero", "Tensor.count_nonzero", 2, P_count_nonzero, false,
    C_count_nonzero, NULL};
FUNCTION(count_nonzero)
METHOD(count_nonzero)

static const tgpy_param P_cross_entropy[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"weight", TGPY_TENSOR_OPT, NULL}, {"ignore_index", TGPY_INT64, NULL}, {"label_smoothing", TGPY_DOUBLE, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}};
static tg_tensor *C_cross_entropy(tg_site s, tgpy_arg *a) {
    return tg_cross_entropy_at(s, a[0].t, a[1].t, a[2].t, a[3].l, a[4].d, a[5].i);
}
static const tgpy_op_def D_cross_entropy = {"cross_entropy", "Tensor.cross_entropy", 6, P_cross_entropy, false,
    C_cross_entropy, NULL};
FUNCTION(cross_entropy)
METHOD(cross_entropy)

static const tgpy_param P_cumprod[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_cumprod(tg_site s, tgpy_arg *a) {
    return tg_cumprod_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_cumprod = {"cumprod", "Tensor.cumprod", 2, P_cumprod, false,
    C_cumprod, NULL};
FUNCTION(cumprod)
METHOD(cumprod)

static const tgpy_param P_cumsum[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_cumsum(tg_site s, tgpy_arg *a) {
    return tg_cumsum_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_cumsum = {"cumsum", "Tensor.cumsum", 2, P_cumsum, false,
    C_cumsum, NULL};
FUNCTION(cumsum)
METHOD(cumsum)

static const tgpy_param P_discounted_cumsum[] = {{"x", TGPY_TENSOR, NULL}, {"gamma", TGPY_DOUBLE, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_discounted_cumsum(tg_site s, tgpy_arg *a) {
    return tg_discounted_cumsum_at(s, a[0].t, a[1].d, a[2].i);
}
static const tgpy_op_def D_discounted_cumsum = {"discounted_cumsum", "Tensor.discounted_cumsum", 3, P_discounted_cumsum, false,
    C_discounted_cumsum, NULL};
FUNCTION(discounted_cumsum)
METHOD(discounted_cumsum)

static const tgpy_param P_div[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_div(tg_site s, tgpy_arg *a) {
    return tg_div_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_div = {"div", "Tensor.div", 2, P_div, false,
    C_div, NULL};
FUNCTION(div)
METHOD(div)

static const tgpy_param P_div_[] = {{"t", TGPY_TENSOR, NULL}, {"other", TGPY_TENSOR, NULL}};
static tg_status C_div_(tg_site s, tgpy_arg *a) {
    return tg_div__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_div_ = {"div_", "Tensor.div_", 2, P_div_, true,
    NULL, C_div_};
FUNCTION(div_)
METHOD(div_)

static const tgpy_param P_empty[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_empty(tg_site s, tgpy_arg *a) {
    return tg_empty_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_empty = {"empty", "Tensor.empty", 2, P_empty, false,
    C_empty, NULL};
FUNCTION(empty)

static const tgpy_param P_eq[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_eq(tg_site s, tgpy_arg *a) {
    return tg_eq_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_eq = {"eq", "Tensor.eq", 2, P_eq, false,
    C_eq, NULL};
FUNCTION(eq)
METHOD(eq)

static const tgpy_param P_eq_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_eq_scalar(tg_site s, tgpy_arg *a) {
    return tg_eq_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_eq_scalar = {"eq_scalar", "Tensor.eq_scalar", 2, P_eq_scalar, false,
    C_eq_scalar, NULL};
FUNCTION(eq_scalar)
METHOD(eq_scalar)

static const tgpy_param P_exp[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_exp(tg_site s, tgpy_arg *a) {
    return tg_exp_at(s, a[0].t);
}
static const tgpy_op_def D_exp = {"exp", "Tensor.exp", 1, P_exp, false,
    C_exp, NULL};
FUNCTION(exp)
METHOD(exp)

static const tgpy_param P_expand[] = {{"t", TGPY_TENSOR, NULL}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_expand(tg_site s, tgpy_arg *a) {
    return tg_expand_at(s, a[0].t, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_expand = {"expand", "Tensor.expand", 2, P_expand, false,
    C_expand, NULL};
FUNCTION(expand)
METHOD(expand)

static const tgpy_param P_expm1[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_expm1(tg_site s, tgpy_arg *a) {
    return tg_expm1_at(s, a[0].t);
}
static const tgpy_op_def D_expm1 = {"expm1", "Tensor.expm1", 1, P_expm1, false,
    C_expm1, NULL};
FUNCTION(expm1)
METHOD(expm1)

static const tgpy_param P_fill_[] = {{"t", TGPY_TENSOR, NULL}, {"value", TGPY_DOUBLE, NULL}};
static tg_status C_fill_(tg_site s, tgpy_arg *a) {
    return tg_fill__at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_fill_ = {"fill_", "Tensor.fill_", 2, P_fill_, true,
    NULL, C_fill_};
FUNCTION(fill_)
METHOD(fill_)

static const tgpy_param P_flatten[] = {{"t", TGPY_TENSOR, NULL}, {"start_dim", TGPY_INT, NULL}, {"end_dim", TGPY_INT, NULL}};
static tg_tensor *C_flatten(tg_site s, tgpy_arg *a) {
    return tg_flatten_at(s, a[0].t, a[1].i, a[2].i);
}
static const tgpy_op_def D_flatten = {"flatten", "Tensor.flatten", 3, P_flatten, false,
    C_flatten, NULL};
FUNCTION(flatten)
METHOD(flatten)

static const tgpy_param P_flip[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}};
static tg_tensor *C_flip(tg_site s, tgpy_arg *a) {
    return tg_flip_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v);
}
static const tgpy_op_def D_flip = {"flip", "Tensor.flip", 2, P_flip, false,
    C_flip, NULL};
FUNCTION(flip)
METHOD(flip)

static const tgpy_param P_floor[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_floor(tg_site s, tgpy_arg *a) {
    return tg_floor_at(s, a[0].t);
}
static const tgpy_op_def D_floor = {"floor", "Tensor.floor", 1, P_floor, false,
    C_floor, NULL};
FUNCTION(floor)
METHOD(floor)

static const tgpy_param P_floor_divide[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_floor_divide(tg_site s, tgpy_arg *a) {
    return tg_floor_divide_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_floor_divide = {"floor_divide", "Tensor.floor_divide", 2, P_floor_divide, false,
    C_floor_divide, NULL};
FUNCTION(floor_divide)
METHOD(floor_divide)

static const tgpy_param P_full[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}, {"value", TGPY_DOUBLE, NULL}};
static tg_tensor *C_full(tg_site s, tgpy_arg *a) {
    return tg_full_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v, a[2].d);
}
static const tgpy_op_def D_full = {"full", "Tensor.full", 3, P_full, false,
    C_full, NULL};
FUNCTION(full)

static const tgpy_param P_gather[] = {{"t", TGPY_TENSOR, NULL}, {"index", TGPY_TENSOR, NULL}};
static tg_tensor *C_gather(tg_site s, tgpy_arg *a) {
    return tg_gather_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_gather = {"gather", "Tensor.gather", 2, P_gather, false,
    C_gather, NULL};
FUNCTION(gather)
METHOD(gather)

static const tgpy_param P_gather_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"index", TGPY_TENSOR, NULL}};
static tg_tensor *C_gather_dim(tg_site s, tgpy_arg *a) {
    return tg_gather_dim_at(s, a[0].t, a[1].i, a[2].t);
}
static const tgpy_op_def D_gather_dim = {"gather_dim", "Tensor.gather_dim", 3, P_gather_dim, false,
    C_gather_dim, NULL};
FUNCTION(gather_dim)
METHOD(gather_dim)

static const tgpy_param P_ge[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_ge(tg_site s, tgpy_arg *a) {
    return tg_ge_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_ge = {"ge", "Tensor.ge", 2, P_ge, false,
    C_ge, NULL};
FUNCTION(ge)
METHOD(ge)

static const tgpy_param P_ge_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_ge_scalar(tg_site s, tgpy_arg *a) {
    return tg_ge_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_ge_scalar = {"ge_scalar", "Tensor.ge_scalar", 2, P_ge_scalar, false,
    C_ge_scalar, NULL};
FUNCTION(ge_scalar)
METHOD(ge_scalar)

static const tgpy_param P_gelu[] = {{"t", TGPY_TENSOR, NULL}, {"approximate", TGPY_ENUM, &E_tg_gelu_approx}};
static tg_tensor *C_gelu(tg_site s, tgpy_arg *a) {
    return tg_gelu_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_gelu = {"gelu", "Tensor.gelu", 2, P_gelu, false,
    C_gelu, NULL};
FUNCTION(gelu)
METHOD(gelu)

static const tgpy_param P_gt[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_gt(tg_site s, tgpy_arg *a) {
    return tg_gt_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_gt = {"gt", "Tensor.gt", 2, P_gt, false,
    C_gt, NULL};
FUNCTION(gt)
METHOD(gt)

static const tgpy_param P_gt_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_gt_scalar(tg_site s, tgpy_arg *a) {
    return tg_gt_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_gt_scalar = {"gt_scalar", "Tensor.gt_scalar", 2, P_gt_scalar, false,
    C_gt_scalar, NULL};
FUNCTION(gt_scalar)
METHOD(gt_scalar)

static const tgpy_param P_index[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"index", TGPY_TENSOR, NULL}};
static tg_tensor *C_index(tg_site s, tgpy_arg *a) {
    return tg_index_at(s, a[0].t, a[1].i, a[2].t);
}
static const tgpy_op_def D_index = {"index", "Tensor.index", 3, P_index, false,
    C_index, NULL};
FUNCTION(index)
METHOD(index)

static const tgpy_param P_index_select[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"index", TGPY_TENSOR, NULL}};
static tg_tensor *C_index_select(tg_site s, tgpy_arg *a) {
    return tg_index_select_at(s, a[0].t, a[1].i, a[2].t);
}
static const tgpy_op_def D_index_select = {"index_select", "Tensor.index_select", 3, P_index_select, false,
    C_index_select, NULL};
FUNCTION(index_select)
METHOD(index_select)

static const tgpy_param P_isfinite[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_isfinite(tg_site s, tgpy_arg *a) {
    return tg_isfinite_at(s, a[0].t);
}
static const tgpy_op_def D_isfinite = {"isfinite", "Tensor.isfinite", 1, P_isfinite, false,
    C_isfinite, NULL};
FUNCTION(isfinite)
METHOD(isfinite)

static const tgpy_param P_isinf[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_isinf(tg_site s, tgpy_arg *a) {
    return tg_isinf_at(s, a[0].t);
}
static const tgpy_op_def D_isinf = {"isinf", "Tensor.isinf", 1, P_isinf, false,
    C_isinf, NULL};
FUNCTION(isinf)
METHOD(isinf)

static const tgpy_param P_isnan[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_isnan(tg_site s, tgpy_arg *a) {
    return tg_isnan_at(s, a[0].t);
}
static const tgpy_op_def D_isnan = {"isnan", "Tensor.isnan", 1, P_isnan, false,
    C_isnan, NULL};
FUNCTION(isnan)
METHOD(isnan)

static const tgpy_param P_kl_div[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}, {"log_target", TGPY_BOOL, NULL}};
static tg_tensor *C_kl_div(tg_site s, tgpy_arg *a) {
    return tg_kl_div_at(s, a[0].t, a[1].t, a[2].i, a[3].b);
}
static const tgpy_op_def D_kl_div = {"kl_div", "Tensor.kl_div", 4, P_kl_div, false,
    C_kl_div, NULL};
FUNCTION(kl_div)
METHOD(kl_div)

static const tgpy_param P_le[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_le(tg_site s, tgpy_arg *a) {
    return tg_le_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_le = {"le", "Tensor.le", 2, P_le, false,
    C_le, NULL};
FUNCTION(le)
METHOD(le)

static const tgpy_param P_le_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_le_scalar(tg_site s, tgpy_arg *a) {
    return tg_le_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_le_scalar = {"le_scalar", "Tensor.le_scalar", 2, P_le_scalar, false,
    C_le_scalar, NULL};
FUNCTION(le_scalar)
METHOD(le_scalar)

static const tgpy_param P_log[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_log(tg_site s, tgpy_arg *a) {
    return tg_log_at(s, a[0].t);
}
static const tgpy_op_def D_log = {"log", "Tensor.log", 1, P_log, false,
    C_log, NULL};
FUNCTION(log)
METHOD(log)

static const tgpy_param P_log1p[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_log1p(tg_site s, tgpy_arg *a) {
    return tg_log1p_at(s, a[0].t);
}
static const tgpy_op_def D_log1p = {"log1p", "Tensor.log1p", 1, P_log1p, false,
    C_log1p, NULL};
FUNCTION(log1p)
METHOD(log1p)

static const tgpy_param P_log_softmax[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_log_softmax(tg_site s, tgpy_arg *a) {
    return tg_log_softmax_at(s, a[0].t);
}
static const tgpy_op_def D_log_softmax = {"log_softmax", "Tensor.log_softmax", 1, P_log_softmax, false,
    C_log_softmax, NULL};
FUNCTION(log_softmax)
METHOD(log_softmax)

static const tgpy_param P_log_softmax_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_log_softmax_dim(tg_site s, tgpy_arg *a) {
    return tg_log_softmax_dim_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_log_softmax_dim = {"log_softmax_dim", "Tensor.log_softmax_dim", 2, P_log_softmax_dim, false,
    C_log_softmax_dim, NULL};
FUNCTION(log_softmax_dim)
METHOD(log_softmax_dim)

static const tgpy_param P_logical_and[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_logical_and(tg_site s, tgpy_arg *a) {
    return tg_logical_and_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_logical_and = {"logical_and", "Tensor.logical_and", 2, P_logical_and, false,
    C_logical_and, NULL};
FUNCTION(logical_and)
METHOD(logical_and)

static const tgpy_param P_logical_not[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_logical_not(tg_site s, tgpy_arg *a) {
    return tg_logical_not_at(s, a[0].t);
}
static const tgpy_op_def D_logical_not = {"logical_not", "Tensor.logical_not", 1, P_logical_not, false,
    C_logical_not, NULL};
FUNCTION(logical_not)
METHOD(logical_not)

static const tgpy_param P_logical_or[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_logical_or(tg_site s, tgpy_arg *a) {
    return tg_logical_or_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_logical_or = {"logical_or", "Tensor.logical_or", 2, P_logical_or, false,
    C_logical_or, NULL};
FUNCTION(logical_or)
METHOD(logical_or)

static const tgpy_param P_logical_xor[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_logical_xor(tg_site s, tgpy_arg *a) {
    return tg_logical_xor_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_logical_xor = {"logical_xor", "Tensor.logical_xor", 2, P_logical_xor, false,
    C_logical_xor, NULL};
FUNCTION(logical_xor)
METHOD(logical_xor)

static const tgpy_param P_logsigmoid[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_logsigmoid(tg_site s, tgpy_arg *a) {
    return tg_logsigmoid_at(s, a[0].t);
}
static const tgpy_op_def D_logsigmoid = {"logsigmoid", "Tensor.logsigmoid", 1, P_logsigmoid, false,
    C_logsigmoid, NULL};
FUNCTION(logsigmoid)
METHOD(logsigmoid)

static const tgpy_param P_logsumexp[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_logsumexp(tg_site s, tgpy_arg *a) {
    return tg_logsumexp_at(s, a[0].t);
}
static const tgpy_op_def D_logsumexp = {"logsumexp", "Tensor.logsumexp", 1, P_logsumexp, false,
    C_logsumexp, NULL};
FUNCTION(logsumexp)
METHOD(logsumexp)

static const tgpy_param P_logsumexp_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_logsumexp_dim(tg_site s, tgpy_arg *a) {
    return tg_logsumexp_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_logsumexp_dim = {"logsumexp_dim", "Tensor.logsumexp_dim", 3, P_logsumexp_dim, false,
    C_logsumexp_dim, NULL};
FUNCTION(logsumexp_dim)
METHOD(logsumexp_dim)

static const tgpy_param P_logsumexp_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_logsumexp_dims(tg_site s, tgpy_arg *a) {
    return tg_logsumexp_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].b);
}
static const tgpy_op_def D_logsumexp_dims = {"logsumexp_dims", "Tensor.logsumexp_dims", 3, P_logsumexp_dims, false,
    C_logsumexp_dims, NULL};
FUNCTION(logsumexp_dims)
METHOD(logsumexp_dims)

static const tgpy_param P_lt[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_lt(tg_site s, tgpy_arg *a) {
    return tg_lt_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_lt = {"lt", "Tensor.lt", 2, P_lt, false,
    C_lt, NULL};
FUNCTION(lt)
METHOD(lt)

static const tgpy_param P_lt_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_lt_scalar(tg_site s, tgpy_arg *a) {
    return tg_lt_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_lt_scalar = {"lt_scalar", "Tensor.lt_scalar", 2, P_lt_scalar, false,
    C_lt_scalar, NULL};
FUNCTION(lt_scalar)
METHOD(lt_scalar)

static const tgpy_param P_masked_fill[] = {{"t", TGPY_TENSOR, NULL}, {"mask", TGPY_TENSOR, NULL}, {"value", TGPY_DOUBLE, NULL}};
static tg_tensor *C_masked_fill(tg_site s, tgpy_arg *a) {
    return tg_masked_fill_at(s, a[0].t, a[1].t, a[2].d);
}
static const tgpy_op_def D_masked_fill = {"masked_fill", "Tensor.masked_fill", 3, P_masked_fill, false,
    C_masked_fill, NULL};
FUNCTION(masked_fill)
METHOD(masked_fill)

static const tgpy_param P_masked_mean[] = {{"x", TGPY_TENSOR, NULL}, {"mask", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"all", TGPY_BOOL, NULL}};
static tg_tensor *C_masked_mean(tg_site s, tgpy_arg *a) {
    return tg_masked_mean_at(s, a[0].t, a[1].t, a[2].i, a[3].b);
}
static const tgpy_op_def D_masked_mean = {"masked_mean", "Tensor.masked_mean", 4, P_masked_mean, false,
    C_masked_mean, NULL};
FUNCTION(masked_mean)
METHOD(masked_mean)

static const tgpy_param P_masked_select[] = {{"t", TGPY_TENSOR, NULL}, {"mask", TGPY_TENSOR, NULL}};
static tg_tensor *C_masked_select(tg_site s, tgpy_arg *a) {
    return tg_masked_select_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_masked_select = {"masked_select", "Tensor.masked_select", 2, P_masked_select, false,
    C_masked_select, NULL};
FUNCTION(masked_select)
METHOD(masked_select)

static const tgpy_param P_matmul[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_matmul(tg_site s, tgpy_arg *a) {
    return tg_matmul_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_matmul = {"matmul", "Tensor.matmul", 2, P_matmul, false,
    C_matmul, NULL};
FUNCTION(matmul)
METHOD(matmul)

static const tgpy_param P_max_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}, {"indices", TGPY_OUT, NULL}};
static tg_tensor *C_max_dim(tg_site s, tgpy_arg *a) {
    return tg_max_dim_at(s, a[0].t, a[1].i, a[2].b, &a[3].t);
}
static const tgpy_op_def D_max_dim = {"max_dim", "Tensor.max_dim", 4, P_max_dim, false,
    C_max_dim, NULL};
FUNCTION(max_dim)
METHOD(max_dim)

static const tgpy_param P_maximum[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_maximum(tg_site s, tgpy_arg *a) {
    return tg_maximum_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_maximum = {"maximum", "Tensor.maximum", 2, P_maximum, false,
    C_maximum, NULL};
FUNCTION(maximum)
METHOD(maximum)

static const tgpy_param P_mean[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_mean(tg_site s, tgpy_arg *a) {
    return tg_mean_at(s, a[0].t);
}
static const tgpy_op_def D_mean = {"mean", "Tensor.mean", 1, P_mean, false,
    C_mean, NULL};
FUNCTION(mean)
METHOD(mean)

static const tgpy_param P_mean_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_mean_dim(tg_site s, tgpy_arg *a) {
    return tg_mean_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_mean_dim = {"mean_dim", "Tensor.mean_dim", 3, P_mean_dim, false,
    C_mean_dim, NULL};
FUNCTION(mean_dim)
METHOD(mean_dim)

static const tgpy_param P_mean_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_mean_dims(tg_site s, tgpy_arg *a) {
    return tg_mean_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].b);
}
static const tgpy_op_def D_mean_dims = {"mean_dims", "Tensor.mean_dims", 3, P_mean_dims, false,
    C_mean_dims, NULL};
FUNCTION(mean_dims)
METHOD(mean_dims)

static const tgpy_param P_min_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}, {"indices", TGPY_OUT, NULL}};
static tg_tensor *C_min_dim(tg_site s, tgpy_arg *a) {
    return tg_min_dim_at(s, a[0].t, a[1].i, a[2].b, &a[3].t);
}
static const tgpy_op_def D_min_dim = {"min_dim", "Tensor.min_dim", 4, P_min_dim, false,
    C_min_dim, NULL};
FUNCTION(min_dim)
METHOD(min_dim)

static const tgpy_param P_minimum[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_minimum(tg_site s, tgpy_arg *a) {
    return tg_minimum_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_minimum = {"minimum", "Tensor.minimum", 2, P_minimum, false,
    C_minimum, NULL};
FUNCTION(minimum)
METHOD(minimum)

static const tgpy_param P_mse_loss[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}};
static tg_tensor *C_mse_loss(tg_site s, tgpy_arg *a) {
    return tg_mse_loss_at(s, a[0].t, a[1].t, a[2].i);
}
static const tgpy_op_def D_mse_loss = {"mse_loss", "Tensor.mse_loss", 3, P_mse_loss, false,
    C_mse_loss, NULL};
FUNCTION(mse_loss)
METHOD(mse_loss)

static const tgpy_param P_mul[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_mul(tg_site s, tgpy_arg *a) {
    return tg_mul_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_mul = {"mul", "Tensor.mul", 2, P_mul, false,
    C_mul, NULL};
FUNCTION(mul)
METHOD(mul)

static const tgpy_param P_mul_[] = {{"t", TGPY_TENSOR, NULL}, {"other", TGPY_TENSOR, NULL}};
static tg_status C_mul_(tg_site s, tgpy_arg *a) {
    return tg_mul__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_mul_ = {"mul_", "Tensor.mul_", 2, P_mul_, true,
    NULL, C_mul_};
FUNCTION(mul_)
METHOD(mul_)

static const tgpy_param P_nan_to_num[] = {{"t", TGPY_TENSOR, NULL}, {"nan_value", TGPY_DOUBLE, NULL}, {"posinf", TGPY_DOUBLE, NULL}, {"neginf", TGPY_DOUBLE, NULL}};
static tg_tensor *C_nan_to_num(tg_site s, tgpy_arg *a) {
    return tg_nan_to_num_at(s, a[0].t, a[1].d, a[2].d, a[3].d);
}
static const tgpy_op_def D_nan_to_num = {"nan_to_num", "Tensor.nan_to_num", 4, P_nan_to_num, false,
    C_nan_to_num, NULL};
FUNCTION(nan_to_num)
METHOD(nan_to_num)

static const tgpy_param P_narrow[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"start", TGPY_INT64, NULL}, {"length", TGPY_INT64, NULL}};
static tg_tensor *C_narrow(tg_site s, tgpy_arg *a) {
    return tg_narrow_at(s, a[0].t, a[1].i, a[2].l, a[3].l);
}
static const tgpy_op_def D_narrow = {"narrow", "Tensor.narrow", 4, P_narrow, false,
    C_narrow, NULL};
FUNCTION(narrow)
METHOD(narrow)

static const tgpy_param P_ne[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_ne(tg_site s, tgpy_arg *a) {
    return tg_ne_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_ne = {"ne", "Tensor.ne", 2, P_ne, false,
    C_ne, NULL};
FUNCTION(ne)
METHOD(ne)

static const tgpy_param P_ne_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"v", TGPY_DOUBLE, NULL}};
static tg_tensor *C_ne_scalar(tg_site s, tgpy_arg *a) {
    return tg_ne_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_ne_scalar = {"ne_scalar", "Tensor.ne_scalar", 2, P_ne_scalar, false,
    C_ne_scalar, NULL};
FUNCTION(ne_scalar)
METHOD(ne_scalar)

static const tgpy_param P_neg[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_neg(tg_site s, tgpy_arg *a) {
    return tg_neg_at(s, a[0].t);
}
static const tgpy_op_def D_neg = {"neg", "Tensor.neg", 1, P_neg, false,
    C_neg, NULL};
FUNCTION(neg)
METHOD(neg)

static const tgpy_param P_nll_loss[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"weight", TGPY_TENSOR_OPT, NULL}, {"ignore_index", TGPY_INT64, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}};
static tg_tensor *C_nll_loss(tg_site s, tgpy_arg *a) {
    return tg_nll_loss_at(s, a[0].t, a[1].t, a[2].t, a[3].l, a[4].i);
}
static const tgpy_op_def D_nll_loss = {"nll_loss", "Tensor.nll_loss", 5, P_nll_loss, false,
    C_nll_loss, NULL};
FUNCTION(nll_loss)
METHOD(nll_loss)

static const tgpy_param P_norm[] = {{"t", TGPY_TENSOR, NULL}, {"p", TGPY_DOUBLE, NULL}};
static tg_tensor *C_norm(tg_site s, tgpy_arg *a) {
    return tg_norm_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_norm = {"norm", "Tensor.norm", 2, P_norm, false,
    C_norm, NULL};
FUNCTION(norm)
METHOD(norm)

static const tgpy_param P_norm_dim[] = {{"t", TGPY_TENSOR, NULL}, {"p", TGPY_DOUBLE, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_norm_dim(tg_site s, tgpy_arg *a) {
    return tg_norm_dim_at(s, a[0].t, a[1].d, a[2].i, a[3].b);
}
static const tgpy_op_def D_norm_dim = {"norm_dim", "Tensor.norm_dim", 4, P_norm_dim, false,
    C_norm_dim, NULL};
FUNCTION(norm_dim)
METHOD(norm_dim)

static const tgpy_param P_one_hot[] = {{"target", TGPY_TENSOR, NULL}, {"num_classes", TGPY_INT64, NULL}};
static tg_tensor *C_one_hot(tg_site s, tgpy_arg *a) {
    return tg_one_hot_at(s, a[0].t, a[1].l);
}
static const tgpy_op_def D_one_hot = {"one_hot", "Tensor.one_hot", 2, P_one_hot, false,
    C_one_hot, NULL};
FUNCTION(one_hot)
METHOD(one_hot)

static const tgpy_param P_ones[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_ones(tg_site s, tgpy_arg *a) {
    return tg_ones_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_ones = {"ones", "Tensor.ones", 2, P_ones, false,
    C_ones, NULL};
FUNCTION(ones)

static const tgpy_param P_permute[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}};
static tg_tensor *C_permute(tg_site s, tgpy_arg *a) {
    return tg_permute_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v);
}
static const tgpy_op_def D_permute = {"permute", "Tensor.permute", 2, P_permute, false,
    C_permute, NULL};
FUNCTION(permute)
METHOD(permute)

static const tgpy_param P_pow[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_pow(tg_site s, tgpy_arg *a) {
    return tg_pow_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_pow = {"pow", "Tensor.pow", 2, P_pow, false,
    C_pow, NULL};
FUNCTION(pow)
METHOD(pow)

static const tgpy_param P_pow_[] = {{"t", TGPY_TENSOR, NULL}, {"other", TGPY_TENSOR, NULL}};
static tg_status C_pow_(tg_site s, tgpy_arg *a) {
    return tg_pow__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_pow_ = {"pow_", "Tensor.pow_", 2, P_pow_, true,
    NULL, C_pow_};
FUNCTION(pow_)
METHOD(pow_)

static const tgpy_param P_pow_scalar[] = {{"t", TGPY_TENSOR, NULL}, {"exponent", TGPY_DOUBLE, NULL}};
static tg_tensor *C_pow_scalar(tg_site s, tgpy_arg *a) {
    return tg_pow_scalar_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_pow_scalar = {"pow_scalar", "Tensor.pow_scalar", 2, P_pow_scalar, false,
    C_pow_scalar, NULL};
FUNCTION(pow_scalar)
METHOD(pow_scalar)

static const tgpy_param P_prod[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_prod(tg_site s, tgpy_arg *a) {
    return tg_prod_at(s, a[0].t);
}
static const tgpy_op_def D_prod = {"prod", "Tensor.prod", 1, P_prod, false,
    C_prod, NULL};
FUNCTION(prod)
METHOD(prod)

static const tgpy_param P_prod_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_prod_dim(tg_site s, tgpy_arg *a) {
    return tg_prod_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_prod_dim = {"prod_dim", "Tensor.prod_dim", 3, P_prod_dim, false,
    C_prod_dim, NULL};
FUNCTION(prod_dim)
METHOD(prod_dim)

static const tgpy_param P_rand[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}, {"seed", TGPY_UINT64, NULL}, {"lo", TGPY_DOUBLE, NULL}, {"hi", TGPY_DOUBLE, NULL}};
static tg_tensor *C_rand(tg_site s, tgpy_arg *a) {
    return tg_rand_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v, a[2].u, a[3].d, a[4].d);
}
static const tgpy_op_def D_rand = {"rand", "Tensor.rand", 5, P_rand, false,
    C_rand, NULL};
FUNCTION(rand)

static const tgpy_param P_randint[] = {{"shape", TGPY_INT64S, NULL}, {"seed", TGPY_UINT64, NULL}, {"low", TGPY_INT64, NULL}, {"high", TGPY_INT64, NULL}};
static tg_tensor *C_randint(tg_site s, tgpy_arg *a) {
    return tg_randint_at(s, a[0].arr.n, (const int64_t *)a[0].arr.v, a[1].u, a[2].l, a[3].l);
}
static const tgpy_op_def D_randint = {"randint", "Tensor.randint", 4, P_randint, false,
    C_randint, NULL};
FUNCTION(randint)

static const tgpy_param P_randn[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}, {"seed", TGPY_UINT64, NULL}, {"mean", TGPY_DOUBLE, NULL}, {"std", TGPY_DOUBLE, NULL}};
static tg_tensor *C_randn(tg_site s, tgpy_arg *a) {
    return tg_randn_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v, a[2].u, a[3].d, a[4].d);
}
static const tgpy_op_def D_randn = {"randn", "Tensor.randn", 5, P_randn, false,
    C_randn, NULL};
FUNCTION(randn)

static const tgpy_param P_reciprocal[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_reciprocal(tg_site s, tgpy_arg *a) {
    return tg_reciprocal_at(s, a[0].t);
}
static const tgpy_op_def D_reciprocal = {"reciprocal", "Tensor.reciprocal", 1, P_reciprocal, false,
    C_reciprocal, NULL};
FUNCTION(reciprocal)
METHOD(reciprocal)

static const tgpy_param P_relu[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_relu(tg_site s, tgpy_arg *a) {
    return tg_relu_at(s, a[0].t);
}
static const tgpy_op_def D_relu = {"relu", "Tensor.relu", 1, P_relu, false,
    C_relu, NULL};
FUNCTION(relu)
METHOD(relu)

static const tgpy_param P_remainder[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_remainder(tg_site s, tgpy_arg *a) {
    return tg_remainder_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_remainder = {"remainder", "Tensor.remainder", 2, P_remainder, false,
    C_remainder, NULL};
FUNCTION(remainder)
METHOD(remainder)

static const tgpy_param P_repeat[] = {{"t", TGPY_TENSOR, NULL}, {"repeats", TGPY_INT64S, NULL}};
static tg_tensor *C_repeat(tg_site s, tgpy_arg *a) {
    return tg_repeat_at(s, a[0].t, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_repeat = {"repeat", "Tensor.repeat", 2, P_repeat, false,
    C_repeat, NULL};
FUNCTION(repeat)
METHOD(repeat)

static const tgpy_param P_reshape[] = {{"t", TGPY_TENSOR, NULL}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_reshape(tg_site s, tgpy_arg *a) {
    return tg_reshape_at(s, a[0].t, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_reshape = {"reshape", "Tensor.reshape", 2, P_reshape, false,
    C_reshape, NULL};
FUNCTION(reshape)
METHOD(reshape)

static const tgpy_param P_roll[] = {{"t", TGPY_TENSOR, NULL}, {"shifts", TGPY_INT64S, NULL}, {"dims", TGPY_INTS, NULL}};
static tg_tensor *C_roll(tg_site s, tgpy_arg *a) {
    return tg_roll_at(s, a[0].t, a[1].arr.n, (const int64_t *)a[1].arr.v, a[2].arr.n, (const int *)a[2].arr.v);
}
static const tgpy_op_def D_roll = {"roll", "Tensor.roll", 3, P_roll, false,
    C_roll, NULL};
FUNCTION(roll)
METHOD(roll)

static const tgpy_param P_round[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_round(tg_site s, tgpy_arg *a) {
    return tg_round_at(s, a[0].t);
}
static const tgpy_op_def D_round = {"round", "Tensor.round", 1, P_round, false,
    C_round, NULL};
FUNCTION(round)
METHOD(round)

static const tgpy_param P_rsqrt[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_rsqrt(tg_site s, tgpy_arg *a) {
    return tg_rsqrt_at(s, a[0].t);
}
static const tgpy_op_def D_rsqrt = {"rsqrt", "Tensor.rsqrt", 1, P_rsqrt, false,
    C_rsqrt, NULL};
FUNCTION(rsqrt)
METHOD(rsqrt)

static const tgpy_param P_scale[] = {{"t", TGPY_TENSOR, NULL}, {"k", TGPY_DOUBLE, NULL}};
static tg_tensor *C_scale(tg_site s, tgpy_arg *a) {
    return tg_scale_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_scale = {"scale", "Tensor.scale", 2, P_scale, false,
    C_scale, NULL};
FUNCTION(scale)
METHOD(scale)

static const tgpy_param P_scale_[] = {{"t", TGPY_TENSOR, NULL}, {"k", TGPY_DOUBLE, NULL}};
static tg_status C_scale_(tg_site s, tgpy_arg *a) {
    return tg_scale__at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_scale_ = {"scale_", "Tensor.scale_", 2, P_scale_, true,
    NULL, C_scale_};
FUNCTION(scale_)
METHOD(scale_)

static const tgpy_param P_scatter_add[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"index", TGPY_TENSOR, NULL}, {"src", TGPY_TENSOR, NULL}};
static tg_tensor *C_scatter_add(tg_site s, tgpy_arg *a) {
    return tg_scatter_add_at(s, a[0].t, a[1].i, a[2].t, a[3].t);
}
static const tgpy_op_def D_scatter_add = {"scatter_add", "Tensor.scatter_add", 4, P_scatter_add, false,
    C_scatter_add, NULL};
FUNCTION(scatter_add)
METHOD(scatter_add)

static const tgpy_param P_select[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"index", TGPY_INT64, NULL}};
static tg_tensor *C_select(tg_site s, tgpy_arg *a) {
    return tg_select_at(s, a[0].t, a[1].i, a[2].l);
}
static const tgpy_op_def D_select = {"select", "Tensor.select", 3, P_select, false,
    C_select, NULL};
FUNCTION(select)
METHOD(select)

static const tgpy_param P_sigmoid[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_sigmoid(tg_site s, tgpy_arg *a) {
    return tg_sigmoid_at(s, a[0].t);
}
static const tgpy_op_def D_sigmoid = {"sigmoid", "Tensor.sigmoid", 1, P_sigmoid, false,
    C_sigmoid, NULL};
FUNCTION(sigmoid)
METHOD(sigmoid)

static const tgpy_param P_sign[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_sign(tg_site s, tgpy_arg *a) {
    return tg_sign_at(s, a[0].t);
}
static const tgpy_op_def D_sign = {"sign", "Tensor.sign", 1, P_sign, false,
    C_sign, NULL};
FUNCTION(sign)
METHOD(sign)

static const tgpy_param P_silu[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_silu(tg_site s, tgpy_arg *a) {
    return tg_silu_at(s, a[0].t);
}
static const tgpy_op_def D_silu = {"silu", "Tensor.silu", 1, P_silu, false,
    C_silu, NULL};
FUNCTION(silu)
METHOD(silu)

static const tgpy_param P_slice[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"start", TGPY_INT64, NULL}, {"end", TGPY_INT64, NULL}, {"step", TGPY_INT64, NULL}};
static tg_tensor *C_slice(tg_site s, tgpy_arg *a) {
    return tg_slice_at(s, a[0].t, a[1].i, a[2].l, a[3].l, a[4].l);
}
static const tgpy_op_def D_slice = {"slice", "Tensor.slice", 5, P_slice, false,
    C_slice, NULL};
FUNCTION(slice)
METHOD(slice)

static const tgpy_param P_smooth_l1_loss[] = {{"input", TGPY_TENSOR, NULL}, {"target", TGPY_TENSOR, NULL}, {"r", TGPY_ENUM, &E_tg_reduction}, {"beta", TGPY_DOUBLE, NULL}};
static tg_tensor *C_smooth_l1_loss(tg_site s, tgpy_arg *a) {
    return tg_smooth_l1_loss_at(s, a[0].t, a[1].t, a[2].i, a[3].d);
}
static const tgpy_op_def D_smooth_l1_loss = {"smooth_l1_loss", "Tensor.smooth_l1_loss", 4, P_smooth_l1_loss, false,
    C_smooth_l1_loss, NULL};
FUNCTION(smooth_l1_loss)
METHOD(smooth_l1_loss)

static const tgpy_param P_softmax[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_softmax(tg_site s, tgpy_arg *a) {
    return tg_softmax_at(s, a[0].t);
}
static const tgpy_op_def D_softmax = {"softmax", "Tensor.softmax", 1, P_softmax, false,
    C_softmax, NULL};
FUNCTION(softmax)
METHOD(softmax)

static const tgpy_param P_softmax_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_softmax_dim(tg_site s, tgpy_arg *a) {
    return tg_softmax_dim_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_softmax_dim = {"softmax_dim", "Tensor.softmax_dim", 2, P_softmax_dim, false,
    C_softmax_dim, NULL};
FUNCTION(softmax_dim)
METHOD(softmax_dim)

static const tgpy_param P_softplus[] = {{"t", TGPY_TENSOR, NULL}, {"beta", TGPY_DOUBLE, NULL}, {"threshold", TGPY_DOUBLE, NULL}};
static tg_tensor *C_softplus(tg_site s, tgpy_arg *a) {
    return tg_softplus_at(s, a[0].t, a[1].d, a[2].d);
}
static const tgpy_op_def D_softplus = {"softplus", "Tensor.softplus", 3, P_softplus, false,
    C_softplus, NULL};
FUNCTION(softplus)
METHOD(softplus)

static const tgpy_param P_sort[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"descending", TGPY_BOOL, NULL}, {"indices", TGPY_OUT, NULL}};
static tg_tensor *C_sort(tg_site s, tgpy_arg *a) {
    return tg_sort_at(s, a[0].t, a[1].i, a[2].b, &a[3].t);
}
static const tgpy_op_def D_sort = {"sort", "Tensor.sort", 4, P_sort, false,
    C_sort, NULL};
FUNCTION(sort)
METHOD(sort)

static const tgpy_param P_sqrt[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_sqrt(tg_site s, tgpy_arg *a) {
    return tg_sqrt_at(s, a[0].t);
}
static const tgpy_op_def D_sqrt = {"sqrt", "Tensor.sqrt", 1, P_sqrt, false,
    C_sqrt, NULL};
FUNCTION(sqrt)
METHOD(sqrt)

static const tgpy_param P_square[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_square(tg_site s, tgpy_arg *a) {
    return tg_square_at(s, a[0].t);
}
static const tgpy_op_def D_square = {"square", "Tensor.square", 1, P_square, false,
    C_square, NULL};
FUNCTION(square)
METHOD(square)

static const tgpy_param P_squeeze[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_squeeze(tg_site s, tgpy_arg *a) {
    return tg_squeeze_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_squeeze = {"squeeze", "Tensor.squeeze", 2, P_squeeze, false,
    C_squeeze, NULL};
FUNCTION(squeeze)
METHOD(squeeze)

static const tgpy_param P_stack[] = {{"tensors", TGPY_TENSORS, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_stack(tg_site s, tgpy_arg *a) {
    return tg_stack_at(s, a[0].arr.n, (tg_tensor *const *)a[0].arr.v, a[1].i);
}
static const tgpy_op_def D_stack = {"stack", "Tensor.stack", 2, P_stack, false,
    C_stack, NULL};
FUNCTION(stack)

static const tgpy_param P_std[] = {{"t", TGPY_TENSOR, NULL}, {"correction", TGPY_DOUBLE, NULL}};
static tg_tensor *C_std(tg_site s, tgpy_arg *a) {
    return tg_std_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_std = {"std", "Tensor.std", 2, P_std, false,
    C_std, NULL};
FUNCTION(std)

static const tgpy_param P_std_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"correction", TGPY_DOUBLE, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_std_dim(tg_site s, tgpy_arg *a) {
    return tg_std_dim_at(s, a[0].t, a[1].i, a[2].d, a[3].b);
}
static const tgpy_op_def D_std_dim = {"std_dim", "Tensor.std_dim", 4, P_std_dim, false,
    C_std_dim, NULL};
FUNCTION(std_dim)
METHOD(std_dim)

static const tgpy_param P_std_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"correction", TGPY_DOUBLE, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_std_dims(tg_site s, tgpy_arg *a) {
    return tg_std_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].d, a[3].b);
}
static const tgpy_op_def D_std_dims = {"std_dims", "Tensor.std_dims", 4, P_std_dims, false,
    C_std_dims, NULL};
FUNCTION(std_dims)
METHOD(std_dims)

static const tgpy_param P_sub[] = {{"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_sub(tg_site s, tgpy_arg *a) {
    return tg_sub_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_sub = {"sub", "Tensor.sub", 2, P_sub, false,
    C_sub, NULL};
FUNCTION(sub)
METHOD(sub)

static const tgpy_param P_sub_[] = {{"t", TGPY_TENSOR, NULL}, {"other", TGPY_TENSOR, NULL}};
static tg_status C_sub_(tg_site s, tgpy_arg *a) {
    return tg_sub__at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_sub_ = {"sub_", "Tensor.sub_", 2, P_sub_, true,
    NULL, C_sub_};
FUNCTION(sub_)
METHOD(sub_)

static const tgpy_param P_sum[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_sum(tg_site s, tgpy_arg *a) {
    return tg_sum_at(s, a[0].t);
}
static const tgpy_op_def D_sum = {"sum", "Tensor.sum", 1, P_sum, false,
    C_sum, NULL};
FUNCTION(sum)
METHOD(sum)

static const tgpy_param P_sum_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_sum_dim(tg_site s, tgpy_arg *a) {
    return tg_sum_dim_at(s, a[0].t, a[1].i, a[2].b);
}
static const tgpy_op_def D_sum_dim = {"sum_dim", "Tensor.sum_dim", 3, P_sum_dim, false,
    C_sum_dim, NULL};
FUNCTION(sum_dim)
METHOD(sum_dim)

static const tgpy_param P_sum_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_sum_dims(tg_site s, tgpy_arg *a) {
    return tg_sum_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].b);
}
static const tgpy_op_def D_sum_dims = {"sum_dims", "Tensor.sum_dims", 3, P_sum_dims, false,
    C_sum_dims, NULL};
FUNCTION(sum_dims)
METHOD(sum_dims)

static const tgpy_param P_tanh[] = {{"t", TGPY_TENSOR, NULL}};
static tg_tensor *C_tanh(tg_site s, tgpy_arg *a) {
    return tg_tanh_at(s, a[0].t);
}
static const tgpy_op_def D_tanh = {"tanh", "Tensor.tanh", 1, P_tanh, false,
    C_tanh, NULL};
FUNCTION(tanh)
METHOD(tanh)

static const tgpy_param P_to_device[] = {{"t", TGPY_TENSOR, NULL}, {"dev", TGPY_ENUM, &E_tg_device}};
static tg_tensor *C_to_device(tg_site s, tgpy_arg *a) {
    return tg_to_device_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_to_device = {"to_device", "Tensor.to_device", 2, P_to_device, false,
    C_to_device, NULL};
FUNCTION(to_device)
METHOD(to_device)

static const tgpy_param P_to_dtype[] = {{"t", TGPY_TENSOR, NULL}, {"dt", TGPY_ENUM, &E_tg_dtype}};
static tg_tensor *C_to_dtype(tg_site s, tgpy_arg *a) {
    return tg_to_dtype_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_to_dtype = {"to_dtype", "Tensor.to_dtype", 2, P_to_dtype, false,
    C_to_dtype, NULL};
FUNCTION(to_dtype)
METHOD(to_dtype)

static const tgpy_param P_topk[] = {{"t", TGPY_TENSOR, NULL}, {"k", TGPY_INT64, NULL}, {"dim", TGPY_INT, NULL}, {"largest", TGPY_BOOL, NULL}, {"indices", TGPY_OUT, NULL}};
static tg_tensor *C_topk(tg_site s, tgpy_arg *a) {
    return tg_topk_at(s, a[0].t, a[1].l, a[2].i, a[3].b, &a[4].t);
}
static const tgpy_op_def D_topk = {"topk", "Tensor.topk", 5, P_topk, false,
    C_topk, NULL};
FUNCTION(topk)
METHOD(topk)

static const tgpy_param P_transpose[] = {{"t", TGPY_TENSOR, NULL}, {"d0", TGPY_INT, NULL}, {"d1", TGPY_INT, NULL}};
static tg_tensor *C_transpose(tg_site s, tgpy_arg *a) {
    return tg_transpose_at(s, a[0].t, a[1].i, a[2].i);
}
static const tgpy_op_def D_transpose = {"transpose", "Tensor.transpose", 3, P_transpose, false,
    C_transpose, NULL};
FUNCTION(transpose)
METHOD(transpose)

static const tgpy_param P_tril[] = {{"t", TGPY_TENSOR, NULL}, {"diagonal", TGPY_INT64, NULL}};
static tg_tensor *C_tril(tg_site s, tgpy_arg *a) {
    return tg_tril_at(s, a[0].t, a[1].l);
}
static const tgpy_op_def D_tril = {"tril", "Tensor.tril", 2, P_tril, false,
    C_tril, NULL};
FUNCTION(tril)
METHOD(tril)

static const tgpy_param P_triu[] = {{"t", TGPY_TENSOR, NULL}, {"diagonal", TGPY_INT64, NULL}};
static tg_tensor *C_triu(tg_site s, tgpy_arg *a) {
    return tg_triu_at(s, a[0].t, a[1].l);
}
static const tgpy_op_def D_triu = {"triu", "Tensor.triu", 2, P_triu, false,
    C_triu, NULL};
FUNCTION(triu)
METHOD(triu)

static const tgpy_param P_unsqueeze[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}};
static tg_tensor *C_unsqueeze(tg_site s, tgpy_arg *a) {
    return tg_unsqueeze_at(s, a[0].t, a[1].i);
}
static const tgpy_op_def D_unsqueeze = {"unsqueeze", "Tensor.unsqueeze", 2, P_unsqueeze, false,
    C_unsqueeze, NULL};
FUNCTION(unsqueeze)
METHOD(unsqueeze)

static const tgpy_param P_var[] = {{"t", TGPY_TENSOR, NULL}, {"correction", TGPY_DOUBLE, NULL}};
static tg_tensor *C_var(tg_site s, tgpy_arg *a) {
    return tg_var_at(s, a[0].t, a[1].d);
}
static const tgpy_op_def D_var = {"var", "Tensor.var", 2, P_var, false,
    C_var, NULL};
FUNCTION(var)

static const tgpy_param P_var_dim[] = {{"t", TGPY_TENSOR, NULL}, {"dim", TGPY_INT, NULL}, {"correction", TGPY_DOUBLE, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_var_dim(tg_site s, tgpy_arg *a) {
    return tg_var_dim_at(s, a[0].t, a[1].i, a[2].d, a[3].b);
}
static const tgpy_op_def D_var_dim = {"var_dim", "Tensor.var_dim", 4, P_var_dim, false,
    C_var_dim, NULL};
FUNCTION(var_dim)
METHOD(var_dim)

static const tgpy_param P_var_dims[] = {{"t", TGPY_TENSOR, NULL}, {"dims", TGPY_INTS, NULL}, {"correction", TGPY_DOUBLE, NULL}, {"keepdim", TGPY_BOOL, NULL}};
static tg_tensor *C_var_dims(tg_site s, tgpy_arg *a) {
    return tg_var_dims_at(s, a[0].t, a[1].arr.n, (const int *)a[1].arr.v, a[2].d, a[3].b);
}
static const tgpy_op_def D_var_dims = {"var_dims", "Tensor.var_dims", 4, P_var_dims, false,
    C_var_dims, NULL};
FUNCTION(var_dims)
METHOD(var_dims)

static const tgpy_param P_view[] = {{"t", TGPY_TENSOR, NULL}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_view(tg_site s, tgpy_arg *a) {
    return tg_view_at(s, a[0].t, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_view = {"view", "Tensor.view", 2, P_view, false,
    C_view, NULL};
FUNCTION(view)
METHOD(view)

static const tgpy_param P_where[] = {{"cond", TGPY_TENSOR, NULL}, {"a", TGPY_TENSOR, NULL}, {"b", TGPY_TENSOR, NULL}};
static tg_tensor *C_where(tg_site s, tgpy_arg *a) {
    return tg_where_at(s, a[0].t, a[1].t, a[2].t);
}
static const tgpy_op_def D_where = {"where", "Tensor.where", 3, P_where, false,
    C_where, NULL};
FUNCTION(where)

static const tgpy_param P_xlogy[] = {{"x", TGPY_TENSOR, NULL}, {"y", TGPY_TENSOR, NULL}};
static tg_tensor *C_xlogy(tg_site s, tgpy_arg *a) {
    return tg_xlogy_at(s, a[0].t, a[1].t);
}
static const tgpy_op_def D_xlogy = {"xlogy", "Tensor.xlogy", 2, P_xlogy, false,
    C_xlogy, NULL};
FUNCTION(xlogy)
METHOD(xlogy)

static const tgpy_param P_zeros[] = {{"dt", TGPY_ENUM, &E_tg_dtype}, {"shape", TGPY_INT64S, NULL}};
static tg_tensor *C_zeros(tg_site s, tgpy_arg *a) {
    return tg_zeros_at(s, a[0].i, a[1].arr.n, (const int64_t *)a[1].arr.v);
}
static const tgpy_op_def D_zeros = {"zeros", "Tensor.zeros", 2, P_zeros, false,
    C_zeros, NULL};
FUNCTION(zeros)

PyMethodDef tgpy_op_functions[] = {
    {"abs", (PyCFunction)(void (*)(void))F_abs, METH_FASTCALL | METH_KEYWORDS,
    "abs($module, t)\n"
    "--\n"
    "\n"
    "abs(t): tg_abs (ops.h).\n"
    "\n"
    "|t|. Gradient g * sign(t): 0 at 0."},
    {"add", (PyCFunction)(void (*)(void))F_add, METH_FASTCALL | METH_KEYWORDS,
    "add($module, a, b)\n"
    "--\n"
    "\n"
    "add(a, b): tg_add (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"add_", (PyCFunction)(void (*)(void))F_add_, METH_FASTCALL | METH_KEYWORDS,
    "add_($module, t, other)\n"
    "--\n"
    "\n"
    "add_(t, other): tg_add_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"add_scalar", (PyCFunction)(void (*)(void))F_add_scalar, METH_FASTCALL | METH_KEYWORDS,
    "add_scalar($module, t, k)\n"
    "--\n"
    "\n"
    "add_scalar(t, k): tg_add_scalar (ops.h).\n"
    "\n"
    "t * k and t + k for a constant k."},
    {"agg_loss", (PyCFunction)(void (*)(void))F_agg_loss, METH_FASTCALL | METH_KEYWORDS,
    "agg_loss($module, loss, mask, mode)\n"
    "--\n"
    "\n"
    "agg_loss(loss, mask, mode): tg_agg_loss (ops.h).\n"
    "\n"
    "How RL trainers turn a per-token loss (..., tokens) and its mask into one\n"
    "number: TG_AGG_TOKEN_MEAN sum(loss * mask) / sum(mask) over everything;\n"
    "TG_AGG_SEQ_MEAN_TOKEN_SUM the mean over sequences of each one's masked sum;\n"
    "TG_AGG_SEQ_MEAN_TOKEN_MEAN the mean over sequences of each one's masked\n"
    "mean (a sequence with an all-zero mask makes it NaN, as the trainers'\n"
    "formula). A 0-d tensor. Errors: TG_ERR_VALUE (mode), TG_ERR_DIM (0-d loss),\n"
    "those of the ops."},
    {"all", (PyCFunction)(void (*)(void))F_all, METH_FASTCALL | METH_KEYWORDS,
    "all($module, t)\n"
    "--\n"
    "\n"
    "all(t): tg_all (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"all_dim", (PyCFunction)(void (*)(void))F_all_dim, METH_FASTCALL | METH_KEYWORDS,
    "all_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "all_dim(t, dim, keepdim): tg_all_dim (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"amax", (PyCFunction)(void (*)(void))F_amax, METH_FASTCALL | METH_KEYWORDS,
    "amax($module, t)\n"
    "--\n"
    "\n"
    "amax(t): tg_amax (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amax_dim", (PyCFunction)(void (*)(void))F_amax_dim, METH_FASTCALL | METH_KEYWORDS,
    "amax_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "amax_dim(t, dim, keepdim): tg_amax_dim (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amax_dims", (PyCFunction)(void (*)(void))F_amax_dims, METH_FASTCALL | METH_KEYWORDS,
    "amax_dims($module, t, dims, keepdim)\n"
    "--\n"
    "\n"
    "amax_dims(t, dims, keepdim): tg_amax_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): the gradient is split evenly among all\n"
    "the elements of the reduced set equal to the result, as PyTorch's."},
    {"amin", (PyCFunction)(void (*)(void))F_amin, METH_FASTCALL | METH_KEYWORDS,
    "amin($module, t)\n"
    "--\n"
    "\n"
    "amin(t): tg_amin (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amin_dim", (PyCFunction)(void (*)(void))F_amin_dim, METH_FASTCALL | METH_KEYWORDS,
    "amin_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "amin_dim(t, dim, keepdim): tg_amin_dim (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amin_dims", (PyCFunction)(void (*)(void))F_amin_dims, METH_FASTCALL | METH_KEYWORDS,
    "amin_dims($module, t, dims, keepdim)\n"
    "--\n"
    "\n"
    "amin_dims(t, dims, keepdim): tg_amin_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): the gradient is split evenly among all\n"
    "the elements of the reduced set equal to the result, as PyTorch's."},
    {"any", (PyCFunction)(void (*)(void))F_any, METH_FASTCALL | METH_KEYWORDS,
    "any($module, t)\n"
    "--\n"
    "\n"
    "any(t): tg_any (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"any_dim", (PyCFunction)(void (*)(void))F_any_dim, METH_FASTCALL | METH_KEYWORDS,
    "any_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "any_dim(t, dim, keepdim): tg_any_dim (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"arange", (PyCFunction)(void (*)(void))F_arange, METH_FASTCALL | METH_KEYWORDS,
    "arange($module, dt, start, end, step)\n"
    "--\n"
    "\n"
    "arange(dt, start, end, step): tg_arange (tensor.h).\n"
    "\n"
    "1-D tensor start, start+step, ... < end (step may be negative, not 0;\n"
    "end == start gives an empty tensor). Errors: TG_ERR_VALUE (step 0,\n"
    "non-finite bounds, a step pointing away from end, as PyTorch),\n"
    "TG_ERR_NOMEM."},
    {"argmax", (PyCFunction)(void (*)(void))F_argmax, METH_FASTCALL | METH_KEYWORDS,
    "argmax($module, t)\n"
    "--\n"
    "\n"
    "argmax(t): tg_argmax (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmax_dim", (PyCFunction)(void (*)(void))F_argmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "argmax_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "argmax_dim(t, dim, keepdim): tg_argmax_dim (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmin", (PyCFunction)(void (*)(void))F_argmin, METH_FASTCALL | METH_KEYWORDS,
    "argmin($module, t)\n"
    "--\n"
    "\n"
    "argmin(t): tg_argmin (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmin_dim", (PyCFunction)(void (*)(void))F_argmin_dim, METH_FASTCALL | METH_KEYWORDS,
    "argmin_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "argmin_dim(t, dim, keepdim): tg_argmin_dim (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argsort", (PyCFunction)(void (*)(void))F_argsort, METH_FASTCALL | METH_KEYWORDS,
    "argsort($module, t, dim, descending)\n"
    "--\n"
    "\n"
    "argsort(t, dim, descending): tg_argsort (ops.h).\n"
    "\n"
    "The positions along dim that sort t (PyTorch's argsort(stable=True))."},
    {"binary_cross_entropy_with_logits", (PyCFunction)(void (*)(void))F_binary_cross_entropy_with_logits, METH_FASTCALL | METH_KEYWORDS,
    "binary_cross_entropy_with_logits($module, input, target, pos_weight, r)\n"
    "--\n"
    "\n"
    "binary_cross_entropy_with_logits(input, target, pos_weight, r): tg_binary_cross_entropy_with_logits (ops.h).\n"
    "\n"
    "Binary cross-entropy on logits, stable for large |input|:\n"
    "(1 - target) input - w logsigmoid(input), w = 1 + (pos_weight - 1) target\n"
    "(pos_weight may be NULL: w = 1)."},
    {"cat", (PyCFunction)(void (*)(void))F_cat, METH_FASTCALL | METH_KEYWORDS,
    "cat($module, tensors, dim)\n"
    "--\n"
    "\n"
    "cat(tensors, dim): tg_cat (ops.h).\n"
    "\n"
    "The n tensors joined along dim (PyTorch's cat): any dtypes (promoted as\n"
    "tg_add: each converted by a recorded tg_to_dtype, its gradient back in its\n"
    "own dtype), one device, one number of dims (>= 1), the same sizes but along\n"
    "dim. A new contiguous\n"
    "tensor; recorded when an input requires grad (nothing saved; input i's\n"
    "gradient is its window of the result's). Errors: TG_ERR_VALUE (n < 1),\n"
    "TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_SHAPE, TG_ERR_DIM (0-d inputs, bad dim),\n"
    "TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"ceil", (PyCFunction)(void (*)(void))F_ceil, METH_FASTCALL | METH_KEYWORDS,
    "ceil($module, t)\n"
    "--\n"
    "\n"
    "ceil(t): tg_ceil (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"clamp", (PyCFunction)(void (*)(void))F_clamp, METH_FASTCALL | METH_KEYWORDS,
    "clamp($module, t, lo, hi)\n"
    "--\n"
    "\n"
    "clamp(t, lo, hi): tg_clamp (ops.h).\n"
    "\n"
    "min(max(t, lo), hi), as PyTorch: pass -INFINITY / INFINITY for no bound;\n"
    "lo > hi gives hi everywhere, a NaN bound NaN everywhere. Gradient 1 where\n"
    "lo <= t <= hi, else 0."},
    {"clamp_tensor", (PyCFunction)(void (*)(void))F_clamp_tensor, METH_FASTCALL | METH_KEYWORDS,
    "clamp_tensor($module, t, min, max)\n"
    "--\n"
    "\n"
    "clamp_tensor(t, min, max): tg_clamp_tensor (ops.h).\n"
    "\n"
    "PyTorch's clamp with tensor bounds: min(max(t, min), max), t, min and max\n"
    "broadcast together, of the dtype PyTorch's result_type gives the three\n"
    "(operands converted first, as tg_add's). min or max NULL: that bound is\n"
    "absent (PyTorch's None); both NULL is TG_ERR_VALUE. A NaN anywhere gives\n"
    "NaN; min > max gives max. i64 works in i64; bool takes one bound only (as\n"
    "PyTorch). Gradients as PyTorch's (clamp_backward_min_max): t gets g where\n"
    "min <= t <= max; min gets g where t < min (and min < max, with both\n"
    "bounds); max gets g where t > max (or max < min). Errors: TG_ERR_NULL (t),\n"
    "TG_ERR_VALUE, TG_ERR_DTYPE (bf16; bool with both bounds), TG_ERR_SHAPE,\n"
    "TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"clone", (PyCFunction)(void (*)(void))F_clone, METH_FASTCALL | METH_KEYWORDS,
    "clone($module, t)\n"
    "--\n"
    "\n"
    "clone(t): tg_clone (tensor.h).\n"
    "\n"
    "A contiguous copy with its own storage (differentiable)."},
    {"contiguous", (PyCFunction)(void (*)(void))F_contiguous, METH_FASTCALL | METH_KEYWORDS,
    "contiguous($module, t)\n"
    "--\n"
    "\n"
    "contiguous(t): tg_contiguous (tensor.h).\n"
    "\n"
    "t itself (new reference) if contiguous, else a contiguous copy."},
    {"copy_", (PyCFunction)(void (*)(void))F_copy_, METH_FASTCALL | METH_KEYWORDS,
    "copy_($module, t, src)\n"
    "--\n"
    "\n"
    "copy_(t, src): tg_copy_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"count_nonzero", (PyCFunction)(void (*)(void))F_count_nonzero, METH_FASTCALL | METH_KEYWORDS,
    "count_nonzero($module, t, dims)\n"
    "--\n"
    "\n"
    "count_nonzero(t, dims): tg_count_nonzero (ops.h).\n"
    "\n"
    "PyTorch's count_nonzero(t, dims): the number of non-zero elements (NaN\n"
    "counts) of a tensor of any dtype over the dims listed (every dim for ndims\n"
    "0), exactly, as an i64 tensor without those dims; never requires grad.\n"
    "Errors: those of tg_sum_dims, TG_ERR_DTYPE for bf16."},
    {"cross_entropy", (PyCFunction)(void (*)(void))F_cross_entropy, METH_FASTCALL | METH_KEYWORDS,
    "cross_entropy($module, input, target, weight, ignore_index, label_smoothing, r)\n"
    "--\n"
    "\n"
    "cross_entropy(input, target, weight, ignore_index, label_smoothing, r): tg_cross_entropy (ops.h).\n"
    "\n"
    "PyTorch's cross_entropy: input (C) with a 0-d target, or (N, C, d1, ...)\n"
    "with target (N, d1, ...) of i64 class indices; weight NULL or (C) class\n"
    "weights of input's dtype (not owned; never differentiated). A row's loss is\n"
    "w[y] (-log p[y]); rows whose target is ignore_index give 0 and no gradient;\n"
    "label_smoothing in [0, 1] mixes in eps / C * (-sum_c w_c log p_c) (PyTorch's\n"
    "formula; w_c = 1 without weights). MEAN divides by the sum of w[y] over the\n"
    "rows kept (their number without weights; NaN when none is). Computed by the\n"
    "fused log-prob op (no (N, C) tensor is saved for the log-likelihood term;\n"
    "label smoothing adds a log_softmax). Errors: those of tg_logprob_entropy (a\n"
    "target outside [0, C), a kept row of NaN or all -inf logits: PyTorch returns\n"
    "NaN there), TG_ERR_VALUE for label_smoothing or reduction (BATCHMEAN\n"
    "included), TG_ERR_SHAPE / TG_ERR_DTYPE / TG_ERR_DEVICE for a weight that is\n"
    "not (C), of input's dtype, on its device, TG_ERR_AUTOGRAD for a weight that\n"
    "requires grad while grad mode is on (as PyTorch 1.13)."},
    {"cumprod", (PyCFunction)(void (*)(void))F_cumprod, METH_FASTCALL | METH_KEYWORDS,
    "cumprod($module, t, dim)\n"
    "--\n"
    "\n"
    "cumprod(t, dim): tg_cumprod (ops.h).\n"
    "\n"
    "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
    "Both also take i64 and bool tensors: an exact i64 result (wrapping around\n"
    "on overflow), as PyTorch. Gradients: the\n"
    "reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"cumsum", (PyCFunction)(void (*)(void))F_cumsum, METH_FASTCALL | METH_KEYWORDS,
    "cumsum($module, t, dim)\n"
    "--\n"
    "\n"
    "cumsum(t, dim): tg_cumsum (ops.h).\n"
    "\n"
    "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
    "Both also take i64 and bool tensors: an exact i64 result (wrapping around\n"
    "on overflow), as PyTorch. Gradients: the\n"
    "reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"discounted_cumsum", (PyCFunction)(void (*)(void))F_discounted_cumsum, METH_FASTCALL | METH_KEYWORDS,
    "discounted_cumsum($module, x, gamma, dim)\n"
    "--\n"
    "\n"
    "discounted_cumsum(x, gamma, dim): tg_discounted_cumsum (ops.h).\n"
    "\n"
    "The discounted reverse cumulative sum along dim of an f32/f64 tensor:\n"
    "y_j = x_j + gamma y_{j+1}, y_last = x_last (RL returns; GAE advantages with\n"
    "gamma * lambda), accumulated in double; a new tensor of x's shape. No\n"
    "PyTorch op: the loop `for j reversed: y[j] = x[j] + gamma * y[j+1]`.\n"
    "Gradient: dx_j = g_j + gamma dx_{j-1}. Errors: TG_ERR_NULL, TG_ERR_DTYPE,\n"
    "TG_ERR_DIM, TG_ERR_VALUE (gamma NaN or infinite), TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"div", (PyCFunction)(void (*)(void))F_div, METH_FASTCALL | METH_KEYWORDS,
    "div($module, a, b)\n"
    "--\n"
    "\n"
    "div(a, b): tg_div (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"div_", (PyCFunction)(void (*)(void))F_div_, METH_FASTCALL | METH_KEYWORDS,
    "div_($module, t, other)\n"
    "--\n"
    "\n"
    "div_(t, other): tg_div_ (ops.h).\n"
    "\n"
    "t /= other, PyTorch's div_ (true division; other 0 gives +-inf or NaN)."},
    {"empty", (PyCFunction)(void (*)(void))F_empty, METH_FASTCALL | METH_KEYWORDS,
    "empty($module, dt, shape)\n"
    "--\n"
    "\n"
    "empty(dt, shape): tg_empty (tensor.h).\n"
    "\n"
    "A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n"
    "Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n"
    "TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows)."},
    {"eq", (PyCFunction)(void (*)(void))F_eq, METH_FASTCALL | METH_KEYWORDS,
    "eq($module, a, b)\n"
    "--\n"
    "\n"
    "eq(a, b): tg_eq (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"eq_scalar", (PyCFunction)(void (*)(void))F_eq_scalar, METH_FASTCALL | METH_KEYWORDS,
    "eq_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "eq_scalar(t, v): tg_eq_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"exp", (PyCFunction)(void (*)(void))F_exp, METH_FASTCALL | METH_KEYWORDS,
    "exp($module, t)\n"
    "--\n"
    "\n"
    "exp(t): tg_exp (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"expand", (PyCFunction)(void (*)(void))F_expand, METH_FASTCALL | METH_KEYWORDS,
    "expand($module, t, shape)\n"
    "--\n"
    "\n"
    "expand(t, shape): tg_expand (tensor.h).\n"
    "\n"
    "Broadcast view to shape (size-1 dims get stride 0, new leading dims added;\n"
    "-1 keeps a size). Errors: TG_ERR_SHAPE."},
    {"expm1", (PyCFunction)(void (*)(void))F_expm1, METH_FASTCALL | METH_KEYWORDS,
    "expm1($module, t)\n"
    "--\n"
    "\n"
    "expm1(t): tg_expm1 (ops.h).\n"
    "\n"
    "log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n"
    "g (1 + result)."},
    {"fill_", (PyCFunction)(void (*)(void))F_fill_, METH_FASTCALL | METH_KEYWORDS,
    "fill_($module, t, value)\n"
    "--\n"
    "\n"
    "fill_(t, value): tg_fill_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"flatten", (PyCFunction)(void (*)(void))F_flatten, METH_FASTCALL | METH_KEYWORDS,
    "flatten($module, t, start_dim, end_dim)\n"
    "--\n"
    "\n"
    "flatten(t, start_dim, end_dim): tg_flatten (tensor.h).\n"
    "\n"
    "Dims start_dim..end_dim merged into one (a 0-d t gives shape [1]); a view\n"
    "when the strides allow, else a copy, as tg_reshape; t itself (a new\n"
    "reference) when start_dim and end_dim are the same dim, as PyTorch.\n"
    "Errors: TG_ERR_DIM (bad dims, start after end)."},
    {"flip", (PyCFunction)(void (*)(void))F_flip, METH_FASTCALL | METH_KEYWORDS,
    "flip($module, t, dims)\n"
    "--\n"
    "\n"
    "flip(t, dims): tg_flip (ops.h).\n"
    "\n"
    "t reversed along each of dims[0..ndims) (a copy, as PyTorch). Gradient: g\n"
    "flipped back. Errors: TG_ERR_DIM (out of range or repeated), TG_ERR_VALUE\n"
    "(ndims outside 0..8, dims NULL)."},
    {"floor", (PyCFunction)(void (*)(void))F_floor, METH_FASTCALL | METH_KEYWORDS,
    "floor($module, t)\n"
    "--\n"
    "\n"
    "floor(t): tg_floor (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"floor_divide", (PyCFunction)(void (*)(void))F_floor_divide, METH_FASTCALL | METH_KEYWORDS,
    "floor_divide($module, a, b)\n"
    "--\n"
    "\n"
    "floor_divide(a, b): tg_floor_divide (ops.h).\n"
    "\n"
    "a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's\n"
    "rules: the remainder has the divisor's sign), broadcast and promoted as\n"
    "tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n"
    "floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float ones\n"
    "compute as PyTorch's kernels (a zero divisor gives NaN for the remainder,\n"
    "+-inf or NaN for the quotient). Gradients: remainder g for a and\n"
    "-g floor_divide(a, b) for b, as PyTorch; floor_divide is not differentiable\n"
    "(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n"
    "operands), TG_ERR_VALUE (a zero i64 divisor, naming its first position),\n"
    "TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"full", (PyCFunction)(void (*)(void))F_full, METH_FASTCALL | METH_KEYWORDS,
    "full($module, dt, shape, value)\n"
    "--\n"
    "\n"
    "full(dt, shape, value): tg_full (tensor.h).\n"
    "\n"
    "A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n"
    "Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n"
    "TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows)."},
    {"gather", (PyCFunction)(void (*)(void))F_gather, METH_FASTCALL | METH_KEYWORDS,
    "gather($module, t, index)\n"
    "--\n"
    "\n"
    "gather(t, index): tg_gather (ops.h).\n"
    "\n"
    "out[..., j] = t[..., index[..., j]]; index is i64 with t's leading shape and\n"
    "any last size. Errors: TG_ERR_DTYPE (index not i64), TG_ERR_SHAPE (leading\n"
    "shapes differ), TG_ERR_VALUE (an index outside [0, size); the message names\n"
    "the position and the value)."},
    {"gather_dim", (PyCFunction)(void (*)(void))F_gather_dim, METH_FASTCALL | METH_KEYWORDS,
    "gather_dim($module, t, dim, index)\n"
    "--\n"
    "\n"
    "gather_dim(t, dim, index): tg_gather_dim (ops.h).\n"
    "\n"
    "PyTorch's gather(t, dim, index): out[i][j][k] = t[index[i][j][k]][j][k] for\n"
    "dim 0, and so on; index i64 of t's ndim and t's sizes but along dim (any\n"
    "size there: PyTorch also allows smaller sizes elsewhere, tapegrad not).\n"
    "Gradient: scattered back, repeats added. Errors as tg_gather, and\n"
    "TG_ERR_DIM."},
    {"ge", (PyCFunction)(void (*)(void))F_ge, METH_FASTCALL | METH_KEYWORDS,
    "ge($module, a, b)\n"
    "--\n"
    "\n"
    "ge(a, b): tg_ge (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"ge_scalar", (PyCFunction)(void (*)(void))F_ge_scalar, METH_FASTCALL | METH_KEYWORDS,
    "ge_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "ge_scalar(t, v): tg_ge_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"gelu", (PyCFunction)(void (*)(void))F_gelu, METH_FASTCALL | METH_KEYWORDS,
    "gelu($module, t, approximate)\n"
    "--\n"
    "\n"
    "gelu(t, approximate): tg_gelu (ops.h).\n"
    "\n"
    "GELU: t * Phi(t) with the erf (TG_GELU_NONE) or PyTorch's tanh\n"
    "approximation (TG_GELU_TANH). Error TG_ERR_VALUE for another value."},
    {"gt", (PyCFunction)(void (*)(void))F_gt, METH_FASTCALL | METH_KEYWORDS,
    "gt($module, a, b)\n"
    "--\n"
    "\n"
    "gt(a, b): tg_gt (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"gt_scalar", (PyCFunction)(void (*)(void))F_gt_scalar, METH_FASTCALL | METH_KEYWORDS,
    "gt_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "gt_scalar(t, v): tg_gt_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"index", (PyCFunction)(void (*)(void))F_index, METH_FASTCALL | METH_KEYWORDS,
    "index($module, t, dim, index)\n"
    "--\n"
    "\n"
    "index(t, dim, index): tg_index (ops.h).\n"
    "\n"
    "PyTorch's t[:, ..., index] with `index` at dim: an i64 index of any shape\n"
    "(0-d too), entries in [-size, size) (negative ones count from the end),\n"
    "repeats allowed. Result shape t.shape[:dim] + index.shape +\n"
    "t.shape[dim+1:]. Gradient: g added back at the indexed positions (repeats\n"
    "add up); the index is saved (version-checked, as PyTorch). Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE (index not i64 — a bool index is a mask: use\n"
    "tg_masked_select —, or t of another dtype), TG_ERR_DIM (t 0-d, dim out of\n"
    "range), TG_ERR_VALUE (an index out of range: the message names its\n"
    "position in index and its value; or a result of more than TG_MAX_DIMS\n"
    "dims), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"index_select", (PyCFunction)(void (*)(void))F_index_select, METH_FASTCALL | METH_KEYWORDS,
    "index_select($module, t, dim, index)\n"
    "--\n"
    "\n"
    "index_select(t, dim, index): tg_index_select (ops.h).\n"
    "\n"
    "t's entries index[0], index[1], ... along dim (a 1-D i64 index, repeats\n"
    "allowed): PyTorch's index_select. Errors as tg_gather_dim, TG_ERR_SHAPE for\n"
    "an index of 2 or more dims."},
    {"isfinite", (PyCFunction)(void (*)(void))F_isfinite, METH_FASTCALL | METH_KEYWORDS,
    "isfinite($module, t)\n"
    "--\n"
    "\n"
    "isfinite(t): tg_isfinite (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"isinf", (PyCFunction)(void (*)(void))F_isinf, METH_FASTCALL | METH_KEYWORDS,
    "isinf($module, t)\n"
    "--\n"
    "\n"
    "isinf(t): tg_isinf (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"isnan", (PyCFunction)(void (*)(void))F_isnan, METH_FASTCALL | METH_KEYWORDS,
    "isnan($module, t)\n"
    "--\n"
    "\n"
    "isnan(t): tg_isnan (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"kl_div", (PyCFunction)(void (*)(void))F_kl_div, METH_FASTCALL | METH_KEYWORDS,
    "kl_div($module, input, target, r, log_target)\n"
    "--\n"
    "\n"
    "kl_div(input, target, r, log_target): tg_kl_div (ops.h).\n"
    "\n"
    "PyTorch's kl_div: input holds log-probabilities; target probabilities\n"
    "(target (log target - input), 0 where target is 0) or, with log_target,\n"
    "log-probabilities (exp(target) (target - input)). MEAN averages over every\n"
    "element, as PyTorch's 'mean'; TG_REDUCTION_BATCHMEAN (PyTorch's\n"
    "'batchmean', the KL divergence's true mean per sample) divides the sum by\n"
    "input.size(0) (a 0-d input: the sum; size 0: NaN, as PyTorch)."},
    {"le", (PyCFunction)(void (*)(void))F_le, METH_FASTCALL | METH_KEYWORDS,
    "le($module, a, b)\n"
    "--\n"
    "\n"
    "le(a, b): tg_le (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"le_scalar", (PyCFunction)(void (*)(void))F_le_scalar, METH_FASTCALL | METH_KEYWORDS,
    "le_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "le_scalar(t, v): tg_le_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"log", (PyCFunction)(void (*)(void))F_log, METH_FASTCALL | METH_KEYWORDS,
    "log($module, t)\n"
    "--\n"
    "\n"
    "log(t): tg_log (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"log1p", (PyCFunction)(void (*)(void))F_log1p, METH_FASTCALL | METH_KEYWORDS,
    "log1p($module, t)\n"
    "--\n"
    "\n"
    "log1p(t): tg_log1p (ops.h).\n"
    "\n"
    "log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n"
    "g (1 + result)."},
    {"log_softmax", (PyCFunction)(void (*)(void))F_log_softmax, METH_FASTCALL | METH_KEYWORDS,
    "log_softmax($module, t)\n"
    "--\n"
    "\n"
    "log_softmax(t): tg_log_softmax (ops.h).\n"
    "\n"
    "Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d tensor\n"
    "is one row of one element), PyTorch's softmax(t, -1): a new contiguous\n"
    "tensor of t's shape, rows reduced in double with the row max subtracted; a\n"
    "row of all -inf gives NaN, a -inf entry probability 0. Saves the output.\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"log_softmax_dim", (PyCFunction)(void (*)(void))F_log_softmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "log_softmax_dim($module, t, dim)\n"
    "--\n"
    "\n"
    "log_softmax_dim(t, dim): tg_log_softmax_dim (ops.h).\n"
    "\n"
    "The same along dim (negative from the end), PyTorch's softmax(t, dim): the\n"
    "rows along dim are read and written in place (no transposed copy).\n"
    "Errors: as tg_softmax, and TG_ERR_DIM."},
    {"logical_and", (PyCFunction)(void (*)(void))F_logical_and, METH_FASTCALL | METH_KEYWORDS,
    "logical_and($module, a, b)\n"
    "--\n"
    "\n"
    "logical_and(a, b): tg_logical_and (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_not", (PyCFunction)(void (*)(void))F_logical_not, METH_FASTCALL | METH_KEYWORDS,
    "logical_not($module, t)\n"
    "--\n"
    "\n"
    "logical_not(t): tg_logical_not (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_or", (PyCFunction)(void (*)(void))F_logical_or, METH_FASTCALL | METH_KEYWORDS,
    "logical_or($module, a, b)\n"
    "--\n"
    "\n"
    "logical_or(a, b): tg_logical_or (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_xor", (PyCFunction)(void (*)(void))F_logical_xor, METH_FASTCALL | METH_KEYWORDS,
    "logical_xor($module, a, b)\n"
    "--\n"
    "\n"
    "logical_xor(a, b): tg_logical_xor (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logsigmoid", (PyCFunction)(void (*)(void))F_logsigmoid, METH_FASTCALL | METH_KEYWORDS,
    "logsigmoid($module, t)\n"
    "--\n"
    "\n"
    "logsigmoid(t): tg_logsigmoid (ops.h).\n"
    "\n"
    "log(sigmoid(t)) = min(t, 0) - log1p(exp(-|t|)): finite for every finite t\n"
    "(-1000 gives -1000, not -inf). Gradient g sigmoid(-t)."},
    {"logsumexp", (PyCFunction)(void (*)(void))F_logsumexp, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp($module, t)\n"
    "--\n"
    "\n"
    "logsumexp(t): tg_logsumexp (ops.h).\n"
    "\n"
    "log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf\n"
    "for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - result)\n"
    "(NaN on an all -inf line, as PyTorch)."},
    {"logsumexp_dim", (PyCFunction)(void (*)(void))F_logsumexp_dim, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "logsumexp_dim(t, dim, keepdim): tg_logsumexp_dim (ops.h).\n"
    "\n"
    "log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf\n"
    "for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - result)\n"
    "(NaN on an all -inf line, as PyTorch)."},
    {"logsumexp_dims", (PyCFunction)(void (*)(void))F_logsumexp_dims, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp_dims($module, t, dims, keepdim)\n"
    "--\n"
    "\n"
    "logsumexp_dims(t, dims, keepdim): tg_logsumexp_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims)."},
    {"lt", (PyCFunction)(void (*)(void))F_lt, METH_FASTCALL | METH_KEYWORDS,
    "lt($module, a, b)\n"
    "--\n"
    "\n"
    "lt(a, b): tg_lt (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"lt_scalar", (PyCFunction)(void (*)(void))F_lt_scalar, METH_FASTCALL | METH_KEYWORDS,
    "lt_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "lt_scalar(t, v): tg_lt_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"masked_fill", (PyCFunction)(void (*)(void))F_masked_fill, METH_FASTCALL | METH_KEYWORDS,
    "masked_fill($module, t, mask, value)\n"
    "--\n"
    "\n"
    "masked_fill(t, mask, value): tg_masked_fill (ops.h).\n"
    "\n"
    "t with value where mask is non-zero (PyTorch's masked_fill, out of place;\n"
    "mask of any dtype, broadcast to t's shape). Gradient to t where the mask\n"
    "is 0. Errors: TG_ERR_NULL, TG_ERR_SHAPE (the mask would change t's shape),\n"
    "those of tg_where."},
    {"masked_mean", (PyCFunction)(void (*)(void))F_masked_mean, METH_FASTCALL | METH_KEYWORDS,
    "masked_mean($module, x, mask, dim, all)\n"
    "--\n"
    "\n"
    "masked_mean(x, mask, dim, all): tg_masked_mean (ops.h).\n"
    "\n"
    "sum(x * mask) / sum(mask) along dim (all: over every element, dim\n"
    "ignored), mask broadcast to x's shape (e.g. float 0/1). A dim or row with an\n"
    "all-zero mask gives NaN (0 / 0), as the trainers' formula. Gradient to x;\n"
    "the mask gets one too if it requires grad. Errors: those of tg_mul,\n"
    "tg_sum_dim, TG_ERR_DIM."},
    {"masked_select", (PyCFunction)(void (*)(void))F_masked_select, METH_FASTCALL | METH_KEYWORDS,
    "masked_select($module, t, mask)\n"
    "--\n"
    "\n"
    "masked_select(t, mask): tg_masked_select (ops.h).\n"
    "\n"
    "The elements of t where mask (TG_BOOL) is true, t and mask broadcast\n"
    "together, in C order of the broadcast shape: a 1-D tensor (PyTorch's\n"
    "masked_select). Its length depends on the mask's values, so the mask is\n"
    "read on the host: for CUDA tensors a copy of it comes back to the host\n"
    "(the call waits for the device). Gradient: g put back at the selected\n"
    "positions, summed over the dims along which t was broadcast. Saves the\n"
    "selected positions (not t or mask: editing them in place afterwards does\n"
    "not fail backward, as PyTorch's would). Errors: TG_ERR_NULL, TG_ERR_DTYPE\n"
    "(mask not bool, as PyTorch 1.13; t of another dtype), TG_ERR_SHAPE (t and\n"
    "mask do not broadcast), TG_ERR_DEVICE, TG_ERR_NOMEM, TG_ERR_CUDA."},
    {"matmul", (PyCFunction)(void (*)(void))F_matmul, METH_FASTCALL | METH_KEYWORDS,
    "matmul($module, a, b)\n"
    "--\n"
    "\n"
    "matmul(a, b): tg_matmul (ops.h).\n"
    "\n"
    "a (..., M, K) @ b (..., K, N) -> (..., M, N) through CBLAS. Both 2-D, or\n"
    "batched with equal leading dims, or a batched and b 2-D (shared weight).\n"
    "f32 or f64 of one dtype, or two bf16 operands: then both are converted to\n"
    "f32 (what backward saves) and the result is f32.\n"
    "Errors: TG_ERR_DTYPE; TG_ERR_SHAPE (inner sizes or batch dims differ,\n"
    "ndim < 2)."},
    {"max_dim", (PyCFunction)(void (*)(void))F_max_dim, METH_FASTCALL | METH_KEYWORDS,
    "max_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "max_dim(t, dim, keepdim) -> (result, indices): tg_max_dim (ops.h).\n"
    "\n"
    "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
    "indices is not NULL, *indices = their i64 positions along dim (the first\n"
    "extreme, or the first NaN), a second new reference owned like the result.\n"
    "Gradient all to that position. TG_ERR_SHAPE for an empty line."},
    {"maximum", (PyCFunction)(void (*)(void))F_maximum, METH_FASTCALL | METH_KEYWORDS,
    "maximum($module, a, b)\n"
    "--\n"
    "\n"
    "maximum(a, b): tg_maximum (ops.h).\n"
    "\n"
    "Elementwise max/min; where a == b the gradient is split evenly (as PyTorch).\n"
    "NaN in either operand gives NaN."},
    {"mean", (PyCFunction)(void (*)(void))F_mean, METH_FASTCALL | METH_KEYWORDS,
    "mean($module, t)\n"
    "--\n"
    "\n"
    "mean(t): tg_mean (ops.h).\n"
    "\n"
    "Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n"
    "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
    "mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch)."},
    {"mean_dim", (PyCFunction)(void (*)(void))F_mean_dim, METH_FASTCALL | METH_KEYWORDS,
    "mean_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "mean_dim(t, dim, keepdim): tg_mean_dim (ops.h).\n"
    "\n"
    "Along dim (negative allowed); keepdim keeps it as size 1."},
    {"mean_dims", (PyCFunction)(void (*)(void))F_mean_dims, METH_FASTCALL | METH_KEYWORDS,
    "mean_dims($module, t, dims, keepdim)\n"
    "--\n"
    "\n"
    "mean_dims(t, dims, keepdim): tg_mean_dims (ops.h).\n"
    "\n"
    "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)\n"
    "(negative allowed, each at most once; ndims 0 reduces every dim, as\n"
    "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
    "tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n"
    "TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n"
    "repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other multi-dim\n"
    "reductions below (tg_*_dims) take their dims the same way."},
    {"min_dim", (PyCFunction)(void (*)(void))F_min_dim, METH_FASTCALL | METH_KEYWORDS,
    "min_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "min_dim(t, dim, keepdim) -> (result, indices): tg_min_dim (ops.h).\n"
    "\n"
    "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
    "indices is not NULL, *indices = their i64 positions along dim (the first\n"
    "extreme, or the first NaN), a second new reference owned like the result.\n"
    "Gradient all to that position. TG_ERR_SHAPE for an empty line."},
    {"minimum", (PyCFunction)(void (*)(void))F_minimum, METH_FASTCALL | METH_KEYWORDS,
    "minimum($module, a, b)\n"
    "--\n"
    "\n"
    "minimum(a, b): tg_minimum (ops.h).\n"
    "\n"
    "Elementwise max/min; where a == b the gradient is split evenly (as PyTorch).\n"
    "NaN in either operand gives NaN."},
    {"mse_loss", (PyCFunction)(void (*)(void))F_mse_loss, METH_FASTCALL | METH_KEYWORDS,
    "mse_loss($module, input, target, r)\n"
    "--\n"
    "\n"
    "mse_loss(input, target, r): tg_mse_loss (ops.h).\n"
    "\n"
    "(input - target)^2."},
    {"mul", (PyCFunction)(void (*)(void))F_mul, METH_FASTCALL | METH_KEYWORDS,
    "mul($module, a, b)\n"
    "--\n"
    "\n"
    "mul(a, b): tg_mul (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"mul_", (PyCFunction)(void (*)(void))F_mul_, METH_FASTCALL | METH_KEYWORDS,
    "mul_($module, t, other)\n"
    "--\n"
    "\n"
    "mul_(t, other): tg_mul_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"nan_to_num", (PyCFunction)(void (*)(void))F_nan_to_num, METH_FASTCALL | METH_KEYWORDS,
    "nan_to_num($module, t, nan_value, posinf, neginf)\n"
    "--\n"
    "\n"
    "nan_to_num(t, nan_value, posinf, neginf): tg_nan_to_num (ops.h).\n"
    "\n"
    "PyTorch's nan_to_num: NaN -> nan_value, +inf -> posinf, -inf -> neginf (each\n"
    "converted to t's dtype); a NaN posinf / neginf means PyTorch's default\n"
    "(None): the dtype's largest / lowest finite value. An i64 or bool t is\n"
    "returned as a copy, unchanged (as PyTorch). Gradient g * isfinite(t).\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE (bf16), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"narrow", (PyCFunction)(void (*)(void))F_narrow, METH_FASTCALL | METH_KEYWORDS,
    "narrow($module, t, dim, start, length)\n"
    "--\n"
    "\n"
    "narrow(t, dim, start, length): tg_narrow (tensor.h).\n"
    "\n"
    "PyTorch's narrow: elements start .. start+length-1 along dim, a view.\n"
    "start may be negative (counted from the end). Errors: TG_ERR_DIM (0-d or\n"
    "bad dim), TG_ERR_VALUE (the range is not inside the dim)."},
    {"ne", (PyCFunction)(void (*)(void))F_ne, METH_FASTCALL | METH_KEYWORDS,
    "ne($module, a, b)\n"
    "--\n"
    "\n"
    "ne(a, b): tg_ne (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"ne_scalar", (PyCFunction)(void (*)(void))F_ne_scalar, METH_FASTCALL | METH_KEYWORDS,
    "ne_scalar($module, t, v)\n"
    "--\n"
    "\n"
    "ne_scalar(t, v): tg_ne_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"neg", (PyCFunction)(void (*)(void))F_neg, METH_FASTCALL | METH_KEYWORDS,
    "neg($module, t)\n"
    "--\n"
    "\n"
    "neg(t): tg_neg (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"nll_loss", (PyCFunction)(void (*)(void))F_nll_loss, METH_FASTCALL | METH_KEYWORDS,
    "nll_loss($module, input, target, weight, ignore_index, r)\n"
    "--\n"
    "\n"
    "nll_loss(input, target, weight, ignore_index, r): tg_nll_loss (ops.h).\n"
    "\n"
    "PyTorch's nll_loss: -w[target] input[..., target] with input holding\n"
    "log-probabilities in PyTorch's layouts ((C) with a 0-d target, or (N, C,\n"
    "d1, ...) with target (N, d1, ...)); weight NULL (w = 1) or (C) class\n"
    "weights as tg_cross_entropy's; ignored rows give 0 and no gradient; MEAN\n"
    "divides by the sum of w[target] over the rows kept (NaN when none is).\n"
    "Errors: TG_ERR_DTYPE (target not i64), TG_ERR_SHAPE, TG_ERR_VALUE (a\n"
    "target outside [0, C): names its position; the reduction), the weight's\n"
    "errors of tg_cross_entropy, and those of the ops."},
    {"norm", (PyCFunction)(void (*)(void))F_norm, METH_FASTCALL | METH_KEYWORDS,
    "norm($module, t, p)\n"
    "--\n"
    "\n"
    "norm(t, p): tg_norm (ops.h).\n"
    "\n"
    "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
    "sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count\n"
    "of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n"
    "double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty\n"
    "line with p infinite or negative, as PyTorch (no identity). Gradients as\n"
    "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is\n"
    "0, for 2; g sign(t) split evenly among the elements of extreme magnitude\n"
    "for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise."},
    {"norm_dim", (PyCFunction)(void (*)(void))F_norm_dim, METH_FASTCALL | METH_KEYWORDS,
    "norm_dim($module, t, p, dim, keepdim)\n"
    "--\n"
    "\n"
    "norm_dim(t, p, dim, keepdim): tg_norm_dim (ops.h).\n"
    "\n"
    "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
    "sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count\n"
    "of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n"
    "double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty\n"
    "line with p infinite or negative, as PyTorch (no identity). Gradients as\n"
    "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is\n"
    "0, for 2; g sign(t) split evenly among the elements of extreme magnitude\n"
    "for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise."},
    {"one_hot", (PyCFunction)(void (*)(void))F_one_hot, METH_FASTCALL | METH_KEYWORDS,
    "one_hot($module, target, num_classes)\n"
    "--\n"
    "\n"
    "one_hot(target, num_classes): tg_one_hot (ops.h).\n"
    "\n"
    "An i64 tensor of target's shape plus a last dim of num_classes, 1 at each\n"
    "target's class and 0 elsewhere (PyTorch's one_hot; num_classes -1: the\n"
    "largest target + 1). No gradient. Errors: TG_ERR_DTYPE (target not i64),\n"
    "TG_ERR_VALUE (a target outside [0, num_classes), a num_classes below -1, or\n"
    "-1 with an empty target), TG_ERR_DIM (target has TG_MAX_DIMS dims)."},
    {"ones", (PyCFunction)(void (*)(void))F_ones, METH_FASTCALL | METH_KEYWORDS,
    "ones($module, dt, shape)\n"
    "--\n"
    "\n"
    "ones(dt, shape): tg_ones (tensor.h).\n"
    "\n"
    "A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n"
    "Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n"
    "TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows)."},
    {"permute", (PyCFunction)(void (*)(void))F_permute, METH_FASTCALL | METH_KEYWORDS,
    "permute($module, t, dims)\n"
    "--\n"
    "\n"
    "permute(t, dims): tg_permute (tensor.h).\n"
    "\n"
    "The dims of t reordered: dim i of the result is dim dims[i] of t (a view;\n"
    "ndim must be t's, each dim once, negative counted from the end). Errors:\n"
    "TG_ERR_NULL, TG_ERR_DIM."},
    {"pow", (PyCFunction)(void (*)(void))F_pow, METH_FASTCALL | METH_KEYWORDS,
    "pow($module, a, b)\n"
    "--\n"
    "\n"
    "pow(a, b): tg_pow (ops.h).\n"
    "\n"
    "a ** b elementwise with broadcasting (PyTorch's pow(tensor, tensor); C's\n"
    "pow: NaN for a negative base and a non-integer exponent). Gradients as\n"
    "PyTorch: d/da = b a^(b-1) g (0 where b == 0), d/db = a^b log(a) g (0 where\n"
    "a == 0 and b >= 0). Errors as tg_add."},
    {"pow_", (PyCFunction)(void (*)(void))F_pow_, METH_FASTCALL | METH_KEYWORDS,
    "pow_($module, t, other)\n"
    "--\n"
    "\n"
    "pow_(t, other): tg_pow_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"pow_scalar", (PyCFunction)(void (*)(void))F_pow_scalar, METH_FASTCALL | METH_KEYWORDS,
    "pow_scalar($module, t, exponent)\n"
    "--\n"
    "\n"
    "pow_scalar(t, exponent): tg_pow_scalar (ops.h).\n"
    "\n"
    "t ** exponent (PyTorch's pow(tensor, scalar)): the exact forms PyTorch uses\n"
    "for 2, 3, -1, -2, 0.5 (sqrt: (-0) ** 0.5 is -0) and -0.5, else C's pow.\n"
    "Gradient exponent * t ** (exponent - 1) * g, and 0 for exponent 0."},
    {"prod", (PyCFunction)(void (*)(void))F_prod, METH_FASTCALL | METH_KEYWORDS,
    "prod($module, t)\n"
    "--\n"
    "\n"
    "prod(t): tg_prod (ops.h).\n"
    "\n"
    "Product (1 for an empty line). Gradient: g times the product of the other\n"
    "elements, exact where t has zeros (no division)."},
    {"prod_dim", (PyCFunction)(void (*)(void))F_prod_dim, METH_FASTCALL | METH_KEYWORDS,
    "prod_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "prod_dim(t, dim, keepdim): tg_prod_dim (ops.h).\n"
    "\n"
    "Product (1 for an empty line). Gradient: g times the product of the other\n"
    "elements, exact where t has zeros (no division)."},
    {"rand", (PyCFunction)(void (*)(void))F_rand, METH_FASTCALL | METH_KEYWORDS,
    "rand($module, dt, shape, seed, lo, hi)\n"
    "--\n"
    "\n"
    "rand(dt, shape, seed, lo, hi): tg_rand (tensor.h).\n"
    "\n"
    "Seeded random tensors (f32/f64 only). The generator (xoshiro256** seeded by\n"
    "splitmix64, polar normal method with a fixed-arithmetic logarithm) gives the\n"
    "same numbers for the same seed on every IEEE-754 machine.\n"
    "tg_randn: normal(mean, std); tg_rand: uniform in [lo, hi)."},
    {"randint", (PyCFunction)(void (*)(void))F_randint, METH_FASTCALL | METH_KEYWORDS,
    "randint($module, shape, seed, low, high)\n"
    "--\n"
    "\n"
    "randint(shape, seed, low, high): tg_randint (tensor.h).\n"
    "\n"
    "A new i64 tensor of integers drawn uniformly from [low, high) (without\n"
    "bias, any range up to the whole of int64), from the same seeded generator:\n"
    "the same numbers for the same seed everywhere. For seeded targets, token\n"
    "ids, indices. Errors: TG_ERR_VALUE (low >= high), as tg_empty."},
    {"randn", (PyCFunction)(void (*)(void))F_randn, METH_FASTCALL | METH_KEYWORDS,
    "randn($module, dt, shape, seed, mean, std)\n"
    "--\n"
    "\n"
    "randn(dt, shape, seed, mean, std): tg_randn (tensor.h).\n"
    "\n"
    "Seeded random tensors (f32/f64 only). The generator (xoshiro256** seeded by\n"
    "splitmix64, polar normal method with a fixed-arithmetic logarithm) gives the\n"
    "same numbers for the same seed on every IEEE-754 machine.\n"
    "tg_randn: normal(mean, std); tg_rand: uniform in [lo, hi)."},
    {"reciprocal", (PyCFunction)(void (*)(void))F_reciprocal, METH_FASTCALL | METH_KEYWORDS,
    "reciprocal($module, t)\n"
    "--\n"
    "\n"
    "reciprocal(t): tg_reciprocal (ops.h).\n"
    "\n"
    "1 / t. Gradient -g / t^2."},
    {"relu", (PyCFunction)(void (*)(void))F_relu, METH_FASTCALL | METH_KEYWORDS,
    "relu($module, t)\n"
    "--\n"
    "\n"
    "relu(t): tg_relu (ops.h).\n"
    "\n"
    "max(t, 0); NaN stays NaN, -0 stays -0. Gradient g where the result > 0,\n"
    "else 0 (0 at 0, as PyTorch)."},
    {"remainder", (PyCFunction)(void (*)(void))F_remainder, METH_FASTCALL | METH_KEYWORDS,
    "remainder($module, a, b)\n"
    "--\n"
    "\n"
    "remainder(a, b): tg_remainder (ops.h).\n"
    "\n"
    "a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's\n"
    "rules: the remainder has the divisor's sign), broadcast and promoted as\n"
    "tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n"
    "floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float ones\n"
    "compute as PyTorch's kernels (a zero divisor gives NaN for the remainder,\n"
    "+-inf or NaN for the quotient). Gradients: remainder g for a and\n"
    "-g floor_divide(a, b) for b, as PyTorch; floor_divide is not differentiable\n"
    "(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n"
    "operands), TG_ERR_VALUE (a zero i64 divisor, naming its first position),\n"
    "TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"repeat", (PyCFunction)(void (*)(void))F_repeat, METH_FASTCALL | METH_KEYWORDS,
    "repeat($module, t, repeats)\n"
    "--\n"
    "\n"
    "repeat(t, repeats): tg_repeat (ops.h).\n"
    "\n"
    "PyTorch's t.repeat(repeats): t tiled repeats[i] times along dim i; t is\n"
    "first seen with ndim - t.ndim new leading size-1 dims. A repeat of 0 gives\n"
    "an empty result; always a copy. Gradient: g summed over the copies. Any\n"
    "dtype. Errors: TG_ERR_NULL, TG_ERR_VALUE (ndim < t's ndim as PyTorch, ndim\n"
    "over TG_MAX_DIMS, a negative repeat), TG_ERR_SHAPE (result too large),\n"
    "TG_ERR_NOMEM."},
    {"reshape", (PyCFunction)(void (*)(void))F_reshape, METH_FASTCALL | METH_KEYWORDS,
    "reshape($module, t, shape)\n"
    "--\n"
    "\n"
    "reshape(t, shape): tg_reshape (tensor.h).\n"
    "\n"
    "Like tg_view, but copies (differentiably) when a view is impossible."},
    {"roll", (PyCFunction)(void (*)(void))F_roll, METH_FASTCALL | METH_KEYWORDS,
    "roll($module, t, shifts, dims)\n"
    "--\n"
    "\n"
    "roll(t, shifts, dims): tg_roll (ops.h).\n"
    "\n"
    "PyTorch's roll: t with its elements shifted cyclically by shifts[k] along\n"
    "dims[k] (any sign and size; a dim given twice is rolled twice), or with\n"
    "ndims 0 (dims may be NULL) by shifts[0] over the flattened elements, the\n"
    "shape kept. Gradient: g rolled back; saves nothing. Any dtype. Errors:\n"
    "TG_ERR_NULL, TG_ERR_VALUE (nshifts != ndims, or ndims 0 and nshifts != 1,\n"
    "or a negative count), TG_ERR_DIM (a dim out of range, dims given for a 0-d\n"
    "t), TG_ERR_NOMEM."},
    {"round", (PyCFunction)(void (*)(void))F_round, METH_FASTCALL | METH_KEYWORDS,
    "round($module, t)\n"
    "--\n"
    "\n"
    "round(t): tg_round (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"rsqrt", (PyCFunction)(void (*)(void))F_rsqrt, METH_FASTCALL | METH_KEYWORDS,
    "rsqrt($module, t)\n"
    "--\n"
    "\n"
    "rsqrt(t): tg_rsqrt (ops.h).\n"
    "\n"
    "1 / sqrt(t). Gradient -g / (2 t^1.5) (-inf at 0)."},
    {"scale", (PyCFunction)(void (*)(void))F_scale, METH_FASTCALL | METH_KEYWORDS,
    "scale($module, t, k)\n"
    "--\n"
    "\n"
    "scale(t, k): tg_scale (ops.h).\n"
    "\n"
    "t * k and t + k for a constant k."},
    {"scale_", (PyCFunction)(void (*)(void))F_scale_, METH_FASTCALL | METH_KEYWORDS,
    "scale_($module, t, k)\n"
    "--\n"
    "\n"
    "scale_(t, k): tg_scale_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"scatter_add", (PyCFunction)(void (*)(void))F_scatter_add, METH_FASTCALL | METH_KEYWORDS,
    "scatter_add($module, t, dim, index, src)\n"
    "--\n"
    "\n"
    "scatter_add(t, dim, index, src): tg_scatter_add (ops.h).\n"
    "\n"
    "A copy of t with src added at index along dim (PyTorch's scatter_add):\n"
    "out[index[i][j]][j] += src[i][j] for dim 0; index and src of one shape,\n"
    "t's sizes but along dim; repeated indices add up. Gradients: g for t, g\n"
    "gathered at index for src. Errors: TG_ERR_NULL, TG_ERR_DTYPE (t and src\n"
    "of one float dtype, index i64), TG_ERR_SHAPE, TG_ERR_DIM, TG_ERR_VALUE (an\n"
    "index out of range, named), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"select", (PyCFunction)(void (*)(void))F_select, METH_FASTCALL | METH_KEYWORDS,
    "select($module, t, dim, index)\n"
    "--\n"
    "\n"
    "select(t, dim, index): tg_select (tensor.h).\n"
    "\n"
    "PyTorch's select: the elements at position `index` along dim, without that\n"
    "dim (a view; a new reference). dim and index may be negative (counted from\n"
    "the end). Gradient: g at that position of a zero tensor of t's shape; an\n"
    "in-place op on the result behaves as on any view. Any dtype. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DIM (t is 0-d, or dim out of range), TG_ERR_VALUE\n"
    "(index outside [-size, size)), TG_ERR_NOMEM."},
    {"sigmoid", (PyCFunction)(void (*)(void))F_sigmoid, METH_FASTCALL | METH_KEYWORDS,
    "sigmoid($module, t)\n"
    "--\n"
    "\n"
    "sigmoid(t): tg_sigmoid (ops.h).\n"
    "\n"
    "1 / (1 + exp(-t)). Gradient g (1 - y) y."},
    {"sign", (PyCFunction)(void (*)(void))F_sign, METH_FASTCALL | METH_KEYWORDS,
    "sign($module, t)\n"
    "--\n"
    "\n"
    "sign(t): tg_sign (ops.h).\n"
    "\n"
    "-1, 0 or 1 (0 for +-0 and NaN, as PyTorch). Gradient 0."},
    {"silu", (PyCFunction)(void (*)(void))F_silu, METH_FASTCALL | METH_KEYWORDS,
    "silu($module, t)\n"
    "--\n"
    "\n"
    "silu(t): tg_silu (ops.h).\n"
    "\n"
    "t * sigmoid(t) (SiLU / swish). Gradient g s (1 + t (1 - s)), s = sigmoid(t)."},
    {"slice", (PyCFunction)(void (*)(void))F_slice, METH_FASTCALL | METH_KEYWORDS,
    "slice($module, t, dim, start, end, step)\n"
    "--\n"
    "\n"
    "slice(t, dim, start, end, step): tg_slice (tensor.h).\n"
    "\n"
    "Elements start, start+step, ... < end along dim. dim, start and end may be\n"
    "negative (counted from the end, as in Python); start/end are clamped to\n"
    "[0, size]. Errors: TG_ERR_DIM, TG_ERR_VALUE (step <= 0)."},
    {"smooth_l1_loss", (PyCFunction)(void (*)(void))F_smooth_l1_loss, METH_FASTCALL | METH_KEYWORDS,
    "smooth_l1_loss($module, input, target, r, beta)\n"
    "--\n"
    "\n"
    "smooth_l1_loss(input, target, r, beta): tg_smooth_l1_loss (ops.h).\n"
    "\n"
    "Huber-like: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d =\n"
    "input - target; beta 0: |d|; PyTorch's default beta is 1). TG_ERR_VALUE\n"
    "for a negative, NaN or infinite beta."},
    {"softmax", (PyCFunction)(void (*)(void))F_softmax, METH_FASTCALL | METH_KEYWORDS,
    "softmax($module, t)\n"
    "--\n"
    "\n"
    "softmax(t): tg_softmax (ops.h).\n"
    "\n"
    "Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d tensor\n"
    "is one row of one element), PyTorch's softmax(t, -1): a new contiguous\n"
    "tensor of t's shape, rows reduced in double with the row max subtracted; a\n"
    "row of all -inf gives NaN, a -inf entry probability 0. Saves the output.\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"softmax_dim", (PyCFunction)(void (*)(void))F_softmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "softmax_dim($module, t, dim)\n"
    "--\n"
    "\n"
    "softmax_dim(t, dim): tg_softmax_dim (ops.h).\n"
    "\n"
    "The same along dim (negative from the end), PyTorch's softmax(t, dim): the\n"
    "rows along dim are read and written in place (no transposed copy).\n"
    "Errors: as tg_softmax, and TG_ERR_DIM."},
    {"softplus", (PyCFunction)(void (*)(void))F_softplus, METH_FASTCALL | METH_KEYWORDS,
    "softplus($module, t, beta, threshold)\n"
    "--\n"
    "\n"
    "softplus(t, beta, threshold): tg_softplus (ops.h).\n"
    "\n"
    "log(1 + exp(beta t)) / beta, and t itself where beta t > threshold (PyTorch's\n"
    "defaults: beta 1, threshold 20). Gradient g sigmoid(beta t), g above the\n"
    "threshold."},
    {"sort", (PyCFunction)(void (*)(void))F_sort, METH_FASTCALL | METH_KEYWORDS,
    "sort($module, t, dim, descending)\n"
    "--\n"
    "\n"
    "sort(t, dim, descending) -> (result, indices): tg_sort (ops.h).\n"
    "\n"
    "The sorted values of t along dim, the positions in *indices."},
    {"sqrt", (PyCFunction)(void (*)(void))F_sqrt, METH_FASTCALL | METH_KEYWORDS,
    "sqrt($module, t)\n"
    "--\n"
    "\n"
    "sqrt(t): tg_sqrt (ops.h).\n"
    "\n"
    "Square root; NaN below 0. Gradient g / (2 sqrt(t)) (inf at 0, as PyTorch)."},
    {"square", (PyCFunction)(void (*)(void))F_square, METH_FASTCALL | METH_KEYWORDS,
    "square($module, t)\n"
    "--\n"
    "\n"
    "square(t): tg_square (ops.h).\n"
    "\n"
    "t * t. Gradient 2 t g."},
    {"squeeze", (PyCFunction)(void (*)(void))F_squeeze, METH_FASTCALL | METH_KEYWORDS,
    "squeeze($module, t, dim)\n"
    "--\n"
    "\n"
    "squeeze(t, dim): tg_squeeze (tensor.h).\n"
    "\n"
    "Without dim `dim` when its size is 1, else t's shape (a view either way,\n"
    "as PyTorch's squeeze(dim)); a 0-d t takes dim 0 or -1. Errors: TG_ERR_DIM."},
    {"stack", (PyCFunction)(void (*)(void))F_stack, METH_FASTCALL | METH_KEYWORDS,
    "stack($module, tensors, dim)\n"
    "--\n"
    "\n"
    "stack(tensors, dim): tg_stack (ops.h).\n"
    "\n"
    "The n tensors of one shape stacked along a new dim (0 .. ndim, negative\n"
    "from the end): cat of their tg_unsqueeze(t, dim). Errors as tg_cat."},
    {"std", (PyCFunction)(void (*)(void))F_std, METH_FASTCALL | METH_KEYWORDS,
    "std($module, t, correction)\n"
    "--\n"
    "\n"
    "std(t, correction): tg_std (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"std_dim", (PyCFunction)(void (*)(void))F_std_dim, METH_FASTCALL | METH_KEYWORDS,
    "std_dim($module, t, dim, correction, keepdim)\n"
    "--\n"
    "\n"
    "std_dim(t, dim, correction, keepdim): tg_std_dim (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"std_dims", (PyCFunction)(void (*)(void))F_std_dims, METH_FASTCALL | METH_KEYWORDS,
    "std_dims($module, t, dims, correction, keepdim)\n"
    "--\n"
    "\n"
    "std_dims(t, dims, correction, keepdim): tg_std_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): n is the number of elements reduced\n"
    "into each result."},
    {"sub", (PyCFunction)(void (*)(void))F_sub, METH_FASTCALL | METH_KEYWORDS,
    "sub($module, a, b)\n"
    "--\n"
    "\n"
    "sub(a, b): tg_sub (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"sub_", (PyCFunction)(void (*)(void))F_sub_, METH_FASTCALL | METH_KEYWORDS,
    "sub_($module, t, other)\n"
    "--\n"
    "\n"
    "sub_(t, other): tg_sub_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"sum", (PyCFunction)(void (*)(void))F_sum, METH_FASTCALL | METH_KEYWORDS,
    "sum($module, t)\n"
    "--\n"
    "\n"
    "sum(t): tg_sum (ops.h).\n"
    "\n"
    "Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n"
    "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
    "mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch)."},
    {"sum_dim", (PyCFunction)(void (*)(void))F_sum_dim, METH_FASTCALL | METH_KEYWORDS,
    "sum_dim($module, t, dim, keepdim)\n"
    "--\n"
    "\n"
    "sum_dim(t, dim, keepdim): tg_sum_dim (ops.h).\n"
    "\n"
    "Along dim (negative allowed); keepdim keeps it as size 1."},
    {"sum_dims", (PyCFunction)(void (*)(void))F_sum_dims, METH_FASTCALL | METH_KEYWORDS,
    "sum_dims($module, t, dims, keepdim)\n"
    "--\n"
    "\n"
    "sum_dims(t, dims, keepdim): tg_sum_dims (ops.h).\n"
    "\n"
    "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)\n"
    "(negative allowed, each at most once; ndims 0 reduces every dim, as\n"
    "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
    "tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n"
    "TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n"
    "repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other multi-dim\n"
    "reductions below (tg_*_dims) take their dims the same way."},
    {"tanh", (PyCFunction)(void (*)(void))F_tanh, METH_FASTCALL | METH_KEYWORDS,
    "tanh($module, t)\n"
    "--\n"
    "\n"
    "tanh(t): tg_tanh (ops.h).\n"
    "\n"
    "tanh(t). Gradient g (1 - y^2)."},
    {"to_device", (PyCFunction)(void (*)(void))F_to_device, METH_FASTCALL | METH_KEYWORDS,
    "to_device($module, t, dev)\n"
    "--\n"
    "\n"
    "to_device(t, dev): tg_to_device (tensor.h).\n"
    "\n"
    "A contiguous copy of t on device dev (any strides in t), differentiable:\n"
    "backward copies the gradient back to t's device. Returns a new reference\n"
    "to t if t is already on dev. Copies are synchronous. Errors: TG_ERR_NULL,\n"
    "TG_ERR_DEVICE (unknown device, no CUDA device or no CUDA backend: the\n"
    "message says which), TG_ERR_NOMEM, TG_ERR_CUDA (a CUDA call failed; the\n"
    "message names it)."},
    {"to_dtype", (PyCFunction)(void (*)(void))F_to_dtype, METH_FASTCALL | METH_KEYWORDS,
    "to_dtype($module, t, dt)\n"
    "--\n"
    "\n"
    "to_dtype(t, dt): tg_to_dtype (tensor.h).\n"
    "\n"
    "A copy converted to dtype dt (between f32, f64 and bf16 differentiable;\n"
    "i64 and bool <-> any dtype allowed, not differentiable; to bool: != 0, NaN\n"
    "is true; to bf16: through f32, to nearest even). Returns a new reference to\n"
    "t if t already has dtype dt."},
    {"topk", (PyCFunction)(void (*)(void))F_topk, METH_FASTCALL | METH_KEYWORDS,
    "topk($module, t, k, dim, largest)\n"
    "--\n"
    "\n"
    "topk(t, k, dim, largest) -> (result, indices): tg_topk (ops.h).\n"
    "\n"
    "The k largest (largest true) or smallest elements along dim, in sorted order\n"
    "(PyTorch's topk with sorted=True), the positions in *indices; dim's size\n"
    "becomes k. Equal elements come lowest index first (the stable order;\n"
    "PyTorch leaves it unspecified). TG_ERR_VALUE for k outside [0, size]."},
    {"transpose", (PyCFunction)(void (*)(void))F_transpose, METH_FASTCALL | METH_KEYWORDS,
    "transpose($module, t, d0, d1)\n"
    "--\n"
    "\n"
    "transpose(t, d0, d1): tg_transpose (tensor.h).\n"
    "\n"
    "Swaps two dimensions (negative indices allowed). Errors: TG_ERR_DIM."},
    {"tril", (PyCFunction)(void (*)(void))F_tril, METH_FASTCALL | METH_KEYWORDS,
    "tril($module, t, diagonal)\n"
    "--\n"
    "\n"
    "tril(t, diagonal): tg_tril (ops.h).\n"
    "\n"
    "The elements of the last two dims with j - i >= diagonal (triu) or\n"
    "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
    "triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n"
    "triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n"
    "than 2 dims), TG_ERR_NOMEM."},
    {"triu", (PyCFunction)(void (*)(void))F_triu, METH_FASTCALL | METH_KEYWORDS,
    "triu($module, t, diagonal)\n"
    "--\n"
    "\n"
    "triu(t, diagonal): tg_triu (ops.h).\n"
    "\n"
    "The elements of the last two dims with j - i >= diagonal (triu) or\n"
    "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
    "triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n"
    "triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n"
    "than 2 dims), TG_ERR_NOMEM."},
    {"unsqueeze", (PyCFunction)(void (*)(void))F_unsqueeze, METH_FASTCALL | METH_KEYWORDS,
    "unsqueeze($module, t, dim)\n"
    "--\n"
    "\n"
    "unsqueeze(t, dim): tg_unsqueeze (tensor.h).\n"
    "\n"
    "With a new size-1 dim at position dim (-(ndim+1) .. ndim), a view. Errors:\n"
    "TG_ERR_DIM (bad dim, or t already has TG_MAX_DIMS dims)."},
    {"var", (PyCFunction)(void (*)(void))F_var, METH_FASTCALL | METH_KEYWORDS,
    "var($module, t, correction)\n"
    "--\n"
    "\n"
    "var(t, correction): tg_var (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"var_dim", (PyCFunction)(void (*)(void))F_var_dim, METH_FASTCALL | METH_KEYWORDS,
    "var_dim($module, t, dim, correction, keepdim)\n"
    "--\n"
    "\n"
    "var_dim(t, dim, correction, keepdim): tg_var_dim (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"var_dims", (PyCFunction)(void (*)(void))F_var_dims, METH_FASTCALL | METH_KEYWORDS,
    "var_dims($module, t, dims, correction, keepdim)\n"
    "--\n"
    "\n"
    "var_dims(t, dims, correction, keepdim): tg_var_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): n is the number of elements reduced\n"
    "into each result."},
    {"view", (PyCFunction)(void (*)(void))F_view, METH_FASTCALL | METH_KEYWORDS,
    "view($module, t, shape)\n"
    "--\n"
    "\n"
    "view(t, shape): tg_view (tensor.h).\n"
    "\n"
    "Same data seen with a new shape (one size may be -1). Never copies.\n"
    "Errors: TG_ERR_SHAPE (element counts differ), TG_ERR_LAYOUT (the strides do\n"
    "not allow it without a copy: use tg_reshape)."},
    {"where", (PyCFunction)(void (*)(void))F_where, METH_FASTCALL | METH_KEYWORDS,
    "where($module, cond, a, b)\n"
    "--\n"
    "\n"
    "where(cond, a, b): tg_where (ops.h).\n"
    "\n"
    "cond ? a : b, elementwise; cond is any dtype (non-zero = true; TG_BOOL\n"
    "from the comparisons below), broadcast with a and b; a and b of any dtypes,\n"
    "promoted (i64 and bool values are selected too, without gradient); cond\n"
    "gets no gradient."},
    {"xlogy", (PyCFunction)(void (*)(void))F_xlogy, METH_FASTCALL | METH_KEYWORDS,
    "xlogy($module, x, y)\n"
    "--\n"
    "\n"
    "xlogy(x, y): tg_xlogy (ops.h).\n"
    "\n"
    "x * log(y) elementwise with broadcasting, 0 where x is 0 (even for y 0 or\n"
    "inf), NaN where y is NaN: PyTorch's xlogy, the term of entropies and KL\n"
    "divergences (p log p with p 0 gives 0). Integer operands compute in f32, as\n"
    "PyTorch. Gradients as PyTorch: d/dx = xlogy(g, y) (0 where x is 0 and y\n"
    "<= 0), d/dy = g x / y.\n"
    "Saves both operands. Errors as tg_add."},
    {"zeros", (PyCFunction)(void (*)(void))F_zeros, METH_FASTCALL | METH_KEYWORDS,
    "zeros($module, dt, shape)\n"
    "--\n"
    "\n"
    "zeros(dt, shape): tg_zeros (tensor.h).\n"
    "\n"
    "A new contiguous tensor. shape may be NULL only when ndim == 0 (a scalar).\n"
    "Errors: TG_ERR_VALUE (ndim outside 0..8, negative size), TG_ERR_DTYPE,\n"
    "TG_ERR_NOMEM, TG_ERR_SHAPE (element count overflows)."},
    {NULL, NULL, 0, NULL}};

PyMethodDef tgpy_op_methods[] = {
    {"abs", (PyCFunction)(void (*)(void))M_abs, METH_FASTCALL | METH_KEYWORDS,
    "abs($self, )\n"
    "--\n"
    "\n"
    "abs(t): tg_abs (ops.h).\n"
    "\n"
    "|t|. Gradient g * sign(t): 0 at 0."},
    {"add", (PyCFunction)(void (*)(void))M_add, METH_FASTCALL | METH_KEYWORDS,
    "add($self, b)\n"
    "--\n"
    "\n"
    "add(a, b): tg_add (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"add_", (PyCFunction)(void (*)(void))M_add_, METH_FASTCALL | METH_KEYWORDS,
    "add_($self, other)\n"
    "--\n"
    "\n"
    "add_(t, other): tg_add_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"add_scalar", (PyCFunction)(void (*)(void))M_add_scalar, METH_FASTCALL | METH_KEYWORDS,
    "add_scalar($self, k)\n"
    "--\n"
    "\n"
    "add_scalar(t, k): tg_add_scalar (ops.h).\n"
    "\n"
    "t * k and t + k for a constant k."},
    {"agg_loss", (PyCFunction)(void (*)(void))M_agg_loss, METH_FASTCALL | METH_KEYWORDS,
    "agg_loss($self, mask, mode)\n"
    "--\n"
    "\n"
    "agg_loss(loss, mask, mode): tg_agg_loss (ops.h).\n"
    "\n"
    "How RL trainers turn a per-token loss (..., tokens) and its mask into one\n"
    "number: TG_AGG_TOKEN_MEAN sum(loss * mask) / sum(mask) over everything;\n"
    "TG_AGG_SEQ_MEAN_TOKEN_SUM the mean over sequences of each one's masked sum;\n"
    "TG_AGG_SEQ_MEAN_TOKEN_MEAN the mean over sequences of each one's masked\n"
    "mean (a sequence with an all-zero mask makes it NaN, as the trainers'\n"
    "formula). A 0-d tensor. Errors: TG_ERR_VALUE (mode), TG_ERR_DIM (0-d loss),\n"
    "those of the ops."},
    {"all", (PyCFunction)(void (*)(void))M_all, METH_FASTCALL | METH_KEYWORDS,
    "all($self, )\n"
    "--\n"
    "\n"
    "all(t): tg_all (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"all_dim", (PyCFunction)(void (*)(void))M_all_dim, METH_FASTCALL | METH_KEYWORDS,
    "all_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "all_dim(t, dim, keepdim): tg_all_dim (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"amax", (PyCFunction)(void (*)(void))M_amax, METH_FASTCALL | METH_KEYWORDS,
    "amax($self, )\n"
    "--\n"
    "\n"
    "amax(t): tg_amax (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amax_dim", (PyCFunction)(void (*)(void))M_amax_dim, METH_FASTCALL | METH_KEYWORDS,
    "amax_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "amax_dim(t, dim, keepdim): tg_amax_dim (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amax_dims", (PyCFunction)(void (*)(void))M_amax_dims, METH_FASTCALL | METH_KEYWORDS,
    "amax_dims($self, dims, keepdim)\n"
    "--\n"
    "\n"
    "amax_dims(t, dims, keepdim): tg_amax_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): the gradient is split evenly among all\n"
    "the elements of the reduced set equal to the result, as PyTorch's."},
    {"amin", (PyCFunction)(void (*)(void))M_amin, METH_FASTCALL | METH_KEYWORDS,
    "amin($self, )\n"
    "--\n"
    "\n"
    "amin(t): tg_amin (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amin_dim", (PyCFunction)(void (*)(void))M_amin_dim, METH_FASTCALL | METH_KEYWORDS,
    "amin_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "amin_dim(t, dim, keepdim): tg_amin_dim (ops.h).\n"
    "\n"
    "Largest / smallest element (NaN if there is one). Gradient split evenly\n"
    "among the elements equal to the result; NaN for a line holding a NaN (as\n"
    "PyTorch's amax). TG_ERR_SHAPE for an empty line."},
    {"amin_dims", (PyCFunction)(void (*)(void))M_amin_dims, METH_FASTCALL | METH_KEYWORDS,
    "amin_dims($self, dims, keepdim)\n"
    "--\n"
    "\n"
    "amin_dims(t, dims, keepdim): tg_amin_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): the gradient is split evenly among all\n"
    "the elements of the reduced set equal to the result, as PyTorch's."},
    {"any", (PyCFunction)(void (*)(void))M_any, METH_FASTCALL | METH_KEYWORDS,
    "any($self, )\n"
    "--\n"
    "\n"
    "any(t): tg_any (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"any_dim", (PyCFunction)(void (*)(void))M_any_dim, METH_FASTCALL | METH_KEYWORDS,
    "any_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "any_dim(t, dim, keepdim): tg_any_dim (ops.h).\n"
    "\n"
    "Whether any / every element is non-zero (NaN is true): a TG_BOOL result;\n"
    "any dtype; false / true for an empty line. Not differentiable."},
    {"argmax", (PyCFunction)(void (*)(void))M_argmax, METH_FASTCALL | METH_KEYWORDS,
    "argmax($self, )\n"
    "--\n"
    "\n"
    "argmax(t): tg_argmax (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmax_dim", (PyCFunction)(void (*)(void))M_argmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "argmax_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "argmax_dim(t, dim, keepdim): tg_argmax_dim (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmin", (PyCFunction)(void (*)(void))M_argmin, METH_FASTCALL | METH_KEYWORDS,
    "argmin($self, )\n"
    "--\n"
    "\n"
    "argmin(t): tg_argmin (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argmin_dim", (PyCFunction)(void (*)(void))M_argmin_dim, METH_FASTCALL | METH_KEYWORDS,
    "argmin_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "argmin_dim(t, dim, keepdim): tg_argmin_dim (ops.h).\n"
    "\n"
    "i64 position of the first largest / smallest element (the first NaN if\n"
    "any); over all elements it indexes t flattened in C order. Any dtype."},
    {"argsort", (PyCFunction)(void (*)(void))M_argsort, METH_FASTCALL | METH_KEYWORDS,
    "argsort($self, dim, descending)\n"
    "--\n"
    "\n"
    "argsort(t, dim, descending): tg_argsort (ops.h).\n"
    "\n"
    "The positions along dim that sort t (PyTorch's argsort(stable=True))."},
    {"binary_cross_entropy_with_logits", (PyCFunction)(void (*)(void))M_binary_cross_entropy_with_logits, METH_FASTCALL | METH_KEYWORDS,
    "binary_cross_entropy_with_logits($self, target, pos_weight, r)\n"
    "--\n"
    "\n"
    "binary_cross_entropy_with_logits(input, target, pos_weight, r): tg_binary_cross_entropy_with_logits (ops.h).\n"
    "\n"
    "Binary cross-entropy on logits, stable for large |input|:\n"
    "(1 - target) input - w logsigmoid(input), w = 1 + (pos_weight - 1) target\n"
    "(pos_weight may be NULL: w = 1)."},
    {"ceil", (PyCFunction)(void (*)(void))M_ceil, METH_FASTCALL | METH_KEYWORDS,
    "ceil($self, )\n"
    "--\n"
    "\n"
    "ceil(t): tg_ceil (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"clamp", (PyCFunction)(void (*)(void))M_clamp, METH_FASTCALL | METH_KEYWORDS,
    "clamp($self, lo, hi)\n"
    "--\n"
    "\n"
    "clamp(t, lo, hi): tg_clamp (ops.h).\n"
    "\n"
    "min(max(t, lo), hi), as PyTorch: pass -INFINITY / INFINITY for no bound;\n"
    "lo > hi gives hi everywhere, a NaN bound NaN everywhere. Gradient 1 where\n"
    "lo <= t <= hi, else 0."},
    {"clamp_tensor", (PyCFunction)(void (*)(void))M_clamp_tensor, METH_FASTCALL | METH_KEYWORDS,
    "clamp_tensor($self, min, max)\n"
    "--\n"
    "\n"
    "clamp_tensor(t, min, max): tg_clamp_tensor (ops.h).\n"
    "\n"
    "PyTorch's clamp with tensor bounds: min(max(t, min), max), t, min and max\n"
    "broadcast together, of the dtype PyTorch's result_type gives the three\n"
    "(operands converted first, as tg_add's). min or max NULL: that bound is\n"
    "absent (PyTorch's None); both NULL is TG_ERR_VALUE. A NaN anywhere gives\n"
    "NaN; min > max gives max. i64 works in i64; bool takes one bound only (as\n"
    "PyTorch). Gradients as PyTorch's (clamp_backward_min_max): t gets g where\n"
    "min <= t <= max; min gets g where t < min (and min < max, with both\n"
    "bounds); max gets g where t > max (or max < min). Errors: TG_ERR_NULL (t),\n"
    "TG_ERR_VALUE, TG_ERR_DTYPE (bf16; bool with both bounds), TG_ERR_SHAPE,\n"
    "TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"clone", (PyCFunction)(void (*)(void))M_clone, METH_FASTCALL | METH_KEYWORDS,
    "clone($self, )\n"
    "--\n"
    "\n"
    "clone(t): tg_clone (tensor.h).\n"
    "\n"
    "A contiguous copy with its own storage (differentiable)."},
    {"contiguous", (PyCFunction)(void (*)(void))M_contiguous, METH_FASTCALL | METH_KEYWORDS,
    "contiguous($self, )\n"
    "--\n"
    "\n"
    "contiguous(t): tg_contiguous (tensor.h).\n"
    "\n"
    "t itself (new reference) if contiguous, else a contiguous copy."},
    {"copy_", (PyCFunction)(void (*)(void))M_copy_, METH_FASTCALL | METH_KEYWORDS,
    "copy_($self, src)\n"
    "--\n"
    "\n"
    "copy_(t, src): tg_copy_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"count_nonzero", (PyCFunction)(void (*)(void))M_count_nonzero, METH_FASTCALL | METH_KEYWORDS,
    "count_nonzero($self, dims)\n"
    "--\n"
    "\n"
    "count_nonzero(t, dims): tg_count_nonzero (ops.h).\n"
    "\n"
    "PyTorch's count_nonzero(t, dims): the number of non-zero elements (NaN\n"
    "counts) of a tensor of any dtype over the dims listed (every dim for ndims\n"
    "0), exactly, as an i64 tensor without those dims; never requires grad.\n"
    "Errors: those of tg_sum_dims, TG_ERR_DTYPE for bf16."},
    {"cross_entropy", (PyCFunction)(void (*)(void))M_cross_entropy, METH_FASTCALL | METH_KEYWORDS,
    "cross_entropy($self, target, weight, ignore_index, label_smoothing, r)\n"
    "--\n"
    "\n"
    "cross_entropy(input, target, weight, ignore_index, label_smoothing, r): tg_cross_entropy (ops.h).\n"
    "\n"
    "PyTorch's cross_entropy: input (C) with a 0-d target, or (N, C, d1, ...)\n"
    "with target (N, d1, ...) of i64 class indices; weight NULL or (C) class\n"
    "weights of input's dtype (not owned; never differentiated). A row's loss is\n"
    "w[y] (-log p[y]); rows whose target is ignore_index give 0 and no gradient;\n"
    "label_smoothing in [0, 1] mixes in eps / C * (-sum_c w_c log p_c) (PyTorch's\n"
    "formula; w_c = 1 without weights). MEAN divides by the sum of w[y] over the\n"
    "rows kept (their number without weights; NaN when none is). Computed by the\n"
    "fused log-prob op (no (N, C) tensor is saved for the log-likelihood term;\n"
    "label smoothing adds a log_softmax). Errors: those of tg_logprob_entropy (a\n"
    "target outside [0, C), a kept row of NaN or all -inf logits: PyTorch returns\n"
    "NaN there), TG_ERR_VALUE for label_smoothing or reduction (BATCHMEAN\n"
    "included), TG_ERR_SHAPE / TG_ERR_DTYPE / TG_ERR_DEVICE for a weight that is\n"
    "not (C), of input's dtype, on its device, TG_ERR_AUTOGRAD for a weight that\n"
    "requires grad while grad mode is on (as PyTorch 1.13)."},
    {"cumprod", (PyCFunction)(void (*)(void))M_cumprod, METH_FASTCALL | METH_KEYWORDS,
    "cumprod($self, dim)\n"
    "--\n"
    "\n"
    "cumprod(t, dim): tg_cumprod (ops.h).\n"
    "\n"
    "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
    "Both also take i64 and bool tensors: an exact i64 result (wrapping around\n"
    "on overflow), as PyTorch. Gradients: the\n"
    "reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"cumsum", (PyCFunction)(void (*)(void))M_cumsum, METH_FASTCALL | METH_KEYWORDS,
    "cumsum($self, dim)\n"
    "--\n"
    "\n"
    "cumsum(t, dim): tg_cumsum (ops.h).\n"
    "\n"
    "Cumulative sum / product along dim (t's shape), accumulated in double.\n"
    "Both also take i64 and bool tensors: an exact i64 result (wrapping around\n"
    "on overflow), as PyTorch. Gradients: the\n"
    "reversed cumulative sum of g; for cumprod, exact at zeros. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DIM, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"discounted_cumsum", (PyCFunction)(void (*)(void))M_discounted_cumsum, METH_FASTCALL | METH_KEYWORDS,
    "discounted_cumsum($self, gamma, dim)\n"
    "--\n"
    "\n"
    "discounted_cumsum(x, gamma, dim): tg_discounted_cumsum (ops.h).\n"
    "\n"
    "The discounted reverse cumulative sum along dim of an f32/f64 tensor:\n"
    "y_j = x_j + gamma y_{j+1}, y_last = x_last (RL returns; GAE advantages with\n"
    "gamma * lambda), accumulated in double; a new tensor of x's shape. No\n"
    "PyTorch op: the loop `for j reversed: y[j] = x[j] + gamma * y[j+1]`.\n"
    "Gradient: dx_j = g_j + gamma dx_{j-1}. Errors: TG_ERR_NULL, TG_ERR_DTYPE,\n"
    "TG_ERR_DIM, TG_ERR_VALUE (gamma NaN or infinite), TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"div", (PyCFunction)(void (*)(void))M_div, METH_FASTCALL | METH_KEYWORDS,
    "div($self, b)\n"
    "--\n"
    "\n"
    "div(a, b): tg_div (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"div_", (PyCFunction)(void (*)(void))M_div_, METH_FASTCALL | METH_KEYWORDS,
    "div_($self, other)\n"
    "--\n"
    "\n"
    "div_(t, other): tg_div_ (ops.h).\n"
    "\n"
    "t /= other, PyTorch's div_ (true division; other 0 gives +-inf or NaN)."},
    {"eq", (PyCFunction)(void (*)(void))M_eq, METH_FASTCALL | METH_KEYWORDS,
    "eq($self, b)\n"
    "--\n"
    "\n"
    "eq(a, b): tg_eq (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"eq_scalar", (PyCFunction)(void (*)(void))M_eq_scalar, METH_FASTCALL | METH_KEYWORDS,
    "eq_scalar($self, v)\n"
    "--\n"
    "\n"
    "eq_scalar(t, v): tg_eq_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"exp", (PyCFunction)(void (*)(void))M_exp, METH_FASTCALL | METH_KEYWORDS,
    "exp($self, )\n"
    "--\n"
    "\n"
    "exp(t): tg_exp (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"expand", (PyCFunction)(void (*)(void))M_expand, METH_FASTCALL | METH_KEYWORDS,
    "expand($self, shape)\n"
    "--\n"
    "\n"
    "expand(t, shape): tg_expand (tensor.h).\n"
    "\n"
    "Broadcast view to shape (size-1 dims get stride 0, new leading dims added;\n"
    "-1 keeps a size). Errors: TG_ERR_SHAPE."},
    {"expm1", (PyCFunction)(void (*)(void))M_expm1, METH_FASTCALL | METH_KEYWORDS,
    "expm1($self, )\n"
    "--\n"
    "\n"
    "expm1(t): tg_expm1 (ops.h).\n"
    "\n"
    "log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n"
    "g (1 + result)."},
    {"fill_", (PyCFunction)(void (*)(void))M_fill_, METH_FASTCALL | METH_KEYWORDS,
    "fill_($self, value)\n"
    "--\n"
    "\n"
    "fill_(t, value): tg_fill_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"flatten", (PyCFunction)(void (*)(void))M_flatten, METH_FASTCALL | METH_KEYWORDS,
    "flatten($self, start_dim, end_dim)\n"
    "--\n"
    "\n"
    "flatten(t, start_dim, end_dim): tg_flatten (tensor.h).\n"
    "\n"
    "Dims start_dim..end_dim merged into one (a 0-d t gives shape [1]); a view\n"
    "when the strides allow, else a copy, as tg_reshape; t itself (a new\n"
    "reference) when start_dim and end_dim are the same dim, as PyTorch.\n"
    "Errors: TG_ERR_DIM (bad dims, start after end)."},
    {"flip", (PyCFunction)(void (*)(void))M_flip, METH_FASTCALL | METH_KEYWORDS,
    "flip($self, dims)\n"
    "--\n"
    "\n"
    "flip(t, dims): tg_flip (ops.h).\n"
    "\n"
    "t reversed along each of dims[0..ndims) (a copy, as PyTorch). Gradient: g\n"
    "flipped back. Errors: TG_ERR_DIM (out of range or repeated), TG_ERR_VALUE\n"
    "(ndims outside 0..8, dims NULL)."},
    {"floor", (PyCFunction)(void (*)(void))M_floor, METH_FASTCALL | METH_KEYWORDS,
    "floor($self, )\n"
    "--\n"
    "\n"
    "floor(t): tg_floor (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"floor_divide", (PyCFunction)(void (*)(void))M_floor_divide, METH_FASTCALL | METH_KEYWORDS,
    "floor_divide($self, b)\n"
    "--\n"
    "\n"
    "floor_divide(a, b): tg_floor_divide (ops.h).\n"
    "\n"
    "a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's\n"
    "rules: the remainder has the divisor's sign), broadcast and promoted as\n"
    "tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n"
    "floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float ones\n"
    "compute as PyTorch's kernels (a zero divisor gives NaN for the remainder,\n"
    "+-inf or NaN for the quotient). Gradients: remainder g for a and\n"
    "-g floor_divide(a, b) for b, as PyTorch; floor_divide is not differentiable\n"
    "(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n"
    "operands), TG_ERR_VALUE (a zero i64 divisor, naming its first position),\n"
    "TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"gather", (PyCFunction)(void (*)(void))M_gather, METH_FASTCALL | METH_KEYWORDS,
    "gather($self, index)\n"
    "--\n"
    "\n"
    "gather(t, index): tg_gather (ops.h).\n"
    "\n"
    "out[..., j] = t[..., index[..., j]]; index is i64 with t's leading shape and\n"
    "any last size. Errors: TG_ERR_DTYPE (index not i64), TG_ERR_SHAPE (leading\n"
    "shapes differ), TG_ERR_VALUE (an index outside [0, size); the message names\n"
    "the position and the value)."},
    {"gather_dim", (PyCFunction)(void (*)(void))M_gather_dim, METH_FASTCALL | METH_KEYWORDS,
    "gather_dim($self, dim, index)\n"
    "--\n"
    "\n"
    "gather_dim(t, dim, index): tg_gather_dim (ops.h).\n"
    "\n"
    "PyTorch's gather(t, dim, index): out[i][j][k] = t[index[i][j][k]][j][k] for\n"
    "dim 0, and so on; index i64 of t's ndim and t's sizes but along dim (any\n"
    "size there: PyTorch also allows smaller sizes elsewhere, tapegrad not).\n"
    "Gradient: scattered back, repeats added. Errors as tg_gather, and\n"
    "TG_ERR_DIM."},
    {"ge", (PyCFunction)(void (*)(void))M_ge, METH_FASTCALL | METH_KEYWORDS,
    "ge($self, b)\n"
    "--\n"
    "\n"
    "ge(a, b): tg_ge (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"ge_scalar", (PyCFunction)(void (*)(void))M_ge_scalar, METH_FASTCALL | METH_KEYWORDS,
    "ge_scalar($self, v)\n"
    "--\n"
    "\n"
    "ge_scalar(t, v): tg_ge_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"gelu", (PyCFunction)(void (*)(void))M_gelu, METH_FASTCALL | METH_KEYWORDS,
    "gelu($self, approximate)\n"
    "--\n"
    "\n"
    "gelu(t, approximate): tg_gelu (ops.h).\n"
    "\n"
    "GELU: t * Phi(t) with the erf (TG_GELU_NONE) or PyTorch's tanh\n"
    "approximation (TG_GELU_TANH). Error TG_ERR_VALUE for another value."},
    {"gt", (PyCFunction)(void (*)(void))M_gt, METH_FASTCALL | METH_KEYWORDS,
    "gt($self, b)\n"
    "--\n"
    "\n"
    "gt(a, b): tg_gt (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"gt_scalar", (PyCFunction)(void (*)(void))M_gt_scalar, METH_FASTCALL | METH_KEYWORDS,
    "gt_scalar($self, v)\n"
    "--\n"
    "\n"
    "gt_scalar(t, v): tg_gt_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"index", (PyCFunction)(void (*)(void))M_index, METH_FASTCALL | METH_KEYWORDS,
    "index($self, dim, index)\n"
    "--\n"
    "\n"
    "index(t, dim, index): tg_index (ops.h).\n"
    "\n"
    "PyTorch's t[:, ..., index] with `index` at dim: an i64 index of any shape\n"
    "(0-d too), entries in [-size, size) (negative ones count from the end),\n"
    "repeats allowed. Result shape t.shape[:dim] + index.shape +\n"
    "t.shape[dim+1:]. Gradient: g added back at the indexed positions (repeats\n"
    "add up); the index is saved (version-checked, as PyTorch). Errors:\n"
    "TG_ERR_NULL, TG_ERR_DTYPE (index not i64 — a bool index is a mask: use\n"
    "tg_masked_select —, or t of another dtype), TG_ERR_DIM (t 0-d, dim out of\n"
    "range), TG_ERR_VALUE (an index out of range: the message names its\n"
    "position in index and its value; or a result of more than TG_MAX_DIMS\n"
    "dims), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"index_select", (PyCFunction)(void (*)(void))M_index_select, METH_FASTCALL | METH_KEYWORDS,
    "index_select($self, dim, index)\n"
    "--\n"
    "\n"
    "index_select(t, dim, index): tg_index_select (ops.h).\n"
    "\n"
    "t's entries index[0], index[1], ... along dim (a 1-D i64 index, repeats\n"
    "allowed): PyTorch's index_select. Errors as tg_gather_dim, TG_ERR_SHAPE for\n"
    "an index of 2 or more dims."},
    {"isfinite", (PyCFunction)(void (*)(void))M_isfinite, METH_FASTCALL | METH_KEYWORDS,
    "isfinite($self, )\n"
    "--\n"
    "\n"
    "isfinite(t): tg_isfinite (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"isinf", (PyCFunction)(void (*)(void))M_isinf, METH_FASTCALL | METH_KEYWORDS,
    "isinf($self, )\n"
    "--\n"
    "\n"
    "isinf(t): tg_isinf (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"isnan", (PyCFunction)(void (*)(void))M_isnan, METH_FASTCALL | METH_KEYWORDS,
    "isnan($self, )\n"
    "--\n"
    "\n"
    "isnan(t): tg_isnan (ops.h).\n"
    "\n"
    "NaN, +-inf, neither (any dtype: i64 and bool are finite). Errors as tg_eq."},
    {"kl_div", (PyCFunction)(void (*)(void))M_kl_div, METH_FASTCALL | METH_KEYWORDS,
    "kl_div($self, target, r, log_target)\n"
    "--\n"
    "\n"
    "kl_div(input, target, r, log_target): tg_kl_div (ops.h).\n"
    "\n"
    "PyTorch's kl_div: input holds log-probabilities; target probabilities\n"
    "(target (log target - input), 0 where target is 0) or, with log_target,\n"
    "log-probabilities (exp(target) (target - input)). MEAN averages over every\n"
    "element, as PyTorch's 'mean'; TG_REDUCTION_BATCHMEAN (PyTorch's\n"
    "'batchmean', the KL divergence's true mean per sample) divides the sum by\n"
    "input.size(0) (a 0-d input: the sum; size 0: NaN, as PyTorch)."},
    {"le", (PyCFunction)(void (*)(void))M_le, METH_FASTCALL | METH_KEYWORDS,
    "le($self, b)\n"
    "--\n"
    "\n"
    "le(a, b): tg_le (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"le_scalar", (PyCFunction)(void (*)(void))M_le_scalar, METH_FASTCALL | METH_KEYWORDS,
    "le_scalar($self, v)\n"
    "--\n"
    "\n"
    "le_scalar(t, v): tg_le_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"log", (PyCFunction)(void (*)(void))M_log, METH_FASTCALL | METH_KEYWORDS,
    "log($self, )\n"
    "--\n"
    "\n"
    "log(t): tg_log (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"log1p", (PyCFunction)(void (*)(void))M_log1p, METH_FASTCALL | METH_KEYWORDS,
    "log1p($self, )\n"
    "--\n"
    "\n"
    "log1p(t): tg_log1p (ops.h).\n"
    "\n"
    "log(1 + t) and exp(t) - 1, accurate near 0. Gradients g / (1 + t) and\n"
    "g (1 + result)."},
    {"log_softmax", (PyCFunction)(void (*)(void))M_log_softmax, METH_FASTCALL | METH_KEYWORDS,
    "log_softmax($self, )\n"
    "--\n"
    "\n"
    "log_softmax(t): tg_log_softmax (ops.h).\n"
    "\n"
    "Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d tensor\n"
    "is one row of one element), PyTorch's softmax(t, -1): a new contiguous\n"
    "tensor of t's shape, rows reduced in double with the row max subtracted; a\n"
    "row of all -inf gives NaN, a -inf entry probability 0. Saves the output.\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"log_softmax_dim", (PyCFunction)(void (*)(void))M_log_softmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "log_softmax_dim($self, dim)\n"
    "--\n"
    "\n"
    "log_softmax_dim(t, dim): tg_log_softmax_dim (ops.h).\n"
    "\n"
    "The same along dim (negative from the end), PyTorch's softmax(t, dim): the\n"
    "rows along dim are read and written in place (no transposed copy).\n"
    "Errors: as tg_softmax, and TG_ERR_DIM."},
    {"logical_and", (PyCFunction)(void (*)(void))M_logical_and, METH_FASTCALL | METH_KEYWORDS,
    "logical_and($self, b)\n"
    "--\n"
    "\n"
    "logical_and(a, b): tg_logical_and (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_not", (PyCFunction)(void (*)(void))M_logical_not, METH_FASTCALL | METH_KEYWORDS,
    "logical_not($self, )\n"
    "--\n"
    "\n"
    "logical_not(t): tg_logical_not (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_or", (PyCFunction)(void (*)(void))M_logical_or, METH_FASTCALL | METH_KEYWORDS,
    "logical_or($self, b)\n"
    "--\n"
    "\n"
    "logical_or(a, b): tg_logical_or (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logical_xor", (PyCFunction)(void (*)(void))M_logical_xor, METH_FASTCALL | METH_KEYWORDS,
    "logical_xor($self, b)\n"
    "--\n"
    "\n"
    "logical_xor(a, b): tg_logical_xor (ops.h).\n"
    "\n"
    "Logic on truth values (non-zero, NaN included, is true) of any dtypes,\n"
    "broadcast as tg_add. Errors as tg_eq."},
    {"logsigmoid", (PyCFunction)(void (*)(void))M_logsigmoid, METH_FASTCALL | METH_KEYWORDS,
    "logsigmoid($self, )\n"
    "--\n"
    "\n"
    "logsigmoid(t): tg_logsigmoid (ops.h).\n"
    "\n"
    "log(sigmoid(t)) = min(t, 0) - log1p(exp(-|t|)): finite for every finite t\n"
    "(-1000 gives -1000, not -inf). Gradient g sigmoid(-t)."},
    {"logsumexp", (PyCFunction)(void (*)(void))M_logsumexp, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp($self, )\n"
    "--\n"
    "\n"
    "logsumexp(t): tg_logsumexp (ops.h).\n"
    "\n"
    "log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf\n"
    "for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - result)\n"
    "(NaN on an all -inf line, as PyTorch)."},
    {"logsumexp_dim", (PyCFunction)(void (*)(void))M_logsumexp_dim, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "logsumexp_dim(t, dim, keepdim): tg_logsumexp_dim (ops.h).\n"
    "\n"
    "log(sum(exp(t))), stable (max + log sum exp(t - max), in double): -inf\n"
    "for an empty or all -inf line, +inf with a +inf. Gradient g exp(t - result)\n"
    "(NaN on an all -inf line, as PyTorch)."},
    {"logsumexp_dims", (PyCFunction)(void (*)(void))M_logsumexp_dims, METH_FASTCALL | METH_KEYWORDS,
    "logsumexp_dims($self, dims, keepdim)\n"
    "--\n"
    "\n"
    "logsumexp_dims(t, dims, keepdim): tg_logsumexp_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims)."},
    {"lt", (PyCFunction)(void (*)(void))M_lt, METH_FASTCALL | METH_KEYWORDS,
    "lt($self, b)\n"
    "--\n"
    "\n"
    "lt(a, b): tg_lt (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"lt_scalar", (PyCFunction)(void (*)(void))M_lt_scalar, METH_FASTCALL | METH_KEYWORDS,
    "lt_scalar($self, v)\n"
    "--\n"
    "\n"
    "lt_scalar(t, v): tg_lt_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"masked_fill", (PyCFunction)(void (*)(void))M_masked_fill, METH_FASTCALL | METH_KEYWORDS,
    "masked_fill($self, mask, value)\n"
    "--\n"
    "\n"
    "masked_fill(t, mask, value): tg_masked_fill (ops.h).\n"
    "\n"
    "t with value where mask is non-zero (PyTorch's masked_fill, out of place;\n"
    "mask of any dtype, broadcast to t's shape). Gradient to t where the mask\n"
    "is 0. Errors: TG_ERR_NULL, TG_ERR_SHAPE (the mask would change t's shape),\n"
    "those of tg_where."},
    {"masked_mean", (PyCFunction)(void (*)(void))M_masked_mean, METH_FASTCALL | METH_KEYWORDS,
    "masked_mean($self, mask, dim, all)\n"
    "--\n"
    "\n"
    "masked_mean(x, mask, dim, all): tg_masked_mean (ops.h).\n"
    "\n"
    "sum(x * mask) / sum(mask) along dim (all: over every element, dim\n"
    "ignored), mask broadcast to x's shape (e.g. float 0/1). A dim or row with an\n"
    "all-zero mask gives NaN (0 / 0), as the trainers' formula. Gradient to x;\n"
    "the mask gets one too if it requires grad. Errors: those of tg_mul,\n"
    "tg_sum_dim, TG_ERR_DIM."},
    {"masked_select", (PyCFunction)(void (*)(void))M_masked_select, METH_FASTCALL | METH_KEYWORDS,
    "masked_select($self, mask)\n"
    "--\n"
    "\n"
    "masked_select(t, mask): tg_masked_select (ops.h).\n"
    "\n"
    "The elements of t where mask (TG_BOOL) is true, t and mask broadcast\n"
    "together, in C order of the broadcast shape: a 1-D tensor (PyTorch's\n"
    "masked_select). Its length depends on the mask's values, so the mask is\n"
    "read on the host: for CUDA tensors a copy of it comes back to the host\n"
    "(the call waits for the device). Gradient: g put back at the selected\n"
    "positions, summed over the dims along which t was broadcast. Saves the\n"
    "selected positions (not t or mask: editing them in place afterwards does\n"
    "not fail backward, as PyTorch's would). Errors: TG_ERR_NULL, TG_ERR_DTYPE\n"
    "(mask not bool, as PyTorch 1.13; t of another dtype), TG_ERR_SHAPE (t and\n"
    "mask do not broadcast), TG_ERR_DEVICE, TG_ERR_NOMEM, TG_ERR_CUDA."},
    {"matmul", (PyCFunction)(void (*)(void))M_matmul, METH_FASTCALL | METH_KEYWORDS,
    "matmul($self, b)\n"
    "--\n"
    "\n"
    "matmul(a, b): tg_matmul (ops.h).\n"
    "\n"
    "a (..., M, K) @ b (..., K, N) -> (..., M, N) through CBLAS. Both 2-D, or\n"
    "batched with equal leading dims, or a batched and b 2-D (shared weight).\n"
    "f32 or f64 of one dtype, or two bf16 operands: then both are converted to\n"
    "f32 (what backward saves) and the result is f32.\n"
    "Errors: TG_ERR_DTYPE; TG_ERR_SHAPE (inner sizes or batch dims differ,\n"
    "ndim < 2)."},
    {"max_dim", (PyCFunction)(void (*)(void))M_max_dim, METH_FASTCALL | METH_KEYWORDS,
    "max_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "max_dim(t, dim, keepdim) -> (result, indices): tg_max_dim (ops.h).\n"
    "\n"
    "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
    "indices is not NULL, *indices = their i64 positions along dim (the first\n"
    "extreme, or the first NaN), a second new reference owned like the result.\n"
    "Gradient all to that position. TG_ERR_SHAPE for an empty line."},
    {"maximum", (PyCFunction)(void (*)(void))M_maximum, METH_FASTCALL | METH_KEYWORDS,
    "maximum($self, b)\n"
    "--\n"
    "\n"
    "maximum(a, b): tg_maximum (ops.h).\n"
    "\n"
    "Elementwise max/min; where a == b the gradient is split evenly (as PyTorch).\n"
    "NaN in either operand gives NaN."},
    {"mean", (PyCFunction)(void (*)(void))M_mean, METH_FASTCALL | METH_KEYWORDS,
    "mean($self, )\n"
    "--\n"
    "\n"
    "mean(t): tg_mean (ops.h).\n"
    "\n"
    "Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n"
    "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
    "mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch)."},
    {"mean_dim", (PyCFunction)(void (*)(void))M_mean_dim, METH_FASTCALL | METH_KEYWORDS,
    "mean_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "mean_dim(t, dim, keepdim): tg_mean_dim (ops.h).\n"
    "\n"
    "Along dim (negative allowed); keepdim keeps it as size 1."},
    {"mean_dims", (PyCFunction)(void (*)(void))M_mean_dims, METH_FASTCALL | METH_KEYWORDS,
    "mean_dims($self, dims, keepdim)\n"
    "--\n"
    "\n"
    "mean_dims(t, dims, keepdim): tg_mean_dims (ops.h).\n"
    "\n"
    "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)\n"
    "(negative allowed, each at most once; ndims 0 reduces every dim, as\n"
    "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
    "tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n"
    "TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n"
    "repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other multi-dim\n"
    "reductions below (tg_*_dims) take their dims the same way."},
    {"min_dim", (PyCFunction)(void (*)(void))M_min_dim, METH_FASTCALL | METH_KEYWORDS,
    "min_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "min_dim(t, dim, keepdim) -> (result, indices): tg_min_dim (ops.h).\n"
    "\n"
    "PyTorch's max(t, dim) / min(t, dim): the values (returned) and, when\n"
    "indices is not NULL, *indices = their i64 positions along dim (the first\n"
    "extreme, or the first NaN), a second new reference owned like the result.\n"
    "Gradient all to that position. TG_ERR_SHAPE for an empty line."},
    {"minimum", (PyCFunction)(void (*)(void))M_minimum, METH_FASTCALL | METH_KEYWORDS,
    "minimum($self, b)\n"
    "--\n"
    "\n"
    "minimum(a, b): tg_minimum (ops.h).\n"
    "\n"
    "Elementwise max/min; where a == b the gradient is split evenly (as PyTorch).\n"
    "NaN in either operand gives NaN."},
    {"mse_loss", (PyCFunction)(void (*)(void))M_mse_loss, METH_FASTCALL | METH_KEYWORDS,
    "mse_loss($self, target, r)\n"
    "--\n"
    "\n"
    "mse_loss(input, target, r): tg_mse_loss (ops.h).\n"
    "\n"
    "(input - target)^2."},
    {"mul", (PyCFunction)(void (*)(void))M_mul, METH_FASTCALL | METH_KEYWORDS,
    "mul($self, b)\n"
    "--\n"
    "\n"
    "mul(a, b): tg_mul (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"mul_", (PyCFunction)(void (*)(void))M_mul_, METH_FASTCALL | METH_KEYWORDS,
    "mul_($self, other)\n"
    "--\n"
    "\n"
    "mul_(t, other): tg_mul_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"nan_to_num", (PyCFunction)(void (*)(void))M_nan_to_num, METH_FASTCALL | METH_KEYWORDS,
    "nan_to_num($self, nan_value, posinf, neginf)\n"
    "--\n"
    "\n"
    "nan_to_num(t, nan_value, posinf, neginf): tg_nan_to_num (ops.h).\n"
    "\n"
    "PyTorch's nan_to_num: NaN -> nan_value, +inf -> posinf, -inf -> neginf (each\n"
    "converted to t's dtype); a NaN posinf / neginf means PyTorch's default\n"
    "(None): the dtype's largest / lowest finite value. An i64 or bool t is\n"
    "returned as a copy, unchanged (as PyTorch). Gradient g * isfinite(t).\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE (bf16), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"narrow", (PyCFunction)(void (*)(void))M_narrow, METH_FASTCALL | METH_KEYWORDS,
    "narrow($self, dim, start, length)\n"
    "--\n"
    "\n"
    "narrow(t, dim, start, length): tg_narrow (tensor.h).\n"
    "\n"
    "PyTorch's narrow: elements start .. start+length-1 along dim, a view.\n"
    "start may be negative (counted from the end). Errors: TG_ERR_DIM (0-d or\n"
    "bad dim), TG_ERR_VALUE (the range is not inside the dim)."},
    {"ne", (PyCFunction)(void (*)(void))M_ne, METH_FASTCALL | METH_KEYWORDS,
    "ne($self, b)\n"
    "--\n"
    "\n"
    "ne(a, b): tg_ne (ops.h).\n"
    "\n"
    "a == b, a != b, a < b, a <= b, a > b, a >= b elementwise, broadcast as\n"
    "tg_add; operands of any dtypes, compared in PyTorch's promoted dtype\n"
    "(bool < i64 < f32 < f64). NaN is unequal to everything, itself included.\n"
    "Errors: TG_ERR_NULL, TG_ERR_SHAPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"ne_scalar", (PyCFunction)(void (*)(void))M_ne_scalar, METH_FASTCALL | METH_KEYWORDS,
    "ne_scalar($self, v)\n"
    "--\n"
    "\n"
    "ne_scalar(t, v): tg_ne_scalar (ops.h).\n"
    "\n"
    "t against the number v (PyTorch's t == v, ...): v is converted to t's\n"
    "dtype, except a non-integer v against an i64 or bool t, compared in f32\n"
    "as PyTorch does (its default float dtype), and a bool t against an integer\n"
    "other than 0 and 1, compared as i64. Errors: TG_ERR_NULL, TG_ERR_DEVICE,\n"
    "TG_ERR_NOMEM."},
    {"neg", (PyCFunction)(void (*)(void))M_neg, METH_FASTCALL | METH_KEYWORDS,
    "neg($self, )\n"
    "--\n"
    "\n"
    "neg(t): tg_neg (ops.h).\n"
    "\n"
    "elementwise, unary"},
    {"nll_loss", (PyCFunction)(void (*)(void))M_nll_loss, METH_FASTCALL | METH_KEYWORDS,
    "nll_loss($self, target, weight, ignore_index, r)\n"
    "--\n"
    "\n"
    "nll_loss(input, target, weight, ignore_index, r): tg_nll_loss (ops.h).\n"
    "\n"
    "PyTorch's nll_loss: -w[target] input[..., target] with input holding\n"
    "log-probabilities in PyTorch's layouts ((C) with a 0-d target, or (N, C,\n"
    "d1, ...) with target (N, d1, ...)); weight NULL (w = 1) or (C) class\n"
    "weights as tg_cross_entropy's; ignored rows give 0 and no gradient; MEAN\n"
    "divides by the sum of w[target] over the rows kept (NaN when none is).\n"
    "Errors: TG_ERR_DTYPE (target not i64), TG_ERR_SHAPE, TG_ERR_VALUE (a\n"
    "target outside [0, C): names its position; the reduction), the weight's\n"
    "errors of tg_cross_entropy, and those of the ops."},
    {"norm", (PyCFunction)(void (*)(void))M_norm, METH_FASTCALL | METH_KEYWORDS,
    "norm($self, p)\n"
    "--\n"
    "\n"
    "norm(t, p): tg_norm (ops.h).\n"
    "\n"
    "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
    "sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count\n"
    "of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n"
    "double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty\n"
    "line with p infinite or negative, as PyTorch (no identity). Gradients as\n"
    "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is\n"
    "0, for 2; g sign(t) split evenly among the elements of extreme magnitude\n"
    "for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise."},
    {"norm_dim", (PyCFunction)(void (*)(void))M_norm_dim, METH_FASTCALL | METH_KEYWORDS,
    "norm_dim($self, p, dim, keepdim)\n"
    "--\n"
    "\n"
    "norm_dim(t, p, dim, keepdim): tg_norm_dim (ops.h).\n"
    "\n"
    "Vector norm (PyTorch's linalg.vector_norm) for any p: sum |t| for 1,\n"
    "sqrt(sum t^2) for 2, max |t| for INFINITY, min |t| for -INFINITY, the count\n"
    "of non-zero elements for 0, (sum |t|^p)^(1/p) otherwise (accumulated in\n"
    "double), NaN for a NaN p (0 for an empty line). TG_ERR_SHAPE for an empty\n"
    "line with p infinite or negative, as PyTorch (no identity). Gradients as\n"
    "PyTorch's norm_backward: g sign(t) for 1; g t / norm, 0 where the norm is\n"
    "0, for 2; g sign(t) split evenly among the elements of extreme magnitude\n"
    "for +-INFINITY; 0 for p 0; g sign(t) |t|^(p-1) / norm^(p-1) otherwise."},
    {"one_hot", (PyCFunction)(void (*)(void))M_one_hot, METH_FASTCALL | METH_KEYWORDS,
    "one_hot($self, num_classes)\n"
    "--\n"
    "\n"
    "one_hot(target, num_classes): tg_one_hot (ops.h).\n"
    "\n"
    "An i64 tensor of target's shape plus a last dim of num_classes, 1 at each\n"
    "target's class and 0 elsewhere (PyTorch's one_hot; num_classes -1: the\n"
    "largest target + 1). No gradient. Errors: TG_ERR_DTYPE (target not i64),\n"
    "TG_ERR_VALUE (a target outside [0, num_classes), a num_classes below -1, or\n"
    "-1 with an empty target), TG_ERR_DIM (target has TG_MAX_DIMS dims)."},
    {"permute", (PyCFunction)(void (*)(void))M_permute, METH_FASTCALL | METH_KEYWORDS,
    "permute($self, dims)\n"
    "--\n"
    "\n"
    "permute(t, dims): tg_permute (tensor.h).\n"
    "\n"
    "The dims of t reordered: dim i of the result is dim dims[i] of t (a view;\n"
    "ndim must be t's, each dim once, negative counted from the end). Errors:\n"
    "TG_ERR_NULL, TG_ERR_DIM."},
    {"pow", (PyCFunction)(void (*)(void))M_pow, METH_FASTCALL | METH_KEYWORDS,
    "pow($self, b)\n"
    "--\n"
    "\n"
    "pow(a, b): tg_pow (ops.h).\n"
    "\n"
    "a ** b elementwise with broadcasting (PyTorch's pow(tensor, tensor); C's\n"
    "pow: NaN for a negative base and a non-integer exponent). Gradients as\n"
    "PyTorch: d/da = b a^(b-1) g (0 where b == 0), d/db = a^b log(a) g (0 where\n"
    "a == 0 and b >= 0). Errors as tg_add."},
    {"pow_", (PyCFunction)(void (*)(void))M_pow_, METH_FASTCALL | METH_KEYWORDS,
    "pow_($self, other)\n"
    "--\n"
    "\n"
    "pow_(t, other): tg_pow_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"pow_scalar", (PyCFunction)(void (*)(void))M_pow_scalar, METH_FASTCALL | METH_KEYWORDS,
    "pow_scalar($self, exponent)\n"
    "--\n"
    "\n"
    "pow_scalar(t, exponent): tg_pow_scalar (ops.h).\n"
    "\n"
    "t ** exponent (PyTorch's pow(tensor, scalar)): the exact forms PyTorch uses\n"
    "for 2, 3, -1, -2, 0.5 (sqrt: (-0) ** 0.5 is -0) and -0.5, else C's pow.\n"
    "Gradient exponent * t ** (exponent - 1) * g, and 0 for exponent 0."},
    {"prod", (PyCFunction)(void (*)(void))M_prod, METH_FASTCALL | METH_KEYWORDS,
    "prod($self, )\n"
    "--\n"
    "\n"
    "prod(t): tg_prod (ops.h).\n"
    "\n"
    "Product (1 for an empty line). Gradient: g times the product of the other\n"
    "elements, exact where t has zeros (no division)."},
    {"prod_dim", (PyCFunction)(void (*)(void))M_prod_dim, METH_FASTCALL | METH_KEYWORDS,
    "prod_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "prod_dim(t, dim, keepdim): tg_prod_dim (ops.h).\n"
    "\n"
    "Product (1 for an empty line). Gradient: g times the product of the other\n"
    "elements, exact where t has zeros (no division)."},
    {"reciprocal", (PyCFunction)(void (*)(void))M_reciprocal, METH_FASTCALL | METH_KEYWORDS,
    "reciprocal($self, )\n"
    "--\n"
    "\n"
    "reciprocal(t): tg_reciprocal (ops.h).\n"
    "\n"
    "1 / t. Gradient -g / t^2."},
    {"relu", (PyCFunction)(void (*)(void))M_relu, METH_FASTCALL | METH_KEYWORDS,
    "relu($self, )\n"
    "--\n"
    "\n"
    "relu(t): tg_relu (ops.h).\n"
    "\n"
    "max(t, 0); NaN stays NaN, -0 stays -0. Gradient g where the result > 0,\n"
    "else 0 (0 at 0, as PyTorch)."},
    {"remainder", (PyCFunction)(void (*)(void))M_remainder, METH_FASTCALL | METH_KEYWORDS,
    "remainder($self, b)\n"
    "--\n"
    "\n"
    "remainder(a, b): tg_remainder (ops.h).\n"
    "\n"
    "a mod b and floor(a / b), rounding toward -inf (PyTorch's and Python's\n"
    "rules: the remainder has the divisor's sign), broadcast and promoted as\n"
    "tg_add. Two integer operands compute exactly in i64 (INT64_MIN\n"
    "floor_divide -1 wraps to INT64_MIN) and refuse a zero divisor; float ones\n"
    "compute as PyTorch's kernels (a zero divisor gives NaN for the remainder,\n"
    "+-inf or NaN for the quotient). Gradients: remainder g for a and\n"
    "-g floor_divide(a, b) for b, as PyTorch; floor_divide is not differentiable\n"
    "(its result never requires grad). Errors: TG_ERR_DTYPE (two bool\n"
    "operands), TG_ERR_VALUE (a zero i64 divisor, naming its first position),\n"
    "TG_ERR_SHAPE, TG_ERR_NULL, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"repeat", (PyCFunction)(void (*)(void))M_repeat, METH_FASTCALL | METH_KEYWORDS,
    "repeat($self, repeats)\n"
    "--\n"
    "\n"
    "repeat(t, repeats): tg_repeat (ops.h).\n"
    "\n"
    "PyTorch's t.repeat(repeats): t tiled repeats[i] times along dim i; t is\n"
    "first seen with ndim - t.ndim new leading size-1 dims. A repeat of 0 gives\n"
    "an empty result; always a copy. Gradient: g summed over the copies. Any\n"
    "dtype. Errors: TG_ERR_NULL, TG_ERR_VALUE (ndim < t's ndim as PyTorch, ndim\n"
    "over TG_MAX_DIMS, a negative repeat), TG_ERR_SHAPE (result too large),\n"
    "TG_ERR_NOMEM."},
    {"reshape", (PyCFunction)(void (*)(void))M_reshape, METH_FASTCALL | METH_KEYWORDS,
    "reshape($self, shape)\n"
    "--\n"
    "\n"
    "reshape(t, shape): tg_reshape (tensor.h).\n"
    "\n"
    "Like tg_view, but copies (differentiably) when a view is impossible."},
    {"roll", (PyCFunction)(void (*)(void))M_roll, METH_FASTCALL | METH_KEYWORDS,
    "roll($self, shifts, dims)\n"
    "--\n"
    "\n"
    "roll(t, shifts, dims): tg_roll (ops.h).\n"
    "\n"
    "PyTorch's roll: t with its elements shifted cyclically by shifts[k] along\n"
    "dims[k] (any sign and size; a dim given twice is rolled twice), or with\n"
    "ndims 0 (dims may be NULL) by shifts[0] over the flattened elements, the\n"
    "shape kept. Gradient: g rolled back; saves nothing. Any dtype. Errors:\n"
    "TG_ERR_NULL, TG_ERR_VALUE (nshifts != ndims, or ndims 0 and nshifts != 1,\n"
    "or a negative count), TG_ERR_DIM (a dim out of range, dims given for a 0-d\n"
    "t), TG_ERR_NOMEM."},
    {"round", (PyCFunction)(void (*)(void))M_round, METH_FASTCALL | METH_KEYWORDS,
    "round($self, )\n"
    "--\n"
    "\n"
    "round(t): tg_round (ops.h).\n"
    "\n"
    "Rounding: floor, ceil, and round half to even (as PyTorch's round). Gradient\n"
    "0 (recorded, as in PyTorch)."},
    {"rsqrt", (PyCFunction)(void (*)(void))M_rsqrt, METH_FASTCALL | METH_KEYWORDS,
    "rsqrt($self, )\n"
    "--\n"
    "\n"
    "rsqrt(t): tg_rsqrt (ops.h).\n"
    "\n"
    "1 / sqrt(t). Gradient -g / (2 t^1.5) (-inf at 0)."},
    {"scale", (PyCFunction)(void (*)(void))M_scale, METH_FASTCALL | METH_KEYWORDS,
    "scale($self, k)\n"
    "--\n"
    "\n"
    "scale(t, k): tg_scale (ops.h).\n"
    "\n"
    "t * k and t + k for a constant k."},
    {"scale_", (PyCFunction)(void (*)(void))M_scale_, METH_FASTCALL | METH_KEYWORDS,
    "scale_($self, k)\n"
    "--\n"
    "\n"
    "scale_(t, k): tg_scale_ (ops.h).\n"
    "\n"
    "t **= other, PyTorch's pow_(tensor) (C's pow as tg_pow)."},
    {"scatter_add", (PyCFunction)(void (*)(void))M_scatter_add, METH_FASTCALL | METH_KEYWORDS,
    "scatter_add($self, dim, index, src)\n"
    "--\n"
    "\n"
    "scatter_add(t, dim, index, src): tg_scatter_add (ops.h).\n"
    "\n"
    "A copy of t with src added at index along dim (PyTorch's scatter_add):\n"
    "out[index[i][j]][j] += src[i][j] for dim 0; index and src of one shape,\n"
    "t's sizes but along dim; repeated indices add up. Gradients: g for t, g\n"
    "gathered at index for src. Errors: TG_ERR_NULL, TG_ERR_DTYPE (t and src\n"
    "of one float dtype, index i64), TG_ERR_SHAPE, TG_ERR_DIM, TG_ERR_VALUE (an\n"
    "index out of range, named), TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"select", (PyCFunction)(void (*)(void))M_select, METH_FASTCALL | METH_KEYWORDS,
    "select($self, dim, index)\n"
    "--\n"
    "\n"
    "select(t, dim, index): tg_select (tensor.h).\n"
    "\n"
    "PyTorch's select: the elements at position `index` along dim, without that\n"
    "dim (a view; a new reference). dim and index may be negative (counted from\n"
    "the end). Gradient: g at that position of a zero tensor of t's shape; an\n"
    "in-place op on the result behaves as on any view. Any dtype. Errors:\n"
    "TG_ERR_NULL, TG_ERR_DIM (t is 0-d, or dim out of range), TG_ERR_VALUE\n"
    "(index outside [-size, size)), TG_ERR_NOMEM."},
    {"sigmoid", (PyCFunction)(void (*)(void))M_sigmoid, METH_FASTCALL | METH_KEYWORDS,
    "sigmoid($self, )\n"
    "--\n"
    "\n"
    "sigmoid(t): tg_sigmoid (ops.h).\n"
    "\n"
    "1 / (1 + exp(-t)). Gradient g (1 - y) y."},
    {"sign", (PyCFunction)(void (*)(void))M_sign, METH_FASTCALL | METH_KEYWORDS,
    "sign($self, )\n"
    "--\n"
    "\n"
    "sign(t): tg_sign (ops.h).\n"
    "\n"
    "-1, 0 or 1 (0 for +-0 and NaN, as PyTorch). Gradient 0."},
    {"silu", (PyCFunction)(void (*)(void))M_silu, METH_FASTCALL | METH_KEYWORDS,
    "silu($self, )\n"
    "--\n"
    "\n"
    "silu(t): tg_silu (ops.h).\n"
    "\n"
    "t * sigmoid(t) (SiLU / swish). Gradient g s (1 + t (1 - s)), s = sigmoid(t)."},
    {"slice", (PyCFunction)(void (*)(void))M_slice, METH_FASTCALL | METH_KEYWORDS,
    "slice($self, dim, start, end, step)\n"
    "--\n"
    "\n"
    "slice(t, dim, start, end, step): tg_slice (tensor.h).\n"
    "\n"
    "Elements start, start+step, ... < end along dim. dim, start and end may be\n"
    "negative (counted from the end, as in Python); start/end are clamped to\n"
    "[0, size]. Errors: TG_ERR_DIM, TG_ERR_VALUE (step <= 0)."},
    {"smooth_l1_loss", (PyCFunction)(void (*)(void))M_smooth_l1_loss, METH_FASTCALL | METH_KEYWORDS,
    "smooth_l1_loss($self, target, r, beta)\n"
    "--\n"
    "\n"
    "smooth_l1_loss(input, target, r, beta): tg_smooth_l1_loss (ops.h).\n"
    "\n"
    "Huber-like: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d =\n"
    "input - target; beta 0: |d|; PyTorch's default beta is 1). TG_ERR_VALUE\n"
    "for a negative, NaN or infinite beta."},
    {"softmax", (PyCFunction)(void (*)(void))M_softmax, METH_FASTCALL | METH_KEYWORDS,
    "softmax($self, )\n"
    "--\n"
    "\n"
    "softmax(t): tg_softmax (ops.h).\n"
    "\n"
    "Softmax / log-softmax of an f32/f64 tensor along its last dim (a 0-d tensor\n"
    "is one row of one element), PyTorch's softmax(t, -1): a new contiguous\n"
    "tensor of t's shape, rows reduced in double with the row max subtracted; a\n"
    "row of all -inf gives NaN, a -inf entry probability 0. Saves the output.\n"
    "Errors: TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM."},
    {"softmax_dim", (PyCFunction)(void (*)(void))M_softmax_dim, METH_FASTCALL | METH_KEYWORDS,
    "softmax_dim($self, dim)\n"
    "--\n"
    "\n"
    "softmax_dim(t, dim): tg_softmax_dim (ops.h).\n"
    "\n"
    "The same along dim (negative from the end), PyTorch's softmax(t, dim): the\n"
    "rows along dim are read and written in place (no transposed copy).\n"
    "Errors: as tg_softmax, and TG_ERR_DIM."},
    {"softplus", (PyCFunction)(void (*)(void))M_softplus, METH_FASTCALL | METH_KEYWORDS,
    "softplus($self, beta, threshold)\n"
    "--\n"
    "\n"
    "softplus(t, beta, threshold): tg_softplus (ops.h).\n"
    "\n"
    "log(1 + exp(beta t)) / beta, and t itself where beta t > threshold (PyTorch's\n"
    "defaults: beta 1, threshold 20). Gradient g sigmoid(beta t), g above the\n"
    "threshold."},
    {"sort", (PyCFunction)(void (*)(void))M_sort, METH_FASTCALL | METH_KEYWORDS,
    "sort($self, dim, descending)\n"
    "--\n"
    "\n"
    "sort(t, dim, descending) -> (result, indices): tg_sort (ops.h).\n"
    "\n"
    "The sorted values of t along dim, the positions in *indices."},
    {"sqrt", (PyCFunction)(void (*)(void))M_sqrt, METH_FASTCALL | METH_KEYWORDS,
    "sqrt($self, )\n"
    "--\n"
    "\n"
    "sqrt(t): tg_sqrt (ops.h).\n"
    "\n"
    "Square root; NaN below 0. Gradient g / (2 sqrt(t)) (inf at 0, as PyTorch)."},
    {"square", (PyCFunction)(void (*)(void))M_square, METH_FASTCALL | METH_KEYWORDS,
    "square($self, )\n"
    "--\n"
    "\n"
    "square(t): tg_square (ops.h).\n"
    "\n"
    "t * t. Gradient 2 t g."},
    {"squeeze", (PyCFunction)(void (*)(void))M_squeeze, METH_FASTCALL | METH_KEYWORDS,
    "squeeze($self, dim)\n"
    "--\n"
    "\n"
    "squeeze(t, dim): tg_squeeze (tensor.h).\n"
    "\n"
    "Without dim `dim` when its size is 1, else t's shape (a view either way,\n"
    "as PyTorch's squeeze(dim)); a 0-d t takes dim 0 or -1. Errors: TG_ERR_DIM."},
    {"std_dim", (PyCFunction)(void (*)(void))M_std_dim, METH_FASTCALL | METH_KEYWORDS,
    "std_dim($self, dim, correction, keepdim)\n"
    "--\n"
    "\n"
    "std_dim(t, dim, correction, keepdim): tg_std_dim (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"std_dims", (PyCFunction)(void (*)(void))M_std_dims, METH_FASTCALL | METH_KEYWORDS,
    "std_dims($self, dims, correction, keepdim)\n"
    "--\n"
    "\n"
    "std_dims(t, dims, correction, keepdim): tg_std_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): n is the number of elements reduced\n"
    "into each result."},
    {"sub", (PyCFunction)(void (*)(void))M_sub, METH_FASTCALL | METH_KEYWORDS,
    "sub($self, b)\n"
    "--\n"
    "\n"
    "sub(a, b): tg_sub (ops.h).\n"
    "\n"
    "elementwise, binary with broadcasting"},
    {"sub_", (PyCFunction)(void (*)(void))M_sub_, METH_FASTCALL | METH_KEYWORDS,
    "sub_($self, other)\n"
    "--\n"
    "\n"
    "sub_(t, other): tg_sub_ (ops.h).\n"
    "\n"
    "in-place (bump the version counter, record op name and call site)\n"
    "t may be a view (the write goes to the shared storage). other is broadcast\n"
    "to t's shape. With grad mode on and t or other requiring grad, the op is\n"
    "recorded as in PyTorch: t's grad_fn becomes the op's node, or for a view\n"
    "its base's grad_fn becomes CopySlices (views of the base made earlier see\n"
    "the edit). fill_ and copy_ keep t's history, which then gets a zero\n"
    "gradient. Refused (TG_ERR_AUTOGRAD) with grad mode on: a leaf that requires\n"
    "grad, a view of one, a view made with grad mode off, a view returned by a\n"
    "custom function. add_, sub_, mul_, div_, pow_ and scale_ take the operands\n"
    "their out-of-place ops take (i64 and bool tensors too, mixed dtypes),\n"
    "computed in the promoted dtype and written into t converted, as PyTorch (an\n"
    "f32 t plus an f64 other is rounded into t); refused (TG_ERR_DTYPE) where the\n"
    "promoted dtype is of a higher category than t's (a float into an i64 or\n"
    "bool t, an i64 into a bool t), as PyTorch: div_ is true division, so an i64\n"
    "or bool t is always refused (\"result type f32 can't be cast to the desired\n"
    "output type i64\"). pow_ of two i64 tensors computes in i64 as tg_pow\n"
    "(1 ** -n is 1, (-1) ** -n is +-1, any other base to a negative power 0, as\n"
    "PyTorch); pow_ of two bool tensors is TG_ERR_DTYPE. What backward keeps is\n"
    "PyTorch's: div_ and mul_ a copy of t's old values when other requires grad,\n"
    "pow_ that copy always and t itself after the write (its result), so that\n"
    "an edit of t after a recorded pow_ fails backward (TG_ERR_INPLACE). An\n"
    "operand that is t itself (x.mul_(x), x.div_(x)) is read before the write;\n"
    "recorded, it is saved as it was, and the write then fails backward's\n"
    "version check, as in PyTorch. Errors also: TG_ERR_READONLY (t's memory is\n"
    "marked read-only, tg_mark_read_only: checked first), TG_ERR_SHAPE (other\n"
    "does not broadcast to t), TG_ERR_LAYOUT (t, or a view's base, has\n"
    "overlapping elements, e.g. an expand view), TG_ERR_NOMEM. Nothing is written and\n"
    "nothing changes on failure (but for a CUDA kernel failing while it writes:\n"
    "TG_ERR_CUDA)."},
    {"sum", (PyCFunction)(void (*)(void))M_sum, METH_FASTCALL | METH_KEYWORDS,
    "sum($self, )\n"
    "--\n"
    "\n"
    "sum(t): tg_sum (ops.h).\n"
    "\n"
    "Sum / mean of all elements: a 0-d tensor. Mean of 0 elements is NaN. The\n"
    "sums also take bool and i64 tensors, summed exactly into i64 (PyTorch's\n"
    "mask.sum()); the means refuse them (TG_ERR_DTYPE, as PyTorch)."},
    {"sum_dim", (PyCFunction)(void (*)(void))M_sum_dim, METH_FASTCALL | METH_KEYWORDS,
    "sum_dim($self, dim, keepdim)\n"
    "--\n"
    "\n"
    "sum_dim(t, dim, keepdim): tg_sum_dim (ops.h).\n"
    "\n"
    "Along dim (negative allowed); keepdim keeps it as size 1."},
    {"sum_dims", (PyCFunction)(void (*)(void))M_sum_dims, METH_FASTCALL | METH_KEYWORDS,
    "sum_dims($self, dims, keepdim)\n"
    "--\n"
    "\n"
    "sum_dims(t, dims, keepdim): tg_sum_dims (ops.h).\n"
    "\n"
    "Over several dims at once, PyTorch's sum(t, dim=(0, 2)): dims[0..ndims)\n"
    "(negative allowed, each at most once; ndims 0 reduces every dim, as\n"
    "PyTorch's dim=()); keepdim keeps them as size 1. The same dtypes as\n"
    "tg_sum / tg_mean. Errors: TG_ERR_NULL (t, or dims with ndims > 0),\n"
    "TG_ERR_VALUE (ndims outside 0..8), TG_ERR_DIM (a dim out of range or\n"
    "repeated), TG_ERR_DTYPE, TG_ERR_DEVICE, TG_ERR_NOMEM. The other multi-dim\n"
    "reductions below (tg_*_dims) take their dims the same way."},
    {"tanh", (PyCFunction)(void (*)(void))M_tanh, METH_FASTCALL | METH_KEYWORDS,
    "tanh($self, )\n"
    "--\n"
    "\n"
    "tanh(t): tg_tanh (ops.h).\n"
    "\n"
    "tanh(t). Gradient g (1 - y^2)."},
    {"to_device", (PyCFunction)(void (*)(void))M_to_device, METH_FASTCALL | METH_KEYWORDS,
    "to_device($self, dev)\n"
    "--\n"
    "\n"
    "to_device(t, dev): tg_to_device (tensor.h).\n"
    "\n"
    "A contiguous copy of t on device dev (any strides in t), differentiable:\n"
    "backward copies the gradient back to t's device. Returns a new reference\n"
    "to t if t is already on dev. Copies are synchronous. Errors: TG_ERR_NULL,\n"
    "TG_ERR_DEVICE (unknown device, no CUDA device or no CUDA backend: the\n"
    "message says which), TG_ERR_NOMEM, TG_ERR_CUDA (a CUDA call failed; the\n"
    "message names it)."},
    {"to_dtype", (PyCFunction)(void (*)(void))M_to_dtype, METH_FASTCALL | METH_KEYWORDS,
    "to_dtype($self, dt)\n"
    "--\n"
    "\n"
    "to_dtype(t, dt): tg_to_dtype (tensor.h).\n"
    "\n"
    "A copy converted to dtype dt (between f32, f64 and bf16 differentiable;\n"
    "i64 and bool <-> any dtype allowed, not differentiable; to bool: != 0, NaN\n"
    "is true; to bf16: through f32, to nearest even). Returns a new reference to\n"
    "t if t already has dtype dt."},
    {"topk", (PyCFunction)(void (*)(void))M_topk, METH_FASTCALL | METH_KEYWORDS,
    "topk($self, k, dim, largest)\n"
    "--\n"
    "\n"
    "topk(t, k, dim, largest) -> (result, indices): tg_topk (ops.h).\n"
    "\n"
    "The k largest (largest true) or smallest elements along dim, in sorted order\n"
    "(PyTorch's topk with sorted=True), the positions in *indices; dim's size\n"
    "becomes k. Equal elements come lowest index first (the stable order;\n"
    "PyTorch leaves it unspecified). TG_ERR_VALUE for k outside [0, size]."},
    {"transpose", (PyCFunction)(void (*)(void))M_transpose, METH_FASTCALL | METH_KEYWORDS,
    "transpose($self, d0, d1)\n"
    "--\n"
    "\n"
    "transpose(t, d0, d1): tg_transpose (tensor.h).\n"
    "\n"
    "Swaps two dimensions (negative indices allowed). Errors: TG_ERR_DIM."},
    {"tril", (PyCFunction)(void (*)(void))M_tril, METH_FASTCALL | METH_KEYWORDS,
    "tril($self, diagonal)\n"
    "--\n"
    "\n"
    "tril(t, diagonal): tg_tril (ops.h).\n"
    "\n"
    "The elements of the last two dims with j - i >= diagonal (triu) or\n"
    "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
    "triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n"
    "triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n"
    "than 2 dims), TG_ERR_NOMEM."},
    {"triu", (PyCFunction)(void (*)(void))M_triu, METH_FASTCALL | METH_KEYWORDS,
    "triu($self, diagonal)\n"
    "--\n"
    "\n"
    "triu(t, diagonal): tg_triu (ops.h).\n"
    "\n"
    "The elements of the last two dims with j - i >= diagonal (triu) or\n"
    "j - i <= diagonal (tril), the others 0 (NaN and inf too), as PyTorch's\n"
    "triu/tril: causal masks, discount matrices. A new tensor; gradient the same\n"
    "triangle of the upstream gradient. Errors: TG_ERR_NULL, TG_ERR_DIM (fewer\n"
    "than 2 dims), TG_ERR_NOMEM."},
    {"unsqueeze", (PyCFunction)(void (*)(void))M_unsqueeze, METH_FASTCALL | METH_KEYWORDS,
    "unsqueeze($self, dim)\n"
    "--\n"
    "\n"
    "unsqueeze(t, dim): tg_unsqueeze (tensor.h).\n"
    "\n"
    "With a new size-1 dim at position dim (-(ndim+1) .. ndim), a view. Errors:\n"
    "TG_ERR_DIM (bad dim, or t already has TG_MAX_DIMS dims)."},
    {"var_dim", (PyCFunction)(void (*)(void))M_var_dim, METH_FASTCALL | METH_KEYWORDS,
    "var_dim($self, dim, correction, keepdim)\n"
    "--\n"
    "\n"
    "var_dim(t, dim, correction, keepdim): tg_var_dim (ops.h).\n"
    "\n"
    "Variance and standard deviation: sum((t - mean)^2) / (n - correction)\n"
    "(PyTorch's default correction is 1; NaN or inf where n - correction <= 0,\n"
    "as PyTorch). std's gradient is 0 where std is 0 (a constant line), as\n"
    "PyTorch's. TG_ERR_VALUE for a negative or non-finite correction."},
    {"var_dims", (PyCFunction)(void (*)(void))M_var_dims, METH_FASTCALL | METH_KEYWORDS,
    "var_dims($self, dims, correction, keepdim)\n"
    "--\n"
    "\n"
    "var_dims(t, dims, correction, keepdim): tg_var_dims (ops.h).\n"
    "\n"
    "Over several dims (as tg_sum_dims): n is the number of elements reduced\n"
    "into each result."},
    {"view", (PyCFunction)(void (*)(void))M_view, METH_FASTCALL | METH_KEYWORDS,
    "view($self, shape)\n"
    "--\n"
    "\n"
    "view(t, shape): tg_view (tensor.h).\n"
    "\n"
    "Same data seen with a new shape (one size may be -1). Never copies.\n"
    "Errors: TG_ERR_SHAPE (element counts differ), TG_ERR_LAYOUT (the strides do\n"
    "not allow it without a copy: use tg_reshape)."},
    {"xlogy", (PyCFunction)(void (*)(void))M_xlogy, METH_FASTCALL | METH_KEYWORDS,
    "xlogy($self, y)\n"
    "--\n"
    "\n"
    "xlogy(x, y): tg_xlogy (ops.h).\n"
    "\n"
    "x * log(y) elementwise with broadcasting, 0 where x is 0 (even for y 0 or\n"
    "inf), NaN where y is NaN: PyTorch's xlogy, the term of entropies and KL\n"
    "divergences (p log p with p 0 gives 0). Integer operands compute in f32, as\n"
    "PyTorch. Gradients as PyTorch: d/dx = xlogy(g, y) (0 where x is 0 and y\n"
    "<= 0), d/dy = g x / y.\n"
    "Saves both operands. Errors as tg_add."},
    {NULL, NULL, 0, NULL}};

/* ops/promote.c - type promotion as PyTorch does it (c10's result_type) for
 * the ops that mix dtypes: the binary arithmetic of ops/elementwise.c and
 * where's two branches.
 *
 * Categories: bool < integer (i64) < floating (bf16, f32, f64). Within one
 * category the wider dtype wins (bf16 and f32 give f32). Operands are put in
 * two groups: tensors with at least one dim, and 0-d tensors. A 0-d operand
 * changes the result only when its category is higher than the dimensioned
 * operands' (f32 (3) + f64 0-d is f32; i64 (3) + f64 0-d is f64), so a
 * number written as a 0-d tensor behaves as PyTorch's 0-d tensors do.
 *
 * Operands are converted to the result dtype before the kernel runs, by a
 * recorded tg_to_dtype: a converted operand is a new tensor (counted as an
 * activation, and what backward saves in place of the original), and the
 * gradient of a float operand comes back in its own dtype through the
 * conversion's node. */
#include "ops_internal.h"

static int category(tg_dtype dt) {
    if (dt == TG_BOOL) return 0;
    if (dt == TG_I64) return 1;
    return 2;
}

/* PyTorch's promote_types for the dtypes tapegrad has. */
tg_dtype tg__promote_types(tg_dtype a, tg_dtype b) {
    if (a == b) return a;
    const int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    /* two floating dtypes that differ: bf16 with f32 is f32, anything with f64 f64 */
    if (a == TG_F64 || b == TG_F64) return TG_F64;
    return TG_F32;
}

/* c10's combine_categories(higher, lower) for one group over another; have_*
 * say whether the group has any operand. */
static tg_dtype combine(bool have_hi, tg_dtype hi, bool have_lo, tg_dtype lo) {
    if (!have_hi) return lo;
    if (!have_lo) return hi;
    if (category(hi) == 2) return hi;
    if (hi == TG_BOOL || category(lo) == 2) return tg__promote_types(hi, lo);
    return hi;
}

tg_dtype tg__result_type(int n, tg_tensor *const *ts) {
    bool have_dim = false, have_zero = false;
    tg_dtype dim_t = TG_BOOL, zero_t = TG_BOOL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (ts[i]->ndim > 0) {
            dim_t = have_dim ? tg__promote_types(dim_t, ts[i]->dtype) : ts[i]->dtype;
            have_dim = true;
        } else {
            zero_t = have_zero ? tg__promote_types(zero_t, ts[i]->dtype) : ts[i]->dtype;
            have_zero = true;
        }
    }
    return combine(have_dim, dim_t, have_zero, zero_t);
}

bool tg__convert_operands(tg_site s, tg_dtype dt, int n, tg_tensor **ts, tg_tensor **owned) {
    for (int i = 0; i < n; i++) owned[i] = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i] || ts[i]->dtype == dt) continue;
        if (!(owned[i] = tg__to_dtype(s, ts[i], dt))) {
            tg__release_promoted(i, owned);
            return false;
        }
        ts[i] = owned[i];
    }
    return true;
}

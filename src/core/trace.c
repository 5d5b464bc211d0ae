/* trace.c - what the generated op entries call: type promotion, node building, RNG state. */
#include <string.h>

#include <pthread.h>

#include "core.h"
#include "ltc_graph.h"

/* PyTorch's promoteTypes: bool < uint8, int8 < int16 < int32 < int64 < float16, bfloat16 <
 * float32 < float64, where the two pairs of equal rank meet one step up: uint8 with int8 is
 * int16, float16 with bfloat16 is float32 (torch.result_type). */
static ltc_dtype promote2(ltc_dtype a, ltc_dtype b) {
    static const int rank[LTC_DTYPE_COUNT] = {
        [LTC_BOOL] = 0, [LTC_U8] = 1,  [LTC_I8] = 1,  [LTC_I16] = 2, [LTC_I32] = 3,
        [LTC_I64] = 4,  [LTC_F16] = 5, [LTC_BF16] = 5, [LTC_F32] = 6, [LTC_F64] = 7};
    if (a == b) return a;
    if (rank[a] == rank[b]) return rank[a] == 1 ? LTC_I16 : LTC_F32;
    return rank[a] > rank[b] ? a : b;
}
static int category(ltc_dtype d) { return d == LTC_BOOL ? 0 : ltc_dtype_is_float(d) ? 2 : 1; }

/* PyTorch's combine_categories: a lower-priority group only raises the category. */
static ltc_dtype combine(ltc_dtype higher, ltc_dtype lower) {
    if ((int)higher < 0) return lower;
    if ((int)lower < 0) return higher;
    if (category(higher) == 2) return higher;
    if (higher == LTC_BOOL || category(lower) == 2) return promote2(higher, lower);
    return higher;
}

/* The result dtype of operands: tensors with dims, then 0-d tensors, then wrapped Lua
 * numbers (a float number counts as the default dtype, ltc_default_dtype). PyTorch's result_type. */
static ltc_dtype result_type(ltc_tensor *const *ts, int n) {
    ltc_dtype tier[3] = {LTC_DTYPE_NONE, LTC_DTYPE_NONE, LTC_DTYPE_NONE};
    for (int i = 0; i < n; i++) {
        ltc_dtype d = ts[i]->shape.dtype;
        int k = ts[i]->weak ? 2 : ts[i]->shape.ndim == 0 ? 1 : 0;
        if (k == 2 && d == LTC_F64) d = ltc_default_dtype();
        tier[k] = (int)tier[k] < 0 ? d : promote2(tier[k], d);
    }
    return combine(tier[0], combine(tier[1], tier[2]));
}

/* A weak scalar with data converts on the host: the graph gets a parameter of the right
 * dtype, not a cast node. */
static ltc_status convert_weak(ltc_tensor *t, ltc_dtype dt, ltc_tensor **out) {
    double f;
    int64_t i;
    uint64_t buf[1];
    /* read through the backend, not a value read that a graph capture refuses (the scalar
     * is a constant of the capture, see ltc_trace_promote) */
    ltc_status st = ltc_data_read(t->data, 0, ltc_dtype_size(t->shape.dtype), buf);
    if (st) return st;
    f = ltc_dtype_load_f64(buf, t->shape.dtype, 0);
    i = ltc_dtype_load_i64(buf, t->shape.dtype, 0);
    uint64_t v[1];
    if (ltc_dtype_is_float(t->shape.dtype)) ltc_dtype_store_f64(v, dt, 0, f);
    else ltc_dtype_store_i64(v, dt, 0, i); /* an integer wraps into a narrower dtype */
    return ltc_tensor_weak_scalar(dt, v, out);
}

/* LTC_SPECIAL_SCALARS: a weak scalar 0, 1 or -1 becomes a scalar_tensor constant of dtype
 * dt (new reference in *out); false when it does not apply. */
static bool special_scalar(ltc_tensor *t, ltc_dtype dt, ltc_tensor **out, ltc_status *st) {
    static int64_t *flag;
    if (!flag) flag = ltc_config_slot("LTC_SPECIAL_SCALARS");
    if (!flag || !*flag || !t->weak || !t->data || ltc_tensor_is_pending(t) ||
        ltc_capture_is_static(t))
        return false;
    double f;
    uint64_t buf[1];
    if ((*st = ltc_data_read(t->data, 0, ltc_dtype_size(t->shape.dtype), buf))) return true;
    f = ltc_dtype_load_f64(buf, t->shape.dtype, 0);
    if (f != 0 && f != 1 && f != -1) return false;
    *st = ltc_scalar_tensor(f, dt, out);
    if (!*st) (*out)->weak = true;
    return true;
}

ltc_dtype ltc_trace_result_type(ltc_tensor *const *ts, int n) { return result_type(ts, n); }

ltc_status ltc_trace_promote(ltc_tensor **io, int n, ltc_promote_rule rule) {
    ltc_dtype dt = result_type(io, n);
    if (rule == LTC_PROMOTE_FLOAT && !ltc_dtype_is_float(dt)) dt = ltc_default_dtype();
    int done = 0;
    ltc_status st = LTC_OK;
    for (; done < n; done++) {
        ltc_tensor *t = io[done];
        bool once = t->once; /* a number made for this call only (its first promotion) */
        t->once = false;
        if (special_scalar(t, dt, &io[done], &st)) {
            if (st) break;
            continue;
        }
        if (t->shape.dtype == dt) {
            ltc_tensor_retain(t);
            continue;
        }
        /* a scalar that is a static input of a graph capture may get a new value between
         * replays (ltc.jit's number arguments): its conversion is traced */
        if (t->weak && !ltc_tensor_is_pending(t) && t->data && !ltc_capture_is_static(t)) {
            /* held by the caller alone: float64 becomes float32 in place, no second tensor */
            if (once && t->refcount == 1 && t->shape.dtype == LTC_F64 && dt == LTC_F32 &&
                !t->ir.node) {
                if (!(st = ltc_tensor_weak_convert(t, dt))) ltc_tensor_retain(t);
            } else {
                st = convert_weak(t, dt, &io[done]);
            }
        } else {
            ltc_shape s = t->shape;
            s.dtype = dt;
            ltc_attr a = ltc_attr_int(dt);
            st = ltc_trace(LTC_OP_TO, &t, 1, &a, 1, &s, 1, &io[done]);
        }
        if (st) break;
    }
    if (st) ltc_trace_release(io, done);
    return st;
}

void ltc_trace_release(ltc_tensor **io, int n) {
    for (int i = 0; i < n; i++) ltc_tensor_release(io[i]);
}

/* ---- the narrow dtypes ------------------------------------------------------------------- */

/* Ops whose kernels take the narrow dtypes as they are: the cast, views (a view's value
 * must be the view node itself for writes through it to reach its base), and the fills
 * (full checks that its value fits the dtype made, as PyTorch does). Every backend's
 * kernels for these move elements by their size or convert them. */
static bool narrow_native(int op) {
    return op == LTC_OP_TO || op == LTC_OP_ZEROS || op == LTC_OP_ONES || op == LTC_OP_FULL ||
           ltc_op_is_view(op);
}

static bool any_narrow(ltc_tensor *const *ts, int n, const ltc_shape *shapes, int n_out) {
    for (int i = 0; i < n; i++)
        if (ltc_dtype_is_narrow(ts[i]->shape.dtype)) return true;
    for (int i = 0; i < n_out; i++)
        if (ltc_dtype_is_narrow(shapes[i].dtype)) return true;
    return false;
}

/* t converted to dtype dt (new reference): on the host for a Lua number, else traced. */
static ltc_status cast(ltc_tensor *t, ltc_dtype dt, ltc_tensor **out) {
    if (t->shape.dtype == dt) return ltc_tensor_retain(t), *out = t, LTC_OK;
    if (t->weak && !ltc_tensor_is_pending(t) && t->data && !ltc_capture_is_static(t))
        return convert_weak(t, dt, out);
    ltc_shape s = t->shape;
    s.dtype = dt;
    ltc_attr a = ltc_attr_int(dt);
    ltc_status st = ltc_trace(LTC_OP_TO, &t, 1, &a, 1, &s, 1, out);
    if (!st) (*out)->weak = t->weak, (*out)->any_device = t->any_device;
    return st;
}

/* The one place where ops meet the narrow dtypes: an op with a narrow operand or result
 * (other than the narrow_native ones) is traced as its narrow operands cast up to their
 * compute dtype (float32 for float16/bfloat16, int32 for the small integers), the op in
 * those dtypes, and its narrow results cast back down, which rounds a float16 result as
 * PyTorch's CPU kernels do (they compute in float32 too) and wraps an integer one. The CPU
 * backend fuses the casts into the op's loop. */
static ltc_status trace_widened(int op, ltc_tensor *const *operands, int n_operands,
                                const ltc_attr *attrs, int n_attrs, const ltc_shape *shapes,
                                int n_outputs, ltc_tensor **outs) {
    ltc_tensor *wide[64], *res[16];
    ltc_shape ws[16];
    ltc_attr wa[16];
    if (n_outputs > 16 || n_attrs > 16)
        return ltc_errorf(LTC_ERR_ARG, "%s: too many outputs or attributes for a narrow dtype",
                          ltc_op_name(op));
    int n_info = 0, made = 0;
    const ltc_attr_info *info = ltc_op_attrs(op, &n_info);
    for (int i = 0; i < n_attrs; i++) { /* a ScalarType attribute: the dtype made */
        wa[i] = attrs[i];
        if (i < n_info && info[i].type == LTC_ATTR_T_DTYPE && wa[i].kind == LTC_ATTR_INT &&
            wa[i].i >= 0 && wa[i].i < LTC_DTYPE_COUNT)
            wa[i].i = ltc_dtype_compute((ltc_dtype)wa[i].i);
    }
    for (int i = 0; i < n_outputs; i++) ws[i] = shapes[i], ws[i].dtype = ltc_dtype_compute(ws[i].dtype);
    ltc_status st = LTC_OK;
    for (; made < n_operands; made++)
        if ((st = cast(operands[made], ltc_dtype_compute(operands[made]->shape.dtype), &wide[made])))
            break;
    if (!st) st = ltc_trace(op, wide, n_operands, wa, n_attrs, ws, n_outputs, res);
    ltc_trace_release(wide, made);
    if (st) return st;
    int done = 0;
    for (; done < n_outputs; done++)
        if ((st = cast(res[done], shapes[done].dtype, &outs[done]))) break;
    ltc_trace_release(res, n_outputs);
    if (st) ltc_trace_release(outs, done);
    return st;
}

ltc_status ltc_trace(int op, ltc_tensor *const *operands, int n_operands, const ltc_attr *attrs,
                     int n_attrs, const ltc_shape *shapes, int n_outputs, ltc_tensor **outs) {
    ltc_value vals[64];
    if (n_operands <= 64 && !narrow_native(op) && any_narrow(operands, n_operands, shapes, n_outputs))
        return trace_widened(op, operands, n_operands, attrs, n_attrs, shapes, n_outputs, outs);
    if (n_operands > 64) return ltc_errorf(LTC_ERR_ARG, "%s: too many operands (%d)",
                                           ltc_op_name(op), n_operands);
    /* the op runs on its operands' device (Lua numbers, weak scalars, go along) */
    const ltc_tensor *on = NULL;
    for (int i = 0; i < n_operands; i++) {
        const ltc_tensor *t = operands[i];
        if (t->weak || t->any_device) continue;
        if (!on) on = t;
        else if (t->backend != on->backend || t->ordinal != on->ordinal) {
            char a[48], b[48];
            ltc_device_format(ltc_tensor_device(on), a, sizeof a);
            ltc_device_format(ltc_tensor_device(t), b, sizeof b);
            return ltc_errorf(LTC_ERR_ARG, "%s: expected all tensors on one device, found %s "
                              "and %s (move one with t:to(device))", ltc_op_name(op), a, b);
        }
    }
    for (int i = 0; i < n_operands; i++) {
        ltc_status st = ltc_tensor_value(operands[i], &vals[i]);
        if (st) return st;
    }
    for (int i = 0; i < n_outputs; i++) /* here for the status (the node skips its check) */
        if (ltc_shape_check(&shapes[i]) != LTC_OK) return LTC_ERR_ARG;
    ltc_node *n = ltc_node_new_checked(op, vals, n_operands, attrs, n_attrs, shapes, n_outputs,
                                       true);
    if (!n) return LTC_ERR_NOMEM;
    int made = 0;
    ltc_status st = LTC_OK;
    for (; made < n_outputs; made++) {
        if ((st = ltc_tensor_from_value((ltc_value){n, made}, &outs[made]))) break;
        if (on) outs[made]->backend = on->backend, outs[made]->ordinal = on->ordinal;
    }
    if (!st && n_outputs == 1 && n_operands > 0 && ltc_op_is_view(op))
        st = ltc_view_record(outs[0], operands[0], op, attrs, n_attrs);
    if (st)
        for (int i = 0; i < made; i++) ltc_tensor_release(outs[i]);
    ltc_node_release(n); /* the outputs hold it */
    ltc_trace_tick();
    return st;
}

/* ---- the default generator ------------------------------------------------------------ */

/* One generator for the process, as PyTorch's default CPU generator; a mutex guards it. */
static uint64_t rng_seed = 0x853c49e6748fea9bull, rng_offset;
static pthread_mutex_t rng_mu = PTHREAD_MUTEX_INITIALIZER;

void ltc_rng_state_get(uint64_t *seed, uint64_t *offset) {
    pthread_mutex_lock(&rng_mu);
    *seed = rng_seed;
    *offset = rng_offset;
    pthread_mutex_unlock(&rng_mu);
}

uint64_t ltc_rng_advance(uint64_t delta) {
    pthread_mutex_lock(&rng_mu);
    uint64_t before = rng_offset;
    rng_offset += delta;
    pthread_mutex_unlock(&rng_mu);
    return before;
}

void ltc_manual_seed(uint64_t seed) {
    pthread_mutex_lock(&rng_mu);
    rng_seed = seed;
    rng_offset = 0;
    pthread_mutex_unlock(&rng_mu);
    for (int i = 0;; i++) {
        ltc_backend *b = ltc_backend_get_index(i);
        if (!b) break;
        if (b->iface->set_rng_seed) b->iface->set_rng_seed(b, seed);
    }
}

ltc_status ltc_rng_state_tensor(int64_t numel, ltc_tensor **out) {
    pthread_mutex_lock(&rng_mu);
    int64_t state[2] = {(int64_t)rng_seed, (int64_t)rng_offset};
    rng_offset += (uint64_t)numel;
    pthread_mutex_unlock(&rng_mu);
    int64_t two = 2;
    ltc_shape s;
    ltc_shape_make(&s, LTC_I64, 1, &two);
    ltc_status st = ltc_tensor_from_host(&s, state, out);
    if (!st) (*out)->any_device = true; /* made on the default device, used on any */
    if (st) ltc_rng_advance((uint64_t)-numel); /* nothing drew from it */
    else ltc_capture_note_rng(*out, (uint64_t)state[1]); /* a capture makes it afresh */
    return st;
}

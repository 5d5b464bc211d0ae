/* trace.c - what the generated op entries call: type promotion, node building, RNG state. */
#include <string.h>

#include <pthread.h>

#include "core.h"
#include "ltc_graph.h"

/* bool < int32 < int64 < float32 < float64: promoting two dtypes takes the higher rank
 * (PyTorch's promoteTypes for these five). */
static ltc_dtype promote2(ltc_dtype a, ltc_dtype b) {
    static const int rank[LTC_DTYPE_COUNT] = {[LTC_BOOL] = 0, [LTC_I32] = 1, [LTC_I64] = 2,
                                              [LTC_F32] = 3, [LTC_F64] = 4};
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
 * numbers (a float number counts as the default dtype float32). PyTorch's result_type. */
static ltc_dtype result_type(ltc_tensor *const *ts, int n) {
    ltc_dtype tier[3] = {LTC_DTYPE_NONE, LTC_DTYPE_NONE, LTC_DTYPE_NONE};
    for (int i = 0; i < n; i++) {
        ltc_dtype d = ts[i]->shape.dtype;
        int k = ts[i]->weak ? 2 : ts[i]->shape.ndim == 0 ? 1 : 0;
        if (k == 2 && d == LTC_F64) d = LTC_F32;
        tier[k] = (int)tier[k] < 0 ? d : promote2(tier[k], d);
    }
    return combine(tier[0], combine(tier[1], tier[2]));
}

/* The bytes of a 0-d value: d->ptr for host-memory backends, else a copy read through the
 * backend's data_to_host into buf (a device backend's data has no host address). */
static const void *scalar_bytes(const ltc_data *d, uint64_t *buf) {
    *buf = 0;
    if (d->ptr) return d->ptr;
    if (d->nbytes <= sizeof *buf && d->backend->iface->data_to_host)
        (void)d->backend->iface->data_to_host(d->backend, d, buf);
    return buf;
}

/* A weak scalar with data converts on the host: the graph gets a parameter of the right
 * dtype, not a cast node. */
static ltc_status convert_weak(ltc_tensor *t, ltc_dtype dt, ltc_tensor **out) {
    double f;
    int64_t i;
    /* read from the data directly: not a value read that a graph capture refuses (the
     * scalar is a constant of the capture, see ltc_trace_promote) */
    uint64_t sbuf;
    const void *p = scalar_bytes(t->data, &sbuf);
    switch (t->shape.dtype) {
    case LTC_F32: f = *(const float *)p; i = (int64_t)f; break;
    case LTC_F64: f = *(const double *)p; i = (int64_t)f; break;
    case LTC_I32: i = *(const int32_t *)p; f = (double)i; break;
    case LTC_I64: i = *(const int64_t *)p; f = (double)i; break;
    default: i = *(const uint8_t *)p != 0; f = (double)i; break;
    }
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t b; } v;
    switch (dt) {
    case LTC_F32: v.f32 = (float)f; break;
    case LTC_F64: v.f64 = f; break;
    case LTC_I32: v.i32 = (int32_t)i; break;
    case LTC_I64: v.i64 = i; break;
    default: v.b = f != 0; break;
    }
    return ltc_tensor_weak_scalar(dt, &v, out);
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
    uint64_t sbuf;
    const void *p = scalar_bytes(t->data, &sbuf);
    switch (t->shape.dtype) {
    case LTC_F32: f = *(const float *)p; break;
    case LTC_F64: f = *(const double *)p; break;
    case LTC_I32: f = *(const int32_t *)p; break;
    case LTC_I64: f = (double)*(const int64_t *)p; break;
    default: f = *(const uint8_t *)p; break;
    }
    if (f != 0 && f != 1 && f != -1) return false;
    *st = ltc_scalar_tensor(f, dt, out);
    if (!*st) (*out)->weak = true;
    return true;
}

ltc_status ltc_trace_promote(ltc_tensor **io, int n, ltc_promote_rule rule) {
    ltc_dtype dt = result_type(io, n);
    if (rule == LTC_PROMOTE_FLOAT && !ltc_dtype_is_float(dt)) dt = LTC_F32;
    int done = 0;
    ltc_status st = LTC_OK;
    for (; done < n; done++) {
        ltc_tensor *t = io[done];
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
            st = convert_weak(t, dt, &io[done]);
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

ltc_status ltc_trace(int op, ltc_tensor *const *operands, int n_operands, const ltc_attr *attrs,
                     int n_attrs, const ltc_shape *shapes, int n_outputs, ltc_tensor **outs) {
    ltc_value vals[64];
    if (n_operands > 64) return ltc_errorf(LTC_ERR_ARG, "%s: too many operands (%d)",
                                           ltc_op_name(op), n_operands);
    for (int i = 0; i < n_operands; i++) {
        ltc_status st = ltc_tensor_value(operands[i], &vals[i]);
        if (st) return st;
    }
    for (int i = 0; i < n_outputs; i++) /* ltc_node_new checks too; here for the status */
        if (ltc_shape_check(&shapes[i]) != LTC_OK) return LTC_ERR_ARG;
    ltc_node *n = ltc_node_new(op, vals, n_operands, attrs, n_attrs, shapes, n_outputs);
    if (!n) return LTC_ERR_NOMEM;
    int made = 0;
    ltc_status st = LTC_OK;
    for (; made < n_outputs; made++)
        if ((st = ltc_tensor_from_value((ltc_value){n, made}, &outs[made]))) break;
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
    if (st) ltc_rng_advance((uint64_t)-numel); /* nothing drew from it */
    else ltc_capture_note_rng(*out, (uint64_t)state[1]); /* a capture makes it afresh */
    return st;
}

/* shape_collective.c - shape and dtype rules of the collectives (all_reduce, broadcast, reduce,
 * all_gather, reduce_scatter); declared in shape_inference.h. The core knows no
 * communicator: ranks, roots and world sizes are checked against it when the graph runs
 * (src/backend/comm_registry.c). */
#include "shape_inference.h"

#define SHAPE_STR(s, buf) ltc_shape_str((s), (buf), sizeof(buf))

static ltc_status check_op(const ltc_shape *self, int64_t op) {
    if (op < 0 || op > 4)
        return ltc_errorf(LTC_ERR_ARG, "op must be 0 (sum), 1 (avg), 2 (max), 3 (min) or 4 (prod), "
                          "got %lld", (long long)op);
    if (op == 1 && !ltc_dtype_is_float(self->dtype))
        return ltc_errorf(LTC_ERR_ARG, "op avg needs a floating-point tensor, got %s",
                          ltc_dtype_name(self->dtype));
    return LTC_OK;
}

static ltc_status check_root(int64_t root) {
    if (root < 0)
        return ltc_errorf(LTC_ERR_ARG, "root must be a rank (0-based, as MPI numbers ranks), got %lld",
                          (long long)root);
    return LTC_OK;
}

static ltc_status check_split(const ltc_shape *self, int64_t world_size) {
    char a[128];
    if (world_size < 1)
        return ltc_errorf(LTC_ERR_ARG, "world_size must be at least 1, got %lld", (long long)world_size);
    if (self->ndim < 1)
        return ltc_errorf(LTC_ERR_ARG, "self must have at least one dim, got %s", SHAPE_STR(self, a));
    return LTC_OK;
}

ltc_status ltc_shape_all_reduce(const ltc_shape *self, int64_t op, ltc_shape *out) {
    ltc_status st = check_op(self, op);
    if (st) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_broadcast(const ltc_shape *self, int64_t root, ltc_shape *out) {
    ltc_status st = check_root(root);
    if (st) return st;
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_reduce(const ltc_shape *self, int64_t root, ltc_shape *out) {
    ltc_status st = check_root(root);
    if (st) return st;
    if (self->dtype == LTC_BOOL)
        return ltc_errorf(LTC_ERR_ARG, "reduce sums: self must not be bool");
    *out = *self;
    return LTC_OK;
}

ltc_status ltc_shape_all_gather(const ltc_shape *self, int64_t world_size, ltc_shape *out) {
    ltc_status st = check_split(self, world_size);
    if (st) return st;
    if (self->dims[0] > INT64_MAX / world_size)
        return ltc_errorf(LTC_ERR_ARG, "%lld x %lld rows is too large",
                          (long long)self->dims[0], (long long)world_size);
    *out = *self;
    out->dims[0] *= world_size;
    return LTC_OK;
}

ltc_status ltc_shape_reduce_scatter(const ltc_shape *self, int64_t op, int64_t world_size,
                                    ltc_shape *out) {
    ltc_status st = check_op(self, op);
    if (st || (st = check_split(self, world_size))) return st;
    if (self->dims[0] % world_size) {
        char a[128];
        return ltc_errorf(LTC_ERR_ARG, "dim 1 of self %s must be divisible by world_size %lld",
                          SHAPE_STR(self, a), (long long)world_size);
    }
    *out = *self;
    out->dims[0] /= world_size;
    return LTC_OK;
}

/*
 * strides.c - the strides PyTorch would give a view: ltc's views have no storage layout of
 * their own (views.c recomputes a view from its base), but Torch7 and PyTorch code asks for
 * stride() and isContiguous(), and reshape must copy, as PyTorch's does, where a view
 * cannot express the result. The strides are those of the view ops applied to a contiguous
 * base: transpose, t and permute reorder them, narrow and select move the offset, expand
 * gives stride 0, and view, reshape, flatten, squeeze and unsqueeze follow PyTorch's
 * computeStride (aten/src/ATen/TensorUtils.cpp), which fails where no strides exist.
 */
#include "core.h"
#include "shape_inference.h"

static void contiguous(const ltc_shape *s, int64_t *st) {
    int64_t acc = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        st[d] = acc;
        acc *= s->dims[d] > 1 ? s->dims[d] : 1;
    }
}

bool ltc_strides_reshape(const ltc_shape *old, const int64_t *ost, const int64_t *ndims, int nnd,
                         int64_t *nst) {
    int64_t numel = ltc_shape_numel(old);
    if (old->ndim == 0 || numel == 0) { /* any strides do: the contiguous ones */
        ltc_shape s = {.ndim = nnd};
        for (int d = 0; d < nnd; d++) s.dims[d] = ndims[d];
        contiguous(&s, nst);
        return true;
    }
    int view_d = nnd - 1;
    int64_t chunk = ost[old->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int td = old->ndim - 1; td >= 0; td--) {
        tensor_numel *= old->dims[td];
        if (td == 0 || (old->dims[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk)) {
            while (view_d >= 0 && (view_numel < tensor_numel || ndims[view_d] == 1)) {
                nst[view_d] = view_numel * chunk;
                view_numel *= ndims[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) {
                chunk = ost[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

bool ltc_tensor_strides(const ltc_tensor *t, int64_t *strides, int64_t *offset) {
    *offset = 0;
    if (!t->base) {
        contiguous(&t->shape, strides);
        return true;
    }
    int64_t st[LTC_MAX_DIMS], ns[LTC_MAX_DIMS];
    contiguous(&t->base->shape, st);
    for (int i = 0; i < t->n_steps; i++) {
        const ltc_view_step *s = &t->steps[i];
        const ltc_shape *in = &s->in_shape, *out = &s->out_shape;
        switch (s->op) {
        case LTC_OP_TRANSPOSE:
        case LTC_OP_T:
            if (in->ndim >= 2) {
                int a = s->op == LTC_OP_T ? 0 : (int)s->attrs[0].i;
                int b = s->op == LTC_OP_T ? 1 : (int)s->attrs[1].i;
                int64_t x = st[a];
                st[a] = st[b];
                st[b] = x;
            }
            break;
        case LTC_OP_PERMUTE:
            for (int k = 0; k < out->ndim; k++)
                ns[k] = st[ltc_index_wrap(s->attrs[0].ints[k], in->ndim)];
            for (int k = 0; k < out->ndim; k++) st[k] = ns[k];
            break;
        case LTC_OP_NARROW: {
            int d = (int)s->attrs[0].i;
            *offset += ltc_index_wrap(s->attrs[1].i, in->dims[d]) * st[d];
            break;
        }
        case LTC_OP_SELECT: {
            int d = (int)s->attrs[0].i;
            *offset += ltc_index_wrap(s->attrs[1].i, in->dims[d]) * st[d];
            for (int k = d; k + 1 < in->ndim; k++) st[k] = st[k + 1];
            break;
        }
        case LTC_OP_EXPAND: {
            int lead = out->ndim - in->ndim;
            for (int k = out->ndim - 1; k >= 0; k--) {
                int j = k - lead;
                ns[k] = j < 0 ? 0 : (in->dims[j] == 1 && out->dims[k] != 1) ? 0 : st[j];
            }
            for (int k = 0; k < out->ndim; k++) st[k] = ns[k];
            break;
        }
        default: /* view, reshape, flatten, squeeze, unsqueeze: the same elements, new sizes */
            if (!ltc_strides_reshape(in, st, out->dims, out->ndim, ns)) return false;
            for (int k = 0; k < out->ndim; k++) st[k] = ns[k];
            break;
        }
    }
    for (int k = 0; k < t->shape.ndim; k++) strides[k] = st[k];
    return true;
}

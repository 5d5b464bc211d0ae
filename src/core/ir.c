/* ir.c - IR nodes: construction, local hashing, reference counting. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core.h"

ltc_hash ltc_hash_bytes(const void *p, size_t n, ltc_hash seed) {
    XXH128_hash_t h = XXH3_128bits_withSeed(p, n, seed.lo ^ (seed.hi * 0x9E3779B97F4A7C15ull));
    return (ltc_hash){h.low64, h.high64};
}

ltc_attr ltc_attr_ints(const int64_t *v, int n) {
    ltc_attr a = {.kind = LTC_ATTR_INTS, .n = n};
    if (n < 0 || n > LTC_MAX_DIMS) {
        a.n = -1;
        return a;
    }
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
    return a;
}

/* The node's own hash: op, attributes and output shapes (operands are hashed by the
 * executor through their positions in the post order). Only meaningful bytes go in. */
static ltc_hash node_local_hash(const ltc_node *n) {
    int64_t buf[4 + 3 * (LTC_MAX_DIMS + 2)];
    ltc_hash h = {(uint64_t)n->op, (uint64_t)n->n_operands << 16 | n->n_outputs};
    for (int i = 0; i < n->n_attrs; i++) {
        const ltc_attr *a = &n->attrs[i];
        int k = 0;
        buf[k++] = a->kind;
        if (a->kind == LTC_ATTR_INTS) {
            buf[k++] = a->n;
            for (int j = 0; j < a->n; j++) buf[k++] = a->ints[j];
        } else {
            buf[k++] = a->i; /* a float's bits */
        }
        h = ltc_hash_bytes(buf, sizeof(int64_t) * (size_t)k, h);
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const ltc_shape *s = &n->shapes[i];
        int k = 0;
        buf[k++] = s->dtype;
        buf[k++] = s->ndim;
        for (int j = 0; j < s->ndim; j++) buf[k++] = s->dims[j];
        h = ltc_hash_bytes(buf, sizeof(int64_t) * (size_t)k, h);
    }
    return h;
}

/* A node's bytes: the struct, then its shapes, attributes and operands. */
static size_t node_size(int n_operands, int n_attrs, int n_outputs) {
    return sizeof(ltc_node) + sizeof(ltc_value) * (size_t)n_operands +
           sizeof(ltc_shape) * (size_t)n_outputs + sizeof(ltc_attr) * (size_t)n_attrs;
}

ltc_node *ltc_node_new(int op, const ltc_value *operands, int n_operands, const ltc_attr *attrs,
                       int n_attrs, const ltc_shape *shapes, int n_outputs) {
    if (n_operands < 0 || n_operands > UINT16_MAX || n_attrs < 0 || n_attrs > UINT8_MAX ||
        n_outputs < 1 || n_outputs > UINT8_MAX) {
        ltc_errorf(LTC_ERR_ARG, "%s: bad node arity", ltc_op_name(op));
        return NULL;
    }
    for (int i = 0; i < n_attrs; i++)
        if (attrs[i].kind == LTC_ATTR_INTS && attrs[i].n < 0) {
            ltc_errorf(LTC_ERR_ARG, "%s: a list argument has more than %d entries", ltc_op_name(op),
                       LTC_MAX_DIMS);
            return NULL;
        }
    /* the one check every shape a rule produces goes through (sizes, element and byte
     * counts, overflow-safe) before a kernel can see it */
    for (int i = 0; i < n_outputs; i++)
        if (ltc_shape_check(&shapes[i]) != LTC_OK) return NULL;
    size_t sz = node_size(n_operands, n_attrs, n_outputs);
    ltc_node *n = ltc_slab_alloc(sz);
    if (!n) {
        ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory for an IR node", ltc_op_name(op));
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->refcount = 1;
    n->op = (uint16_t)op;
    n->n_operands = (uint16_t)n_operands;
    n->n_outputs = (uint8_t)n_outputs;
    n->n_attrs = (uint8_t)n_attrs;
    n->shapes = (ltc_shape *)(n + 1);
    n->attrs = (ltc_attr *)(n->shapes + n_outputs);
    n->operands = (ltc_value *)(n->attrs + n_attrs);
    memcpy(n->shapes, shapes, sizeof(ltc_shape) * (size_t)n_outputs);
    if (n_attrs) memcpy(n->attrs, attrs, sizeof(ltc_attr) * (size_t)n_attrs);
    for (int i = 0; i < n_operands; i++) {
        n->operands[i] = operands[i];
        ltc_node_retain(operands[i].node);
    }
    n->hash = node_local_hash(n);
    n->source = ltc_debug_source(op); /* LTC_IR_DEBUG: where Lua traced it */
    return n;
}

ltc_node *ltc_node_retain(ltc_node *n) {
    if (n) n->refcount++;
    return n;
}

/* Frees iteratively: a long chain of nodes must not overflow the C stack. */
void ltc_node_release(ltc_node *n) {
    if (!n || --n->refcount > 0) return;
    ltc_node **stack = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        for (int i = 0; i < n->n_operands; i++) {
            ltc_node *o = n->operands[i].node;
            if (--o->refcount > 0) continue;
            if (len == cap) {
                size_t nc = cap ? cap * 2 : 16;
                ltc_node **ns = realloc(stack, nc * sizeof *ns);
                if (!ns) { /* fall back to recursion for this operand */
                    o->refcount++;
                    ltc_node_release(o);
                    continue;
                }
                stack = ns, cap = nc;
            }
            stack[len++] = o;
        }
        if (n->data) ltc_data_release(n->data);
        ltc_slab_free(n, node_size(n->n_operands, n->n_attrs, n->n_outputs));
        if (!len) break;
        n = stack[--len];
    }
    free(stack);
}

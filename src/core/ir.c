/* ir.c - IR nodes: construction, local hashing, reference counting. */
#include <stdio.h>
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
 * executor through their positions in the post order). Only meaningful bytes go in, all of
 * them as the data of one XXH3 call (chunks of a very long attribute list chain the previous
 * chunk's hash in as data). Chaining through the seed alone was not enough: XXH3 mixes a
 * short input with its seed almost linearly, so tril(diagonal=1) and triu(diagonal=0), ops
 * whose numbers differ in the last bit, hashed alike and shared a compiled computation. */
#define NODE_HASH_WORDS 128
typedef struct {
    int64_t buf[NODE_HASH_WORDS];
    int k;
    ltc_hash h;
} node_hasher;

static void hasher_flush(node_hasher *s) {
    XXH128_hash_t x = XXH3_128bits(s->buf, sizeof(int64_t) * (size_t)s->k);
    s->h = (ltc_hash){x.low64, x.high64};
    s->buf[0] = (int64_t)s->h.lo, s->buf[1] = (int64_t)s->h.hi;
    s->k = 2;
}

static void hasher_put(node_hasher *s, int64_t v) {
    if (s->k == NODE_HASH_WORDS) hasher_flush(s);
    s->buf[s->k++] = v;
}

static ltc_hash node_local_hash(const ltc_node *n) {
    node_hasher s; /* not zero-initialised: only buf[0, k) is read (1 KB per node otherwise) */
    s.k = 2;       /* words 0 and 1: the previous chunk's hash (none: 0) */
    s.buf[0] = s.buf[1] = 0;
    hasher_put(&s, n->op);
    hasher_put(&s, n->n_operands);
    hasher_put(&s, n->n_outputs);
    hasher_put(&s, n->n_attrs);
    for (int i = 0; i < n->n_attrs; i++) {
        const ltc_attr *a = &n->attrs[i];
        hasher_put(&s, a->kind);
        if (a->kind == LTC_ATTR_INTS) {
            hasher_put(&s, a->n);
            for (int j = 0; j < a->n; j++) hasher_put(&s, a->ints[j]);
        } else {
            hasher_put(&s, a->i); /* a float's bits */
        }
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const ltc_shape *sh = &n->shapes[i];
        hasher_put(&s, sh->dtype);
        hasher_put(&s, sh->ndim);
        for (int j = 0; j < sh->ndim; j++) hasher_put(&s, sh->dims[j]);
    }
    hasher_flush(&s);
    return s.h;
}

/* The local hash of a 0-d DEVICE_DATA node (a Lua number's parameter, one per use) depends
 * on its dtype alone: computed once per dtype. Filled by any thread: the same value each
 * time, published after it is written. */
static ltc_hash scalar_param_hash[LTC_DTYPE_COUNT];
static bool scalar_param_ready[LTC_DTYPE_COUNT];

static ltc_hash local_hash(const ltc_node *n) {
    const ltc_shape *s = &n->shapes[0];
    if (n->op != LTC_OP_DEVICE_DATA || s->ndim != 0 || (unsigned)s->dtype >= LTC_DTYPE_COUNT)
        return node_local_hash(n);
    if (__atomic_load_n(&scalar_param_ready[s->dtype], __ATOMIC_ACQUIRE))
        return scalar_param_hash[s->dtype];
    ltc_hash h = node_local_hash(n);
    scalar_param_hash[s->dtype] = h;
    __atomic_store_n(&scalar_param_ready[s->dtype], true, __ATOMIC_RELEASE);
    return h;
}

/* A node's bytes: the struct, then its shapes, attributes and operands. */
static size_t node_size(int n_operands, int n_attrs, int n_outputs) {
    return sizeof(ltc_node) + sizeof(ltc_value) * (size_t)n_operands +
           sizeof(ltc_shape) * (size_t)n_outputs + sizeof(ltc_attr) * (size_t)n_attrs;
}

ltc_node *ltc_node_new(int op, const ltc_value *operands, int n_operands, const ltc_attr *attrs,
                       int n_attrs, const ltc_shape *shapes, int n_outputs) {
    return ltc_node_new_checked(op, operands, n_operands, attrs, n_attrs, shapes, n_outputs,
                                false);
}

ltc_node *ltc_node_new_checked(int op, const ltc_value *operands, int n_operands,
                               const ltc_attr *attrs, int n_attrs, const ltc_shape *shapes,
                               int n_outputs, bool shapes_checked) {
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
    for (int i = 0; i < n_outputs && !shapes_checked; i++)
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
    n->hash = local_hash(n);
    n->source = ltc_debug_source(op); /* LTC_IR_DEBUG: where Lua traced it */
    if (op != LTC_OP_DEVICE_DATA) n->user_op = ltc_op_scope_label();
    return n;
}

/* ---- the user's op of composite ops (ltc_op_scope_enter) ---------------------------- */

static _Thread_local int scope_depth;
static _Thread_local const char *scope_label; /* the outermost scope's, interned */

static ltc_status label_of(const char *name, const char *hint, const char **out) {
    char buf[512];
    if (hint && *hint) snprintf(buf, sizeof buf, "%s: %s", name, hint);
    else snprintf(buf, sizeof buf, "%s", name);
    *out = ltc_debug_intern(buf);
    return *out ? LTC_OK : ltc_errorf(LTC_ERR_NOMEM, "%s: out of memory", name);
}

ltc_status ltc_op_label_make(const char *name, const char *hint, ltc_op_label *out) {
    ltc_status st = label_of(name, NULL, &out->name);
    if (!st) st = label_of(name, hint, &out->label);
    return st;
}

/* Labels are interned, so "the outermost is l's bare name" is a pointer comparison, and a
 * label with a hint differs from its name. */
void ltc_op_scope_enter_label(const ltc_op_label *l) {
    if (scope_depth++ > 0 && !(l->label != l->name && scope_label == l->name)) return;
    scope_label = l->label;
}

ltc_status ltc_op_scope_enter(const char *name, const char *hint) {
    ltc_op_label l;
    ltc_status st = ltc_op_label_make(name, hint, &l);
    if (st) scope_depth++; /* out of memory: no name, still paired with the exit */
    else ltc_op_scope_enter_label(&l);
    return st;
}

void ltc_op_scope_exit(void) {
    if (scope_depth > 0 && --scope_depth == 0) scope_label = NULL;
}

const char *ltc_op_scope_label(void) { return scope_label; }

ltc_node *ltc_node_retain(ltc_node *n) {
    if (n) n->refcount++;
    return n;
}

/* Frees iteratively: a long chain of nodes must not overflow the C stack. */
void ltc_node_release(ltc_node *n) {
    if (!n || --n->refcount > 0) return;
    ltc_node *local[32], **stack = local; /* a chain needs one entry: the heap only for trees */
    size_t len = 0, cap = sizeof local / sizeof *local;
    for (;;) {
        for (int i = 0; i < n->n_operands; i++) {
            ltc_node *o = n->operands[i].node;
            if (--o->refcount > 0) continue;
            if (len == cap) {
                size_t nc = cap * 2;
                ltc_node **ns = stack == local ? malloc(nc * sizeof *ns)
                                               : realloc(stack, nc * sizeof *ns);
                if (ns && stack == local) memcpy(ns, local, sizeof local);
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
    if (stack != local) free(stack);
}

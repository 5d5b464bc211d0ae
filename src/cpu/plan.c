/* plan.c - lowering a post order into a plan, memory planning, and running it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "fuse.h"
#include "plan.h"
#include "ltc_comm.h"

#define ALIGN 64
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t align_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

void ltc_cpu_plan_step_clear(plan_step *s) {
    free(s->in);
    free(s->out);
    free(s->in_shapes);
    free(s->out_shapes);
    free(s->attrs);
    ltc_cpu_fused_free(s->fused);
    ltc_cpu_batch_free(s->batch);
}

void ltc_cpu_plan_count_uses(cpu_plan *p) {
    for (int b = 0; b < p->n_bufs; b++) p->bufs[b].last_use = -1;
    for (int s = 0; s < p->n_steps; s++)
        for (int k = 0; k < p->steps[s].n_in; k++) p->bufs[p->steps[s].in[k]].last_use = s;
}

void ltc_cpu_plan_free(cpu_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_steps; i++) ltc_cpu_plan_step_clear(&p->steps[i]);
    free(p->steps);
    free(p->bufs);
    free(p->outputs);
    free(p->arena);
    free(p->ptrs);
    free(p);
}

/* ---- memory planning: first fit over free ranges of the arena ---------------------------- */

typedef struct {
    size_t off, size;
} range;

typedef struct {
    range *free;
    int n, cap;
    size_t top;
} arena_alloc;

static size_t arena_take(arena_alloc *a, size_t size) {
    for (int i = 0; i < a->n; i++)
        if (a->free[i].size >= size) {
            size_t off = a->free[i].off;
            a->free[i].off += size;
            a->free[i].size -= size;
            if (!a->free[i].size) memmove(&a->free[i], &a->free[i + 1], sizeof(range) * (size_t)(--a->n - i));
            return off;
        }
    size_t off = a->top;
    a->top += size;
    return off;
}

/* Returns a range, merging with its neighbours; false on allocation failure. */
static bool arena_give(arena_alloc *a, size_t off, size_t size) {
    int i = 0;
    while (i < a->n && a->free[i].off < off) i++;
    if (i > 0 && a->free[i - 1].off + a->free[i - 1].size == off) {
        a->free[i - 1].size += size;
        if (i < a->n && off + size == a->free[i].off) {
            a->free[i - 1].size += a->free[i].size;
            memmove(&a->free[i], &a->free[i + 1], sizeof(range) * (size_t)(--a->n - i));
        }
        return true;
    }
    if (i < a->n && off + size == a->free[i].off) {
        a->free[i].off = off;
        a->free[i].size += size;
        return true;
    }
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 16;
        range *nr = realloc(a->free, sizeof(range) * (size_t)nc);
        if (!nr) return false;
        a->free = nr, a->cap = nc;
    }
    memmove(&a->free[i + 1], &a->free[i], sizeof(range) * (size_t)(a->n - i));
    a->free[i] = (range){off, size};
    a->n++;
    return true;
}

/* Places temporaries by lifetime: a step's outputs are placed before its dead inputs
 * are returned, so a kernel never writes over what it reads. */
static bool plan_memory(cpu_plan *p) {
    arena_alloc a = {0};
#define IN_ARENA(b) ((b)->kind == BUF_TEMP && (b)->alias < 0)
    bool ok = true;
    for (int s = 0; s < p->n_steps && ok; s++) {
        plan_step *st = &p->steps[s];
        for (int k = 0; k < st->n_out; k++) {
            plan_buf *b = &p->bufs[st->out[k]];
            if (IN_ARENA(b) && b->inherit >= 0) b->offset = p->bufs[b->inherit].offset;
            else if (IN_ARENA(b)) b->offset = arena_take(&a, align_up(b->nbytes ? b->nbytes : 1));
        }
        for (int k = 0; k < st->n_out && ok; k++) { /* an output nobody reads dies at once */
            plan_buf *b = &p->bufs[st->out[k]];
            if (IN_ARENA(b) && b->last_use < 0)
                ok = arena_give(&a, b->offset, align_up(b->nbytes ? b->nbytes : 1));
        }
        for (int k = 0; k < st->n_in && ok; k++) {
            plan_buf *b = &p->bufs[st->in[k]];
            bool first = true; /* an input read twice by this step is returned once */
            for (int j = 0; j < k; j++) first &= st->in[j] != st->in[k];
            for (int j = 0; j < st->n_out; j++) /* nor one whose range an output took over */
                first &= p->bufs[st->out[j]].inherit != st->in[k];
            if (IN_ARENA(b) && b->last_use == s && first)
                ok = arena_give(&a, b->offset, align_up(b->nbytes ? b->nbytes : 1));
        }
    }
#undef IN_ARENA
    p->arena_size = a.top;
    free(a.free);
    return ok;
}

/* A collective that copies its input into its output and works there in place (all_reduce,
 * broadcast, reduce: ltc_comm_kernel) saves that copy when its input is a temporary that it
 * reads last (a DDP bucket: the concatenated gradients), and the kernel finds in == out:
 * for an output buffer, the temporary lives there (its producer writes it there; nothing else
 * writes the output before the collective); for a temporary output, that output takes over
 * the input's arena range (the input is read by nothing after the collective). */
static void plan_alias_collectives(cpu_plan *p) {
    for (int s = 0; s < p->n_steps; s++) {
        plan_step *st = &p->steps[s];
        if (st->fused || st->n_in != 1 || st->n_out != 1 ||
            (st->op != LTC_OP_ALL_REDUCE && st->op != LTC_OP_BROADCAST && st->op != LTC_OP_REDUCE))
            continue;
        plan_buf *in = &p->bufs[st->in[0]], *out = &p->bufs[st->out[0]];
        if (in->kind != BUF_TEMP || in->alias >= 0 || in->last_use != s ||
            in->nbytes != out->nbytes)
            continue;
        if (out->kind == BUF_OUTPUT) in->alias = st->out[0];
        else if (out->kind == BUF_TEMP) out->inherit = st->in[0];
    }
}

/* ---- lowering ----------------------------------------------------------------------------- */

static void *dup(const void *src, size_t n) {
    void *d = malloc(n ? n : 1);
    if (d && n) memcpy(d, src, n);
    return d;
}

/* ---- integer // and % by zero ------------------------------------------------------------------
 * They raise, as in PyTorch ("ZeroDivisionError"), where the generated loops (gen/cpu_ops.c,
 * gen/ref_ops.c) would give 0: a step of an integer division (ops.yaml's `int_div: true`:
 * floor_divide, remainder, div_trunc) with an integer result
 * scans its divisor for a zero before the loop runs. The divisor's values are known only
 * then (a tensor, or a Lua number, which is a graph parameter), so the error is raised by the
 * sync that computes the step. Such steps keep a kernel of their own, so they are not fused
 * (integer division does not vectorise anyway). */

static ltc_status k_cpu(const ltc_kernel_args *a) {
    ltc_status st = ltc_kernel_int_div_check(a);
    return st ? st : ltc_cpu_kernels[a->op](a);
}

static ltc_status k_ref(const ltc_kernel_args *a) {
    ltc_status st = ltc_kernel_int_div_check(a);
    return st ? st : ltc_ref_kernels[a->op](a);
}

ltc_kernel_fn ltc_cpu_int_checked(int op, const ltc_shape *out, ltc_kernel_fn fn) {
    if (!ltc_op_int_div(op) || (out->dtype != LTC_I32 && out->dtype != LTC_I64))
        return fn;
    if (fn == ltc_cpu_kernels[op]) return k_cpu;
    if (fn == ltc_ref_kernels[op]) return k_ref;
    return fn;
}

cpu_plan *ltc_cpu_plan_build(const ltc_lowering_ctx *ctx, const ltc_kernel_fn *kernels) {
    cpu_plan *p = calloc(1, sizeof *p);
    int *first_buf = malloc(sizeof(int) * (size_t)(ctx->n_nodes + 1));
    int n_bufs = 0, n_steps = 0;
    if (!p || !first_buf) goto nomem;
    for (int i = 0; i < ctx->n_nodes; i++) {
        first_buf[i] = n_bufs;
        n_bufs += ctx->post_order[i]->n_outputs;
        if (ctx->post_order[i]->op != LTC_OP_DEVICE_DATA) n_steps++;
    }
    p->bufs = calloc((size_t)n_bufs + 1, sizeof *p->bufs);
    p->steps = calloc((size_t)n_steps + 1, sizeof *p->steps);
    p->outputs = malloc(sizeof(int) * (size_t)(ctx->n_roots + 1));
    p->ptrs = malloc(sizeof(void *) * (size_t)(n_bufs + 1));
    if (!p->bufs || !p->steps || !p->outputs || !p->ptrs) goto nomem;
    p->n_bufs = n_bufs;
    p->n_outputs = ctx->n_roots;
    int param = 0;
    for (int i = 0; i < ctx->n_nodes; i++) {
        const ltc_node *n = ctx->post_order[i];
        for (int k = 0; k < n->n_outputs; k++) {
            plan_buf *b = &p->bufs[first_buf[i] + k];
            b->kind = BUF_TEMP;
            b->shape = n->shapes[k];
            b->nbytes = ltc_shape_nbytes(&n->shapes[k]);
            b->last_use = -1;
            b->alias = b->inherit = -1;
            if (n->op == LTC_OP_DEVICE_DATA) b->kind = BUF_PARAM, b->index = param++;
        }
        if (n->op == LTC_OP_DEVICE_DATA) {
            ctx->emitted[i] = 1;
            continue;
        }
        ltc_kernel_fn fn = kernels[n->op];
        if (!fn) {
            ltc_errorf(LTC_ERR_BACKEND, "%s: the backend has no kernel for this op", ltc_op_name(n->op));
            goto fail;
        }
        plan_step *s = &p->steps[p->n_steps++];
        s->op = n->op;
        s->node = i;
        s->fn = fn;
        s->source = n->source;
        s->n_in = n->n_operands;
        s->n_out = n->n_outputs;
        s->n_attrs = n->n_attrs;
        s->in = malloc(sizeof(int) * (size_t)(s->n_in + 1));
        s->out = malloc(sizeof(int) * (size_t)s->n_out);
        s->in_shapes = malloc(sizeof(ltc_shape) * (size_t)(s->n_in + 1));
        s->out_shapes = dup(n->shapes, sizeof(ltc_shape) * (size_t)s->n_out);
        if (s->out_shapes) s->fn = ltc_cpu_int_checked(s->op, &s->out_shapes[0], s->fn);
        s->attrs = dup(n->attrs, sizeof(ltc_attr) * (size_t)s->n_attrs);
        if (!s->in || !s->out || !s->in_shapes || !s->out_shapes || !s->attrs) goto nomem;
        for (int k = 0; k < s->n_in; k++) {
            ltc_value v = n->operands[k];
            s->in[k] = first_buf[v.node->index] + v.index;
            s->in_shapes[k] = v.node->shapes[v.index];
            p->bufs[s->in[k]].last_use = p->n_steps - 1;
        }
        for (int k = 0; k < s->n_out; k++) s->out[k] = first_buf[i] + k;
        ctx->emitted[i] = 1;
    }
    for (int r = 0; r < ctx->n_roots; r++) {
        int b = first_buf[ctx->roots[r].node->index] + ctx->roots[r].index;
        p->outputs[r] = b;
        p->bufs[b].kind = BUF_OUTPUT;
        p->bufs[b].index = r;
    }
    if ((kernels == ltc_cpu_kernels && !ltc_cpu_plan_fold(p)) ||
        (kernels == ltc_cpu_kernels && ltc_config_get_int("LTC_FUSION") && !ltc_cpu_plan_fuse(p)) ||
        (kernels == ltc_cpu_kernels && ltc_config_get_int("LTC_FUSION") &&
         ltc_config_get_int("LTC_GEMM_EPILOGUE") && !ltc_cpu_plan_epilogues(p)) ||
        (kernels == ltc_cpu_kernels && ltc_config_get_int("LTC_FUSION") &&
         ltc_config_get_int("LTC_BATCH_STEPS") && !ltc_cpu_plan_batch(p)) ||
        (plan_alias_collectives(p), !plan_memory(p)))
        goto nomem;
    free(first_buf);
    return p;
nomem:
    ltc_errorf(LTC_ERR_NOMEM, "CPU backend: out of memory building a plan");
fail:
    free(first_buf);
    ltc_cpu_plan_free(p);
    return NULL;
}

/* ---- running ---------------------------------------------------------------------------------- */

static ltc_data *plain_alloc(void *ud, const ltc_shape *shape) {
    ltc_data *d = ltc_cpu_data_new(ud, shape);
    if (!d) ltc_errorf(LTC_ERR_NOMEM, "CPU backend: out of memory for a %zu-byte output",
                       ltc_shape_nbytes(shape));
    return d;
}

ltc_status ltc_cpu_plan_run_with(cpu_plan *p, ltc_data *const *args, ltc_data **outs, void **ptrs,
                                 void *arena, cpu_alloc_fn alloc, void *ud) {
    static char empty[ALIGN];
    ltc_status st = LTC_OK;
    for (int r = 0; r < p->n_outputs; r++) outs[r] = NULL;
    for (int i = 0; i < p->n_bufs; i++) {
        plan_buf *bf = &p->bufs[i];
        switch (bf->kind) {
        case BUF_PARAM: ptrs[i] = args[bf->index]->ptr; break;
        case BUF_TEMP:
            if (bf->alias < 0) ptrs[i] = arena ? (char *)arena + bf->offset : empty;
            break; /* aliases: below, once the outputs are made */
        case BUF_OUTPUT:
            if (!(outs[bf->index] = alloc(ud, &bf->shape))) {
                st = LTC_ERR_NOMEM;
                goto fail;
            }
            ptrs[i] = outs[bf->index]->ptr;
            break;
        case BUF_UNREAD: ptrs[i] = NULL; break;
        }
    }
    for (int i = 0; i < p->n_bufs; i++)
        if (p->bufs[i].kind == BUF_TEMP && p->bufs[i].alias >= 0) ptrs[i] = ptrs[p->bufs[i].alias];
    static int64_t *profile;
    if (!profile) profile = ltc_config_slot("LTC_PROFILE");
    bool prof = *profile != 0;
    /* collectives learn their place in this computation, and the first one the hash of all
     * (the ranks' descriptors compare them: one exchange can check the whole step) */
    int n_coll = 0;
    uint64_t coll_hash = 0;
    for (int s = 0; s < p->n_steps; s++) {
        const plan_step *sp = &p->steps[s];
        if (!ltc_op_is_collective(sp->op)) continue;
        ltc_kernel_args a = {.op = sp->op, .attrs = sp->attrs, .n_attrs = sp->n_attrs,
                             .n_in = sp->n_in, .in_shapes = sp->in_shapes,
                             .n_out = sp->n_out, .out_shapes = sp->out_shapes};
        ltc_comm_step_hash(&a, ++n_coll, &coll_hash);
    }
    ltc_comm_plan_begin(n_coll, coll_hash);
    ltc_cpu_split_run split;
    ltc_cpu_split_plan_begin(&p->split, &split);
    for (int s = 0; s < p->n_steps; s++) {
        plan_step *sp = &p->steps[s];
        const void *in_local[64], **in = in_local;
        void *out_local[8], **out = out_local;
        if (sp->n_in > 64 || sp->n_out > 8) { /* a batch step (batch.c) */
            in = malloc(sizeof *in * (size_t)sp->n_in);
            out = malloc(sizeof *out * (size_t)sp->n_out);
            if (!in || !out) {
                free(in), free(out);
                st = ltc_errorf(LTC_ERR_NOMEM, "CPU backend: out of memory running a plan");
                ltc_cpu_split_plan_end(&p->split, &split, false);
                goto fail;
            }
        }
        for (int k = 0; k < sp->n_in; k++) in[k] = ptrs[sp->in[k]];
        for (int k = 0; k < sp->n_out; k++) out[k] = ptrs[sp->out[k]];
        ltc_kernel_args a = {
            .op = sp->op, .attrs = sp->attrs, .n_attrs = sp->n_attrs,
            .n_in = sp->n_in, .in_shapes = sp->in_shapes, .in = in,
            .n_out = sp->n_out, .out_shapes = sp->out_shapes, .out = out,
            .ctx = sp->fused ? (const void *)sp->fused : (const void *)sp->batch,
        };
        uint64_t t0 = prof ? now_ns() : 0;
        st = sp->fn(&a);
        if (in != in_local) free(in), free(out);
        if (st) {
            ltc_error_prefix(st, ltc_op_name(sp->op));
            if (sp->source) { /* LTC_IR_DEBUG: a lazy error names the line that traced the op */
                char msg[512];
                snprintf(msg, sizeof msg, "%s", ltc_last_error());
                ltc_errorf(st, "%s (the op was traced at %s)", msg, sp->source);
            }
            ltc_error_set_node(sp->node);
            ltc_cpu_split_plan_end(&p->split, &split, false);
            goto fail;
        }
        if (prof) {
            uint64_t dt = now_ns() - t0;
            uint64_t mn = __atomic_load_n(&sp->prof_min_ns, __ATOMIC_RELAXED);
            if (!mn || dt < mn) __atomic_store_n(&sp->prof_min_ns, dt, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sp->prof_ns, dt, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sp->prof_runs, 1, __ATOMIC_RELAXED);
        }
    }
    ltc_cpu_split_plan_end(&p->split, &split, true);
    return LTC_OK;
fail:
    for (int r = 0; r < p->n_outputs; r++) {
        ltc_data_release(outs[r]);
        outs[r] = NULL;
    }
    return st;
}

ltc_status ltc_cpu_plan_run(ltc_backend *b, cpu_plan *p, ltc_data *const *args, ltc_data **outs) {
    void **ptrs = p->ptrs, *arena = NULL;
    bool own = !__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE);
    size_t asz = align_up(p->arena_size);
    if (own) {
        if (p->arena_size && !p->arena && !(p->arena = aligned_alloc(ALIGN, asz))) {
            __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
            return ltc_errorf(LTC_ERR_NOMEM, "CPU backend: out of memory for a %zu-byte arena",
                              p->arena_size);
        }
        arena = p->arena;
    } else { /* another thread runs this plan: scratch of our own */
        ptrs = malloc(sizeof(void *) * (size_t)(p->n_bufs + 1));
        arena = p->arena_size ? aligned_alloc(ALIGN, asz) : NULL;
        if (!ptrs || (p->arena_size && !arena)) {
            free(ptrs);
            free(arena);
            return ltc_errorf(LTC_ERR_NOMEM, "CPU backend: out of memory for a %zu-byte arena",
                              p->arena_size);
        }
    }
    ltc_status st = ltc_cpu_plan_run_with(p, args, outs, ptrs, arena, plain_alloc, b);
    if (own) {
        __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
    } else {
        free(ptrs);
        free(arena);
    }
    return st;
}

char *ltc_cpu_plan_text(const cpu_plan *p, const char *backend) {
    /* an upper bound of what the lines below print, so no snprintf is ever cut short */
    size_t cap = 256, len = 0;
    for (int s = 0; s < p->n_steps; s++)
        cap += 144 + 16 * (size_t)p->steps[s].n_in + 200 * (size_t)p->steps[s].n_out;
    cap += strlen(backend);
    char *out = malloc(cap), sb[128];
    if (!out) return NULL;
    len += (size_t)snprintf(out + len, cap - len, "%s plan: %d steps, %d buffers, arena %zu bytes\n",
                            backend, p->n_steps, p->n_bufs, p->arena_size);
    for (int s = 0; s < p->n_steps; s++) {
        const plan_step *sp = &p->steps[s];
        char fname[96];
        len += (size_t)snprintf(out + len, cap - len, "  step %d: %s(", s,
                                sp->fused   ? ltc_cpu_fused_text(sp->fused, fname, sizeof fname)
                                : sp->batch ? ltc_cpu_batch_text(sp->batch, fname, sizeof fname)
                                            : ltc_op_name(sp->op));
        for (int k = 0; k < sp->n_in; k++)
            len += (size_t)snprintf(out + len, cap - len, k ? ", b%d" : "b%d", sp->in[k]);
        len += (size_t)snprintf(out + len, cap - len, ") ->");
        for (int k = 0; k < sp->n_out; k++) {
            const plan_buf *bf = &p->bufs[sp->out[k]];
            len += (size_t)snprintf(out + len, cap - len, " b%d %s%s %s", sp->out[k],
                                    ltc_dtype_short(bf->shape.dtype),
                                    ltc_shape_str(&bf->shape, sb, sizeof sb),
                                    bf->kind == BUF_OUTPUT   ? "output"
                                    : bf->kind == BUF_UNREAD ? "unread"
                                                             : "temp");
            if (bf->kind == BUF_TEMP && bf->alias >= 0)
                len += (size_t)snprintf(out + len, cap - len, " in b%d", bf->alias);
            else if (bf->kind == BUF_TEMP)
                len += (size_t)snprintf(out + len, cap - len, "@%zu", bf->offset);
        }
        if (sp->prof_runs)
            len += (size_t)snprintf(out + len, cap - len, "  (min %.1f us)  [%.1f us x %llu]",
                                    (double)sp->prof_min_ns * 1e-3,
                                    (double)sp->prof_ns / (double)sp->prof_runs * 1e-3,
                                    (unsigned long long)sp->prof_runs);
        len += (size_t)snprintf(out + len, cap - len, "\n");
    }
    return out;
}

ltc_status ltc_cpu_plan_compile_all(const ltc_lowering_ctx *const *ctxs, int n,
                                    ltc_computation **out, const ltc_kernel_fn *kernels) {
    for (int i = 0; i < n; i++) {
        cpu_plan *p = ltc_cpu_plan_build(ctxs[i], kernels);
        if (!p) {
            for (int k = 0; k < i; k++) {
                ltc_cpu_plan_free(out[k]->impl);
                out[k]->impl = NULL;
            }
            return LTC_ERR_BACKEND;
        }
        out[i]->impl = p;
    }
    return LTC_OK;
}

char *ltc_cpu_plan_computation_text(ltc_backend *b, const ltc_computation *c) {
    return ltc_cpu_plan_text(c->impl, b->name);
}

void ltc_cpu_plan_computation_free(ltc_backend *b, ltc_computation *c) {
    (void)b;
    ltc_cpu_plan_free(c->impl);
    c->impl = NULL;
}

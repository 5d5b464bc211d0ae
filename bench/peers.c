/*
 * peers.c - the C peers of `make bench`: the memory-bandwidth floor (a copy loop over
 * threads) and raw OpenBLAS sgemm. Prints "key value" lines that bench/lib.lua parses.
 *
 *   peers copy <n_floats> <threads>        copy_gbs: (read + write bytes) / best time
 *   peers gemm <n> <nn|nt> <threads>       gemm_gflops: 2 n^3 / best time of cblas_sgemm
 *   peers chain <n_floats> <threads>       chain_ms: relu(a*b + c)*0.5 + exp(-a), one pass
 *                                          of hand-written C (libm expf), per thread a slice
 *   peers mlpgemm <B> <D> <H> <K> <threads>
 *                                          mlp_gemm_us: the five sgemm calls of one training
 *                                          step of a D-H-K MLP at batch B (forward X.W1^T,
 *                                          H.W2^T; backward G.W2, dZ^T.X, G^T.H), best time of
 *                                          the five on 1 or on <threads> OpenBLAS threads
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    const float *a, *b, *c;
    float *out;
    long lo, hi;
    int mode; /* 0 copy, 1 chain */
} job;

static void *work(void *p) {
    job *j = p;
    if (j->mode == 0) {
        memcpy(j->out + j->lo, j->a + j->lo, (size_t)(j->hi - j->lo) * sizeof(float));
    } else {
        for (long i = j->lo; i < j->hi; i++) {
            float t = j->a[i] * j->b[i] + j->c[i];
            j->out[i] = (t > 0 ? t : 0) * 0.5f + expf(-j->a[i]);
        }
    }
    return NULL;
}

/* Runs `mode` over n elements split across `threads`; returns the wall time. */
static double run(int mode, long n, int threads, const float *a, const float *b, const float *c,
                  float *out) {
    pthread_t tid[64];
    job jobs[64];
    double t0 = now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){a, b, c, out, n * t / threads, n * (t + 1) / threads, mode};
        if (t) pthread_create(&tid[t], NULL, work, &jobs[t]);
    }
    work(&jobs[0]);
    for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    return now() - t0;
}

static float *fresh(long n) {
    float *p = aligned_alloc(64, (size_t)n * sizeof(float));
    if (!p) {
        fprintf(stderr, "peers: out of memory\n");
        exit(1);
    }
    for (long i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    return p;
}

/* Whether a timing loop that made r runs since t0 (now()) makes another: until reps runs and
 * BENCH_MIN_TIME seconds (default 0.5), at most 50 x reps runs (bench/lib.lua's lib.more). */
static bool more(int r, double t0, int reps) {
    static double min_time = -1;
    if (min_time < 0) min_time = getenv("BENCH_MIN_TIME") ? atof(getenv("BENCH_MIN_TIME")) : 0.5;
    if (r < reps) return true;
    return r < 50 * reps && now() - t0 < min_time;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: peers copy|chain <n_floats> <threads> | gemm <n> nn|nt <threads>\n");
        return 2;
    }
    int reps = getenv("BENCH_REPS") ? atoi(getenv("BENCH_REPS")) : 10;
    if (!strcmp(argv[1], "copy") || !strcmp(argv[1], "chain")) {
        long n = atol(argv[2]);
        int threads = atoi(argv[3]);
        if (threads < 1) threads = 1;
        if (threads > 64) threads = 64;
        int mode = !strcmp(argv[1], "chain");
        float *a = fresh(n), *b = fresh(n), *c = fresh(n), *out = fresh(n);
        double best = 1e30, start = now();
        for (int r = 0; more(r, start, reps); r++) {
            double t = run(mode, n, threads, a, b, c, out);
            if (t < best) best = t;
        }
        if (mode == 0) printf("copy_gbs %.3f\n", 2.0 * (double)n * sizeof(float) / best * 1e-9);
        else printf("chain_ms %.3f\n", best * 1e3);
        free(a), free(b), free(c), free(out);
        return 0;
    }
    if (!strcmp(argv[1], "gemm") && argc >= 5) {
        int n = atoi(argv[2]);
        int nt = !strcmp(argv[3], "nt");
        openblas_set_num_threads(atoi(argv[4]));
        float *A = fresh((long)n * n), *B = fresh((long)n * n), *C = fresh((long)n * n);
        double best = 1e30, start = now();
        for (int r = 0; more(r, start, reps + 1); r++) {
            double t0 = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, nt ? CblasTrans : CblasNoTrans, n, n, n,
                        1.0f, A, n, B, n, 0.0f, C, n);
            double t = now() - t0;
            if (r && t < best) best = t; /* the first call warms OpenBLAS up */
        }
        printf("gemm_gflops %.3f\n", 2.0 * n * (double)n * n / best * 1e-9);
        free(A), free(B), free(C);
        return 0;
    }
    if (!strcmp(argv[1], "mlpgemm") && argc >= 7) {
        int B = atoi(argv[2]), D = atoi(argv[3]), H = atoi(argv[4]), K = atoi(argv[5]);
        int big = B * D > B * H ? B * D : B * H;
        float *X = fresh(big), *W = fresh(big), *Y = fresh(big);
        struct { int ta, tb, m, n, k; } g[5] = {
            {0, 1, B, H, D}, {0, 1, B, K, H}, {0, 0, B, H, K}, {1, 0, H, D, B}, {1, 0, K, H, B}};
        double best = 1e30;
        int threads[2] = {1, atoi(argv[6])};
        for (int c = 0; c < (threads[1] > 1 ? 2 : 1); c++) {
            openblas_set_num_threads(threads[c]);
            double start = now();
            for (int r = 0; more(r, start, reps * 20 + 1); r++) {
                double t0 = now();
                for (int i = 0; i < 5; i++)
                    cblas_sgemm(CblasRowMajor, g[i].ta ? CblasTrans : CblasNoTrans,
                                g[i].tb ? CblasTrans : CblasNoTrans, g[i].m, g[i].n, g[i].k, 1.0f,
                                X, g[i].ta ? g[i].m : g[i].k, W, g[i].tb ? g[i].k : g[i].n, 0.0f,
                                Y, g[i].n);
                double t = now() - t0;
                if (r && t < best) best = t;
            }
        }
        printf("mlp_gemm_us %.3f\n", best * 1e6);
        free(X), free(W), free(Y);
        return 0;
    }
    fprintf(stderr, "peers: unknown mode %s\n", argv[1]);
    return 2;
}

/* dist_allreduce.c - the peer of bench/dist.lua's all_reduce rows: MPI_Allreduce (sum, in
 * place) of N float32 over the ranks of mpirun, best of REPS after a warm-up; rank 0
 * prints "c_allreduce_<bytes>_s <seconds>".
 *   mpirun -np 2 dist_allreduce BYTES [REPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 20, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = (int)(bytes / 4);
    float *buf = malloc((size_t)n * sizeof *buf);
    for (int i = 0; i < n; i++) buf[i] = 1.0f;
    double best = 1e30;
    for (int r = 0; r <= reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r > 0 && t < best) best = t;
    }
    if (rank == 0) printf("c_allreduce_%ld_s %.9f\n", bytes, best);
    free(buf);
    MPI_Finalize();
    return 0;
}

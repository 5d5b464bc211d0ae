/* The output_grads fixture has no hand-written kernels. */

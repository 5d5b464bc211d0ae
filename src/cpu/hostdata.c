/*
 * hostdata.c - backend data in host memory (hostmem.c), and the data-transfer slots of the
 * backend vtable shared by the two plan-based backends (CPU and reference): data made by
 * either feeds the other's computations, since a plan reads any parameter's ptr.
 */
#include <stdlib.h>
#include <string.h>

#include "hostmem.h"
#include "plan.h"

ltc_data *ltc_cpu_data_new(ltc_backend *b, const ltc_shape *shape) {
    ltc_data *d = malloc(sizeof *d);
    size_t nbytes = ltc_shape_nbytes(shape);
    if (!d) return NULL;
    d->ptr = ltc_cpu_mem_alloc(nbytes);
    if (!d->ptr) {
        free(d);
        return NULL;
    }
    d->refcount = 1;
    d->shape = *shape;
    d->nbytes = nbytes;
    d->backend = b;
    return d;
}

ltc_data *ltc_host_data_from_host(ltc_backend *b, const ltc_shape *shape, const void *host) {
    ltc_data *d = ltc_cpu_data_new(b, shape);
    if (d && d->nbytes) memcpy(d->ptr, host, d->nbytes);
    return d;
}

ltc_data *ltc_host_data_of_node(ltc_backend *b, const ltc_node *n) {
    (void)b;
    return n->op == LTC_OP_DEVICE_DATA ? n->data : NULL;
}

ltc_status ltc_host_data_to_host(ltc_backend *b, const ltc_data *d, void *host) {
    (void)b;
    if (d->nbytes) memcpy(host, d->ptr, d->nbytes);
    return LTC_OK;
}

ltc_status ltc_host_data_read(ltc_backend *b, const ltc_data *d, size_t offset, size_t n,
                              void *host) {
    (void)b;
    if (n) memcpy(host, (const char *)d->ptr + offset, n);
    return LTC_OK;
}

void ltc_host_data_free(ltc_backend *b, ltc_data *d) {
    (void)b;
    ltc_cpu_mem_free(d->ptr, d->nbytes);
    free(d);
}

ltc_device ltc_host_default_device(ltc_backend *b) { return (ltc_device){b->name, 0}; }

int ltc_host_devices(ltc_backend *b, ltc_device *out, int max) {
    if (max > 0) out[0] = ltc_host_default_device(b);
    return 1;
}

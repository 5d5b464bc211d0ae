/*
 * device.c - devices: which one a tensor lives on, the default device, moving tensors
 * between devices. A device is a registered backend's device type and an ordinal
 * ("cpu:0", "toy:0"); the core touches another backend's data only through its transfer
 * slots, data_to_host and data_from_host, going through a host buffer.
 * PyTorch: c10::Device ("cuda:1"), Tensor.to(device), torch.set_default_device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "ltc_graph.h"

ltc_device ltc_default_dev; /* .type NULL: the default backend's ordinal 0 */
_Thread_local int ltc_guard_ordinal;

ltc_status ltc_data_read(const ltc_data *d, size_t offset, size_t n, void *host) {
    ltc_backend *b = d->backend;
    if (offset + n > d->nbytes)
        return ltc_errorf(LTC_ERR_ARG, "read of bytes %zu..%zu past a value of %zu bytes",
                          offset, offset + n, d->nbytes);
    if (b->iface->data_read) return b->iface->data_read(b, d, offset, n, host);
    unsigned char small[256];
    unsigned char *buf = d->nbytes <= sizeof small ? small : malloc(d->nbytes);
    if (!buf) return ltc_errorf(LTC_ERR_NOMEM, "out of memory reading %zu bytes", d->nbytes);
    ltc_status st = b->iface->data_to_host(b, d, buf);
    if (!st && n) memcpy(host, buf + offset, n);
    if (buf != small) free(buf);
    return st;
}

/* The error of a data slot of b that returned NULL for `shape`: its own message if it left
 * one since `serial`, else a generic one naming the bytes and the backend. */
static ltc_status data_slot_failed(ltc_backend *b, const ltc_shape *shape, unsigned serial) {
    if (ltc_error_serial() != serial) return LTC_ERR_NOMEM;
    return ltc_errorf(LTC_ERR_NOMEM, "out of memory for %zu bytes on %s", ltc_shape_nbytes(shape),
                      b->name);
}

ltc_status ltc_data_from_host(ltc_backend *b, const ltc_shape *shape, const void *host,
                              bool scalar, ltc_data **out) {
    unsigned serial = ltc_error_serial();
    *out = scalar && b->iface->data_from_scalar ? b->iface->data_from_scalar(b, shape, host)
                                                : b->iface->data_from_host(b, shape, host);
    return *out ? LTC_OK : data_slot_failed(b, shape, serial);
}

ltc_status ltc_data_placeholder(ltc_backend *b, const ltc_shape *shape, ltc_data **out) {
    unsigned serial = ltc_error_serial();
    *out = b->iface->data_placeholder(b, shape);
    return *out ? LTC_OK : data_slot_failed(b, shape, serial);
}

ltc_status ltc_data_transfer(ltc_data *d, ltc_backend *to, ltc_data **out) {
    static int64_t *c_transfer;
    void *buf = malloc(d->nbytes ? d->nbytes : 1);
    if (!buf)
        return ltc_errorf(LTC_ERR_NOMEM, "out of memory moving %zu bytes to %s", d->nbytes,
                          to->name);
    ltc_status st = d->backend->iface->data_to_host(d->backend, d, buf);
    if (!st) st = ltc_data_from_host(to, &d->shape, buf, false, out);
    free(buf);
    LTC_COUNT(c_transfer, "DeviceTransfer", 1);
    return st;
}

ltc_device ltc_device_default(void) {
    ltc_backend *b = ltc_backend_default();
    if (!b) return (ltc_device){NULL, 0};
    if (ltc_guard_backend) return (ltc_device){b->name, ltc_guard_ordinal};
    return (ltc_device){b->name, ltc_default_dev.type == b->name ? ltc_default_dev.ordinal : 0};
}

/* The number of devices of b (its devices slot). */
static int device_count(ltc_backend *b) {
    ltc_device devs[16];
    return b->iface->devices(b, devs, 16);
}

ltc_status ltc_device_parse(const char *s, ltc_device *out) {
    char type[LTC_DEVICE_TYPE_MAX];
    const char *colon = s ? strchr(s, ':') : NULL;
    size_t len = s ? (colon ? (size_t)(colon - s) : strlen(s)) : 0;
    if (!s || len == 0 || len >= sizeof type)
        return ltc_errorf(LTC_ERR_ARG, "bad device '%s' (expected a device type such as 'cpu' "
                          "or 'cpu:0')", s ? s : "(null)");
    memcpy(type, s, len);
    type[len] = 0;
    ltc_backend *b = ltc_backend_get(type);
    if (!b) return ltc_errorf(LTC_ERR_ARG, "unknown device type '%s' in '%s'", type, s);
    long ord = 0;
    if (colon) {
        char *end;
        ord = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || ord < 0)
            return ltc_errorf(LTC_ERR_ARG, "bad device ordinal in '%s'", s);
    }
    int n = device_count(b);
    if (ord >= n)
        return ltc_errorf(LTC_ERR_ARG, "device '%s': backend '%s' has %d device%s", s, type, n,
                          n == 1 ? "" : "s");
    *out = (ltc_device){b->name, (int)ord};
    return LTC_OK;
}

ltc_status ltc_device_set_default(ltc_device dev) {
    ltc_backend *b = ltc_backend_get(dev.type);
    if (!b) return ltc_errorf(LTC_ERR_ARG, "no backend named '%s'", dev.type ? dev.type : "(null)");
    if (dev.ordinal < 0 || dev.ordinal >= device_count(b))
        return ltc_errorf(LTC_ERR_ARG, "set_default_device: %s has no device %d", b->name,
                          dev.ordinal);
    ltc_status st = ltc_backend_set_default(b->name);
    if (!st) ltc_default_dev = (ltc_device){b->name, dev.ordinal};
    return st;
}

ltc_status ltc_device_guard(ltc_device dev, ltc_device *prev) {
    ltc_device old = {ltc_guard_backend ? ltc_guard_backend->name : NULL, ltc_guard_ordinal};
    if (!dev.type) {
        ltc_guard_backend = NULL;
        ltc_guard_ordinal = 0;
    } else {
        ltc_backend *b = ltc_backend_get(dev.type);
        if (!b) return ltc_errorf(LTC_ERR_ARG, "no backend named '%s'", dev.type);
        if (dev.ordinal < 0 || dev.ordinal >= device_count(b))
            return ltc_errorf(LTC_ERR_ARG, "device: %s has no device %d", b->name, dev.ordinal);
        ltc_guard_backend = b;
        ltc_guard_ordinal = dev.ordinal;
    }
    if (prev) *prev = old;
    return LTC_OK;
}

bool ltc_device_follow(const ltc_tensor *t, ltc_device *prev) {
    ltc_backend *cur = ltc_backend_default();
    if (!t || !t->backend) return false;
    int ord = ltc_guard_backend ? ltc_guard_ordinal
              : cur && ltc_default_dev.type == cur->name ? ltc_default_dev.ordinal : 0;
    if (t->backend == cur && t->ordinal == ord) return false;
    *prev = (ltc_device){ltc_guard_backend ? ltc_guard_backend->name : NULL, ltc_guard_ordinal};
    ltc_guard_backend = t->backend;
    ltc_guard_ordinal = t->ordinal;
    return true;
}

ltc_device ltc_tensor_device(const ltc_tensor *t) {
    return (ltc_device){t->backend ? t->backend->name : "?", t->ordinal};
}

void ltc_device_format(ltc_device d, char *buf, size_t size) {
    snprintf(buf, size, "%s:%d", d.type ? d.type : "?", d.ordinal);
}

ltc_status ltc_tensor_to_device(ltc_tensor *t, ltc_device dev, ltc_tensor **out) {
    ltc_backend *b = ltc_backend_get(dev.type);
    if (!b) return ltc_errorf(LTC_ERR_ARG, "to: no backend named '%s'", dev.type ? dev.type : "(null)");
    if (b == t->backend && dev.ordinal == t->ordinal) {
        *out = ltc_tensor_retain(t);
        return LTC_OK;
    }
    ltc_status st = ltc_capture_check_read(); /* a capture cannot repeat a move */
    if (st) return st;
    if (t->failed) return ltc_tensor_failed_error(t);
    if (ltc_tensor_is_pending(t) && (st = ltc_sync())) return st;
    if (!t->data) return ltc_errorf(LTC_ERR_STATE, "to: tensor has no data after sync");
    ltc_data *d;
    if ((st = ltc_data_transfer(t->data, b, &d))) return st;
    if ((st = ltc_tensor_from_data(d, out))) return st;
    (*out)->ordinal = dev.ordinal;
    if ((st = ltc_ag_record_move(t, *out))) { /* the copy's history: the move */
        ltc_tensor_release(*out);
        *out = NULL;
    }
    return st;
}

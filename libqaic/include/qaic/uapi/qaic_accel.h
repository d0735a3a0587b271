/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mainline Linux `qaic` accel driver's user-space interface, declared in this project's own
 * words. Numbers and layouts match the kernel's include/uapi/drm/qaic_accel.h so that a program
 * written against the real driver runs unchanged on the emulated device (and the other way).
 * Debian 12's kernel headers predate the driver, hence our own copy.
 */
#ifndef QAIC_UAPI_QAIC_ACCEL_H
#define QAIC_UAPI_QAIC_ACCEL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest manage message the driver accepts, header included. */
#define QAIC_MANAGE_MAX_MSG_LENGTH 4096u

/* Semaphore commands (struct qaic_sem.cmd). */
#define QAIC_SEM_NOP 0
#define QAIC_SEM_INIT 1
#define QAIC_SEM_INC 2
#define QAIC_SEM_DEC 3
#define QAIC_SEM_WAIT_EQUAL 4
#define QAIC_SEM_WAIT_GT_EQ 5
#define QAIC_SEM_WAIT_GT_0 6

/* Semaphore fence flags (struct qaic_sem.flags). */
#define QAIC_SEM_INSYNCFENCE 2
#define QAIC_SEM_OUTSYNCFENCE 1

/* Transfer directions of a slice: the dma_data_direction values the driver uses. */
#define QAIC_DIR_TO_DEVICE 1
#define QAIC_DIR_FROM_DEVICE 2

/* Default WAIT_BO timeout when the caller passes 0. */
#define QAIC_WAIT_BO_DEFAULT_TIMEOUT_MS 5000u

/* Control protocol version the driver requires from STATUS. */
#define QAIC_PROTOCOL_MAJOR 5
#define QAIC_PROTOCOL_MINOR_MAX 0

/* Manage transaction types (struct qaic_manage_trans_hdr.type). */
enum qaic_manage_transaction_type {
	QAIC_TRANS_UNDEFINED = 0,
	QAIC_TRANS_PASSTHROUGH_FROM_USR = 1,
	QAIC_TRANS_PASSTHROUGH_TO_USR = 2,
	QAIC_TRANS_PASSTHROUGH_FROM_DEV = 3,
	QAIC_TRANS_PASSTHROUGH_TO_DEV = 4,
	QAIC_TRANS_DMA_XFER_FROM_USR = 5,
	QAIC_TRANS_DMA_XFER_TO_DEV = 6,
	QAIC_TRANS_ACTIVATE_FROM_USR = 7,
	QAIC_TRANS_ACTIVATE_FROM_DEV = 8,
	QAIC_TRANS_ACTIVATE_TO_DEV = 9,
	QAIC_TRANS_DEACTIVATE_FROM_USR = 10,
	QAIC_TRANS_DEACTIVATE_FROM_DEV = 11,
	QAIC_TRANS_STATUS_FROM_USR = 12,
	QAIC_TRANS_STATUS_TO_USR = 13,
	QAIC_TRANS_STATUS_FROM_DEV = 14,
	QAIC_TRANS_STATUS_TO_DEV = 15,
	QAIC_TRANS_TERMINATE_FROM_DEV = 16,
	QAIC_TRANS_TERMINATE_TO_DEV = 17,
	QAIC_TRANS_DMA_XFER_CONT = 18,
	QAIC_TRANS_VALIDATE_PARTITION_FROM_DEV = 19,
	QAIC_TRANS_VALIDATE_PARTITION_TO_DEV = 20,
	QAIC_TRANS_TYPE_MAX = 21
};

/* Every transaction in a manage message starts with this header; len covers the header. */
struct qaic_manage_trans_hdr {
	__u32 type;
	__u32 len;
};

/* Opaque bytes for the device's own command processor (resource-group reservations). The
 * flexible array member is C99; C++ compilers accept it but -pedantic names it, so C++ users who
 * build with -pedantic -Werror are spared the warning for this one declaration. */
#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#ifdef __clang__
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
#endif
struct qaic_manage_trans_passthrough {
	struct qaic_manage_trans_hdr hdr;
	__u8 data[];
};
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

/* Move `size` bytes at user address `addr` to the device, tagged for the firmware. */
struct qaic_manage_trans_dma_xfer {
	struct qaic_manage_trans_hdr hdr;
	__u32 tag;
	__u32 pad;
	__u64 addr;
	__u64 size;
};

struct qaic_manage_trans_activate_to_dev {
	struct qaic_manage_trans_hdr hdr;
	__u32 queue_size; /* elements in the request (and response) FIFO */
	__u32 eventfd;    /* unused by the mainline driver */
	__u32 options;
	__u32 pad;
};

struct qaic_manage_trans_activate_from_dev {
	struct qaic_manage_trans_hdr hdr;
	__u32 status;
	__u32 dbc_id;
	__u64 options;
};

struct qaic_manage_trans_deactivate {
	struct qaic_manage_trans_hdr hdr;
	__u32 dbc_id;
	__u32 pad;
};

struct qaic_manage_trans_status_to_dev {
	struct qaic_manage_trans_hdr hdr;
};

struct qaic_manage_trans_status_from_dev {
	struct qaic_manage_trans_hdr hdr;
	__u16 major;
	__u16 minor;
	__u32 status;
	__u64 status_flags; /* bit 0: the device requires CRCs on control messages */
};

#define QAIC_STATUS_FLAG_CRC_REQUIRED (1ull << 0)

/* MANAGE argument: `count` transactions totalling `len` bytes at user address `data`. */
struct qaic_manage_msg {
	__u32 len;
	__u32 count;
	__u64 data;
};

struct qaic_create_bo {
	__u64 size;
	__u32 handle; /* out */
	__u32 pad;
};

struct qaic_mmap_bo {
	__u32 handle;
	__u32 pad;
	__u64 offset; /* out: pass to mmap() of the device node */
};

struct qaic_sem {
	__u16 val;    /* 12 bits used */
	__u8 index;   /* 5 bits used */
	__u8 presync; /* nonzero: before the transfer, else after */
	__u8 cmd;     /* QAIC_SEM_* */
	__u8 flags;   /* QAIC_SEM_*SYNCFENCE */
	__u16 pad;
};

struct qaic_attach_slice_entry {
	__u64 size;
	struct qaic_sem sem0;
	struct qaic_sem sem1;
	struct qaic_sem sem2;
	struct qaic_sem sem3;
	__u64 dev_addr;
	__u64 db_addr;
	__u32 db_data;
	__u32 db_len; /* 32, 16 or 8 bits; 0 means no doorbell */
	__u64 offset;
};

struct qaic_attach_slice_hdr {
	__u32 count;
	__u32 dbc_id;
	__u32 handle;
	__u32 dir; /* QAIC_DIR_* */
	__u64 size;
};

struct qaic_attach_slice {
	struct qaic_attach_slice_hdr hdr;
	__u64 data; /* user pointer to struct qaic_attach_slice_entry[hdr.count] */
};

struct qaic_execute_entry {
	__u32 handle;
	__u32 dir;
};

struct qaic_partial_execute_entry {
	__u32 handle;
	__u32 dir;
	__u64 resize; /* bytes to transfer; 0 means the whole BO */
};

struct qaic_execute_hdr {
	__u32 count;
	__u32 dbc_id;
};

struct qaic_execute {
	struct qaic_execute_hdr hdr;
	__u64 data; /* user pointer to execute or partial-execute entries */
};

struct qaic_wait {
	__u32 handle;
	__u32 timeout; /* milliseconds; 0 selects QAIC_WAIT_BO_DEFAULT_TIMEOUT_MS */
	__u32 dbc_id;
	__u32 pad;
};

struct qaic_perf_stats_hdr {
	__u16 count;
	__u16 pad;
	__u32 dbc_id;
};

struct qaic_perf_stats {
	struct qaic_perf_stats_hdr hdr;
	__u64 data; /* user pointer to struct qaic_perf_stats_entry[hdr.count] */
};

struct qaic_perf_stats_entry {
	__u32 handle;
	__u32 queue_level_before; /* out */
	__u32 num_queue_element;  /* out */
	__u32 submit_latency_us;  /* out */
	__u32 device_latency_us;  /* out */
	__u32 pad;
};

struct qaic_detach_slice {
	__u32 handle;
	__u32 pad;
};

#define QAIC_DRM_IOCTL_BASE 'd'
#define QAIC_DRM_COMMAND_BASE 0x40

#define DRM_QAIC_MANAGE 0x00
#define DRM_QAIC_CREATE_BO 0x01
#define DRM_QAIC_MMAP_BO 0x02
#define DRM_QAIC_ATTACH_SLICE_BO 0x03
#define DRM_QAIC_EXECUTE_BO 0x04
#define DRM_QAIC_PARTIAL_EXECUTE_BO 0x05
#define DRM_QAIC_WAIT_BO 0x06
#define DRM_QAIC_PERF_STATS_BO 0x07
#define DRM_QAIC_DETACH_SLICE_BO 0x08

#define QAIC_IOWR(nr, type) _IOWR(QAIC_DRM_IOCTL_BASE, QAIC_DRM_COMMAND_BASE + (nr), type)
#define QAIC_IOW(nr, type) _IOW(QAIC_DRM_IOCTL_BASE, QAIC_DRM_COMMAND_BASE + (nr), type)

#define DRM_IOCTL_QAIC_MANAGE QAIC_IOWR(DRM_QAIC_MANAGE, struct qaic_manage_msg)
#define DRM_IOCTL_QAIC_CREATE_BO QAIC_IOWR(DRM_QAIC_CREATE_BO, struct qaic_create_bo)
#define DRM_IOCTL_QAIC_MMAP_BO QAIC_IOWR(DRM_QAIC_MMAP_BO, struct qaic_mmap_bo)
#define DRM_IOCTL_QAIC_ATTACH_SLICE_BO QAIC_IOW(DRM_QAIC_ATTACH_SLICE_BO, struct qaic_attach_slice)
#define DRM_IOCTL_QAIC_EXECUTE_BO QAIC_IOW(DRM_QAIC_EXECUTE_BO, struct qaic_execute)
#define DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO QAIC_IOW(DRM_QAIC_PARTIAL_EXECUTE_BO, struct qaic_execute)
#define DRM_IOCTL_QAIC_WAIT_BO QAIC_IOW(DRM_QAIC_WAIT_BO, struct qaic_wait)
#define DRM_IOCTL_QAIC_PERF_STATS_BO QAIC_IOWR(DRM_QAIC_PERF_STATS_BO, struct qaic_perf_stats)
#define DRM_IOCTL_QAIC_DETACH_SLICE_BO QAIC_IOW(DRM_QAIC_DETACH_SLICE_BO, struct qaic_detach_slice)

#ifdef __cplusplus
} /* extern "C" */
#define QAIC_UAPI_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define QAIC_UAPI_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* The layouts are the contract with the kernel: any drift is a compile error. */
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_hdr) == 8, "trans_hdr");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_passthrough) == 8, "passthrough");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_dma_xfer) == 32, "dma_xfer");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_activate_to_dev) == 24, "activate_to_dev");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_activate_from_dev) == 24, "activate_from_dev");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_deactivate) == 16, "deactivate");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_status_to_dev) == 8, "status_to_dev");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_trans_status_from_dev) == 24, "status_from_dev");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_manage_msg) == 16, "manage_msg");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_create_bo) == 16, "create_bo");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_mmap_bo) == 16, "mmap_bo");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_sem) == 8, "sem");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_attach_slice_entry) == 72, "attach_slice_entry");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_attach_slice_hdr) == 24, "attach_slice_hdr");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_attach_slice) == 32, "attach_slice");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_execute_entry) == 8, "execute_entry");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_partial_execute_entry) == 16, "partial_execute_entry");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_execute_hdr) == 8, "execute_hdr");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_execute) == 16, "execute");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_wait) == 16, "wait");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_perf_stats_hdr) == 8, "perf_stats_hdr");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_perf_stats) == 16, "perf_stats");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_perf_stats_entry) == 24, "perf_stats_entry");
QAIC_UAPI_STATIC_ASSERT(sizeof(struct qaic_detach_slice) == 8, "detach_slice");

QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_MANAGE == 0xC0106440u, "MANAGE");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_CREATE_BO == 0xC0106441u, "CREATE_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_MMAP_BO == 0xC0106442u, "MMAP_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_ATTACH_SLICE_BO == 0x40206443u, "ATTACH_SLICE_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_EXECUTE_BO == 0x40106444u, "EXECUTE_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO == 0x40106445u, "PARTIAL_EXECUTE_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_WAIT_BO == 0x40106446u, "WAIT_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_PERF_STATS_BO == 0xC0106447u, "PERF_STATS_BO");
QAIC_UAPI_STATIC_ASSERT(DRM_IOCTL_QAIC_DETACH_SLICE_BO == 0x40086448u, "DETACH_SLICE_BO");

#endif /* QAIC_UAPI_QAIC_ACCEL_H */

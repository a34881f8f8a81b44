//go:build cgo

// The NCCL half of package dist's C, declared in cdecl.h and called only
// from nccl.go: libnccl.so.2, reached through dlopen, with the signatures
// of nccl.h (NCCL 2.x) written out here. ncclUniqueId is a struct of 128
// chars passed by value; ncclComm_t and cudaStream_t are pointers; every
// call returns an ncclResult_t. The collectives only queue work on the
// stream: the caller waits for the stream.
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cdecl.h"

typedef struct { char internal[LATHE_NCCL_UNIQUE_ID_BYTES]; } nccl_unique_id;
typedef void *comm_t;
typedef void *stream_t;

static struct {
	int (*get_version)(int *);
	const char *(*get_error_string)(int);
	int (*get_unique_id)(nccl_unique_id *);
	int (*comm_init_rank)(comm_t *, int, nccl_unique_id, int);
	int (*comm_destroy)(comm_t);
	int (*comm_abort)(comm_t);
	int (*comm_get_async_error)(comm_t, int *);
	int (*group_start)(void);
	int (*group_end)(void);
	int (*all_reduce)(const void *, void *, size_t, int, int, comm_t, stream_t);
	int (*broadcast)(const void *, void *, size_t, int, int, comm_t, stream_t);
	int (*all_gather)(const void *, void *, size_t, int, comm_t, stream_t);
	int (*reduce_scatter)(const void *, void *, size_t, int, int, comm_t, stream_t);
	int (*send)(const void *, size_t, int, int, comm_t, stream_t);
	int (*recv)(void *, size_t, int, int, comm_t, stream_t);
} nccl;

static char nccl_missing[128];

#define NLOOK(field, name)                                                         \
	do {                                                                           \
		*(void **)&nccl.field = dlsym(h, name);                                    \
		if (!nccl.field) {                                                         \
			snprintf(nccl_missing, sizeof nccl_missing, "has no symbol %s", name); \
			return nccl_missing;                                                   \
		}                                                                          \
	} while (0)

const char *lathe_nccl_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	NLOOK(get_version, "ncclGetVersion");
	NLOOK(get_error_string, "ncclGetErrorString");
	NLOOK(get_unique_id, "ncclGetUniqueId");
	NLOOK(comm_init_rank, "ncclCommInitRank");
	NLOOK(comm_destroy, "ncclCommDestroy");
	NLOOK(comm_abort, "ncclCommAbort");
	NLOOK(comm_get_async_error, "ncclCommGetAsyncError");
	NLOOK(group_start, "ncclGroupStart");
	NLOOK(group_end, "ncclGroupEnd");
	NLOOK(all_reduce, "ncclAllReduce");
	NLOOK(broadcast, "ncclBroadcast");
	NLOOK(all_gather, "ncclAllGather");
	NLOOK(reduce_scatter, "ncclReduceScatter");
	NLOOK(send, "ncclSend");
	NLOOK(recv, "ncclRecv");
	return NULL;
}

int lathe_nccl_version(int *version) { return nccl.get_version(version); }

const char *lathe_nccl_error_string(int result) {
	const char *s = nccl.get_error_string(result);
	return s ? s : "";
}

int lathe_nccl_get_unique_id(char *id) {
	nccl_unique_id u;
	memset(&u, 0, sizeof u);
	int rc = nccl.get_unique_id(&u);
	memcpy(id, u.internal, sizeof u.internal);
	return rc;
}

int lathe_nccl_comm_init_rank(uintptr_t *comm, int nranks, const char *id, int rank) {
	nccl_unique_id u;
	memcpy(u.internal, id, sizeof u.internal);
	comm_t c = NULL;
	int rc = nccl.comm_init_rank(&c, nranks, u, rank);
	*comm = (uintptr_t)c;
	return rc;
}

int lathe_nccl_comm_destroy(uintptr_t comm) { return nccl.comm_destroy((comm_t)comm); }
int lathe_nccl_comm_abort(uintptr_t comm) { return nccl.comm_abort((comm_t)comm); }
int lathe_nccl_comm_async_error(uintptr_t comm, int *result) { return nccl.comm_get_async_error((comm_t)comm, result); }
int lathe_nccl_group_start(void) { return nccl.group_start(); }
int lathe_nccl_group_end(void) { return nccl.group_end(); }

#define DPTR(p) ((void *)(uintptr_t)(p))

int lathe_nccl_all_reduce(uint64_t send, uint64_t recv, size_t count, int type, int op, uintptr_t comm, uintptr_t stream) {
	return nccl.all_reduce(DPTR(send), DPTR(recv), count, type, op, (comm_t)comm, (stream_t)stream);
}

int lathe_nccl_broadcast(uint64_t send, uint64_t recv, size_t count, int type, int root, uintptr_t comm, uintptr_t stream) {
	return nccl.broadcast(DPTR(send), DPTR(recv), count, type, root, (comm_t)comm, (stream_t)stream);
}

int lathe_nccl_all_gather(uint64_t send, uint64_t recv, size_t count, int type, uintptr_t comm, uintptr_t stream) {
	return nccl.all_gather(DPTR(send), DPTR(recv), count, type, (comm_t)comm, (stream_t)stream);
}

int lathe_nccl_reduce_scatter(uint64_t send, uint64_t recv, size_t count, int type, int op, uintptr_t comm, uintptr_t stream) {
	return nccl.reduce_scatter(DPTR(send), DPTR(recv), count, type, op, (comm_t)comm, (stream_t)stream);
}

int lathe_nccl_send(uint64_t send, size_t count, int type, int peer, uintptr_t comm, uintptr_t stream) {
	return nccl.send(DPTR(send), count, type, peer, (comm_t)comm, (stream_t)stream);
}

int lathe_nccl_recv(uint64_t recv, size_t count, int type, int peer, uintptr_t comm, uintptr_t stream) {
	return nccl.recv(DPTR(recv), count, type, peer, (comm_t)comm, (stream_t)stream);
}

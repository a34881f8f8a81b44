//go:build cgo

// The MPI half of package dist's C, declared in cdecl.h and called only
// from mpi.go: Open MPI's libmpi.so.40, reached through dlopen, with its
// handles looked up as symbols. Open MPI 4.1's C ABI: MPI_Comm,
// MPI_Datatype, MPI_Op, MPI_Errhandler and MPI_Request are pointers to
// structures that the library defines, the predefined handles are the
// addresses of its global objects (MPI_COMM_WORLD is &ompi_mpi_comm_world,
// MPI_FLOAT &ompi_mpi_float, ...), MPI_STATUS_IGNORE is NULL, success is 0
// and MPI_THREAD_SERIALIZED is 2. Nothing here keeps a pointer past the
// call except what the non-blocking calls keep by contract until their
// request completes (mpi.go pins those buffers).
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdecl.h"

typedef void *handle;

#define REQ(r) ((handle *)(r))

static struct {
	int (*get_version)(int *, int *);
	int (*get_library_version)(char *, int *);
	int (*initialized)(int *);
	int (*finalized)(int *);
	int (*init_thread)(int *, char ***, int, int *);
	int (*finalize)(void);
	int (*comm_idup)(handle, handle *, handle *);
	int (*comm_free)(handle *);
	int (*comm_rank)(handle, int *);
	int (*comm_size)(handle, int *);
	int (*comm_set_errhandler)(handle, handle);
	int (*error_string)(int, char *, int *);
	int (*ibarrier)(handle, handle *);
	int (*iallreduce)(const void *, void *, int, handle, handle, handle, handle *);
	int (*ibcast)(void *, int, handle, int, handle, handle *);
	int (*iallgather)(const void *, int, handle, void *, int, handle, handle, handle *);
	int (*iallgatherv)(const void *, int, handle, void *, const int *, const int *, handle, handle, handle *);
	int (*ireduce_scatter)(const void *, void *, const int *, handle, handle, handle, handle *);
	int (*isend)(const void *, int, handle, int, int, handle, handle *);
	int (*irecv)(void *, int, handle, int, int, handle, handle *);
	int (*test)(handle *, int *, void *);
	int (*cancel)(handle *);
	int (*request_free)(handle *);
	handle comm_world, errors_return;
	handle types[LATHE_MPI_NTYPES];
	handle ops[LATHE_MPI_NOPS];
} mpi;

static const char *const type_symbols[LATHE_MPI_NTYPES] = {
	"ompi_mpi_float", "ompi_mpi_double", "ompi_mpi_int8_t", "ompi_mpi_uint8_t", "ompi_mpi_int16_t",
	"ompi_mpi_uint16_t", "ompi_mpi_int32_t", "ompi_mpi_int64_t", "ompi_mpi_byte",
};
static const char *const op_symbols[LATHE_MPI_NOPS] = {"ompi_mpi_op_sum", "ompi_mpi_op_max", "ompi_mpi_op_min"};

static char missing[128];

#define LOOK(field, name)                                                   \
	do {                                                                    \
		*(void **)&mpi.field = dlsym(h, name);                              \
		if (!mpi.field) {                                                   \
			snprintf(missing, sizeof missing, "has no symbol %s", name);    \
			return missing;                                                 \
		}                                                                   \
	} while (0)

const char *lathe_mpi_open(const char *path) {
	// RTLD_GLOBAL: Open MPI's components, which it dlopens itself, look up
	// libmpi's and libopen-pal's symbols in the global scope.
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) return dlerror();
	LOOK(get_version, "MPI_Get_version");
	LOOK(get_library_version, "MPI_Get_library_version");
	LOOK(initialized, "MPI_Initialized");
	LOOK(finalized, "MPI_Finalized");
	LOOK(init_thread, "MPI_Init_thread");
	LOOK(finalize, "MPI_Finalize");
	LOOK(comm_idup, "MPI_Comm_idup");
	LOOK(comm_free, "MPI_Comm_free");
	LOOK(comm_rank, "MPI_Comm_rank");
	LOOK(comm_size, "MPI_Comm_size");
	LOOK(comm_set_errhandler, "MPI_Comm_set_errhandler");
	LOOK(error_string, "MPI_Error_string");
	LOOK(ibarrier, "MPI_Ibarrier");
	LOOK(iallreduce, "MPI_Iallreduce");
	LOOK(ibcast, "MPI_Ibcast");
	LOOK(iallgather, "MPI_Iallgather");
	LOOK(iallgatherv, "MPI_Iallgatherv");
	LOOK(ireduce_scatter, "MPI_Ireduce_scatter");
	LOOK(isend, "MPI_Isend");
	LOOK(irecv, "MPI_Irecv");
	LOOK(test, "MPI_Test");
	LOOK(cancel, "MPI_Cancel");
	LOOK(request_free, "MPI_Request_free");
	LOOK(comm_world, "ompi_mpi_comm_world");
	LOOK(errors_return, "ompi_mpi_errors_return");
	for (int i = 0; i < LATHE_MPI_NTYPES; i++) LOOK(types[i], type_symbols[i]);
	for (int i = 0; i < LATHE_MPI_NOPS; i++) LOOK(ops[i], op_symbols[i]);
	return NULL;
}

int lathe_mpi_version(int *major, int *minor) { return mpi.get_version(major, minor); }

int lathe_mpi_library_version(char *buf, int len) {
	// MPI_MAX_LIBRARY_VERSION_STRING is 256 in Open MPI.
	char tmp[256];
	int n = 0;
	int rc = mpi.get_library_version(tmp, &n);
	if (rc != 0) return rc;
	if (n >= len) n = len - 1;
	memcpy(buf, tmp, n);
	buf[n] = 0;
	return 0;
}

int lathe_mpi_initialized(int *flag) { return mpi.initialized(flag); }
int lathe_mpi_finalized(int *flag) { return mpi.finalized(flag); }
int lathe_mpi_init_thread(int required, int *provided) { return mpi.init_thread(NULL, NULL, required, provided); }
int lathe_mpi_finalize(void) { return mpi.finalize(); }

// lathe_mpi_comm_idup_world starts giving the caller a communicator of its
// own over every process, whose errors are returned rather than fatal
// (MPI's default handler aborts the job, which a library must never do);
// the handle lands in *slot, which MPI may write until the request ends.
int lathe_mpi_comm_idup_world(uintptr_t **slot, uintptr_t *req) {
	*slot = calloc(1, sizeof(handle));
	if (!*slot) return -1;
	int rc = mpi.comm_set_errhandler(mpi.comm_world, mpi.errors_return);
	if (rc != 0) return rc;
	return mpi.comm_idup(mpi.comm_world, (handle *)*slot, REQ(req));
}

int lathe_mpi_comm_set_errors_return(uintptr_t comm) { return mpi.comm_set_errhandler((handle)comm, mpi.errors_return); }

int lathe_mpi_comm_free(uintptr_t *comm) {
	handle c = (handle)*comm;
	int rc = mpi.comm_free(&c);
	*comm = (uintptr_t)c;
	return rc;
}

int lathe_mpi_comm_rank(uintptr_t comm, int *rank) { return mpi.comm_rank((handle)comm, rank); }
int lathe_mpi_comm_size(uintptr_t comm, int *size) { return mpi.comm_size((handle)comm, size); }

void lathe_mpi_error_string(int code, char *buf, int len) {
	// MPI_MAX_ERROR_STRING is 256 in Open MPI.
	char tmp[256];
	int n = 0;
	buf[0] = 0;
	if (mpi.error_string(code, tmp, &n) != 0) return;
	if (n >= len) n = len - 1;
	if (n < 0) n = 0;
	memcpy(buf, tmp, n);
	buf[n] = 0;
}

int lathe_mpi_ibarrier(uintptr_t comm, uintptr_t *req) { return mpi.ibarrier((handle)comm, REQ(req)); }

int lathe_mpi_iallreduce(uintptr_t comm, const void *send, void *recv, int count, int type, int op, uintptr_t *req) {
	return mpi.iallreduce(send, recv, count, mpi.types[type], mpi.ops[op], (handle)comm, REQ(req));
}

int lathe_mpi_ibcast(uintptr_t comm, void *buf, int count, int type, int root, uintptr_t *req) {
	return mpi.ibcast(buf, count, mpi.types[type], root, (handle)comm, REQ(req));
}

int lathe_mpi_iallgather(uintptr_t comm, const void *send, int count, void *recv, int type, uintptr_t *req) {
	return mpi.iallgather(send, count, mpi.types[type], recv, count, mpi.types[type], (handle)comm, REQ(req));
}

int lathe_mpi_iallgatherv(uintptr_t comm, const void *send, int count, void *recv, const int *counts,
                          const int *displs, int type, uintptr_t *req) {
	return mpi.iallgatherv(send, count, mpi.types[type], recv, counts, displs, mpi.types[type], (handle)comm, REQ(req));
}

int lathe_mpi_ireduce_scatter(uintptr_t comm, const void *send, void *recv, const int *counts, int type, int op,
                              uintptr_t *req) {
	return mpi.ireduce_scatter(send, recv, counts, mpi.types[type], mpi.ops[op], (handle)comm, REQ(req));
}

int lathe_mpi_isend(uintptr_t comm, const void *buf, int count, int type, int dest, int tag, uintptr_t *req) {
	return mpi.isend(buf, count, mpi.types[type], dest, tag, (handle)comm, REQ(req));
}

int lathe_mpi_irecv(uintptr_t comm, void *buf, int count, int type, int src, int tag, uintptr_t *req) {
	return mpi.irecv(buf, count, mpi.types[type], src, tag, (handle)comm, REQ(req));
}

int lathe_mpi_test(uintptr_t *req, int *done) { return mpi.test(REQ(req), done, NULL); }

// lathe_mpi_cancel cancels a pending receive and frees its request; MPI
// completes a cancelled request on its own.
int lathe_mpi_cancel(uintptr_t *req) {
	int rc = mpi.cancel(REQ(req));
	if (rc != 0) return rc;
	return mpi.request_free(REQ(req));
}

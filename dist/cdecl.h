// Every C declaration of package dist, written from the MPI 3.1 standard,
// Open MPI 4.1's ABI and NCCL's nccl.h documentation so that no header of
// either library is needed to build: the libraries are opened with dlopen
// at run time (mpi_shim.c, nccl_shim.c) and each entry point is looked up
// with dlsym into a table of function pointers.
//
// Open MPI's handles (MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler,
// MPI_Request) are pointers: the predefined ones are the addresses of
// global objects (ompi_mpi_comm_world, ompi_mpi_float, ompi_mpi_op_sum,
// ...), found with dlsym like the functions. Go sees every handle as a
// uintptr_t and every type and op as a small code, so no C type leaves
// the package's cgo files.

#include <stddef.h>
#include <stdint.h>

// ---- MPI ----

// Element types and reduction ops as codes (mpi.go's tables).
enum {
	LATHE_MPI_FLOAT = 0, LATHE_MPI_DOUBLE, LATHE_MPI_INT8, LATHE_MPI_UINT8, LATHE_MPI_INT16,
	LATHE_MPI_UINT16, LATHE_MPI_INT32, LATHE_MPI_INT64, LATHE_MPI_BYTE, LATHE_MPI_NTYPES
};
enum { LATHE_MPI_SUM = 0, LATHE_MPI_MAX, LATHE_MPI_MIN, LATHE_MPI_NOPS };

// lathe_mpi_open loads the library at path; NULL on success, else what
// failed (dlerror's text or the missing symbol's name).
const char *lathe_mpi_open(const char *path);
int lathe_mpi_version(int *major, int *minor);
int lathe_mpi_library_version(char *buf, int len);
int lathe_mpi_initialized(int *flag);
int lathe_mpi_finalized(int *flag);
int lathe_mpi_init_thread(int required, int *provided);
int lathe_mpi_finalize(void);
// lathe_mpi_comm_idup_world starts duplicating MPI_COMM_WORLD into a
// communicator whose errors are returned, not fatal; the new handle is
// written to *slot (C memory that the caller frees) when req completes.
int lathe_mpi_comm_idup_world(uintptr_t **slot, uintptr_t *req);
int lathe_mpi_comm_set_errors_return(uintptr_t comm);
int lathe_mpi_comm_free(uintptr_t *comm);
int lathe_mpi_comm_rank(uintptr_t comm, int *rank);
int lathe_mpi_comm_size(uintptr_t comm, int *size);
void lathe_mpi_error_string(int code, char *buf, int len);

// The non-blocking calls: each starts an operation and stores its request,
// which lathe_mpi_test polls. Buffers must stay put until it completes.
int lathe_mpi_ibarrier(uintptr_t comm, uintptr_t *req);
int lathe_mpi_iallreduce(uintptr_t comm, const void *send, void *recv, int count, int type, int op, uintptr_t *req);
int lathe_mpi_ibcast(uintptr_t comm, void *buf, int count, int type, int root, uintptr_t *req);
int lathe_mpi_iallgather(uintptr_t comm, const void *send, int count, void *recv, int type, uintptr_t *req);
int lathe_mpi_iallgatherv(uintptr_t comm, const void *send, int count, void *recv, const int *counts,
	const int *displs, int type, uintptr_t *req);
int lathe_mpi_ireduce_scatter(uintptr_t comm, const void *send, void *recv, const int *counts, int type, int op,
	uintptr_t *req);
int lathe_mpi_isend(uintptr_t comm, const void *buf, int count, int type, int dest, int tag, uintptr_t *req);
int lathe_mpi_irecv(uintptr_t comm, void *buf, int count, int type, int src, int tag, uintptr_t *req);
int lathe_mpi_test(uintptr_t *req, int *done);
int lathe_mpi_cancel(uintptr_t *req);

// ---- NCCL ----

// ncclDataType_t and ncclRedOp_t values (nccl.h, NCCL 2.x), and
// ncclResult_t's: 0 is ncclSuccess, 7 ncclInProgress.
enum {
	LATHE_NCCL_INT8 = 0, LATHE_NCCL_UINT8 = 1, LATHE_NCCL_INT32 = 2, LATHE_NCCL_UINT32 = 3, LATHE_NCCL_INT64 = 4,
	LATHE_NCCL_UINT64 = 5, LATHE_NCCL_FLOAT16 = 6, LATHE_NCCL_FLOAT32 = 7, LATHE_NCCL_FLOAT64 = 8, LATHE_NCCL_BFLOAT16 = 9,
};
enum { LATHE_NCCL_SUM = 0, LATHE_NCCL_PROD = 1, LATHE_NCCL_MAX = 2, LATHE_NCCL_MIN = 3, LATHE_NCCL_AVG = 4 };
enum { LATHE_NCCL_UNIQUE_ID_BYTES = 128 }; // NCCL_UNIQUE_ID_BYTES: ncclUniqueId is a struct of that many chars

// lathe_nccl_open loads the library at path; NULL on success, else what
// failed. Device addresses are 64-bit (CUdeviceptr), comms and streams
// opaque pointers carried as uintptr_t.
const char *lathe_nccl_open(const char *path);
int lathe_nccl_version(int *version);
const char *lathe_nccl_error_string(int result);
int lathe_nccl_get_unique_id(char *id);
int lathe_nccl_comm_init_rank(uintptr_t *comm, int nranks, const char *id, int rank);
int lathe_nccl_comm_destroy(uintptr_t comm);
int lathe_nccl_comm_abort(uintptr_t comm);
int lathe_nccl_comm_async_error(uintptr_t comm, int *result);
int lathe_nccl_group_start(void);
int lathe_nccl_group_end(void);
int lathe_nccl_all_reduce(uint64_t send, uint64_t recv, size_t count, int type, int op, uintptr_t comm, uintptr_t stream);
int lathe_nccl_broadcast(uint64_t send, uint64_t recv, size_t count, int type, int root, uintptr_t comm, uintptr_t stream);
int lathe_nccl_all_gather(uint64_t send, uint64_t recv, size_t count, int type, uintptr_t comm, uintptr_t stream);
int lathe_nccl_reduce_scatter(uint64_t send, uint64_t recv, size_t count, int type, int op, uintptr_t comm, uintptr_t stream);
int lathe_nccl_send(uint64_t send, size_t count, int type, int peer, uintptr_t comm, uintptr_t stream);
int lathe_nccl_recv(uint64_t recv, size_t count, int type, int peer, uintptr_t comm, uintptr_t stream);

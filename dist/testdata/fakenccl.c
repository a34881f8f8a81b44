// A stand-in for libnccl.so.2, built by nccl_test.go: a clique in host
// memory (a "device address" is a host pointer), with nccl.h's
// signatures, that refuses what NCCL refuses and what lathe must never
// do: a unique id other than one ncclGetUniqueId made (so one that was
// not passed by value intact), a rank outside the clique, an unknown
// datatype or op, a null stream (lathe queues on the tensor's stream, not
// the legacy default one), a destroyed or aborted communicator, and p2p
// outside a group. Each collective copies exactly count elements of the
// datatype's size, so a wrong datatype shows as bytes written past a
// buffer or left unwritten.
//
// A clique of one copies. A clique of several processes on one machine
// (TestEmulatedNCCLRanks) meets in a file under /dev/shm that the unique id
// names: each rank writes its part into its slot, all wait at a barrier,
// each computes its result from the slots (reductions in rank order), and
// all wait again. Its reductions take the integer types and float32 and
// float64 (dist reduces the 16-bit floats in float32); it has no
// point-to-point calls.
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { SUCCESS = 0, INTERNAL = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct {
	unsigned magic;
	int alive;
	int rank, nranks;
	int fd;               // the clique's file, for more than one rank
	char path[64];
	unsigned char *shm;   // mapped: two ints (arrived, generation), then the slots
	size_t mapped;
} comm;
static const char magic_id[] = "lathe-fake-nccl";
static int ids;

static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2}; // ncclInt8 .. ncclBfloat16

int ncclGetVersion(int *v) { *v = 21903; return SUCCESS; }

const char *ncclGetErrorString(int r) {
	switch (r) {
	case SUCCESS: return "no error";
	case INTERNAL: return "internal error - please report this issue to the NCCL developers";
	case INVALID_ARGUMENT: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	}
	return "unknown result code";
}

int ncclGetUniqueId(ncclUniqueId *id) {
	memset(id, 0, sizeof *id);
	memcpy(id->internal, magic_id, sizeof magic_id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t stamp[2] = {(uint64_t)getpid(), (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec};
	memcpy(id->internal + 16, stamp, sizeof stamp); // names the clique's file
	id->internal[127] = (char)(++ids);
	return SUCCESS;
}

// header is the two ints at the start of a clique's file.
#define HEADER 64

int ncclCommInitRank(comm **c, int nranks, ncclUniqueId id, int rank) {
	if (memcmp(id.internal, magic_id, sizeof magic_id) != 0 || id.internal[127] == 0) return INVALID_ARGUMENT;
	if (nranks < 1 || rank < 0 || rank >= nranks) return INVALID_ARGUMENT;
	comm *k = calloc(1, sizeof *k);
	k->magic = 0x1a7e;
	k->alive = 1;
	k->rank = rank;
	k->nranks = nranks;
	k->fd = -1;
	if (nranks > 1) {
		uint64_t stamp[2];
		memcpy(stamp, id.internal + 16, sizeof stamp);
		snprintf(k->path, sizeof k->path, "/dev/shm/lathe-fakenccl-%llx-%llx", (unsigned long long)stamp[0], (unsigned long long)stamp[1]);
		k->fd = open(k->path, O_RDWR | O_CREAT, 0600);
		if (k->fd < 0) { free(k); return INTERNAL; }
	}
	*c = k;
	return SUCCESS;
}

// ensure maps at least the header and n bytes of slots.
static int ensure(comm *c, size_t n) {
	size_t want = HEADER + n;
	struct stat st;
	if (fstat(c->fd, &st) != 0) return INTERNAL;
	if ((size_t)st.st_size < want && ftruncate(c->fd, (off_t)want) != 0) return INTERNAL;
	if (c->mapped >= want) return SUCCESS;
	if (c->shm) munmap(c->shm, c->mapped);
	c->shm = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (c->shm == MAP_FAILED) { c->shm = NULL; c->mapped = 0; return INTERNAL; }
	c->mapped = want;
	return SUCCESS;
}

// barrier returns once every rank of the clique has called it (or, after
// 30 s, fails: a rank is gone).
static int barrier(comm *c) {
	int *arrived = (int *)c->shm, *gen = arrived + 1;
	int g = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(arrived, 1, __ATOMIC_ACQ_REL) == c->nranks) {
		__atomic_store_n(arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(gen, g + 1, __ATOMIC_RELEASE);
		return SUCCESS;
	}
	time_t end = time(NULL) + 30;
	while (__atomic_load_n(gen, __ATOMIC_ACQUIRE) == g) {
		if (time(NULL) > end) return INTERNAL;
		sched_yield();
	}
	return SUCCESS;
}

static unsigned char *slot(comm *c, int r, size_t n) { return c->shm + HEADER + (size_t)r * n; }

#define REDUCE(T)                                                                               \
	{                                                                                           \
		T *d = (T *)dst;                                                                        \
		const T *s = (const T *)src;                                                            \
		for (size_t i = 0; i < count; i++) {                                                    \
			T a = d[i], b = s[i];                                                               \
			switch (op) {                                                                       \
			case 0: case 4: d[i] = a + b; break;                                                \
			case 1: d[i] = a * b; break;                                                        \
			case 2: d[i] = (a > b || a != a) ? a : b; break;                                    \
			case 3: d[i] = (a < b || a != a) ? a : b; break;                                    \
			}                                                                                   \
		}                                                                                       \
		return SUCCESS;                                                                         \
	}

// reduce_into is dst op= src, count elements of type.
static int reduce_into(void *dst, const void *src, size_t count, int type, int op) {
	switch (type) {
	case 0: REDUCE(int8_t)
	case 1: REDUCE(uint8_t)
	case 2: REDUCE(int32_t)
	case 3: REDUCE(uint32_t)
	case 4: REDUCE(int64_t)
	case 5: REDUCE(uint64_t)
	case 7: REDUCE(float)
	case 8: REDUCE(double)
	}
	return INVALID_USAGE; // the 16-bit floats: dist reduces them in float32
}

// reduced is into the reduction in rank order of each rank's n bytes at
// offset off of its slot of size bytes.
static int reduced(comm *c, void *into, size_t size, size_t off, size_t count, int type, int op) {
	size_t n = count * sizes[type];
	if (n) memcpy(into, slot(c, 0, size) + off, n);
	for (int r = 1; r < c->nranks; r++) {
		int rc = reduce_into(into, slot(c, r, size) + off, count, type, op);
		if (rc) return rc;
	}
	if (op == 4 && type >= 7) { // avg
		for (size_t i = 0; i < count; i++) {
			if (type == 7) ((float *)into)[i] /= (float)c->nranks;
			else ((double *)into)[i] /= (double)c->nranks;
		}
	}
	return SUCCESS;
}

static int usable(comm *c, void *stream) {
	if (!c || c->magic != 0x1a7e || !c->alive) return INVALID_ARGUMENT;
	if (!stream) return INVALID_USAGE;
	return SUCCESS;
}

int ncclCommGetAsyncError(comm *c, int *r) {
	if (!c || c->magic != 0x1a7e) return INVALID_ARGUMENT;
	*r = SUCCESS;
	return SUCCESS;
}

int ncclCommAbort(comm *c) {
	if (!c || c->magic != 0x1a7e) return INVALID_ARGUMENT;
	c->alive = 0;
	return SUCCESS;
}

int ncclCommDestroy(comm *c) {
	int rc = ncclCommAbort(c);
	if (rc == SUCCESS && c->fd >= 0) {
		if (c->shm) munmap(c->shm, c->mapped);
		close(c->fd);
		unlink(c->path); // the first rank to leave takes the name; the others keep their mappings
		c->fd = -1, c->shm = NULL;
	}
	return rc;
}

static int check(comm *c, const void *send, void *recv, size_t count, int type, int op, void *stream) {
	int rc = usable(c, stream);
	if (rc) return rc;
	if (type < 0 || type > 9 || op < 0 || op > 4) return INVALID_ARGUMENT;
	if (count > 0 && (!send || !recv)) return INVALID_ARGUMENT;
	return SUCCESS;
}

static int copy(const void *send, void *recv, size_t count, int type) {
	if (count) memmove(recv, send, count * sizes[type]);
	return SUCCESS;
}

// exchange runs one collective of a clique of several: each rank writes
// its part (size bytes from mine) to its slot, then computes its result
// from the slots between two barriers.
static int exchange(comm *c, const void *mine, size_t size, int (*result)(comm *, size_t, void *), void *arg) {
	int rc = ensure(c, (size_t)c->nranks * size);
	if (rc) return rc;
	if (size) memcpy(slot(c, c->rank, size), mine, size);
	if ((rc = barrier(c))) return rc;
	if ((rc = result(c, size, arg))) return rc;
	return barrier(c);
}

struct args { void *recv; size_t count; int type, op, root; };

static int all_reduce_result(comm *c, size_t size, void *p) {
	struct args *a = p;
	return reduced(c, a->recv, size, 0, a->count, a->type, a->op);
}

static int broadcast_result(comm *c, size_t size, void *p) {
	struct args *a = p;
	if (size) memcpy(a->recv, slot(c, a->root, size), size);
	return SUCCESS;
}

static int all_gather_result(comm *c, size_t size, void *p) {
	struct args *a = p;
	if (size) memcpy(a->recv, slot(c, 0, size), (size_t)c->nranks * size);
	return SUCCESS;
}

static int reduce_scatter_result(comm *c, size_t size, void *p) {
	struct args *a = p;
	return reduced(c, a->recv, size, (size_t)c->rank * a->count * sizes[a->type], a->count, a->type, a->op);
}

int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, op, stream);
	if (rc || c->nranks == 1) return rc ? rc : copy(s, r, n, type);
	struct args a = {r, n, type, op, 0};
	return exchange(c, s, n * sizes[type], all_reduce_result, &a);
}

int ncclBroadcast(const void *s, void *r, size_t n, int type, int root, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, 0, stream);
	if (rc) return rc;
	if (root < 0 || root >= c->nranks) return INVALID_ARGUMENT;
	if (c->nranks == 1) return copy(s, r, n, type);
	struct args a = {r, n, type, 0, root};
	return exchange(c, s, n * sizes[type], broadcast_result, &a);
}

int ncclAllGather(const void *s, void *r, size_t n, int type, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, 0, stream);
	if (rc || c->nranks == 1) return rc ? rc : copy(s, r, n, type);
	struct args a = {r, n, type, 0, 0};
	return exchange(c, s, n * sizes[type], all_gather_result, &a);
}

int ncclReduceScatter(const void *s, void *r, size_t n, int type, int op, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, op, stream);
	if (rc || c->nranks == 1) return rc ? rc : copy(s, r, n, type);
	struct args a = {r, n, type, op, 0};
	return exchange(c, s, (size_t)c->nranks * n * sizes[type], reduce_scatter_result, &a);
}

// Point-to-point: a send and a receive to self, matched at ncclGroupEnd.
static int depth;
static const void *p_send;
static void *p_recv;
static size_t p_sn, p_rn;
static int p_st = -1, p_rt = -1;

int ncclGroupStart(void) { depth++; return SUCCESS; }

int ncclGroupEnd(void) {
	if (depth == 0) return INVALID_USAGE;
	if (--depth > 0) return SUCCESS;
	int rc = SUCCESS;
	if ((p_st >= 0) != (p_rt >= 0)) rc = INVALID_USAGE; // a send to self needs its receive
	else if (p_st >= 0 && (p_sn != p_rn || p_st != p_rt)) rc = INVALID_ARGUMENT;
	else if (p_st >= 0) copy(p_send, p_recv, p_sn, p_st);
	p_st = p_rt = -1;
	return rc;
}

int ncclSend(const void *s, size_t n, int type, int peer, comm *c, void *stream) {
	int rc = check(c, s, (void *)s, n, type, 0, stream);
	if (rc) return rc;
	if (c->nranks > 1 || peer != 0 || depth == 0) return INVALID_USAGE;
	p_send = s, p_sn = n, p_st = type;
	return SUCCESS;
}

int ncclRecv(void *r, size_t n, int type, int peer, comm *c, void *stream) {
	int rc = check(c, r, r, n, type, 0, stream);
	if (rc) return rc;
	if (c->nranks > 1 || peer != 0 || depth == 0) return INVALID_USAGE;
	p_recv = r, p_rn = n, p_rt = type;
	return SUCCESS;
}

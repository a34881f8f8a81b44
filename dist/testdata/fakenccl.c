// A stand-in for libnccl.so.2, built by nccl_test.go: a clique of one rank
// in host memory (a "device address" is a host pointer), with nccl.h's
// signatures, that refuses what NCCL refuses and what lathe must never
// do: a unique id other than one ncclGetUniqueId made (so one that was
// not passed by value intact), a rank outside the clique, an unknown
// datatype or op, a null stream (lathe queues on the tensor's stream, not
// the legacy default one), a destroyed or aborted communicator, and p2p
// outside a group. Each collective copies exactly count elements of the
// datatype's size, so a wrong datatype shows as bytes written past a
// buffer or left unwritten.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { SUCCESS = 0, INTERNAL = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { unsigned magic; int alive; } comm;
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
	id->internal[127] = (char)(++ids);
	return SUCCESS;
}

int ncclCommInitRank(comm **c, int nranks, ncclUniqueId id, int rank) {
	if (memcmp(id.internal, magic_id, sizeof magic_id) != 0 || id.internal[127] == 0) return INVALID_ARGUMENT;
	if (nranks < 1 || rank < 0 || rank >= nranks) return INVALID_ARGUMENT;
	if (nranks != 1) return INVALID_USAGE; // the stand-in is a clique of one
	*c = calloc(1, sizeof **c);
	(*c)->magic = 0x1a7e;
	(*c)->alive = 1;
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

int ncclCommDestroy(comm *c) { return ncclCommAbort(c); }

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

int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, op, stream);
	return rc ? rc : copy(s, r, n, type);
}

int ncclBroadcast(const void *s, void *r, size_t n, int type, int root, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, 0, stream);
	if (rc) return rc;
	if (root != 0) return INVALID_ARGUMENT;
	return copy(s, r, n, type);
}

int ncclAllGather(const void *s, void *r, size_t n, int type, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, 0, stream);
	return rc ? rc : copy(s, r, n, type);
}

int ncclReduceScatter(const void *s, void *r, size_t n, int type, int op, comm *c, void *stream) {
	int rc = check(c, s, r, n, type, op, stream);
	return rc ? rc : copy(s, r, n, type);
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
	if (peer != 0 || depth == 0) return INVALID_USAGE;
	p_send = s, p_sn = n, p_st = type;
	return SUCCESS;
}

int ncclRecv(void *r, size_t n, int type, int peer, comm *c, void *stream) {
	int rc = check(c, r, r, n, type, 0, stream);
	if (rc) return rc;
	if (peer != 0 || depth == 0) return INVALID_USAGE;
	p_recv = r, p_rn = n, p_rt = type;
	return SUCCESS;
}

//go:build cgo

// The C half of the wgpu backend: Dawn opened with dlopen, and the few
// multi-call sequences (instance, adapter, device; a compute pass; a
// read-back) done here so that each costs the Go side one cgo call. The Go
// half is dawn.go, one thin wrapper per function.
// Callbacks write into C memory (struct lw_wait, struct lw_device), never
// into Go memory, and never call back into Go.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdecl.h"

// The function table, filled by lw_open.
#define LW_FUNCS(X)                                                                                                   \
	X(WGPUInstance, wgpuCreateInstance, (const WGPUInstanceDescriptor *))                                            \
	X(WGPUFuture, wgpuInstanceRequestAdapter, (WGPUInstance, const WGPURequestAdapterOptions *, WGPURequestAdapterCallbackInfo)) \
	X(WGPUEnum, wgpuInstanceWaitAny, (WGPUInstance, size_t, WGPUFutureWaitInfo *, uint64_t))                         \
	X(WGPUEnum, wgpuAdapterGetInfo, (WGPUAdapter, WGPUAdapterInfo *))                                                \
	X(void, wgpuAdapterInfoFreeMembers, (WGPUAdapterInfo))                                                           \
	X(WGPUEnum, wgpuAdapterGetLimits, (WGPUAdapter, WGPULimits *))                                                   \
	X(WGPUFuture, wgpuAdapterRequestDevice, (WGPUAdapter, const WGPUDeviceDescriptor *, WGPURequestDeviceCallbackInfo)) \
	X(WGPUEnum, wgpuDeviceGetLimits, (WGPUDevice, WGPULimits *))                                                     \
	X(WGPUQueue, wgpuDeviceGetQueue, (WGPUDevice))                                                                   \
	X(WGPUBuffer, wgpuDeviceCreateBuffer, (WGPUDevice, const WGPUBufferDescriptor *))                                \
	X(void, wgpuBufferDestroy, (WGPUBuffer))                                                                         \
	X(void, wgpuBufferRelease, (WGPUBuffer))                                                                         \
	X(WGPUFuture, wgpuBufferMapAsync, (WGPUBuffer, WGPUFlags, size_t, size_t, WGPUBufferMapCallbackInfo))            \
	X(const void *, wgpuBufferGetConstMappedRange, (WGPUBuffer, size_t, size_t))                                     \
	X(void, wgpuBufferUnmap, (WGPUBuffer))                                                                           \
	X(void, wgpuQueueWriteBuffer, (WGPUQueue, WGPUBuffer, uint64_t, const void *, size_t))                           \
	X(void, wgpuQueueSubmit, (WGPUQueue, size_t, const WGPUCommandBuffer *))                                         \
	X(WGPUFuture, wgpuQueueOnSubmittedWorkDone, (WGPUQueue, WGPUQueueWorkDoneCallbackInfo))                          \
	X(WGPUCommandEncoder, wgpuDeviceCreateCommandEncoder, (WGPUDevice, const WGPUCommandEncoderDescriptor *))        \
	X(void, wgpuCommandEncoderCopyBufferToBuffer, (WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t, uint64_t)) \
	X(WGPUComputePassEncoder, wgpuCommandEncoderBeginComputePass, (WGPUCommandEncoder, const WGPUComputePassDescriptor *)) \
	X(WGPUCommandBuffer, wgpuCommandEncoderFinish, (WGPUCommandEncoder, const void *))                               \
	X(void, wgpuCommandEncoderRelease, (WGPUCommandEncoder))                                                         \
	X(void, wgpuCommandBufferRelease, (WGPUCommandBuffer))                                                           \
	X(void, wgpuComputePassEncoderSetPipeline, (WGPUComputePassEncoder, WGPUComputePipeline))                        \
	X(void, wgpuComputePassEncoderSetBindGroup, (WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t, const uint32_t *)) \
	X(void, wgpuComputePassEncoderDispatchWorkgroups, (WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t))        \
	X(void, wgpuComputePassEncoderEnd, (WGPUComputePassEncoder))                                                     \
	X(void, wgpuComputePassEncoderRelease, (WGPUComputePassEncoder))                                                 \
	X(WGPUShaderModule, wgpuDeviceCreateShaderModule, (WGPUDevice, const WGPUShaderModuleDescriptor *))              \
	X(void, wgpuShaderModuleRelease, (WGPUShaderModule))                                                             \
	X(WGPUComputePipeline, wgpuDeviceCreateComputePipeline, (WGPUDevice, const WGPUComputePipelineDescriptor *))     \
	X(WGPUBindGroupLayout, wgpuComputePipelineGetBindGroupLayout, (WGPUComputePipeline, uint32_t))                   \
	X(WGPUBindGroup, wgpuDeviceCreateBindGroup, (WGPUDevice, const WGPUBindGroupDescriptor *))                       \
	X(void, wgpuBindGroupRelease, (WGPUBindGroup))                                                                   \
	X(void, wgpuBindGroupLayoutRelease, (WGPUBindGroupLayout))                                                       \
	X(void, wgpuDevicePushErrorScope, (WGPUDevice, WGPUEnum))                                                        \
	X(WGPUFuture, wgpuDevicePopErrorScope, (WGPUDevice, WGPUPopErrorScopeCallbackInfo))

#define LW_DECLARE(ret, name, args) static ret(*p_##name) args;
LW_FUNCS(LW_DECLARE)

static void *lib;
static char open_error[1024];

const char *lw_preload(const char *path) {
	// Never closed: the Vulkan driver that needs it stays loaded too.
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) {
		snprintf(open_error, sizeof open_error, "%s", dlerror());
		return open_error;
	}
	return NULL;
}

const char *lw_open(const char *path) {
	if (lib != NULL) {
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(open_error, sizeof open_error, "%s", dlerror());
		return open_error;
	}
#define LW_LOOKUP(ret, name, args)                                                  \
	p_##name = (ret(*) args)dlsym(h, #name);                                        \
	if (p_##name == NULL) {                                                         \
		snprintf(open_error, sizeof open_error, "%s has no symbol %s", path, #name); \
		dlclose(h);                                                                 \
		return open_error;                                                          \
	}
	LW_FUNCS(LW_LOOKUP)
	lib = h;
	return NULL;
}

// How long a wait for Dawn may take before it is an error: long enough for
// a big read-back on lavapipe, short enough that a hung driver is reported.
static const uint64_t wait_ns = 120ull * 1000 * 1000 * 1000;

// lw_wait_state is what a callback hands back to the code that waits for it.
typedef struct lw_wait_state {
	int done;
	WGPUEnum status;
	WGPUEnum type;
	void *object;
	char message[1024];
} lw_wait_state;

static void copy_view(char *dst, size_t n, WGPUStringView v) {
	if (v.data == NULL) {
		dst[0] = 0;
		return;
	}
	size_t len = v.length == LW_STRLEN ? strlen(v.data) : v.length;
	if (len >= n) {
		len = n - 1;
	}
	memcpy(dst, v.data, len);
	dst[len] = 0;
}

static void on_adapter(WGPUEnum status, WGPUAdapter adapter, WGPUStringView message, void *u1, void *u2) {
	lw_wait_state *w = u1;
	(void)u2;
	w->status = status;
	w->object = adapter;
	copy_view(w->message, sizeof w->message, message);
	w->done = 1;
}

static void on_device(WGPUEnum status, WGPUDevice device, WGPUStringView message, void *u1, void *u2) {
	lw_wait_state *w = u1;
	(void)u2;
	w->status = status;
	w->object = device;
	copy_view(w->message, sizeof w->message, message);
	w->done = 1;
}

static void on_map(WGPUEnum status, WGPUStringView message, void *u1, void *u2) {
	lw_wait_state *w = u1;
	(void)u2;
	w->status = status;
	copy_view(w->message, sizeof w->message, message);
	w->done = 1;
}

static void on_pop(WGPUEnum status, WGPUEnum type, WGPUStringView message, void *u1, void *u2) {
	lw_wait_state *w = u1;
	(void)u2;
	w->status = status;
	w->type = type;
	copy_view(w->message, sizeof w->message, message);
	w->done = 1;
}

static void on_done(WGPUEnum status, WGPUStringView message, void *u1, void *u2) {
	lw_wait_state *w = u1;
	(void)u2;
	w->status = status;
	copy_view(w->message, sizeof w->message, message);
	w->done = 1;
}

// A submission's completion: lw_flush and lw_wait only wait for it, and a
// failure is a lost device, which on_lost reports.
static void on_submitted(WGPUEnum status, WGPUStringView message, void *u1, void *u2) {
	(void)status;
	(void)message;
	(void)u1;
	(void)u2;
}

// Errors that no scope caught: kept (the first one) until the Go side takes it.
static void on_error(WGPUDevice const *device, WGPUEnum type, WGPUStringView message, void *u1, void *u2) {
	lw_device *d = u1;
	(void)device;
	(void)u2;
	if (d->error_type == 0) {
		d->error_type = (int)type;
		copy_view(d->error_message, sizeof d->error_message, message);
	}
}

static void on_lost(WGPUDevice const *device, WGPUEnum reason, WGPUStringView message, void *u1, void *u2) {
	lw_device *d = u1;
	(void)device;
	(void)u2;
	// Dropping the device at exit cancels the callback: not a loss.
	if (reason == WGPUDeviceLostReason_CallbackCancelled || reason == WGPUDeviceLostReason_Destroyed) {
		return;
	}
	d->lost = 1;
	copy_view(d->lost_message, sizeof d->lost_message, message);
}

// await waits for one future; 0 when it completed.
static int await(lw_device *d, WGPUFuture f) {
	WGPUFutureWaitInfo info = {f, 0};
	WGPUEnum s = p_wgpuInstanceWaitAny(d->instance, 1, &info, wait_ns);
	return s == WGPUWaitStatus_Success && info.completed ? 0 : (int)s + 100;
}

int lw_init(lw_device *d, char *msg, size_t msglen) {
	WGPUInstanceDescriptor idesc = {0};
	// Without timedWaitAnyEnable, every WaitAny with a timeout fails.
	idesc.capabilities.timedWaitAnyEnable = 1;
	idesc.capabilities.timedWaitAnyMaxCount = 8;
	d->instance = p_wgpuCreateInstance(&idesc);
	if (d->instance == NULL) {
		snprintf(msg, msglen, "wgpuCreateInstance returned no instance");
		return 1;
	}

	lw_wait_state w = {0};
	WGPURequestAdapterOptions opts = {0};
	opts.featureLevel = WGPUFeatureLevel_Core;
	WGPURequestAdapterCallbackInfo acb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_adapter, &w, NULL};
	if (await(d, p_wgpuInstanceRequestAdapter(d->instance, &opts, acb)) != 0 || !w.done) {
		snprintf(msg, msglen, "no answer to the adapter request");
		return 2;
	}
	if (w.status != WGPURequestAdapterStatus_Success || w.object == NULL) {
		snprintf(msg, msglen, "no adapter: %s", w.message[0] ? w.message : "Dawn gave no reason");
		return 3;
	}
	d->adapter = w.object;

	WGPUAdapterInfo info = {0};
	if (p_wgpuAdapterGetInfo(d->adapter, &info) != WGPUStatus_Success) {
		snprintf(msg, msglen, "wgpuAdapterGetInfo failed");
		return 4;
	}
	d->backend = info.backendType;
	d->adapterType = info.adapterType;
	char dev[240], descr[240];
	copy_view(dev, sizeof dev, info.device);
	copy_view(descr, sizeof descr, info.description);
	snprintf(d->description, sizeof d->description, "%s%s%s%s", dev, descr[0] ? " (" : "", descr, descr[0] ? ")" : "");
	p_wgpuAdapterInfoFreeMembers(info);
	// The Null backend "succeeds" and computes nothing: refuse it.
	if (d->backend == WGPUBackendType_Null) {
		snprintf(msg, msglen, "the only adapter is Dawn's Null backend (%s), which computes nothing: no Vulkan driver was found", d->description);
		return 5;
	}

	WGPULimits limits = {0};
	if (p_wgpuAdapterGetLimits(d->adapter, &limits) != WGPUStatus_Success) {
		snprintf(msg, msglen, "wgpuAdapterGetLimits failed");
		return 6;
	}
	WGPUDeviceDescriptor ddesc = {0};
	// Ask for everything the adapter has: the defaults cap storage
	// bindings at 128 MiB and 8 buffers per stage.
	ddesc.requiredLimits = &limits;
	ddesc.deviceLostCallbackInfo = (WGPUDeviceLostCallbackInfo){NULL, WGPUCallbackMode_WaitAnyOnly, on_lost, d, NULL};
	ddesc.uncapturedErrorCallbackInfo = (WGPUUncapturedErrorCallbackInfo){NULL, on_error, d, NULL};
	memset(&w, 0, sizeof w);
	WGPURequestDeviceCallbackInfo dcb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_device, &w, NULL};
	if (await(d, p_wgpuAdapterRequestDevice(d->adapter, &ddesc, dcb)) != 0 || !w.done) {
		snprintf(msg, msglen, "no answer to the device request");
		return 7;
	}
	if (w.status != WGPURequestDeviceStatus_Success || w.object == NULL) {
		snprintf(msg, msglen, "no device: %s", w.message[0] ? w.message : "Dawn gave no reason");
		return 8;
	}
	d->device = w.object;
	d->queue = p_wgpuDeviceGetQueue(d->device);
	d->limits.nextInChain = NULL;
	if (p_wgpuDeviceGetLimits(d->device, &d->limits) != WGPUStatus_Success) {
		d->limits = limits;
	}
	return 0;
}

WGPUBuffer lw_buffer(lw_device *d, uint64_t size, WGPUFlags usage) {
	WGPUBufferDescriptor desc = {0};
	desc.usage = usage;
	desc.size = size;
	return p_wgpuDeviceCreateBuffer(d->device, &desc);
}

void lw_buffer_free(WGPUBuffer b) {
	p_wgpuBufferDestroy(b);
	p_wgpuBufferRelease(b);
}

// end_pass ends the open compute pass, if any, so that the encoder can
// record something else or finish.
static void end_pass(lw_device *d) {
	if (d->pass != NULL) {
		p_wgpuComputePassEncoderEnd(d->pass);
		p_wgpuComputePassEncoderRelease(d->pass);
		d->pass = NULL;
	}
}

// reap_oldest waits for the oldest submission still tracked and forgets
// it. A wait that times out forgets it too: the next lw_wait reports a
// device that does not finish its work. Waiting is also what lets Dawn
// recycle what finished work held (bind groups' descriptor sets, upload
// staging): lavapipe maps memory for each descriptor set, so a program
// that recorded ops without ever waiting reached the kernel's limit on
// mappings (vm.max_map_count, 65530) after some 60 000 ops and crashed.
static void reap_oldest(lw_device *d) {
	await(d, d->inflight[0]);
	d->inflight_n--;
	memmove(&d->inflight[0], &d->inflight[1], (size_t)d->inflight_n * sizeof d->inflight[0]);
}

void lw_flush(lw_device *d) {
	// The ops' parameters, in one write that the queue runs before the
	// commands submitted below; the arena is free again after it, since
	// the queue runs later writes after this submission.
	if (d->params_next > 0) {
		p_wgpuQueueWriteBuffer(d->queue, d->params_buf, 0, d->params_host, d->params_next);
		d->params_next = 0;
	}
	if (d->encoder == NULL) {
		return;
	}
	end_pass(d);
	WGPUCommandBuffer cb = p_wgpuCommandEncoderFinish(d->encoder, NULL);
	p_wgpuCommandEncoderRelease(d->encoder);
	d->encoder = NULL;
	d->passes = 0;
	if (cb != NULL) {
		if (d->inflight_n == LW_INFLIGHT) {
			reap_oldest(d);
		}
		p_wgpuQueueSubmit(d->queue, 1, &cb);
		p_wgpuCommandBufferRelease(cb);
		WGPUQueueWorkDoneCallbackInfo done = {NULL, WGPUCallbackMode_WaitAnyOnly, on_submitted, NULL, NULL};
		d->inflight[d->inflight_n++] = p_wgpuQueueOnSubmittedWorkDone(d->queue, done);
	}
}

// A write goes through the queue, which runs it before any command buffer
// submitted after it: flush first, so that ops already recorded read the
// buffer's old contents (a pooled buffer may be reused).
int lw_write(lw_device *d, WGPUBuffer b, uint64_t offset, const void *data, size_t size) {
	lw_flush(d);
	p_wgpuQueueWriteBuffer(d->queue, b, offset, data, size);
	return 0;
}

static WGPUCommandEncoder encoder(lw_device *d) {
	if (d->encoder == NULL) {
		d->encoder = p_wgpuDeviceCreateCommandEncoder(d->device, NULL);
	}
	return d->encoder;
}

int lw_copy(lw_device *d, WGPUBuffer src, uint64_t srcOffset, WGPUBuffer dst, uint64_t dstOffset, uint64_t size) {
	WGPUCommandEncoder e = encoder(d);
	if (e == NULL) {
		return 1;
	}
	end_pass(d);
	p_wgpuCommandEncoderCopyBufferToBuffer(e, src, srcOffset, dst, dstOffset, size);
	d->passes++;
	return 0;
}

int lw_read(lw_device *d, WGPUBuffer src, uint64_t offset, void *dst, size_t size, WGPUBuffer staging, char *msg, size_t msglen) {
	if (lw_copy(d, src, offset, staging, 0, size) != 0) {
		snprintf(msg, msglen, "no command encoder");
		return 1;
	}
	lw_flush(d);
	lw_wait_state w = {0};
	WGPUBufferMapCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_map, &w, NULL};
	int rc = await(d, p_wgpuBufferMapAsync(staging, LW_MAP_READ, 0, size, cb));
	if (rc != 0 || !w.done) {
		snprintf(msg, msglen, "the read-back's map did not finish (wait status %d)", rc - 100);
		return 2;
	}
	if (w.status != WGPUMapAsyncStatus_Success) {
		snprintf(msg, msglen, "mapping the read-back buffer failed: %s", w.message);
		return 3;
	}
	const void *p = p_wgpuBufferGetConstMappedRange(staging, 0, size);
	if (p == NULL) {
		p_wgpuBufferUnmap(staging);
		snprintf(msg, msglen, "the mapped read-back range is empty");
		return 4;
	}
	memcpy(dst, p, size);
	p_wgpuBufferUnmap(staging);
	return 0;
}

int lw_wait(lw_device *d, char *msg, size_t msglen) {
	lw_flush(d);
	lw_wait_state w = {0};
	WGPUQueueWorkDoneCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_done, &w, NULL};
	int rc = await(d, p_wgpuQueueOnSubmittedWorkDone(d->queue, cb));
	if (rc != 0 || !w.done) {
		snprintf(msg, msglen, "the queue did not finish its work (wait status %d)", rc - 100);
		return 1;
	}
	if (w.status != WGPUQueueWorkDoneStatus_Success) {
		snprintf(msg, msglen, "the queue's work failed (status %u): %s", w.status, w.message);
		return 2;
	}
	// Every submission is done: their futures complete at once.
	while (d->inflight_n > 0) {
		reap_oldest(d);
	}
	return 0;
}

// pop_scope returns the error caught by the innermost scope, if any.
static int pop_scope(lw_device *d, char *msg, size_t msglen) {
	lw_wait_state w = {0};
	WGPUPopErrorScopeCallbackInfo cb = {NULL, WGPUCallbackMode_WaitAnyOnly, on_pop, &w, NULL};
	if (await(d, p_wgpuDevicePopErrorScope(d->device, cb)) != 0 || !w.done) {
		snprintf(msg, msglen, "no answer from the error scope");
		return 1;
	}
	if (w.status == WGPUPopErrorScopeStatus_Success && w.type != WGPUErrorType_NoError) {
		snprintf(msg, msglen, "%s", w.message);
		return 2;
	}
	return 0;
}

WGPUComputePipeline lw_pipeline(lw_device *d, const char *code, size_t codelen, const char *label, char *msg, size_t msglen) {
	p_wgpuDevicePushErrorScope(d->device, WGPUErrorFilter_Validation);
	WGPUShaderSourceWGSL src = {{NULL, WGPUSType_ShaderSourceWGSL}, {code, codelen}};
	WGPUShaderModuleDescriptor mdesc = {&src.chain, {label, LW_STRLEN}};
	WGPUShaderModule m = p_wgpuDeviceCreateShaderModule(d->device, &mdesc);
	WGPUComputePipelineDescriptor pdesc = {0};
	pdesc.label = (WGPUStringView){label, LW_STRLEN};
	pdesc.compute.module = m;
	pdesc.compute.entryPoint = (WGPUStringView){"main", LW_STRLEN};
	WGPUComputePipeline p = m == NULL ? NULL : p_wgpuDeviceCreateComputePipeline(d->device, &pdesc);
	if (m != NULL) {
		p_wgpuShaderModuleRelease(m);
	}
	if (pop_scope(d, msg, msglen) != 0) {
		return NULL;
	}
	if (p == NULL) {
		snprintf(msg, msglen, "Dawn made no pipeline and gave no reason");
	}
	return p;
}

WGPUBindGroupLayout lw_layout(WGPUComputePipeline p) { return p_wgpuComputePipelineGetBindGroupLayout(p, 0); }

int lw_dispatch(lw_device *d, WGPUComputePipeline p, WGPUBindGroupLayout layout, int n, uint32_t x, uint32_t y, uint32_t z) {
	char *msg = d->dispatch_message;
	size_t msglen = sizeof d->dispatch_message;
	WGPUBindGroupEntry entries[16];
	if (n > 16) {
		snprintf(msg, msglen, "%d bindings, more than 16", n);
		return 1;
	}
	memset(entries, 0, sizeof entries);
	for (int i = 0; i < n; i++) {
		entries[i].binding = (uint32_t)i;
		entries[i].buffer = d->bind_buffers[i];
		entries[i].offset = d->bind_offsets[i];
		entries[i].size = d->bind_sizes[i];
	}
	// A bind group that does not fit the shader would make the whole
	// command encoder invalid, and with it every op recorded before this
	// one. The Go side checked what it can (launch.go); anything Dawn still
	// refuses reaches on_error during the call that finds it, so an error
	// that appears during the creation is this group's: record nothing.
	// (An error scope pushed and popped around it says the same, but its
	// pop waits for Dawn's event loop, tens of microseconds.) Where an
	// error is already pending from earlier work, only a scope can tell
	// them apart.
	int scoped = d->error_type != 0;
	if (scoped) {
		p_wgpuDevicePushErrorScope(d->device, WGPUErrorFilter_Validation);
	}
	WGPUBindGroupDescriptor bdesc = {0};
	bdesc.layout = layout;
	bdesc.entryCount = (size_t)n;
	bdesc.entries = entries;
	WGPUBindGroup group = p_wgpuDeviceCreateBindGroup(d->device, &bdesc);
	int refused = 0;
	if (scoped) {
		refused = pop_scope(d, msg, msglen) != 0;
	} else if (d->error_type != 0) {
		snprintf(msg, msglen, "%s", d->error_message);
		d->error_type = 0;
		refused = 1;
	}
	if (refused || group == NULL) {
		if (group != NULL) {
			p_wgpuBindGroupRelease(group);
		} else if (!refused) {
			snprintf(msg, msglen, "Dawn made no bind group and gave no reason");
		}
		return 2;
	}
	WGPUCommandEncoder e = encoder(d);
	if (e == NULL) {
		p_wgpuBindGroupRelease(group);
		snprintf(msg, msglen, "no command encoder");
		return 3;
	}
	if (d->pass == NULL) {
		d->pass = p_wgpuCommandEncoderBeginComputePass(e, NULL);
		d->passes++;
	}
	p_wgpuComputePassEncoderSetPipeline(d->pass, p);
	p_wgpuComputePassEncoderSetBindGroup(d->pass, 0, group, 0, NULL);
	p_wgpuComputePassEncoderDispatchWorkgroups(d->pass, x, y, z);
	// Dawn keeps what the recorded commands use alive until they ran.
	p_wgpuBindGroupRelease(group);
	return 0;
}

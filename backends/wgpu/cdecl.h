// The part of Dawn's webgpu.h (the build of late June 2025 that the npm
// package bun-webgpu-linux-x64@0.1.7 ships) that lathe uses, declared here
// so that lathe builds without the header: the types, the enum values and
// the struct layouts are the ABI facts of that build; the functions are
// reached through pointers that shim.c looks up with dlsym.
//
// Every struct is declared whole, in the header's member order, because
// Dawn reads them by layout; a struct lathe only passes through is an
// opaque handle.
#ifndef LATHE_WGPU_CDECL_H
#define LATHE_WGPU_CDECL_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t WGPUFlags;
typedef uint32_t WGPUBool;

typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef void *WGPUOpaque; // a handle lathe never creates (sampler, texture view, surface, query set)

// Enums are 32-bit in this ABI; only the values lathe uses are named.
typedef uint32_t WGPUEnum;
enum {
	WGPUBackendType_Undefined = 0, WGPUBackendType_Null = 1, WGPUBackendType_Vulkan = 6,
	WGPUBackendType_OpenGL = 7, WGPUBackendType_OpenGLES = 8,
	WGPUAdapterType_DiscreteGPU = 1, WGPUAdapterType_IntegratedGPU = 2, WGPUAdapterType_CPU = 3,
	WGPUFeatureLevel_Core = 2,
	WGPUCallbackMode_WaitAnyOnly = 1,
	WGPUSType_ShaderSourceWGSL = 2,
	WGPUStatus_Success = 1,
	WGPUWaitStatus_Success = 1, WGPUWaitStatus_TimedOut = 2,
	WGPURequestAdapterStatus_Success = 1,
	WGPURequestDeviceStatus_Success = 1,
	WGPUMapAsyncStatus_Success = 1,
	WGPUPopErrorScopeStatus_Success = 1,
	WGPUQueueWorkDoneStatus_Success = 1,
	WGPUErrorFilter_Validation = 1, WGPUErrorFilter_OutOfMemory = 2, WGPUErrorFilter_Internal = 3,
	WGPUErrorType_NoError = 1, WGPUErrorType_Validation = 2, WGPUErrorType_OutOfMemory = 3,
	WGPUErrorType_Internal = 4, WGPUErrorType_Unknown = 5,
	WGPUDeviceLostReason_Destroyed = 2, WGPUDeviceLostReason_CallbackCancelled = 3,
};

// Buffer usages and map modes are 64-bit flags, static const in the header.
#define LW_USAGE_MAP_READ 0x1ull
#define LW_USAGE_COPY_SRC 0x4ull
#define LW_USAGE_COPY_DST 0x8ull
#define LW_USAGE_STORAGE 0x80ull
#define LW_MAP_READ 0x1ull

#define LW_WHOLE_SIZE UINT64_MAX
#define LW_STRLEN SIZE_MAX

typedef struct WGPUStringView {
	const char *data;
	size_t length;
} WGPUStringView;

typedef struct WGPUChainedStruct {
	struct WGPUChainedStruct *next;
	WGPUEnum sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
	uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
	WGPUFuture future;
	WGPUBool completed;
} WGPUFutureWaitInfo;

typedef struct WGPUInstanceCapabilities {
	WGPUChainedStruct *nextInChain;
	WGPUBool timedWaitAnyEnable;
	size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct WGPUInstanceDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;

typedef struct WGPURequestAdapterOptions {
	WGPUChainedStruct *nextInChain;
	WGPUEnum featureLevel;
	WGPUEnum powerPreference;
	WGPUBool forceFallbackAdapter;
	WGPUEnum backendType;
	WGPUOpaque compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPUAdapterInfo {
	WGPUChainedStruct *nextInChain;
	WGPUStringView vendor;
	WGPUStringView architecture;
	WGPUStringView device;
	WGPUStringView description;
	WGPUEnum backendType;
	WGPUEnum adapterType;
	uint32_t vendorID;
	uint32_t deviceID;
	uint32_t subgroupMinSize;
	uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPULimits {
	WGPUChainedStruct *nextInChain;
	uint32_t maxTextureDimension1D;
	uint32_t maxTextureDimension2D;
	uint32_t maxTextureDimension3D;
	uint32_t maxTextureArrayLayers;
	uint32_t maxBindGroups;
	uint32_t maxBindGroupsPlusVertexBuffers;
	uint32_t maxBindingsPerBindGroup;
	uint32_t maxDynamicUniformBuffersPerPipelineLayout;
	uint32_t maxDynamicStorageBuffersPerPipelineLayout;
	uint32_t maxSampledTexturesPerShaderStage;
	uint32_t maxSamplersPerShaderStage;
	uint32_t maxStorageBuffersPerShaderStage;
	uint32_t maxStorageTexturesPerShaderStage;
	uint32_t maxUniformBuffersPerShaderStage;
	uint64_t maxUniformBufferBindingSize;
	uint64_t maxStorageBufferBindingSize;
	uint32_t minUniformBufferOffsetAlignment;
	uint32_t minStorageBufferOffsetAlignment;
	uint32_t maxVertexBuffers;
	uint64_t maxBufferSize;
	uint32_t maxVertexAttributes;
	uint32_t maxVertexBufferArrayStride;
	uint32_t maxInterStageShaderVariables;
	uint32_t maxColorAttachments;
	uint32_t maxColorAttachmentBytesPerSample;
	uint32_t maxComputeWorkgroupStorageSize;
	uint32_t maxComputeInvocationsPerWorkgroup;
	uint32_t maxComputeWorkgroupSizeX;
	uint32_t maxComputeWorkgroupSizeY;
	uint32_t maxComputeWorkgroupSizeZ;
	uint32_t maxComputeWorkgroupsPerDimension;
	uint32_t maxStorageBuffersInVertexStage;
	uint32_t maxStorageTexturesInVertexStage;
	uint32_t maxStorageBuffersInFragmentStage;
	uint32_t maxStorageTexturesInFragmentStage;
} WGPULimits;

// Callbacks. Userdata are C memory (struct lw_wait below), never Go pointers:
// Dawn keeps them past the call.
typedef void (*WGPURequestAdapterCallback)(WGPUEnum status, WGPUAdapter adapter, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPUEnum status, WGPUDevice device, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUEnum status, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUPopErrorScopeCallback)(WGPUEnum status, WGPUEnum type, WGPUStringView message, void *userdata1, void *userdata2);
// The header of June 2025 that the package's sources carry has no message
// here, but the library it ships passes one (seen: userdata1 arrived in the
// third argument's place), as later webgpu.h versions declare.
typedef void (*WGPUQueueWorkDoneCallback)(WGPUEnum status, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUDeviceLostCallback)(WGPUDevice const *device, WGPUEnum reason, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUUncapturedErrorCallback)(WGPUDevice const *device, WGPUEnum type, WGPUStringView message, void *userdata1, void *userdata2);

// The callback-info structs of this build: {nextInChain, mode, callback,
// userdata1, userdata2}; the uncaptured-error one has no mode.
#define LW_CALLBACK_INFO(name, fn)      \
	typedef struct name {               \
		WGPUChainedStruct *nextInChain; \
		WGPUEnum mode;                  \
		fn callback;                    \
		void *userdata1;                \
		void *userdata2;                \
	} name
LW_CALLBACK_INFO(WGPURequestAdapterCallbackInfo, WGPURequestAdapterCallback);
LW_CALLBACK_INFO(WGPURequestDeviceCallbackInfo, WGPURequestDeviceCallback);
LW_CALLBACK_INFO(WGPUBufferMapCallbackInfo, WGPUBufferMapCallback);
LW_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo, WGPUPopErrorScopeCallback);
LW_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo, WGPUQueueWorkDoneCallback);
LW_CALLBACK_INFO(WGPUDeviceLostCallbackInfo, WGPUDeviceLostCallback);

typedef struct WGPUUncapturedErrorCallbackInfo {
	WGPUChainedStruct *nextInChain;
	WGPUUncapturedErrorCallback callback;
	void *userdata1;
	void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUQueueDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	size_t requiredFeatureCount;
	const WGPUEnum *requiredFeatures;
	const WGPULimits *requiredLimits;
	WGPUQueueDescriptor defaultQueue;
	WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
	WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	WGPUFlags usage;
	uint64_t size;
	WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
	WGPUChainedStruct chain;
	WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUConstantEntry WGPUConstantEntry;

typedef struct WGPUComputeState {
	WGPUChainedStruct *nextInChain;
	WGPUShaderModule module;
	WGPUStringView entryPoint;
	size_t constantCount;
	const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	WGPUPipelineLayout layout;
	WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
	WGPUChainedStruct *nextInChain;
	uint32_t binding;
	WGPUBuffer buffer;
	uint64_t offset;
	uint64_t size;
	WGPUOpaque sampler;
	WGPUOpaque textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	WGPUBindGroupLayout layout;
	size_t entryCount;
	const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUComputePassDescriptor {
	WGPUChainedStruct *nextInChain;
	WGPUStringView label;
	const void *timestampWrites;
} WGPUComputePassDescriptor;

// ---- lathe's shim (shim.c): what the Go side (dawn.go) calls ----

// lw_open loads the library at path and looks up every function lathe
// uses; it returns NULL or a static message naming what failed.
const char *lw_open(const char *path);
// lw_preload loads a library by path, its symbols global, so that a
// library loaded later that needs its soname finds this copy.
const char *lw_preload(const char *path);

// LW_INFLIGHT is the most submissions lw_flush leaves running.
#define LW_INFLIGHT 4

// lw_device is the one instance, adapter, device and queue of the process,
// with the errors Dawn reported through its callbacks since the last take.
typedef struct lw_device {
	WGPUInstance instance;
	WGPUAdapter adapter;
	WGPUDevice device;
	WGPUQueue queue;
	WGPULimits limits;
	WGPUEnum backend, adapterType;
	char description[512];
	// The first uncaptured error since the last lw_take_error, and whether
	// the device was lost (then lost_message says why).
	int error_type;
	char error_message[2048];
	int lost;
	char lost_message[512];
	// The open command encoder that ops are recorded into, and how many
	// commands it holds; submitted by lw_flush. pass is the compute pass
	// open in it, which successive dispatches share (Dawn orders the
	// dispatches of a pass as it orders passes), ended by anything else
	// recorded: a copy or the submission.
	WGPUCommandEncoder encoder;
	int passes;
	WGPUComputePassEncoder pass;
	// The submissions that may still be running, oldest first, as futures
	// of their completion: lw_flush waits for the oldest before it submits
	// past LW_INFLIGHT of them, so that a program that records without ever
	// waiting cannot run ahead of the device without bound (Dawn frees a
	// submission's bind groups and descriptor sets only once a wait has
	// seen it done).
	WGPUFuture inflight[LW_INFLIGHT];
	int inflight_n;
	// The parameter arena (launch.go): params_host holds the parameter
	// words of the ops recorded since the last submission, params_next
	// bytes of them, which lw_flush writes into params_buf with one queue
	// write just before it submits them.
	WGPUBuffer params_buf;
	uint32_t *params_host;
	uint64_t params_next;
	// The bindings of the next lw_dispatch, filled by the Go side, and the
	// message of a dispatch that Dawn refused.
	WGPUBuffer bind_buffers[16];
	uint64_t bind_offsets[16];
	uint64_t bind_sizes[16];
	char dispatch_message[2048];
} lw_device;

// lw_init makes the instance, asks for an adapter (refusing Dawn's Null
// backend), and the device with the adapter's own limits. On failure it
// returns a message in msg (Dawn's own where it gave one) and a nonzero code.
int lw_init(lw_device *d, char *msg, size_t msglen);

WGPUBuffer lw_buffer(lw_device *d, uint64_t size, WGPUFlags usage);
void lw_buffer_free(WGPUBuffer b);
int lw_write(lw_device *d, WGPUBuffer b, uint64_t offset, const void *data, size_t size);
int lw_read(lw_device *d, WGPUBuffer src, uint64_t offset, void *dst, size_t size, WGPUBuffer staging, char *msg, size_t msglen);

// lw_pipeline compiles WGSL (entry point "main") into a compute pipeline
// with its bind group layout made from the shader; NULL and Dawn's message on error.
WGPUComputePipeline lw_pipeline(lw_device *d, const char *code, size_t codelen, const char *label, char *msg, size_t msglen);

// lw_layout returns the layout of p's bind group 0 (made from the shader),
// which the caller keeps as long as p.
WGPUBindGroupLayout lw_layout(WGPUComputePipeline p);

// lw_dispatch records one dispatch in the open compute pass: pipeline p,
// bind group 0 of layout made of the n bindings in d->bind_* (binding i is
// bind_sizes[i] bytes of bind_buffers[i] from bind_offsets[i]), and x*y*z
// workgroups; nonzero and Dawn's message in d->dispatch_message when Dawn
// refuses the bind group (then nothing is recorded).
int lw_dispatch(lw_device *d, WGPUComputePipeline p, WGPUBindGroupLayout layout, int n, uint32_t x, uint32_t y, uint32_t z);
// lw_copy records a buffer-to-buffer copy.
int lw_copy(lw_device *d, WGPUBuffer src, uint64_t srcOffset, WGPUBuffer dst, uint64_t dstOffset, uint64_t size);
// lw_flush submits the open encoder, if any.
void lw_flush(lw_device *d);
// lw_wait waits for all submitted work; nonzero if the wait failed.
int lw_wait(lw_device *d, char *msg, size_t msglen);

#endif

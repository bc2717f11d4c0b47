/* tests/simt/simt.h - controls of the emulated CUDA device (tests/simt/
 * simt.cpp), for tests linked against the simt build of the library. C API. */
#ifndef TG_SIMT_H
#define TG_SIMT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Arms failure injection: after `n` more successful calls of `api`, the next
 * one fails ("cudaMalloc" -> cudaErrorMemoryAllocation, "cudaMemcpy" ->
 * cudaErrorIllegalAddress, "launch" -> cudaErrorLaunchFailure, "cublas" ->
 * CUBLAS_STATUS_EXECUTION_FAILED, "cudaStreamSynchronize" -> cudaErrorLaunchFailure).
 * n < 0 disarms. One api armed at a time. */
void tg_simt_fail_after(const char *api, int n);
/* Kernel launches so far. */
long tg_simt_launch_count(void);
/* The stream the last `what` ("launch", "copy" or "cublas") was given (NULL:
 * the legacy default stream, or none yet). */
const void *tg_simt_last_stream(const char *what);
/* Bytes of emulated device memory allocated (cudaMalloc minus cudaFree). */
size_t tg_simt_device_bytes(void);
/* Emulated device memory for a test standing in for a framework's allocator
 * (cudaMalloc / cudaFree of the emulator: NULL on failure). */
void *tg_simt_device_alloc(size_t n);
void tg_simt_device_free(void *p);

#ifdef __cplusplus
}
#endif
#endif

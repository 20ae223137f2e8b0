// Compiled WITH relocatable device code, only so that the no-rdc check
// (check_no_rdc.cmake) is seen to fail on such an object.
__global__ void rdcProbeKernel(int* out) { *out = 1; }

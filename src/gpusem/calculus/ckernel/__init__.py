"""CKernel: a small typed kernel language whose only job is to drive NVIDIA's CUDA
toolchain (issue 23, item 5): the idioms NVVM and ptxas optimise, with a reference
semantics exact to C (interpreter/ckernel) and an emitter (compiler/ckernel_cuda)."""

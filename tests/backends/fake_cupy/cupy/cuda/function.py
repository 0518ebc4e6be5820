"""Fake modules: a "cubin" is the pickled {lowered name: (kernel name, source)}; a
launch runs the kernel on the cpu harness."""

import pickle
import time

import numpy as np
from gpusem.compiler.backends import cpu_worker
from gpusem.compiler.backends.cpu import CpuBackend
from gpusem.compiler.backends.kernel import Job, KernelSpec, prepare_args, ptr, scalar

_CPU = None
_LIBS: dict = {}


class Module:
    def load(self, binary):
        self.kernels = pickle.loads(binary)

    def get_function(self, name):
        return _Function(*self.kernels[name])


class _Function:
    ptr = 0

    def __init__(self, name, source):
        self.name, self.source = name, source

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        global _CPU
        _CPU = _CPU or CpuBackend()
        params, inputs = [], {}
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                params.append(ptr(f"p{k}", a.dtype.name, a.size))
            else:
                params.append(scalar(f"p{k}", np.asarray(a).dtype.name))
            inputs[f"p{k}"] = a
        spec = KernelSpec(
            self.name, self.source, grid, block, shared_mem, tuple(params)
        )
        # In this (daemonic) process: the harness's own launcher, not its worker.
        built = _CPU.build([spec])[spec.code_key()]
        if built.kind != "ok":
            raise RuntimeError(f"fake: {built.message}")
        arrays, scalars = prepare_args(Job(spec, inputs))
        cfg = (spec.grid, spec.block, shared_mem, 0, 10**8, 1.0, 65536, 0xA5,
               spec.cluster)
        params = [(p.name, p.dtype, p.pointer) for p in spec.params]
        request = (built.library, built.symbol, cfg, params, arrays, scalars)
        status, message, outputs, _ = cpu_worker.launch(_LIBS, request)
        if status == 3:
            time.sleep(10**6)  # a hung GPU kernel: only the watchdog ends this
        if status != 0:
            raise RuntimeError(f"CUDA_ERROR_LAUNCH_FAILED (fake: {message})")
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                a[...] = outputs[f"p{k}"]

"""Where arrays and kernels live: devices, eager implementations, the reference interpreter."""

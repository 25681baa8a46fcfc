build-cuda/pic/backend/cuda.o: src/backend/cuda.c src/backend/impl.h \
 src/backend/backend.h src/num/metrics.h src/num/quant.h \
 src/base/common.h src/num/format.h src/base/status.h src/num/rht.h \
 src/engine/engine.h src/base/isa.h kernels/kernels.h \
 /usr/local/cuda/include/cuda_runtime_api.h \
 /usr/local/cuda/include/crt/host_defines.h \
 /usr/local/cuda/include/builtin_types.h \
 /usr/local/cuda/include/device_types.h \
 /usr/local/cuda/include/driver_types.h \
 /usr/local/cuda/include/vector_types.h \
 /usr/local/cuda/include/surface_types.h \
 /usr/local/cuda/include/texture_types.h \
 /usr/local/cuda/include/cuda_device_runtime_api.h src/io/widen.h \
 src/io/source.h src/base/trace.h
src/backend/impl.h:
src/backend/backend.h:
src/num/metrics.h:
src/num/quant.h:
src/base/common.h:
src/num/format.h:
src/base/status.h:
src/num/rht.h:
src/engine/engine.h:
src/base/isa.h:
kernels/kernels.h:
/usr/local/cuda/include/cuda_runtime_api.h:
/usr/local/cuda/include/crt/host_defines.h:
/usr/local/cuda/include/builtin_types.h:
/usr/local/cuda/include/device_types.h:
/usr/local/cuda/include/driver_types.h:
/usr/local/cuda/include/vector_types.h:
/usr/local/cuda/include/surface_types.h:
/usr/local/cuda/include/texture_types.h:
/usr/local/cuda/include/cuda_device_runtime_api.h:
src/io/widen.h:
src/io/source.h:
src/base/trace.h:

build-cuda/pic/api/api.o: src/api/api.c include/fp4diag.h \
 /usr/local/cuda/include/cuda_runtime_api.h \
 /usr/local/cuda/include/crt/host_defines.h \
 /usr/local/cuda/include/builtin_types.h \
 /usr/local/cuda/include/device_types.h \
 /usr/local/cuda/include/driver_types.h \
 /usr/local/cuda/include/vector_types.h \
 /usr/local/cuda/include/surface_types.h \
 /usr/local/cuda/include/texture_types.h \
 /usr/local/cuda/include/cuda_device_runtime_api.h src/base/status.h \
 src/base/version.h src/api/impl.h src/run/config.h src/backend/backend.h \
 src/num/metrics.h src/num/quant.h src/base/common.h src/num/format.h \
 src/num/rht.h src/run/shard.h src/io/chunked.h src/io/codec.h \
 src/io/memsrc.h src/io/source.h src/io/pario.h src/report/report.h \
 src/run/driver.h src/io/fingerprint.h src/report/output.h
include/fp4diag.h:
/usr/local/cuda/include/cuda_runtime_api.h:
/usr/local/cuda/include/crt/host_defines.h:
/usr/local/cuda/include/builtin_types.h:
/usr/local/cuda/include/device_types.h:
/usr/local/cuda/include/driver_types.h:
/usr/local/cuda/include/vector_types.h:
/usr/local/cuda/include/surface_types.h:
/usr/local/cuda/include/texture_types.h:
/usr/local/cuda/include/cuda_device_runtime_api.h:
src/base/status.h:
src/base/version.h:
src/api/impl.h:
src/run/config.h:
src/backend/backend.h:
src/num/metrics.h:
src/num/quant.h:
src/base/common.h:
src/num/format.h:
src/num/rht.h:
src/run/shard.h:
src/io/chunked.h:
src/io/codec.h:
src/io/memsrc.h:
src/io/source.h:
src/io/pario.h:
src/report/report.h:
src/run/driver.h:
src/io/fingerprint.h:
src/report/output.h:

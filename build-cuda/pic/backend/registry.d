build-cuda/pic/backend/registry.o: src/backend/registry.c \
 src/backend/impl.h src/backend/backend.h src/num/metrics.h \
 src/num/quant.h src/base/common.h src/num/format.h src/base/status.h \
 src/num/rht.h src/engine/engine.h src/base/isa.h
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

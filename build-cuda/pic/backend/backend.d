build-cuda/pic/backend/backend.o: src/backend/backend.c \
 src/backend/impl.h src/backend/backend.h src/num/metrics.h \
 src/num/quant.h src/base/common.h src/num/format.h src/base/status.h \
 src/num/rht.h src/engine/engine.h src/base/isa.h src/io/widen.h \
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
src/io/widen.h:
src/io/source.h:
src/base/trace.h:

build-cuda/pic/engine/generic.o: src/engine/generic.c \
 src/engine/engine_impl.h src/engine/engine.h src/base/common.h \
 src/base/isa.h src/base/status.h src/num/metrics.h src/num/quant.h \
 src/num/format.h src/num/rht.h
src/engine/engine_impl.h:
src/engine/engine.h:
src/base/common.h:
src/base/isa.h:
src/base/status.h:
src/num/metrics.h:
src/num/quant.h:
src/num/format.h:
src/num/rht.h:

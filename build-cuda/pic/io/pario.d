build-cuda/pic/io/pario.o: src/io/pario.c src/io/pario.h \
 src/base/common.h src/io/source.h src/base/status.h src/io/widen.h
src/io/pario.h:
src/base/common.h:
src/io/source.h:
src/base/status.h:
src/io/widen.h:

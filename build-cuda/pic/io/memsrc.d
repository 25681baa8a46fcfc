build-cuda/pic/io/memsrc.o: src/io/memsrc.c src/io/memsrc.h \
 src/io/source.h src/base/status.h
src/io/memsrc.h:
src/io/source.h:
src/base/status.h:

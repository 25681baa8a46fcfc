build-cuda/pic/io/chunked.o: src/io/chunked.c src/io/chunked.h \
 src/io/codec.h src/base/status.h src/io/widen.h src/io/source.h
src/io/chunked.h:
src/io/codec.h:
src/base/status.h:
src/io/widen.h:
src/io/source.h:

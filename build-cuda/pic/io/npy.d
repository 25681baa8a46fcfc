build-cuda/pic/io/npy.o: src/io/npy.c src/io/chunked.h src/io/codec.h \
 src/base/status.h src/io/mapguard.h src/io/npy_parse.h src/io/rawconv.h \
 src/io/source.h
src/io/chunked.h:
src/io/codec.h:
src/base/status.h:
src/io/mapguard.h:
src/io/npy_parse.h:
src/io/rawconv.h:
src/io/source.h:

build-cuda/pic/io/codec.o: src/io/codec.c src/io/codec.h \
 src/base/status.h
src/io/codec.h:
src/base/status.h:

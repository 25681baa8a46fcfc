build-cuda/pic/io/npy_parse.o: src/io/npy_parse.c src/io/npy_parse.h \
 src/base/status.h src/io/st_parse.h
src/io/npy_parse.h:
src/base/status.h:
src/io/st_parse.h:

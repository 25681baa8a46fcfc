build-cuda/pic/io/pytorch.o: src/io/pytorch.c src/io/npy_parse.h \
 src/base/status.h src/io/pickle.h src/io/rawconv.h src/io/source.h \
 src/io/st_parse.h
src/io/npy_parse.h:
src/base/status.h:
src/io/pickle.h:
src/io/rawconv.h:
src/io/source.h:
src/io/st_parse.h:

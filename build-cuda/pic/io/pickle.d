build-cuda/pic/io/pickle.o: src/io/pickle.c src/io/pickle.h \
 src/base/status.h src/io/st_parse.h
src/io/pickle.h:
src/base/status.h:
src/io/st_parse.h:

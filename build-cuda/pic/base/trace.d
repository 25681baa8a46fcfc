build-cuda/pic/base/trace.o: src/base/trace.c src/base/trace.h
src/base/trace.h:

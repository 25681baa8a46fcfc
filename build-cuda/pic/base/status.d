build-cuda/pic/base/status.o: src/base/status.c src/base/status.h
src/base/status.h:

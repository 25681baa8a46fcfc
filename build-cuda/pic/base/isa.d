build-cuda/pic/base/isa.o: src/base/isa.c src/base/isa.h \
 src/base/status.h
src/base/isa.h:
src/base/status.h:

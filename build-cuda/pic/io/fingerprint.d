build-cuda/pic/io/fingerprint.o: src/io/fingerprint.c \
 src/io/fingerprint.h src/base/status.h src/io/source.h
src/io/fingerprint.h:
src/base/status.h:
src/io/source.h:

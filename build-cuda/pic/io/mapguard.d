build-cuda/pic/io/mapguard.o: src/io/mapguard.c src/io/mapguard.h
src/io/mapguard.h:
